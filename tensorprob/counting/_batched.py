"""Many weighted selections over one coded data set: their tables counted together.

A batch is B weight vectors over the rows of one data set (cross-validation fold masks,
bootstrap counts, Poisson weights). Each member is a weighted
:class:`~tensorprob.counting.SelectionData` whose criteria run as in a single selection; what
the batch shares is the counting. The tables of a greedy step, member b against its own last
pick ``j_b``,

    T[b, c, x, a, y] = sum_m W[m, b] [x_mc = x] [x_{m j_b} = a] [y_m = y],

are one sparse-dense matrix product ``R @ L``:

- ``L`` (M, N * I) is the one-hot expansion of the codes (row m holds a 1 at ``c * I + x_mc``
  for every observed candidate c); built once per batch, in candidate blocks that fit the
  memory budget (rebuilt per product when they do not all fit);
- ``R`` (B * A * C, M) is sparse, one nonzero ``W[m, b]`` per (member, row) in the row
  ``(b, x_{m j_b}, y_m)`` (rows with a missing ``x_{j_b}`` or class, or weight 0, left out).

The product reads each stored entry of R once and adds a contiguous row of L: streaming,
vectorized work instead of one scattered histogram update per (row, candidate) and member, and
on the CPU a few times cheaper than a bincount even for one member (measured in
``benchmarks/bench_batched.py``). Counts are exact: integral weights whose member total stays
below ``2**24`` are summed in float32 (every partial sum an exact integer), anything else in
float64. The class tables of the first step are the same product with ``A = 1``.
"""
from __future__ import annotations

import warnings

import torch

from .._config import get_config
from ._selection import SelectionData


