"""Registry of selectors by method name, and the functional form ``select_features``.

A selector class registers itself by setting the class attribute ``method_name`` (see
:class:`tensorprob.selection._base._BaseSelector`); :func:`register` adds a class by hand.
Names are lower case with ``_`` as the separator; lookups also accept ``-`` (``"gsm-cpd"``).
"""
from __future__ import annotations

from typing import Any

_REGISTRY: dict[str, type] = {}
_ALIASES: dict[str, str] = {}


def _normalize(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def register(name: str, cls: type, aliases: tuple[str, ...] = ()) -> type:
    """Make ``cls`` available as ``select_features(..., method=name)``.

    Parameters
    ----------
    name : str
        The method name (stored lower case, ``-`` read as ``_``).
    cls : type
        A selector class whose ``__init__`` takes ``k``.
    aliases : tuple of str, default=()
        Other spellings that resolve to ``name``.

    Returns
    -------
    type
        ``cls``, so that ``register`` can decorate a class.
    """
    key = _normalize(name)
    _REGISTRY[key] = cls
    for alias in aliases:
        _ALIASES[_normalize(alias)] = key
    return cls


def available_methods() -> list[str]:
    """The ``method=`` names accepted by :func:`select_features`.

    Returns
    -------
    list of str
        Sorted canonical names (aliases such as ``"gsm-cpd"`` are accepted too, but not listed).

    Examples
    --------
    >>> import tensorprob as tp
    >>> "jmi" in tp.available_methods() and "gsm_cpd" in tp.available_methods()
    True
    """
    return sorted(_REGISTRY)


def get_selector(method: str) -> type:
    """The selector class registered as ``method``.

    Parameters
    ----------
    method : str
        A name of :func:`available_methods` or an alias (case and ``-``/``_`` do not matter).

    Returns
    -------
    type
        The selector class.

    Raises
    ------
    ValueError
        If no selector is registered under that name.

    Examples
    --------
    >>> from tensorprob.selection import get_selector
    >>> get_selector("gsm-cpd").__name__, get_selector("SPEC_CMI").__name__
    ('GSMCPD', 'SPECCMI')
    """
    key = _normalize(method) if isinstance(method, str) else method
    key = _ALIASES.get(key, key)
    if key not in _REGISTRY:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(available_methods())}")
    return _REGISTRY[key]


def select_features(X: Any, y: Any, k: int | str = 10, method: str = "jmi", **options: Any):
    """Select ``k`` features of ``X`` for the labels ``y`` with the named method.

    Parameters
    ----------
    X : array-like, tensor or DataFrame of shape (n_samples, n_features), or row chunks
        Raw or coded data. The count-based methods (MIM to RMRMR) also take data larger than
        memory: a :class:`tensorprob.datasets.RowChunks`, a callable returning an iterator of
        chunks, or a Parquet path (see the selectors' ``fit``).
    y : array-like of shape (n_samples,) or None
        Class labels; None when ``X`` is streamed (the labels come with the chunks).
    k : int, "all" or "auto", default=10
        Number of features ("auto" where the method defines a stopping rule).
    method : str, default="jmi"
        One of :func:`available_methods` ("mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim",
        "disr", "icap", "mri", "rmrmr", "spec_cmi", "pda", "vmi", "gsm_cpd", "hofs", "gmi",
        "pairwise_dp", "spec", "trace_ratio").
    **options
        Parameters of the method's estimator class.

    Returns
    -------
    selector : estimator
        The fitted selector (``selected_``, ``scores_``, ``transform``, ...).

    See Also
    --------
    get_selector : The class behind a method name.

    Examples
    --------
    >>> import numpy as np, tensorprob as tp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 3, (200, 5)); y = (X[:, 2] + X[:, 4]) % 3
    >>> sorted(tp.select_features(X, y, 2, method="jmi").selected_.tolist())
    [2, 4]
    """
    return get_selector(method)(k=k, **options).fit(X, y)
