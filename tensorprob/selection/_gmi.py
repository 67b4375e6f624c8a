"""GMI: feature selection by the conditional geometric MI lower bound (Sekeh and Hero).

For every pair of features (s, t) the lower bound ``I^(s, t)`` of the conditional
geometric mutual information ``I(X^(s), X^(t) | Y)`` (theorem 1) is estimated by the global
Friedman-Rafsky statistic over one Euclidean MST (Alg. 1; see
:mod:`tensorprob.estimators._mst`). The MSTs of all pairs are built in batches on the
device. Features with a large total pairwise conditional dependency are redundant and are
eliminated first (paper, section 1: "the dependency measure (1) is sorted and features with
higher total pairwise measures are filtered out").

Elimination rule (our reading, stated): recursive. Starting from all features, the
feature with the largest total ``sum_{t in R, t != s} I^(s, t)`` over the remaining set R
is removed, the totals are recomputed on the smaller set, and so on down to one feature.
The ranking is the reverse order of elimination, ``selected_`` its first ``k`` entries (so
the result for k is a prefix of the result for k + 1). Among equal totals the feature with
the highest index is eliminated first, so ties favour the lowest index.

Preprocessing: features are standardized (zero mean, unit variance; constant features set
to 0) because the MST uses Euclidean distances; with ``n_components`` the standardized
data are first projected on their leading principal components (the paper's MNIST
protocol used 30) and the selector then ranks components.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .._device import make_generator, resolve_device, resolve_dtype
from ..information._mst import pairwise_gmi
from ._continuous import validate_real_xy

__all__ = ["GMI", "eliminate_by_total_dependency"]


def eliminate_by_total_dependency(D: torch.Tensor) -> tuple[list[int], list[float]]:
    """Recursive elimination on a symmetric dependency matrix (zero diagonal).

    Returns the ranking (last survivor first) and, per ranked feature, its total dependency
    on the features still present when it was eliminated (0 for the last survivor).
    """
    d = D.shape[0]
    remaining = torch.ones(d, dtype=torch.bool, device=D.device)
    Dm = D.clone()
    Dm.fill_diagonal_(0)
    order, totals = [], []
    idx_desc = torch.arange(d - 1, -1, -1, device=D.device)
    for _ in range(d):
        tot = (Dm * remaining.to(Dm.dtype).unsqueeze(0)).sum(1)
        tot = torch.where(remaining, tot, torch.full_like(tot, -float("inf")))
        # highest total; among ties the highest index (argmax over the reversed order)
        j = int(idx_desc[int(torch.argmax(tot[idx_desc]))])
        order.append(j)
        totals.append(float(tot[j]))
        remaining[j] = False
    return order[::-1], totals[::-1]


class GMI(SelectorMixin, BaseEstimator):
    """Conditional geometric-MI feature selection with the global FR statistic (Sekeh and Hero).

    Parameters
    ----------
    k : int or "all", default=10
        Number of features (components, with ``n_components``) to keep.
    n_components : int or None, default=None
        Rank features after projecting the standardized data on this many principal
        components (the paper used 30 on MNIST). None: the raw (standardized) features.
    device : str or torch.device, default="auto"
    dtype : str or torch.dtype, optional
    random_state : int, Generator or None, default=None
        Seeds the half split and the within-class permutations of Alg. 1.

    Attributes
    ----------
    selected_ : ndarray of shape (k,)
        Kept features (or components) in ranking order: the last to be eliminated first.
    scores_ : ndarray of shape (k,)
        Total estimated pairwise conditional dependency of each kept feature on the features
        remaining when it was eliminated (the first is 0).
    dependency_ : ndarray of shape (d, d)
        Estimated pairwise conditional GMI lower bounds (d features or components).
    ranking_ : ndarray of shape (d,)
        Full ranking.
    mean_, scale_ : ndarray of shape (n_features,)
        Standardization of the input.
    components_, component_scale_ : ndarrays
        The PCA projection and the standard deviations of the component scores (with
        ``n_components``); ``transform`` returns the selected standardized scores.
    n_features_in_ : int

    Notes
    -----
    See the module docstring of ``tensorprob.selection._gmi`` for the elimination rule and
    preprocessing, and :mod:`tensorprob.estimators._mst` for the estimator and MST ties.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from tensorprob import GMI
    >>> X, y = load_wine(return_X_y=True)
    >>> GMI(k=3, random_state=0).fit(X, y).selected_.shape
    (3,)
    """

    _parameter_constraints: dict = {  # noqa: RUF012 (scikit-learn's convention)
        "k": [Integral, str],
        "n_components": [Integral, None],
        "device": [str, torch.device, None],
        "dtype": [str, torch.dtype, None],
        "random_state": ["random_state", torch.Generator],
    }

    def __init__(self, k=10, *, n_components=None, device="auto", dtype=None, random_state=None):
        self.k = k
        self.n_components = n_components
        self.device = device
        self.dtype = dtype
        self.random_state = random_state

    def fit(self, X, y):
        """Estimate the pairwise dependencies and eliminate features down to ``k``."""
        nc = self.n_components
        if nc is not None and (isinstance(nc, bool) or not isinstance(nc, Integral) or nc < 1):
            raise ValueError(f"n_components must be None or a positive int, got {nc!r}")
        Xv, codes, _ = validate_real_xy(self, X, y, "all")
        d = Xv.shape[1] if nc is None else int(nc)
        if nc is not None and nc > min(Xv.shape):
            raise ValueError(f"n_components={nc} exceeds min(n_samples, n_features)={min(Xv.shape)}")
        k = self.k
        if isinstance(k, str) and k == "all":
            k = d
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, Integral) or not 1 <= int(k) <= d:
            raise ValueError(f"k must be an int in [1, {d}] or 'all', got {self.k!r}")
        if np.bincount(codes).min() < 2:
            raise ValueError("GMI needs at least 2 samples of every class (one per half of the split)")
        dev = resolve_device(self.device)
        dt = resolve_dtype(self.dtype, dev)
        gen = make_generator(self.random_state, dev)
        Xt = torch.as_tensor(Xv, dtype=dt, device=dev)
        mean = Xt.mean(0)
        std = Xt.std(0)
        scale = torch.where(std > 0, std, torch.ones_like(std))
        Z = (Xt - mean) / scale
        self.mean_ = mean.cpu().numpy()
        self.scale_ = scale.cpu().numpy()
        if nc is not None:
            _, _, Vh = torch.linalg.svd(Z, full_matrices=False)
            comps = Vh[:nc]
            Z = Z @ comps.T
            cstd = Z.std(0)
            cstd = torch.where(cstd > 0, cstd, torch.ones_like(cstd))
            Z = Z / cstd
            self.components_ = comps.cpu().numpy()
            self.component_scale_ = cstd.cpu().numpy()
        if d == 1:
            self.dependency_ = np.zeros((1, 1))
            ranking, totals = [0], [0.0]
        else:
            res = pairwise_gmi(Z, torch.as_tensor(codes, device=dev), generator=gen)
            self.dependency_ = res.matrix.cpu().numpy()
            ranking, totals = eliminate_by_total_dependency(res.matrix)
        self.ranking_ = np.asarray(ranking, dtype=np.int64)
        self.selected_ = self.ranking_[: int(k)].copy()
        self.scores_ = np.asarray(totals[: int(k)], dtype=np.float64)
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "selected_")
        d = self.n_features_in_ if self.n_components is None else self.components_.shape[0]
        mask = np.zeros(d, dtype=bool)
        mask[self.selected_] = True
        return mask

    def transform(self, X):
        """Keep the selected features (with ``n_components``: the selected component scores)."""
        if self.n_components is None:
            return super().transform(X)
        check_is_fitted(self, "selected_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Z = (X - self.mean_) / self.scale_
        return ((Z @ self.components_.T) / self.component_scale_)[:, self.selected_]
