"""Graph-Laplacian baselines of paper 004's Table 5: Trace ratio (Nie et al. 2008) and SPEC (Zhao and Liu 2007).

Both work on the real values of the features (no encoding), in their supervised form, with
graphs whose weights depend only on the classes. Such a graph is block-constant, so every
quadratic form ``f^T L f`` of its Laplacian reduces to class sums:

- within-class scatter ``w(f) = sum_i (f_i - m_{y_i})^2`` (``m_c`` the mean of class c),
- between-class scatter ``b(f) = sum_c n_c (m_c - m)^2`` (``m`` the overall mean),
- total scatter ``t(f) = w(f) + b(f) = sum_i (f_i - m)^2``.

One pass over the data gives them for all features: O(n_samples x n_features) time and
memory, no n_samples x n_samples matrix and no eigendecomposition. The tests check every
score against the explicit Laplacians and traces.

Exact zeros: each column is shifted by its first value before the sums, so a constant column
gives exactly ``b = w = t = 0`` (its treatment is documented by each selector).
"""
from __future__ import annotations

from numbers import Integral
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from .._docstrings import fill_doc
from ._base import RealSelector
from ._docs import SELECTOR_FRAGMENTS

__all__ = ["SPEC", "TraceRatio", "class_scatter"]


class Scatter(NamedTuple):
    """Per-feature scatters of a real matrix with respect to the classes (tensors of shape (n_features,)).

    Parameters
    ----------
    between : torch.Tensor
        ``sum_c n_c (m_c - m)^2``.
    within : torch.Tensor
        ``sum_i (x_i - m_{y_i})^2``.
    total : torch.Tensor
        ``sum_i (x_i - m)^2`` (= between + within up to rounding).
    sqnorm : torch.Tensor
        ``sum_i x_i^2``, the uncentered squared norm.
    constant : torch.Tensor
        Bool, the features with a single value.
    """

    between: torch.Tensor
    within: torch.Tensor
    total: torch.Tensor
    sqnorm: torch.Tensor
    constant: torch.Tensor


def class_scatter(X: torch.Tensor, y: torch.Tensor, n_classes: int, distributed: bool = False) -> Scatter:
    """Between-, within-class and total scatter of every column of ``X``, from class sums.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_features)
        Real values.
    y : torch.Tensor of shape (n_samples,)
        Class codes ``0 .. n_classes - 1``.
    n_classes : int
        Number of classes.
    distributed : bool, default=False
        ``X`` and ``y`` are this rank's rows of data spread over an initialized
        ``torch.distributed`` process group: every rank gets the scatters of all rows. The
        class counts and sums are all-reduced (one float64 collective), then the squared
        deviations from the global means (a second one), both offset by the first row of the
        lowest rank that has rows.

    Returns
    -------
    Scatter
        The scatters, in the dtype of ``X``; O(n_samples x n_features) time and memory.
    """
    if distributed:
        return _class_scatter_distributed(X, y, n_classes)
    n = X.shape[0]
    constant = (X == X[:1]).all(0)
    Z = X - X[:1]  # exact zeros for a constant column, and no large offsets in the sums
    counts = torch.bincount(y, minlength=n_classes).to(X.dtype)
    sums = torch.zeros(n_classes, X.shape[1], dtype=X.dtype, device=X.device).index_add_(0, y, Z)
    present = counts > 0
    means = sums[present] / counts[present].unsqueeze(1)  # (classes present, N)
    mean = Z.sum(0) / n
    index = torch.cumsum(present.to(torch.long), 0) - 1  # class code -> row of means
    within = ((Z - means[index[y]]) ** 2).sum(0)
    between = (counts[present].unsqueeze(1) * (means - mean) ** 2).sum(0)
    total = ((Z - mean) ** 2).sum(0)
    sqnorm = (X * X).sum(0)
    zero = torch.zeros((), dtype=X.dtype, device=X.device)
    within, between, total = (torch.where(constant, zero, v) for v in (within, between, total))
    return Scatter(between, within, total, sqnorm, constant)


