"""Per-sample probability machinery of the sample-mean (AMD/GMD) and variational (VI) criteria.

Everything is a gather from contingency tables built by :mod:`tensorprob.counting`; the
state is per sample and per candidate, so adding a feature costs one bincount and one
gather over (M x candidates [x classes]).

Sample-mean criteria (paper 004, eq. 15), with ``pbar`` an arithmetic (AMD) or geometric
(GMD) mean over the k-subsets of S of plug-in conditionals evaluated at each sample:

    J(m) = (1/M) sum_j log [ pbar_{k2}(x_m^j | S, c^j) / pbar_{k1}(x_m^j | S) ]

Variational lower bound (DESIGN 6.3; paper 001 and the VI framework of paper 004), for the
current chain C of selected features and a candidate i:

    L(C + i) = (1/M) sum_j [ log q(x^j | y^j) - log sum_c p^(c) q(x^j | c) ]

with ``log q(x | c)`` accumulated per sample and class: naive ``sum_s log p^(x_s | c)``;
GMD^1 (VMI-pairwise) ``log p^(x_c1|c) + sum_{t>=2} mean_{r<t} log p^(x_ct | x_cr, c)``;
AMD^1 ``log p^(x_c1|c) + sum_{t>=2} log mean_{r<t} p^(x_ct | x_cr, c)``; FID^1 rooted at the
candidate ``log p^(x_i|c) + sum_{s in C} log p^(x_s | x_i, c)``.
"""
from __future__ import annotations

import torch

from .._config import get_config
from ..counting import joint_table

_Q = ("naive", "gmd", "amd", "fid")


def _log(p: torch.Tensor) -> torch.Tensor:
    return torch.log(p)  # log 0 = -inf is meaningful here (a class the sample cannot belong to)


