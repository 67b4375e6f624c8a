"""PDA and VMI: the FID / GMD / AMD families in the MI and VI frameworks, and VMI.

PDA (probability distribution assumptions, Sun et al. 2020, "paper 004") writes the
high-order mutual information under three assumptions on the joint distribution: FID (fully
independent distributions), GMD (geometric mean distribution) and AMD (arithmetic mean
distribution), each of orders (k1, k2). VMI (variational information maximization, Gao, Ver
Steeg & Galstyan 2016, "paper 001") maximizes a variational lower bound of I(X_S; Y); PDA's
VI framework generalizes its q-distribution.
"""
from __future__ import annotations

from abc import abstractmethod
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from .._config import get_config
from .._device import block_budget, chunk_ranges
from .._docstrings import fill_doc
from ..counting import SelectionData, gather_conditional
from ..counting._tables import conditional_table
from ..information._variational import VariationalState
from ._base import GreedySelector
from ._classic import FID21Criterion, cife_criterion, mifs_criterion, mim_criterion
from ._docs import SELECTOR_FRAGMENTS
from ._greedy import Criterion, Separately

_MI_ORDERS = ((0, 0), (1, 0), (1, 1), (2, 1))
#: Whether the naive VI criteria of a batch are scored together (:class:`_JointNaiveBounds`) on the
#: CPU too. Off: there the work, not the per-member dispatch, dominates, and each member's own
#: bounds run in cache-sized row blocks over its own rows (``benchmarks/bench_batched.py``); on a
#: GPU the members' many small operations and one transfer each per step are what the joint state saves.
_NAIVE_JOINT_CPU = False
_FID_CLASSIC = {(0, 0): mim_criterion, (1, 0): mifs_criterion, (1, 1): cife_criterion, (2, 1): FID21Criterion}
_SUN = ("Sun, Y., Wang, W., Kirley, M., Li, X. and Chan, J. (2020). Revisiting probability distribution "
        "assumptions for information theoretic feature selection. AAAI 2020, 5908-5915.")
_GAO = ("Gao, S., Ver Steeg, G. and Galstyan, A. (2016). Variational information maximization for feature "
        "selection. NIPS 29, 487-495.")
_PDA_FRAGMENTS = {
    **SELECTOR_FRAGMENTS,
    "sun": _SUN,
    "gao": _GAO,
    "restart_threshold": """\
restart_threshold : float, default=0.01
    VI framework: the chain restarts when the bound grows by less than this (in the units
    of ``base``).""",
    "n_restarts": """\
n_restarts_ : int or ndarray of int of shape (B,)
    VI framework: how often the chain was dropped (see
    :class:`~tensorprob.selection._pda.VariationalCriterion`); one count per selection after
    ``fit(..., resamples=W)``.""",
}


