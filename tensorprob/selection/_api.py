"""Registry of selectors by method name, and the functional form ``select_features``."""
from __future__ import annotations

from typing import Any

_REGISTRY: dict[str, type] = {}


def register(name: str, cls: type) -> type:
    """Make ``cls`` available as ``select_features(..., method=name)``."""
    _REGISTRY[name] = cls
    return cls


def available_methods() -> list[str]:
    """The ``method=`` names accepted by :func:`select_features`."""
    return sorted(_REGISTRY)


def select_features(X: Any, y: Any, k: int | str = 10, method: str = "jmi", **options: Any):
    """Select ``k`` features of ``X`` for the labels ``y`` with the named method.

    Parameters
    ----------
    X : array-like, tensor or DataFrame (raw or coded)
    y : array-like of labels
    k : int, "all" or "auto" (where the method defines a stopping rule)
    method : str
        One of :func:`available_methods` ("mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim",
        "disr", "icap", "mri", "rmrmr", "spec_cmi", "pda", "vmi", "gsm-cpd", ...).
    **options
        Parameters of the method's estimator class.

    Returns
    -------
    The fitted selector (``selected_``, ``scores_``, ``transform``, ...).

    Examples
    --------
    >>> import numpy as np, tensorprob as tp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 3, (200, 5)); y = (X[:, 2] + X[:, 4]) % 3
    >>> sorted(tp.select_features(X, y, 2, method="jmi").selected_.tolist())
    [2, 4]
    """
    if method not in _REGISTRY:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(available_methods())}")
    return _REGISTRY[method](k=k, **options).fit(X, y)
