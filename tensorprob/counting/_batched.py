"""Many weighted selections over one coded data set: their tables counted together.

A batch is B weight vectors over the rows of one data set (cross-validation fold masks,
bootstrap counts, Poisson weights). Each member is a weighted
:class:`~tensorprob.counting.SelectionData` whose criteria run as in a single selection; what
the batch shares is the counting. At a greedy step member b needs the tables of every candidate
against its own last pick ``j_b``,

    T[b, c, x, a, y] = sum_m W[m, b] [x_mc = x] [x_{m j_b} = a] [y_m = y].

Members that picked the same feature (fold masks and resamples mostly pick alike) share one
unweighted count of all rows, ``T_1``, and each adds only the rows whose weight differs from 1,
weighted by ``w - 1``: ``T_b = T_1 + T(w_b - 1)``. For 10-fold training masks that reads the
codes twice for all ten members instead of nine times; for bootstrap counts (a row keeps weight
1 with probability 1/e) it reads about 0.63 of them per member. Where sharing would read more
(0/1 half-samples), a member counts its own rows of positive weight. The counts are bincounts
(:func:`~tensorprob.counting.joint_table`), exact integers for integral weights in either dtype
(weighted sums are accumulated in float64).

Many members, or members with their own weights on most rows (bootstrap counts, Poisson
weights), are counted by matrix products instead. With the rows grouped by class (contiguous
after one sort), ``E`` the one-hot codes (rows x (candidate, value)) kept for the whole
selection, and ``L[m, (b, a)] = W[m, b] [x_{m j_b} = a]`` the members' weights spread over the
values of their own picks,

    T[y][(b, a), (c, x)] = sum_{m in y} L[m, (b, a)] E[m, (c, x)],   i.e.  T[y] = L_y^T E_y,

one product per class for all members whatever their picks. Its work is ``card_a * I``
multiply-adds per code and member (``I`` the largest cardinality), against one scatter-add per
code and member (or per differing row) of the bincounts, but dense, vectorized and reading
each code's one-hot row once per class block for all members
(the planner chooses by its cost estimates among the strategies of kind ``"members"``). It runs only where the sums
are exact integers: integral weights whose column totals stay below 2**24. On the CPU, weights
of at most 127 multiply in int8 with int32 sums (``torch._int_mm``, about 4x the float32 rate
with AVX-512 VNNI), and the quantities a criterion reads are then computed straight from the
class-outer int32 counts of all members of a chunk
(:class:`~tensorprob.counting._tables.ClassOuterInformation`), without copying the tables into
each member's layout; elsewhere (larger weights, a GPU) the products run in float32.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from .._config import get_config, setting
from .._device import chunk_ranges
from . import _costs
from ._grouped import grouped_seconds, weight_levels
from ._planner import CountingPlan, Planner, Request, Strategy, register
from ._selection import CLASS_FREE, SelectionData
from ._tables import (
    _XLOGX_MAX,
    ClassOuterInformation,
    _xlogx,
    feature_major,
    joint_table,
    one_hot,
    rows_by_class,
    table_information,
)

#: Whether the quantities of a step's members are computed from their stacked tables on the CPU
#: too (on a GPU one computation for all members replaces many small kernels per member; on the
#: CPU one member's tables stay in cache where the stack streams through memory). Tests set it.
STACK_ON_CPU = False
#: Members at least, for :attr:`BatchedSelectionData.counts_steps_together` (one int8 product
#: then serves every member's eager step: ``benchmarks/results/batched_int8.md``).
EAGER_MIN_BATCH = 4


@dataclass
class Members:
    """What a ``"members"`` request counts: each member's tables against its own pick.

    ``members[i]`` against ``a_cols[i]`` (None: a constant, ``card_a`` = 1); ``classes``: with
    the class (else summed over it); ``stack``: one (n, N, I, card_a, C) tensor instead of a
    list; ``raw``: the int8 products' class-outer quantities may be returned; ``slot``: which
    kept buffers raw quantities use.
    """

    members: list[int]
    a_cols: list[int | None]
    card_a: int
    classes: bool = True
    stack: bool = False
    raw: bool = False
    slot: int = 0


class BatchedSelectionData:
    """B weighted members of one coded data set, counted together.

    Parameters
    ----------
    codes : torch.Tensor of shape (M, N), int
        Feature codes (-1 missing), as for :class:`~tensorprob.counting.SelectionData`.
    cards : array-like of shape (N,), or int
        Cardinalities of the features (an int: the same for all).
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
    compact : bool, default=False
        Each member holds only its rows of positive weight (their codes copied, in row order),
        with their weights (None where they are all 1): what the per-sample criteria (PDA,
        VMI) need, whose work per step is proportional to the member's rows and whose sample
        means must not read rows the weights leave out. The tables are counted by the batch
        from all rows either way.
    distributed : bool, default=False
        The rows are this rank's part of data spread over a ``torch.distributed`` process
        group: the tables of every :meth:`count` are summed over the ranks (one all-reduce per
        call, after the local counts), the members are distributed :class:`SelectionData`, and
        every decision that changes which collectives run is taken from global values.

    Attributes
    ----------
    data : SelectionData
        The unweighted data of all rows.
    members : list of SelectionData
        One weighted view per column of ``weights``; :meth:`SelectionData.pair_information` of
        a member reads the tables the batch counted for it when its pick was announced.
    counting_plan : CountingPlan
        Which strategy counted the batch's tables (the members' counts included).
    """

    def __init__(self, codes: torch.Tensor, cards, y: torch.Tensor, n_classes: int, weights: torch.Tensor,
                 dtype: torch.dtype = torch.float64, log_base: float = 1.0, distributed: bool = False,
                 compact: bool = False) -> None:
        base = SelectionData(codes, cards, y, n_classes, dtype=dtype, log_base=log_base,
                             distributed=distributed)  # feature-major codes
        self.data = base
        self.codes, self.cards, self.y, self.n_classes = base.codes, base.cards, y, int(n_classes)
        self.max_card = base.max_card
        self.dtype = dtype
        W = weights.to(torch.float64)
        self.weights = W
        self.members = []
        complete = base.complete
        self._complete = complete
        self._row_major: torch.Tensor | None = None
        self.planner = Planner(self)
        for b in range(W.shape[1]):
            if compact:
                m = compact_rows(self._rows_first(), y, W[:, b], self.cards, n_classes, dtype=dtype,
                                 log_base=log_base, distributed=distributed)
            else:
                m = SelectionData(self.codes, self.cards, y, n_classes, dtype=dtype, log_base=log_base,
                                  weights=W[:, b], distributed=distributed)
            m._complete = complete
            m._batch = self
            m._member = b
            self.members.append(m)
        self.log_base = log_base
        self._pending: dict[int, int] = {}
        B = W.shape[1]
        self._picked: list[set[int]] = [set() for _ in range(B)]
        self._active = set(range(B))
        self._cache: dict[int, dict[int, dict]] = {}
        self._needed: tuple[str, ...] = ()
        # share a pick's count among all members when they differ from unit weights on few rows
        # (fold masks): then counting every member against a pick costs about two passes
        # (a global decision: it sets which counts, hence which collectives, each step makes)
        differing = base.reduce(torch.stack([(W != 1).to(torch.float64).sum(),
                                             torch.tensor(float(W.numel()), dtype=torch.float64, device=W.device)]))
        self._share = B > 1 and float(differing[0]) <= _costs.SHARE_MAX_DIFFERING * float(differing[1])
        self._tables: dict[int, dict[int, torch.Tensor]] = {}  # pick -> member -> raw table (pair_table)
        self._counted: dict[int, set[int]] = {}  # pick -> members whose raw table this step counted
        # the products (module notes): exact for integral weights with column totals below 2**24;
        # int8 (exact int32 sums) for weights below 128 on the CPU
        totals = W.sum(0)
        self._integral = bool((W == W.round()).all())
        largest = float(W.max()) if W.numel() else 0.0
        self._int8_ok = W.device.type == "cpu" and self._integral and largest <= 127 and _int8_products()
        self._exact_products = self._integral and float(totals.max()) < 2.0**24
        self._max_total = int(totals.max())
        # the int8 products' counts go to the quantities as they are (class outer) where each
        # member's total has its m log m looked up (one rank's: a distributed batch sums first)
        self._raw_ok = self._int8_ok and float(totals.max()) <= _XLOGX_MAX and not distributed
        # kept buffers of the raw path (name -> 1-D tensor): fresh allocations of their size
        # fault in their pages on every count (:class:`ClassOuterInformation`)
        self._buffers: dict[str, torch.Tensor] = {}
        self._onehot: dict[torch.dtype, torch.Tensor] = {}
        self._w_product: dict[torch.dtype, torch.Tensor] = {}
        self._sorted_codes: torch.Tensor | None = None
        #: how many counts the run is expected to make (the greedy driver sets it to about k):
        #: the products' one-time build is spread over them in the cost estimate
        self.expected_counts = 1
        # per member: how many levels its weights and its w - 1 take (grouped counts; None: not integral)
        # (CPU only: the GPU never counts by comparisons, and each unique would synchronize)
        self._levels = ([(weight_levels(w.numpy()), weight_levels((w - 1).numpy())) for w in W.unbind(1)]
                        if W.device.type == "cpu" else [(None, None)] * B)
        # per member: rows whose weight differs from 1, and rows of positive weight (host ints)
        self._n_differ, self._n_positive = torch.stack([(W != 1).sum(0), (W > 0).sum(0)]).tolist()
        # the weight patterns of the rows (PATTERNS_MAX at most, else None): (P, B) weights, the
        # pattern of every row (-1: a row no member counts), and whether the (x_a, pattern) keys are complete
        self._patterns: tuple[torch.Tensor, torch.Tensor, bool] | None = None
        if B > 1 and not distributed:
            pat, inv = torch.unique(W, dim=0, return_inverse=True)
            if pat.shape[0] <= _costs.PATTERNS_MAX:
                used = pat.ne(0).any(1)
                ids = torch.cumsum(used.to(torch.int64), 0) - 1
                row_pat = torch.where(used[inv], ids[inv], -1)
                self._patterns = (pat[used], row_pat, complete and bool((row_pat >= 0).all()))

    @property
    def n_members(self) -> int:
        """Number of members B."""
        return len(self.members)

    @property
    def counts_steps_together(self) -> bool:
        """Whether one int8 product can count every member's step (see ``SelectionData.batch_counts_steps_together``)."""
        return self._raw_ok and self.n_members >= EAGER_MIN_BATCH and get_config()["counting"] == "auto"

    @property
    def counting_plan(self) -> CountingPlan:
        """Which strategy counted the batch's tables, its members' own counts included."""
        plan = CountingPlan()
        plan.merge(self.planner.plan)
        for m in self.members:
            plan.merge(m.counting_plan)
        return plan

    def _rows_first(self) -> torch.Tensor:
        """The codes row-major (M, N) contiguous, copied once: whole rows are gathered from it."""
        if self._row_major is None:
            self._row_major = self.codes.contiguous()
        return self._row_major

    # ------------------------------------------------------------------ counting
    def _table(self, rows: torch.Tensor | None, a: int | None, card_a: int, weights: torch.Tensor | None,
               grouped: bool) -> torch.Tensor:
        """(N, I, card_a, C) counts of (x_c, x_a, class) over ``rows`` (None: all), optionally weighted.

        ``grouped``: by grouped comparisons (the rows left out get weight 0, the row-major codes
        are read in place); else by a bincount.
        """
        if grouped:
            from ._grouped import grouped_table

            M = self.codes.shape[0]
            if rows is None:
                w = weights
            else:
                w = torch.zeros(M, dtype=torch.float64)
                w[rows] = 1.0 if weights is None else weights.to(torch.float64)
            return grouped_table(self.data.row_major_codes(), self.y.numpy(), a, self.max_card, self.n_classes,
                                 self._complete, None if w is None else w.to(torch.float64).numpy(), self.dtype)
        codes, y = self.codes, self.y
        a_col = None if a is None else codes[:, a]
        if rows is not None:
            # whole rows from a row-major copy (a gather along the inner dimension of the
            # feature-major codes is several times slower), then feature-major again for counting
            codes = feature_major(self._rows_first().index_select(0, rows))
            y = y.index_select(0, rows)
            a_col = None if a_col is None else a_col.index_select(0, rows)
        return joint_table(codes, self.max_card, a_col, card_a, y, self.n_classes, weights=weights,
                           dtype=self.dtype, complete=self._complete)

    def count(self, members: list[int], a_cols: list[int | None], card_a: int,
              classes: bool = True, stack: bool = False, raw: bool = False, slot: int = 0
              ) -> list[torch.Tensor] | torch.Tensor | ClassOuterInformation:
        """Tables (N, I, card_a, n_classes) of (x_c, x_a, class) weighted by each of ``members``.

        ``classes=False``: the tables summed over the class, (N, I, card_a, 1) (their
        class-free quantities equal the full tables'). ``stack=True``: one tensor
        (len(members), N, I, card_a, C) instead of the list. ``raw=True`` (with ``stack``):
        where the int8 products count (``members-int8-raw``), the members'
        :class:`~tensorprob.counting._tables.ClassOuterInformation` straight from the products'
        int32 counts, held in a kept buffer that the next raw count of the same ``slot`` (0 or
        not) overwrites; where another strategy counts, the list of tables instead of their
        stack (the caller sized the chunk for about one copy of the tables).

        ``a_cols[i]`` is the feature playing ``a`` for ``members[i]`` (None: constant, card_a = 1).
        The planner picks the strategy (kind ``"members"``); every one gives the exact counts.
        """
        req = Request("members", batch=Members(list(members), list(a_cols), card_a, classes, stack,
                                               raw and stack and self._raw_ok, slot))
        out = self.planner.count(req)
        if isinstance(out, ClassOuterInformation):
            return out
        if isinstance(out, list) and not classes:
            out = [T.sum(3, keepdim=True) if T.shape[3] != 1 else T for T in out]
        if req.batch.raw and isinstance(out, list):
            return out
        if self.data.distributed:  # one all-reduce for the call
            stacked = out if isinstance(out, torch.Tensor) else torch.stack(out)
            stacked = self.data.reduce(stacked)
            return stacked if stack else list(stacked.unbind(0))
        if stack and isinstance(out, list):
            return torch.stack(out)
        if not stack and isinstance(out, torch.Tensor):
            return list(out.unbind(0))
        return out

    def _groups(self, m: Members) -> dict[int | None, list[int]]:
        """Positions of ``m.members`` by their pick."""
        groups: dict[int | None, list[int]] = {}
        for i, a in enumerate(m.a_cols):
            groups.setdefault(a, []).append(i)
        return groups

    def _rows_mode(self, ids: list[int]) -> bool:
        """Whether the members ``ids`` (same pick) share one unweighted count of all rows (each adding its w - 1)."""
        M = self.codes.shape[0]
        return len(ids) > 1 and M + sum(self._n_differ[b] for b in ids) < sum(self._n_positive[b] for b in ids)

    def rows_seconds(self, m: Members, grouped: bool) -> float:
        """Estimated seconds of :meth:`count_rows` (``grouped``: by grouped comparisons)."""
        M, N = self.codes.shape
        total = 0.0
        for pos in self._groups(m).values():
            ids = [m.members[i] for i in pos]
            if self._rows_mode(ids):
                passes = [(M, 1)] + [(self._n_differ[b], self._levels[b][1]) for b in ids]
            else:
                passes = [(self._n_positive[b], self._levels[b][0]) for b in ids]
            for rows, levels in passes:
                if grouped:
                    groups = m.card_a * self.n_classes * (levels or 1)
                    total += (grouped_seconds(rows, N, self.max_card, groups, self._complete)
                              + groups * self.max_card * N * _costs.GROUPED_CELL_S)
                else:
                    total += rows * N * _costs.MEMBER_PASS_S
        return total

    def count_rows(self, m: Members, grouped: bool) -> list[torch.Tensor]:
        """Each member's tables over its rows (``members-rows``; ``grouped``: ``members-grouped``).

        Members with the same pick share one unweighted count of all rows when that reads fewer
        codes: each then adds only its rows whose weight differs from 1, with weight ``w - 1``.
        Otherwise a member counts its rows of positive weight (unweighted where those weights
        are all 1). Exact integer counts either way.
        """
        out: list = [None] * len(m.members)
        M = self.codes.shape[0]
        for a, pos in self._groups(m).items():
            ids = [m.members[i] for i in pos]
            Wg = self.weights[:, ids]
            use_ref = self._rows_mode(ids)
            ref = self._table(None, a, m.card_a, None, grouped) if use_ref else None
            for n, i in enumerate(pos):
                w = Wg[:, n]
                if use_ref:
                    rows = (w != 1).nonzero().squeeze(1)
                    T = ref.clone() if rows.numel() == 0 else ref + self._table(rows, a, m.card_a, w[rows] - 1.0, grouped)
                else:
                    rows = (w > 0).nonzero().squeeze(1)
                    kept = w[rows]
                    full = rows.numel() == M
                    T = self._table(None if full else rows, a, m.card_a,
                                    None if bool((kept == 1).all()) else (w if full else kept), grouped)
                out[i] = T
        return out

    def reference_seconds(self, req: Request) -> float:
        """Estimated seconds of :meth:`count_reference`."""
        N = self.codes.shape[1]
        return sum(self._n_positive[b] for b in req.batch.members) * N * _costs.MEMBER_PASS_S * 1.5

    def count_reference(self, req: Request) -> list[torch.Tensor]:
        """Each member's tables by a weighted bincount of its rows of positive weight (the reference)."""
        m = req.batch
        out = []
        for b, a in zip(m.members, m.a_cols):
            w = self.weights[:, b]
            rows = (w > 0).nonzero().squeeze(1)
            out.append(self._table(rows, a, m.card_a, w[rows], False))
        return out

    def patterns_seconds(self, m: Members) -> float:
        """Estimated seconds of :meth:`count_patterns` (inf where the pattern tables exceed the budget)."""
        M, N = self.codes.shape
        P = self._patterns[0].shape[0]
        cells = N * self.max_card * m.card_a * self.n_classes
        if 16 * P * cells > setting("memory_budget") // 2:  # the pattern tables and their copy
            return float("inf")
        groups = self._groups(m)
        return len(groups) * M * N * _costs.MEMBER_PASS_S + len(m.members) * P * cells * _costs.PATTERN_MADD_S

    def count_patterns(self, m: Members) -> list[torch.Tensor]:
        """Each member's tables from one count per pick keyed by (x_a, weight pattern) (``members-patterns``)."""
        out: list = [None] * len(m.members)
        for a, pos in self._groups(m).items():
            for i, T in zip(pos, self._pattern_tables([m.members[i] for i in pos], a, m.card_a)):
                out[i] = T
        return out

    def _pattern_tables(self, ids: list[int], a: int | None, card_a: int) -> list[torch.Tensor]:
        """Tables of the members ``ids`` against ``a`` from one count keyed by (x_a, weight pattern).

        Exact: the pattern tables hold integer counts, and each member's table is the sum of
        them times the member's weight in each pattern (float64; the weights are the members'
        own, so fractional ones give the float64 sums of a weighted count).
        """
        pat, inv, keys_complete = self._patterns
        P = pat.shape[0]
        key = inv if a is None else torch.where((self.codes[:, a] >= 0) & (inv >= 0),
                                                self.codes[:, a].to(torch.int64) * P + inv, -1)
        T = joint_table(self.codes, self.max_card, key, card_a * P, self.y, self.n_classes,
                        dtype=torch.float64, complete=keys_complete)
        N, I, C = T.shape[0], self.max_card, self.n_classes
        # pattern outermost (one copy), then every member's table in its own layout by one product
        Tp = T.view(N * I, card_a, P, C).permute(2, 0, 1, 3).reshape(P, N * I * card_a * C)
        out = torch.mm(pat[:, ids].T.contiguous(), Tp)  # (n, N I card_a C)
        return [t.view(N, I, card_a, C).to(self.dtype) for t in out.unbind(0)]

    def product_seconds(self, m: Members, dt: torch.dtype) -> float:
        """Estimated seconds of :meth:`_product_tables` in ``dt`` for the members of ``m``."""
        M, N = self.codes.shape
        cpu = self.codes.device.type == "cpu"
        madd = ((_costs.PRODUCT_MADD_INT8_S if dt == torch.int8 else _costs.PRODUCT_MADD_S) if cpu
                else _costs.PRODUCT_MADD_GPU_S)
        # the first product builds the one-hot codes of all rows, once for the counts the run makes
        per_entry = _costs.ONEHOT_INT8_S if dt == torch.int8 else _costs.ONEHOT_S
        build = M * N * self.max_card * per_entry / self.expected_counts if cpu and dt not in self._onehot else 0.0
        return (M * N * len(m.members) * m.card_a * self.max_card * madd + self.n_classes * _costs.PRODUCT_CALL_S
                + build)

    def _by_class(self, dt: torch.dtype) -> None:
        """Sort the rows by class once, keeping the one-hot codes and weights (in ``dt``) and the codes in that order."""
        M, N = self.codes.shape
        I = self.max_card
        if self._sorted_codes is None:
            order, self._class_sizes = rows_by_class(self.y, self.n_classes)  # rows without a class: last
            self._order = order
            self._sorted_codes = self._rows_first().index_select(0, order)
        rows = self._sorted_codes
        E = torch.empty(M, N * I, dtype=dt, device=rows.device)
        for s, e in chunk_ranges(M, 8 * N, setting("memory_budget") // 4):
            E[s:e] = one_hot(rows[s:e], I, dt)
        self._onehot = {dt: E}  # a missing code: a row of zeros, counted nowhere (one dtype kept at a time)
        self._w_product = {dt: self.weights.index_select(0, self._order).to(dt)}

    def _buffer(self, name: str, numel: int, dtype: torch.dtype) -> torch.Tensor:
        """The first ``numel`` elements of the kept 1-D buffer ``name`` (grown as needed)."""
        buf = self._buffers.get(name)
        if buf is None or buf.numel() < numel or buf.dtype != dtype:
            buf = self._buffers[name] = torch.empty(numel, dtype=dtype, device=self.codes.device)
        return buf[:numel]

    def _product_tables(self, dt: torch.dtype, members: list[int], a_cols: list[int | None], card_a: int,
                        classes: bool = True, stack: bool = False, raw: bool = False, slot: int = 0
                        ) -> list[torch.Tensor] | torch.Tensor | ClassOuterInformation:
        """Tables (N, I, card_a, C) of ``members[i]`` against ``a_cols[i]``, by one product per class.

        Exact integer counts (integral weights whose column totals stay below 2**24), equal to
        the bincounts'; products in ``dt`` (float32, or int8 with int32 sums).
        ``classes=False``: one product over the rows of every class, tables (N, I, card_a, 1)
        (rows without a class are left out, as in the full tables). ``raw`` (int8 products): the
        members' :class:`~tensorprob.counting._tables.ClassOuterInformation`, from margins summed
        class by class (:meth:`_class_outer_information`; see :meth:`count`).
        """
        if dt not in self._onehot:
            self._by_class(dt)
        E = self._onehot[dt]
        N, I, C, B = self.codes.shape[1], self.max_card, self.n_classes, len(members)
        W = self._w_product[dt][:, members]  # (M, B), rows by class
        if card_a == 1:
            L = W
        else:  # each member's weight at the value of its pick (a missing value: nowhere)
            picks = self._sorted_codes[:, a_cols].to(torch.int64)  # (M, B)
            L = torch.zeros(W.shape[0], B, card_a, dtype=W.dtype, device=W.device)
            L.scatter_(2, picks.clamp_min(0).unsqueeze(2), (W * (picks >= 0)).unsqueeze(2))
            L = L.reshape(W.shape[0], B * card_a)
        sizes = self._class_sizes if classes else [sum(self._class_sizes)]
        C = len(sizes)
        int8 = W.dtype == torch.int8
        if raw and int8:
            return self._class_outer_information(E, L, sizes, B, card_a, members, slot)
        T = torch.empty(C, B * card_a, N * I, dtype=torch.int32 if int8 else torch.float32, device=W.device)
        s = 0
        for q, n in enumerate(sizes):
            if not n:
                T[q].zero_()
            elif int8:  # exact int32 sums; a contiguous left factor multiplies faster than its transposed view
                _int_matmul(L[s:s + n].T, E[s:s + n], T[q])
            else:
                torch.mm(L[s:s + n].T, E[s:s + n], out=T[q])
            s += n
        # class innermost in one 2-D transpose, then each member's (N, I, card_a, C) copy reads
        # runs of C contiguous counts (from the class-outer layout it read them C apart)
        T = T.view(C, -1).T.contiguous().view(B, card_a, N, I, C)
        if stack:  # one copy into the working dtype (``to`` keeps a permuted layout when the dtype matches)
            P = T.permute(0, 2, 3, 1, 4)
            return torch.empty(P.shape, dtype=self.dtype, device=P.device).copy_(P)
        return [T[b].permute(1, 2, 0, 3).to(self.dtype, memory_format=torch.contiguous_format)
                for b in range(B)]

    def _class_outer_information(self, E: torch.Tensor, L: torch.Tensor, sizes: list[int], B: int, A: int, members: list[int],
                                 slot: int) -> ClassOuterInformation:
        """The members' quantities from the int8 products, their margins summed class by class.

        Each class's (B A, N I) product is read while it is in cache: added to the (x, a) margin,
        its ``m log m`` values looked up and added to the full tables' sums, and its (x, class)
        and (a, class) margins taken (the latter from the first candidate only on complete data,
        where every candidate's is the same). The (C, B, A, N, I) counts are never held whole.
        The buffers are kept, those of ``slot`` 0 apart (see :meth:`pair_information`).
        """
        N, I, C = self.codes.shape[1], self.max_card, len(sizes)
        R = B * A * N * I
        tag = int(slot > 0)
        slab = self._buffer("slab", R, torch.int32).view(B * A, N * I)
        # the lookups of every margin: (a, x) of R cells and (x, class) of C B N I
        look = self._buffer("lookups", max(R, C * B * N * I), torch.float64)
        xa = self._buffer(f"xa{tag}", R, torch.int32).view(B, A, N, I).zero_()
        cells = self._buffer("xab", B * N * I, torch.float64).view(B, N, I).zero_()
        xb = self._buffer(f"xb{tag}", C * B * N * I, torch.int32).view(C, B, N, I)
        Nab = 1 if self._complete else N
        ab = self._buffer(f"ab{tag}", C * B * A * Nab, torch.int32).view(C, B, A, Nab)
        table = _xlogx(self._max_total, slab.device)
        s = 0
        for q, n in enumerate(sizes):
            if n:
                _int_matmul(L[s:s + n].T, E[s:s + n], slab)
            else:
                slab.zero_()
            s += n
            Tq = slab.view(B, A, N, I)
            xa += Tq
            # the looked-up values summed over a at once (one read of them; an add into a
            # (B, A, N, I) sum would read them and that sum, and write it back)
            cells += torch.index_select(table, 0, slab.view(-1), out=look[:R]).view(B, A, N, I).sum(1)
            torch.sum(Tq, 1, dtype=torch.int32, out=xb[q])
            if Nab == 1:
                torch.sum(Tq[:, :, 0], 2, dtype=torch.int32, out=ab[q, :, :, 0])
            else:
                torch.sum(Tq, 3, dtype=torch.int32, out=ab[q])
        n_rows = _per_table([self.members[m].n_rows for m in members], N, slab.device)
        xab = cells.sum(2).reshape(-1)  # (B, N): over a (per class), then x
        return ClassOuterInformation({(1, 2): xa, (1, 3): xb, (2, 3): ab}, B, N, self.log_base, n_rows,
                                     scratch=look, xab_cells=xab)

    def count_class_tables(self) -> None:
        """The (x_c, class) table of every member, in one count (each member's ``class_table``)."""
        for b0, b1 in self.member_chunks(1):
            idx = list(range(b0, b1))
            T = self.count(idx, [None] * len(idx), 1)
            for i, b in enumerate(idx):
                self.members[b]._class_table = T[i]

    def member_chunks(self, card_a: int, copies: int = 2) -> list[tuple[int, int]]:
        """Ranges of members whose tables (``copies`` float64 copies of each) fit the memory budget together."""
        M, N = self.data.budget_rows, self.codes.shape[1]
        cells = N * self.max_card * card_a * self.n_classes
        per_member = 8 * (copies * cells + 2 * M)
        per = max(1, (setting("memory_budget") // 2) // per_member)
        B = len(self.members)
        return [(s, min(B, s + per)) for s in range(0, B, per)]

    # ------------------------------------------------------------------ the greedy step
    def announce(self, picks: dict[int, int]) -> None:
        """Record each member's pick of this step (members that picked ``j`` never need ``j`` again)."""
        self._pending = dict(picks)
        self._tables.clear()  # pair_table: what one step counted is read in that step
        self._counted = {}
        for b, j in picks.items():
            self._picked[b].add(j)

    def finished(self, b: int) -> None:
        """Member ``b`` has made its last pick: drop what was kept for it."""
        self._active.discard(b)
        for entry in (*self._cache.values(), *self._tables.values()):
            entry.pop(b, None)

    def pair_information(self, member: SelectionData, j: int, needed: tuple[str, ...]):
        """The quantities ``needed`` of ``member``'s (x_c, x_j, class) tables, or None if ``j`` is not its pick.

        The first member to read a pick ``j`` counts the tables of every member that may still
        need it: with sharing (fold masks: each member differs from the unit weights on few
        rows) all active members that have not picked ``j`` yet, so that a member picking ``j``
        at a later step finds its quantities ready, unless the int8 products count; where the
        matrix products may count (exact integers, module notes) every member of this step
        against its own pick, in one :meth:`count`; otherwise the members that picked ``j`` at
        this step. The quantities are kept per (pick, member) as (N,) vectors until read.
        """
        b = member._member
        self._needed = tuple(needed)
        entry = self._cache.get(j)
        if entry is not None and b in entry:
            return _Kept(entry.pop(b), self, member, j)
        if self._pending.get(b) != j:
            return None
        if self._share and not self._raw_ok:
            who = [(m, j) for m in sorted(self._active) if j not in self._picked[m] or self._pending.get(m) == j]
        elif self._exact_products:
            # every member against its own pick in one count (the products serve all picks at once)
            who = list(self._pending.items())
        else:
            who = [(m, jj) for m, jj in self._pending.items() if jj == j]
        who.remove((b, j))
        who.insert(0, (b, j))
        stacked = STACK_ON_CPU or self.codes.device.type != "cpu"
        raw = self._raw_ok
        # stacked: the tables, their integer margins and the entropies' float64 temporaries of
        # the whole chunk are alive together (about five copies of the tables); raw: about one
        size = max(1, self.member_chunks(self.max_card, 5 if stacked else 1 if raw else 2)[0][1])
        first = None
        classes = not set(self._needed) <= CLASS_FREE  # e.g. MRMR: I(x_c; x_j) only
        for s in range(0, len(who), size):
            chunk = who[s:s + size]
            ids, picks = [m for m, _ in chunk], [jj for _, jj in chunk]
            n_rows = [self.members[m].n_rows for m in ids]
            tables = None
            if (stacked or raw) and len(chunk) > 1 and len({r is None for r in n_rows}) == 1:
                # the chunk's quantities at once (a table's quantities do not depend on the
                # tables beside it); the raw counts of the first chunk, whose information ``first``
                # reads, keep their buffer until the next step; the other chunks share one
                T = self.count(ids, picks, self.max_card, classes, stack=True, raw=raw, slot=s)
                if isinstance(T, ClassOuterInformation) or stacked:
                    if isinstance(T, list):
                        T = torch.stack(T)
                    info = T if isinstance(T, ClassOuterInformation) else self._stacked_information(T, n_rows)
                    values = {name: getattr(info, name) for name in self._needed}  # before a later chunk reuses the buffers
                    for i, (m, jj) in enumerate(chunk):
                        row = {name: v.view(len(chunk), -1)[i] for name, v in values.items()}
                        if m == b:
                            first = row
                        else:
                            self._cache.setdefault(jj, {})[m] = row
                    continue
                tables = T  # counted otherwise: each member's own
            if tables is None:
                tables = self.count(ids, picks, self.max_card, classes)
            for (m, jj), T in zip(chunk, tables):
                info = table_information(T, self.log_base, self.members[m].n_rows)
                row = {name: getattr(info, name) for name in self._needed}
                if m == b:
                    first = row
                else:
                    self._cache.setdefault(jj, {})[m] = row
        return _Kept(first, self, member, j)

    def _stacked_information(self, T: torch.Tensor, n_rows: list):
        """:func:`table_information` of members' stacked tables T (n, N, I, A, C), ``n_rows`` theirs (all None, or none)."""
        n, N = T.shape[0], T.shape[1]
        return table_information(T.reshape(n * N, *T.shape[2:]), self.log_base, _per_table(n_rows, N, T.device))

    def pair_table(self, member: SelectionData, j: int) -> torch.Tensor | None:
        """``member``'s weighted (x_c, x_j, class) tables (N, I, I, C), or None if ``j`` is not its pick.

        The raw tables of the per-sample criteria (:meth:`SelectionData.pair_table`). The first
        member to read a pick ``j`` counts the tables of the members that picked ``j`` at this
        step, a memory-sized chunk at a time in one :meth:`count` (one shared unweighted count
        of all rows where that reads fewer codes); the others find theirs kept until they read
        them, in the same step.
        """
        b = member._member
        kept = self._tables.get(j)
        if kept is not None and b in kept:
            T = kept.pop(b)
            if not kept:
                del self._tables[j]
            return T
        if self._pending.get(b) != j:
            return None
        counted = self._counted.setdefault(j, set())
        who = [m for m, jj in self._pending.items() if jj == j and m != b and m not in counted]
        size = max(1, self.member_chunks(self.max_card)[0][1])
        chunk = [b] + who[:size - 1]
        counted.update(chunk)
        tables = self.count(chunk, [j] * len(chunk), self.max_card)
        entry = self._tables.setdefault(j, {})
        for m, T in zip(chunk[1:], tables[1:]):
            entry[m] = T
        if not entry:
            del self._tables[j]
        return tables[0]


def _per_table(n_rows: list, N: int, device: torch.device) -> torch.Tensor | None:
    """The members' ``n_rows`` (all None, or none) as one float64 value per table of their N candidates."""
    if n_rows[0] is None:
        return None
    return torch.tensor(n_rows, dtype=torch.float64, device=device).repeat_interleave(N)


@functools.cache
def _int8_products() -> bool:
    """Whether this torch multiplies int8 matrices exactly on the CPU (``torch._int_mm``, a private op).

    Checked once on a small product against int64 sums; without it the products run in float32.
    """
    try:
        a = torch.arange(-60, 76, dtype=torch.int64).remainder(127).to(torch.int8).view(17, 8)
        b = torch.arange(64, dtype=torch.int64).remainder(3).to(torch.int8).view(8, 8)
        return bool(torch.equal(torch._int_mm(a, b).to(torch.int64), a.to(torch.int64) @ b.to(torch.int64)))
    except (AttributeError, NotImplementedError, RuntimeError):
        return False


def _strided(t: torch.Tensor) -> bool:
    """Whether the 2-D ``t`` is row-major with its row stride equal to its width (a BLAS layout)."""
    return t.stride() == (t.shape[1], 1)


def _int_matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> None:
    """``out = a @ b`` of int8 matrices in exact int32 sums (``torch._int_mm``), any layouts.

    The CPU kernel takes each matrix's first stride as its leading dimension, and torch calls a
    matrix of one row or one column contiguous whatever that stride is (a (1, n) copy may have
    strides (1, 1): the product is then wrong). So every operand is given the plain layout.
    """
    a = a if _strided(a) else torch.empty(a.shape, dtype=a.dtype, device=a.device).copy_(a)
    b = b if _strided(b) else torch.empty(b.shape, dtype=b.dtype, device=b.device).copy_(b)
    if _strided(out):
        torch._int_mm(a, b, out=out)
    else:
        out.copy_(torch._int_mm(a, b))


@register
class MembersRows(Strategy):
    """Each member's tables over its own rows by bincounts; members with one pick share a count of all rows.

    Members that differ from unit weights on few rows (fold masks) add only those rows,
    weighted ``w - 1``, to one unweighted count of all rows.
    """

    name = "members-rows"
    kinds = frozenset({"members"})

    def seconds(self, req: Request) -> float:
        return self.data.rows_seconds(req.batch, grouped=False)

    def count(self, req: Request):
        return self.data.count_rows(req.batch, grouped=False)


@register
class MembersGrouped(Strategy):
    """:class:`MembersRows` with every count by grouped comparisons (CPU, integral weights, small alphabets)."""

    name = "members-grouped"
    devices = frozenset({"cpu"})
    kinds = frozenset({"members"})

    def applies(self, req: Request) -> str | None:
        b = self.data
        m = req.batch
        if m.card_a not in (1, b.max_card):
            return "a pick alphabet other than the largest"
        if any(b._levels[i][0] is None or b._levels[i][1] is None for i in m.members):
            return "weights that are not small integers"
        if b.data.row_major_codes() is None:
            return "a row-major copy of the codes would exceed a quarter of memory_budget"
        return None

    def seconds(self, req: Request) -> float:
        return self.data.rows_seconds(req.batch, grouped=True)

    def count(self, req: Request):
        return self.data.count_rows(req.batch, grouped=True)


@register
class MembersPatterns(Strategy):
    """One count per pick keyed by (x_a, weight pattern); each member's table a weighted sum of the pattern tables.

    For batches whose rows take few distinct weight patterns (a 10-fold split: 10).
    """

    name = "members-patterns"
    kinds = frozenset({"members"})

    def applies(self, req: Request) -> str | None:
        if self.data._patterns is None:
            return f"more than {_costs.PATTERNS_MAX} weight patterns, one member, or distributed rows"
        return None

    def seconds(self, req: Request) -> float:
        return self.data.patterns_seconds(req.batch)

    def count(self, req: Request):
        return self.data.count_patterns(req.batch)


class _Products(Strategy):
    """Every member against its own pick in one matrix product per class (module notes)."""

    kinds = frozenset({"members"})
    dtype: torch.dtype = torch.float32

    def applies(self, req: Request) -> str | None:
        b = self.data
        if not b._exact_products:
            return "weights that are not integers, or totals of 2**24 and more"
        size = torch.empty((), dtype=self.dtype).element_size()
        M, N = b.codes.shape
        if size * M * N * b.max_card > setting("memory_budget") // 4:
            return "the one-hot codes would exceed a quarter of memory_budget"
        return None

    def seconds(self, req: Request) -> float:
        return self.data.product_seconds(req.batch, self.dtype)

    def count(self, req: Request):
        m = req.batch
        return self.data._product_tables(self.dtype, m.members, m.a_cols, m.card_a, m.classes, m.stack, False, m.slot)


@register
class MembersProducts(_Products):
    """One-hot products in float32 (exact sums below 2**24): any device."""

    name = "members-products"


@register
class MembersInt8(_Products):
    """One-hot products in int8 with exact int32 sums (``torch._int_mm``; CPU, weights of at most 127)."""

    name = "members-int8"
    dtype = torch.int8
    devices = frozenset({"cpu"})

    def applies(self, req: Request) -> str | None:
        if not self.data._int8_ok:
            return "weights above 127 or not integers, or no exact int8 products in this torch"
        return super().applies(req)


@register
class MembersInt8Raw(MembersInt8):
    """:class:`MembersInt8` whose int32 counts go straight into the members' quantities (class outer, never transposed).

    Where the caller takes tables (class tables, a lone member, a quantity not kept) it counts
    them as :class:`MembersInt8` does.
    """

    name = "members-int8-raw"

    def seconds(self, req: Request) -> float:
        s = super().seconds(req)
        if req.batch.raw:  # no copy of the counts into every member's table layout
            b, m = self.data, req.batch
            s -= len(m.members) * b.codes.shape[1] * b.max_card * m.card_a * b.n_classes * _costs.CELL_S
        return s

    def count(self, req: Request):
        m = req.batch
        if not m.raw:
            return super().count(req)
        return self.data._product_tables(torch.int8, m.members, m.a_cols, m.card_a, m.classes, True, True, m.slot)


def compact_rows(codes: torch.Tensor, y: torch.Tensor, w: torch.Tensor, cards, n_classes: int,
                 **options) -> SelectionData:
    """A :class:`SelectionData` of the rows of positive weight ``w`` (row order kept).

    Parameters
    ----------
    codes : torch.Tensor of shape (M, N), int
        All rows' codes (row-major is fastest: whole rows are gathered).
    y : torch.Tensor of shape (M,)
        Class codes.
    w : torch.Tensor of shape (M,)
        Nonnegative row weights.
    cards : array-like of shape (N,), or int
        Cardinalities of the features.
    n_classes : int
        As for :class:`SelectionData`.
    **options
        Other arguments of :class:`SelectionData` (``dtype``, ``log_base``, ``distributed``).

    Returns
    -------
    SelectionData
        The kept rows with their weights, or no weights where those are all 1 (the rows then
        count once each, exactly as an unweighted run on them; distributed: all 1 on every rank).
    """
    rows = (w > 0).nonzero().squeeze(1)
    kept = w.index_select(0, rows).to(torch.float64)
    ones = bool((kept == 1).all())
    if options.get("distributed"):  # unweighted on every rank or on none: the ranks' totals must agree
        from .. import _distributed

        ones = all(_distributed.all_gather(ones))
    sub = codes.index_select(0, rows) if rows.numel() < codes.shape[0] else codes
    return SelectionData(sub, cards, y.index_select(0, rows), n_classes, weights=None if ones else kept, **options)


class _Kept:
    """A member's kept quantities (a dict by name); a quantity not kept is counted for the member alone."""

    def __init__(self, kept: dict, batch: BatchedSelectionData, member: SelectionData, j: int) -> None:
        self._kept, self._batch, self._member, self._j = kept, batch, member, j

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        kept = self._kept
        if name not in kept:
            b = self._batch
            T = b.count([self._member._member], [self._j], b.max_card)[0]
            kept[name] = getattr(table_information(T, b.log_base, self._member.n_rows), name)
        return kept[name]