def _class_scatter_distributed(X: torch.Tensor, y: torch.Tensor, n_classes: int) -> Scatter:
    """:func:`class_scatter` of the rows of all ranks (two all-reduces of per-class and per-column sums)."""
    from .. import _distributed

    N = X.shape[1]
    firsts = _distributed.all_gather(X[:1].double().cpu().numpy() if X.shape[0] else None)
    first = torch.as_tensor(next(f for f in firsts if f is not None), dtype=X.dtype, device=X.device)
    Z = X - first  # the single-process offset: the first row of all the data
    counts = torch.bincount(y, minlength=n_classes).to(X.dtype)
    sums = torch.zeros(n_classes, N, dtype=X.dtype, device=X.device).index_add_(0, y, Z)
    varying = (Z != 0).any(0).to(X.dtype)
    sqnorm = (X * X).sum(0)
    glob = _distributed.all_reduce_sum(torch.cat([counts, sums.reshape(-1), Z.sum(0), varying, sqnorm]))
    glob = glob.to(X.dtype)
    C = n_classes
    counts, sums = glob[:C], glob[C:C + C * N].view(C, N)
    zsum, varying, sqnorm = glob[C + C * N:C + C * N + N], glob[C + C * N + N:C + C * N + 2 * N], glob[-N:]
    n = counts.sum()
    constant = varying == 0
    present = counts > 0
    means = sums[present] / counts[present].unsqueeze(1)
    mean = zsum / n
    index = torch.cumsum(present.to(torch.long), 0) - 1
    local = torch.cat([((Z - means[index[y]]) ** 2).sum(0), ((Z - mean) ** 2).sum(0)])
    within, total = _distributed.all_reduce_sum(local).to(X.dtype).view(2, N)
    between = (counts[present].unsqueeze(1) * (means - mean) ** 2).sum(0)
    zero = torch.zeros((), dtype=X.dtype, device=X.device)
    within, between, total = (torch.where(constant, zero, v) for v in (within, between, total))
    return Scatter(between, within, total, sqnorm, constant)


def _descending(values: np.ndarray) -> np.ndarray:
    """Indices sorting ``values`` from largest to smallest, ties to the lowest index."""
    return np.lexsort((np.arange(values.size), -values))


def _ratio(b: float, w: float) -> float:
    """``b / w``, with ``inf`` when only ``w`` is 0 and 0 when both are."""
    if w > 0:
        return b / w
    return float("inf") if b > 0 else 0.0