class SampleMeanCriterion(Criterion):
    """``J = (1/M) sum_j log [pbar_{k2}(x_m | S, c) / pbar_{k1}(x_m | S)]`` with arithmetic or geometric means.

    The numerator and the denominator enter J as separate sample means. A geometric mean is
    linear in the log-probabilities, ``(1/M) sum_j log pbar = (1/|S|) sum_s (1/M) sum_j log
    p^(x_m^j | x_s^j, ...)``, so GMD (and every order-0 term) keeps one running sum per
    candidate and no per-sample state. An arithmetic mean (AMD) takes the logarithm after
    the sum over S, so it needs, per (sample, candidate), the running sum of ``p^(x_m | x_s,
    c)`` (k2 = 1), of ``p^(x_m | x_s)`` (k1 = 1) and of ``p^(x_m | x_s, x_r)`` over the pairs of
    S (k1 = 2). That state (M x N values each) is kept when it fits ``memory_budget``;
    otherwise the order-1 sums are recomputed at every step, candidate block by block, from
    the conditional tables of the selected features (|S| gathers per step instead of one,
    memory of one block), and the pair sum, which would need a table per pair, is refused
    with the sizes involved.

    With row weights (:attr:`SelectionData.weights`) every table is a weighted count and every
    ``(1/M) sum_j`` a weighted mean (:meth:`SelectionData.row_mean`); the rows are then those
    of positive weight.
    """

    name = "pda"

    def __init__(self, mean: str, k1: int, k2: int) -> None:
        self.mean, self.k1, self.k2 = mean, k1, k2

    def _n_accumulators(self) -> int:
        """Per-sample (M, N) accumulators of AMD: one per order-1 term and one for the pairs."""
        return (self.mean == "arithmetic") * ((self.k2 == 1) + (self.k1 >= 1) + (self.k1 == 2))

    def state_bytes(self, n_rows: int, n_features: int, n_classes: int, dtype: torch.dtype) -> int:
        return self._n_accumulators() * n_rows * n_features * torch.finfo(dtype).bits // 8

    @classmethod
    def joint(cls, criteria, batch):
        """AMD (k1, k2 <= 1, one process) whose members' sums over all rows fit ``memory_budget``: :class:`_JointArithmeticMeans`.

        Otherwise (GMD, whose state is per candidate; the pair sums of k1 = 2; sums recomputed
        within a small memory budget; distributed data) one member at a time.
        """
        c0, d = criteria[0], batch.data
        together = len(criteria) * c0.state_bytes(d.budget_rows, d.n_features, d.n_classes, d.dtype)
        fused = (c0.arith and c0.k1 <= 1 and (c0.k1, c0.k2) != (0, 0) and not d.distributed
                 and together <= get_config()["memory_budget"])
        return _JointArithmeticMeans(criteria, batch) if fused else super().joint(criteria, batch)

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.arith = self.mean == "arithmetic"
        T = data.class_table
        # the order-0 terms, where the criterion has them: (N,) means of log p^(x_m | c) and log p^(x_m)
        self.mean_log_p_y = self._block_means(lambda a, b: self._gather(T[a:b], a, b, None)) if self.k2 == 0 else None
        self.mean_log_p = (self._block_means(lambda a, b: self._gather(T[a:b], a, b, None, marginal=True))
                           if self.k1 == 0 else None)
        # distributed: sized on the largest rank, so that every rank takes the same branch (and raises alike)
        state = self.state_bytes(data.budget_rows, data.n_features, data.n_classes, data.dtype)
        # a member of a batch of B selections holds its state beside B - 1 others: 1/B of the budget
        self.stored = state <= data.memory_budget
        if self.arith and self.k1 == 2 and not self.stored:
            share = "" if data.memory_budget == get_config()["memory_budget"] else " (this selection's share of it)"
            raise ValueError(f"AMD^{{2,1}} keeps per-sample sums over the pairs of S ({state / 2**20:.1f} MiB for "
                             f"{data.budget_rows} samples x {data.n_features} features), above memory_budget="
                             f"{data.memory_budget / 2**20:.1f} MiB{share}, and cannot recompute them within it; "
                             "raise memory_budget with tensorprob.config_context, use k1 <= 1, or pass fewer "
                             "weight vectors at once")
        self.num = self.den = self.pairs = None  # per-sample (M, N) sums (AMD, stored) or (N,) log sums (GMD)
        self.tables: list[tuple[torch.Tensor, int]] = []  # AMD recomputed: (table, feature) per selected one
        self.n_pairs = 0

    def _gather(self, T: torch.Tensor, a: int, b: int, j: int | None, r: int | None = None,
                marginal: bool = False) -> torch.Tensor:
        """p^(x_c | x_j, c) (or with ``marginal`` p^(x_c | x_j); with r: p^(x_c | x_r, x_j)) for candidates a..b."""
        d = self.data
        first = d.codes[:, j] if r is None and j is not None else (None if r is None else d.codes[:, r])
        second = d.y if r is None else d.codes[:, j]
        return gather_conditional(T, d.codes[:, a:b], first, second, marginalize_b=marginal, complete=True)

    def _block_means(self, block) -> torch.Tensor:
        """(N,) of the (weighted) sample mean of ``log block(a, b)`` over candidate blocks (cache-sized temporaries).

        Distributed: the sums over this rank's samples, summed over the ranks, over their total weight.
        """
        d = self.data
        out = torch.empty(d.n_features, dtype=d.dtype, device=d.codes.device)
        for a, b in self._ranges():
            out[a:b] = d.row_mean(block(a, b).log_())
        return d.reduce(out) / d.total_weight if d.distributed else out

    def _ranges(self):
        d = self.data
        return chunk_ranges(d.n_features, max(1, d.codes.shape[0]) * 3 * torch.finfo(d.dtype).bits // 8,
                            block_budget(d.codes.device))

    def _accumulate(self, name: str, T: torch.Tensor, j: int, r: int | None = None, marginal: bool = False) -> None:
        """Add the term of feature j (pair {r, j}) to accumulator ``name``: per sample (AMD) or its log mean (GMD)."""
        acc = getattr(self, name)
        d = self.data
        if self.arith:  # added block by block: no second (M, N) array
            if acc is None:
                acc = torch.zeros(d.codes.shape[0], d.n_features, dtype=d.dtype, device=d.codes.device)
            for a, b in self._ranges():
                acc[:, a:b] += self._gather(T[a:b], a, b, j, r, marginal)
        else:
            t = self._block_means(lambda a, b: self._gather(T[a:b], a, b, j, r, marginal))
            acc = t if acc is None else acc.add_(t)
        setattr(self, name, acc)

    def update(self, j: int) -> None:
        d = self.data
        if self.k2 == 1 or self.k1 >= 1:
            T = d.pair_table(j)  # weighted; a batch member's comes from the batch's shared count
            if self.arith and not self.stored:
                self.tables.append((T, j))
            else:
                if self.k2 == 1:
                    self._accumulate("num", T, j)
                if self.k1 >= 1:
                    self._accumulate("den", T, j, marginal=True)
        if self.k1 == 2:
            for r in self.selected:  # the new pairs {r, j}
                T = d.triple_table(r, j)
                self._accumulate("pairs", T, j, r)
                self.n_pairs += 1
        super().update(j)

    def _amd_block(self, name: str, a: int, b: int) -> torch.Tensor:
        """Per-sample sums of accumulator ``name`` for candidates a..b: stored, or recomputed from the tables."""
        if self.stored or name == "pairs":
            return getattr(self, name)[:, a:b]
        acc = None
        for T, j in self.tables:
            t = self._gather(T[a:b], a, b, j, marginal=name == "den")
            acc = t if acc is None else acc.add_(t)
        return acc

    def _log_mean(self, name: str, a: int, b: int, n: int) -> torch.Tensor:
        """The (weighted) sample mean of log pbar over candidates a..b for an accumulator of n terms.

        Distributed AMD: the weighted sum over this rank's samples (:meth:`scores` reduces it).
        """
        if self.arith:
            return self.data.row_mean(torch.div(self._amd_block(name, a, b), n).log_())
        return getattr(self, name)[a:b] / n

    def scores(self) -> torch.Tensor:
        """J of every candidate, in candidate blocks (cache-sized temporaries on the CPU)."""
        d = self.data
        n = len(self.selected)
        out = torch.empty(d.n_features, dtype=d.dtype, device=d.codes.device)
        # distributed AMD: the per-sample terms are local sums, reduced once per step
        split = d.distributed and self.arith
        part = torch.zeros_like(out) if split else None
        num_local, den_local = split and self.k2 != 0, split and self.k1 != 0
        for a, b in self._ranges():
            num = self.mean_log_p_y[a:b] if self.k2 == 0 else self._log_mean("num", a, b, n)
            if self.k1 == 0:
                den = self.mean_log_p[a:b]
            elif self.k1 == 1 or self.n_pairs == 0:
                den = self._log_mean("den", a, b, n if self.k1 == 1 else 1)
            else:
                den = self._log_mean("pairs", a, b, self.n_pairs)
            if split:
                zero = torch.zeros((), dtype=d.dtype, device=out.device)
                out[a:b] = (zero if num_local else num) - (zero if den_local else den)
                part[a:b] = (num if num_local else zero) - (den if den_local else zero)
            else:
                out[a:b] = num - den
        if split:
            out += d.reduce(part) / d.total_weight
        return out / d.log_base


