"""Per-sample probability machinery of the sample-mean (AMD/GMD) and variational (VI) criteria.

Everything is a gather from contingency tables built by :mod:`tensorprob.counting`; the
state is per sample and per candidate, so adding a feature costs one bincount and one
gather over (M x candidates [x classes]).

Sample-mean criteria (paper 004, eq. 15), with ``pbar`` an arithmetic (AMD) or geometric
(GMD) mean over the k-subsets of S of plug-in conditionals evaluated at each sample:

    J(m) = (1/M) sum_j log [ pbar_{k2}(x_m^j | S, c^j) / pbar_{k1}(x_m^j | S) ]

Variational lower bound (Gao, Ver Steeg & Galstyan 2016, and the VI framework of Sun et al.
2020), for the
current chain C of selected features and a candidate i:

    L(C + i) = (1/M) sum_j [ log q(x^j | y^j) - log sum_c p^(c) q(x^j | c) ]

(with row weights, a weighted mean over the rows and weighted tables, the prior p^(c) included)

with ``log q(x | c)`` accumulated per sample and class: naive ``sum_s log p^(x_s | c)``;
GMD^1 (VMI-pairwise) ``log p^(x_c1|c) + sum_{t>=2} mean_{r<t} log p^(x_ct | x_cr, c)``;
AMD^1 ``log p^(x_c1|c) + sum_{t>=2} log mean_{r<t} p^(x_ct | x_cr, c)``; FID^1 rooted at the
candidate ``log p^(x_i|c) + sum_{s in C} log p^(x_s | x_i, c)``.
"""
from __future__ import annotations

import math

import torch

from .._config import get_config
from .._device import block_budget, chunk_ranges, exp_floor
from ..counting import SelectionData

_Q = ("naive", "gmd", "amd", "fid")


def _log(p: torch.Tensor) -> torch.Tensor:
    return torch.log(p)  # log 0 = -inf is meaningful here (a class the sample cannot belong to)


