"""Generators of planted models with known answers."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from .._device import RandomStateLike, make_generator, resolve_device, to_numpy
from .._docstrings import fill_doc
from ..information._sampling import sample_from_factors
from ._dataset import _ALIASES, PLANTED_SHAPES, _finish

_N_SAMPLES = """\
n_samples : int
    Number of rows drawn."""

_PLANTED = """\
concentration : float, default=0.3
    Dirichlet parameter of the factor columns (small values give peaked, well separated
    components)."""

_DEVICE = """\
device : {"cpu", "cuda", "auto"} or torch.device, default="cpu"
    Where the model is drawn and sampled; the results are NumPy arrays either way."""

_MIXTURE = """\
n_classes : int
    Number of classes (mixture components), with equal priors.
mu : float, default=0.5
    Spacing of the class means: class i has mean ``mu * (i, i)``.
variance : float, default=0.1
    Variance of each feature within a class.
rho : float, default=0.5
    Correlation of the two features within a class, in (-1, 1)."""

_FRAGMENTS = {"n_samples": _N_SAMPLES, "planted": _PLANTED, "cpu_device": _DEVICE, "mixture": _MIXTURE}


class LatentClassSample(NamedTuple):
    """Codes drawn from a planted latent class model, with the model and the latent draws.

    The fields are the constructor's parameters.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Codes (int64).
    weights : ndarray of shape (rank,)
        Mixing weights ``P(Z = f)``.
    factors : list of ndarray of shape (I_n, rank)
        Column-stochastic matrices ``P(X_n = i | Z = f)``, one per variable.
    z : ndarray of shape (n_samples,)
        Latent class of each row.
    """

    X: np.ndarray
    weights: np.ndarray
    factors: list
    z: np.ndarray


@fill_doc(**_FRAGMENTS)
def make_latent_class(n_samples: int, cardinalities: Sequence[int] | int, rank: int, *, n_features: int | None = None,
                      concentration: float = 0.3, weight_concentration: float = 2.0,
                      random_state: RandomStateLike = None, device: str | torch.device = "cpu") -> LatentClassSample:
    """Sample rows from a random latent class (rank-``rank`` nonnegative CPD) model.

    Columns of every factor are Dirichlet(``concentration``) draws (small values give peaked,
    well separated components), the weights Dirichlet(``weight_concentration``). Sampling runs
    in torch on ``device`` in chunks, so MNIST-70k-shaped data (70,000 x 785) takes seconds.

    Parameters
    ----------
    %(n_samples)s
    cardinalities : sequence of int, or int
        Alphabet size of every variable (an int needs ``n_features``).
    rank : int
        Number of latent classes (components) of the planted model.
    n_features : int, optional
        Number of variables when ``cardinalities`` is an int.
    %(planted)s
    weight_concentration : float, default=2.0
        Dirichlet parameter of the mixing weights.
    %(random_state)s
    %(cpu_device)s

    Returns
    -------
    LatentClassSample
        The codes, the planted weights and factors, and the latent class of every row.
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
    return LatentClassSample(to_numpy(X), to_numpy(lam), [to_numpy(A) for A in factors], to_numpy(z))


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
            tiny = torch.finfo(u.dtype).tiny
            ok = (v > 0) & (torch.log(u.clamp_min(tiny)) < 0.5 * x**2 + d - d * v + d * torch.log(v.clamp_min(tiny)))
            take = todo & ok
            out[take] = (d * v)[take]
            todo &= ~ok
        u = torch.rand(alpha.shape, generator=gen, dtype=alpha.dtype, device=device)
        g = out * u.clamp_min(torch.finfo(u.dtype).tiny) ** (1.0 / alpha)
        g = g.clamp_min(torch.finfo(g.dtype).tiny)
        return g / g.sum(-1, keepdim=True)

    return draw


# ---------------------------------------------------------------------------------------
# Known-answer designs of the HOFS paper (Wu, Gupta, Bajaj) and the GMI paper (Sekeh, Hero)
# ---------------------------------------------------------------------------------------

@fill_doc(**_FRAGMENTS)
def make_xor(n_samples: int = 1000, *, random_state: RandomStateLike = None) -> tuple[np.ndarray, np.ndarray]:
    """The XOR example of the HOFS paper, section 3.2.

    x1, x2 are fair coins, x3 = 0 always, and y = x1 XNOR x2 (1 when x1 == x2). Each of
    x1, x2 alone carries no information about y, the pair determines it.

    Parameters
    ----------
    n_samples : int, default=1000
        Number of rows drawn.
    %(random_state)s

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
        The features x1, x2, x3 (float64).
    y : ndarray of shape (n_samples,)
        The label (int64).
    """
    gen = make_generator(random_state, torch.device("cpu"))
    x12 = torch.randint(0, 2, (n_samples, 2), generator=gen)
    y = (x12[:, 0] == x12[:, 1]).long()
    X = torch.cat([x12, torch.zeros((n_samples, 1), dtype=torch.long)], 1).double()
    return X.numpy(), y.numpy()


