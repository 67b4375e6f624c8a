"""Reading raw columns: missing entries, value keys, numeric views and the columns of a table.

What every path of the encoding shares about raw values: which entries are missing (``None``,
``NaN``, ``pandas.NA``/``NaT`` and the user's ``missing_values``), the (type group, value) key
that tells categories of an object column apart (``1``, ``"1"`` and ``True`` are three), and
how a table (NumPy, torch, pandas) splits into 1-D columns.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from numbers import Number
from typing import Any, NamedTuple

import numpy as np

_SHOWN = 5  # how many names / values an error or warning message lists


def _preview(items: Sequence[Any], n: int = _SHOWN) -> str:
    """At most ``n`` items of a sequence as text, with the total when some are left out."""
    items = list(items)
    head = ", ".join(repr(v) for v in items[:n])
    return head + (f", ... ({len(items)} in all)" if len(items) > n else "")


def _outside_stacklevel() -> int:
    """The ``stacklevel`` of a warning that points at the first caller outside tensorprob and scikit-learn."""
    import os
    import sys

    roots = tuple(os.path.dirname(os.path.dirname(m.__file__)) + os.sep
                  for m in (sys.modules["tensorprob"], sys.modules["sklearn"]) if getattr(m, "__file__", None))
    roots = tuple(r + name for r, name in zip(roots, ("tensorprob", "sklearn")))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(roots):
        frame, level = frame.f_back, level + 1
    return level


def _is_missing(values: np.ndarray) -> np.ndarray:
    """Boolean mask of None / NaN / pandas NA entries of a 1-D array of any dtype."""
    if values.dtype.kind in "fc":
        return np.isnan(values)
    if values.dtype.kind == "M":
        return np.isnat(values)
    if values.dtype.kind == "O":
        try:
            import pandas as pd  # vectorized when pandas is installed
        except ImportError:  # pragma: no cover - pandas comes with the data extras
            return np.fromiter((v is None or (isinstance(v, float) and v != v) or _is_pd_na(v) for v in values),
                               dtype=bool, count=values.size)
        if pd.api.types.infer_dtype(values, skipna=False) in ("string", "bytes"):  # text only: none missing
            return np.zeros(values.shape, dtype=bool)
        return np.asarray(pd.isna(values), dtype=bool)
    return np.zeros(values.shape, dtype=bool)


def _is_pd_na(v: Any) -> bool:
    t = type(v).__name__
    return t in ("NAType", "NaTType")


def _group(v: Any) -> str:
    """The type group of a value: values of different groups are never the same category."""
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, Number):
        return "number"
    if isinstance(v, (str, np.str_)):
        return "str"
    if isinstance(v, (bytes, np.bytes_)):
        return "bytes"
    return type(v).__name__


def _key(v: Any) -> tuple[str, Any]:
    g = _group(v)
    if g == "number":  # 1, 1.0 and np.int8(1) are one number
        v = v.item() if hasattr(v, "item") else v
    elif g == "bool":
        v = bool(v)
    return g, v


def _object_categories(vals: np.ndarray) -> tuple[np.ndarray, list, list]:
    """The distinct category keys of an object array (no missing entries) and where each entry falls.

    Returns ``(inverse, keys, firsts)``: int64 positions of the entries in ``keys`` (the distinct
    :func:`_key` values, in order of first appearance) and the first value seen of each key.
    Columns of strings only (or bytes only), the common case of categorical data read from text,
    are factorized by pandas when it is installed; other columns key each entry in Python.

    Raises
    ------
    TypeError
        On unhashable values.
    """
    group = None
    if vals.size:
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas comes with the data extras
            pd = None
        if pd is not None:
            group = {"string": "str", "bytes": "bytes"}.get(pd.api.types.infer_dtype(vals, skipna=False))
    if group is not None:
        inverse, uniq = pd.factorize(vals)
        return inverse.astype(np.int64, copy=False), [(group, u) for u in uniq], list(uniq)
    index: dict = {}
    keys: list = []
    firsts: list = []
    inverse = np.empty(vals.size, dtype=np.int64)
    for i, v in enumerate(vals):
        kv = _key(v)
        pos = index.get(kv)
        if pos is None:
            pos = index[kv] = len(keys)
            keys.append(kv)
            firsts.append(v)
        inverse[i] = pos
    return inverse, keys, firsts


def _unhashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return True
    return False


def _missing_keys(missing_values: Any) -> set:
    if missing_values is None:
        return set()
    vals = missing_values if isinstance(missing_values, (list, tuple, set, np.ndarray)) else [missing_values]
    return {_key(v) for v in vals if v is not None and not (isinstance(v, float) and v != v)}


def _user_missing(col: np.ndarray, keys: set) -> np.ndarray:
    """Mask of the entries of ``col`` equal (in type and value) to one of the ``missing_values``."""
    if not keys:
        return np.zeros(col.shape, dtype=bool)
    kind = col.dtype.kind
    if kind in "iuf":
        nums = [v for g, v in keys if g == "number"]
        return np.isin(col, nums) if nums else np.zeros(col.shape, dtype=bool)
    if kind == "b":
        bools = [v for g, v in keys if g == "bool"]
        return np.isin(col, bools) if bools else np.zeros(col.shape, dtype=bool)
    if kind in "US":
        group = "str" if kind == "U" else "bytes"
        texts = [v for g, v in keys if g == group]
        return np.isin(col, texts) if texts else np.zeros(col.shape, dtype=bool)
    out = np.zeros(col.shape, dtype=bool)
    for i, v in enumerate(col):
        try:
            out[i] = _key(v) in keys
        except TypeError:  # unhashable
            out[i] = False
    return out


def _sort_keys(keys: Sequence[tuple[str, Any]]) -> list:
    """Sorted distinct keys: by type group, then by value (by text where values do not compare)."""
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=lambda k: (k[0], type(k[1]).__name__, str(k[1])))


class RawTable(NamedTuple):
    """A table split into 1-D columns (see :func:`_columns`)."""

    cols: list[np.ndarray]
    labels: list | None  # the DataFrame's column labels as they are; None for an array
    pandas_cat: list[bool]  # the column holds categories as they are (pandas categorical, string, boolean)
    array: np.ndarray | None  # the 2-D array the columns are views of; None for a DataFrame

    @property
    def names(self) -> list[str] | None:
        """The column labels as text (None for an array)."""
        return None if self.labels is None else [str(c) for c in self.labels]


def _columns(X: Any) -> RawTable:
    """Split X into 1-D column arrays, with the DataFrame's labels and which columns are categories as they are.

    A column flagged categorical is an object array whose values are categories as they are
    (pandas categoricals, strings and nullable booleans); nullable numbers become float arrays
    with NaN for ``pd.NA`` (int64 when none is missing).
    """
    if hasattr(X, "iloc") and hasattr(X, "columns"):  # pandas DataFrame
        import pandas as pd
        from pandas.api import types as pdt

        dup = X.columns[X.columns.duplicated()]
        if len(dup):
            raise ValueError(f"X has duplicate column names: {_preview(list(dict.fromkeys(dup)))}; "
                             "every column needs its own name")
        cols, cat = [], []
        for j in range(X.shape[1]):
            s = X.iloc[:, j]
            dt = s.dtype
            categorical = isinstance(dt, pd.CategoricalDtype)
            text_or_bool = isinstance(dt, (pd.StringDtype, pd.BooleanDtype))
            # pandas' nullable numbers (Int64, UInt8, Float64, ...): numbers with pd.NA
            nullable_number = pdt.is_extension_array_dtype(dt) and not categorical and not text_or_bool and (
                pdt.is_integer_dtype(dt) or pdt.is_float_dtype(dt))
            if categorical or text_or_bool:
                arr = np.asarray(s.astype(object))
            elif nullable_number:
                obj = np.asarray(s.astype(object))
                miss = _is_missing(obj)
                arr = np.full(obj.shape, np.nan)
                arr[~miss] = obj[~miss].astype(np.float64)
                if pdt.is_integer_dtype(dt) and not miss.any():
                    arr = arr.astype(np.int64)
            else:
                arr = np.asarray(s)
            cols.append(arr)
            cat.append(categorical or text_or_bool)
        return RawTable(cols, list(X.columns), cat, None)
    if hasattr(X, "iloc"):  # pandas Series
        return _columns(X.to_frame())
    X = _as_array(X)
    return RawTable(list(X.T), None, [False] * X.shape[1], X)  # the column views, made by NumPy's iteration


def _as_array(X: Any) -> np.ndarray:
    """A 2-D NumPy array of an array-like or tensor (no copy when it is one already)."""
    if hasattr(X, "detach"):  # torch tensor
        X = X.detach().cpu().numpy()
    X = np.asarray(X)
    if X.ndim == 1:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got a 1-D array of shape {X.shape}; "
                         "Reshape your data with X.reshape(-1, 1) for a single feature")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    return X


@functools.lru_cache(maxsize=8)
def _default_names_tuple(n: int) -> tuple[str, ...]:
    return tuple(map("x{}".format, range(n)))


def _default_names(n: int) -> list[str]:
    """``["x0", ..., "x{n-1}"]``, the names of unnamed columns (formatted once per width: 10,000 cost ms)."""
    return list(_default_names_tuple(n))


def _numeric_view(col: np.ndarray) -> np.ndarray | None:
    """Float/int view of an object column whose non-missing entries are all real numbers, else None."""
    if col.dtype.kind != "O":
        return None
    miss = _is_missing(col)
    vals = col[~miss]
    if not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
               for v in vals):
        return None
    if all(isinstance(v, (int, np.integer)) for v in vals) and not miss.any():
        try:
            return col.astype(np.int64)
        except OverflowError:
            pass
    out = np.full(col.shape, np.nan)
    out[~miss] = vals.astype(np.float64)
    return out


def _unique_inverse(vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(vals, return_inverse=True)`` of a 1-D numeric array, by counting for small integers.

    Integers spanning fewer than ``max(2**16, 4 * size)`` values are mapped through a presence
    table (one pass, no sort);
    anything else (wide integers, floats) goes through the sort.
    """
    if vals.dtype.kind in "iu" and vals.size:
        lo, hi = int(vals.min()), int(vals.max())
        if hi - lo < max(1 << 16, 4 * vals.size):
            shifted = (vals - lo) if lo else vals
            present = np.zeros(hi - lo + 1, dtype=bool)
            present[shifted] = True
            uniq = np.flatnonzero(present)
            lut = np.cumsum(present, dtype=np.int64) - 1
            return (uniq + lo).astype(vals.dtype), lut[shifted]
    uniq, inv = np.unique(vals, return_inverse=True)
    return uniq, inv.ravel()
