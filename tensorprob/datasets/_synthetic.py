"""Generators of planted models with known answers."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
import torch

from .._device import RandomStateLike, make_generator, resolve_device


class LatentClassSample(NamedTuple):
    """Codes drawn from a planted latent class model, with the model and the latent draws."""

    X: np.ndarray
    """(n_samples, n_features) int64 codes."""
    weights: np.ndarray
    """(rank,) mixing weights P(Z = f)."""
    factors: list
    """Per variable (I_n, rank) column-stochastic matrices P(X_n = i | Z = f)."""
    z: np.ndarray
    """(n_samples,) latent class of each row."""


def make_latent_class(n_samples: int, cardinalities: Sequence[int] | int, rank: int, *, n_features: int | None = None,
                      concentration: float = 0.3, weight_concentration: float = 2.0,
                      random_state: RandomStateLike = None, device: str | torch.device = "cpu") -> LatentClassSample:
    """Sample rows from a random latent class (rank-``rank`` nonnegative CPD) model.

    Columns of every factor are Dirichlet(``concentration``) draws (small values give peaked,
    well separated components), the weights Dirichlet(``weight_concentration``). Sampling runs
    in torch on ``device`` in chunks, so MNIST-70k-shaped data (70,000 x 785) takes seconds.

    Parameters
    ----------
    n_samples : int
    cardinalities : sequence of int, or int
        Alphabet size of every variable (an int needs ``n_features``).
    rank : int
    n_features : int, optional
        Number of variables when ``cardinalities`` is an int.
    concentration, weight_concentration : float
        Dirichlet parameters of factor columns and of the weights.
    random_state : int, Generator or None
    device : str or torch.device

    Returns
    -------
    LatentClassSample
    """
    if isinstance(cardinalities, (int, np.integer)):
        if n_features is None:
            raise ValueError("n_features is required when cardinalities is an int")
        cards = [int(cardinalities)] * int(n_features)
    else:
        cards = [int(c) for c in cardinalities]
    if n_samples < 1 or rank < 1 or not cards or min(cards) < 1:
        raise ValueError("n_samples, rank and every cardinality must be >= 1")
    dev = resolve_device(device)
    gen = make_generator(random_state, dev)
    dirichlet = _dirichlet(gen, dev)
    lam = dirichlet(torch.full((rank,), float(weight_concentration), dtype=torch.float64, device=dev))
    factors = [dirichlet(torch.full((rank, I), float(concentration), dtype=torch.float64, device=dev)).T
               for I in cards]
    z = torch.multinomial(lam, n_samples, replacement=True, generator=gen)
    X = sample_from_factors(factors, z, gen)
    return LatentClassSample(X.cpu().numpy(), lam.cpu().numpy(), [A.cpu().numpy() for A in factors], z.cpu().numpy())


def _dirichlet(gen: torch.Generator, device: torch.device):
    def draw(alpha: torch.Tensor) -> torch.Tensor:
        # Gamma(a) draws via torch._standard_gamma do not take a generator; use Marsaglia-Tsang
        # through a seeded exponential/normal construction instead: Gamma(a) = Gamma(a+1) U^(1/a).
        a = alpha + 1.0
        d = a - 1.0 / 3.0
        c = 1.0 / torch.sqrt(9.0 * d)
        out = torch.empty_like(alpha)
        todo = torch.ones_like(alpha, dtype=torch.bool)
        while todo.any():
            x = torch.randn(alpha.shape, generator=gen, dtype=alpha.dtype, device=device)
            v = (1.0 + c * x) ** 3
            u = torch.rand(alpha.shape, generator=gen, dtype=alpha.dtype, device=device)
            ok = (v > 0) & (torch.log(u.clamp_min(1e-300)) < 0.5 * x**2 + d - d * v + d * torch.log(v.clamp_min(1e-300)))
            take = todo & ok
            out[take] = (d * v)[take]
            todo &= ~ok
        u = torch.rand(alpha.shape, generator=gen, dtype=alpha.dtype, device=device)
        g = out * u.clamp_min(1e-300) ** (1.0 / alpha)
        g = g.clamp_min(1e-300)
        return g / g.sum(-1, keepdim=True)

    return draw


def sample_from_factors(factors: Sequence[torch.Tensor], z: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Draw x_n ~ A_n[:, z] for every row (inverse-CDF sampling, vectorized over rows)."""
    n = z.shape[0]
    out = torch.empty((n, len(factors)), dtype=torch.int64, device=z.device)
    u = torch.rand((n, len(factors)), generator=gen, dtype=torch.float64, device=z.device)
    for j, A in enumerate(factors):  # loop over variables only; each step is vectorized over rows
        cdf = torch.cumsum(A.to(torch.float64), 0).T[z]  # (n, I)
        out[:, j] = torch.searchsorted(cdf, u[:, j:j + 1].contiguous()).clamp_max(A.shape[0] - 1)[:, 0]
    return out