TREE_WEIGHTS = (1.0, 0.7, 0.45)


@fill_doc(**_FRAGMENTS)
def make_tree_model(n_samples: int = 100_000, *, weights: Sequence[float] = TREE_WEIGHTS, n_children: int = 2,
                    random_state: RandomStateLike = None) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """The tree graphical model of the HOFS paper, section 6.1 (Fig. 3).

    Y is a fair binary label; first-layer features ``x_j = w_j Y + e`` (j = 1..len(weights)),
    and each has ``n_children`` children ``x_c = x_parent + e``, with e ~ N(0, 1)
    independent: Gaussian, unit variance, mean the parent's value (times the edge weight
    for the first layer). Columns: first layer, then the children of x1, of x2, ...
    With the default weights (1, 0.7, 0.45) the features' MI with Y is about
    0.11, 0.06, 0.025 nats (first layer) and 0.06, 0.03, 0.013 (children), close to the
    paper's Table 5.

    Parameters
    ----------
    n_samples : int, default=100_000
        Number of rows drawn.
    weights : sequence of float, default=(1.0, 0.7, 0.45)
        Edge weights ``w_j`` of the first-layer features; their number is L.
    n_children : int, default=2
        Children of each first-layer feature.
    %(random_state)s

    Returns
    -------
    X : ndarray of shape (n_samples, L + L * n_children)
        The features (float64): first layer, then the children of x1, of x2, ...
    y : ndarray of shape (n_samples,)
        The binary label (int64).
    groups : list of lists of int
        The true subsets ``[parent, child, child]`` in column indices.
    """
    gen = make_generator(random_state, torch.device("cpu"))
    L = len(weights)
    y = torch.randint(0, 2, (n_samples,), generator=gen)
    w = torch.as_tensor(weights, dtype=torch.float64)
    first = y.double().unsqueeze(1) * w + torch.randn((n_samples, L), generator=gen, dtype=torch.float64)
    children = first.repeat_interleave(n_children, dim=1) + torch.randn(
        (n_samples, L * n_children), generator=gen, dtype=torch.float64)
    X = torch.cat([first, children], 1)
    groups = [[j] + [L + j * n_children + c for c in range(n_children)] for j in range(L)]
    return X.numpy(), y.numpy(), groups