@fill_doc(**SELECTOR_FRAGMENTS)
class TraceRatio(RealSelector):
    """Trace ratio feature selection (Nie et al. 2008), supervised Fisher-score form.

    With the within-class graph ``A_w`` (weight ``1 / n_c`` between two samples of class c, 0
    across classes), the between-class graph ``A_b = 1 / n - A_w`` and their Laplacians
    ``L_w``, ``L_b``, a feature subset S (selection matrix W) scores

        tr(W^T X^T L_b X W) / tr(W^T X^T L_w X W) = sum_{i in S} b_i / sum_{i in S} w_i,

    with ``b_i = x_i^T L_b x_i`` the between-class and ``w_i = x_i^T L_w x_i`` the
    within-class scatter of feature i. The best subset of size k is found by the paper's
    iteration: start from the k features of highest Fisher score ``b_i / w_i``; then repeat:
    ``lambda = sum_S b / sum_S w``, S = the k features of largest ``b_i - lambda w_i``, until
    S stops changing (lambda never decreases, so this ends). The final lambda is the
    largest trace ratio of any k features.

    Parameters
    ----------
    %(k)s
    max_iter : int, default=100
        Most iterations of the subset update (the paper's examples converge in a few).
    %(device)s
    %(dtype)s
    %(distributed)s

    Attributes
    ----------
    selected_ : ndarray of shape (k,)
        The optimal subset, ordered by ``b_i - lambda_ w_i``, largest first.
    scores_ : ndarray of shape (k,)
        ``b_i - lambda_ w_i`` of the selected features (they sum to 0 when ``lambda_`` is
        finite: that is what makes ``lambda_`` the subset's ratio).
    lambda_ : float
        The trace ratio of the selected subset.
    n_iter_ : int
        Subset updates run.
    between_scatter_, within_scatter_ : ndarray of shape (n_features,)
        ``b_i`` and ``w_i`` of every feature.
    %(real_attributes)s

    See Also
    --------
    SPEC : Spectral feature selection, the other graph-Laplacian baseline.

    Notes
    -----
    Data: used as given, as in the paper (no standardization). Each feature's own ratio
    ``b_i / w_i`` does not depend on its scale, but the subset's ratio weighs features by
    their scatter: standardize first (``make_pipeline(StandardScaler(), TraceRatio())``) when
    the features have unrelated units.

    Degenerate features: a constant feature has ``b_i = w_i = 0``, Fisher score 0 and
    ``b_i - lambda w_i = 0``, so it is never picked ahead of a feature that separates the
    classes better than the subset's ratio, and never makes a NaN. A feature constant within
    each class but not overall has ``w_i = 0`` and an infinite Fisher score; when the subset
    holds only such features, ``lambda_`` is ``inf``, the iteration stops and the scores are
    ``b_i``.

    Cost: the scatters take one pass over the data, O(n_samples x n_features); each
    iteration sorts the n_features values of ``b - lambda w``. Ties break to the lowest
    feature index.

    References
    ----------
    .. [1] Nie, F., Xiang, S., Jia, Y., Zhang, C. and Yan, S. (2008). Trace ratio criterion for
       feature selection. AAAI 2008, 671-676.

    Examples
    --------
    >>> from sklearn.datasets import load_wine
    >>> from tensorprob import TraceRatio
    >>> X, y = load_wine(return_X_y=True)
    >>> sel = TraceRatio(k=3).fit(X, y)
    >>> sel.selected_.shape, bool(sel.lambda_ > 0)
    ((3,), True)
    """

    method_name = "trace_ratio"

    _parameter_constraints: ClassVar[dict] = {
        **RealSelector._parameter_constraints,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, k: int | str = 10, *, max_iter: int = 100, device: Any = "auto", dtype: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.max_iter = max_iter
        self.device = device
        self.dtype = dtype
        self.distributed = distributed

    def _select_real(self, X, y, n_classes, k, device, dtype):
        sc = class_scatter(torch.as_tensor(X, dtype=dtype, device=device), torch.as_tensor(y, device=device),
                           n_classes, distributed=self._dist_on)
        b = sc.between.double().cpu().numpy()
        w = sc.within.double().cpu().numpy()
        self.between_scatter_, self.within_scatter_ = b, w
        fisher = np.where(w > 0, b / np.where(w > 0, w, 1.0), np.where(b > 0, np.inf, 0.0))
        subset = _descending(fisher)[:k]
        lam = _ratio(b[subset].sum(), w[subset].sum())
        n_iter = 0
        while n_iter < self.max_iter and np.isfinite(lam):
            n_iter += 1
            new = _descending(self._gap(b, w, lam))[:k]
            new_lam = _ratio(b[new].sum(), w[new].sum())
            if set(new.tolist()) == set(subset.tolist()):
                break
            if new_lam <= lam:  # no strict gain: a tie in the optimum (or rounding); keep the better subset
                if new_lam == lam:
                    subset = new
                break
            subset, lam = new, new_lam
        self.lambda_, self.n_iter_ = float(lam), n_iter
        gap = self._gap(b, w, lam)
        order = subset[_descending(gap[subset])]
        return order, gap[order]

    @staticmethod
    def _gap(b: np.ndarray, w: np.ndarray, lam: float) -> np.ndarray:
        """``b - lam w``, read as ``b`` where ``w`` is 0 (no ``inf * 0``)."""
        if not np.isfinite(lam):
            return np.where(w > 0, -np.inf, b)
        return b - lam * w


@fill_doc(**SELECTOR_FRAGMENTS)
class SPEC(RealSelector):
    """SPEC: spectral feature selection (Zhao and Liu 2007), supervised.

    The supervised similarity of the paper is ``W_ij = 1 / n_c`` when samples i and j are both
    of class c and 0 otherwise; D is its degree matrix and ``L = I - D^{-1/2} W D^{-1/2}`` the
    normalized Laplacian. A feature vector f is normalized as
    ``f^ = D^{1/2} f / ||D^{1/2} f||`` and ranked by one of the paper's three functions:

    - ``"phi1"``: ``phi_1 = f^T L f^`` (smaller is better): how much f varies inside the
      classes, relative to its (uncentered) norm;
    - ``"phi2"``: ``phi_2 = phi_1 / (1 - (f^T xi_1)^2)`` with ``xi_1 = D^{1/2} 1 / ||D^{1/2} 1||``
      the trivial eigenvector (smaller is better);
    - ``"phi3"``: ``phi_3 = sum_{j=2}^{kappa} (2 - lambda_j) alpha_j^2`` over the eigenpairs
      ``(lambda_j, xi_j)`` of L in increasing order of eigenvalue, ``alpha_j = xi_j^T f^``,
      the trivial ``xi_1`` left out (larger is better); kappa is ``n_eigenvectors``.

    Parameters
    ----------
    %(k)s
    mode : {"phi2", "phi1", "phi3"}, default="phi2"
        The ranking function. The default is ``phi_2``: ``phi_1`` rewards features with a
        large mean (a nonzero constant has ``phi_1 = 0``, the best value, because it is the
        trivial eigenvector itself), and ``phi_2`` divides that trivial component out. With the
        supervised similarity ``phi_2`` is the within-class over the total scatter, which does
        not change when a feature is shifted or scaled.
    n_eigenvectors : int or None, default=None
        The kappa of ``phi_3``: the number of eigenpairs counted from the smallest eigenvalue, the
        trivial one included (so kappa - 1 terms). None: the number of classes. Ignored by the
        other modes. Values above n_samples count as n_samples.
    %(device)s
    %(dtype)s
    %(distributed)s

    Attributes
    ----------
    selected_ : ndarray of shape (k,)
        Selected features, best first.
    scores_ : ndarray of shape (k,)
        Their values of the ranking function.
    feature_scores_ : ndarray of shape (n_features,)
        The ranking function of every feature.
    ranking_ : ndarray of shape (n_features,)
        Every feature, best first.
    %(real_attributes)s

    See Also
    --------
    TraceRatio : The other graph-Laplacian baseline.
    SPECCMI : A spectral relaxation of an information criterion (not related).

    Notes
    -----
    Closed forms. Every row of W sums to 1, so ``D = I`` and ``f^ = f / ||f||``; W is the
    orthogonal projection onto the class indicator vectors, so L has the eigenvalue 0 on the
    span of the c class indicators (which holds ``xi_1``) and 1 on its complement (dimension
    n - c). With ``w``, ``b``, ``t`` the within-class, between-class and total scatter of f and
    ``||f||^2`` its uncentered squared norm (module docstring):

    - ``phi_1 = w / ||f||^2``, ``phi_2 = w / t``;
    - ``phi_3 = (2 min(kappa - 1, c - 1) / (c - 1)) b / ||f||^2 + (max(0, kappa - c) / (n - c)) w / ||f||^2``.

    In ``phi_3`` the eigenvalues are repeated, so the individual ``alpha_j`` depend on the
    choice of eigenvectors within an eigenspace; only sums over whole eigenspaces do not.
    For kappa = c (the default) and kappa = n the formula is the paper's sum for any choice;
    for a kappa that cuts an eigenspace, the terms of that eigenspace are counted by their
    average over all orthonormal bases of it (the fraction of the eigenspace taken times
    its whole sum), which is the only basis-free reading.

    Cost: O(n_samples x n_features) time and memory for every mode (class sums); no
    n_samples x n_samples matrix is formed and no eigendecomposition is computed. The
    tests compare with the explicit Laplacian and its dense eigendecomposition.

    Data: used as given (the paper's supervised SPEC has no preprocessing). A constant
    feature carries nothing and gets the worst value of every mode: ``phi_1 = phi_2 = 1``,
    ``phi_3 = 0`` (never NaN; the literal ``phi_1`` of a nonzero constant would be 0, the
    best). Ties break to the lowest feature index.

    References
    ----------
    .. [1] Zhao, Z. and Liu, H. (2007). Spectral feature selection for supervised and unsupervised
       learning. ICML 2007, 1151-1157.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorprob import SPEC
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1, 2], 20)
    >>> X = rng.normal(size=(60, 5)); X[:, 3] += 3 * y
    >>> SPEC(k=2).fit(X, y).selected_.tolist()[0]
    3
    """

    method_name = "spec"

    _parameter_constraints: ClassVar[dict] = {
        **RealSelector._parameter_constraints,
        "mode": [StrOptions({"phi1", "phi2", "phi3"})],
        "n_eigenvectors": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, k: int | str = 10, *, mode: str = "phi2", n_eigenvectors: int | None = None,
                 device: Any = "auto", dtype: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.mode = mode
        self.n_eigenvectors = n_eigenvectors
        self.device = device
        self.dtype = dtype
        self.distributed = distributed

    def _select_real(self, X, y, n_classes, k, device, dtype):
        n = X.shape[0]
        if self._dist_on:  # the rows of all ranks
            from .. import _distributed

            n = sum(_distributed.all_gather(n))
        sc = class_scatter(torch.as_tensor(X, dtype=dtype, device=device), torch.as_tensor(y, device=device),
                           n_classes, distributed=self._dist_on)
        one = torch.ones((), dtype=dtype, device=device)
        safe_norm = torch.where(sc.constant, one, sc.sqnorm)
        if self.mode == "phi1":
            phi = torch.where(sc.constant, one, sc.within / safe_norm)
        elif self.mode == "phi2":
            phi = torch.where(sc.constant, one, sc.within / torch.where(sc.constant, one, sc.total))
        else:
            c = n_classes  # every class code 0 .. n_classes - 1 occurs in y
            kappa = min(n, c if self.n_eigenvectors is None else int(self.n_eigenvectors))
            zero_part = 2.0 * min(kappa - 1, c - 1) / (c - 1)
            one_part = max(0, kappa - c) / (n - c) if n > c else 0.0
            phi = (zero_part * sc.between + one_part * sc.within) / safe_norm
            phi = torch.where(sc.constant, torch.zeros_like(phi), phi)
        phi = phi.double().cpu().numpy()
        self.feature_scores_ = phi
        self.ranking_ = _descending(phi if self.mode == "phi3" else -phi)
        order = self.ranking_[:k].copy()
        return order, phi[order]
