"""A numeric (float64) view of raw data for classifiers: categorical columns become ordinal codes."""
from __future__ import annotations

from typing import Any

import numpy as np


def to_numeric(X: Any) -> np.ndarray:
    """Float64 matrix of ``X`` in which every non-numeric column is replaced by ordinal codes.

    Numeric (non-boolean) columns keep their values. Any other column (strings, categories,
    booleans, objects) is coded ``0, 1, ...`` in the sorted order of its distinct values
    (``pandas.factorize(..., sort=True)``), so the coding does not depend on the row order.
    Missing values of a categorical column get the code ``-1``.

    Parameters
    ----------
    X : pandas.DataFrame or array-like of shape (n_samples, n_features)
        Raw data. A NumPy array of a numeric dtype is only converted to float64; any other array
        is coded column by column.

    Returns
    -------
    numpy.ndarray of shape (n_samples, n_features), float64
        The numeric view, for instance the input of a k-NN or linear classifier.

    Examples
    --------
    >>> import pandas as pd
    >>> from tensorprob.encoding import to_numeric
    >>> to_numeric(pd.DataFrame({"a": [0.5, 1.5, 2.5], "b": ["y", "x", "y"]}))
    array([[0.5, 1. ],
           [1.5, 0. ],
           [2.5, 1. ]])
    """
    if hasattr(X, "columns"):
        import pandas as pd

        cols = []
        for c in X.columns:
            s = X[c]
            if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
                cols.append(s.to_numpy(dtype=np.float64))
            else:
                cols.append(pd.factorize(s, sort=True)[0].astype(np.float64))
        return np.column_stack(cols) if cols else np.empty((len(X), 0))
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if X.dtype.kind in "iuf":
        return X.astype(np.float64)
    import pandas as pd

    # the same rule as for a DataFrame, column by column (object arrays may mix numbers and strings)
    return to_numeric(pd.DataFrame({j: X[:, j] for j in range(X.shape[1])}).infer_objects())
