"""Information quantities of CPD (latent class) models: exact and Monte-Carlo.

The model is P(x) = sum_f lambda_f prod_n A_n[x_n, f] with hidden Z, P(Z = f) = lambda_f.
Functions take ``log_w`` (F,) and ``log_factors`` (list of (I_n, F)) on one device.

- ``H(X_n | Z) = -sum_f lambda_f sum_i A_n[i,f] log A_n[i,f]`` (exact).
- ``H(X_S)`` exact by enumerating the prod_{n in S} I_n joint states (below a budget), or
  Monte-Carlo: ``-(1/T) sum_t log P(x_S^(t))`` over T model samples, with standard error.
- ``I(X_S; Z)`` as ``H(X_S) - sum_{n in S} H(X_n | Z)`` (paper 000) or Rao-Blackwellized,
  ``H(Z) - E[H(P(Z | x_S))]``, averaging the posterior entropy over the same samples.
- ``I(X_S; X_t) = H(X_t) - E[H(P(X_t | x_S))]`` with ``P(x_t | x_S) = sum_f P(f | x_S) A_t[x_t, f]``.

Natural logarithms; divide by ``log(2)`` for bits.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import torch

from .._config import get_config
from .._device import block_budget, chunk_ranges, chunk_rows, exp_floor


class Estimate(NamedTuple):
    """An information estimate (nats) with its standard error (0 for exact values)."""

    value: float
    stderr: float

    def __float__(self) -> float:
        return float(self.value)


def _xlogx_sum(p: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.where(p > 0, p * torch.log(p.clamp_min(torch.finfo(p.dtype).tiny)), torch.zeros_like(p)).sum(dim)


def latent_log_joint(log_w: torch.Tensor, log_factors: Sequence[torch.Tensor], X: torch.Tensor,
                     variables: Sequence[int]) -> torch.Tensor:
    """``log P(Z = f, x_S)`` for every row of ``X`` (M, N codes, -1 missing): (M, F).

    Missing entries are marginalised exactly (their factor is left out).
    """
    out = log_w[None, :].expand(X.shape[0], -1).clone()
    for n in variables:  # loop over variables; each step is a gather vectorized over rows
        x = X[:, n]
        obs = x >= 0
        g = log_factors[n][x.clamp_min(0)]
        out += torch.where(obs[:, None], g, torch.zeros_like(g))
    return out


def conditional_entropy_given_latent(log_w: torch.Tensor, log_factors: Sequence[torch.Tensor],
                                     variables: Sequence[int]) -> float:
    """Exact ``sum_{n in S} H(X_n | Z)`` (nats)."""
    w = torch.exp(log_w)
    total = torch.zeros((), dtype=log_w.dtype, device=log_w.device)
    for n in variables:
        A = torch.exp(log_factors[n])
        total = total - (w * _xlogx_sum(A, 0)).sum()
    return float(total)


def latent_entropy(log_w: torch.Tensor) -> float:
    """``H(Z)`` (nats)."""
    return float(-_xlogx_sum(torch.exp(log_w), 0))


def _enumeration_size(log_factors: Sequence[torch.Tensor], variables: Sequence[int]) -> int:
    return math.prod(int(log_factors[n].shape[0]) for n in variables)


def joint_log_table(log_w: torch.Tensor, log_factors: Sequence[torch.Tensor], variables: Sequence[int],
                    max_states: int | None = None) -> torch.Tensor:
    """``log P(Z = f, x_S)`` for every joint state of ``variables`` (C order): (prod I_n, F)."""
    F = log_w.shape[0]
    n_states = _enumeration_size(log_factors, variables)
    limit = max_states if max_states is not None else get_config()["memory_budget"] // (8 * max(F, 1))
    if n_states > limit:
        raise ValueError(
            f"exact enumeration over {n_states} joint states of {len(variables)} variables exceeds the limit of "
            f"{limit} states (memory budget); use method='mc'"
        )
    cur = log_w[None, :]
    for n in variables:
        cur = (cur[:, None, :] + log_factors[n][None, :, :]).reshape(-1, F)
    return cur


def entropy_exact(log_w: torch.Tensor, log_factors: Sequence[torch.Tensor], variables: Sequence[int],
                  max_states: int | None = None) -> float:
    """Exact ``H(X_S)`` by enumeration of the joint states (nats)."""
    if len(variables) == 0:
        return 0.0
    logp = torch.logsumexp(joint_log_table(log_w, log_factors, variables, max_states), dim=1)
    p = torch.exp(logp)
    return float(-torch.where(p > 0, p * logp, torch.zeros_like(p)).sum())


def sample(log_w: torch.Tensor, log_factors: Sequence[torch.Tensor], n: int, gen: torch.Generator
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw ``n`` rows: z ~ lambda, x_n ~ A_n[:, z]. Returns (codes (n, N) int64, z (n,))."""
    from ..datasets._synthetic import sample_from_factors

    w = torch.exp(log_w.to(torch.float64))
    z = torch.multinomial(w / w.sum(), n, replacement=True, generator=gen)
    X = sample_from_factors([torch.exp(A.to(torch.float64)) for A in log_factors], z, gen)
    return X, z


