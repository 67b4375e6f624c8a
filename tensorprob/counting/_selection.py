"""The coded data of a selection run, and the one door through which its criteria get counts.

A :class:`SelectionData` holds the codes, the class and the weights of a run, its row
statistics, and a :class:`~tensorprob.counting._planner.Planner` that counts every table the
criteria ask for (:meth:`SelectionData.pair_information`, :meth:`~SelectionData.pair_table`,
...) with the strategy of :mod:`~tensorprob.counting._planner` it finds cheapest, and records
it (:attr:`SelectionData.counting_plan`).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from .._config import setting
from . import _costs
from ._planner import CountingPlan, Planner, Request
from ._sparse import SparseRows
from ._spill import SpilledRows
from ._tables import (
    _QUANTITIES,
    Quantities,
    TableInformation,
    _blocked_transpose,
    _complete,
    _xlogx_np,
    entropies_of_counts,
    feature_major,
    information_of_entropies,
    table_information,
)

#: The quantities of a (x, a, class) table that do not involve the class: tables summed over the
#: class give them exactly.
CLASS_FREE = frozenset({"h_x", "h_a", "h_xa", "mi_x_a"})

#: Entropies of a (x_c, x_j, class) table that are those of the class table (complete, unweighted
#: rows): of x, the class and (x, class) from row c, of x_j and (x_j, class) from row j.
_SEEDED = ("h_x", "h_a", "h_b", "h_xb", "h_ab")


class LocalRows(NamedTuple):
    """This process's rows: how many, their total weight, and whether no entry is missing."""

    rows: int
    weight: float
    complete: bool


class GlobalRows(NamedTuple):
    """All ranks' rows: how many, their total weight, the most rows on one rank, whether an entry is missing."""

    rows: int
    weight: float
    most_rows: int
    missing: bool


