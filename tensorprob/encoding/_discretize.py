"""Discretization of continuous columns: equal-width, equal-frequency and supervised MDL.

The unsupervised strategies delegate to scikit-learn's ``KBinsDiscretizer``; the supervised
minimum-description-length rule of Fayyad & Irani (1993) is implemented here. Cut points are
computed from a :class:`~tensorprob.encoding._numbers.NumberSummary` of the columns (the range
for equal widths, the finite values for equal frequencies and MDL), so that the rows of one
process, of several processes and of row chunks are cut by the same code (:func:`edges_of`).
"""
from __future__ import annotations

import heapq
import warnings
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.preprocessing import KBinsDiscretizer
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._docstrings import fill_doc
from .._params import CachedParamNames
from ._numbers import NumberSummary, sample_cap

_STRATEGIES = ("uniform", "quantile", "mdl")

#: Parameter and return entries shared by the methods of :class:`Discretizer` and :func:`discretize`.
_DISCRETIZE_FRAGMENTS = {
    "fit_params": """\
X : array-like of shape (n_samples, n_features)
    Numeric data (NumPy array, torch tensor or DataFrame); NaN is missing.
y : array-like of shape (n_samples,), default=None
    Class labels, required by ``strategy="mdl"`` and ignored otherwise.""",
    "bin_codes": """\
ndarray of shape (n_samples, n_features), int64
    Bin codes from 0 to the number of bins of the column minus 1; -1 for NaN.""",
}
_X, _Y = _DISCRETIZE_FRAGMENTS["fit_params"].split("\ny ")
_DISCRETIZE_FRAGMENTS |= {"X_numeric": _X, "y_mdl": "y " + _Y}


def _entropy_bits(counts: np.ndarray) -> np.ndarray:
    """Entropy in bits of count vectors along the last axis (0 for empty rows)."""
    counts = np.asarray(counts, dtype=np.float64)
    tot = counts.sum(-1, keepdims=True)
    p = np.divide(counts, tot, out=np.zeros_like(counts), where=tot > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log2(p), 0.0).sum(-1)
    return h


def mdl_cut_points(x: np.ndarray, y: np.ndarray, max_bins: int | None = None) -> np.ndarray:
    """Cut points of one column by the Fayyad-Irani MDL criterion.

    An interval S of n samples is split at the boundary T minimising the class entropy
    ``E(S; T) = n1/n Ent(S1) + n2/n Ent(S2)``; the split is accepted when
    ``Ent(S) - E(S; T) > (log2(n - 1) + delta) / n`` with
    ``delta = log2(3^k - 2) - (k Ent(S) - k1 Ent(S1) - k2 Ent(S2))`` and k, k1, k2 the numbers
    of classes present in S, S1, S2. Accepted intervals are split recursively. Splits are made
    best-first (largest information gain first); with ``max_bins`` the splitting stops once
    that many intervals exist, otherwise the result equals the classic recursion's.

    Parameters
    ----------
    x : ndarray of shape (n_samples,)
        Finite values of the column.
    y : ndarray of shape (n_samples,)
        Integer class codes ``0..C-1``.
    max_bins : int or None
        Largest number of intervals.

    Returns
    -------
    ndarray
        Sorted cut points (midpoints between adjacent distinct values).
    """
    xs = np.asarray(x, dtype=np.float64)
    ys = np.asarray(y).astype(np.int64, copy=False)
    values, inverse = np.unique(xs, return_inverse=True)
    counts = np.zeros((values.size, int(ys.max()) + 1 if ys.size else 1), dtype=np.int64)
    np.add.at(counts, (inverse.reshape(-1), ys), 1)
    return mdl_cut_points_of_counts(values, counts, max_bins)


