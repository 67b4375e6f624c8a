"""GMI: feature selection by the conditional geometric mutual information lower bound (Sekeh and Hero).

For every pair of features (s, t) the lower bound ``I^(s, t)`` of the conditional
geometric mutual information ``I(X^(s), X^(t) | Y)`` (theorem 1) is estimated by the global
Friedman-Rafsky statistic over one Euclidean MST (Alg. 1; see
:mod:`tensorprob.information._mst`). The MSTs of all pairs are built in batches on the
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
to 0) because the MST uses Euclidean distances. To rank principal components instead (the
paper's MNIST protocol used 30), put a PCA in front:
``make_pipeline(StandardScaler(), PCA(n_components=30), GMI(k=10))``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._device import make_generator
from .._docstrings import fill_doc
from ..information._mst import class_pair_cross_edges, pairwise_gmi
from ._base import RealSelector
from ._docs import SELECTOR_FRAGMENTS

__all__ = ["GMI", "PairwiseDp", "eliminate_by_total_dependency"]


def _standardized(selector, X: np.ndarray, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Zero-mean, unit-variance columns (constant ones become 0); sets ``mean_`` and ``scale_``."""
    X = np.asarray(X)
    # torch shares a NumPy array's memory and warns when that array is read-only: copy only then
    Xt = torch.as_tensor(X if X.flags.writeable else X.copy(), dtype=dtype, device=device)
    mean = Xt.mean(0)
    std = Xt.std(0) if Xt.shape[0] > 1 else torch.zeros_like(mean)
    scale = torch.where(std > 0, std, torch.ones_like(std))
    selector.mean_ = mean.cpu().numpy()
    selector.scale_ = scale.cpu().numpy()
    return (Xt - mean) / scale


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