@dataclass
class SelectionData:
    """Coded data on the device, shared by the criteria of one selection run.

    Parameters
    ----------
    codes : torch.Tensor of shape (M, N), int
        Feature codes ``0 .. I_n - 1``; -1 marks a missing entry. Kept feature-major (a
        transposed view of an (N, M) tensor; copied into that layout if needed).
    cards : array-like of shape (N,), or int
        Alphabet size ``I_n`` of every feature (an int: the same for all). Dense tables are
        padded to the largest; strategies that need not pad take each feature's own.
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
    stream : SpilledRows or SparseRows, optional
        The rows are not in memory as dense codes but in temporary files, or sparse
        (:class:`~tensorprob.counting._sparse.SparseRows`, code 0 not stored), read back in
        blocks of rows by every count (:meth:`count`) but those of the strategies that read
        sparse codes; ``codes`` and ``y`` are then empty (0 rows, N feature columns) and
        ``weights`` None (the weights are in the stream). The per-sample criteria (PDA's GMD
        and AMD, VMI), which hold per-row state, do not take streamed data.
    row_major : bool, default=False
        Keep the codes in the caller's layout instead of copying them feature-major: for a run
        that counts only the class table (MIM).

    Attributes
    ----------
    counting_plan : CountingPlan
        Which strategy counted the run's tables, per kind of table.
    planned_steps : int
        Pair requests the greedy run said it will make (:meth:`plan`; 0 before).

    Examples
    --------
    >>> import torch
    >>> from tensorprob.counting import SelectionData
    >>> x = torch.tensor([[0, 1], [1, 1], [0, 0], [1, 0]])
    >>> d = SelectionData(x, 2, x[:, 0], 2)
    >>> [round(v, 6) for v in d.relevance.tolist()]  # I(x_0; y) = log 2, I(x_1; y) = 0
    [0.693147, 0.0]
    >>> q = d.pair_information(1, ("mi_xa_b",))  # I(x_c, x_1; y) of every candidate c
    >>> [round(v, 6) for v in q.mi_xa_b.tolist()]
    [0.693147, 0.0]
    """

    codes: torch.Tensor
    cards: Any
    y: torch.Tensor
    n_classes: int
    dtype: torch.dtype = torch.float64
    log_base: float = 1.0
    weights: torch.Tensor | None = None
    distributed: bool = False
    stream: SpilledRows | SparseRows | None = None
    row_major: bool = False
    _global: GlobalRows | None = field(default=None, init=False, repr=False)
    _class_table: torch.Tensor | None = field(default=None, init=False, repr=False)
    _relevance: torch.Tensor | None = field(default=None, init=False, repr=False)
    _complete: bool | None = field(default=None, init=False, repr=False)
    _local: LocalRows | None = field(default=None, init=False, repr=False)  # this process's rows (see _local_rows)
    _batch: Any = field(default=None, init=False, repr=False)  # the BatchedSelectionData of a member
    _member: int = field(default=-1, init=False, repr=False)  # the member's index in its batch
    _class_h: dict | bool | None = field(default=None, init=False, repr=False)  # see _class_entropies (False: none)
    _marginals: dict | bool | None = field(default=None, init=False, repr=False)  # see marginal_entropies
    _rows: np.ndarray | bool | None = field(default=None, init=False, repr=False)  # row-major codes (False: none)
    _open: np.ndarray | None = field(default=None, init=False, repr=False)  # see retire (None: every column)
    _n_open: int = field(default=0, init=False, repr=False)  # features not retired
    _cols: Any = field(default=None, init=False, repr=False)  # see _open_columns (None: unknown, False: none)
    _pick_rows: np.ndarray | None = field(default=None, init=False, repr=False)  # see pick_keys
    _fm: np.ndarray | None = field(default=None, init=False, repr=False)  # see feature_major_codes
    _pick_slot: np.ndarray | None = field(default=None, init=False, repr=False)  # row of each pick (-1: none)
    _n_picks: int = field(default=0, init=False, repr=False)
    _levels: int | bool | None = field(default=False, init=False, repr=False)  # see weight_levels (False: unset)
    _seed_h: dict | None = field(default=None, init=False, repr=False)  # see _seed_numpy
    planned_steps: int = field(default=0, init=False, repr=False)
    planner: Planner = field(init=False, repr=False)

    def __post_init__(self) -> None:
        N = int(self.codes.shape[1]) if self.codes.ndim == 2 else 0
        cards = np.asarray(self.cards, dtype=np.int64).reshape(-1)
        self.cards = np.full(N, int(cards[0]), dtype=np.int64) if cards.size == 1 and N != 1 else cards
        if self.cards.size != N:
            raise ValueError(f"cards has {self.cards.size} entries for {N} feature columns")
        self._max_card = int(max(1, self.cards.max(initial=1)))
        # held feature-major (a transposed view of (N, M) memory): every table counts blocks
        # of candidates, and a block is then one contiguous slab instead of a strided read
        # of every row
        if self.codes.ndim == 2 and self.codes.shape[1] > 1 and self.codes.stride(0) != 1:
            if self.codes.device.type == "cpu" and self.codes.is_contiguous():
                self._rows = self.codes.numpy()  # the caller's row-major codes, for the grouped counts
            if not self.row_major:
                self.codes = feature_major(self.codes)
        self.planner = Planner(self)

    @property
    def sparse(self) -> SparseRows | None:
        """The sparse codes of the run (its ``stream``, held in memory), or None for dense or spilled rows."""
        return self.stream if isinstance(self.stream, SparseRows) else None

    def labels(self) -> np.ndarray:
        """The class codes of this process's rows in memory (of sparse codes too).

        Returns
        -------
        ndarray of shape (M,), int64
            The class code of every row.
        """
        sparse = self.sparse
        return sparse.y if sparse is not None else self.y.cpu().numpy().astype(np.int64, copy=False)

    def column_codes(self, j: int) -> np.ndarray:
        """The codes of one feature for every row in memory (of sparse codes too).

        Parameters
        ----------
        j : int
            The feature.

        Returns
        -------
        ndarray of shape (M,)
            Its codes (-1 missing).
        """
        sparse = self.sparse
        return sparse.column(j) if sparse is not None else self.codes[:, j].cpu().numpy()

    @property
    def max_card(self) -> int:
        """Largest cardinality of the features (what dense tables are padded to)."""
        return self._max_card

    def signature(self) -> tuple:
        """What the planner's estimates read of the data.

        Returns
        -------
        tuple
            Rows, features, largest alphabet, classes, completeness, weights, device, layout and
            dtype: runs of the same signature decide alike.
        """
        rows = self._local_rows()
        return ("data", rows.rows, self.n_features, self._max_card, self.n_classes, rows.complete,
                self.weighted, self.weight_levels if self.weighted else 1, self.codes.device.type,
                self.stream is None, self.distributed, self._rows is not False and self._rows is not None,
                str(self.codes.dtype))

    @property
    def counting_plan(self) -> CountingPlan:
        """Which strategy counted this run's tables (see :class:`~tensorprob.counting.CountingPlan`)."""
        return self.planner.plan

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

    def _local_rows(self) -> LocalRows:
        """This process's rows, their total weight, and whether no entry is missing (read once: the rows never change)."""
        if self._local is None:
            if self.stream is not None:
                self._local = LocalRows(self.stream.n_rows, self.stream.weight_total, self.stream.complete)
            else:
                M = int(self.codes.shape[0])
                total = float(M) if self.weights is None else float(self.weights.to(torch.float64).sum())
                complete = self._complete if self._complete is not None else _complete(self.codes, self.y >= 0)
                self._local = LocalRows(M, total, complete)
        return self._local

    @property
    def weighted(self) -> bool:
        """Whether the rows carry weights (given, or in the spilled files of a stream)."""
        return self.weights is not None or (self.stream is not None and self.stream.weighted)

    def _global_rows(self) -> GlobalRows:
        """All ranks' rows (one gather, kept)."""
        if self._global is None:
            from .. import _distributed

            local = self._local_rows()
            every = _distributed.all_gather((local.rows, local.weight, not local.complete))
            self._global = GlobalRows(sum(e[0] for e in every), sum(e[1] for e in every), max(e[0] for e in every),
                                      any(e[2] for e in every))
        return self._global

    @property
    def complete(self) -> bool:
        """No missing (-1) entry in the codes or the class (checked once, not per step; on any rank)."""
        if self._complete is None:
            self._complete = not self._global_rows().missing if self.distributed else self._local_rows().complete
        return self._complete

    @property
    def n_rows(self) -> int | float | None:
        """Rows M (or their total weight) when some entry is missing (the observed-fraction weighting); None if complete.

        Distributed: the rows (weight) of all ranks.
        """
        if self.complete:
            return None
        rows = self._global_rows() if self.distributed else self._local_rows()
        return rows.weight if self.weighted else int(rows.rows)

    @property
    def n_total(self) -> int:
        """Rows of the data: M, or the rows of all ranks when distributed (the divisor of sample means)."""
        return int(self._global_rows().rows if self.distributed else self._local_rows().rows)

    @property
    def total_weight(self) -> float:
        """Divisor of the weighted sample means: the total row weight (``n_total`` without weights).

        Distributed: the weight of all ranks' rows.
        """
        if not self.weighted:
            return self.n_total
        if self.distributed:
            return float(self._global_rows().weight)
        return float(self._local_rows().weight)  # the given weights', or those in the stream

    @property
    def memory_budget(self) -> int:
        """Bytes this run's per-sample state may take: ``memory_budget``, or a 1/B share for a member of a batch of B.

        The members of a batch hold their states at the same time.
        """
        budget = setting("memory_budget")
        return budget if self._batch is None else budget // max(1, self._batch.n_members)

    @property
    def batch_counts_steps_together(self) -> bool:
        """Whether this run is a member of a batch that counts every member's step in one product.

        Then an eager step costs a member little (its tables come with the others'), which is
        what CMIM's ``lazy="auto"`` weighs.
        """
        return self._batch is not None and self._batch.counts_steps_together

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

    @property
    def budget_rows(self) -> int:
        """Rows that memory and work decisions are sized on: M, or the most rows of one rank when distributed.

        Every choice that changes which tables are counted (CMIM's lazy evaluation, chunk
        sizes) reads this, so that all ranks make it alike and call the same collectives.
        Streamed data: the rows of one block (at most ``stream.block_rows``).
        """
        rows = int(self._global_rows().most_rows if self.distributed else self._local_rows().rows)
        return rows if self.stream is None else min(rows, self.stream.block_rows)

    @property
    def n_kept(self) -> int:
        """Rows of positive weight in this process (all rows without weights)."""
        if self.stream is not None:
            return int(self.stream.n_rows)
        if self.weights is None:
            return int(self.codes.shape[0]) if self.codes.ndim == 2 else 0
        return int((self.weights > 0).sum())

    @property
    def weight_levels(self) -> int | None:
        """Distinct nonzero weights (1 without weights), or None when a weight is not an integer or there are too many.

        What the grouped comparisons count as levels of their key (see
        :func:`~tensorprob.counting._grouped.weight_levels`).
        """
        if self._levels is False:
            from ._grouped import weight_levels

            self._levels = weight_levels(None if self.weights is None else self.weights.to(torch.float64).cpu().numpy())
        return self._levels

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
        return self.codes.shape[1]

    def feature_major_codes(self) -> np.ndarray:
        """The CPU codes as (N, M) NumPy memory, each feature's entries contiguous.

        The held codes' memory, or, for a run that holds them row-major (``row_major``), a
        strided view of them where they fit the last-level cache, else one transposed copy made
        at the first call and kept (:meth:`transpose_seconds` is its cost).

        Returns
        -------
        ndarray of shape (N, M)
            Feature m's entries are row m (a view of the held codes, or the kept copy).
        """
        if self._fm is None:  # kept: the lazy rounds ask for it at every round
            self._fm = _blocked_transpose(self.codes.numpy()) if self.large_row_major else self.codes.T.numpy()
        return self._fm

    @property
    def large_row_major(self) -> bool:
        """The codes are held row-major (a MIM run's) and outgrow the last-level cache.

        Read a feature at a time, such codes are copied feature-major (once, or a block of
        columns at a time); within the cache strided reads cost about what a copy would.
        """
        c = self.codes
        return (c.ndim == 2 and c.shape[1] > 1 and c.stride(0) != 1
                and c.numel() * c.element_size() > _costs.CACHE_L3_BYTES)

    def transpose_seconds(self) -> float:
        """Estimated seconds :meth:`feature_major_codes` still has to spend on a copy.

        Returns
        -------
        float
            ``TRANSPOSE_S`` per entry for large row-major codes not yet copied; 0 once copied or
            where no copy is made.
        """
        if self._fm is not None or not self.large_row_major:
            return 0.0
        return self.codes.numel() * _costs.TRANSPOSE_S

    def row_major_codes(self) -> np.ndarray | None:
        """The codes as C-ordered (M, N) NumPy memory: the caller's, or one transposed copy kept.

        Returns
        -------
        ndarray of shape (M, N) or None
            None off the CPU, for streamed rows, or when a copy would take more than a quarter
            of the memory budget.
        """
        if self._rows is None:
            c = self.codes
            if c.device.type != "cpu" or c.ndim != 2 or self.stream is not None:
                self._rows = False
            elif c.is_contiguous():
                self._rows = c.numpy()
            elif c.numel() * c.element_size() > setting("memory_budget") // 4:
                self._rows = False
            else:
                self._rows = _blocked_transpose(c.T.contiguous().numpy())
        return self._rows if self._rows is not False else None

    # ------------------------------------------------------------------ tables and their quantities
    @property
    def class_table(self) -> torch.Tensor:
        """Counts of (x_m, class) for every feature: (N, max_card, 1, n_classes)."""
        if self._class_table is None:
            self._class_table = self.planner.count(Request("class"))
        return self._class_table

    @property
    def relevance(self) -> torch.Tensor:
        """``I(X_m; C)`` of every feature (divided by ``log_base``).

        With missing entries, the estimate on the observed rows times their fraction
        (:class:`~tensorprob.counting.TableInformation`, ``n_rows``).
        """
        if self._relevance is None:
            m = self.marginal_entropies()
            if m is not None:
                self._relevance = quantities_of_entropies(m, ("mi_x_b",)).mi_x_b
            else:
                self._relevance = table_information(self.class_table, self.log_base, self.n_rows).mi_x_b
        return self._relevance

    def marginal_entropies(self) -> dict[str, torch.Tensor] | None:
        """``h_x``, ``h_b``, ``h_xb`` (N,) of the class tables, computed once; None with missing entries or weights.

        The pair-independent entropies of every (x_c, x_j, class) table of complete,
        unweighted rows: ``h_x``, ``h_b``, ``h_xb`` of row c, ``h_a`` = ``h_x[j]`` and ``h_ab`` =
        ``h_xb[j]``, the values each table's own margins give.

        Returns
        -------
        dict of str to torch.Tensor, or None
            ``{"h_x": ..., "h_b": ..., "h_xb": ...}``, each float64 of shape (N,), divided by
            ``log_base``; None on data with missing entries or weights.
        """
        if self._marginals is None:
            if self.n_rows is None and not self.weighted:
                q = self.planner.count(Request("relevance", needed=("h_x", "h_b", "h_xb")))
                self._marginals = {"h_x": q.h_x, "h_b": q.h_b, "h_xb": q.h_xb}
            else:
                self._marginals = False
        return self._marginals or None

    def class_table_entropies(self) -> dict[str, torch.Tensor] | None:
        """The entropies of the class table's integer counts on the CPU, in NumPy.

        :class:`TableInformation`'s values bit for bit. Without missing entries or weights,
        every table holds all the rows, and its class margin is the class counts: each total is
        the number of rows, and ``h_b`` is computed from the first table (the same operations on
        the same counts give the same value in every table).

        Returns
        -------
        dict of str to torch.Tensor, or None
            ``h_x``, ``h_b``, ``h_xb`` (N,), divided by ``log_base``; None off the CPU, with
            missing entries or weights.
        """
        if self._class_h is None:
            T = self.class_table
            ok = T.device.type == "cpu" and self.n_rows is None and not self.weighted  # integer counts
            h = None
            if ok:
                counts, total = T.numpy().astype(np.int64), self.n_total
                h_b = entropies_of_counts(counts[:1], ("h_b",), total=total)
                h = None if h_b is None else {"h_b": np.repeat(h_b["h_b"], T.shape[0]),
                                              **entropies_of_counts(counts, ("h_x", "h_xb"), total=total)}
            self._class_h = False if h is None else {k: torch.from_numpy(v / self.log_base) for k, v in h.items()}
        return self._class_h or None

    def plan(self, k: int, needed: tuple[str, ...] = ("mi_xa_b",)) -> None:
        """Tell the planner how many pair requests a greedy run will make.

        Strategies that build something once for the whole run (the tables of all pairs, the
        bitsets, the keys) spread that cost over the steps.

        Parameters
        ----------
        k : int
            Features the run selects: it reads the pair quantities of ``k - 1`` picks.
        needed : tuple of str, default=("mi_xa_b",)
            The quantities it reads (they decide the kind of the requests).
        """
        self.planned_steps = max(0, int(k) - 1)
        self.planner.expect(self._pair_kind(needed), self.planned_steps)

    def retire(self, j: int) -> None:
        """Leave feature ``j`` out of the tables of later pair requests (the greedy driver's picks).

        Once at most ``OPEN_FRACTION`` of the features are open, a step counts only the open
        candidates: a greedy criterion never reads a selected feature's tables again. Their
        quantities then read 0.

        Parameters
        ----------
        j : int
            The feature just selected.
        """
        if self._open is None:
            self._open = np.ones(self.n_features, dtype=bool)
        self._open[j] = False
        self._n_open = int(self._open.sum())
        self._cols = None

    def _open_columns(self) -> tuple[np.ndarray, torch.Tensor] | None:
        """The open columns (int64, and as an index on the codes' device) when restricting the count pays; else None.

        Kept until the next :meth:`retire`.
        """
        if self._open is None or self.codes.device.type != "cpu":
            # off the CPU a step is bound by its launches, not its counting
            return None
        if self._cols is None:
            n = self._n_open
            if n > _costs.OPEN_FRACTION * self.n_features or n < 2:
                self._cols = False
            else:
                cols = np.flatnonzero(self._open)
                self._cols = (cols, torch.from_numpy(cols))
        return self._cols or None

    def _pair_kind(self, needed: tuple[str, ...]) -> str:
        """``pair_free`` when every quantity of ``needed`` is class-free, else ``pair``."""
        return "pair_free" if needed and set(needed) <= CLASS_FREE else "pair"

    def pair_information(self, j: int, needed: tuple[str, ...]) -> Any:
        """Plug-in quantities of every candidate x against (a = x_j, b = class), divided by ``log_base``.

        Parameters
        ----------
        j : int
            Index of the feature playing ``a`` (e.g. the last selected one).
        needed : tuple of str
            The quantities the caller reads: informations (``mi_x_a``, ``mi_x_b``,
            ``cmi_x_a_given_b``, ``cmi_x_b_given_a``, ``mi_xa_b``) or entropies (``h_x`` ...
            ``h_xab``). Only these are computed (the strategies of class-free quantities count
            no class).

        Returns
        -------
        object
            The quantities as attributes, float64 tensors of shape (N,) (0 for features
            retired by :meth:`retire`).
        """
        needed = tuple(needed)
        if not needed:
            raise ValueError("pair_information needs the names of the quantities to compute")
        if self._batch is not None:  # a member of a batch: its tables come from the batch's shared counts
            shared = self._batch.pair_information(self, j, needed)
            if shared is not None:
                return shared
        open_ = self._open_columns()
        req = Request(self._pair_kind(needed), j=j, cols=None if open_ is None else open_[0], needed=needed)
        strategy = self.planner.choose(req)
        out = strategy.count(req)
        self.planner.served(req.kind)
        if open_ is None or not strategy.subsets:
            return out
        return _Scattered(out, open_[1], self.n_features)

    def estimate_seconds(self, j: int, needed: tuple[str, ...], cand: np.ndarray | None = None,
                         strategy: str | None = None) -> float:
        """Estimated seconds of counting what a caller would ask for, from the planner's strategies.

        Parameters
        ----------
        j : int
            The pick (``a`` of the tables).
        needed : tuple of str
            The quantities (as for :meth:`pair_information`).
        cand : array-like of int, optional
            Listed candidates, each against ``j`` (:meth:`pairs_information`); None: every
            candidate (:meth:`pair_information`).
        strategy : str, optional
            The estimate of that strategy alone (inf where it cannot count the request), e.g.
            the one that counted the run's earlier requests of the kind.

        Returns
        -------
        float
            Seconds of the cheapest strategy that applies (inf if none does); no table of
            the request is counted, and no choice recorded.
        """
        needed = tuple(needed)
        if cand is None:
            return self.planner.estimate(Request(self._pair_kind(needed), j=j, needed=needed), strategy)
        cand = np.asarray(cand, dtype=np.int64)
        return self.planner.estimate(Request("pairs", cand=cand, sel=np.full(cand.shape, j, dtype=np.int64),
                                             needed=needed), strategy)

    def pairs_information(self, cand: np.ndarray, sel: np.ndarray, needed: tuple[str, ...]) -> Any:
        """Quantities of the (x_cand[i], x_sel[i], class) tables of listed pairs (a = x_sel).

        What CMIM's lazy evaluation reads: the value of
        ``pair_information(sel[i], needed).<name>[cand[i]]`` for a few pairs.

        Parameters
        ----------
        cand, sel : array-like of int of shape (P,)
            The candidate and the selected feature of every pair.
        needed : tuple of str
            The quantities to compute.

        Returns
        -------
        object
            The quantities as attributes, float64 tensors of shape (P,).
        """
        cand, sel = np.asarray(cand, dtype=np.int64), np.asarray(sel, dtype=np.int64)
        return self.planner.count(Request("pairs", cand=cand, sel=sel, needed=tuple(needed)))

    def pair_table(self, j: int) -> torch.Tensor:
        """Weighted counts of (x_c, x_j, class) for every candidate c.

        The dense tables of the per-sample criteria, which gather conditional probabilities
        from them. A member of a batch receives them from the batch's shared counting.

        Parameters
        ----------
        j : int
            The feature playing ``a``.

        Returns
        -------
        torch.Tensor of shape (N, max_card, max_card, n_classes)
            The tables, summed over the ranks when distributed.
        """
        if self._batch is not None:
            shared = self._batch.pair_table(self, j)
            if shared is not None:
                return shared
        return self.planner.count(Request("pair_table", j=j))

    def triple_table(self, r: int, j: int) -> torch.Tensor:
        """Weighted counts of (x_c, x_r, x_j) for every candidate c.

        Parameters
        ----------
        r, j : int
            The features playing ``a`` and ``b``.

        Returns
        -------
        torch.Tensor of shape (N, max_card, max_card, max_card)
            The tables, summed over the ranks when distributed.
        """
        return self.planner.count(Request("triple_table", r=r, j=j))

    def triple_information(self, r: int, j: int, needed: tuple[str, ...]) -> Any:
        """Quantities of the (x_c, a = x_r, b = x_j) tables of every candidate.

        Parameters
        ----------
        r, j : int
            The features playing ``a`` and ``b``.
        needed : tuple of str
            The quantities to compute (``cmi_x_a_given_b``, ...).

        Returns
        -------
        object
            The quantities as attributes, float64 tensors of shape (N,).
        """
        return self.planner.count(Request("triple", r=r, j=j, needed=tuple(needed)))

    def pick_keys(self, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``x_s C + class`` of the features ``sel``: the second digit of the keys of listed pairs.

        CMIM's lazy rounds read the same few picks many times, so each pick's row is made once
        per run (CPU, in memory), in the narrowest integer type that holds the largest alphabet
        times the classes.

        Parameters
        ----------
        sel : ndarray of int
            The selected feature of every pair.

        Returns
        -------
        (ndarray, ndarray)
            The rows of every pick asked for so far in the run (picks, M), and which row is each
            pair's (len(sel),).
        """
        C = self.n_classes
        if self._pick_slot is None:
            m = int(self.labels().shape[0])  # the rows in memory (this rank's when distributed)
            kt = np.int16 if self._max_card * C <= 2**15 else np.int32
            self._pick_slot = np.full(self.n_features, -1, dtype=np.int64)
            self._pick_rows = np.empty((min(16, max(1, self.n_features)), m), dtype=kt)
        sel = np.asarray(sel, dtype=np.int64).reshape(-1)
        slot = self._pick_slot
        which = slot[sel]
        if which.min(initial=0) >= 0:  # every pick's row made already: the common case of a lazy round
            return self._pick_rows[:self._n_picks], which
        for s in np.unique(sel[which < 0]).tolist():  # each pick's row made once, in the next free row
            if self._n_picks == self._pick_rows.shape[0]:
                grown = np.empty((2 * self._n_picks, self._pick_rows.shape[1]), dtype=self._pick_rows.dtype)
                grown[:self._n_picks] = self._pick_rows
                self._pick_rows = grown
            row = self._pick_rows[self._n_picks]
            np.multiply(self.column_codes(s), C, dtype=row.dtype, out=row, casting="unsafe")
            row += self.labels().astype(row.dtype)
            slot[s] = self._n_picks
            self._n_picks += 1
        return self._pick_rows[:self._n_picks], slot[sel]

    def picked(self) -> np.ndarray:
        """The features whose rows :meth:`pick_keys` holds.

        Returns
        -------
        ndarray of int64
            The features, in the order of their rows there.
        """
        if self._pick_slot is None:
            return np.zeros(0, dtype=np.int64)
        on = np.flatnonzero(self._pick_slot >= 0)
        return on[np.argsort(self._pick_slot[on])]

    # ------------------------------------------------------------------ what strategies hand back
    def finish(self, req: Request, T: torch.Tensor) -> Any:
        """A strategy's counted tables (summed over the ranks) as what a request asks for.

        Parameters
        ----------
        req : Request
            The request.
        T : torch.Tensor
            Its tables, counted.

        Returns
        -------
        torch.Tensor or TableInformation
            The tables for the dense kinds; for the quantity kinds their
            :class:`TableInformation` (with the observed-fraction weighting of missing entries),
            the entropies of the class table filled in where they are those of the tables (see
            :meth:`marginal_entropies`).
        """
        if req.kind in ("class", "pair_table", "triple_table"):
            return T
        n_rows = self.n_rows
        if req.kind in ("pair", "pair_free", "pairs") or n_rows is None:
            info = table_information(T, self.log_base, n_rows)
        else:
            info = table_information(T, self.log_base, n_rows)
        return self._seeded(info, req)

    def _seeded(self, info: TableInformation, req: Request) -> TableInformation:
        """``info`` with the entropies that the class table gives filled in (complete, unweighted rows)."""
        m = self.marginal_entropies()
        if m is None or req.kind not in ("pair", "pair_free", "pairs"):
            return info
        for name, value in self._seed_values(req, m).items():
            info.__dict__[name] = value  # where the cached properties keep their values
        return info

    def _seed_values(self, req: Request, m: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The class table's entropies of ``req``'s tables, by name (see :meth:`marginal_entropies`)."""
        if req.kind == "pairs":
            c, s = torch.from_numpy(req.cand), torch.from_numpy(req.sel)
            out = {"h_x": m["h_x"][c], "h_a": m["h_x"][s]}
            if req.kind != "pair_free":
                out.update(h_b=m["h_b"][c], h_xb=m["h_xb"][c], h_ab=m["h_xb"][s])
            return out
        N = self.n_features if req.cols is None else len(req.cols)
        pick = (lambda v: v) if req.cols is None else (lambda v: v[torch.from_numpy(req.cols)])
        out = {"h_x": pick(m["h_x"]), "h_a": m["h_x"][req.j].expand(N)}
        if req.kind == "pair":
            out.update(h_b=pick(m["h_b"]), h_xb=pick(m["h_xb"]), h_ab=m["h_xb"][req.j].expand(N))
        return out

    def entropies_from_sums(self, req: Request, sums: dict[str, np.ndarray | None]) -> Quantities:
        """The quantities a request asks for, from the sums of ``c log c`` over tables of complete, unweighted rows.

        Every table holds all ``M`` rows, so ``n H = M log M - sum``, the float64 operations of
        :class:`TableInformation`; the other entropies are the class table's. In NumPy: a few
        calls per request.

        Parameters
        ----------
        req : Request
            The request (``req.needed`` names the quantities).
        sums : dict of str to ndarray or None
            ``sum_cells c log c`` of the full tables and margins by entropy name (``h_xab``,
            ``h_xa``; ``h_xb``, ``h_x`` of the class tables), float64 (n,); None: not computed.

        Returns
        -------
        Quantities
            The quantities ``req.needed``.
        """
        names = _entropies_of(req.needed)
        if self.weighted:  # float sums of weights (sparse codes): n = the total weight
            W = float(self.total_weight)
            top, t = (W * math.log(W), W) if W > 0 else (0.0, 1.0)  # no weight: every sum and entropy is 0
        else:
            M = self.n_total
            L = _xlogx_np(M)
            top, t = L[M], float(max(M, 1))
        if req.kind == "relevance":  # the class's entropy, the same for every table
            c = np.bincount(self.labels(), minlength=self.n_classes)
            h_b = (max((top - L.take(c).sum()) / t, 0.0) + 0.0) / self.log_base
            h = {"h_b": np.full(self.n_features, h_b)}
        else:
            h = {k: v for k, v in self._seed_numpy(req).items() if k in names}
        for name, v in sums.items():
            if v is not None and name in names:
                h[name] = (np.maximum((top - v) / t, 0.0) + 0.0) / self.log_base
        out = {}
        for q in req.needed:
            out[q] = torch.from_numpy(np.ascontiguousarray(h[q]) if q in h else information_of_entropies(h, q))
        return Quantities(out)

    def _seed_numpy(self, req: Request) -> dict[str, np.ndarray]:
        """:meth:`_seed_values` as NumPy arrays (CPU); of weighted rows, the weighted class table's entropies."""
        if self._seed_h is None:  # made once per run: CMIM's lazy rounds read it a few times per step
            if self.weighted:
                info = table_information(self.class_table, self.log_base, None)
                self._seed_h = {k: getattr(info, k).to(torch.float64).cpu().numpy() for k in ("h_x", "h_b", "h_xb")}
            else:
                self._seed_h = {k: v.numpy() for k, v in self.marginal_entropies().items()}
        m = self._seed_h
        if req.kind == "pairs":  # only the entropies asked for: a few pairs per call, many calls
            c, s = req.cand, req.sel
            where = {"h_x": ("h_x", c), "h_a": ("h_x", s), "h_b": ("h_b", c), "h_xb": ("h_xb", c), "h_ab": ("h_xb", s)}
            names = _entropies_of(req.needed)
            return {k: m[src][idx] for k, (src, idx) in where.items() if k in names}
        N = self.n_features if req.cols is None else len(req.cols)
        pick = (lambda v: v) if req.cols is None else (lambda v: v[req.cols])
        out = {"h_x": pick(m["h_x"]), "h_a": np.full(N, m["h_x"][req.j])}
        if req.kind == "pair":
            out.update(h_b=pick(m["h_b"]), h_xb=pick(m["h_xb"]), h_ab=np.full(N, m["h_xb"][req.j]))
        return out


@functools.lru_cache(maxsize=64)
def _entropies_of(needed: tuple[str, ...]) -> frozenset[str]:
    """The entropies that the quantities ``needed`` are made of."""
    out = set()
    for q in needed:
        if q.startswith("h_"):
            out.add(q)
        else:
            out.update(_QUANTITIES[q][0], _QUANTITIES[q][1])
    return frozenset(out)


def quantities_of_entropies(h: dict[str, torch.Tensor], needed: tuple[str, ...]) -> Quantities:
    """The quantities ``needed`` (informations, or entropies by name) from the entropies ``h``, in :data:`_QUANTITIES`' order."""
    out = {}
    for q in needed:
        if q in h:
            out[q] = h[q]
            continue
        plus, minus = _QUANTITIES[q]
        v = h[plus[0]]
        for e in plus[1:]:
            v = v + h[e]
        for e in minus:
            v = v - h[e]
        out[q] = v.clamp_min(0.0)
    return Quantities(out)


class _Scattered:
    """The quantities of the tables of candidates ``index``, read as (N,) vectors, 0 elsewhere."""

    def __init__(self, info: Any, index: torch.Tensor, n: int) -> None:
        self._info, self._index, self._n = info, index, n

    def __getattr__(self, name: str) -> torch.Tensor:
        if name[0] == "_":
            raise AttributeError(name)
        v = getattr(self._info, name)
        if v.shape[0] == self._n:  # a strategy that gave every feature's (the tables of all pairs)
            return v
        out = v.new_zeros(self._n).index_copy_(0, self._index, v)
        self.__dict__[name] = out  # read once
        return out
