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
from .._device import chunk_rows


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