def _chunked_rows(n_rows: int, width: int, itemsize: int = 8):
    step = chunk_rows(width * itemsize * 4, n_rows)
    for start in range(0, n_rows, step):
        yield start, min(n_rows, start + step)


def mc_terms(log_w: torch.Tensor, log_factors: Sequence[torch.Tensor], samples: torch.Tensor,
             variables: Sequence[int], target: int | None = None) -> dict[str, torch.Tensor]:
    """Per-sample terms of the Monte-Carlo estimators (each a (T,) float64 tensor).

    ``neg_log_p``: ``-log P(x_S^(t))``; ``post_entropy``: ``H(P(Z | x_S^(t)))``;
    with ``target``, ``target_entropy``: ``H(P(X_target | x_S^(t)))``.
    """
    T = samples.shape[0]
    out = {"neg_log_p": [], "post_entropy": [], "target_entropy": []}
    At = torch.exp(log_factors[target]) if target is not None else None
    for a, b in _chunked_rows(T, log_w.shape[0] * max(1, len(variables))):
        L = latent_log_joint(log_w, log_factors, samples[a:b], variables)
        lse = torch.logsumexp(L, 1)
        post = torch.exp(L - lse[:, None])
        out["neg_log_p"].append(-lse.to(torch.float64))
        out["post_entropy"].append(-_xlogx_sum(post, 1).to(torch.float64))
        if At is not None:
            pt = post @ At.T  # (t, I_target)
            out["target_entropy"].append(-_xlogx_sum(pt, 1).to(torch.float64))
    return {k: torch.cat(v) for k, v in out.items() if v}


def _mean_se(v: torch.Tensor) -> tuple[float, float]:
    T = v.numel()
    return float(v.mean()), (float(v.std(unbiased=True) / math.sqrt(T)) if T > 1 else float("inf"))


_INFO_ESTIMATORS = ("mc", "rao_blackwell", "exact")