def mdl_cut_points_of_counts(values: np.ndarray, counts: np.ndarray, max_bins: int | None = None) -> np.ndarray:
    """:func:`mdl_cut_points` of a column given as its sorted distinct values and their class counts.

    The candidate cuts are the boundaries between distinct values, so the splits read only
    the cumulative class counts there (what sparse columns give without their zeros written).

    Parameters
    ----------
    values : ndarray of shape (D,)
        Sorted distinct finite values.
    counts : ndarray of shape (D, C), int
        Rows of each value in each class.
    max_bins : int or None
        Largest number of intervals.

    Returns
    -------
    ndarray
        Sorted cut points (midpoints between adjacent distinct values).
    """
    D = values.size
    cum = np.zeros((D + 1, counts.shape[1]), dtype=np.int64)
    np.cumsum(counts, axis=0, out=cum[1:])
    at = cum.sum(1)  # rows before each boundary

    def best_split(a: int, b: int) -> tuple[float, int] | None:
        ks = np.arange(a + 1, b)
        if ks.size == 0:
            return None
        n = int(at[b] - at[a])
        total = cum[b] - cum[a]
        left = cum[ks] - cum[a]
        right = total[None, :] - left
        n1 = (at[ks] - at[a]).astype(np.float64)
        e1, e2 = _entropy_bits(left), _entropy_bits(right)
        weighted = (n1 * e1 + (n - n1) * e2) / n
        i = int(np.argmin(weighted))
        ent = float(_entropy_bits(total))
        gain = ent - float(weighted[i])
        k, k1, k2 = int((total > 0).sum()), int((left[i] > 0).sum()), int((right[i] > 0).sum())
        delta = np.log2(3.0**k - 2.0) - (k * ent - k1 * float(e1[i]) - k2 * float(e2[i]))
        if gain > (np.log2(n - 1) + delta) / n:
            return gain, int(ks[i])
        return None

    cuts: list[float] = []
    heap: list[tuple[float, int, int, int]] = []
    first = best_split(0, D)
    if first is not None:
        heapq.heappush(heap, (-first[0], 0, D, first[1]))
    limit = np.inf if max_bins is None else max_bins - 1
    while heap and len(cuts) < limit:
        _, a, b, j = heapq.heappop(heap)
        cuts.append(0.5 * values[j - 1] + 0.5 * values[j])  # halves first: no overflow near the largest floats
        for lo, hi in ((a, j), (j, b)):
            s = best_split(lo, hi)
            if s is not None:
                heapq.heappush(heap, (-s[0], lo, hi, s[1]))
    return np.sort(np.asarray(cuts, dtype=np.float64))