def _chunks(n: int, per_cand_bytes: int):
    step = max(1, get_config()["memory_budget"] // max(1, per_cand_bytes))
    for a in range(0, n, step):
        yield a, min(n, a + step)


class VariationalState:
    """Chain, per-sample ``log q`` and per-candidate accumulators of one VI criterion.

    Conditional tables are turned into (rows = (candidate, value[, value]), columns = class)
    matrices once per update, and the per-sample values are read with one embedding lookup
    per (sample, candidate): ``table[(i * I + x_mi) * I + x_mj]``, a row of C classes.

    Parameters
    ----------
    data : SelectionData (codes, card, y, n_classes, dtype, log_base)
    q : {"naive", "gmd", "amd", "fid"}
        The q-distribution: naive (order 0; FID^0 = GMD^0 = AMD^0), or order-1 GMD
        (VMI-pairwise), AMD or FID (rooted at the candidate).
    """

    def __init__(self, data, q: str) -> None:
        if q not in _Q:
            raise ValueError(f"q must be one of {_Q}, got {q!r}")
        self.data, self.q = data, q
        d = data
        M, N, C, I = d.codes.shape[0], d.n_features, d.n_classes, d.card
        self.M, self.N, self.C, self.I = M, N, C, I
        counts = torch.bincount(d.y, minlength=C).to(d.dtype)
        self.log_prior = torch.log(counts / counts.sum())  # (C,)
        self.idx0 = torch.arange(N, device=d.codes.device)[None, :] * I + d.codes  # (M, N): row of (i, x_mi)
        T = d.class_table[:, :, 0, :]  # (N, I, C)
        self.log_p_class = _log(T / T.sum(1, keepdim=True).clamp_min(1e-300)).reshape(N * I, C)  # log p^(v | c)
        self._cache = None
        self.reset()

    def reset(self) -> None:
        """Drop the chain: q back to the class prior."""
        d = self.data
        self.chain: list[int] = []
        self.base = torch.zeros(self.M, self.C, dtype=d.dtype, device=d.codes.device)  # log q of the chain
        self.acc = None  # (M, N, C) per-candidate accumulator (gmd / amd / fid)

    # ---------------------------------------------------------------- per-candidate terms
    def _class_cond(self, a: int, b: int) -> torch.Tensor:
        """log p^(x_i | c) for candidates a..b, every sample and class: (M, b-a, C) (a new tensor).

        The lookups of all candidates are cached once when they fit twice the memory budget
        (they never change), otherwise recomputed per chunk.
        """
        if self._cache is None and self.M * self.N * self.C * self.base.element_size() <= 2 * get_config()[
                "memory_budget"]:
            self._cache = torch.nn.functional.embedding(self.idx0, self.log_p_class)
        if self._cache is not None:
            return self._cache[:, a:b].clone(memory_format=torch.contiguous_format)
        return torch.nn.functional.embedding(self.idx0[:, a:b], self.log_p_class)

    def _pair_lookup(self, j: int, given_candidate: bool, log: bool) -> torch.Tensor:
        """p^(x_i | x_j, c) (or p^(x_j | x_i, c) with ``given_candidate``) at every sample: (M, N, C).

        With ``log`` the logarithm is taken on the small table before the lookup.
        """
        d = self.data
        T = joint_table(d.codes, d.card, d.codes[:, j], d.card, d.y, d.n_classes, dtype=d.dtype)  # (N, I, I, C)
        den = T.sum(2 if given_candidate else 1, keepdim=True)
        P = torch.where(den > 0, T / den.clamp_min(1e-300), torch.zeros_like(T)).reshape(-1, self.C)
        idx = self.idx0 * self.I + d.codes[:, j:j + 1]
        return torch.nn.functional.embedding(idx, _log(P) if log else P)

    def _candidate_logq(self, a: int, b: int, shift: torch.Tensor | None = None) -> torch.Tensor:
        """log q(x | c) (+ ``shift[m, c]``) of the chain extended by each candidate a..b: (M, b-a, C).

        Each case is one fused elementwise pass over the (M, candidates, C) block.
        """
        n = len(self.chain)
        base = self.base if shift is None else self.base + shift
        if self.q == "fid":
            lq = self._class_cond(a, b)
            if n:
                lq.add_(self.acc[:, a:b])
            return lq if shift is None else lq.add_(shift[:, None, :])
        if n == 0 or self.q == "naive":
            return self._class_cond(a, b).add_(base[:, None, :])
        if self.q == "gmd":
            return torch.add(base[:, None, :], self.acc[:, a:b], alpha=1.0 / n)
        return _log(self.acc[:, a:b] / n).add_(base[:, None, :])

    def _naive_bounds(self) -> torch.Tensor:
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
        G = torch.exp(b - mx) @ torch.exp(self.log_p_class).T  # (M, N * I)
        lse = torch.gather(G, 1, self.idx0)  # (M, N)
        own = self.base.gather(1, d.y[:, None]) + self.log_p_class[self.idx0, d.y[:, None]]
        bad = lse <= torch.finfo(lse.dtype).tiny * 1e3
        lse = torch.log(lse.clamp_min(torch.finfo(lse.dtype).tiny)) + mx
        if bool(bad.any()):  # exact log-sum-exp where the product lost the scale
            m, i = torch.nonzero(bad, as_tuple=True)
            lq = b[m] + self.log_p_class[self.idx0[m, i]]
            lse[m, i] = torch.logsumexp(lq, dim=1)
        return (own - lse).mean(0) / d.log_base

    def bounds(self) -> torch.Tensor:
        """L(C + i) for every candidate i (nats / log_base): (N,)."""
        d = self.data
        if self.q == "naive" or not self.chain:
            return self._naive_bounds()
        out = torch.empty(self.N, dtype=d.dtype, device=d.codes.device)
        yi = d.y[:, None, None]
        shift = self.log_prior.expand(self.M, -1)  # the class prior enters every class term
        prior_y = self.log_prior[d.y][:, None]
        for a, b in _chunks(self.N, self.M * self.C * 8 * 3):
            lq = self._candidate_logq(a, b, shift)  # (M, c, C): log q(x | c) + log p(c)
            own = torch.gather(lq, 2, yi.expand(-1, b - a, 1))[..., 0] - prior_y
            mx = lq.amax(dim=2, keepdim=True)
            lse = lq.sub_(mx).exp_().sum(2).log_().add_(mx[..., 0])  # log-sum-exp over classes, in place
            out[a:b] = (own - lse).mean(0)
        return out / d.log_base

    def add(self, j: int) -> None:
        """Append feature j to the chain."""
        if self.q == "fid":
            term = self._pair_lookup(j, given_candidate=True, log=True)  # log p^(x_j | x_i, c), rooted at i
        else:
            # the chain's own q gains the term j had as a candidate
            self.base = self._candidate_logq(j, j + 1)[:, 0, :].clone()
            term = None
            if self.q in ("gmd", "amd"):
                term = self._pair_lookup(j, given_candidate=False, log=self.q == "gmd")  # p^(x_i | x_j, c)
        if term is not None:
            self.acc = term if self.acc is None else self.acc.add_(term)
        self.chain.append(j)