@fill_doc(**_FRAGMENTS)
def make_heterogeneous(n_samples: int = 1000, *, random_state: RandomStateLike = None) -> tuple[np.ndarray, np.ndarray]:
    """The heterogeneous design of the HOFS paper, section 6.2 and Table 7 (Wei et al. 2015).

    5 classes in 10 equal blocks of ``n_samples / 10`` rows (classes 1..5 as codes 0..4, two
    blocks each) and 20 features in four groups of five:

    - Group I (F1-F5): F1 in {0, 1, 2} (1 for class 1, 2 for class 2, else 0), F2 = 1 for
      class 2, F3 = 1 for class 3 (nominal); F4 > 0 for classes 4-5, F5 > 0 for class 5,
      negative otherwise (numerical, magnitudes ``|N(0, 1)|``).
    - Group II (F6-F10): the same features with a bias, their pattern shifted by one block
      (Table 7: F6 = 1 on blocks 1-4, F7 on 2-5, F8 on 4-7, F9 > 0 on 6-10, F10 > 0 on 8-10).
    - Group III (F11-F15): Group I with noise: 20% of F11-F13 replaced by random values of
      their alphabet; in F14, F15, ``n_samples / 5`` randomly chosen negative values made
      positive.
    - Group IV (F16-F20): random, independent of the class (two nominal, three N(0, 1)).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of rows drawn, a positive multiple of 10.
    %(random_state)s

    Returns
    -------
    X : ndarray of shape (n_samples, 20)
        The features (float64; nominal features as their codes).
    y : ndarray of shape (n_samples,)
        The class, int64 codes 0..4.

    Raises
    ------
    ValueError
        ``n_samples`` is not a positive multiple of 10.
    """
    if n_samples < 10 or n_samples % 10:
        raise ValueError(f"n_samples must be a positive multiple of 10, got {n_samples}")
    gen = make_generator(random_state, torch.device("cpu"))
    b = n_samples // 10
    block = torch.arange(n_samples) // b  # 0..9
    y = block // 2

    def on(blocks):
        return torch.isin(block, torch.tensor(blocks)).double()

    def signed(pos_mask):
        mag = torch.randn(n_samples, generator=gen, dtype=torch.float64).abs() + 0.05
        return torch.where(pos_mask > 0, mag, -mag)

    F = torch.zeros((n_samples, 20), dtype=torch.float64)
    F[:, 0] = on([0, 1]) * 1 + on([2, 3]) * 2
    F[:, 1] = on([2, 3])
    F[:, 2] = on([4, 5])
    F[:, 3] = signed(on([6, 7, 8, 9]))
    F[:, 4] = signed(on([8, 9]))
    F[:, 5] = on([0, 1, 2, 3])
    F[:, 6] = on([1, 2, 3, 4])
    F[:, 7] = on([3, 4, 5, 6])
    F[:, 8] = signed(on([5, 6, 7, 8, 9]))
    F[:, 9] = signed(on([7, 8, 9]))
    for j, card in ((10, 3), (11, 2), (12, 2)):
        col = F[:, j - 10].clone()
        flip = torch.rand(n_samples, generator=gen) < 0.2
        col[flip] = torch.randint(0, card, (int(flip.sum()),), generator=gen).double()
        F[:, j] = col
    for j in (13, 14):
        col = F[:, j - 10].clone()
        neg = torch.nonzero(col < 0).flatten()
        pick = neg[torch.randperm(neg.numel(), generator=gen)[: min(neg.numel(), n_samples // 5)]]
        col[pick] = -col[pick]
        F[:, j] = col
    F[:, 15] = torch.randint(0, 3, (n_samples,), generator=gen).double()
    F[:, 16] = torch.randint(0, 2, (n_samples,), generator=gen).double()
    F[:, 17:20] = torch.randn((n_samples, 3), generator=gen, dtype=torch.float64)
    return F.numpy(), y.numpy()


def _mixture_means(n_classes: int, mu: float) -> torch.Tensor:
    i = torch.arange(n_classes, dtype=torch.float64)
    return torch.stack([mu * i, mu * i], 1)


@fill_doc(**_FRAGMENTS)
def make_gaussian_mixture(n_samples: int, n_classes: int, *, mu: float = 0.5, variance: float = 0.1,
                          rho: float = 0.5, random_state: RandomStateLike = None) -> tuple[np.ndarray, np.ndarray]:
    """Two features from a mixture of ``n_classes`` bivariate normals (GMI paper, Fig. 1 setting).

    Class i (equal sizes, ``n_samples // n_classes`` each, the rest to the first classes) is
    N(mu_i, variance [[1, rho], [rho, 1]]) with ``mu_i = mu * (i, i)``. The paper's figure
    uses covariance ``0.1 I`` (``rho = 0``: the features are conditionally independent and
    the bound is 0) and refers to another paper for the means; ``rho`` makes the bound
    positive. :func:`gaussian_mixture_gmi_bound` gives the value the GMI estimate converges to.

    Parameters
    ----------
    %(n_samples)s
    %(mixture)s
    %(random_state)s

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
        The two features (float64).
    y : ndarray of shape (n_samples,)
        The class (int64), sorted.

    Raises
    ------
    ValueError
        ``rho`` outside (-1, 1).
    """
    if not -1 < rho < 1:
        raise ValueError(f"rho must be in (-1, 1), got {rho}")
    gen = make_generator(random_state, torch.device("cpu"))
    y = torch.arange(n_samples) % n_classes
    y = torch.sort(y).values
    L = torch.linalg.cholesky(variance * torch.tensor([[1.0, rho], [rho, 1.0]], dtype=torch.float64))
    z = torch.randn((n_samples, 2), generator=gen, dtype=torch.float64) @ L.T
    X = z + _mixture_means(n_classes, mu)[y]
    return X.numpy(), y.numpy()


@fill_doc(**_FRAGMENTS)
def gaussian_mixture_gmi_bound(n_classes: int, *, mu: float = 0.5, variance: float = 0.1, rho: float = 0.5,
                               grid: int = 1201) -> float:
    """Compute the conditional GMI lower bound of :func:`make_gaussian_mixture` (equal class priors).

    The bound is ``D_{1/2}(f, pi) = 1 - 2 int f pi / (f + pi)``, where ``f = sum_i p_i N(mu_i, S_rho)`` is the joint density and
    ``pi = sum_i p_i N(mu_i, variance I)`` the product of the class-conditional marginals.
    The densities are closed-form; the 2-D integral is evaluated by the tensor-product
    Simpson rule on a ``grid x grid`` lattice covering every mean +- 9 standard deviations
    (absolute error far below 1e-6 for the defaults).

    Parameters
    ----------
    %(mixture)s
    grid : int, default=1201
        Points per axis of the integration lattice (made odd for Simpson's rule).

    Returns
    -------
    float
        The bound, in [0, 1].
    """
    if grid % 2 == 0:
        grid += 1
    means = _mixture_means(n_classes, mu)
    sd = variance ** 0.5
    lo, hi = float(means.min()) - 9 * sd, float(means.max()) + 9 * sd
    t = torch.linspace(lo, hi, grid, dtype=torch.float64)
    h = (hi - lo) / (grid - 1)
    wts = torch.ones(grid, dtype=torch.float64)
    wts[1:-1:2], wts[2:-1:2] = 4.0, 2.0
    wts = wts * h / 3
    gx, gy = torch.meshgrid(t, t, indexing="ij")
    det = variance ** 2 * (1 - rho ** 2)
    f = torch.zeros_like(gx)
    pi = torch.zeros_like(gx)
    for m in means:  # loop over classes only
        dx, dy = gx - m[0], gy - m[1]
        q = (dx ** 2 - 2 * rho * dx * dy + dy ** 2) / (variance * (1 - rho ** 2))
        f += torch.exp(-0.5 * q) / (2 * torch.pi * det ** 0.5)
        pi += torch.exp(-0.5 * (dx ** 2 + dy ** 2) / variance) / (2 * torch.pi * variance)
    f, pi = f / n_classes, pi / n_classes
    s = f + pi
    integrand = torch.where(s > 0, f * pi / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(s))
    val = (wts.unsqueeze(1) * wts.unsqueeze(0) * integrand).sum()
    return float(1.0 - 2.0 * val)


@fill_doc(**_FRAGMENTS)
def make_planted(shape: str | tuple[int, int, int, int], *, rank: int = 10, concentration: float = 0.3,
                 random_state: RandomStateLike = 0, as_frame: bool = False, device: str = "cpu") -> Any:
    """Draw a labelled sample of a planted latent class model: the label is the CPD's last mode.

    Parameters
    ----------
    shape : str or (n_samples, n_features, n_values, n_classes)
        ``"planted-mnist70k"`` (70,000 x 784, 5 values, 10 classes), ``"planted-coil20"``
        (1,440 x 1,024, 5 values, 20 classes) or an explicit shape.
    rank : int, default=10
        Number of latent classes (components) of the planted model.
    %(planted)s
    random_state : int, numpy.random.Generator, torch.Generator or None, default=0
        Seed of the model and the sample (the default makes the planted sets reproducible).
    as_frame : bool, default=False
        Return ``X`` as a pandas DataFrame.
    %(cpu_device)s

    Returns
    -------
    Dataset
        ``X`` int64 codes (as float64 when ``as_frame`` is False, to match the real sets),
        ``y`` int64 labels; ``metadata`` also holds the true ``weights`` and ``factors``.
    """
    if isinstance(shape, str):
        key = _ALIASES.get(shape.lower(), shape.lower())
        if key not in PLANTED_SHAPES:
            raise ValueError(f"unknown planted shape {shape!r}; known: {', '.join(PLANTED_SHAPES)}")
        n, f, v, c, desc = PLANTED_SHAPES[key]
    else:
        try:
            n, f, v, c = (int(s) for s in shape)
        except (TypeError, ValueError) as exc:
            raise ValueError("shape must be a name or (n_samples, n_features, n_values, n_classes), "
                             f"got {shape!r}") from exc
        key, desc = f"planted-{n}x{f}", f"planted latent class sample {n} x {f}, {v} values, {c} classes"
        if c < 2:
            raise ValueError(f"a labelled planted set needs n_classes >= 2, got {c}")
    s = make_latent_class(n, [v] * f + [c], rank, concentration=concentration, random_state=random_state,
                          device=device)
    X, y = s.X[:, :f], s.X[:, f].astype(np.int64)
    meta = {"description": desc + f" (rank {rank})", "feature_names": [f"x{j}" for j in range(f)],
            "weights": s.weights, "factors": s.factors, "rank": rank}
    return _finish(X.astype(np.float64), y, meta, name=key, source="planted", as_frame=as_frame)
