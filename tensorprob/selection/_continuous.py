"""Input checks shared by the selectors that work on real values (HOFS, GMI)."""
from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils.validation import validate_data


def validate_real_xy(estimator, X, y, k):
    """Check ``X`` (real, finite), ``y`` (>= 2 classes, no NaN) and ``k``; set the fit attributes.

    Returns ``X`` as float64 array, the class codes ``0 .. C-1`` and ``k`` as an int.
    """
    if y is None:
        raise ValueError(f"{type(estimator).__name__} is supervised: fit(X, y) requires y, got y=None")
    X, y = validate_data(estimator, X, y, dtype=np.float64, ensure_all_finite=True, ensure_min_samples=2)
    y = np.asarray(y)
    if y.dtype.kind == "f" and np.isnan(y).any():
        raise ValueError("y contains NaN; every sample needs a class label")
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"y has {classes.size} class; feature selection needs at least 2 classes")
    n_features = X.shape[1]
    if isinstance(k, str) and k == "all":
        k = n_features
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, Integral):
        # scikit-learn raises ValueError for bad parameter values
        raise ValueError(f"k must be an int in [1, n_features={n_features}] or 'all', got {k!r}")  # noqa: TRY004
    k = int(k)
    if not 1 <= k <= n_features:
        raise ValueError(f"k must be in [1, n_features={n_features}], got k={k}")
    estimator.classes_ = classes
    return X, codes.astype(np.int64), k