@fill_doc(**SELECTOR_FRAGMENTS)
class GMI(RealSelector):
    """GMI (conditional geometric mutual information) feature selection with the global FR statistic.

    The FR (Friedman-Rafsky) statistic counts the edges of a Euclidean minimum spanning tree
    that join the two samples; see the module docstring for the elimination rule.

    Parameters
    ----------
    %(k)s
    %(device_dtype_random_state)s
        Here it draws the half split and the within-class permutations of Alg. 1.
    distributed : bool, default=False
        Not supported: ``distributed=True`` raises a ``ValueError``, because its Friedman-Rafsky
        statistic counts the edges of a Euclidean minimum spanning tree over all samples, and a
        spanning tree is not a sum over rows: the trees of each rank's rows do not combine into
        the tree of all of them.

    Attributes
    ----------
    selected_ : ndarray of shape (k,)
        Kept features in ranking order: the last to be eliminated first.
    scores_ : ndarray of shape (k,)
        Total estimated pairwise conditional dependency of each kept feature on the features
        remaining when it was eliminated (the first is 0).
    dependency_ : ndarray of shape (n_features, n_features)
        Estimated pairwise conditional GMI lower bounds.
    ranking_ : ndarray of shape (n_features,)
        Full ranking.
    mean_, scale_ : ndarray of shape (n_features,)
        Standardization of the input (used by the estimator, not by ``transform``).
    %(real_attributes)s

    See Also
    --------
    HOFS : The other selector on real values.

    Notes
    -----
    See the module docstring of ``tensorprob.selection._gmi`` for the elimination rule and
    preprocessing, and :mod:`tensorprob.information._mst` for the estimator and MST ties.
    To rank principal components, put a PCA in front of GMI in a pipeline (last example):
    ``get_feature_names_out`` then names the kept components (``pca0``, ...).

    References
    ----------
    .. [1] Sekeh, S. Y. and Hero, A. O. Feature selection for multi-labeled variables via dependency
       maximization. ICASSP 2019.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from tensorprob import GMI
    >>> X, y = load_wine(return_X_y=True)
    >>> GMI(k=3, random_state=0).fit(X, y).selected_.shape
    (3,)
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> pipe = make_pipeline(StandardScaler(), PCA(n_components=6), GMI(k=2, random_state=0)).fit(X, y)
    >>> pipe.transform(X).shape, len(pipe.get_feature_names_out())
    ((178, 2), 2)
    """

    method_name = "gmi"
    _no_distributed = (
        "its Friedman-Rafsky statistic counts the edges of a Euclidean minimum spanning tree over all "
        "samples, and a spanning tree is not a sum over rows: the trees of each rank's rows do not combine "
        "into the tree of all of them."
    )

    def __init__(self, k: int | str = 10, *, device: Any = "auto", dtype: Any = None, random_state: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.device = device
        self.dtype = dtype
        self.random_state = random_state
        self.distributed = distributed

    def _select_real(self, X, y, n_classes, k, device, dtype):
        if np.bincount(y).min() < 2:
            raise ValueError("GMI needs at least 2 samples of every class (one per half of the split)")
        gen = make_generator(self.random_state, device)
        Z = _standardized(self, X, device, dtype)
        if X.shape[1] == 1:
            self.dependency_ = np.zeros((1, 1))
            ranking, totals = [0], [0.0]
        else:
            res = pairwise_gmi(Z, torch.as_tensor(y, device=device), generator=gen)
            self.dependency_ = res.matrix.cpu().numpy()
            ranking, totals = eliminate_by_total_dependency(res.matrix)
        self.ranking_ = np.asarray(ranking, dtype=np.int64)
        return self.ranking_[:k].copy(), totals[:k]


@fill_doc(**SELECTOR_FRAGMENTS)
class PairwiseDp(RealSelector):
    """Greedy forward selection by the pairwise Friedman-Rafsky bound on the Bayes error (the "Dp" baseline).

    For a feature subset S, the samples of every pair of classes (i, j) span a Euclidean
    minimum spanning tree over the columns S; ``C_ij`` counts its edges that join class i to
    class j (the Friedman-Rafsky statistic, which estimates the Henze-Penrose divergence
    D_p of the two class densities). The multi-class Bayes error is bounded by

        err_Bayes(S) <= 2 sum_{i<j} delta_ij  ~  U(S) = sum_{i<j} C_ij / n_samples,

    ``delta_ij = int p_i f_i p_j f_j / (p_i f_i + p_j f_j)`` (derivation in
    :mod:`tensorprob.information._mst`). Starting from the empty set, each step adds the
    feature whose subset has the smallest ``U``; ties go to the lowest feature index. The
    trees of all candidates and all class pairs of a step are built in one batch.

    Parameters
    ----------
    %(k)s
    %(device)s
    %(dtype)s
    distributed : bool, default=False
        Not supported: ``distributed=True`` raises a ``ValueError``, because the statistic
        counts edges of spanning trees over all samples of two classes, and the trees of each
        rank's rows do not combine into the tree of all of them.

    Attributes
    ----------
    selected_ : ndarray of shape (k,)
        Features in the order they were added.
    scores_ : ndarray of shape (k,)
        ``U`` of the subset after each addition: the estimated upper bound on the Bayes error
        of the first 1, 2, ... selected features.
    cross_edges_ : ndarray of shape (k, n_classes (n_classes - 1) / 2)
        ``C_ij`` of every class pair after each addition, pairs in the order of
        ``numpy.triu_indices(n_classes, 1)``.
    mean_, scale_ : ndarray of shape (n_features,)
        Standardization of the input (used by the estimator, not by ``transform``).
    %(real_attributes)s

    See Also
    --------
    GMI : The same paper's selector, one global tree per feature pair.

    Notes
    -----
    Features are standardized (zero mean, unit variance, constant features 0) because the
    trees use Euclidean distances, as in :class:`GMI`. The paper compares against "the
    pairwise Dp algorithm ... applied to select features with minimum total multi-class Bayes
    error upper bound" of Berisha et al. without giving the search; the greedy forward search
    is our reading. The bound is an estimate: ``C_ij`` is an integer, so subsets often tie,
    and the lowest index wins.

    Cost: step t builds, for each of the remaining candidates and each of the
    ``m (m - 1) / 2`` class pairs, one dense-Prim tree over the pair's ``2 n_samples / m``
    samples in t dimensions: about ``2 n_features n_samples^2 t (m - 1) / m`` operations per
    step for m balanced classes. Meant for tens of features (the paper ranks 30 principal
    components); the trees of a step are chunked to the memory budget.

    References
    ----------
    .. [1] Berisha, V., Wisler, A., Hero, A. O. and Spanias, A. (2016). Empirically estimable
       classification bounds based on a nonparametric divergence measure. IEEE Transactions on
       Signal Processing 64(3), 580-591.
    .. [2] Sekeh, S. Y. and Hero, A. O. Feature selection for multi-labeled variables via dependency
       maximization. ICASSP 2019.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from tensorprob import PairwiseDp
    >>> X, y = load_wine(return_X_y=True)
    >>> sel = PairwiseDp(k=3).fit(X, y)
    >>> sel.selected_.shape, bool(sel.scores_[-1] < 0.5)
    ((3,), True)
    """

    method_name = "pairwise_dp"
    _no_distributed = (
        "its Friedman-Rafsky statistic counts the edges of Euclidean minimum spanning trees over all samples "
        "of two classes, and the trees of each rank's rows do not combine into the tree of all of them."
    )

    def __init__(self, k: int | str = 10, *, device: Any = "auto", dtype: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.device = device
        self.dtype = dtype
        self.distributed = distributed

    def _select_real(self, X, y, n_classes, k, device, dtype):
        Z = _standardized(self, X, device, dtype)
        yt = torch.as_tensor(y, device=device)
        n, N = Z.shape
        remaining = torch.ones(N, dtype=torch.bool, device=device)
        chosen: list[int] = []
        bounds, cross = [], []
        for _ in range(k):
            cand = torch.nonzero(remaining).flatten()  # ascending: argmin's first minimum is the lowest index
            base = Z[:, chosen].T  # (t, n)
            sets = torch.cat([base.unsqueeze(0).expand(cand.numel(), -1, -1), Z[:, cand].T.unsqueeze(1)], 1)
            counts = class_pair_cross_edges(sets.transpose(1, 2), yt, n_classes)  # (candidates, pairs)
            best = int(torch.argmin(counts.sum(1)))
            j = int(cand[best])
            chosen.append(j)
            remaining[j] = False
            cross.append(counts[best].cpu().numpy())
            bounds.append(float(counts[best].sum()) / n)
        self.cross_edges_ = np.asarray(cross, dtype=np.int64).reshape(len(chosen), -1)
        return np.asarray(chosen, dtype=np.int64), np.asarray(bounds, dtype=np.float64)