class Discretizer(OneToOneFeatureMixin, TransformerMixin, CachedParamNames, BaseEstimator):
    """Per-column discretizer of numeric data into integer bin codes (a scikit-learn transformer).

    Parameters
    ----------
    n_bins : int or None, default=5
        Number of bins for ``"uniform"`` and ``"quantile"``; the largest number of intervals
        for ``"mdl"`` (``None`` there means no cap).
    strategy : {"uniform", "quantile", "mdl"}, default="uniform"
        Equal-width bins, equal-frequency bins (both by scikit-learn's ``KBinsDiscretizer``),
        or supervised MDL (minimum description length, Fayyad & Irani 1993; needs ``y``).
    distributed : bool, default=False
        Fit on rows spread over the ranks of an initialized ``torch.distributed`` process
        group: each rank passes its own rows (zero allowed) and every rank learns the edges
        the single-process fit on all rows learns. Equal-width edges reduce the column ranges
        only; equal-frequency and MDL edges gather the finite values of every varying column
        (and the labels, for MDL) to every rank, an exact computation that needs one copy of
        those columns per rank.

    Attributes
    ----------
    bin_edges_ : list of ndarray
        Interior cut points of each column; value v gets code ``searchsorted(edges, v, "right")``.
    n_bins_ : ndarray of int
        Number of bins of each column (1 for a constant column).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string column names.

    See Also
    --------
    discretize : The function form.
    Encoder : Encodes mixed data, discretizing the continuous columns with this class.

    Notes
    -----
    NaN becomes code -1 (missing). ``+inf`` and ``-inf`` are values beyond every finite one:
    they fall into the last and the first bin, and the cut points are computed from the finite
    values only (a column without a finite value gets one bin). Constant columns get a single
    bin (code 0). Values outside the fitted range go to the end bins. Equal widths are computed
    without overflow for ranges wider than the largest float (values near +/-1.8e308).

    References
    ----------
    .. [1] Fayyad, U. M. and Irani, K. B. (1993). Multi-interval discretization of continuous-valued
       attributes for classification learning. IJCAI 1993, 1022-1027.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorprob import Discretizer
    >>> X = np.array([[0.0, 1.0], [0.5, 1.0], [1.0, 1.0], [np.nan, 1.0]])
    >>> d = Discretizer(n_bins=2).fit(X)
    >>> d.transform(X).tolist(), d.n_bins_.tolist()
    ([[0, 0], [1, 0], [1, 0], [-1, 0]], [2, 1])
    """

    _parameter_constraints: ClassVar[dict] = {
        "n_bins": [Interval(Integral, 2, None, closed="left"), None],
        "strategy": [StrOptions(set(_STRATEGIES))],
        "distributed": ["boolean"],
    }

    def __init__(self, n_bins: int | None = 5, strategy: str = "uniform", distributed: bool = False) -> None:
        self.n_bins = n_bins
        self.strategy = strategy
        self.distributed = distributed

    def _validate_X(self, X: Any, reset: bool, min_samples: int = 1) -> np.ndarray:
        if hasattr(X, "detach"):  # torch tensor (any device)
            X = X.detach().cpu().numpy()
        # infinite values are the extreme bins; NaN is missing
        return validate_data(self, X, dtype=np.float64, ensure_all_finite=False, reset=reset,
                             ensure_min_samples=min_samples)

    @fill_doc(**_DISCRETIZE_FRAGMENTS)
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any = None) -> Discretizer:
        """Learn the cut points of every column.

        Parameters
        ----------
        %(fit_params)s

        Returns
        -------
        self : Discretizer
            The fitted discretizer (``bin_edges_``, ``n_bins_``).
        """
        if self.n_bins is None and self.strategy != "mdl":
            raise ValueError(f"n_bins=None is only allowed with strategy='mdl', got strategy={self.strategy!r}")
        from .. import _distributed

        dist = _distributed.active(self.distributed)
        if dist:  # a rank may hold no rows
            X = _distributed.agree(lambda: self._validate_X(X, reset=True, min_samples=0))
            _distributed.check_same("number of columns to discretize", X.shape[1])
        else:
            X = self._validate_X(X, reset=True)
        labels = None
        if self.strategy == "mdl":
            if y is None:
                raise ValueError("strategy='mdl' is supervised: pass the class labels y")
            labels = np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)

            def check_length() -> None:
                if labels.shape[0] != X.shape[0]:
                    raise ValueError(f"X has {X.shape[0]} rows but y has {labels.shape[0]} labels")

            _distributed.agree(check_length) if dist else check_length()
        summary = NumberSummary.of(X, labels, sample=self.strategy != "uniform")
        if dist:  # the ranks' summaries in rank order (one all-gather): the rows one process would see
            from .._config import get_config

            cap = sample_cap(X.shape[1], get_config()["memory_budget"])
            (summary, n_rows), *rest = _distributed.all_gather((summary, int(X.shape[0])))
            for part, m in rest:
                summary, n_rows = summary.combine(part, cap, shift=n_rows), n_rows + m
        return self._set_edges(edges_of(summary, self.strategy, self.n_bins))

    def _set_edges(self, edges: list[np.ndarray]) -> Discretizer:
        self.bin_edges_ = edges
        self.n_bins_ = np.array([e.size + 1 for e in edges], dtype=np.int64)
        return self

    @classmethod
    def _of_summary(cls, summary: NumberSummary, n_bins: int | None, strategy: str) -> Discretizer:
        """A discretizer fitted to the rows that ``summary`` describes (the encoder's continuous columns)."""
        out = cls(n_bins=n_bins, strategy=strategy)._set_edges(edges_of(summary, strategy, n_bins))
        out.n_features_in_ = len(out.bin_edges_)
        return out

    @fill_doc(**_DISCRETIZE_FRAGMENTS)
    def transform(self, X: Any) -> np.ndarray:
        """Map values to bin codes.

        Parameters
        ----------
        %(X_numeric)s
            Values outside the fitted range go to the end bins.

        Returns
        -------
        %(bin_codes)s
        """
        check_is_fitted(self)
        X = self._validate_X(X, reset=False, min_samples=0 if self.distributed else 1)
        return _bin_codes(X, self.bin_edges_)

    @fill_doc(**_DISCRETIZE_FRAGMENTS)
    def fit_transform(self, X: Any, y: Any = None) -> np.ndarray:
        """Fit to X (and y for MDL), then return the bin codes of X.

        Parameters
        ----------
        %(fit_params)s

        Returns
        -------
        %(bin_codes)s
        """
        return self.fit(X, y).transform(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing entry (code -1)
        tags.transformer_tags.preserves_dtype = []  # the output is integer codes
        return tags


@fill_doc(**_DISCRETIZE_FRAGMENTS)
def discretize(X: Any, n_bins: int | None = 5, strategy: str = "uniform", y: Any = None,
               distributed: bool = False) -> np.ndarray:
    """Discretize every column of a numeric array.

    Parameters
    ----------
    %(X_numeric)s
        A 1-D array is one column.
    n_bins : int, default=5
        Bins per column (``"uniform"``, ``"quantile"``) or largest number of intervals (``"mdl"``).
    strategy : {"uniform", "quantile", "mdl"}, default="uniform"
        Equal-width, equal-frequency (scikit-learn's ``KBinsDiscretizer``) or supervised
        Fayyad-Irani MDL (needs ``y``).
    %(y_mdl)s
    distributed : bool, default=False
        This rank's rows of data spread over a ``torch.distributed`` process group; the edges
        are those of all the rows (see :class:`Discretizer`).

    Returns
    -------
    %(bin_codes)s

    Examples
    --------
    >>> import numpy as np, tensorprob
    >>> tensorprob.discretize(np.array([[0.0], [0.5], [1.0]]), n_bins=2).ravel().tolist()
    [0, 1, 1]
    """
    if hasattr(X, "detach"):
        X = X.detach().cpu().numpy()
    X = np.asarray(X)
    if X.ndim == 1:  # one column
        X = X[:, None]
    return Discretizer(n_bins=n_bins, strategy=strategy, distributed=distributed).fit_transform(X, y)


def edges_of(summary: NumberSummary, strategy: str, n_bins: int | None) -> list[np.ndarray]:
    """The inner cut points of every column that ``summary`` describes, by ``strategy``.

    Equal widths need each column's finite range only; equal frequencies and MDL need the
    finite values (and, for MDL, their labels) of ``summary.samples``. A column without two
    distinct finite values gets no cut point (one bin).
    """
    n = summary.lo.size
    edges: list[np.ndarray] = [np.empty(0) for _ in range(n)]
    varying = np.flatnonzero(summary.hi > summary.lo)
    if strategy == "uniform":
        for j, e in zip(varying, _uniform_edges(summary.lo[varying], summary.hi[varying], int(n_bins))):
            edges[j] = e
    elif strategy == "quantile":
        for j, e in zip(varying, _quantile_edges([summary.samples[j].values for j in varying], int(n_bins))):
            edges[j] = e
    else:
        for j in varying:
            s = summary.samples[j]
            try:
                _, y_codes = np.unique(s.labels, return_inverse=True)
            except TypeError:  # labels of several types: their text tells the classes apart
                _, y_codes = np.unique(s.labels.astype(str), return_inverse=True)
            edges[j] = mdl_cut_points(s.values, y_codes.ravel(), n_bins)
    return edges


def _quantile_edges(values: list[np.ndarray], n_bins: int) -> list[np.ndarray]:
    """Equal-frequency cut points of each array of finite values, as scikit-learn's ``KBinsDiscretizer`` makes them.

    Arrays of the same length go through one ``KBinsDiscretizer`` call (it cuts every column on
    its own). A range wider than the largest float is cut on the values divided by a power of
    two (exact), so that the averaged quantiles cannot overflow.
    """
    out: list[np.ndarray | None] = [None] * len(values)
    groups: dict[int, list[int]] = {}
    for i, v in enumerate(values):
        groups.setdefault(v.size, []).append(i)
    for idx in groups.values():
        V = np.stack([values[i] for i in idx], axis=1)
        with np.errstate(over="ignore"):
            wide = ~np.isfinite(V.max(0) - V.min(0))
        scale = np.ones(V.shape[1])
        scale[wide] = _power_of_two_above(np.abs(V[:, wide]).max(0))
        kb = KBinsDiscretizer(n_bins=n_bins, encode="ordinal", strategy="quantile", subsample=None,
                              quantile_method="averaged_inverted_cdf")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # bins too small / removed: reported through n_bins_
            kb.fit(V / scale if wide.any() else V)
        for k, i in enumerate(idx):
            out[i] = np.asarray(kb.bin_edges_[k][1:-1], dtype=np.float64) * scale[k]
    return out


def _power_of_two_above(m: np.ndarray) -> np.ndarray:
    """A power of two at least half of ``m`` (> 0): ``m`` divided by it lies in [0.5, 2), exactly."""
    return np.ldexp(1.0, np.frexp(m)[1] - 1)


def _uniform_edges(lo: np.ndarray, hi: np.ndarray, n_bins: int) -> list[np.ndarray]:
    """The inner cut points of ``n_bins`` equal-width bins of every range [lo, hi] (lo < hi).

    ``np.linspace(lo, hi, n_bins + 1)[1:-1]`` per column, as scikit-learn's
    ``KBinsDiscretizer(strategy="uniform")`` computes them, evaluated for all columns at once:
    ``start + i * step`` elementwise, the same floating-point operations as the per-column
    calls (checked in the tests), except where a step underflows to 0, which NumPy then
    computes another way for the whole array: those ranges go one by one. A range whose width
    ``hi - lo`` overflows (values near +/-1.8e308) is cut on ``lo / s`` and ``hi / s`` for ``s``
    a power of two (exact), and the cut points are scaled back.
    """
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    if lo.size == 0:
        return []
    if n_bins < 2:
        return [np.empty(0) for _ in range(lo.size)]
    with np.errstate(over="ignore"):
        wide = ~np.isfinite(hi - lo)
    if wide.any():  # the same cut points of the ranges scaled into [-1, 1], scaled back
        s = np.ones(lo.size)
        s[wide] = _power_of_two_above(np.maximum(np.abs(lo[wide]), np.abs(hi[wide])))
        out = _uniform_edges(lo / s, hi / s, n_bins)
        return [e * s[j] for j, e in enumerate(out)]
    tiny = (hi - lo) / n_bins == 0
    grid = np.linspace(np.where(tiny, 0.0, lo), np.where(tiny, 1.0, hi), n_bins + 1, axis=1)
    out = [row[1:-1].copy() for row in grid]
    for j in np.flatnonzero(tiny):
        out[j] = np.linspace(lo[j], hi[j], n_bins + 1)[1:-1]
    return out


def _bin_codes(X: np.ndarray, edges: list[np.ndarray]) -> np.ndarray:
    """Bin codes of X (M, N): the number of cut points at or below each value, -1 where it is NaN.

    ``np.searchsorted(edges[j], X[:, j], side="right")`` for every column (as scikit-learn's
    ``KBinsDiscretizer.transform``), as one comparison of every value with the i-th cut point
    of its column per i (the cut points padded with NaN, which no value reaches), summed
    in place, in row blocks of about 8 MiB of values. ``+inf`` reaches every cut point (the
    last bin), ``-inf`` none (the first).
    """
    M, N = X.shape
    out = np.zeros((M, N), dtype=np.int64)
    width = max((e.size for e in edges), default=0)
    E = np.full((width, N), np.nan)
    for j, e in enumerate(edges):
        E[:e.size, j] = e
    step = max(1, (1 << 20) // max(1, N))
    for a in range(0, M, step):
        block, acc = X[a:a + step], out[a:a + step]
        for i in range(width):
            acc += block >= E[i]
    out[np.isnan(X)] = -1
    return out
