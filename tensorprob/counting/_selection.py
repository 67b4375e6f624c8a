"""Coded data of a selection run, with the class table every criterion starts from."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from .._config import get_config
from .._device import CPU_BLOCK_BYTES
from ._spill import SpilledRows
from ._tables import (
    TableInformation,
    _axis_sum,
    _complete,
    entropies_of_counts,
    grouped_is_cheaper,
    information_of_entropies,
    joint_table,
    one_hot,
    rows_by_class,
    table_information,
    weighted_grouped_counts,
)


def _blocked_transpose(src: np.ndarray) -> np.ndarray:
    """``src`` (A, B) transposed into new C-ordered (B, A) memory, in blocks of rows of about 256 KiB.

    A block's strided writes stay in cache: NumPy's copy loops then move 5,000 x 784 int8 codes
    in 2.2 ms, against 3.7 ms for torch's blocked copy, 3.4 ms for one ``np.ascontiguousarray(src.T)``
    and 5.5 ms for ``torch.Tensor.contiguous`` (100,000 x 1,000: 90 ms against 195 ms unblocked).
    """
    A, B = src.shape
    out = np.empty((B, A), dtype=src.dtype)
    rows = max(16, (1 << 18) // max(1, B * src.itemsize))
    for s in range(0, A, rows):
        out[:, s:s + rows] = src[s:s + rows].T
    return out


def feature_major(codes: torch.Tensor) -> torch.Tensor:
    """``codes`` (M, N) as a transposed view of contiguous (N, M) memory (on the CPU by :func:`_blocked_transpose`)."""
    if codes.device.type != "cpu":
        return codes.T.contiguous().T
    return torch.from_numpy(_blocked_transpose(codes.numpy())).T


def grouped_table(rows: np.ndarray, y: torch.Tensor, j: int | None, card: int, n_classes: int, complete: bool,
                  weights: np.ndarray | None, dtype: torch.dtype, cols: np.ndarray | None = None) -> torch.Tensor | None:
    """(N, card, card_a, n_classes) counts of (x_c, x_j, class) by :func:`weighted_grouped_counts`, or None.

    ``rows``: the codes row-major (M, N); ``j`` None counts (x_c, class) (``card_a`` = 1);
    ``weights`` (M,) float64 or None; ``cols``: count only these candidate columns (the
    tables of ``cols`` in order; ``j`` still indexes ``rows``). None where the comparisons do
    not apply or cost more.
    """
    key = y.numpy().astype(np.int64)
    if j is not None:
        a = rows[:, j].astype(np.int64)
        key = np.where((a < 0) | (key < 0), -1, a * n_classes + key)
    if cols is not None:
        rows = rows[:, cols]  # one gather of the open columns (row-major)
    N = rows.shape[1]
    A = 1 if j is None else card
    T = weighted_grouped_counts(rows, key, A * n_classes, card, complete, weights)  # (A C, card, N)
    if T is None:
        return None
    out = torch.empty(N, card, A * n_classes, dtype=dtype)
    np.copyto(out.numpy(), T.transpose(2, 1, 0), casting="same_kind")  # exact integers, as the bincount's
    return out.view(N, card, A, n_classes)


@dataclass
class SelectionData:
    """Coded data on the device, shared by the criteria of one selection run.

    Parameters
    ----------
    codes : torch.Tensor of shape (M, N), int
        Feature codes ``0 .. I_n - 1``; -1 marks a missing entry. Kept feature-major (a
        transposed view of an (N, M) tensor; copied into that layout if needed).
    max_card : int
        Largest cardinality of the features: every table is padded to it.
    y : torch.Tensor of shape (M,), int64
        Class codes ``0 .. n_classes - 1``.
    n_classes : int
        Number of classes (the alphabet of ``y``).
    dtype : torch.dtype, default=torch.float64
        Working dtype of the counts and per-sample quantities.
    log_base : float, default=1.0
        Divisor of the information quantities: 1 for nats, ``log 2`` for bits.
    weights : torch.Tensor of shape (M,), optional
        Row weights (frequency weights when integral: a weight of 2 counts the row twice, 0
        leaves it out). Every table is a weighted count, and with missing entries the observed
        fraction is taken of the total weight. None: every row counts once.
    distributed : bool, default=False
        The codes are this rank's rows of data spread over an initialized
        ``torch.distributed`` process group. Every table is summed over the ranks right after
        it is counted (:meth:`reduce`, one float64 all-reduce), and ``complete``, ``n_rows``
        and :attr:`budget_rows` describe all ranks' rows, so every rank computes the same
        quantities and takes the same decisions. False: no collective is ever called.
    stream : SpilledRows, optional
        The rows are not in memory but in temporary files, read back in blocks of rows by
        every count (:meth:`count`); ``codes`` and ``y`` are then empty (0 rows, N feature
        columns) and ``weights`` None (the weights are in the files). Only the counts through
        :meth:`count` and the properties below read the rows; the per-sample criteria (PDA's
        GMD and AMD, VMI), which hold per-row state, do not take streamed data.
    row_major : bool, default=False
        Keep the codes in the caller's layout instead of copying them feature-major: for a run
        that counts only the class table (MIM), which the CPU counts from row-major codes
        (:meth:`_grouped_table`); every count reads either layout.

    Examples
    --------
    >>> import torch
    >>> from tensorprob.counting import SelectionData
    >>> x = torch.tensor([[0, 1], [1, 1], [0, 0], [1, 0]])
    >>> d = SelectionData(x, 2, x[:, 0], 2)
    >>> [round(v, 6) for v in d.relevance.tolist()]  # I(x_0; y) = log 2, I(x_1; y) = 0
    [0.693147, 0.0]
    """

    codes: torch.Tensor
    max_card: int
    y: torch.Tensor
    n_classes: int
    dtype: torch.dtype = torch.float64
    log_base: float = 1.0
    weights: torch.Tensor | None = None
    distributed: bool = False
    stream: SpilledRows | None = None
    row_major: bool = False
    _global: tuple | None = field(default=None, init=False, repr=False)
    _class_table: torch.Tensor | None = field(default=None, init=False, repr=False)
    _relevance: torch.Tensor | None = field(default=None, init=False, repr=False)
    _complete: bool | None = field(default=None, init=False, repr=False)
    _local_complete: bool | None = field(default=None, init=False, repr=False)  # this process's rows only
    _all_pairs: bool = field(default=False, init=False, repr=False)
    _pairs: TableInformation | None = field(default=None, init=False, repr=False)
    _pair_classes: bool = field(default=True, init=False, repr=False)
    _batch: object | None = field(default=None, init=False, repr=False)  # the BatchedSelectionData of a member
    _bits: np.ndarray | bool | None = field(default=None, init=False, repr=False)  # class-free bitsets (False: none)
    _bit_totals: np.ndarray | None = field(default=None, init=False, repr=False)  # rows of each (feature, value)
    _class_h: dict | bool | None = field(default=None, init=False, repr=False)  # see _class_entropies (False: none)
    _marginals: dict | bool | None = field(default=None, init=False, repr=False)  # see _seeded (False: none)
    _rows: np.ndarray | bool | None = field(default=None, init=False, repr=False)  # row-major codes (False: none)
    _open: np.ndarray | None = field(default=None, init=False, repr=False)  # see retire (None: every column)
    _base: dict | None = field(default=None, init=False, repr=False)  # see _pair_base

    def __post_init__(self) -> None:
        # held feature-major (a transposed view of (N, M) memory): every table counts blocks
        # of candidates, and a block is then one contiguous slab instead of a strided read
        # of every row
        if self.codes.ndim == 2 and self.codes.shape[1] > 1 and self.codes.stride(0) != 1:
            if self.codes.device.type == "cpu" and self.codes.is_contiguous():
                self._rows = self.codes.numpy()  # the caller's row-major codes, for the grouped counts
            if not self.row_major:
                self.codes = feature_major(self.codes)

    def reduce(self, T: torch.Tensor) -> torch.Tensor:
        """``T`` summed over the ranks (float64, back in ``T``'s dtype); ``T`` itself when not distributed.

        Every count of rows goes through here right after it is counted: tables, and the
        sums over rows of the per-sample criteria. Every rank receives the same values.

        Parameters
        ----------
        T : torch.Tensor
            This rank's counts or sums.

        Returns
        -------
        torch.Tensor
            The sum over all ranks, of ``T``'s shape and dtype.
        """
        if not self.distributed:
            return T
        from .. import _distributed

        return _distributed.all_reduce_sum(T.reshape(-1)).to(T.dtype).view(T.shape)

    def count(self, fn: Callable[..., torch.Tensor]) -> torch.Tensor:
        """The sum over the rows (of every rank) of ``fn(codes, y, weights, dtype)``: the one way rows are counted.

        ``fn`` counts a block of rows, codes (b, N) feature-major, class codes (b,), weights
        (b,) or None, into tables of ``dtype``. In memory the block is all the rows and this
        is ``reduce(fn(codes, y, weights, self.dtype))``. Streamed, ``fn`` is called on every
        block of :attr:`stream` with ``dtype`` float64, the blocks' tables are summed in
        float64 and rounded to ``self.dtype`` once; integer counts are exact either way.

        Parameters
        ----------
        fn : callable
            ``fn(codes, y, weights, dtype) -> torch.Tensor``; the same shape for every block.

        Returns
        -------
        torch.Tensor
            The summed tables, in ``self.dtype``, summed over the ranks when distributed.
        """
        if self.stream is None:
            return self.reduce(fn(self.codes, self.y, self.weights, self.dtype))
        total = None
        for codes, y, w in self.stream.blocks(self.codes.device):
            T = fn(codes, y, w, torch.float64)
            total = T if total is None else total.add_(T)
        return self.reduce(total.to(self.dtype))

    def _local_rows(self) -> tuple[int, float, bool]:
        """(rows, their total weight, no entry missing) of this process."""
        if self.stream is not None:
            return self.stream.n_rows, self.stream.weight_total, self.stream.complete
        M = int(self.codes.shape[0])
        total = float(M) if self.weights is None else float(self.weights.to(torch.float64).sum())
        if self._complete is not None:
            return M, total, self._complete
        if self._local_complete is None:  # one scan of the codes (budget_rows and complete both ask)
            self._local_complete = _complete(self.codes, self.y >= 0)
        return M, total, self._local_complete

    @property
    def _weighted(self) -> bool:
        return self.weights is not None or (self.stream is not None and self.stream.weighted)

    def _global_rows(self) -> tuple:
        """(rows of all ranks, their total weight, most rows on one rank, any entry missing): one gather."""
        if self._global is None:
            from .. import _distributed

            M, total, local = self._local_rows()
            every = _distributed.all_gather((M, total, not local))
            self._global = (sum(e[0] for e in every), sum(e[1] for e in every), max(e[0] for e in every),
                            any(e[2] for e in every))
        return self._global

    @property
    def complete(self) -> bool:
        """No missing (-1) entry in the codes or the class (checked once, not per step; on any rank)."""
        if self._complete is None:
            self._complete = not self._global_rows()[3] if self.distributed else self._local_rows()[2]
        return self._complete

    @property
    def n_rows(self) -> int | None:
        """Rows M (or their total weight) when some entry is missing (the observed-fraction weighting); None if complete.

        Distributed: the rows (weight) of all ranks.
        """
        if self.complete:
            return None
        rows, weight = self._global_rows()[:2] if self.distributed else self._local_rows()[:2]
        return weight if self._weighted else int(rows)

    @property
    def n_total(self) -> int:
        """Rows of the data: M, or the rows of all ranks when distributed (the divisor of sample means)."""
        return int(self._global_rows()[0] if self.distributed else self._local_rows()[0])

    @property
    def total_weight(self) -> float:
        """Divisor of the weighted sample means: the total row weight (``n_total`` without weights).

        Distributed: the weight of all ranks' rows.
        """
        if self.weights is None:
            return self.n_total
        if self.distributed:
            return float(self._global_rows()[1])
        return float(self.weights.to(torch.float64).sum())

    @property
    def memory_budget(self) -> int:
        """Bytes this run's per-sample state may take: ``memory_budget``, or a 1/B share for a member of a batch of B.

        The members of a batch hold their states at the same time.
        """
        budget = get_config()["memory_budget"]
        return budget if self._batch is None else budget // max(1, len(self._batch.members))

    def row_mean(self, values: torch.Tensor, dim: int = 0) -> torch.Tensor:
        """(Weighted) sample mean of ``values`` over the rows (axis ``dim``); distributed: this rank's weighted sum.

        Distributed, the caller sums the result over the ranks and divides by
        :attr:`total_weight` (one all-reduce for all candidates). Without weights this is
        ``values.mean(dim)`` (``values.sum(dim)`` distributed).

        Parameters
        ----------
        values : torch.Tensor
            Per-row values, rows along ``dim``.
        dim : int, default=0
            The row axis.

        Returns
        -------
        torch.Tensor
            ``values`` averaged (or summed, distributed) over ``dim``.
        """
        if self.distributed:
            return self.row_sum(values, dim)
        if self.weights is None:
            return values.mean(dim)
        return self.row_sum(values, dim) / self.total_weight

    def row_sum(self, values: torch.Tensor, dim: int = 0, rows: slice | None = None) -> torch.Tensor:
        """Sum of ``values`` over the rows (axis ``dim`` of length M), each row times its weight.

        The numerator of a weighted sample mean (divide by :attr:`total_weight`); this rank's
        rows only when distributed (the caller reduces). A row of weight 0 adds nothing, even
        where its value is infinite (a probability of 0 under tables it is not counted in).

        Parameters
        ----------
        values : torch.Tensor
            Per-row values, rows along ``dim``.
        dim : int, default=0
            The row axis.
        rows : slice, optional
            The rows ``values`` holds, when a block of them.

        Returns
        -------
        torch.Tensor
            ``values`` summed over ``dim``.
        """
        if self.weights is None:
            return values.sum(dim)
        w = self.weights.to(values.dtype)
        w = w if rows is None else w[rows]
        moved = values.movedim(dim, -1)
        return torch.matmul(moved, w) if bool((w > 0).all()) else torch.matmul(
            torch.where(w > 0, moved, torch.zeros((), dtype=values.dtype, device=values.device)), w)

    def pair_table(self, j: int) -> torch.Tensor:
        """Weighted counts of (x_c, x_j, class) for every candidate c: (N, max_card, max_card, n_classes).

        The table :meth:`pair_information` computes its quantities from, for the per-sample
        criteria that gather conditional probabilities from it. A member of a batch receives it
        from the batch's shared counting.

        Parameters
        ----------
        j : int
            The feature playing ``a``.

        Returns
        -------
        torch.Tensor
            The table, summed over the ranks when distributed.
        """
        if self._batch is not None:
            shared = self._batch.pair_table(self, j)
            if shared is not None:
                return shared
        T = self._grouped_table(j)
        return self.reduce(T if T is not None else joint_table(
            self.codes, self.max_card, self.codes[:, j], self.max_card, self.y, self.n_classes, weights=self.weights,
            dtype=self.dtype, complete=self.complete))

    @property
    def budget_rows(self) -> int:
        """Rows that memory and work decisions are sized on: M, or the most rows of one rank when distributed.

        Every choice that changes which tables are counted (all pairs at once, CMIM's lazy
        evaluation, chunk sizes) reads this, so that all ranks make it alike and call the same
        collectives. Streamed data: the rows of one block (at most ``stream.block_rows``).
        """
        rows = int(self._global_rows()[2] if self.distributed else self._local_rows()[0])
        return rows if self.stream is None else min(rows, self.stream.block_rows)

    @property
    def unobserved(self) -> torch.Tensor | None:
        """Bool (N,): features with no row where both they and the class are observed; None if complete.

        Such a column carries no information at all (every estimate of it is exactly 0);
        the greedy driver picks it only after every other column.
        """
        if self.complete:
            return None
        return self.class_table.reshape(self.n_features, -1).sum(1) == 0

    @property
    def n_features(self) -> int:
        """Number of feature columns N."""
        return int(self.codes.shape[1])

    @property
    def class_table(self) -> torch.Tensor:
        """Counts of (x_m, class) for every feature: (N, max_card, 1, n_classes)."""
        if self._class_table is None:
            I, C, complete = self.max_card, self.n_classes, self.complete
            T = self._grouped_table(None)
            self._class_table = self.reduce(T) if T is not None else self.count(
                lambda codes, y, w, dtype: joint_table(codes, I, None, 1, y, C, weights=w, dtype=dtype,
                                                       complete=complete))
        return self._class_table

    def _row_major(self) -> np.ndarray | None:
        """The codes as C-ordered (M, N) NumPy memory: the caller's, or one transposed copy kept.

        None off the CPU, or when a copy would take more than a quarter of the budget.
        """
        if self._rows is None:
            c = self.codes
            if c.device.type != "cpu" or c.ndim != 2:
                self._rows = False
            elif c.is_contiguous():
                self._rows = c.numpy()
            elif c.numel() * c.element_size() > get_config()["memory_budget"] // 4:
                self._rows = False
            else:
                self._rows = _blocked_transpose(c.T.contiguous().numpy())
        return self._rows if self._rows is not False else None

    def _grouped_table(self, j: int | None, cols: np.ndarray | None = None) -> torch.Tensor | None:
        """Counts of (x_c, x_j, class) (``j`` None: of (x_c, class)) of every candidate by grouped comparisons.

        In memory on the CPU, unweighted or with integral weights
        (:func:`~tensorprob.counting._tables.weighted_grouped_counts`), when the cost model of
        :func:`~tensorprob.counting._tables.grouped_is_cheaper` favours it (small alphabets);
        None otherwise, and the caller counts by bincount. The counts are the same integers
        either way, so the choice (which may differ between the ranks of a distributed run)
        never changes a value. This rank's rows only: the caller reduces.

        Returns
        -------
        torch.Tensor of shape (N, max_card, card_a, n_classes), or None
            ``card_a`` is ``max_card``, or 1 when ``j`` is None; in ``self.dtype``.
        """
        return self._grouped_for(j, self.weights, int(self.codes.shape[0]) if self.codes.ndim == 2 else 0, cols)

    def _grouped_for(self, j: int | None, weights: torch.Tensor | None, n_kept: int,
                     cols: np.ndarray | None = None) -> torch.Tensor | None:
        """:meth:`_grouped_table` for the row weights ``weights`` (M,) of ``n_kept`` rows (None: every row, once).

        Also what a batch counts its members with (its shared data are unweighted; the
        member's weights come here). ``cols``: only these candidates' tables (see :meth:`retire`).
        """
        if (self.codes.device.type != "cpu" or self.stream is not None or self.codes.ndim != 2
                or self.codes.dtype.is_floating_point):
            return None
        N = self.codes.shape[1] if cols is None else len(cols)
        I, C, complete = self.max_card, self.n_classes, self.complete
        A = 1 if j is None else I
        if not grouped_is_cheaper(n_kept, N, I, A * C, complete):  # before any row-major copy
            return None
        rows = self._row_major()
        if rows is None:
            return None
        w = None if weights is None else weights.to(torch.float64).numpy()
        return grouped_table(rows, self.y, j, I, C, complete, w, self.dtype, cols)

    @property
    def relevance(self) -> torch.Tensor:
        """``I(X_m; C)`` of every feature (divided by ``log_base``).

        With missing entries, the estimate on the observed rows times their fraction
        (:class:`~tensorprob.counting.TableInformation`, ``n_rows``).
        """
        if self._relevance is None:
            h = self._class_entropies()  # the same values, in NumPy
            mi = (table_information(self.class_table, n_rows=self.n_rows).mi_x_b if h is None
                  else torch.from_numpy(information_of_entropies(h, "mi_x_b")))
            self._relevance = mi / self.log_base
        return self._relevance

    def plan(self, k: int, classes: bool = True) -> None:
        """Tell the data that a greedy run will read the pair tables of ``k - 1`` picks.

        When the features are few (at most 128), the run reads the pairs of at least half
        of them and the cost estimate below favours it, every (candidate, feature, class)
        table is counted in one pass and their quantities computed in one batch: a greedy step
        then costs a few slices instead of a counting pass and some thirty small tensor
        operations (what dominates on small data). The values are those of the per-step path:
        the same counts, and each table's quantities from the same float64 operations.

        Cost estimate (rough single-core rates; only their ratios matter): all pairs at once
        take ``2 M (N I)^2`` multiply-adds of the one-hot Gram matrices (0.03 ns each) and the
        quantities of ``N^2 I^2 C`` cells (5 ns each); the per-step path takes, per step,
        ``M N`` histogram updates (1 ns), ``N I^2 C`` cells and about 0.5 ms of small tensor
        operations. Large alphabets make the Gram matrices the larger cost: optdigits (64
        features of 17 values) runs JMI in 85 ms per step-wise against 610 ms all at once;
        chess (36 of 3) in 7 ms all at once against 25 ms.

        A run that never reads a quantity with the class (``classes=False``: MRMR, MIFS) on
        unweighted rows gets the class-free tables (N * N, I, I, 1) of every pair: one Gram matrix of all labelled
        rows instead of one per class, and a C-th of the cells; their counts are the class
        tables' summed over the class, so its values are those of the per-step path.

        Parameters
        ----------
        k : int
            Number of features the run selects.
        classes : bool, default=True
            Whether the run reads quantities of the (x, x_j, class) tables, or only of (x, x_j).
        """
        N, M, I = self.n_features, self.budget_rows, self.max_card
        C = self.n_classes if classes else 1
        fits = M * N * N * 8 <= get_config()["memory_budget"]
        at_once = 2 * M * (N * I) ** 2 * 0.03e-9 + N * N * I * I * C * 5e-9
        per_step = (k - 1) * (M * N * 1e-9 + N * I * I * C * 5e-9 + 0.5e-3)
        self._all_pairs = N <= 128 and 2 * (k - 1) >= N and fits and at_once < per_step
        # class-free only unweighted: summed weights would round in another order than the class
        # tables' (and the ranks of a distributed run take the same decision without a collective)
        self._pair_classes = classes or self._weighted

    def pair_information(self, j: int, classes: bool = True) -> TableInformation:
        """Plug-in quantities of every candidate x against (a = x_j, b = class), divided by ``log_base``.

        Parameters
        ----------
        j : int
            Index of the feature playing ``a`` (e.g. the last selected one).
        classes : bool, default=True
            False: the caller reads only quantities of (x, x_j) (``h_x``, ``h_a``, ``h_xa``,
            ``mi_x_a``), which may then come from tables without the class, (N, I, I, 1):
            the same integer counts summed over the class, so the same values (for
            unweighted, complete data in memory; otherwise the full tables). On the CPU they
            are counted from bitsets (below).

        Returns
        -------
        TableInformation
            The quantities of the (x, x_j, class) tables of all N candidates, each computed
            when first read.

        Notes
        -----
        The class-free tables from bitsets: each (candidate, value) is a bitset over the rows,
        and the count of (x_c = v, x_j = u) is the population count of the AND of two bitsets.
        A step then reads N I M / 8 bytes that stay in cache (MNIST-5k: 2.4 MB) instead of
        making M N scattered histogram updates: about 2 ms against 8 ms per step on MNIST-5k.
        """
        if self._batch is not None:  # a member of a batch: its tables come from the batch's shared counts
            shared = self._batch.pair_information(self, j)
            if shared is not None:
                return shared
        if self._all_pairs and (self._pair_classes or not classes):
            if self._pairs is None:
                self._pairs = table_information(self._all_pair_tables(self._pair_classes), self.log_base, self.n_rows)
            return _Rows(self._pairs, slice(j * self.n_features, (j + 1) * self.n_features))
        I, C, complete = self.max_card, self.n_classes, self.complete
        cols = self._open_columns()
        n = self.n_features if cols is None else cols.size
        index = None if cols is None else torch.from_numpy(cols).to(self.codes.device)  # the open columns, once
        sub = _column_subset(index)
        if not classes and complete and not self._weighted and self.stream is None:
            # class-free tables whichever way this rank counts them (the ranks' shapes agree)
            T = self._free_grouped(j, cols)
            bits = self._bitsets() if T is None else None
            if bits is not None:
                tot = self._bit_totals
                T = torch.from_numpy(_bitset_pair_tables(bits if cols is None else bits[cols], bits[j],
                                                         tot if cols is None else tot[cols], tot[j]))
                T = T.to(self.dtype).view(n, I, I, 1)
            if T is None:
                T = self._keyed_counts(j, cols, False)
            if T is None:
                T = joint_table(sub(self.codes), I, self.codes[:, j], I, None, 1, dtype=self.dtype, complete=True)
            info = self._seeded(table_information(self.reduce(T), self.log_base, self.n_rows), j, False, index)
        else:
            T = self._grouped_table(j, cols)
            if T is None:
                T = self._keyed_counts(j, cols, True)
            T = self.reduce(T) if T is not None else self.count(
                lambda codes, y, w, dtype: joint_table(sub(codes), I, codes[:, j], I, y, C, weights=w, dtype=dtype,
                                                       complete=complete))
            info = self._seeded(table_information(T, self.log_base, self.n_rows), j, True, index)  # read lazily
        return info if index is None else _Scattered(info, index, self.n_features)

    def _free_grouped(self, j: int, cols: np.ndarray | None) -> torch.Tensor | None:
        """The class-free (x_c, x_j) tables (n, I, I, 1) by grouped comparisons (the groups: x_j's values), or None.

        Chosen over the bitsets for many features of few rows each (at least
        :data:`FREE_GROUPED_MIN_FEATURES` features, at most :data:`FREE_GROUPED_MAX_ROWS` rows):
        one comparison pass over the rows per value beats N I^2 short population counts there
        (one step: COIL-20 0.62 against 1.12 ms, the arcene shape 0.81 against 4.5 ms; chess,
        36 features, 0.24 against 0.03 ms the other way).
        """
        c = self.codes
        if (c.device.type != "cpu" or c.ndim != 2 or c.dtype.is_floating_point or self.n_features < FREE_GROUPED_MIN_FEATURES
                or c.shape[0] > FREE_GROUPED_MAX_ROWS):
            return None
        rows = self._row_major()
        if rows is None:
            return None
        one_class = torch.zeros(c.shape[0], dtype=torch.int64)
        return grouped_table(rows, one_class, j, self.max_card, 1, True, None, self.dtype, cols)

    def _keyed_counts(self, j: int, cols: np.ndarray | None, classes: bool) -> torch.Tensor | None:
        """This rank's (x_c, x_j, class) tables (``classes`` False: (x_c, x_j)) of the candidates ``cols``, or None.

        The per-step histogram of :func:`~tensorprob.counting._tables.joint_table` with its
        index made once per run: every entry's key ``c * I^2 C + x_c * I C`` is kept
        feature-major (:attr:`_pair_base`, 2 bytes per entry when the keys of all tables fit
        int16, else 4), so that a step adds one row, ``x_j C + class``, to the open
        candidates' keys and makes one bincount of them (optdigits, 64 features of 17 values:
        about 0.3 ms per step against 0.6). Complete, unweighted rows in memory on the CPU,
        the keys within a quarter of the memory budget; None otherwise.

        Returns
        -------
        torch.Tensor of shape (n, max_card, max_card, C) or None
            Counts in ``self.dtype``; n the candidates (``cols``, or every feature), C the
            classes or 1.
        """
        base = self._pair_base(classes)
        if base is None:
            return None
        I, N = self.max_card, self.n_features
        Cb = self.n_classes if classes else 1
        per = I * I * Cb
        xj = self.codes[:, j].numpy()
        ab = np.multiply(xj, Cb, dtype=base.dtype)
        if classes:
            ab += self.y.numpy().astype(base.dtype)
        if cols is None:
            keys = base + ab
        else:
            keys = base[cols]  # the gather is the copy the row is added to
            keys += ab
        T = torch.bincount(torch.from_numpy(keys.reshape(-1)), minlength=N * per).view(N, per)
        if cols is not None:
            T = T[torch.from_numpy(cols)]
        return T.to(self.dtype).view(-1, I, I, Cb)

    def _pair_base(self, classes: bool) -> np.ndarray | None:
        """The feature-major keys ``c * I^2 C + x_c * I C`` (N, M) of :meth:`_keyed_counts`, made once; None where not used."""
        if self._base is None:
            self._base = {}
        if classes not in self._base:
            self._base[classes] = None
            N, I = self.n_features, self.max_card
            Cb = self.n_classes if classes else 1
            bins = N * I * I * Cb
            c = self.codes
            if (c.device.type == "cpu" and self.stream is None and c.ndim == 2 and not self._weighted
                    and self.complete and not c.dtype.is_floating_point and bins < 2**31 and c.shape[0] > 0):
                dt = np.dtype(np.int16 if bins < 2**15 else np.int32)
                if c.shape[0] * N * dt.itemsize <= get_config()["memory_budget"] // 4:
                    fm = c.T.numpy()  # (N, M): contiguous rows when feature-major
                    base = np.multiply(fm, I * Cb, dtype=dt)
                    base += (np.arange(N, dtype=dt) * (I * I * Cb))[:, None]
                    self._base[classes] = base
        return self._base[classes]

    def retire(self, j: int) -> None:
        """Leave feature ``j`` out of the tables of later :meth:`pair_information` calls (the greedy driver's picks).

        Once a quarter of the features are retired (:data:`OPEN_FRACTION`), a step on the
        CPU counts only the open candidates: the tables of every other feature are never read by a
        greedy criterion once it is selected. Their quantities then read 0. The open
        candidates' tables are the same integer counts, and their quantities come from the
        same float64 operations on each table's own row, so the values are those of a count
        of every column. On data with few features and k close to their number (chess,
        optdigits: the average step has 40-60 % of the columns open) that is the counting
        and the quantities of the closed columns saved.

        Parameters
        ----------
        j : int
            The feature just selected.
        """
        if self._open is None:
            self._open = np.ones(self.n_features, dtype=bool)
        self._open[j] = False

    def _open_columns(self) -> np.ndarray | None:
        """The open columns (int64) when restricting the count pays (see :meth:`retire`); None: every column."""
        if self._open is None or self._all_pairs or self.codes.device.type != "cpu":
            # off the CPU a step is bound by its launches, not its counting: not measured there
            return None
        n_open = int(self._open.sum())
        if n_open > OPEN_FRACTION * self.n_features or n_open < 2:  # a lone table: see pair_cmi
            return None
        return np.flatnonzero(self._open)

    def _seeded(self, info: TableInformation, j: int, classes: bool,
                index: torch.Tensor | None = None) -> TableInformation:
        """``info`` (the tables of every candidate against ``x_j``) with its pair-independent entropies filled in.

        On complete, unweighted rows a table's margins over ``x``, ``b`` (the class) and
        ``(x, b)`` are the counts of the class table, and those over ``a`` and ``(a, b)`` the
        class table's row ``j``: the same integers, rows of the same length, so the same
        float64 entropies (:class:`TableInformation` computes each from its margin alone).
        They are computed once per run from the class table and set here, leaving a step
        only ``h_xa`` and ``h_xab`` to compute: ICAP's and CIFE's seven entropies become two,
        JMI's three two, MRMR's three one. ``classes``: whether the tables have the class
        axis (else only ``h_x`` and ``h_a``); ``index``: the tables are those of these
        candidates only (on the codes' device). Left as is with missing entries or weights (observed fractions, float
        sums), or for other than one table per candidate.
        """
        m = self.marginal_entropies()
        N = self.n_features if index is None else index.numel()
        if m is None or info.T.shape[0] != N:
            return info
        pick = (lambda v: v) if index is None else (lambda v: v[index])
        known = info.__dict__  # where the cached properties keep their values
        known["h_x"], known["h_a"] = pick(m["h_x"]), m["h_x"][j].expand(N)
        if classes:
            known["h_b"], known["h_xb"], known["h_ab"] = pick(m["h_b"]), pick(m["h_xb"]), m["h_xb"][j].expand(N)
        return info

    def marginal_entropies(self) -> dict[str, torch.Tensor] | None:
        """``h_x``, ``h_b``, ``h_xb`` (N,) of the class table, computed once; None with missing entries or weights.

        The pair-independent entropies of every (x_c, x_j, class) table (see :meth:`_seeded`):
        ``h_a`` of a pair is ``h_x[j]`` and ``h_ab`` is ``h_xb[j]``, bit for bit.

        Returns
        -------
        dict of str to torch.Tensor, or None
            ``{"h_x": ..., "h_b": ..., "h_xb": ...}``, each float64 of shape (N,), divided by
            ``log_base``; None on data with missing entries or weights.
        """
        if self._marginals is None:
            h = self._class_entropies()
            if h is not None:  # TableInformation's values bit for bit, shared with the relevance
                self._marginals = {k: torch.from_numpy(v / self.log_base) for k, v in h.items()}
            elif self.n_rows is None and not self._weighted:
                c = table_information(self.class_table, self.log_base)
                self._marginals = {"h_x": c.h_x, "h_b": c.h_b, "h_xb": c.h_xb}
            else:
                self._marginals = False
        return self._marginals or None

    def _class_entropies(self) -> dict[str, np.ndarray] | None:
        """``h_x``, ``h_b``, ``h_xb`` (nats, NumPy) of the class table's integer counts on the CPU, computed once; else None.

        What both the relevance and :meth:`marginal_entropies` read (the arcene shape, 10,000
        tables: 2.4 ms each time). None off the CPU, with missing entries or weights. Without
        either, every table holds all the rows, and its class margin is the class counts: each
        total is the number of rows, and ``h_b`` is computed from the first table (the same
        operations on the same counts give the same value in every table).
        """
        if self._class_h is None:
            T = self.class_table
            ok = T.device.type == "cpu" and self.n_rows is None and not self._weighted  # integer counts
            h = None
            if ok:
                counts, total = T.numpy().astype(np.int64), self.n_total
                h_b = entropies_of_counts(counts[:1], ("h_b",), total=total)
                h = None if h_b is None else {"h_b": np.repeat(h_b["h_b"], T.shape[0]),
                                              **entropies_of_counts(counts, ("h_x", "h_xb"), total=total)}
            self._class_h = False if h is None else h
        return self._class_h or None

    def _bitsets(self) -> np.ndarray | None:
        """The (candidate, value) bitsets over the rows, (N, I, ceil(M / 64)) uint64, built once; None where not used.

        Built on the CPU when NumPy has ``bitwise_count`` (2.0 or later), they take at most a
        quarter of the memory budget, and the alphabet has at most 8 values: a step then makes
        ``N I^2 M / 64`` word operations where the histogram makes ``M N`` updates, each about
        as costly, so the bitsets win below ``I^2 = 64`` (MRMR, whole fit: 5 values 2.2-2.5x
        faster, 6 values 1.3x; 17 values, optdigits, 2.8x slower).
        """
        if self._bits is None:
            N, I = self.n_features, self.max_card
            M = int(self.codes.shape[0])
            words = (M + 63) // 64
            if (self.codes.device.type != "cpu" or not hasattr(np, "bitwise_count") or M == 0 or I * I > 64
                    or N * I * words * 8 > get_config()["memory_budget"] // 4):
                self._bits = False
                return None
            fm = self.codes.T.numpy()  # (N, M): the feature-major memory
            bits = np.zeros((N, I, words * 8), dtype=np.uint8)
            step = max(1, CPU_BLOCK_BYTES // max(1, M))
            for s in range(0, N, step):
                block = fm[s:s + step]
                for v in range(I):
                    bits[s:s + step, v, :(M + 7) // 8] = np.packbits(block == v, axis=1, bitorder="little")
            self._bits = bits.view(np.uint64)
            self._bit_totals = np.bitwise_count(self._bits).sum(-1, dtype=np.int64)  # (N, I)
        return self._bits if self._bits is not False else None

    def _all_pair_tables(self, classes: bool = True) -> torch.Tensor:
        """(x_c, x_j, class) tables of every (j, c), j-major: (N * N, I, I, n_classes), one counting pass.

        ``classes=False``: the (x_c, x_j) tables (N * N, I, I, 1) of the labelled rows, the
        same tables summed over the class.
        """
        N, I, C, complete = self.n_features, self.max_card, self.n_classes, self.complete
        if not classes:
            C = 1

        def tables(codes: torch.Tensor, y: torch.Tensor, w: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor:
            if not classes:  # one class: every labelled row
                y = torch.where(y >= 0, 0, -1)
            if w is None or bool((w == w.round()).all()):  # exact integer sums: the products
                return _pair_products(codes, I, y, C, w, complete).to(dtype)
            ct = codes.T.to(torch.int32)  # (N, M)
            pair = ct[None, :, :] * I + ct[:, None, :]  # (j, c, M): x_c * I + x_j
            if not complete:
                pair.masked_fill_((ct[None, :, :] < 0) | (ct[:, None, :] < 0), -1)
            return joint_table(pair.view(N * N, -1).T, I * I, None, 1, y, C, weights=w, dtype=dtype,
                               complete=complete)

        return self.count(tables).view(N * N, I, I, C)


def _pair_products(codes: torch.Tensor, I: int, y: torch.Tensor, C: int, w: torch.Tensor | None,
                   complete: bool = False) -> torch.Tensor:
    """Every (x_c, x_j, class) table, j-major (N * N, I, I, C) float64, as one-hot Gram matrices per class.

    With ``E`` the one-hot codes (rows x (feature, value); a missing code is a row of zeros, so
    a pair counts only the rows where both are observed), the class-``k`` block of all pair
    tables is ``E_k^T W_k E_k``: a matrix product of (N I)^2 outputs per class instead of M N^2
    histogram updates (chess, 36 features: about 1 ms against 9). Sums of ones (float32 below
    2**24 rows) and float64 sums of integral weights are exact: the same counts as the bincounts. Rows are taken in blocks
    within the memory budget; rows without a class count nowhere.

    ``complete`` unweighted rows (no missing code): ``E`` leaves out every feature's last value,
    a product of (N (I - 1))^2 outputs (splice's 6 values: 0.69 of the work, chess's 3: 0.44); the
    cells with a last value are the margins (each class's rows of every (feature, value), and
    its size) minus the counted cells, integers below 2**24 in float32: the same counts.
    """
    M, N = codes.shape
    dev = codes.device
    # unweighted counts below 2**24 are exact in float32 whatever the order of the sums (every
    # partial sum is an integer float32 holds), and its products take half the time
    gt = torch.float32 if w is None and M < 2**24 else torch.float64
    drop = complete and w is None and I > 1
    J = I - 1 if drop else I
    G = torch.zeros(C, N * J, N * J, dtype=gt, device=dev)
    m = torch.zeros(C, N * J, dtype=gt, device=dev)  # rows of each (feature, value) per class (drop only)
    order, sizes = rows_by_class(y, C)  # each class a contiguous run of rows
    ends = np.cumsum(sizes).tolist()
    step = max(1, min(M, get_config()["memory_budget"] // max(1, 16 * N * I)))
    # E^T W E is symmetric: only the blocks on and above the diagonal are multiplied, then
    # mirrored (3 blocks: 6 products of a ninth instead of the whole; splice's 300 columns 6.1 ->
    # 4.5 ms; under 128 columns one product is faster)
    n = N * J
    parts = 1 if n < 128 else 3 if n < 768 else 4
    cuts = [round(i * n / parts) for i in range(parts + 1)]
    blocks = [(slice(cuts[a], cuts[a + 1]), slice(cuts[b], cuts[b + 1])) for a in range(parts) for b in range(a, parts)]
    for k in range(C):
        for s in range(ends[k - 1] if k else 0, ends[k], step):
            rows = order[s:min(s + step, ends[k])]
            E = one_hot(codes.index_select(0, rows), I, gt, drop_last=drop)
            wE = E if w is None else E * w.index_select(0, rows).to(gt)[:, None]
            for A, B in blocks:
                G[k, A, B].addmm_(wE[:, A].T, E[:, B])
            if drop:
                m[k] += E.sum(0)
    for A, B in blocks:
        if A != B:
            G[:, B, A] = G[:, A, B].transpose(1, 2)
    if drop:  # the cells of the last values, from the margins
        g, mv = G.view(C, N, J, N, J), m.view(C, N, J)
        full = torch.empty(C, N, I, N, I, dtype=gt, device=dev)
        full[:, :, :J, :, :J] = g
        full[:, :, :J, :, J] = mv[:, :, :, None] - g.sum(4)  # x_c = v, x_j last
        full[:, :, J, :, :J] = mv[:, None, :, :] - g.sum(2)  # x_c last, x_j = u
        n_k = torch.tensor(sizes, dtype=gt, device=dev)[:, None, None]
        tot = mv.sum(2)
        full[:, :, J, :, J] = n_k - tot[:, :, None] - tot[:, None, :] + g.sum((2, 4))
        G = full
    # G[k][(c, v), (j, u)] -> (j, c, v, u, k)
    return G.view(C, N, I, N, I).permute(3, 1, 2, 4, 0).reshape(N * N, I, I, C).to(torch.float64)


def _bitset_pair_tables(bits: np.ndarray, bj: np.ndarray, totals: np.ndarray, tj: np.ndarray) -> np.ndarray:
    """Counts (N, I, I) of (x_c = v, x_j = u) of complete rows from the bitsets ``bits`` (N, I, W) and ``bj`` (I, W), x_j's.

    Only the cells with ``v`` and ``u`` below ``I - 1`` are population counts of ANDs; the last
    row and column are the margins (``totals`` (N, I) and ``tj`` (I,), the rows of every
    (feature, value) and of x_j's values) minus the counted cells: the same integers, with 5
    values 16 AND-and-count passes instead of 25.
    """
    N, I, W = bits.shape
    out = np.empty((N, I, I), dtype=np.int64)
    J = I - 1
    step = max(1, CPU_BLOCK_BYTES // (8 * W * max(J, 1)))  # the AND of a block stays in cache
    for s in range(0, N, step):
        block = bits[s:s + step, :J]  # (b, J, W)
        for u in range(J):
            # few words per bitset (few rows): adds of columns; NumPy reduces a short axis slowly
            out[s:s + step, :J, u] = _axis_sum(np.bitwise_count(block & bj[u]), 2, np.int64)
    inner = out[:, :J, :J]
    out[:, :J, J] = totals[:, :J] - inner.sum(2)
    out[:, J, :J] = tj[:J] - inner.sum(1)
    out[:, J, J] = totals[:, J] - out[:, J, :J].sum(1)
    return out


#: :meth:`SelectionData._free_grouped`: the class-free tables by grouped comparisons from this many
#: features, up to this many rows (else the bitsets).
FREE_GROUPED_MIN_FEATURES, FREE_GROUPED_MAX_ROWS = 256, 4096

#: :meth:`SelectionData.retire`: a step counts only the open candidates once at most this
#: fraction of the features is open (the gather of their codes then costs less than the
#: counts it saves).
OPEN_FRACTION = 0.75


def _column_subset(index: torch.Tensor | None) -> Callable[[torch.Tensor], torch.Tensor]:
    """The candidate columns ``index`` of a block of codes (M, N), kept feature-major; every column for None."""
    if index is None:
        return lambda codes: codes

    def sub(codes: torch.Tensor) -> torch.Tensor:
        if codes.stride(0) == 1 and codes.shape[0] > 1:  # feature-major: contiguous rows of the (N, M) memory
            return codes.T.index_select(0, index).T
        return codes.index_select(1, index)

    return sub


class _Scattered:
    """The quantities of the tables of candidates ``index`` (a :class:`TableInformation`), read as (N,) vectors, 0 elsewhere."""

    def __init__(self, info: TableInformation, index: torch.Tensor, n: int) -> None:
        self._info, self._index, self._n = info, index, n

    def __getattr__(self, name: str) -> torch.Tensor:
        v = getattr(self._info, name)
        out = v.new_zeros(self._n).index_copy_(0, self._index, v)
        self.__dict__[name] = out  # read once
        return out


class _Rows:
    """The rows ``index`` of every quantity of a :class:`TableInformation` (read as attributes)."""

    def __init__(self, info: TableInformation, index: slice) -> None:
        self._info, self._index = info, index

    def __getattr__(self, name: str) -> torch.Tensor:
        return getattr(self._info, name)[self._index]