class CPDInformation:
    """Incremental ``g(S) = I(X_S; Z)`` or ``I(X_S; X_t)`` of a CPD model, all candidates at once.

    The state is the per-sample running log joint ``log P(Z = f, x_S^(t))`` (T x F) over one
    matrix of T model samples drawn once (common random numbers, so candidate differences are
    not swamped by sampling noise); a candidate c adds one gathered column ``log A_c[x_tc, :]``,
    and every candidate is evaluated in one (T x candidates x F) computation chunked to the
    memory budget. With ``estimator="exact"`` the state is the enumerated joint table of
    ``X_S`` (states x F) and candidates are evaluated by enumeration, vectorized over them.

    Estimators (nats):

    - ``"mc"``: the paper's plug-in Monte-Carlo form. Latent target:
      ``H^(X_S) - sum_{n in S} H(X_n | Z)`` with ``H^ = mean_t -log P(x_S^(t))``; variable
      target t: ``mean_t [log P(x_S, x_t) - log P(x_S) - log P(x_t)]``.
    - ``"rao_blackwell"``: ``H(Z) - mean_t H(P(Z | x_S^(t)))`` (latent) or
      ``H(X_t) - mean_t H(P(X_t | x_S^(t)))`` (variable target); lower variance.
    - ``"exact"``: enumeration of the joint states (raises above the memory budget).

    Parameters
    ----------
    log_w, log_factors : the model's log weights (F,) and log factors [(I_n, F)]
    target : None for the latent Z, or the index of a variable (e.g. the label mode)
    estimator : {"mc", "rao_blackwell", "exact"}
    samples : (T, N) int64 tensor of model samples (not needed for "exact")
    """

    def __init__(self, log_w: torch.Tensor, log_factors: Sequence[torch.Tensor], *, target: int | None = None,
                 estimator: str = "rao_blackwell", samples: torch.Tensor | None = None,
                 max_states: int | None = None) -> None:
        if estimator not in _INFO_ESTIMATORS:
            raise ValueError(f"estimator must be one of {_INFO_ESTIMATORS}, got {estimator!r}")
        self.log_w, self.log_factors = log_w, list(log_factors)
        self.target, self.estimator = target, estimator
        dev, dt = log_w.device, log_w.dtype
        cards = torch.tensor([A.shape[0] for A in self.log_factors], device=dev)
        self.offsets = torch.cumsum(cards, 0) - cards
        self.log_flat = torch.cat(self.log_factors, 0)  # (D, F)
        w = torch.exp(log_w)
        self.h_given_z = torch.stack([-(w * _xlogx_sum(torch.exp(A), 0)).sum() for A in self.log_factors])  # (N,)
        self.h_z = latent_entropy(log_w)
        self.selected: list[int] = []
        self.max_states = max_states
        if target is not None:
            self.A_t = torch.exp(self.log_factors[target])  # (I_t, F)
            self.p_t = self.A_t @ w  # (I_t,)
            self.h_t = float(-_xlogx_sum(self.p_t, 0))
        if estimator == "exact":
            self.table = log_w[None, :].clone()  # (states, F): log P(Z = f, x_S)
        else:
            if samples is None:
                raise ValueError(f"estimator={estimator!r} needs model samples")
            self.samples = samples
            self.base = log_w[None, :].expand(samples.shape[0], -1).to(dt).clone()  # (T, F)
        self.value, self.stderr = 0.0, 0.0

    # -- Monte-Carlo -------------------------------------------------------------------------
    def _mc_terms(self, L: torch.Tensor) -> torch.Tensor:
        """Per-sample terms (T, c) whose mean is g(S + c) up to a constant added in ``evaluate``.

        ``L`` (a scratch tensor) may be overwritten.
        """
        if self.target is None and self.estimator == "rao_blackwell":
            # -H(softmax(L)) = sum_f e_f (L_f - m) / s - log s, with e = exp(L - m), s = sum e:
            # no logarithm over the T x c x F entries, and L is reused in place. Shifted entries
            # are clamped at ``exp_floor``: their weight, far below eps against s >= 1, is lost to
            # rounding anyway.
            L.sub_(L.amax(dim=-1, keepdim=True)).clamp_min_(exp_floor(L.dtype))
            E = torch.exp(L)
            s = E.sum(-1)
            return (E.mul_(L)).sum(-1) / s - torch.log(s)  # the constant H(Z) is added later
        lse = torch.logsumexp(L, dim=-1)
        if self.target is None:
            return -lse  # mean = H^(X_{S+c}); the H(X_n|Z) sum is subtracted later
        if self.estimator == "mc":
            y = self.samples[:, self.target]
            ly = self.log_factors[self.target][y]  # (T, F)
            shape = (-1,) + (1,) * (L.ndim - 2) + (L.shape[-1],)
            return torch.logsumexp(L + ly.view(shape), dim=-1) - lse - torch.log(self.p_t[y]).view(
                (-1,) + (1,) * (L.ndim - 2))
        post = torch.exp(L - lse[..., None])
        return _xlogx_sum(post @ self.A_t.T, -1)  # -H(P(X_t | x)); H(X_t) added later

    def _constant(self, cands: torch.Tensor) -> torch.Tensor:
        if self.target is None:
            if self.estimator == "mc":
                return -(self.h_given_z[self.selected].sum() + self.h_given_z[cands])
            return torch.full((cands.numel(),), self.h_z, dtype=self.log_w.dtype, device=self.log_w.device)
        if self.estimator == "mc":
            return torch.zeros(cands.numel(), dtype=self.log_w.dtype, device=self.log_w.device)
        return torch.full((cands.numel(),), self.h_t, dtype=self.log_w.dtype, device=self.log_w.device)

    # -- exact ---------------------------------------------------------------------------------
    def _exact(self, cands: torch.Tensor, hz: torch.Tensor) -> torch.Tensor:
        F = self.log_w.shape[0]
        Imax = max(int(self.log_factors[int(c)].shape[0]) for c in cands.tolist())
        K = self.table.shape[0]
        limit = self.max_states if self.max_states is not None else get_config()["memory_budget"] // (32 * F)
        t_card = 1 if self.target is None else int(self.A_t.shape[0])
        if K * Imax * t_card > limit:
            raise ValueError(f"exact enumeration needs {K * Imax * t_card} joint states per candidate, above the "
                             f"limit of {limit}; use estimator='rao_blackwell' or 'mc'")
        pad = torch.full((cands.numel(), Imax, F), -torch.inf, dtype=self.log_w.dtype, device=self.log_w.device)
        for i, c in enumerate(cands.tolist()):  # stacking the candidates' factor tables (no data loop)
            A = self.log_factors[c]
            pad[i, : A.shape[0]] = A
        out = torch.empty(cands.numel(), dtype=self.log_w.dtype, device=self.log_w.device)
        step = max(1, limit // max(1, K * Imax * t_card))
        for a in range(0, cands.numel(), step):
            J = (self.table[None, :, None, :] + pad[a:a + step, None, :, :]).reshape(-1, K * Imax, F)
            out[a:a + step] = self._exact_value(J, hz[a:a + step])
        return out

    def _exact_value(self, J: torch.Tensor, hz: torch.Tensor) -> torch.Tensor:
        """g for joint tables J (c, states, F) of log P(Z, x_{S+c}); ``hz`` = sum H(X_n | Z) over S + c."""
        lp = torch.logsumexp(J, -1)  # (c, states)
        h = -_xlogx_sum(torch.exp(lp), -1)  # H(X_{S+c})
        if self.target is None:
            return h - hz
        Jt = J[..., None, :] + self.log_factors[self.target][None, None]  # (c, states, I_t, F)
        h_joint = -_xlogx_sum(torch.exp(torch.logsumexp(Jt, -1)).flatten(1), -1)
        return h + self.h_t - h_joint

    # -- public ----------------------------------------------------------------------------------
    def evaluate(self, candidates: Sequence[int] | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``g(S + c)`` and its standard error for every candidate c (two (C,) tensors)."""
        cands = torch.as_tensor(candidates, dtype=torch.int64, device=self.log_w.device).reshape(-1)
        if cands.numel() == 0:
            z = torch.empty(0, dtype=self.log_w.dtype, device=self.log_w.device)
            return z, z
        if self.estimator == "exact":
            vals = torch.empty(cands.numel(), dtype=self.log_w.dtype, device=self.log_w.device)
            step = 64
            for a in range(0, cands.numel(), step):
                c = cands[a:a + step]
                vals[a:a + step] = self._exact(c, self.h_given_z[self.selected].sum() + self.h_given_z[c])
            return vals, torch.zeros_like(vals)
        T, F = self.base.shape
        means, ses = [], []
        # each (T, block, F) temporary within the block budget: cache-sized on the CPU
        for a, b in chunk_ranges(cands.numel(), T * F * self.base.element_size(), block_budget(self.base.device)):
            c = cands[a:b]
            idx = self.offsets[c][None, :] + self.samples[:, c]  # (T, c)
            L = self.log_flat[idx].add_(self.base[:, None, :])  # (T, c, F)
            terms = self._mc_terms(L).to(torch.float64)
            means.append(terms.mean(0))
            ses.append(terms.std(0, unbiased=True) / math.sqrt(T))
        mean = torch.cat(means).to(self.log_w.dtype) + self._constant(cands)
        return mean, torch.cat(ses).to(self.log_w.dtype)

    def add(self, j: int) -> None:
        """Add variable ``j`` to S (one gather for the Monte-Carlo state)."""
        j = int(j)
        v, se = self.evaluate([j])
        self.value, self.stderr = float(v[0]), float(se[0])
        if self.estimator == "exact":
            F = self.log_w.shape[0]
            self.table = (self.table[:, None, :] + self.log_factors[j][None, :, :]).reshape(-1, F)
        else:
            self.base = self.base + self.log_factors[j][self.samples[:, j]]
        self.selected.append(j)


def stacked_information(log_w: torch.Tensor, log_factors: torch.Tensor, *, target: int | None, estimator: str,
                        n_samples: int, gen: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``I(X_V; Z)`` or ``I(X_V; X_target)`` for G models over the same V variables at once.

    Parameters
    ----------
    log_w : (G, F) log weights (-inf for unused components)
    log_factors : (G, V, Imax, F) log factors (-inf for values beyond a variable's alphabet)
    target : None (latent) or the position in V of the target variable (excluded from X_V)
    estimator : {"exact", "mc", "rao_blackwell"} as in :class:`CPDInformation`
    n_samples : T samples drawn from every model (Monte-Carlo estimators)

    Returns
    -------
    values, stderr : (G,) tensors (nats)
    """
    if estimator not in _INFO_ESTIMATORS:
        raise ValueError(f"estimator must be one of {_INFO_ESTIMATORS}, got {estimator!r}")
    G, V, Imax, F = log_factors.shape
    feats = [v for v in range(V) if v != target]
    w = torch.exp(log_w)
    A = torch.exp(log_factors)
    h_z = -_xlogx_sum(w, 1)  # (G,)
    h_given_z = -(w[:, None, :] * _xlogx_sum(A, 2)).sum(-1)  # (G, V)
    if target is not None:
        p_t = torch.einsum("gif,gf->gi", A[:, target], w)
        h_t = -_xlogx_sum(p_t, 1)
    if estimator == "exact":
        table = log_w[:, None, :]  # (G, states, F)
        for v in feats:
            table = (table[:, :, None, :] + log_factors[:, v, None, :, :]).reshape(G, -1, F)
        lp = torch.logsumexp(table, -1)
        h = -_xlogx_sum(torch.exp(lp), 1)
        zero = torch.zeros(G, dtype=log_w.dtype, device=log_w.device)
        if target is None:
            return h - h_given_z[:, feats].sum(1), zero
        joint = table[:, :, None, :] + log_factors[:, target, None, :, :]
        h_joint = -_xlogx_sum(torch.exp(torch.logsumexp(joint, -1)).flatten(1), 1)
        return h + h_t - h_joint, zero
    T = int(n_samples)
    z = torch.multinomial(w / w.sum(1, keepdim=True), T, replacement=True, generator=gen)  # (G, T)
    L = torch.zeros(G, T, F, dtype=log_w.dtype, device=log_w.device) + log_w[:, None, :]
    cdf = torch.cumsum(A, 2)  # (G, V, Imax, F)
    # inverse-CDF draws that only land on values of positive mass, whatever the rounding: u is
    # scaled to the cdf's own total (in float32 it can end 1 ulp below 1 = torch.rand's largest
    # draw), the first value whose cdf exceeds u is taken (u = 0, 1 in 2**24 float32 draws, would
    # otherwise hit a leading value of mass 0: log 0 for every component, a NaN term), and the
    # index is capped at the last value of positive mass (not at the padding beyond the alphabet)
    last = (cdf < cdf[:, :, -1:, :]).sum(2)  # (G, V, F): where each cdf reaches its total
    ys = None
    for v in range(V):  # loop over the few variables of V; vectorized over models and samples
        c = torch.gather(cdf[:, v].transpose(1, 2), 1, z[..., None].expand(G, T, Imax))  # (G, T, Imax)
        u = torch.rand(G, T, 1, generator=gen, dtype=c.dtype, device=c.device) * c[..., -1:]
        x = torch.searchsorted(c.contiguous(), u, right=True)[..., 0]  # (G, T)
        x = torch.minimum(x, torch.gather(last[:, v], 1, z))
        if v == target:
            ys = x
            continue
        L = L + torch.gather(log_factors[:, v], 1, x[..., None].expand(G, T, F))
    lse = torch.logsumexp(L, -1)  # (G, T)
    if target is None:
        if estimator == "mc":
            terms, const = -lse, -h_given_z[:, feats].sum(1)
        else:
            post = torch.exp(L - lse[..., None])
            terms, const = _xlogx_sum(post, -1), h_z
    else:
        ly = torch.gather(log_factors[:, target], 1, ys[..., None].expand(G, T, F))
        if estimator == "mc":
            terms = torch.logsumexp(L + ly, -1) - lse - torch.log(torch.gather(p_t, 1, ys))
            const = torch.zeros_like(h_t)
        else:
            post = torch.exp(L - lse[..., None])
            terms, const = _xlogx_sum(torch.einsum("gtf,gif->gti", post, A[:, target]), -1), h_t
    terms = terms.to(torch.float64)
    return (terms.mean(1).to(log_w.dtype) + const,
            (terms.std(1, unbiased=True) / math.sqrt(T)).to(log_w.dtype))
