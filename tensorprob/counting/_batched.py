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
(:meth:`BatchedSelectionData.count` chooses by a cost estimate). It runs only where the sums
are exact integers: integral weights whose column totals stay below 2**24. On the CPU, weights
of at most 127 multiply in int8 with int32 sums (``torch._int_mm``, about 4x the float32 rate
with AVX-512 VNNI), and the quantities a criterion reads are then computed straight from the
class-outer int32 counts of all members of a chunk
(:class:`~tensorprob.counting._tables.ClassOuterInformation`), without copying the tables into
each member's layout; elsewhere (larger weights, a GPU) the products run in float32.
"""
from __future__ import annotations

import functools
import math

import torch

from .._config import get_config
from .._device import chunk_ranges
from ._selection import SelectionData, feature_major
from ._tables import (
    _GROUPED_MAX_LEVELS,
    _XLOGX_MAX,
    ClassOuterInformation,
    _xlogx,
    grouped_seconds,
    joint_table,
    one_hot,
    rows_by_class,
    table_information,
)

#: Members share each pick's count (and keep the quantities for later steps) when the fraction of
#: their weights that differ from 1 is at most this: 10-fold training masks (0.1) do, bootstrap
#: counts (about 0.63) and half-samples (0.5) do not.
SHARE_MAX_DIFFERING = 0.25

#: Cost estimates of the two ways of counting members against their picks, in nanoseconds
#: (measured on a 2-core x86 CPU, torch 2.13; only their ratio matters): one bincount pass over
#: the codes, per code; the products, per multiply-add (code x member x card_a x I), and per
#: product call (one per class). The products need float32 sums to be exact (module notes).
#: On the CPU a multiply-add costs more than the GPU figure: 0.046 ns measured at one thread
#: (MNIST-5k, 10 fold masks, the float32 products of one JMI step: 45 ms), and the grouped
#: comparisons (:func:`~tensorprob.counting._tables.grouped_seconds`) replace the bincount
#: where they are cheaper.
_NS_BINCOUNT_PASS = 2.5
_NS_PRODUCT_MADD = 0.0025
_NS_PRODUCT_MADD_CPU = 0.03
#: The same in int8 with int32 sums (``torch._int_mm``; weights of at most 127): 0.005 ns
#: measured at one thread (x86 with AVX-512 VNNI; 500 rows of a class x 500 member-values x
#: 3,920 candidate-values: 5.0 ms, against 23 ms in float32).
_NS_PRODUCT_MADD_INT8 = 0.006
_NS_PRODUCT_CALL = 2.0e4
#: Nanoseconds per entry of the one-hot codes the products build once (CPU; MNIST-5k: 0.18 s for
#: 5,000 x 784 x 5 entries, rows sorted by class).
_NS_ONEHOT_CPU = 9.0
#: The same for int8 one-hot codes, built by comparisons (MNIST-5k: 36 ms).
_NS_ONEHOT_INT8 = 2.0
#: Rows whose weights agree across the members form a pattern (a 10-fold split has 10: each row
#: is left out by one member). With at most this many patterns, one count of all rows keyed by
#: (x_a, pattern) gives every member's table as a weighted sum of the pattern tables.
PATTERNS_MAX = 16
#: Nanoseconds per multiply-add of those sums (member x pattern x cell, float64; CPU-measured).
_NS_PATTERN_MADD = 0.4
#: Whether the quantities of a step's members are computed from their stacked tables on the CPU
#: too. On a GPU one computation for all members replaces 20-40 small kernels per member (the
#: first GPU run of 100 bootstrap JMI selections: 66 ms a step, launch-bound); on the CPU the
#: stack streams through memory where one member's tables stay in cache (30 bootstrap members of
#: MNIST-5k, k = 20, one thread: 4.2 s stacked against 3.3 s one at a time). Tests set it.
STACK_ON_CPU = False
#: Nanoseconds per output cell of a grouped count (levels combined, transposed into a table,
#: added to the shared count): measured about 2 on MNIST-5k's members.
_NS_GROUPED_CELL = 2.0


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
    members : list of SelectionData
        One weighted view per column of ``weights``; :meth:`SelectionData.pair_information` of
        a member reads the tables the batch counted for it when its pick was announced.
    """

    def __init__(self, codes: torch.Tensor, max_card: int, y: torch.Tensor, n_classes: int, weights: torch.Tensor,
                 dtype: torch.dtype = torch.float64, log_base: float = 1.0, distributed: bool = False,
                 compact: bool = False) -> None:
        base = SelectionData(codes, max_card, y, n_classes, dtype=dtype, log_base=log_base,
                             distributed=distributed)  # feature-major codes
        self.codes, self.max_card, self.y, self.n_classes = base.codes, int(max_card), y, int(n_classes)
        self.dtype = dtype
        W = weights.to(torch.float64)
        self.weights = W
        self.members = []
        self._base = base
        complete = base.complete
        self._complete = complete
        self._row_major: torch.Tensor | None = None
        for b in range(W.shape[1]):
            if compact:
                m = compact_rows(self._rows_first(), y, W[:, b], max_card, n_classes, dtype=dtype,
                                 log_base=log_base, distributed=distributed)
            else:
                m = SelectionData(self.codes, max_card, y, n_classes, dtype=dtype, log_base=log_base,
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
        self._cache: dict[int, dict[int, object]] = {}
        self._needed: set[str] = set()
        # share a pick's count among all members when they differ from unit weights on few rows
        # (fold masks): then counting every member against a pick costs about two passes
        # (a global decision: it sets which counts, hence which collectives, each step makes)
        differing = base.reduce(torch.stack([(W != 1).to(torch.float64).sum(),
                                             torch.tensor(float(W.numel()), dtype=torch.float64, device=W.device)]))
        self._share = B > 1 and float(differing[0]) <= SHARE_MAX_DIFFERING * float(differing[1])
        self._tables: dict[int, dict[int, torch.Tensor]] = {}  # pick -> member -> raw table (pair_table)
        self._counted: dict[int, set[int]] = {}  # pick -> members whose raw table this step counted
        # the product path (module notes): exact in float32 for integral weights with column
        # totals below 2**24; its one-hot codes are kept when they fit a quarter of the budget
        totals = W.sum(0)
        M, N = self.codes.shape
        integral = bool((W == W.round()).all())
        # on the CPU, weights below 128 multiply as int8 (exact int32 sums, about 4x the float32 rate)
        # (a rank may hold no rows; either dtype gives the same exact counts, so ranks may differ)
        largest = float(W.max()) if W.numel() else 0.0
        self._product_dtype = (torch.int8 if W.device.type == "cpu" and integral and largest <= 127
                               and _int8_products() else torch.float32)
        size = torch.empty((), dtype=self._product_dtype).element_size()
        self._product_ok = (integral and float(totals.max()) < 2.0**24
                            and size * M * N * self.max_card <= get_config()["memory_budget"] // 4)
        # the int8 products' counts go to the information quantities as they are (class outer)
        # where each member's total has its m log m looked up
        # (one rank's: a distributed batch sums every rank's tables first)
        self._raw_ok = (self._product_dtype == torch.int8 and float(totals.max()) <= _XLOGX_MAX
                        and not distributed)
        self._max_total = int(totals.max())
        # kept buffers of the raw path (name -> 1-D tensor): fresh allocations of their size
        # fault in their pages on every count (:class:`ClassOuterInformation`)
        self._buffers: dict[str, torch.Tensor] = {}
        self._onehot: torch.Tensor | None = None
        #: how many counts the run is expected to make (the greedy driver sets it to about k):
        #: the products' one-time build is spread over them in the cost estimate
        self.expected_counts = 1
        self._w_product: torch.Tensor | None = None
        # per member: how many distinct nonzero values its weights and its w - 1 take (the
        # levels of a grouped count, for the cost estimate of :meth:`count`)
        # (CPU only: the GPU never counts by comparisons, and each unique would synchronize)
        self._levels = ([(int(torch.unique(w[w != 0]).numel()), int(torch.unique(w[w != 1]).numel()))
                         for w in W.unbind(1)] if W.device.type == "cpu" else [(1, 1)] * W.shape[1])
        # per member: rows whose weight differs from 1, and rows of positive weight (host ints,
        # read by every count's cost estimate: one transfer here instead of three per pick and step)
        self._n_differ, self._n_positive = torch.stack([(W != 1).sum(0), (W > 0).sum(0)]).tolist()
        # the weight patterns of the rows (PATTERNS_MAX at most, else None): (P, B) weights, the
        # pattern of every row (-1: a row no member counts), and whether the (x_a, pattern) keys are complete
        self._patterns: tuple[torch.Tensor, torch.Tensor, bool] | None = None
        if B > 1 and not distributed:
            pat, inv = torch.unique(W, dim=0, return_inverse=True)
            if pat.shape[0] <= PATTERNS_MAX:
                used = pat.ne(0).any(1)
                ids = torch.cumsum(used.to(torch.int64), 0) - 1
                row_pat = torch.where(used[inv], ids[inv], -1)
                self._patterns = (pat[used], row_pat, complete and bool((row_pat >= 0).all()))

    def _rows_first(self) -> torch.Tensor:
        """The codes row-major (M, N) contiguous, copied once: whole rows are gathered from it."""
        if self._row_major is None:
            self._row_major = self.codes.contiguous()
        return self._row_major

    # ------------------------------------------------------------------ counting
    def _table(self, rows: torch.Tensor | None, a: int | None, card_a: int,
               weights: torch.Tensor | None) -> torch.Tensor:
        """(N, I, card_a, C) counts of (x_c, x_a, class) over ``rows`` (None: all), optionally weighted."""
        T = self._grouped(rows, a, card_a, weights)
        if T is not None:
            return T
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

    def _grouped(self, rows: torch.Tensor | None, a: int | None, card_a: int,
                 weights: torch.Tensor | None) -> torch.Tensor | None:
        """:meth:`_table` by grouped comparisons (CPU, integral weights, small alphabets), or None.

        The rows left out get weight 0 instead of being gathered: the comparisons read the
        row-major codes in place, in the order of their (level, x_a, class) key.
        """
        if self.codes.device.type != "cpu" or card_a != (1 if a is None else self.max_card):
            return None
        if rows is None:
            return self._base._grouped_for(a, weights, self.codes.shape[0])
        full = torch.zeros(self.codes.shape[0], dtype=torch.float64)
        full[rows] = 1.0 if weights is None else weights.to(torch.float64)
        return self._base._grouped_for(a, full, int(rows.numel()))

    def count(self, members: list[int], a_cols: list[int | None], card_a: int,
              classes: bool = True, stack: bool = False, raw: bool = False, slot: int = 0
              ) -> list[torch.Tensor] | torch.Tensor | ClassOuterInformation:
        """Tables (N, I, card_a, n_classes) of (x_c, x_a, class) weighted by each of ``members``.

        ``classes=False``: the tables summed over the class, (N, I, card_a, 1) (their
        class-free quantities equal the full tables'; the products skip the class, the
        bincounts sum it out), whichever way this rank counts. ``stack=True``: one tensor
        (len(members), N, I, card_a, C) instead of the list (the products write it in one copy).
        ``raw=True`` (with ``stack``): where the int8 products count, the members'
        :class:`~tensorprob.counting._tables.ClassOuterInformation` straight from the products'
        int32 counts, with the members' ``n_rows`` (no copy of the tables into their layout),
        held in a kept buffer that the next raw count of the same ``slot`` (0 or not) overwrites;
        where ``raw`` applies but the bincounts count (the cost estimate), the list of tables
        instead of their stack (the caller sized the chunk for about one copy of the tables).

        ``a_cols[i]`` is the feature playing ``a`` for ``members[i]`` (None: constant, card_a = 1).
        Members with the same ``a`` (cross-validation masks and resamples mostly pick alike) share
        one unweighted count of all rows when that reads fewer codes: each then adds only its rows
        whose weight differs from 1, with weight ``w - 1``. Otherwise a member counts its rows of
        positive weight (unweighted where those weights are all 1). Exact integer counts either way.
        """
        groups: dict[int | None, list[int]] = {}
        for i, a in enumerate(a_cols):
            groups.setdefault(a, []).append(i)
        M = self.codes.shape[0]
        plans = {}
        bincount_ns = 0.0
        for a, pos in groups.items():
            ids = [members[i] for i in pos]
            differ = [self._n_differ[b] for b in ids]
            positive = [self._n_positive[b] for b in ids]
            use_ref = len(pos) > 1 and M + sum(differ) < sum(positive)
            ns = (self._pass_ns(M, card_a, 1, classes)
                  + sum(self._pass_ns(d, card_a, self._levels[b][1], classes) for d, b in zip(differ, ids))
                  if use_ref else sum(self._pass_ns(p, card_a, self._levels[b][0], classes)
                                      for p, b in zip(positive, ids)))
            mode = "ref" if use_ref else "own"
            # against the per-member passes at the scatter rate: the grouped model undercounts
            # passes over few rows per group and leaves out adding each correction to the shared
            # count (10 fold masks of MNIST-5k: 30 ms measured, 13.6 estimated; a fold's 500 rows
            # alone 1.6 ms, 1.0 estimated), and one pattern count took 17 ms there
            passes = (M + sum(differ)) if use_ref else sum(positive)
            pattern_ns = self._pattern_ns(len(ids), card_a) if len(ids) > 1 and self._patterns else math.inf
            if pattern_ns < passes * self.codes.shape[1] * _NS_BINCOUNT_PASS:
                mode, ns = "patterns", pattern_ns
            plans[a] = (ids, mode)
            bincount_ns += ns
        raw = raw and stack and self._raw_ok  # (never distributed: no all-reduce is skipped below)
        if self._product_ok and self._product_cost(len(members), card_a) < bincount_ns:
            out = self._product_tables(members, a_cols, card_a, classes, stack, raw, slot)
            if raw:
                return out
        else:
            out = [None] * len(members)
            for a, pos in groups.items():
                self._count_group(out, pos, *plans[a], a, card_a)
            if not classes:
                out = [T.sum(3, keepdim=True) for T in out]
            # raw asked for and counted otherwise: the list, each member's table once (the caller
            # sized the chunk for about one copy of its tables; a stack would be a second)
            if raw:
                return out
            if stack:
                out = torch.stack(out)
        if self._base.distributed:  # one all-reduce for the call
            out = self._base.reduce(out if stack else torch.stack(out))
            return out if stack else list(out.unbind(0))
        return out

    def _pattern_ns(self, n_members: int, card_a: int) -> float:
        """Estimated nanoseconds of :meth:`_pattern_tables` for ``n_members`` members."""
        M, N = self.codes.shape
        P = self._patterns[0].shape[0]
        cells = N * self.max_card * card_a * self.n_classes
        if 16 * P * cells > get_config()["memory_budget"] // 2:  # the pattern tables and their copy
            return math.inf
        return M * N * _NS_BINCOUNT_PASS + n_members * P * cells * _NS_PATTERN_MADD

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

    def _count_group(self, out: list, pos: list[int], ids: list[int], mode: str, a: int | None,
                     card_a: int) -> None:
        """Counts of the members ``ids`` (at ``pos`` of ``out``) against ``a`` into ``out``.

        ``mode``: "patterns" (:meth:`_pattern_tables`), "ref" (one unweighted count of all rows
        and each member's ``w - 1`` on its rows that differ from 1) or "own" (each member's rows).
        """
        if mode == "patterns":
            for i, T in zip(pos, self._pattern_tables(ids, a, card_a)):
                out[i] = T
            return
        M = self.codes.shape[0]
        Wg = self.weights[:, ids]
        use_ref = mode == "ref"
        ref = self._table(None, a, card_a, None) if use_ref else None
        for n, i in enumerate(pos):
            w = Wg[:, n]
            if use_ref:
                rows = (w != 1).nonzero().squeeze(1)
                T = ref.clone() if rows.numel() == 0 else ref + self._table(rows, a, card_a, w[rows] - 1.0)
            else:
                rows = (w > 0).nonzero().squeeze(1)
                kept = w[rows]
                full = rows.numel() == M
                T = self._table(None if full else rows, a, card_a,
                                None if bool((kept == 1).all()) else (w if full else kept))
            out[i] = T

    def _pass_ns(self, n_rows: int, card_a: int, levels: int, classes: bool = True) -> float:
        """Estimated nanoseconds of one :meth:`_table` over ``n_rows`` rows whose weights take ``levels`` values.

        The grouped comparisons where they apply (CPU, integral weights): their model times
        the levels (one more digit of the key), plus the handling of their output, one set of
        tables per level (:data:`_NS_GROUPED_CELL` per cell). Otherwise the bincount, and for
        class-free tables (``classes=False``, MRMR), whose products skip the class: there
        the products measured faster than the grouped counts (30 bootstrap members of
        MNIST-5k: 7.0 s against 8.7).
        """
        N = self.codes.shape[1]
        scatter = n_rows * N * _NS_BINCOUNT_PASS
        if (self.codes.device.type != "cpu" or not classes or card_a not in (1, self.max_card)
                or levels > _GROUPED_MAX_LEVELS):
            return scatter
        groups = card_a * self.n_classes * max(1, levels)
        grouped = (1e9 * grouped_seconds(n_rows, N, self.max_card, groups, self._complete)
                   + groups * self.max_card * N * _NS_GROUPED_CELL)
        return min(scatter, grouped)

    def _product_cost(self, n_members: int, card_a: int) -> float:
        """Estimated nanoseconds of :meth:`_product_tables` for ``n_members`` members."""
        M, N = self.codes.shape
        cpu = self.codes.device.type == "cpu"
        madd = ((_NS_PRODUCT_MADD_INT8 if self._product_dtype == torch.int8 else _NS_PRODUCT_MADD_CPU) if cpu
                else _NS_PRODUCT_MADD)
        # the first product builds the one-hot codes of all rows (:meth:`_by_class`; MNIST-5k: 0.18 s
        # in float32, 36 ms in int8), once for the counts the run is expected to make
        per_entry = _NS_ONEHOT_INT8 if self._product_dtype == torch.int8 else _NS_ONEHOT_CPU
        build = (M * N * self.max_card * per_entry / self.expected_counts
                 if cpu and self._onehot is None else 0.0)
        return M * N * n_members * card_a * self.max_card * madd + self.n_classes * _NS_PRODUCT_CALL + build

    def _by_class(self) -> None:
        """Sort the rows by class once, keeping the one-hot codes, codes and weights (product dtype) in that order."""
        M, N = self.codes.shape
        I = self.max_card
        order, self._class_sizes = rows_by_class(self.y, self.n_classes)  # rows without a class: last
        rows = self._rows_first().index_select(0, order)
        dt = self._product_dtype
        E = torch.empty(M, N * I, dtype=dt, device=rows.device)
        for s, e in chunk_ranges(M, 8 * N, get_config()["memory_budget"] // 4):
            E[s:e] = one_hot(rows[s:e], I, dt)
        self._onehot = E  # a missing code: a row of zeros, counted nowhere
        self._sorted_codes = rows
        self._w_product = self.weights.index_select(0, order).to(dt)

    def _buffer(self, name: str, numel: int, dtype: torch.dtype) -> torch.Tensor:
        """The first ``numel`` elements of the kept 1-D buffer ``name`` (grown as needed)."""
        buf = self._buffers.get(name)
        if buf is None or buf.numel() < numel or buf.dtype != dtype:
            buf = self._buffers[name] = torch.empty(numel, dtype=dtype, device=self.codes.device)
        return buf[:numel]

    def _product_tables(self, members: list[int], a_cols: list[int | None], card_a: int,
                        classes: bool = True, stack: bool = False, raw: bool = False, slot: int = 0
                        ) -> list[torch.Tensor] | torch.Tensor | ClassOuterInformation:
        """Tables (N, I, card_a, C) of ``members[i]`` against ``a_cols[i]``, by one product per class.

        Exact integer counts (the caller checked ``_product_ok``), equal to the bincounts'.
        ``classes=False``: one product over the rows of every class, tables (N, I, card_a, 1)
        (rows without a class are left out, as in the full tables). ``raw`` (int8 products): the
        members' :class:`~tensorprob.counting._tables.ClassOuterInformation`, from margins summed
        class by class (:meth:`_class_outer_information`; see :meth:`count`).
        """
        if self._onehot is None:
            self._by_class()
        N, I, C, B = self.codes.shape[1], self.max_card, self.n_classes, len(members)
        W = self._w_product[:, members]  # (M, B), rows by class
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
            return self._class_outer_information(L, sizes, B, card_a, members, slot)
        T = torch.empty(C, B * card_a, N * I, dtype=torch.int32 if int8 else torch.float32, device=W.device)
        s = 0
        for q, n in enumerate(sizes):
            if not n:
                T[q].zero_()
            elif int8:  # exact int32 sums; a contiguous left factor multiplies 1.6x faster than its transposed view
                _int_matmul(L[s:s + n].T, self._onehot[s:s + n], T[q])
            else:
                torch.mm(L[s:s + n].T, self._onehot[s:s + n], out=T[q])
            s += n
        # class innermost in one 2-D transpose, then each member's (N, I, card_a, C) copy reads
        # runs of C contiguous counts (from the class-outer layout it read them C apart)
        T = T.view(C, -1).T.contiguous().view(B, card_a, N, I, C)
        if stack:  # one copy into the working dtype (``to`` keeps a permuted layout when the dtype matches)
            P = T.permute(0, 2, 3, 1, 4)
            return torch.empty(P.shape, dtype=self.dtype, device=P.device).copy_(P)
        return [T[b].permute(1, 2, 0, 3).to(self.dtype, memory_format=torch.contiguous_format)
                for b in range(B)]

    def _class_outer_information(self, L: torch.Tensor, sizes: list[int], B: int, A: int, members: list[int],
                                 slot: int) -> ClassOuterInformation:
        """The members' quantities from the int8 products, their margins summed class by class.

        Each class's (B A, N I) product is read while it is in cache: added to the (x, a) margin,
        its ``m log m`` values looked up and added to the full tables' sums, and its (x, class)
        and (a, class) margins taken (the latter from the first candidate only on complete data,
        where every candidate's is the same). The (C, B, A, N, I) counts are never held whole:
        on COIL-20 (20 classes) they were 20 products' worth of memory, streamed twice.
        The buffers are kept, those of ``slot`` 0 apart (see :meth:`pair_information`).
        """
        N, I, C = self.codes.shape[1], self.max_card, len(sizes)
        R = B * A * N * I
        tag = int(slot > 0)
        slab = self._buffer("slab", R, torch.int32).view(B * A, N * I)
        look = self._buffer("lookups", R, torch.float64)
        xa = self._buffer(f"xa{tag}", R, torch.int32).view(B, A, N, I).zero_()
        cells = self._buffer("xab", B * N * I, torch.float64).view(B, N, I).zero_()
        xb = self._buffer(f"xb{tag}", C * B * N * I, torch.int32).view(C, B, N, I)
        Nab = 1 if self._complete else N
        ab = self._buffer(f"ab{tag}", C * B * A * Nab, torch.int32).view(C, B, A, Nab)
        table = _xlogx(self._max_total, slab.device)
        s = 0
        for q, n in enumerate(sizes):
            if n:
                _int_matmul(L[s:s + n].T, self._onehot[s:s + n], slab)
            else:
                slab.zero_()
            s += n
            Tq = slab.view(B, A, N, I)
            xa += Tq
            # the looked-up values summed over a at once (one read of them; an add into a
            # (B, A, N, I) sum would read them and that sum, and write it back)
            cells += torch.index_select(table, 0, slab.view(-1), out=look).view(B, A, N, I).sum(1)
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
        """The (x_c, class) table of every member, in one product (each member's ``class_table``)."""
        for b0, b1 in self._member_chunks(1):
            idx = list(range(b0, b1))
            T = self.count(idx, [None] * len(idx), 1)
            for i, b in enumerate(idx):
                self.members[b]._class_table = T[i]

    def _member_chunks(self, card_a: int, copies: int = 2) -> list[tuple[int, int]]:
        """Ranges of members whose tables (``copies`` float64 copies of each) fit the memory budget together."""
        M, N = self._base.budget_rows, self.codes.shape[1]
        cells = N * self.max_card * card_a * self.n_classes
        per_member = 8 * (copies * cells + 2 * M)
        per = max(1, (get_config()["memory_budget"] // 2) // per_member)
        B = len(self.members)
        return [(s, min(B, s + per)) for s in range(0, B, per)]

    # ------------------------------------------------------------------ the greedy step
    def announce(self, picks: dict[int, int]) -> None:
        """Record each member's pick of this step (members that picked ``j`` never need ``j`` again)."""
        self._pending = dict(picks)
        self._tables.clear()  # pair_table: what one step counted is read in that step
        self._counted: dict[int, set[int]] = {}
        for b, j in picks.items():
            self._picked[b].add(j)

    def finished(self, b: int) -> None:
        """Member ``b`` has made its last pick: drop what was kept for it."""
        self._active.discard(b)
        for entry in (*self._cache.values(), *self._tables.values()):
            entry.pop(b, None)

    def pair_information(self, member: SelectionData, j: int):
        """The plug-in quantities of ``member``'s (x_c, x_j, class) tables, or None if ``j`` is not its pick.

        The first member to read a pick ``j`` counts the tables of every member that may still
        need it: with sharing (fold masks: each member differs from the unit weights on few
        rows) all active members that have not picked ``j`` yet, so that a member picking ``j``
        at a later step finds its quantities ready, unless the int8 products count; where the
        matrix products may count (exact integers, module notes) every member of this step
        against its own pick, in one :meth:`count`, once the quantities to keep are known (from
        the second step: 10 fold masks of COIL-20, eager CMIM, k = 50: 0.96 s, against 2.6 s
        sharing, whose members' picks differ in many steps); otherwise the members that picked
        ``j`` at this step. The quantities a criterion reads are
        learned from the first read and kept per (pick, member) as (N,) vectors; a quantity not
        kept is recomputed from the member's own count.
        """
        b = member._member
        entry = self._cache.get(j)
        if entry is not None and b in entry:
            return _Kept(entry.pop(b), self, member, j)
        if self._pending.get(b) != j:
            return None
        if self._share and not (self._raw_ok and self._needed):
            who = [(m, j) for m in sorted(self._active) if j not in self._picked[m] or self._pending.get(m) == j]
        elif self._product_ok and self._needed:
            # every member against its own pick in one count (the products serve all picks at
            # once); only once the quantities to keep are known, so that no table is kept
            who = list(self._pending.items())
        else:
            who = [(m, jj) for m, jj in self._pending.items() if jj == j]
        who.remove((b, j))
        who.insert(0, (b, j))
        stacked = bool(self._needed) and (STACK_ON_CPU or self.codes.device.type != "cpu")
        # raw: where the int8 products count, the chunk's quantities straight from their int32
        # counts (:meth:`_class_outer_information`)
        raw = bool(self._needed) and self._raw_ok
        # stacked: the tables, their integer margins and the entropies' float64 temporaries of
        # the whole chunk are alive together (about five copies of the tables)
        # (raw: the margins, one class's product, its lookups and their sums per member, about
        # one float64 copy of its tables; should the cost estimate count otherwise after all,
        # the chunk's tables take twice that)
        size = max(1, self._member_chunks(self.max_card, 5 if stacked else 1 if raw else 2)[0][1])
        first = None
        classes = not (self._needed and self._needed <= CLASS_FREE)  # e.g. MRMR: I(x_c; x_j) only
        for s in range(0, len(who), size):
            chunk = who[s:s + size]
            ids, picks = [m for m, _ in chunk], [jj for _, jj in chunk]
            n_rows = [self.members[m].n_rows for m in ids]
            tables = None
            if (stacked or raw) and len(chunk) > 1 and len({r is None for r in n_rows}) == 1:
                # the quantities to keep are known: computed for the whole chunk at once (a
                # table's quantities do not depend on the tables beside it: table_information)
                # (the raw counts of the first chunk, whose information ``first`` reads, keep
                # their buffer until the next step; the other chunks share one)
                T = self.count(ids, picks, self.max_card, classes, stack=True, raw=raw, slot=s)
                if isinstance(T, ClassOuterInformation) or stacked:
                    if isinstance(T, list):  # raw counted by the bincounts (stacked: sized for the stack)
                        T = torch.stack(T)
                    info = T if isinstance(T, ClassOuterInformation) else self._stacked_information(T, n_rows)
                    for name in self._needed:  # before a later chunk reuses the buffers
                        getattr(info, name)
                    for i, (m, jj) in enumerate(chunk):
                        row = _Row(info, i, len(chunk))
                        if m == b:
                            first = row
                        else:
                            self._cache.setdefault(jj, {})[m] = {name: getattr(row, name) for name in self._needed}
                    continue
                tables = T if isinstance(T, list) else T.unbind(0)  # counted otherwise: each member's own
            if tables is None:
                tables = self.count(ids, picks, self.max_card, classes)
            for (m, jj), T in zip(chunk, tables):
                info = table_information(T, self.log_base, self.members[m].n_rows)
                if m == b:
                    first = info
                elif self._needed:
                    self._cache.setdefault(jj, {})[m] = {name: getattr(info, name) for name in self._needed}
                else:  # what the criterion reads is not known yet (the first step): keep the tables
                    self._cache.setdefault(jj, {})[m] = info
        full = None if classes or self.n_classes == 1 else (lambda: self._full_information(b, j))
        return _Recording(first, self._needed, full)

    def _stacked_information(self, T: torch.Tensor, n_rows: list):
        """:func:`table_information` of members' stacked tables T (n, N, I, A, C), ``n_rows`` theirs (all None, or none)."""
        n, N = T.shape[0], T.shape[1]
        return table_information(T.reshape(n * N, *T.shape[2:]), self.log_base, _per_table(n_rows, N, T.device))

    def _full_information(self, b: int, j: int):
        """Member ``b``'s quantities against ``j`` from tables with the class (counted alone)."""
        T = self.count([b], [j], self.max_card)[0]
        return table_information(T, self.log_base, self.members[b].n_rows)

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
        size = max(1, self._member_chunks(self.max_card)[0][1])
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


def compact_rows(codes: torch.Tensor, y: torch.Tensor, w: torch.Tensor, max_card: int, n_classes: int,
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
    max_card, n_classes : int
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
    return SelectionData(sub, max_card, y.index_select(0, rows), n_classes, weights=None if ones else kept,
                         **options)


#: The quantities of a (x, a, class) table that do not involve the class (tables summed over it
#: give them exactly).
CLASS_FREE = frozenset({"h_x", "h_a", "h_xa", "mi_x_a"})


class _Row:
    """Member ``i``'s quantities (N,) from the :class:`TableInformation` of ``n`` members' stacked tables."""

    def __init__(self, info, i: int, n: int) -> None:
        self._info, self._i, self._n = info, i, n

    def __getattr__(self, name: str):
        return getattr(self._info, name).view(self._n, -1)[self._i]


class _Recording:
    """A member's :class:`TableInformation`, noting which quantities the criterion reads.

    Its tables may have been counted without the class (then ``full`` is given): a quantity
    that needs the class is then read from ``full()``, the member's tables with the class.
    """

    def __init__(self, info, needed: set[str], full) -> None:
        self._info, self._needed, self._full = info, needed, full

    def __getattr__(self, name: str):
        self._needed.add(name)
        if self._full is not None and name not in CLASS_FREE:
            self._info, self._full = self._full(), None
        return getattr(self._info, name)


class _Kept:
    """Quantities kept for a member (a dict, or the whole TableInformation of the first step)."""

    def __init__(self, kept, batch: BatchedSelectionData, member: SelectionData, j: int) -> None:
        self._kept, self._batch, self._member, self._j = kept, batch, member, j

    def __getattr__(self, name: str):
        kept = self._kept
        if not isinstance(kept, dict):
            self._batch._needed.add(name)
            return getattr(kept, name)
        if name not in kept:  # a quantity not kept: count this member alone
            b = self._batch
            T = b.count([self._member._member], [self._j], b.max_card)[0]
            kept[name] = getattr(table_information(T, b.log_base, self._member.n_rows), name)
        return kept[name]