def _lookup_t(table_t: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Class-major lookup: (C, c, V) per-candidate tables, (c, M) value codes -> (C, c, M).

    ``torch.gather`` along the small value axis writes the class-major block directly
    (a row gather from a (rows, C) table followed by a transposing copy is 2.5x slower).
    """
    return torch.gather(table_t, 2, idx[None].expand(table_t.shape[0], -1, -1))


#: Block-sized temporaries alive at once in a pass over a candidate block (the accumulator, a
#: lookup, the terms, their class sums and indices): up to five, so a block takes a fifth of the
#: budget (``benchmarks/bench_limits.py``).
_LIVE_BLOCKS = 5


def _block_bytes(device: torch.device) -> int:
    """Bytes of one (C, candidates, rows) block: cache-sized on the CPU, and its live copies within the budget."""
    return max(1, min(block_budget(device), get_config()["memory_budget"] // _LIVE_BLOCKS))


class VariationalState:
    """Chain, per-sample ``log q`` and per-candidate accumulators of one VI criterion.

    Conditional tables are turned into (rows = (candidate, value[, value]), columns = class)
    matrices once per update, and the per-sample values are read with one embedding lookup
    per (sample, candidate): ``table[(i * I + x_mi) * I + x_mj]``, a row of C classes.

    Parameters
    ----------
    data : tensorprob.counting.SelectionData
        Codes, ``max_card``, class codes, ``n_classes`` and working dtype (its ``log_base`` is
        not used here: bounds are in nats, and the selector converts them).
    q : {"naive", "gmd", "amd", "fid"}
        The q-distribution: naive (order 0; FID^0 = GMD^0 = AMD^0), or order-1 GMD
        (VMI-pairwise), AMD or FID (rooted at the candidate).
    """

    def __init__(self, data: SelectionData, q: str) -> None:
        if q not in _Q:
            raise ValueError(f"q must be one of {_Q}, got {q!r}")
        self.data, self.q = data, q
        d = data
        M, N, C, I = d.codes.shape[0], d.n_features, d.n_classes, d.max_card
        self.M, self.N, self.C, self.I = M, N, C, I
        w = None if d.weights is None else d.weights.to(torch.float64)  # weighted class counts, summed in float64
        counts = d.reduce(torch.bincount(d.y, weights=w, minlength=C).to(d.dtype))  # distributed: over all ranks
        self.log_prior = torch.log(counts / counts.sum())  # (C,)
        T = d.class_table[:, :, 0, :]  # (N, I, C)
        tiny = torch.finfo(T.dtype).tiny
        self.log_p_class = _log(T / T.sum(1, keepdim=True).clamp_min(tiny)).reshape(N * I, C)  # log p^(v | c)
        self._p_class = torch.exp(self.log_p_class)  # (N * I, C)
        self._codes_t = d.codes.T.contiguous()  # (N, M), in the codes' (compact) dtype
        # the (C, N, M) accumulator of the order-1 q's is kept when it fits the memory budget;
        # otherwise each read sums the conditional tables of the chain again (see _acc)
        # (a member of a batch of B selections: within its 1/B share of the budget)
        self.stored = C * N * d.budget_rows * torch.finfo(d.dtype).bits // 8 <= d.memory_budget
        self._lpc_t = self.log_p_class.view(N, I, C).permute(2, 0, 1).contiguous()  # (C, N, I)
        self.reset()

    def reset(self) -> None:
        """Drop the chain: q back to the class prior."""
        d = self.data
        self.chain: list[int] = []
        self.base = torch.zeros(self.M, self.C, dtype=d.dtype, device=d.codes.device)  # log q of the chain
        self.acc = None  # (C, N, M) per-candidate accumulator (gmd / amd / fid), class-major
        self.tables: list[tuple[torch.Tensor, torch.Tensor]] = []  # (P_t, x_j) per chain term when not stored

    # ---------------------------------------------------------------- per-candidate terms
    def _blocks(self):
        # candidate blocks small enough for the few elementwise passes over a (C, c, M) block
        # to run in cache on the CPU
        return chunk_ranges(self.N, max(1, self.M) * self.C * self.base.element_size(), _block_bytes(self.base.device))

    def _class_cond_t(self, a: int, b: int) -> torch.Tensor:
        """log p^(x_i | c) for candidates a..b, every class and sample: (C, b-a, M) (a new tensor)."""
        return _lookup_t(self._lpc_t[:, a:b], self._codes_t[a:b].to(torch.int64))

    def _acc(self, a: int, b: int) -> torch.Tensor:
        """The accumulator of candidates a..b, (C, b-a, M): stored, or summed from the chain's tables now."""
        if self.stored:
            return self.acc[:, a:b]
        codes = self._codes_t[a:b].to(torch.int64) * self.I
        out = None
        for P_t, xj in self.tables:
            t = _lookup_t(P_t[:, a:b], codes + xj[None, :])
            out = t if out is None else out.add_(t)
        return out

    def _acc_at(self, i: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        """The accumulator at (candidate i, sample m) pairs: (C, len)."""
        if self.stored:
            return self.acc[:, i, m]
        codes = self._codes_t[i, m].to(torch.int64) * self.I
        return sum(P_t[:, i, codes + xj[m]] for P_t, xj in self.tables)

    def _add_pair_term(self, j: int, given_candidate: bool, log: bool) -> None:
        """acc += p^(x_i | x_j, c) (or p^(x_j | x_i, c) with ``given_candidate``) at every sample.

        With ``log`` the logarithm is taken on the small (N * I * I, C) table before the
        lookups; the (C, N, M) accumulator is updated in cache-sized candidate blocks.
        """
        d = self.data
        T = d.pair_table(j)  # (N, I, I, C), weighted; a batch member's from the batch's shared count
        den = T.sum(2 if given_candidate else 1, keepdim=True)
        P = torch.where(den > 0, T / den.clamp_min(torch.finfo(T.dtype).tiny), torch.zeros_like(T)).reshape(-1, self.C)
        P_t = (_log(P) if log else P).view(self.N, self.I * self.I, self.C).permute(2, 0, 1).contiguous()
        xj = d.codes[:, j].to(torch.int64)
        if not self.stored:
            self.tables.append((P_t, xj))
            return
        if self.acc is None:
            self.acc = torch.zeros(self.C, self.N, self.M, dtype=d.dtype, device=d.codes.device)
        for a, b in self._blocks():
            self.acc[:, a:b].add_(_lookup_t(P_t[:, a:b], self._codes_t[a:b].to(torch.int64) * self.I + xj[None, :]))

    def _terms(self, a: int, b: int, shift_t: torch.Tensor) -> torch.Tensor:
        """log q(x | c) + ``shift_t[c, m]`` of the chain extended by each candidate a..b: (C, b-a, M).

        Not for AMD, whose block is a probability (see :meth:`bounds`).
        """
        n = len(self.chain)
        if self.q == "fid":
            t = self._class_cond_t(a, b)
            if n:
                t.add_(self._acc(a, b))
            return t.add_(shift_t[:, None, :])
        if n == 0 or self.q == "naive":
            return self._class_cond_t(a, b).add_(shift_t[:, None, :])
        return torch.add(shift_t[:, None, :], self._acc(a, b), alpha=1.0 / n)  # gmd

    def _entries(self, i: torch.Tensor, m: torch.Tensor, shift_t: torch.Tensor) -> torch.Tensor:
        """Exact log q(x | c) + shift of the extended chains at (candidate i, sample m) pairs: (C, len)."""
        n = len(self.chain)
        if self.q in ("fid", "naive") or n == 0:
            t = self._lpc_t[:, i, self._codes_t[i, m].to(torch.int64)] + shift_t[:, m]
            return t + self._acc_at(i, m) if (n and self.q == "fid") else t
        if self.q == "gmd":
            return self._acc_at(i, m) / n + shift_t[:, m]
        return _log(self._acc_at(i, m) / n) + shift_t[:, m]  # amd

    def _candidate_logq(self, j: int) -> torch.Tensor:
        """log q(x | c) of the chain extended by candidate j: (M, C)."""
        zero = torch.zeros(self.C, self.M, dtype=self.base.dtype, device=self.base.device)
        if self.q == "amd" and self.chain:
            return _log(self._acc(j, j + 1)[:, 0] / len(self.chain)).T + self.base
        return self._terms(j, j + 1, zero)[:, 0, :].T + self.base

    #: the underflow test of ``bounds(defer=True)`` calls, left on the device (see take_unchecked)
    _unchecked: torch.Tensor | None = None

    def _needs_fix(self, bad: torch.Tensor, defer: bool) -> bool:
        """Whether the exact fallback for the entries ``bad`` runs now (one transfer).

        With ``defer`` the test is kept on the device for :meth:`take_unchecked` and the fix skipped.
        """
        if not defer:
            return bool(bad.any())
        flag = bad.any()
        self._unchecked = flag if self._unchecked is None else self._unchecked | flag
        return False

    def take_unchecked(self) -> torch.Tensor | None:
        """The deferred check of the last ``bounds(defer=True)``: a 0-d bool tensor (then cleared), or None.

        True means some sum underflowed and the bounds of those candidates were left inexact;
        :meth:`bounds` without ``defer`` then gives the exact ones.
        """
        flag, self._unchecked = self._unchecked, None
        return flag

    def _naive_bounds(self, defer: bool = False) -> torch.Tensor:
        """Bounds when every candidate's term is class-conditional only (naive q, or an empty chain).

        With b = log q(chain) + log p(c), the log-sum-exp over classes of b[m, c] + log p^(v | c)
        for every (candidate, value) row v is one matrix product,
        ``exp(b - max_c b) @ p^(v | c)^T`` (M x sum of alphabets), read at each sample's own
        value: O(M N I C) multiply-adds instead of (M x N x C) exponentials. Entries whose sum
        underflows to zero are recomputed exactly.
        """
        d = self.data
        b = self.base + self.log_prior  # (M, C)
        mx = b.amax(1, keepdim=True)
        E = torch.exp(b - mx)  # (M, C)
        own_base = self.base.gather(1, d.y[:, None]) - mx  # (M, 1)
        tiny = torch.finfo(d.dtype).tiny
        out = torch.zeros(self.N, dtype=d.dtype, device=d.codes.device)
        # blocks of (rows, candidates): the product stays a reasonably wide matrix product and
        # its (rows, candidates * I) result stays within the block budget
        budget, item = _block_bytes(E.device), E.element_size()
        width = max(1, min(self.N, budget // (min(max(1, self.M), 4096) * self.I * item)))
        for a in range(0, self.N, width):
            c = min(self.N, a + width)
            P = self._p_class[a * self.I:c * self.I].T  # (C, (c - a) * I)
            for r0, r1 in chunk_ranges(self.M, (c - a) * self.I * item, budget):
                rows = d.codes[r0:r1, a:c].to(torch.int64) + (torch.arange(a, c, device=E.device) * self.I)[None, :]
                lse = torch.gather(E[r0:r1] @ P, 1, rows - a * self.I)  # (rows, c - a)
                bad = lse <= tiny * 1e3
                lse = lse.clamp_min_(tiny).log_()
                if self._needs_fix(bad, defer):  # exact log-sum-exp where the product lost the scale
                    m, i = torch.nonzero(bad, as_tuple=True)
                    m0 = m + r0
                    lse[m, i] = torch.logsumexp(b[m0] + self.log_p_class[rows[m, i]], dim=1) - mx[m0, 0]
                own = self.log_p_class[rows, d.y[r0:r1, None]].add_(own_base[r0:r1])
                out[a:c] += d.row_sum(own.sub_(lse), rows=slice(r0, r1))
        if d.distributed:  # sums over this rank's samples: summed over the ranks, over their total weight
            return d.reduce(out) / d.total_weight
        out /= self.M if d.weights is None else d.total_weight
        return out

    def bounds(self, defer: bool = False) -> torch.Tensor:
        """L(C + i) for every candidate i, in nats: (N,).

        With ``defer=True`` the underflow check below stays on the device (no transfer):
        :meth:`take_unchecked` returns it, and only when it is set are the bounds recomputed
        without ``defer``. The greedy driver reads it with the pick, in the same transfer.
        A distributed run checks at once (each rank fixes its own samples, without a collective).

        Every term of log q is a log-probability (<= 0), so log q(x | c) + log p(c) <= B_m =
        max_c [log q(chain | c) + log p(c)] and ``exp`` of the shifted block never overflows:
        one exponential per (class, candidate, sample) (none for AMD, whose block is a
        probability: the class sum is a weighted sum), no per-entry max. Sums that underflow
        (every class far below B_m) are recomputed exactly.
        """
        d = self.data
        defer = defer and not d.distributed
        if self.q == "naive" or not self.chain:
            return self._naive_bounds(defer)
        n = len(self.chain)
        out = torch.empty(self.N, dtype=d.dtype, device=d.codes.device)
        b_t = (self.base + self.log_prior).T  # (C, M)
        shift_t = (b_t - b_t.amax(0, keepdim=True)).contiguous()  # <= 0, 0 at each sample's best class
        prior_y = self.log_prior[d.y]  # (M,)
        y_idx = d.y[None, None, :]
        # terms are clamped at ``exp_floor`` (-inf marks a class the candidate rules out) and sums
        # below ``thr``, where the clamp could matter at more than e^-40 relative, are recomputed
        # exactly
        floor = exp_floor(d.dtype)
        thr = math.exp(floor + 40.0)
        if self.q == "amd":  # the block holds q itself: the shift enters as weights
            w = torch.exp(shift_t)[:, None, :]
            shift_y = shift_t.gather(0, d.y[None, :])  # (1, M)
        for a, b in self._blocks():
            if self.q == "amd":
                blk = self._acc(a, b)
                own = _log(blk.gather(0, y_idx.expand(1, b - a, -1))[0] / n).add_(shift_y)
                s = torch.mul(blk, w).sum(0).div_(n)  # (c, M)
            else:
                t = self._terms(a, b, shift_t)  # (C, c, M)
                own = t.gather(0, y_idx.expand(1, b - a, -1))[0]  # log q(x | y) + shift[y]
                s = t.clamp_min_(floor).exp_().sum(0)
            lse = torch.log(s)
            bad = s <= thr
            if self._needs_fix(bad, defer):  # exact log-sum-exp where every class underflowed
                ci, m = torch.nonzero(bad, as_tuple=True)
                lse[ci, m] = torch.logsumexp(self._entries(ci + a, m, shift_t), dim=0)
            terms = own - prior_y[None, :] - lse
            out[a:b] = d.row_mean(terms, dim=1)
        return d.reduce(out) / d.total_weight if d.distributed else out

    def add(self, j: int) -> None:
        """Append feature j to the chain."""
        if self.q == "fid":
            self._add_pair_term(j, given_candidate=True, log=True)  # log p^(x_j | x_i, c), rooted at i
        else:
            # the chain's own q gains the term j had as a candidate
            self.base = self._candidate_logq(j)
            if self.q in ("gmd", "amd"):
                self._add_pair_term(j, given_candidate=False, log=self.q == "gmd")  # p^(x_i | x_j, c)
        self.chain.append(j)