def _candidate_blocks(codes: torch.Tensor, dtype: torch.dtype, width: int):
    """Candidate ranges of ``codes`` (M, N) whose (width, M, candidates) temporaries fit one cache-sized block."""
    M = max(1, codes.shape[0])
    return chunk_ranges(codes.shape[1], M * width * torch.finfo(dtype).bits // 8, block_budget(codes.device))


def _value_rows(codes: torch.Tensor, a: int, b: int, I: int) -> torch.Tensor:
    """Index ``i * I + x_mi`` of every (sample, candidate a..b) into per-(candidate, value) tables: (M, b - a), int64."""
    idx = codes[:, a:b].to(torch.int64, memory_format=torch.contiguous_format, copy=True)
    return idx.add_((torch.arange(a, b, dtype=torch.int64, device=idx.device) * I)[None, :])


class _JointArithmeticMeans:
    """The AMD criteria of a batch (orders k1, k2 <= 1) scored and updated together.

    Member b's per-sample sums of ``p^_b(x_i | x_s, c)`` (k2 = 1) and ``p^_b(x_i | x_s)``
    (k1 = 1) are slabs of (G, M, N) tensors over all M rows: a pick's lookup index
    ``((i I + x_mi) I + x_mj) C + c_m`` is computed once for every member that picked ``j``,
    and one gather reads their conditional tables (stacked as the rows of one matrix) at each
    (sample, candidate). The scores of all members are one pass over the sums and one batched
    product of the (G, M) weights with them (rows of weight 0, whose probabilities may be 0,
    masked). Each member's per-sample values are those of its own run (the same tables, the
    same additions); with k1 = k2 = 1 the two means enter as the one mean of
    ``log(num / den)`` (their 1/|S| cancels), which differs from the separate means only by
    rounding.
    """

    def __init__(self, criteria: list[SampleMeanCriterion], batch) -> None:
        self.criteria, self.batch = criteria, batch
        c0 = criteria[0]
        self.k1, self.k2 = c0.k1, c0.k2
        d = batch.data
        self.dtype, self.log_base = d.dtype, d.log_base
        codes = batch.codes  # (M, N) feature-major
        M, N = codes.shape
        G = len(criteria)
        self.I, self.C = batch.max_card, batch.n_classes
        dev = codes.device
        self.Wt = batch.weights.T.to(self.dtype).contiguous()  # (G, M)
        zero = batch.weights.T == 0
        self.zero = zero[:, :, None] if bool(zero.any()) else None
        self.total = batch.weights.sum(0).to(self.dtype)  # (G,)
        self.codes = codes
        self.y = batch.y.to(torch.int64)
        self.num = torch.zeros(G, M, N, dtype=self.dtype, device=dev) if self.k2 == 1 else None
        self.den = torch.zeros(G, M, N, dtype=self.dtype, device=dev) if self.k1 == 1 else None
        # order-0 terms: each member's own (N,) means (computed by its start)
        self.mean_log_p_y = torch.stack([c.mean_log_p_y for c in criteria]) if self.k2 == 0 else None
        self.mean_log_p = torch.stack([c.mean_log_p for c in criteria]) if self.k1 == 0 else None
        self.n = [0] * G

    def _blocks(self, width: int):
        return _candidate_blocks(self.codes, self.dtype, width)

    def update(self, picks: dict[int, int]) -> None:
        """Add each member's pick (member -> feature), a memory-sized chunk of members at a time.

        A chunk's tables against their own picks are one :meth:`BatchedSelectionData.count`,
        their conditional tables one pass over the stack, and their lookups (member b's index
        ``((i I + x_mi) I + x_{m j_b}) C + c_m``) are added into the members' slabs by indexed
        adds: a few operations per step, not per member (see :meth:`_add_lookups`).
        """
        if not picks:
            return
        for b, j in picks.items():
            Criterion.update(self.criteria[b], j)
            self.n[b] += 1
        I = self.I
        order = list(picks)
        size = max(1, self.batch.member_chunks(I)[0][1])
        for s in range(0, len(order), size):
            members = order[s:s + size]
            js = [picks[b] for b in members]
            T = self.batch.count(members, js, I, stack=True)  # (n, N, I, I, C)
            T = T.reshape(-1, *T.shape[2:])  # (n * N, I, I, C): conditional_table works per leading index
            for acc, marginal in ((self.num, False), (self.den, True)):
                if acc is not None:  # (n, cells): the members' conditional tables, one row each
                    P = conditional_table(T, marginalize_b=marginal).reshape(len(members), -1)
                    self._add_lookups(acc, P, members, js, marginal)

    #: Whether :meth:`_add_lookups` gathers with every member's own index (None: on a GPU only).
    member_index: bool | None = None

    def _add_lookups(self, acc: torch.Tensor, P: torch.Tensor, members: list[int], js: list[int],
                     marginal: bool) -> None:
        """``acc[b] += P[b][index of b's pick at every (sample, candidate)]`` for the chunk's members.

        On a GPU one gather per candidate block reads every member's own index (the members'
        many small operations were the cost there); on the CPU the members that picked the same
        feature share one index and one ``index_select`` per cache-sized block (the per-member
        index of the gather, in blocks wide enough for its strided adds, is slower there).
        """
        I, C, M, G = self.I, self.C, self.codes.shape[0], len(self.criteria)
        width = 1 if marginal else C
        dev = P.device
        groups: dict[int, list[int]] = {}
        for i, j in enumerate(js):
            groups.setdefault(j, []).append(i)
        own = dev.type != "cpu" if self.member_index is None else self.member_index
        if own:
            groups = {-1: list(range(len(members)))}  # one group: every member its own index
            xj = self.codes[:, js].T.to(torch.int64, memory_format=torch.contiguous_format)  # (n, M)
        for j, pos in groups.items():
            n = len(pos)
            sub = P if n == P.shape[0] else P.index_select(0, torch.as_tensor(pos, device=dev))
            shared = j >= 0
            x = self.codes[:, j].to(torch.int64)[None, :] if shared else xj
            off = x * width if marginal else x * C + self.y[None, :]  # (1 or n, M)
            for a, b in self._blocks(n if shared else 2 * n):
                cand = _value_rows(self.codes, a, b, I).mul_(I * width)
                if shared:
                    vals = sub.index_select(1, cand.add_(off[0][:, None]).view(-1))
                else:
                    vals = sub.gather(1, (cand[None] + off[:, :, None]).view(n, -1))
                vals = vals.view(n, M, b - a)
                if n == G:
                    acc[:, :, a:b].add_(vals)
                elif shared:  # the CPU: one add per member (index_add_ into the strided slab: 3x slower)
                    for i, p in enumerate(pos):
                        acc[members[p], :, a:b].add_(vals[i])
                else:  # one indexed add (distinct members: the same additions as one by one)
                    acc[:, :, a:b].index_add_(0, torch.as_tensor(members, device=dev), vals)

    def scores(self, active: list[int], first: list[bool]) -> torch.Tensor:
        if any(first[b] for b in active):  # the first pick: relevance, as a single run
            return Separately(self.criteria).scores(active, first)
        G = len(self.criteria)
        N = self.codes.shape[1]
        n = torch.as_tensor(self.n, dtype=self.dtype, device=self.codes.device)[:, None, None]
        out = torch.empty(G, N, dtype=self.dtype, device=self.codes.device)
        for a, b in self._blocks(G):
            if self.num is not None and self.den is not None:
                t = torch.div(self.num[:, :, a:b], self.den[:, :, a:b]).log_()
            elif self.num is not None:
                t = torch.div(self.num[:, :, a:b], n).log_()
            else:
                t = torch.div(self.den[:, :, a:b], n).log_()
            if self.zero is not None:
                t.masked_fill_(self.zero, 0.0)  # rows a member leaves out (their probabilities may be 0)
            out[:, a:b] = torch.bmm(self.Wt[:, None, :], t)[:, 0]
        out /= self.total[:, None]
        if self.num is None:
            out = self.mean_log_p_y - out
        elif self.den is None:
            out -= self.mean_log_p
        return (out / self.log_base)[active]


class _JointNaiveBounds:
    """The naive-q VI criteria of a batch (VMI-naive, PDA's VI framework at k1 = 0) scored together.

    Member b's bound of chain C plus candidate i is

        L_b(i) = [ sum_m w_mb log p^_b(x_mi | c_m) + sum_m w_mb (B_mb(c_m) - mx_mb)
                   - sum_m w_mb log sum_c exp(B_mb(c) + log p^_b(c) - mx_mb) p^_b(x_mi | c) ] / sum_m w_mb

    with ``B_mb(c) = sum_{s in C_b} log p^_b(x_ms | c)`` and ``mx_mb = max_c [B_mb(c) + log p^_b(c)]``:
    the sum that :meth:`VariationalState.bounds` forms per row, regrouped. The first sum does
    not change with the chain (computed once), the second is one number per member and step,
    and the third is, for all members at once, a batched product of the (G, M, C) shifted
    exponentials with the members' (C, sum of alphabets) conditional tables, read at each
    row's own values, a block of (members, rows, candidates) at a time: the work of the
    separate runs in a few operations per step instead of some seventy per member, and one
    device-to-host transfer for the underflow check of all members instead of one each.
    Rows a member leaves out (weight 0) have weight 0 in every sum (their values are kept
    finite), so each member's bound is that of its own run up to rounding. Sums that
    underflow are recomputed exactly (log-sum-exp) at the entries concerned.

    The members' :class:`VariationalState` keep their chains (the restart rule reads them);
    their per-sample parts are this object's.
    """

    def __init__(self, criteria: list[VariationalCriterion], batch) -> None:
        self.criteria, self.batch = criteria, batch
        d = batch.data
        self.dtype = d.dtype
        codes = batch.codes  # (M, N) feature-major
        self.codes, self.y = codes, batch.y.to(torch.int64)
        M, N = codes.shape
        states = [c.state for c in criteria]
        self.I, self.C = states[0].I, states[0].C
        dev = codes.device
        self.Wt = batch.weights.T.to(self.dtype).contiguous()  # (G, M)
        self.pos = self.Wt > 0
        self.total = batch.weights.sum(0).to(self.dtype)  # (G,)
        self.log_prior = torch.stack([s.log_prior for s in states])  # (G, C)
        self.lpc = torch.stack([s.log_p_class for s in states])  # (G, N * I, C): log p^_b(v | c)
        self.p_t = torch.stack([s._p_class for s in states]).transpose(1, 2).contiguous()  # (G, C, N * I)
        self.base = torch.zeros(len(criteria), M, self.C, dtype=self.dtype, device=dev)
        self.restarts = [0] * len(criteria)
        # sum_m w_mb log p^_b(x_mi | c_m): fixed for the whole selection (rows of weight 0 masked)
        G = len(criteria)
        self.own = torch.empty(G, N, dtype=self.dtype, device=dev)
        flat = self.lpc.view(G, -1)
        for a, b in _candidate_blocks(codes, self.dtype, 2 * G):
            idx = (_value_rows(codes, a, b, self.I) * self.C + self.y[:, None]).view(-1)
            v = flat.index_select(1, idx).view(G, M, b - a)
            v = torch.where(self.pos[:, :, None], v, torch.zeros((), dtype=self.dtype, device=dev))
            self.own[:, a:b] = torch.bmm(self.Wt[:, None, :], v)[:, 0]
        self._unchecked: torch.Tensor | None = None

    #: a class sum at most this many ``tiny`` is recomputed exactly (as in :meth:`VariationalState.bounds`)
    _underflow = 1e3


    def _restarted(self) -> None:
        """Members whose chain the restart rule dropped since the last look: their base back to 0."""
        gone = [g for g, c in enumerate(self.criteria) if c.n_restarts != self.restarts[g]]
        for g in gone:
            self.restarts[g] = self.criteria[g].n_restarts
        if gone:
            self.base.index_fill_(0, torch.as_tensor(gone, device=self.base.device), 0.0)

    def scores(self, active: list[int], first: list[bool]) -> torch.Tensor:
        self._restarted()
        s = self._bounds(active, defer=True)
        flag, self._unchecked = self._unchecked, None
        if flag is not None and bool(flag):  # one transfer for all members; rare: recompute exactly
            s = self._bounds(active, defer=False)
        return s

    def _bounds(self, active: list[int], defer: bool) -> torch.Tensor:
        """(len(active), N) bounds of the active members, in the selector's base."""
        G, (M, N), I = len(self.criteria), self.codes.shape, self.I
        dev = self.codes.device
        sel = None if len(active) == G else torch.as_tensor(active, device=dev)

        def pick(t):
            return t if sel is None else t.index_select(0, sel)

        base, Wt, pos, p_t = pick(self.base), pick(self.Wt), pick(self.pos), pick(self.p_t)
        n = base.shape[0]
        b = base + pick(self.log_prior)[:, None, :]  # (n, M, C)
        mx = b.amax(2, keepdim=True)
        E = torch.exp(b - mx)
        own_base = base.gather(2, self.y[None, :, None].expand(n, M, 1))[:, :, 0] - mx[:, :, 0]  # (n, M)
        zero = torch.zeros((), dtype=self.dtype, device=dev)
        shift = torch.bmm(Wt[:, None, :], torch.where(pos, own_base, zero)[:, :, None])[:, 0, 0]  # (n,)
        tiny = torch.finfo(self.dtype).tiny
        lsum = torch.empty(n, N, dtype=self.dtype, device=dev)
        for a, c in _candidate_blocks(self.codes, self.dtype, n * (I + 2)):  # the product (I per candidate), gather, log
            rows = _value_rows(self.codes, a, c, I)  # (M, c - a)
            Q = torch.bmm(E, p_t[:, :, a * I:c * I])  # (n, M, (c - a) * I)
            lse = torch.gather(Q, 2, (rows - a * I)[None].expand(n, -1, -1))  # (n, M, c - a)
            bad = (lse <= tiny * self._underflow) & pos[:, :, None]
            lse.clamp_min_(tiny).log_()  # finite everywhere: weight-0 rows add 0
            if defer:
                flag = bad.any()
                self._unchecked = flag if self._unchecked is None else self._unchecked | flag
            elif bool(bad.any()):  # exact log-sum-exp where the product lost the scale
                g, m, i = torch.nonzero(bad, as_tuple=True)
                lpc = pick(self.lpc)
                lse[g, m, i] = torch.logsumexp(b[g, m] + lpc[g, rows[m, i]], dim=1) - mx[g, m, 0]
            lsum[:, a:c] = torch.bmm(Wt[:, None, :], lse)[:, 0]
        out = (pick(self.own) + shift[:, None] - lsum) / pick(self.total)[:, None]
        return out / self.batch.data.log_base

    def update(self, picks: dict[int, int]) -> None:
        """Each member's chain gains its pick: ``B_mb += log p^_b(x_mj | c)`` (one gather for all)."""
        self._restarted()
        if not picks:
            return
        for b, j in picks.items():
            c = self.criteria[b]
            c.state.chain.append(j)
            Criterion.update(c, j)
        members = list(picks)
        dev = self.codes.device
        rows = torch.as_tensor(members, device=dev)
        js = torch.as_tensor(list(picks.values()), device=dev)
        M, C = self.codes.shape[0], self.C
        idx = self.codes[:, js].T.to(torch.int64) + (js * self.I)[:, None]  # (n, M)
        vals = self.lpc.index_select(0, rows).gather(1, idx[:, :, None].expand(-1, M, C))  # (n, M, C)
        vals = torch.where(self.pos.index_select(0, rows)[:, :, None], vals,
                           torch.zeros((), dtype=self.dtype, device=dev))  # weight-0 rows stay finite
        self.base.index_add_(0, rows, vals)


class VariationalCriterion(Criterion):
    """The VI bound ``L(C + i)`` with the restart rule of the authors' codes.

    When the best new bound exceeds the previous one by less than ``restart_threshold``
    (in the chosen base) and the chain is not empty, the chain is dropped, nothing is
    selected in that iteration, and the next step starts a new chain (whose first bound is
    ``I^(x_i; y)``); earlier picks stay selected but leave the bound.
    """

    name = "vi"

    def __init__(self, q: str, restart_threshold: float = 0.01) -> None:
        self.q, self.restart_threshold = q, restart_threshold

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.state = VariationalState(data, self.q)
        self.prev = 0.0
        self.n_restarts = 0

    def state_bytes(self, n_rows: int, n_features: int, n_classes: int, dtype: torch.dtype) -> int:
        order_one = self.q != "naive"  # the (C, N, M) accumulator of the order-1 q's
        return order_one * n_classes * n_features * n_rows * torch.finfo(dtype).bits // 8

    def first_scores(self) -> torch.Tensor:
        return self.scores()

    def scores(self) -> torch.Tensor:
        return self.state.bounds(defer=True) / self.data.log_base  # the state works in nats

    def pending(self) -> torch.Tensor | None:
        return self.state.take_unchecked()

    def exact_scores(self, first: bool) -> torch.Tensor:
        return self.state.bounds() / self.data.log_base

    def accept(self, j: int, score: float) -> bool:
        if self.state.chain and score - self.prev < self.restart_threshold:
            self.state.reset()
            self.prev = 0.0
            self.n_restarts += 1
            return False
        self.prev = score
        return True

    def update(self, j: int) -> None:
        self.state.add(j)
        super().update(j)

    @classmethod
    def joint(cls, criteria, batch):
        """The naive q of one process on a GPU, its members together (:class:`_JointNaiveBounds`);
        otherwise (and on the CPU, see :data:`_NAIVE_JOINT_CPU`) one member at a time."""
        c0, d = criteria[0], batch.data
        share = len(criteria) * batch.codes.shape[0]
        fused = (c0.q == "naive" and not d.distributed and (batch.codes.device.type != "cpu" or _NAIVE_JOINT_CPU)
                 and 3 * share * c0.state.C * torch.finfo(d.dtype).bits // 8 <= get_config()["memory_budget"])
        return _JointNaiveBounds(criteria, batch) if fused else super().joint(criteria, batch)


def _pda_criterion(distribution: str, framework: str, k1: int, k2: int, restart_threshold: float) -> Criterion:
    """The criterion of PDA's (distribution, framework, k1, k2); checks the combinations."""
    if framework == "vi":
        if k1 not in (0, 1):
            raise ValueError(f"PDA in the VI framework supports order k1 in (0, 1); got {k1!r}")
        return VariationalCriterion("naive" if k1 == 0 else distribution, float(restart_threshold))
    if (k1, k2) not in _MI_ORDERS:
        raise ValueError(f"PDA in the MI framework supports (k1, k2) in {_MI_ORDERS}; got ({k1!r}, {k2!r})")
    if distribution == "fid":
        return _FID_CLASSIC[(k1, k2)]()
    return SampleMeanCriterion("arithmetic" if distribution == "amd" else "geometric", k1, k2)


class _PerSampleSelector(GreedySelector):
    """Shared base of PDA and VMI: per-sample estimators, complete data, ``n_restarts_``."""

    _parameter_constraints: ClassVar[dict] = {
        **GreedySelector._parameter_constraints,
        "distribution": [StrOptions({"fid", "gmd", "amd"})],
        "framework": [StrOptions({"mi", "vi"})],
        "k1": [Interval(Integral, 0, None, closed="left")],
        "k2": [Interval(Integral, 0, None, closed="left")],
        "q": [StrOptions({"naive", "pairwise"})],
        "restart_threshold": [Interval(Real, 0, None, closed="left")],
    }

    @abstractmethod
    def _pda_args(self) -> tuple[str, str, int, int]:
        """(distribution, framework, k1, k2) of the criterion."""

    _native_weights = True  # weighted tables and weighted sample means (any nonnegative weights)
    _compact_rows = True  # a weighted selection holds its rows of positive weight only

    def _criterion(self) -> Criterion:
        crit = _pda_criterion(*self._pda_args(), self.restart_threshold)
        self._crits.append(crit)
        return crit

    def _check_complete(self, codes: np.ndarray) -> None:
        def check() -> None:
            if (codes < 0).any():
                raise ValueError(f"{type(self).__name__} needs complete data: X has missing values (NaN/None or "
                                 "code -1); impute them or drop those rows")

        if self._dist_on:  # a rank with missing values makes every rank raise
            from .. import _distributed

            _distributed.agree(check)
        else:
            check()

    def _run(self, select, codes, *args):
        """``select(codes, *args)`` after the completeness check; records ``n_restarts_`` of the VI criteria."""
        self._check_complete(codes)
        if hasattr(self, "n_restarts_"):
            del self.n_restarts_
        self._crits: list[Criterion] = []
        try:
            out = select(codes, *args)
            if self._crits and isinstance(self._crits[0], VariationalCriterion):
                restarts = [c.n_restarts for c in self._crits]
                self.n_restarts_ = np.asarray(restarts) if hasattr(self, "n_selections_") else restarts[0]
        finally:
            del self._crits
        return out

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        return self._run(super()._select, codes, cards, y, n_classes, k, device, dtype)

    def _select_weighted(self, codes, cards, y, n_classes, k, device, dtype, W):
        return self._run(super()._select_weighted, codes, cards, y, n_classes, k, device, dtype, W)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False  # per-sample estimators need complete data
        return tags


@fill_doc(**_PDA_FRAGMENTS)
class PDA(_PerSampleSelector):
    """PDA (probability distribution assumptions) feature selection under FID, GMD or AMD.

    FID (fully independent distributions), GMD (geometric mean distribution) and AMD
    (arithmetic mean distribution) of Sun et al. 2020, in the MI (mutual information) or VI
    (variational information) framework.

    Parameters
    ----------
    %(k)s
    distribution : {"fid", "gmd", "amd"}, default="amd"
        The assumption on the joint distribution: fully independent, geometric mean or
        arithmetic mean.
    framework : {"mi", "vi"}, default="mi"
        Mutual information (sample-mean estimators) or variational information (lower
        bound, as VMI).
    k1, k2 : int, default=1
        MI framework: orders of the conditional subsets, (k1, k2) in {(0,0), (1,0), (1,1),
        (2,1)}. VI framework: the order of q is ``k1`` in {0, 1} (``k2`` is ignored).
    %(restart_threshold)s
    %(coded_params)s

    Attributes
    ----------
    %(picks)s
    %(n_restarts)s
    %(coded_attributes)s

    See Also
    --------
    VMI : The VI framework with naive or pairwise q.
    MIM, MIFS, CIFE : FID^{0,0}, FID^{1,0}, FID^{1,1}.

    Notes
    -----
    MI framework: FID^{0,0}, FID^{1,0}, FID^{1,1} are MIM, MIFS (beta 1) and CIFE; FID^{2,1}
    (eq. 6 with k1 = 2, k2 = 1, conditioning on the first selected feature ``s1``) is
    ``I(X_m;C) - I(X_m;X_s1) - sum_{j != s1} I(X_m;X_j|X_s1) + sum_j I(X_m;X_j|C)``. GMD and
    AMD run as per-sample sample-mean estimators (eq. 15; GMD's closed forms are MIM, MRMR,
    JMI and RMRMR, which the tests confirm). A conditional probability whose conditioning
    event has probability below 1e-10 counts as 0. VI framework: see
    :class:`~tensorprob.selection._pda.VariationalCriterion`. Per-sample methods need
    complete data. Ties break to the lowest index.

    Sample weights (any nonnegative values) weight the tables and the sample means (divided by
    the total weight): integral weights give what the rows repeated as often would give.
    ``resamples=W`` runs the B selections in one greedy loop, each over its rows of positive
    weight, with the tables of the selections that picked the same feature counted together.

    References
    ----------
    .. [1]
       %(sun)s
    .. [2]
       %(gao)s

    Examples
    --------
    >>> from tensorprob import PDA
    %(example_xy)s
    >>> PDA(k=2, distribution="amd").fit(X, y).selected_.tolist()
    [4, 1]
    """

    method_name = "pda"

    def __init__(self, k: int | str = 10, *, distribution: str = "amd", framework: str = "mi", k1: int = 1,
                 k2: int = 1, restart_threshold: float = 0.01, discretizer: Any = "uniform", n_bins: int = 5,
                 missing_values: Any = None, base: Any = "e", device: Any = "auto", dtype: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.distribution = distribution
        self.framework = framework
        self.k1 = k1
        self.k2 = k2
        self.restart_threshold = restart_threshold
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.base = base
        self.device = device
        self.dtype = dtype
        self.distributed = distributed

    def _pda_args(self) -> tuple[str, str, int, int]:
        return self.distribution, self.framework, self.k1, self.k2


@fill_doc(**_PDA_FRAGMENTS)
class VMI(_PerSampleSelector):
    """VMI (variational information maximization) feature selection.

    Greedy maximization of the variational lower bound ``I(X_S; Y) >= H(Y) + E[log q(y|x_S)]``
    with q the naive (``q="naive"``) or pairwise (``q="pairwise"``, geometric mean of the
    pairwise conditionals, = GMD^1 of Sun et al. 2020) auto-regressive distribution, and the
    authors' restart rule (``restart_threshold``, 0.01 nats).

    Parameters
    ----------
    %(k)s
    q : {"naive", "pairwise"}, default="pairwise"
        The auto-regressive q-distribution of the bound: each feature conditioned on the
        class alone, or the geometric mean of its pairwise conditionals.
    %(restart_threshold)s
    %(coded_params)s

    Attributes
    ----------
    selected_ : ndarray of int
        Selected features in pick order.
    scores_ : ndarray of float
        The bound at each pick: lower bounds of ``I(X_S; Y)`` (nats unless ``base=2``) of the
        chain in force when the feature was added.
    %(n_restarts)s
    %(coded_attributes)s

    See Also
    --------
    PDA : Its VI framework, ``PDA(framework="vi")``, has the same bound and other q-distributions.

    Notes
    -----
    Sample weights (any nonnegative values) weight the tables and the bound's sample mean;
    ``resamples=W`` runs the B selections in one greedy loop (see :class:`PDA`).

    References
    ----------
    .. [1]
       %(gao)s

    Examples
    --------
    >>> from tensorprob import VMI
    %(example_xy)s
    >>> VMI(k=2).fit(X, y).selected_.tolist()
    [4, 1]
    """

    method_name = "vmi"

    def __init__(self, k: int | str = 10, *, q: str = "pairwise", restart_threshold: float = 0.01,
                 discretizer: Any = "uniform", n_bins: int = 5, missing_values: Any = None, base: Any = "e",
                 device: Any = "auto", dtype: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.q = q
        self.restart_threshold = restart_threshold
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.base = base
        self.device = device
        self.dtype = dtype
        self.distributed = distributed

    def _pda_args(self) -> tuple[str, str, int, int]:
        order = 0 if self.q == "naive" else 1
        return "gmd", "vi", order, order

