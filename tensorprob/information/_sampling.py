"""The one inverse-CDF sampler of latent class (CPD) models, batched over G models.

A model is ``P(x) = sum_f lambda_f prod_n A_n[x_n, f]``: draw ``z ~ lambda``, then every
``x_n ~ A_n[:, z]`` independently by inverting the cumulative distribution of the column.
:meth:`tensorprob.CPDModel.sample`, the Monte-Carlo information estimators and the planted
data generators of :mod:`tensorprob.datasets` all draw through :func:`draw_codes`.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch


def draw_codes(probs: torch.Tensor, z: torch.Tensor, gen: torch.Generator | None) -> torch.Tensor:
    """Draw ``x_v ~ A_v[:, z]`` for every model, sample and variable by inverse-CDF sampling.

    Parameters
    ----------
    probs : tensor of shape (G, V, I, F)
        Column-stochastic factors of G models over V variables, zero beyond each variable's
        alphabet (padding).
    z : int64 tensor of shape (G, T)
        Latent class of every sample.
    gen : torch.Generator or None
        Source of the uniforms: one ``(G, T, V)`` float64 block, drawn at once.

    Returns
    -------
    int64 tensor of shape (G, T, V)
        Codes, always of positive mass under their column.

    Notes
    -----
    The uniform ``u`` is scaled to the column's own total (a float32 column can sum to one
    ulp below 1), the first value whose cumulative sum exceeds it is taken (``u = 0`` would
    otherwise pick a leading value of mass 0), and the index is capped at the last value of
    positive mass (never the padding).
    """
    G, V, I, _F = probs.shape
    T = z.shape[1]
    cdf = torch.cumsum(probs.to(torch.float64), 2)  # (G, V, I, F)
    last = (cdf < cdf[:, :, -1:, :]).sum(2)  # (G, V, F): first index reaching the column total
    u = torch.rand(G, T, V, generator=gen, dtype=torch.float64, device=z.device)
    out = torch.empty(G, T, V, dtype=torch.int64, device=z.device)
    for v in range(V):  # loop over variables only; each step is vectorized over models and samples
        c = torch.gather(cdf[:, v].transpose(1, 2), 1, z[..., None].expand(G, T, I)).contiguous()  # (G, T, I)
        x = torch.searchsorted(c, (u[..., v:v + 1] * c[..., -1:]).contiguous(), right=True)[..., 0]
        out[..., v] = torch.minimum(x, torch.gather(last[:, v], 1, z))
    return out


def draw_latent(weights: torch.Tensor, n_samples: int, gen: torch.Generator | None) -> torch.Tensor:
    """``z ~ weights`` for each of G models: (G, F) weights -> (G, T) int64 (float64 draws)."""
    w = weights.to(torch.float64)
    return torch.multinomial(w / w.sum(1, keepdim=True), int(n_samples), replacement=True, generator=gen)


def pad_factors(factors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per-variable (I_n, F) factors of one model -> a zero-padded (1, V, Imax, F) tensor."""
    F = factors[0].shape[1]
    Imax = max(int(A.shape[0]) for A in factors)
    out = torch.zeros(1, len(factors), Imax, F, dtype=factors[0].dtype, device=factors[0].device)
    for v, A in enumerate(factors):
        out[0, v, : A.shape[0]] = A
    return out


def sample_from_factors(factors: Sequence[torch.Tensor], z: torch.Tensor, gen: torch.Generator | None) -> torch.Tensor:
    """Draw ``x_n ~ A_n[:, z]`` for every row of one model.

    Parameters
    ----------
    factors : list of tensors of shape (I_n, F)
        Column-stochastic factor matrices.
    z : int64 tensor of shape (n,)
        Latent class of every row.
    gen : torch.Generator or None
        Source of the uniforms, on the factors' device; None uses torch's global generator.

    Returns
    -------
    int64 tensor of shape (n, len(factors))
        Codes of every row, always of positive mass under their column.

    See Also
    --------
    draw_codes : The batched sampler this calls.
    """
    return draw_codes(pad_factors(factors), z[None], gen)[0]