class BatchedSelectionData:
    """B weighted members of one coded data set, counted together.

    Parameters
    ----------
    codes : torch.Tensor of shape (M, N), int
        Feature codes (-1 missing), as for :class:`~tensorprob.counting.SelectionData`.
    max_card : int
        Largest cardinality of the features.
    y : torch.Tensor of shape (M,), int
        Class codes.
    n_classes : int
        Number of classes.
    weights : torch.Tensor of shape (M, B)
        Nonnegative finite row weights of each member (each column with a positive total).
    dtype : torch.dtype, default=torch.float64
        Working dtype of the members' tables.
    log_base : float, default=1.0
        Divisor of the information quantities.
    distributed : bool, default=False
        The rows are this rank's part of data spread over a ``torch.distributed`` process
        group: the tables of every product are summed over the ranks (one all-reduce per
        :meth:`count`), and the members are distributed :class:`SelectionData`.

    Attributes
    ----------
    members : list of SelectionData
        One weighted view per column of ``weights``; :meth:`SelectionData.pair_information` of
        a member reads the tables of the batch's shared product when its pick was announced.
    """

    def __init__(self, codes: torch.Tensor, max_card: int, y: torch.Tensor, n_classes: int, weights: torch.Tensor,
                 dtype: torch.dtype = torch.float64, log_base: float = 1.0, distributed: bool = False) -> None:
        base = SelectionData(codes, max_card, y, n_classes, dtype=dtype, log_base=log_base,
                             distributed=distributed)  # feature-major codes
        self.codes, self.max_card, self.y, self.n_classes = base.codes, int(max_card), y, int(n_classes)
        self.dtype = dtype
        W = weights.to(torch.float64)
        self.weights = W
        # the local counts are exact in float32 under the same rule: their all-reduce sums in float64
        integral = bool((W == W.round()).all()) and float(W.sum(0).max()) < 2**24
        self.count_dtype = torch.float32 if integral else torch.float64
        self.members = []
        self._base = base
        complete = base.complete
        for b in range(W.shape[1]):
            m = SelectionData(self.codes, max_card, y, n_classes, dtype=dtype, log_base=log_base,
                              weights=W[:, b], distributed=distributed)
            m._complete = complete
            m._batch = self
            m._member = b
            self.members.append(m)
        self._pending: dict[int, int] = {}
        self._tables: dict[int, tuple[int, torch.Tensor]] = {}
        self._done: set[int] = set()
        self._onehot: list[tuple[int, int, torch.Tensor]] | None = None

    # ------------------------------------------------------------------ the one-hot codes
    def _blocks(self) -> list[tuple[int, int]]:
        M, N = self.codes.shape
        I = self.max_card
        item = torch.finfo(self.count_dtype).bits // 8
        per = max(1, (get_config()["memory_budget"] // 2) // max(1, M * I * item))
        return [(s, min(N, s + per)) for s in range(0, N, per)]

    def _onehot_block(self, s: int, e: int) -> torch.Tensor:
        """(M, (e - s) * I): 1 at ``(c - s) * I + x_mc`` for each observed candidate c of the block."""
        c = self.codes[:, s:e]
        I = self.max_card
        L = torch.zeros(c.shape[0], e - s, I, dtype=self.count_dtype, device=c.device)
        obs = c >= 0
        L.scatter_(2, c.clamp_min(0).to(torch.int64).unsqueeze(2), obs.unsqueeze(2).to(self.count_dtype))
        return L.view(c.shape[0], (e - s) * I)

    def _onehots(self):
        """The one-hot blocks: cached when they all fit the memory budget, else built per use."""
        if self._onehot is not None:
            yield from self._onehot
            return
        blocks = self._blocks()
        keep = len(blocks) == 1
        built = []
        for s, e in blocks:
            L = self._onehot_block(s, e)
            if keep:
                built.append((s, e, L))
            yield s, e, L
        if keep:
            self._onehot = built

    # ------------------------------------------------------------------ counting
    def count(self, members: list[int], a_cols: list[int | None], card_a: int) -> torch.Tensor:
        """Tables (len(members), N, I, card_a, n_classes) of (x_c, x_a, class) weighted by each member.

        ``a_cols[i]`` is the feature playing ``a`` for ``members[i]`` (None: constant, card_a = 1).
        """
        M, N = self.codes.shape
        I, C = self.max_card, self.n_classes
        G = card_a * C
        nb = len(members)
        dev = self.codes.device
        y = self.y.to(torch.int64)
        keys, vals, cols = [], [], []
        rows = torch.arange(M, device=dev)
        for i, (b, a) in enumerate(zip(members, a_cols)):
            g = y.clone() if a is None else self.codes[:, a].to(torch.int64) * C + y
            w = self.weights[:, b]
            ok = (w > 0) & (y >= 0)
            if a is not None:
                ok &= self.codes[:, a] >= 0
            keys.append(g[ok] + i * G)
            vals.append(w[ok])
            cols.append(rows[ok])
        key = torch.cat(keys)
        order = torch.argsort(key, stable=True)
        crow = torch.zeros(nb * G + 1, dtype=torch.int64, device=dev)
        crow[1:] = torch.cumsum(torch.bincount(key, minlength=nb * G), 0)
        with warnings.catch_warnings():  # "sparse CSR support is in beta": the product used here is stable
            warnings.simplefilter("ignore", UserWarning)
            R = torch.sparse_csr_tensor(crow, torch.cat(cols)[order], torch.cat(vals)[order].to(self.count_dtype),
                                        (nb * G, M), check_invariants=False)
        out = torch.empty(nb, N, I, card_a, C, dtype=self.dtype, device=dev)
        for s, e, L in self._onehots():
            T = torch.sparse.mm(R, L).view(nb, card_a, C, e - s, I)
            out[:, s:e] = T.permute(0, 3, 4, 1, 2).to(self.dtype)
        return self._base.reduce(out)

    def count_class_tables(self) -> None:
        """The (x_c, class) table of every member, in one product (each member's ``class_table``)."""
        for b0, b1 in self._member_chunks(1):
            idx = list(range(b0, b1))
            T = self.count(idx, [None] * len(idx), 1)
            for i, b in enumerate(idx):
                self.members[b]._class_table = T[i]

    def _member_chunks(self, card_a: int) -> list[tuple[int, int]]:
        """Ranges of members whose tables (and product) fit the memory budget together."""
        M, N = self._base.budget_rows, self.codes.shape[1]
        cells = N * self.max_card * card_a * self.n_classes
        per_member = 8 * (2 * cells + 2 * M)
        per = max(1, (get_config()["memory_budget"] // 2) // per_member)
        B = len(self.members)
        return [(s, min(B, s + per)) for s in range(0, B, per)]

    # ------------------------------------------------------------------ the greedy step
    def announce(self, picks: dict[int, int]) -> None:
        """Record each member's pick of this step; their tables are counted together when first read."""
        self._pending = dict(picks)
        self._tables = {}
        self._done: set[int] = set()

    def pair_tables(self, member: SelectionData, j: int) -> torch.Tensor | None:
        """The (x_c, x_j, class) tables (N, I, I, C) of ``member``, from the shared product; None if ``j``
        was not announced for it (the member then counts alone)."""
        b = member._member
        got = self._tables.pop(b, None)
        if got is not None and got[0] == j:
            return got[1]
        if self._pending.get(b) != j:
            return None
        # this member and the next ones not yet counted, as many as fit the budget together
        start, stop = self._member_chunks(self.max_card)[0]
        todo = [m for m in self._pending if m != b and m not in self._tables and m not in self._done]
        chunk = [b, *todo[: stop - start - 1]]
        T = self.count(chunk, [self._pending[m] for m in chunk], self.max_card)
        for i, m in enumerate(chunk[1:], 1):
            self._tables[m] = (self._pending[m], T[i])
        self._done.update(chunk)
        return T[0]
