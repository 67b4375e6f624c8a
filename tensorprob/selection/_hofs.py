"""HOFS: higher-order feature selection through incremental ICA (Wu, Gupta and Bajaj).

Criterion
---------
Forward search by eq. 25: with the selected features split into subsets (groups)
``Omega^1 .. Omega^K``,

    f_t = argmax_i  I(x_i; y) + sum_j I(X_{Omega^j}; y | x_i),
    I(X_g; y | x_i) = H(y | x_i) - H(y | X_g, x_i).

``I(x_i; y)`` is the plug-in estimate (natural log) on the features min-max scaled to
[0, 1] and cut into bins ``bin_width`` wide (0.2: five bins, as the authors' R package).
``H(y | x_i) = H(x_i, y) - H(x_i)`` is, by default (``conditional="ica"``), estimated with
the same incremental ICA as the other term (the ICA of ``(x_i, y)``), so that the
difference of the two conditional entropies is "balanced" (section 4.5) and the estimator
biases of the linear ICA model cancel; ``conditional="plugin"`` uses the plug-in
``H^(x_i, y) - H^(x_i)`` on the bins, as the authors' R package. With the plug-in, every
conditional term carries ``-I^(x_i; y)`` plus the (larger) linear-model entropy, and on the
tree model of section 6.1 it picks the weakest features first and mixes the subsets. ``H(y | X_g, x_i)`` comes from the incremental ICA of eq. 24:
the unmixing matrix of ``(X_g, x_i, y)`` is lower triangular and only its last row, the
one of y, is learned (infomax likelihood with the logistic CDF, eq. 10-11; see
:mod:`tensorprob.estimators._ica`), for every candidate i at once. With ``s_y`` the new
source and ``W_yy`` its diagonal weight,

    H(y | X_g, x_i) = H(s_y) - log W_yy = h(r),  r = s_y / W_yy  (the innovation of y).

Sign. Paper eq. 24 writes ``-H(X_g u x_i) + H(X_g u x_i u y)`` in its first line where the
definition of conditional entropy gives ``+H(X_g u x_i) - H(X_g u x_i u y)``; its final
expression ``+ H(s_y) + log a`` therefore has the opposite sign of the correct
``- H(s_y) - log a = - H(s_y) + log W_yy``. tensorprob uses the correct sign (the paper's
would reward candidates that leave y *less* predictable).

Discrete labels. y enters the ICA as the number ``y' = (c + U) / C`` for class code c of C
classes, ``U ~ Uniform(0, 1)`` drawn once (seeded): a dithered embedding with density, for
which ``h(y' | .) = H(y | .) - log C`` exactly. So ``H(y | X_g, x_i) = h^(r) + log C`` where
h^ is the corrected m-spacing estimator (consistent), and ``h(r) + log C >= H(y | X_g, x_i)``
for every row (the estimate is an upper bound on the conditional entropy, so each term is a
lower bound of the linear-ICA kind). The ordering of the classes in this embedding is their
sorted order, as in the authors' code, which treats y as a numeric column.

Subsets (section 4.7, eq. 26-27). A newly selected feature joins the subset with the
largest mean signed Pearson correlation between it and the subset's members if that
maximum exceeds ``threshold`` (default 0.2, the R package's value); otherwise it starts a
new subset.

Only the subset that changed at a step needs new ICA rows; the terms of the other subsets
are kept from earlier steps.

Constant features (zero range) carry no information. They are only picked once every
non-constant feature is selected (the R package drops near-constant columns).
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin

from .._device import chunk_rows, make_generator, resolve_device, resolve_dtype
from ..information._ica import fit_last_rows, spacing_entropy
from ._continuous import validate_real_xy

__all__ = ["HOFS", "hofs_select"]


def _entropy_from_counts(counts: torch.Tensor, n: int) -> torch.Tensor:
    p = counts / n
    return -(torch.where(p > 0, p * torch.log(torch.where(p > 0, p, torch.ones_like(p))), torch.zeros_like(p))).sum(-1)


def _plugin_terms(bins: torch.Tensor, y: torch.Tensor, n_bins: int, n_classes: int):
    """I(x_i; y) and H(y | x_i) for every column of the bin codes (N, M)."""
    N, M = bins.shape
    dev = bins.device
    offs = torch.arange(M, device=dev).unsqueeze(0)
    cx = torch.bincount((offs * n_bins + bins).reshape(-1), minlength=M * n_bins).reshape(M, n_bins).to(torch.float64)
    joint = (offs * (n_bins * n_classes) + bins * n_classes + y.unsqueeze(1)).reshape(-1)
    cxy = torch.bincount(joint, minlength=M * n_bins * n_classes).reshape(M, n_bins * n_classes).to(torch.float64)
    cy = torch.bincount(y, minlength=n_classes).to(torch.float64)
    hx = _entropy_from_counts(cx, N)
    hxy = _entropy_from_counts(cxy, N)
    hy = _entropy_from_counts(cy.unsqueeze(0), N)[0]
    return (hx + hy - hxy).clamp_min(0), hxy - hx, hy


def hofs_select(
    X: torch.Tensor,
    y: torch.Tensor,
    k: int,
    *,
    n_classes: int,
    generator: torch.Generator,
    bin_width: float = 0.2,
    threshold: float = 0.2,
    solver: str = "newton",
    max_iter: int = 50,
    conditional: str = "ica",
    dither: float = 1.0,
    memory_budget: int | None = None,
):
    """HOFS forward search on a real matrix; returns (selected, scores, subsets, relevance).

    Parameters
    ----------
    X : torch.Tensor of shape (N, M), floating
    y : torch.Tensor of shape (N,), int64 class codes ``0 .. n_classes - 1``
    k : int
    n_classes : int
    generator : torch.Generator
        Dither of the label embedding and random starts of the ICA rows.
    bin_width, threshold, solver, max_iter, conditional, memory_budget
        See :class:`HOFS`.
    dither : float
        Width, in class spacings, of the uniform dither of the label embedding (1: the
        full spacing, which gives the tightest bound in our tests; ``log C`` becomes
        ``log C - log dither``).
    """
    N, M = X.shape
    dev, dt = X.device, X.dtype
    lo, hi = X.min(0).values, X.max(0).values
    rng = hi - lo
    constant = rng <= 0
    Xs = torch.where(constant, torch.zeros_like(X), (X - lo) / torch.where(constant, torch.ones_like(rng), rng))
    n_bins = max(1, math.ceil(1.0 / bin_width - 1e-12))
    bins = torch.clamp((Xs / bin_width).floor().long(), 0, n_bins - 1)
    relevance, h_y_given_x, _ = _plugin_terms(bins, y, n_bins, n_classes)
    relevance, h_y_given_x = relevance.to(dt), h_y_given_x.to(dt)
    # dithered label embedding in [0, 1) and centred data
    y_num = (y.to(dt) + dither * torch.rand(N, generator=generator, device=dev, dtype=dt)) / n_classes
    Xc = Xs - Xs.mean(0)
    yc = (y_num - y_num.mean()).unsqueeze(1)
    log_c = math.log(n_classes) - math.log(dither)
    std = Xc.std(0)
    Xn = torch.where(std > 0, Xc / torch.where(std > 0, std, torch.ones_like(std)), torch.zeros_like(Xc))

    selected: list[int] = []
    scores: list[float] = []
    subsets: list[list[int]] = []
    group_terms: list[torch.Tensor] = []  # (M,) cached I(X_g; y | x_i) per subset
    available = torch.ones(M, dtype=torch.bool, device=dev)
    neg_inf = torch.tensor(-float("inf"), dtype=dt, device=dev)

    def h_lin(members: list[int], cand: torch.Tensor) -> torch.Tensor:
        """ICA estimate of H(y | X_members, x_i) for the candidates ``cand``."""
        out = torch.zeros(cand.numel(), dtype=dt, device=dev)
        p = len(members) + 2
        per = chunk_rows(N * p * 6 * X.element_size(), max(1, cand.numel()), memory_budget)
        base = Xc[:, members]
        for s in range(0, cand.numel(), per):
            c = cand[s:s + per]
            b = c.numel()
            if b == 0:
                continue
            Z = torch.cat([
                base.unsqueeze(0).expand(b, N, len(members)),
                Xc[:, c].T.unsqueeze(2),
                yc.unsqueeze(0).expand(b, N, 1),
            ], dim=2)
            w, _ = fit_last_rows(Z, generator=generator, solver=solver, max_iter=max_iter)
            r = torch.einsum("bnp,bp->bn", Z, w) / w[:, -1:].clamp_min(torch.finfo(w.dtype).tiny)
            out[s:s + b] = spacing_entropy(r) + log_c
        return out

    if conditional == "ica":  # H(y | x_i) from the same ICA family: balanced difference
        h_y_given_x = h_lin([], torch.arange(M, device=dev))

    def group_term(members: list[int]) -> torch.Tensor:
        cand = torch.nonzero(available, as_tuple=False).flatten()
        out = torch.zeros(M, dtype=dt, device=dev)
        out[cand] = h_y_given_x[cand] - h_lin(members, cand)
        return out

    def assign(f: int) -> int:
        """Subset of a new feature by the mean signed correlation (eq. 26-27); -1: a new one."""
        best_g, best_c = -1, -float("inf")
        for gi, members in enumerate(subsets):
            corr = float((Xn[:, members] * Xn[:, f:f + 1]).sum(0).mean() / max(N - 1, 1))
            if corr > best_c:
                best_g, best_c = gi, corr
        return best_g if best_c > threshold else -1

    for t in range(k):
        score = relevance.clone()
        for term in group_terms:
            score = score + term
        eligible = available & ~constant
        if not bool(eligible.any()):
            eligible = available
        masked = torch.where(eligible, score, neg_inf)
        f = int(torch.argmax(masked))  # first maximum: ties go to the lowest index
        selected.append(f)
        scores.append(float(score[f]))
        available[f] = False
        g = assign(f)
        if g >= 0:
            subsets[g].append(f)
        else:
            subsets.append([f])
        if t < k - 1:  # the last pick's ICA terms are never used
            if g >= 0:
                group_terms[g] = group_term(subsets[g])
            else:
                group_terms.append(group_term([f]))
    return selected, scores, subsets, relevance


class HOFS(SelectorMixin, BaseEstimator):
    """Higher-order feature selection by incremental ICA (Wu, Gupta and Bajaj).

    Parameters
    ----------
    k : int or "all", default=10
        Number of features to select.
    bin_width : float, default=0.2
        Width of the plug-in entropy bins on features min-max scaled to [0, 1].
    threshold : float, default=0.2
        Subset rule C of eq. 26-27: a feature joins the subset with the largest mean signed
        correlation when that exceeds ``threshold``, else starts a new subset.
    solver : {"newton", "gradient"}, default="newton"
        Optimizer of the ICA rows (same maximizer; "gradient" is eq. 11's ascent).
    max_iter : int, default=50
        Newton iterations of the ICA rows.
    conditional : {"ica", "plugin"}, default="ica"
        Estimator of ``H(y | x_i)`` in eq. 24 (see Notes).
    device : str or torch.device, default="auto"
    dtype : str or torch.dtype, optional
    random_state : int, Generator or None, default=None
        Seeds the label dither and the ICA starts.

    Attributes
    ----------
    selected_ : ndarray of shape (k,)
        Selected feature indices in the order picked.
    scores_ : ndarray of shape (k,)
        Eq. 25 criterion (nats) of each feature when it was picked (the first: I(x; y)).
    subsets_ : list of lists of int
        The feature subsets (section 4.7), in order of creation, members in order of selection.
    relevance_ : ndarray of shape (n_features,)
        Plug-in I(x_i; y) in nats.
    n_iter_ : int
        Number of forward-search steps (= k).
    n_features_in_ : int
    feature_names_in_ : ndarray, when X has string column names.

    Notes
    -----
    See the module docstring of ``tensorprob.selection._hofs`` for the estimator of every
    term, the sign correction of eq. 24 and the handling of the discrete label. Ties break
    to the lowest feature index.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from tensorprob import HOFS
    >>> X, y = load_wine(return_X_y=True)
    >>> HOFS(k=3, random_state=0).fit(X, y).selected_.shape
    (3,)
    """

    _parameter_constraints: dict = {  # noqa: RUF012 (scikit-learn's convention)
        "k": [Integral, str],
        "bin_width": [Real],
        "threshold": [Real],
        "solver": [str],
        "max_iter": [Integral],
        "conditional": [str],
        "device": [str, torch.device, None],
        "dtype": [str, torch.dtype, None],
        "random_state": ["random_state", torch.Generator],
    }

    def __init__(self, k=10, *, bin_width=0.2, threshold=0.2, solver="newton", max_iter=50,
                 conditional="ica", device="auto", dtype=None, random_state=None):
        self.k = k
        self.bin_width = bin_width
        self.threshold = threshold
        self.solver = solver
        self.max_iter = max_iter
        self.conditional = conditional
        self.device = device
        self.dtype = dtype
        self.random_state = random_state

    def fit(self, X, y):
        """Select ``k`` features of ``X`` for the labels ``y``."""
        X, codes, k = validate_real_xy(self, X, y, self.k)
        if not (isinstance(self.bin_width, Real) and 0 < self.bin_width <= 1):
            raise ValueError(f"bin_width must be a float in (0, 1], got {self.bin_width!r}")
        if not isinstance(self.threshold, Real) or not np.isfinite(self.threshold):
            raise ValueError(f"threshold must be a finite float, got {self.threshold!r}")
        if self.solver not in ("newton", "gradient"):
            raise ValueError(f"solver must be 'newton' or 'gradient', got {self.solver!r}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, Integral) or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive int, got {self.max_iter!r}")
        if self.conditional not in ("ica", "plugin"):
            raise ValueError(f"conditional must be 'ica' or 'plugin', got {self.conditional!r}")
        dev = resolve_device(self.device)
        dt = resolve_dtype(self.dtype, dev)
        gen = make_generator(self.random_state, dev)
        Xt = torch.tensor(X, dtype=dt, device=dev)
        yt = torch.as_tensor(codes, device=dev)
        sel, scores, subsets, rel = hofs_select(
            Xt, yt, k, n_classes=len(self.classes_), generator=gen, bin_width=float(self.bin_width),
            threshold=float(self.threshold), solver=self.solver, max_iter=int(self.max_iter),
            conditional=self.conditional,
        )
        self.selected_ = np.asarray(sel, dtype=np.int64)
        self.scores_ = np.asarray(scores, dtype=np.float64)
        self.subsets_ = [list(map(int, s)) for s in subsets]
        self.n_iter_ = len(sel)
        self.relevance_ = rel.detach().cpu().numpy().astype(np.float64)
        return self

    def _get_support_mask(self):
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_] = True
        return mask
