"""Raw data (NumPy, torch, pandas; any dtype) to integer codes, cardinalities and names."""
from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from numbers import Integral, Number
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _check_feature_names, check_is_fitted

from .._config import get_config
from .._device import chunk_rows, halving_reduce
from .._docstrings import fill_doc
from .._params import CachedParamNames
from ._discretize import Discretizer

#: Docstring fragments of :class:`Encoder` and :func:`encode` (also used by the selectors, which
#: encode their input with an :class:`Encoder`).
ENCODING_FRAGMENTS: dict[str, str] = {
    "coding_rules": """\
Every column is categorical by value unless it is genuinely continuous: strings, bools,
pandas categoricals, integer columns (NumPy or pandas' nullable ``Int*``/``UInt*``) and float
columns whose observed values are all integral, with at most ``max_categories`` distinct
values, get the codes ``0..I-1`` of their sorted distinct values (in a float array, as opposed
to a DataFrame, only when every column qualifies: an array is one kind of measurement). In an object column values
of different types stay different categories (``1``, ``"1"`` and ``True`` are three). Only
floats with non-integral values, and numeric columns with more than ``max_categories``
distinct values, are continuous and go through ``discretizer``. Missing entries (``None``,
``NaN``, ``pandas.NA``/``NaT`` and the ``missing_values``) get the code -1; a raw ``-1`` is a
value like any other. An :class:`Encoded` object is taken as codes already (-1 missing).""",
    "X_columns": """\
X : ndarray, torch.Tensor, pandas.DataFrame or Encoded of shape (n_samples, n_features)
    Raw columns of any dtype (numbers, strings, bools, categoricals); ``None``/``NaN`` are
    missing. An :class:`Encoded` object (the result of :func:`encode`) is used as its codes.""",
    "y_supervised": """\
y : array-like of shape (n_samples,), default=None
    Class labels, used only by a supervised discretizer (``"mdl"``).""",
    "feature_names": """\
feature_names : sequence of str, default=None
    Names to use instead of the DataFrame columns / ``x0, x1, ...``.""",
}
# the parameters of Encoder.fit and Encoder.fit_transform
ENCODING_FRAGMENTS["fit_params"] = "\n".join(ENCODING_FRAGMENTS[name] for name in ("X_columns", "y_supervised",
                                                                                  "feature_names"))
ENCODING_FRAGMENTS |= {
    "label_tail": """\
name : str, default="y"
    Name used in error messages.

Returns
-------
codes : ndarray of shape (n_samples,), int64
    The code ``0..C-1`` of every label.
classes : ndarray of shape (C,)
    The label of each code, sorted.""",
    "discretizer": """\
discretizer : {"uniform", "quantile", "mdl"}, object with ``fit_transform`` or None, default="uniform"
    How continuous columns become codes: a :class:`~tensorprob.Discretizer` strategy
    (equal-width, equal-frequency or supervised MDL bins), or a transformer such as
    scikit-learn's ``KBinsDiscretizer`` (fitted on a clone). ``None`` makes a continuous
    column an error.""",
    "discretizer_auto": """\
discretizer : {"auto", "uniform", "quantile", "mdl"}, object with ``fit_transform`` or None, default="auto"
    How continuous columns become codes: a :class:`~tensorprob.Discretizer` strategy
    (equal-width, equal-frequency or supervised MDL bins), or a transformer such as
    scikit-learn's ``KBinsDiscretizer`` (fitted on a clone). ``"auto"`` is ``"uniform"``
    with a warning naming the discretized columns (pass a strategy to silence it).
    ``None`` makes a continuous column an error.""",
    "n_bins": """\
n_bins : int, default=5
    Number of bins of the built-in discretizers (the largest number for ``"mdl"``).""",
    "max_categories": """\
max_categories : int or None, default=None
    Largest alphabet of a categorical column (None: ``get_config()["max_categories"]``, 64).""",
    "distributed_encoding": """\
distributed : bool, default=False
    X holds this rank's rows of data spread over an initialized ``torch.distributed`` process
    group (zero rows allowed): every rank gets the categories, cardinalities and bin edges of
    all the rows, so all ranks encode identically. Columns whose number, names or dtype kinds
    differ across ranks raise a ``ValueError`` naming the rank. Category sets are all-gathered;
    equal-frequency and MDL bins gather the continuous columns' values (see
    :class:`~tensorprob.Discretizer`); a user discretizer object is refused
    (``NotImplementedError``).""",
    "missing_values": """\
missing_values : scalar, sequence or None, default=None
    Further values that mark a missing entry (for example ``"?"`` or ``-999``), besides
    ``None``, ``NaN`` and ``pandas.NA``/``NaT``. Matched by type and value: ``-1`` marks the
    number -1, not the string ``"-1"``.""",
}

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


def _columns(X: Any) -> tuple[list[np.ndarray], list[str] | None, list[bool]]:
    """Split X into 1-D column arrays; return names (when X has them) and categorical flags.

    A column flagged categorical is an object array whose values are categories as they are
    (pandas categoricals, strings and nullable booleans); nullable numbers become float arrays
    with NaN for ``pd.NA``.
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
        return cols, [str(c) for c in X.columns], cat
    if hasattr(X, "iloc"):  # pandas Series
        return _columns(X.to_frame())
    if hasattr(X, "detach"):  # torch tensor
        X = X.detach().cpu().numpy()
    X = np.asarray(X)
    if X.ndim == 1:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got a 1-D array of shape {X.shape}; "
                         "Reshape your data with X.reshape(-1, 1) for a single feature")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    return list(X.T), None, [False] * X.shape[1]  # the column views, made by NumPy's iteration (several x faster)


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
    table (one pass, no sort: 20-50x faster than the sort on a 100k column of codes);
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


def _small_int_array(X: Any, limit: int, work: type) -> tuple[_Categories, np.ndarray] | None:
    """Encode every column of a 2-D integer array of small range at once: the categories of each.

    Row-major data read column by column costs a strided pass per column; here everything is
    row-major passes in row blocks (no sort, no int64 copy of X). Columns of at most 64 values
    take :func:`_bit_coded` (values in ``[0, 64)`` without even the minima); wider ones: per-column
    minima and maxima as reductions, ``x - min`` written narrow by NumPy, and a (column, value)
    presence table of the codes counted only for columns spanning more than two values.
    When every column's values fill their range without gaps (data that is already coded),
    the codes are ``X - min`` in one pass; otherwise they are read through the running count
    of the presence table. Columns whose values span more than ``max(2**10, 4 * limit)``
    values, or that have more than ``limit`` categories, are left to the general path.

    Returns
    -------
    (_Categories, ndarray) or None
        Per column, its sorted categories, or None (not handled), with their numbers
        (``counts``, 0 where not handled); and the codes (M, N) of the handled columns: int8
        when every value lies in ``[0, 64)`` (the compact dtype of such codes, so that the
        caller need not narrow them), else ``work``. None for an input that is not such an
        array.
    """
    if hasattr(X, "iloc") or not isinstance(X, np.ndarray) or X.ndim != 2 or X.dtype.kind not in "iu" or X.size == 0:
        return None
    if X.dtype == np.uint64 and int(X.max()) > np.iinfo(np.int64).max:
        return None
    dtype = X.dtype  # of the categories
    if X.dtype == np.uint64:  # NumPy would mix uint64 and int64 in float64 (inexact above 2**53)
        X = X.astype(np.int64)
    step = chunk_rows(16 * X.shape[1], X.shape[0], min(get_config()["memory_budget"], 32 * 2**20))
    if hasattr(np, "bitwise_count"):
        # whole-array bounds: two vectorized passes (a per-column reduction over narrow rows
        # makes one inner loop per row, 20x slower on 36 columns)
        if (X.dtype.kind == "u" or int(X.min()) >= 0) and (top := int(X.max())) < 64:  # codes in [0, 64): no minima
            codes = np.empty(X.shape, dtype=np.int8)
            return _bit_coded(X, None, top + 1, codes, step, limit, dtype), codes
    codes = np.empty(X.shape, dtype=work)
    lo = torch.from_numpy(X.min(0).astype(np.int64))
    span = torch.from_numpy(X.max(0).astype(np.int64)) - lo + 1
    small = span <= max(1 << 10, 4 * limit)
    if not bool(small.all()):  # the wide columns take the general path
        sub = [j for j in range(X.shape[1]) if bool(small[j])]
        if not sub:
            return None
        out, tmp = _small_int_array(np.ascontiguousarray(X[:, sub]), limit, work)
        codes[:, sub] = tmp
        items: list[np.ndarray | None] = [None] * X.shape[1]
        for i, j in enumerate(sub):
            items[j] = out[i]
        return _Categories.listed(items), codes
    N = X.shape[1]
    R = int(span.max())
    if R <= 64 and hasattr(np, "bitwise_count"):
        return _bit_coded(X, lo.numpy(), R, codes, step, limit, dtype), codes
    out_t = torch.from_numpy(codes)
    if R - 1 > torch.iinfo(out_t.dtype).max:
        return None
    # x - min written narrow in one NumPy pass (its casting loops are several times faster than a
    # torch int64 temporary and a conversion), row blocks within the memory budget
    # x - min lies in [0, span - 1]: computed in X's own dtype it is exact whenever span - 1 fits
    # that dtype (modular arithmetic), several times cheaper than widening every element to int64
    same = R - 1 <= np.iinfo(X.dtype).max
    lo_np = lo.numpy().astype(X.dtype) if same else lo.numpy()
    for a in range(0, X.shape[0], step):
        np.subtract(X[a:a + step], lo_np, out=codes[a:a + step], casting="unsafe")
    # which values occur: a column's minimum and maximum do; the values between them are
    # checked only in columns spanning more than two (one (column, value) count on the codes)
    present = torch.zeros(N, R, dtype=torch.bool)
    idx = torch.arange(N)
    present[idx, 0] = True
    present[idx, span - 1] = True
    wide = span > 2
    if bool(wide.any()) and R <= 8:  # few values: one vectorized comparison pass per inner value
        for v in range(1, R - 1):
            seen = np.zeros(N, dtype=bool)
            for a in range(0, X.shape[0], step):
                seen |= (codes[a:a + step] == v).any(axis=0)
            present[:, v] = torch.from_numpy(seen)
    elif bool(wide.any()):
        cols = torch.nonzero(wide).squeeze(1)
        col_base = (torch.arange(cols.numel(), dtype=torch.int32) * R)[None, :]
        hits = torch.zeros(cols.numel() * R, dtype=torch.int64)
        sub = out_t if bool(wide.all()) else None
        for a in range(0, X.shape[0], step):
            block = (sub[a:a + step] if sub is not None else out_t[a:a + step].index_select(1, cols))
            hits += torch.bincount((block.to(torch.int32) + col_base).view(-1), minlength=cols.numel() * R)
        present[cols] = hits.view(-1, R) > 0
    present &= torch.arange(R)[None, :] < span[:, None]
    counts = present.sum(1)
    gaps = np.flatnonzero((counts != span).numpy())
    if gaps.size:  # renumber the values that occur, 0 .. count - 1, in the columns with gaps only
        lut = (np.cumsum(present.numpy()[gaps], 1) - 1).astype(codes.dtype).ravel()  # (G * R,)
        col_base = (np.arange(gaps.size, dtype=np.intp) * R)[None, :]
        for a in range(0, X.shape[0], step):
            codes[a:a + step, gaps] = lut[codes[a:a + step, gaps].astype(np.intp) + col_base]
    col, val = np.nonzero(present.numpy())  # row-major: the values of each column, sorted
    return _Categories((val + lo.numpy()[col]).astype(dtype), counts.numpy(), limit), codes


class _Categories:
    """Per column, its sorted categories or None (left to the general path), built only when read.

    ``values`` holds every column's categories one after another and ``counts`` their numbers
    (0 for a column left to the general path: more than ``limit`` categories), so an array's cardinalities and
    completeness are read without a Python pass over its columns; the per-column arrays are cut
    on demand (:meth:`tolist`, or one by ``[j]``): 10,000 slices in a Python loop cost about
    2 ms, as much as coding the array. Built from bitmasks (:meth:`of_masks`), even ``values``
    is written only when read.
    """

    def __init__(self, values: np.ndarray | None, counts: np.ndarray, limit: int | None = None) -> None:
        counts = np.asarray(counts, dtype=np.int64)
        self._values = values
        self._numbers = counts  # of each column's values in ``values``, whether handled or not
        self._ends: np.ndarray | None = None
        self._masks: tuple | None = None
        self.counts = counts if limit is None else np.where(counts <= limit, counts, 0)
        self._items: list | None = None

    @classmethod
    def of_masks(cls, masks: np.ndarray, base: np.ndarray | None, dtype: np.dtype, limit: int) -> _Categories:
        """From each column's bitmask of values (unsigned): bit v set when ``base[j] + v`` occurs (``base`` None: 0)."""
        out = cls(None, np.bitwise_count(masks), limit)
        out._masks = (masks, base, dtype)
        return out

    @property
    def values(self) -> np.ndarray:
        """Every column's sorted categories, one column after another."""
        if self._values is None:
            masks, base, dtype = self._masks
            bit = np.arange(8 * masks.dtype.itemsize, dtype=masks.dtype)
            present = ((masks[:, None] >> bit[None, :]) & masks.dtype.type(1)).astype(bool)
            col, val = np.nonzero(present)  # row-major: the values of each column, sorted
            self._values = (val if base is None else val + base[col]).astype(dtype)
            self._masks = None
        return self._values

    @property
    def ends(self) -> np.ndarray:
        """Where each column's categories end in ``values``."""
        if self._ends is None:
            self._ends = np.cumsum(self._numbers)
        return self._ends

    def __setstate__(self, state: dict) -> None:
        if "values" in state:  # pickled before the values were built on demand (2026-11-27)
            values, ends = state.pop("values"), state.pop("ends")
            state.update(_values=values, _ends=ends, _numbers=np.diff(ends, prepend=0), _masks=None)
        self.__dict__.update(state)

    @classmethod
    def listed(cls, items: list) -> _Categories:
        """From per-column arrays (or None) as they are."""
        out = cls(np.empty(0), np.zeros(len(items), dtype=np.int64))
        out.counts = np.fromiter((0 if c is None else len(c) for c in items), dtype=np.int64, count=len(items))
        out._items = list(items)
        return out

    def __len__(self) -> int:
        return self.counts.size

    def __getitem__(self, j: int) -> np.ndarray | None:
        if self._items is not None:
            return self._items[j]
        if not self.counts[j]:
            return None
        e = int(self.ends[j])
        return self.values[e - int(self.counts[j]):e]

    def tolist(self) -> list[np.ndarray | None]:
        """The per-column arrays (views of ``values``), None for the columns not handled."""
        if self._items is None:
            c = self.counts
            if c.size and c.min() == c.max() and c[0] and self.values.size == c.size * int(c[0]):
                self._items = list(self.values.reshape(c.size, int(c[0])))  # NumPy's iteration: no slicing loop
            else:
                self._items = [self[j] for j in range(c.size)]
        return self._items


def _bit_coded(X: np.ndarray, lo: np.ndarray | None, n_values: int, codes: np.ndarray, step: int, limit: int,
               dtype: np.dtype) -> _Categories:
    """:func:`_small_int_array` for columns of at most 64 values (``x - lo`` in ``[0, 64)``), by bitmasks.

    Each column's values are the bits of the OR over its rows of ``1 << (x - lo)`` (``lo`` None:
    0, for values known to lie in ``[0, 64)``; ``n_values`` bounds ``x - lo + 1``), and the code of ``x`` is the number of values
    below it that occur, ``popcount(((1 << (x - lo)) - 1) & mask)``: a few passes of cheap
    integer operations over narrow arrays, no gather (NumPy's fancy indexing costs several
    nanoseconds per element) and no comparison per value. Columns whose values are exactly
    ``lo, lo + 1, ...`` are written as ``x - lo`` without the count.
    """
    N = X.shape[1]
    lo_x = None if lo is None else lo.astype(X.dtype)  # the minima: in X's dtype

    def shifted(a: int) -> np.ndarray:  # x - lo in [0, 64): exact in uint8 (modular arithmetic)
        block = X[a:a + step]
        return block if lo_x is None else np.subtract(block, lo_x, dtype=np.uint8, casting="unsafe")

    bits = np.dtype(f"uint{max(8, 1 << (n_values - 1).bit_length())}")
    one, blocks = bits.type(1), range(0, X.shape[0], step)
    mask = np.zeros(N, dtype=bits)
    kept = []
    for a in blocks:
        d = shifted(a)
        b = np.left_shift(one, d, dtype=bits, casting="unsafe")
        mask |= _or_over_rows(b)
        if len(blocks) == 1:
            kept = [(d, b)]
    # a column's values are 0 .. c - 1 exactly when its mask is 2**c - 1 (mask + 1 a power of two);
    # otherwise (gaps, or values above 0 without lo) each code counts the values below it: in
    # every column when many need it, else x - lo everywhere and the count in those columns only
    renumber = np.flatnonzero(mask & (mask + one))
    whole = 8 * renumber.size > N
    for a in blocks:
        d, b = kept[0] if kept else (shifted(a), None)
        if whole:
            b = np.left_shift(one, d, dtype=bits, casting="unsafe") if b is None else b
            b -= one
            b &= mask
            np.copyto(codes[a:a + step], np.bitwise_count(b), casting="unsafe")
            continue
        np.copyto(codes[a:a + step], d, casting="unsafe")
        if renumber.size:
            below = np.left_shift(one, d[:, renumber], dtype=bits, casting="unsafe")
            below -= one
            below &= mask[renumber]
            codes[a:a + step, renumber] = np.bitwise_count(below)
    return _Categories.of_masks(mask, None if lo is None else lo.astype(np.int64), dtype, limit)


def _or_over_rows(b: np.ndarray) -> np.ndarray:
    """The bitwise OR of the rows of a 2-D unsigned array.

    On rows narrower than 2,048 entries by halving (the upper half ORed into the lower, about
    log2(M) whole-array passes): NumPy's reduction over axis 0 makes one short inner loop per
    row, 2-4x slower on 36-784 columns, and faster only on wide rows.
    """
    n = b.shape[0]
    if b.shape[1] >= 2048 or n < 4:
        return np.bitwise_or.reduce(b, axis=0)
    h = n // 2  # the first halving into a new array (b is the caller's), the rest in place
    acc = np.bitwise_or(b[:h], b[h:2 * h])
    if n & 1:
        acc[0] |= b[n - 1]
    return halving_reduce(acc, np.bitwise_or).copy()


def _categorical_numbers(vals: np.ndarray, limit: int, uniq: np.ndarray | None = None) -> bool:
    """Whether observed numbers are categories by value: all integral, at most ``limit`` distinct."""
    return _is_integral(vals) and (np.unique(vals) if uniq is None else uniq).size <= limit


def _is_integral(vals: np.ndarray) -> bool:
    """Whether every (finite) value of a numeric array is a whole number."""
    if vals.dtype.kind in "iub":
        return True
    return bool(np.all(np.isfinite(vals)) and np.all(vals == np.round(vals)))


@fill_doc(**ENCODING_FRAGMENTS)
class Encoder(OneToOneFeatureMixin, TransformerMixin, CachedParamNames, BaseEstimator):
    """Encoder of raw columns (NumPy, torch, pandas; any dtype) as integer codes (a scikit-learn transformer).

    %(coding_rules)s

    Parameters
    ----------
    %(discretizer_auto)s
    %(n_bins)s
    %(max_categories)s
    %(missing_values)s
    %(distributed_encoding)s

    Attributes
    ----------
    feature_names_ : list of str
        Column names (DataFrame columns, or ``x0, x1, ...``).
    cardinalities_ : ndarray of int64
        Alphabet size of every column.
    kinds_ : list of {"categorical", "codes", "discretized"}
        Kind of every column: categorical by value, codes of an :class:`Encoded` input used as
        they are, or continuous values binned by the discretizer.
    categories_ : list of ndarray or None
        For categorical and code columns, the value of each code (sorted).
    discretized_ : list of str
        Names of the columns that were discretized (continuous), in order.
    discretizer_ : Discretizer or object or None
        Fitted discretizer of the continuous columns (in the order they appear).
    n_features_in_ : int
        Number of columns seen by ``fit``.
    feature_names_in_ : ndarray of str
        Only when X has string column names.

    See Also
    --------
    encode : The function form, returning codes, cardinalities, names and the encoder.
    Discretizer : The discretizer of continuous columns.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorprob import Encoder
    >>> X = np.array([["a", 0.1], ["b", 0.9], [None, 0.5]], dtype=object)
    >>> enc = Encoder(discretizer="uniform", n_bins=2).fit(X)
    >>> enc.transform(X).tolist(), enc.kinds_, enc.discretized_
    ([[0, 0], [1, 1], [-1, 1]], ['categorical', 'discretized'], ['x1'])
    """

    _parameter_constraints: ClassVar[dict] = {
        "discretizer": [StrOptions({"auto", "uniform", "quantile", "mdl"}), HasMethods(["fit_transform"]), None],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "max_categories": [Interval(Integral, 1, None, closed="left"), None],
        "missing_values": "no_validation",  # any value, or a sequence of values
        "distributed": ["boolean"],
    }

    def __init__(self, discretizer: Any = "auto", n_bins: int = 5, max_categories: int | None = None,
                 missing_values: Any = None, distributed: bool = False) -> None:
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.max_categories = max_categories
        self.missing_values = missing_values
        self.distributed = distributed

    @property
    def categories_(self) -> list[np.ndarray | None]:
        """For categorical and code columns, the value of each code (sorted); None for the others."""
        cats = self.__dict__.get("_categories", self.__dict__.get("categories_"))  # (an encoder pickled before 2026-11-27)
        if cats is None:
            raise AttributeError(f"{type(self).__name__} has no attribute 'categories_' (not fitted)")
        if isinstance(cats, _Categories):  # an array coded at once keeps its categories packed until read
            cats = self._categories = cats.tolist()
        return cats

    @categories_.setter
    def categories_(self, value: Any) -> None:
        self._categories = value

    @fill_doc(**ENCODING_FRAGMENTS)
    @_fit_context(prefer_skip_nested_validation=False)  # a user discretizer is validated when it fits
    def fit(self, X: Any, y: Any = None, feature_names: Sequence[str] | None = None) -> Encoder:
        """Learn the categories and bins of every column.

        Parameters
        ----------
        %(fit_params)s

        Returns
        -------
        self : Encoder
            The fitted encoder (``kinds_``, ``categories_``, ``cardinalities_``, ...).
        """
        self._fit(X, y, feature_names)
        return self

    @fill_doc(**ENCODING_FRAGMENTS)
    @_fit_context(prefer_skip_nested_validation=False)
    def fit_transform(self, X: Any, y: Any = None, feature_names: Sequence[str] | None = None) -> np.ndarray:
        """Fit, then return the codes of X (computed once).

        Parameters
        ----------
        %(fit_params)s

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Codes in the smallest signed integer dtype that holds them, -1 for missing.
        """
        return self._fit(X, y, feature_names)

    # -- fitting -------------------------------------------------------------------------
    def _fit_encoded(self, X: Encoded, feature_names: Sequence[str] | None) -> np.ndarray:
        codes = _check_codes(X.codes, X.cardinalities)
        cards = np.asarray(X.cardinalities, dtype=np.int64).copy()
        if feature_names is None:
            feature_names = X.feature_names if X.feature_names is not None else [f"x{j}" for j in range(codes.shape[1])]
        names = [str(n) for n in feature_names]
        if len(names) != codes.shape[1]:
            raise ValueError(f"feature_names has {len(names)} entries but X has {codes.shape[1]} columns")
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = codes.shape[1]
        self.feature_names_ = names
        self.kinds_ = ["codes"] * codes.shape[1]
        self.categories_ = _Categories(np.arange(int(cards.sum()), dtype=np.int64) - np.repeat(np.cumsum(cards) - cards, cards),
                                       cards)  # 0 .. c - 1 per column, cut when read
        self.discretized_ = []
        self.discretizer_ = None
        self.cardinalities_ = cards
        self._cont_idx = []
        self._lookup = [None] * codes.shape[1]
        return _compact(codes, cards)

    def _fit(self, X: Any, y: Any, feature_names: Sequence[str] | None) -> np.ndarray:
        from .._distributed import active

        if active(self.distributed):
            return self._fit_distributed(X, y, feature_names)
        if isinstance(X, Encoded):
            return self._fit_encoded(X, feature_names)
        _check_sparse(self, X)
        # a plain 2-D integer array is split into columns only if some column needs the
        # per-column path (10,000 column views cost 0.5 ms; _small_int_array codes it whole)
        int_array = type(X) is np.ndarray and X.ndim == 2 and X.dtype.kind in "iu"
        if int_array:
            cols, names, pandas_cat = None, None, [False] * X.shape[1]
            n_rows, n_cols = X.shape
        else:
            cols, names, pandas_cat = _columns(X)
            n_rows, n_cols = (cols[0].shape[0] if cols else int(np.shape(X)[0])), len(cols)
        if not n_cols:
            raise ValueError(f"0 feature(s) (shape=({n_rows}, 0)) while a minimum of 1 is required.")
        if n_rows == 0:
            raise ValueError(f"X is empty ({n_rows} rows, {n_cols} columns)")
        if type(X) is np.ndarray:  # scikit-learn's check for an array without names, without its 20 us
            self.__dict__.pop("feature_names_in_", None)
        else:
            _check_feature_names(self, X, reset=True)
        self.n_features_in_ = n_cols
        if feature_names is not None:
            if len(feature_names) != n_cols:
                raise ValueError(f"feature_names has {len(feature_names)} entries but X has {n_cols} columns")
            names = [str(n) for n in feature_names]
        if names is None:
            names = _default_names(n_cols)
        limit = self.max_categories if self.max_categories is not None else get_config()["max_categories"]
        miss_keys = _missing_keys(self.missing_values)
        kinds: list[str] = []
        cats: list[np.ndarray | None] = []
        lookup: list[dict | None] = []
        # working codes: every alphabet is at most max(limit, n_bins) values, except a user
        # discretizer's (int32 then); returned in the smallest dtype that holds them
        narrow = isinstance(self.discretizer, str) or self.discretizer is None
        work = np.int16 if narrow and max(limit, self.n_bins) < 2**15 else np.int32
        cont_idx: list[int] = []
        # A float array (not a DataFrame) is one measurement on every column: its integral
        # columns are categories only when all of them are (MNIST's 0..255 pixels stay one
        # kind of variable, all discretized); DataFrame columns are typed one by one.
        float_array = not int_array and not hasattr(X, "iloc") and (
            cols[0].dtype.kind == "f" if isinstance(X, np.ndarray) else all(c.dtype.kind == "f" for c in cols))
        if float_array:
            array_is_categorical = all(_categorical_numbers(c[~(_is_missing(c) | _user_missing(c, miss_keys))], limit)
                                       for c in cols)
        fast = None if miss_keys else _small_int_array(X, limit, work)
        if fast is not None and bool(fast[0].counts.all()):  # every column coded at once, in its compact dtype
            fast, codes = fast
        else:
            codes = np.empty((n_rows, n_cols), dtype=work)  # the per-column path's working codes
            if fast is not None:  # with the columns coded at once
                fast, done = fast
                codes[...] = done
        # two kinds of arrays need no pass per column: a float array continuous as a whole (one
        # masked float64 copy) and a small-integer array coded entirely by _small_int_array
        whole = None
        by_column = True
        if float_array and not array_is_categorical:
            whole = np.stack(cols, axis=1).astype(np.float64, copy=False)
            whole = np.where(_is_missing(whole) | _user_missing(whole, miss_keys), np.nan, whole)
            kinds, cats, lookup = ["discretized"] * len(cols), [None] * len(cols), [None] * len(cols)
            cont_idx, by_column = list(range(len(cols))), False
        elif fast is not None and bool(fast.counts.all()):
            kinds, cats, lookup = ["categorical"] * n_cols, fast, [None] * n_cols  # cut when read
            by_column = False
        if by_column and cols is None:
            cols = _columns(X)[0]
        for j, col in enumerate(cols if by_column else ()):
            if fast is not None and fast[j] is not None:  # categories by value, codes already written
                kinds.append("categorical")
                cats.append(fast[j])
                lookup.append(None)
                continue
            if col.dtype.kind == "O" and not pandas_cat[j]:
                num = _numeric_view(col)
                col = col if num is None else num
            kind = col.dtype.kind
            if kind == "c":
                raise ValueError(f"Complex data not supported: column {names[j]!r} is complex-valued; "
                                 "tensorprob handles real or categorical data")
            miss = _is_missing(col) | _user_missing(col, miss_keys)
            if kind in "iuf":
                any_miss = bool(miss.any())
                vals = col[~miss] if any_miss else col
                uniq, inv = _unique_inverse(vals)
                if array_is_categorical if float_array else _categorical_numbers(vals, limit, uniq):
                    kinds.append("categorical")
                    cats.append(uniq)
                    lookup.append(None)
                    if any_miss:
                        codes[:, j] = -1
                        codes[~miss, j] = inv
                    else:
                        codes[:, j] = inv
                else:
                    kinds.append("discretized")
                    cats.append(None)
                    lookup.append(None)
                    cols[j] = np.where(miss, np.nan, col.astype(np.float64))
                    cont_idx.append(j)
            elif kind in "bUSMm":
                vals = col[~miss]
                uniq, inv = np.unique(vals, return_inverse=True)
                self._check_limit(names[j], uniq.size, limit)
                kinds.append("categorical")
                cats.append(uniq)
                lookup.append(None)
                codes[:, j] = -1
                codes[~miss, j] = inv.ravel()
            elif kind == "O":
                vals = col[~miss]
                try:
                    inverse, keys, firsts = _object_categories(vals)
                except TypeError as exc:
                    raise TypeError(f"column {names[j]!r} holds unhashable values ({exc})") from None
                index = self._add_categories(dict(zip(keys, firsts)), names[j], limit, kinds, cats, lookup)
                codes[:, j] = -1
                codes[~miss, j] = np.asarray([index[kv] for kv in keys], dtype=np.int64)[inverse]
            else:
                raise TypeError(f"column {names[j]!r} has unsupported dtype {col.dtype}")
        self.discretizer_ = None
        if cont_idx:
            if self.discretizer is None:
                raise ValueError(
                    f"column {names[cont_idx[0]]!r} is continuous ({len(cont_idx)} continuous column(s) in all) but "
                    "discretizer=None; pass discretizer='uniform'|'quantile'|'mdl' or encode the data first"
                )
            cont = whole if whole is not None else np.stack([cols[j] for j in cont_idx], axis=1)
            if np.isinf(cont).any():
                bad = names[cont_idx[int(np.flatnonzero(np.isinf(cont).any(0))[0])]]
                raise ValueError(f"column {bad!r} contains infinite values")
            if isinstance(self.discretizer, str):
                strategy = "uniform" if self.discretizer == "auto" else self.discretizer
                disc = Discretizer(n_bins=self.n_bins, strategy=strategy)
            else:  # a user object: fit a copy, never the caller's instance
                from sklearn.base import clone

                disc = clone(self.discretizer) if hasattr(self.discretizer, "get_params") else self.discretizer
            out = np.asarray(disc.fit_transform(cont, y) if isinstance(disc, Discretizer) else disc.fit_transform(cont))
            codes[:, cont_idx] = out
            self.discretizer_ = disc
            if self.discretizer == "auto":
                warnings.warn(
                    f"{len(cont_idx)} continuous column(s) discretized into {self.n_bins} equal-width bins: "
                    f"{_preview([names[j] for j in cont_idx])}; pass discretizer='uniform' (or another strategy) "
                    "to silence this warning, or encode them yourself", UserWarning, stacklevel=_outside_stacklevel())
        # categorical columns: their number of categories; discretized ones (cont_idx, in column
        # order, as the discretizer saw them): their bins
        if fast is not None and not by_column:  # every column coded by _small_int_array
            cards = np.maximum(fast.counts, 1)
        else:
            cards = np.fromiter((0 if c is None else len(c) for c in cats), dtype=np.int64, count=len(cats))
            np.maximum(cards, 1, out=cards)
        for dj, j in enumerate(cont_idx):
            if isinstance(self.discretizer_, Discretizer):
                cards[j] = self.discretizer_.n_bins_[dj]
            else:
                cards[j] = max(1, int(codes[:, j].max()) + 1)
        return self._finish(codes, cards, names, kinds, cats, cont_idx, lookup)

    def _fit_distributed(self, X: Any, y: Any, feature_names: Sequence[str] | None) -> np.ndarray:
        """:meth:`fit_transform` on this rank's rows, with the categories and bins of all ranks' rows.

        Three steps. (1) Every rank describes its columns (number, names, dtype kinds) and the
        ranks raise together when the descriptions differ. (2) Every rank summarizes each
        column (its distinct values, or for a numeric column whether they are integral and,
        when there are at most ``max_categories`` of them, which), the summaries are
        all-gathered, and the kind and categories of every column are decided from the union:
        exactly the single-process decision on all the rows. (3) Each rank codes its own rows
        against those categories; continuous columns go through a distributed
        :class:`~tensorprob.encoding.Discretizer`. A user-supplied discretizer object cannot be
        fitted across ranks and is refused.
        """
        from .. import _distributed

        if isinstance(X, Encoded):
            _distributed.check_same("Encoded cardinalities",
                                    np.asarray(X.cardinalities, dtype=np.int64).tolist())
            return _distributed.agree(lambda: self._fit_encoded(X, feature_names))
        if not (isinstance(self.discretizer, str) or self.discretizer is None):
            raise NotImplementedError("distributed=True fits the built-in discretizers ('uniform', 'quantile', "
                                      "'mdl') across ranks; a user discretizer object cannot be fitted on rows "
                                      "spread over processes: discretize the columns first")
        limit = self.max_categories if self.max_categories is not None else get_config()["max_categories"]
        miss_keys = _missing_keys(self.missing_values)

        def describe() -> tuple:
            _check_sparse(self, X)
            cols, names, pandas_cat = _columns(X)
            if not cols:
                raise ValueError("0 feature(s) while a minimum of 1 is required.")
            _check_feature_names(self, X, reset=True)
            if feature_names is not None and len(feature_names) != len(cols):
                raise ValueError(f"feature_names has {len(feature_names)} entries but X has {len(cols)} columns")
            summaries = []
            for j, col in enumerate(cols):
                if col.dtype.kind == "c":
                    raise ValueError(f"Complex data not supported: column {j} is complex-valued")
                if col.dtype.kind == "O" and not pandas_cat[j]:
                    num = _numeric_view(col)
                    if num is not None:
                        col = cols[j] = num
                miss = _is_missing(col) | _user_missing(col, miss_keys)
                vals = col[~miss]
                if col.dtype.kind in "iuf":
                    uniq = np.unique(vals)
                    summaries.append(("number", _is_integral(vals), uniq if uniq.size <= limit else None))
                elif col.dtype.kind in "bUSMm":
                    summaries.append(("plain", np.unique(vals)))
                elif col.dtype.kind == "O":
                    try:
                        _, keys, firsts = _object_categories(vals)
                    except TypeError as exc:
                        raise TypeError(f"column {j} holds unhashable values ({exc})") from None
                    summaries.append(("object", dict(zip(keys, firsts))))
                else:
                    raise TypeError(f"column {j} has unsupported dtype {col.dtype}")
            sig = (len(cols), names, [c.dtype.kind for c in _columns(X)[0]], list(pandas_cat))
            return cols, names, pandas_cat, summaries, sig

        cols, names, _, summaries, sig = _distributed.agree(describe)
        _distributed.check_same("columns (number, names, dtype kinds)", sig)
        n_rows = cols[0].shape[0]
        if sum(_distributed.all_gather(n_rows)) == 0:
            raise ValueError(f"X is empty on every rank (0 rows, {len(cols)} columns)")
        every = _distributed.all_gather(summaries)  # [rank][column]
        self.n_features_in_ = len(cols)
        if feature_names is not None:
            names = [str(n) for n in feature_names]
        if names is None:
            names = _default_names(len(cols))
        # the kind of each column over all ranks: an object column read as numbers on one rank
        # but not on another holds mixed values, which are categories by (type, value)
        kinds_seen = [{rk[j][0] for rk in every if not (rk[j][0] == "number" and rk[j][2] is not None
                                                         and rk[j][2].size == 0)} for j in range(len(cols))]
        narrow = isinstance(self.discretizer, str) or self.discretizer is None
        codes = np.empty((n_rows, len(cols)), dtype=np.int16 if narrow and max(limit, self.n_bins) < 2**15 else np.int32)
        kinds: list[str] = []
        cats: list[np.ndarray | None] = []
        lookup: list[dict | None] = []
        cont_idx: list[int] = []
        numeric = [kinds_seen[j] <= {"number"} for j in range(len(cols))]

        def numeric_union(j: int) -> np.ndarray | None:
            parts = [rk[j] for rk in every]
            if not all(p[1] for p in parts) or any(p[2] is None for p in parts):
                return None
            uniq = np.unique(np.concatenate([p[2] for p in parts]))
            return uniq if uniq.size <= limit else None

        unions = [numeric_union(j) if numeric[j] else None for j in range(len(cols))]
        float_array = not hasattr(X, "iloc") and all(k == "f" for k in sig[2])
        array_is_categorical = float_array and all(u is not None for u in unions)
        for j, col in enumerate(cols):
            miss = _is_missing(col) | _user_missing(col, miss_keys)
            if numeric[j]:
                uniq = unions[j]
                if (array_is_categorical if float_array else uniq is not None):
                    kinds.append("categorical")
                    cats.append(uniq)
                    lookup.append(None)
                    codes[:, j] = -1
                    codes[~miss, j] = np.searchsorted(uniq, col[~miss])
                else:
                    kinds.append("discretized")
                    cats.append(None)
                    lookup.append(None)
                    cols[j] = np.where(miss, np.nan, col.astype(np.float64))
                    cont_idx.append(j)
            elif kinds_seen[j] == {"plain"}:
                uniq = np.unique(np.concatenate([rk[j][1] for rk in every]))
                self._check_limit(names[j], uniq.size, limit)
                kinds.append("categorical")
                cats.append(uniq)
                lookup.append(None)
                codes[:, j] = -1
                codes[~miss, j] = np.searchsorted(uniq, col[~miss])
            else:  # object values: categories by (type group, value), the first value seen kept
                table: dict = {}
                for rk in every:
                    if rk[j][0] == "number" and rk[j][2] is None:  # more numbers than categories allowed
                        self._check_limit(names[j], limit + 1, limit)
                    part = rk[j][1] if rk[j][0] == "object" else {_key(v): v for v in rk[j][2]}
                    for kv, v in part.items():
                        table.setdefault(kv, v)
                index = self._add_categories(table, names[j], limit, kinds, cats, lookup)
                codes[:, j] = -1
                inverse, keys, _ = _object_categories(col[~miss])
                codes[~miss, j] = np.asarray([index[kv] for kv in keys], dtype=np.int64)[inverse]
        self.discretizer_ = None
        if cont_idx:
            if self.discretizer is None:
                raise ValueError(
                    f"column {names[cont_idx[0]]!r} is continuous ({len(cont_idx)} continuous column(s) in all) but "
                    "discretizer=None; pass discretizer='uniform'|'quantile'|'mdl' or encode the data first")
            cont = np.stack([cols[j] for j in cont_idx], axis=1)
            inf = _distributed.all_gather(np.isinf(cont).any(0))
            bad = np.flatnonzero(np.any(inf, 0))
            if bad.size:
                raise ValueError(f"column {names[cont_idx[int(bad[0])]]!r} contains infinite values")
            strategy = "uniform" if self.discretizer == "auto" else self.discretizer
            disc = Discretizer(n_bins=self.n_bins, strategy=strategy, distributed=True)
            codes[:, cont_idx] = disc.fit_transform(cont, y)
            self.discretizer_ = disc
            if self.discretizer == "auto":
                warnings.warn(
                    f"{len(cont_idx)} continuous column(s) discretized into {self.n_bins} equal-width bins: "
                    f"{_preview([names[j] for j in cont_idx])}; pass discretizer='uniform' (or another strategy) "
                    "to silence this warning, or encode them yourself", UserWarning, stacklevel=_outside_stacklevel())
        cards = np.array([self.discretizer_.n_bins_[cont_idx.index(j)] if kinds[j] == "discretized"
                          else max(1, len(cats[j])) for j in range(len(cols))], dtype=np.int64)
        return self._finish(codes, cards, names, kinds, cats, cont_idx, lookup)

    def _finish(self, codes: np.ndarray, cards: np.ndarray, names: Sequence[str], kinds: list, cats: list,
                cont_idx: list, lookup: list) -> np.ndarray:
        """Set the fitted attributes; return the codes in their compact dtype."""
        self.feature_names_ = list(names)
        self.kinds_ = kinds
        self.categories_ = cats
        self.discretized_ = [names[j] for j in cont_idx]
        self.cardinalities_ = cards
        self._cont_idx = cont_idx
        self._lookup = lookup
        return _compact(codes, cards)

    def _add_categories(self, table: dict, name: str, limit: int, kinds: list, cats: list, lookup: list) -> dict:
        """Record a categorical column whose values are ``table`` (key -> value); return its key -> code map."""
        order = _sort_keys(list(table))
        self._check_limit(name, len(order), limit)
        index = {kv: i for i, kv in enumerate(order)}
        uniq = np.empty(len(order), dtype=object)
        uniq[:] = [table[kv] for kv in order]
        kinds.append("categorical")
        cats.append(uniq)
        lookup.append(index)
        return index

    @staticmethod
    def _check_limit(name: str, size: int, limit: int) -> None:
        if size > limit:
            raise ValueError(
                f"column {name!r} has {size} categories, above max_categories={limit}; "
                "raise the limit with tensorprob.config_context(max_categories=...) or pass max_categories"
            )

    def _reorder(self, X: Any) -> Any:
        return match_columns(X, getattr(self, "feature_names_in_", None))

    @fill_doc(**ENCODING_FRAGMENTS)
    def transform(self, X: Any) -> np.ndarray:
        """Encode new data with the fitted categories and bins.

        Parameters
        ----------
        %(X_columns)s
            The columns must match those seen by ``fit``; DataFrame columns are matched by name
            (in any order).

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Codes, -1 for missing.

        Raises
        ------
        ValueError
            On a category never seen when fitting, or other columns than when fitting.
        """
        check_is_fitted(self)
        if isinstance(X, Encoded):
            X = X.codes
        _check_sparse(self, X)
        X = self._reorder(X)
        cols, _, pandas_cat = _columns(X)
        _check_feature_names(self, X, reset=False)
        if len(cols) != self.n_features_in_:
            raise ValueError(f"X has {len(cols)} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        n_rows = cols[0].shape[0]
        miss_keys = _missing_keys(self.missing_values)
        codes = np.empty((n_rows, len(cols)), dtype=np.int32)
        for j, (kind, cat) in enumerate(zip(self.kinds_, self.categories_)):
            col = cols[j]
            if col.dtype.kind == "O" and not pandas_cat[j] and (kind != "categorical" or self._lookup[j] is None):
                num = _numeric_view(col)
                col = col if num is None else num
            if kind == "codes":
                c = np.asarray(col)
                if c.dtype.kind == "f":
                    c = np.where(np.isnan(c), -1, c)
                c = c.astype(np.int64)
                if (c < -1).any() or (c >= self.cardinalities_[j]).any():
                    raise ValueError(f"column {self.feature_names_[j]!r} has codes outside -1..{self.cardinalities_[j] - 1}")
                codes[:, j] = c
                continue
            miss = _is_missing(col) | _user_missing(col, miss_keys)
            if kind == "discretized":
                cols[j] = np.where(miss, np.nan, np.asarray(col, dtype=np.float64))
                continue
            vals = col[~miss]
            table = self._lookup[j]
            if table is not None:
                try:
                    inverse, keys, firsts = _object_categories(vals)
                    known = [table.get(kv, -1) for kv in keys]
                except TypeError:  # unhashable: a value no fit can have seen (named below)
                    known, firsts = None, [next(v for v in vals if _unhashable(v))]
                if known is None or -1 in known:
                    v = firsts[0 if known is None else known.index(-1)]
                    raise ValueError(f"column {self.feature_names_[j]!r} has a value not seen when fitting: "
                                     f"{v!r}") from None
                pos = np.asarray(known, dtype=np.int64)[inverse]
            else:
                try:
                    pos = np.searchsorted(cat, vals).clip(0, len(cat) - 1)
                    ok = np.asarray(cat[pos] == vals, dtype=bool)
                except TypeError:
                    ok = np.zeros(vals.shape[0], dtype=bool)
                    pos = np.zeros(vals.shape[0], dtype=np.int64)
                if not np.all(ok):
                    raise ValueError(f"column {self.feature_names_[j]!r} has a value not seen when fitting: "
                                     f"{vals[~ok][0]!r}")
            codes[:, j] = -1
            codes[~miss, j] = pos
        if self._cont_idx:
            cont = np.stack([np.asarray(cols[j], dtype=np.float64) for j in self._cont_idx], axis=1)
            codes[:, self._cont_idx] = np.asarray(self.discretizer_.transform(cont)).astype(np.int64)
        return _compact(codes, self.cardinalities_)


    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN / None are missing entries (code -1)
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.transformer_tags.preserves_dtype = []  # the output is integer codes
        return tags


def match_columns(X: Any, fitted: Any) -> Any:
    """``X`` with the ``fitted`` columns in the fitted order, when X is a DataFrame (matched by name).

    Missing, extra or duplicate column names are an error; anything else is returned as it is.
    """
    if fitted is None or not (hasattr(X, "iloc") and hasattr(X, "columns")):
        return X
    cols = [str(c) for c in X.columns]
    seen: set = set()
    dup = list(dict.fromkeys(c for c in cols if c in seen or seen.add(c)))
    if dup:
        raise ValueError(f"X has duplicate column names: {_preview(dup)}; every column needs its own name")
    fitted = [str(c) for c in fitted]
    missing = [c for c in fitted if c not in seen]
    extra = [c for c in cols if c not in set(fitted)]
    if missing or extra:
        parts = ([f"missing column(s) {_preview(missing)}"] if missing else []) + (
            [f"unexpected column(s) {_preview(extra)}"] if extra else [])
        raise ValueError(f"X does not have the columns seen by fit: {'; '.join(parts)}")
    if cols == fitted:
        return X
    position = {c: i for i, c in enumerate(cols)}
    return X.iloc[:, [position[c] for c in fitted]]


def _check_codes(codes: Any, cards: Any) -> np.ndarray:
    """Integer codes (M, N) in ``-1..card-1`` per column, as int64."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.dtype.kind not in "iu":
        raise ValueError(f"Encoded codes must be a 2-D integer array, got {codes.dtype} of shape {codes.shape}")
    cards = np.asarray(cards, dtype=np.int64)
    if cards.shape != (codes.shape[1],):
        raise ValueError(f"Encoded has {cards.size} cardinalities for {codes.shape[1]} columns")
    codes = codes.astype(np.int64)
    if codes.size and ((codes < -1).any() or (codes >= cards).any()):
        raise ValueError("Encoded codes must lie in -1..cardinality-1 (-1 = missing)")
    return codes


def _check_sparse(est: Any, X: Any) -> None:
    import scipy.sparse as sp

    if sp.issparse(X):
        raise TypeError(f"{type(est).__name__} does not accept sparse input: pass a dense array (X.toarray())")


def _compact_dtype(cards: np.ndarray) -> np.dtype:
    """Smallest signed integer dtype that holds every cardinality (so every code and -1)."""
    top = int(np.max(cards)) if np.size(cards) else 1
    for dt in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def _compact(codes: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """Codes in :func:`_compact_dtype` (no copy when they already are)."""
    return codes.astype(_compact_dtype(cards), copy=False)


class Encoded(NamedTuple):
    """Result of :func:`encode`: the codes, their alphabet sizes and names, and the encoder.

    Parameters
    ----------
    codes : ndarray of shape (n_samples, n_features)
        Integer codes ``0..I_n-1`` of every column n, -1 for missing.
    cardinalities : ndarray of shape (n_features,)
        Alphabet sizes ``I_n``.
    feature_names : list of str or None, default=None
        Column names (DataFrame columns, or ``x0, x1, ...``).
    encoder : Encoder or None, default=None
        The fitted :class:`Encoder`, whose ``transform`` encodes new data the same way.

    Notes
    -----
    An ``Encoded`` is how tensorprob recognizes data that is encoded already: :func:`encode`,
    :class:`Encoder`, :func:`~tensorprob.fit_cpd` and the coded selectors take its codes as
    they are, -1 as missing. Codes you made yourself are declared the same way:
    ``Encoded(codes, cardinalities)``. A plain integer array is raw data: its values are
    categories, and ``-1`` is a value.
    """

    codes: np.ndarray
    cardinalities: np.ndarray
    feature_names: list | None = None
    encoder: Encoder | None = None

    @property
    def discretized(self) -> list:
        """Names of the columns that were discretized (continuous), as ``encoder.discretized_``."""
        return [] if self.encoder is None else list(self.encoder.discretized_)


@fill_doc(**ENCODING_FRAGMENTS)
def encode(X: Any, y: Any = None, *, discretizer: Any = "auto", n_bins: int = 5,
           max_categories: int | None = None, feature_names: Sequence[str] | None = None,
           missing_values: Any = None, distributed: bool = False) -> Encoded:
    """Encode raw data of any dtype as integer codes.

    %(coding_rules)s

    Parameters
    ----------
    %(X_columns)s
    %(y_supervised)s
    %(discretizer_auto)s
    %(n_bins)s
    %(max_categories)s
    %(feature_names)s
    %(missing_values)s
    %(distributed_encoding)s

    Returns
    -------
    Encoded
        Named tuple ``(codes, cardinalities, feature_names, encoder)``; its ``discretized``
        lists the columns that were discretized.

    Examples
    --------
    >>> import numpy as np, tensorprob
    >>> enc = tensorprob.encode(np.array([["a", True], ["b", False], [None, True]], dtype=object))
    >>> enc.codes.tolist(), enc.cardinalities.tolist()
    ([[0, 1], [1, 0], [-1, 1]], [2, 2])
    >>> tensorprob.encode(np.array([[-1], [0], [1], [0]])).cardinalities.tolist()  # -1 is a value
    [3]
    """
    enc = Encoder(discretizer=discretizer, n_bins=n_bins, max_categories=max_categories, missing_values=missing_values,
                  distributed=distributed)
    codes = enc.fit_transform(X, y, feature_names)
    return Encoded(codes, enc.cardinalities_.copy(), list(enc.feature_names_), enc)


@fill_doc(**ENCODING_FRAGMENTS)
def encode_labels(y: Any, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Encode class labels as codes ``0..C-1``.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, 1)
        Labels of any type (NumPy, torch, pandas); no missing value.
    %(label_tail)s

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, is empty or holds missing values.

    Examples
    --------
    >>> from tensorprob import encode_labels
    >>> codes, classes = encode_labels(["b", "a", "b"])
    >>> codes.tolist(), classes.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    if hasattr(y, "detach"):
        y = y.detach().cpu().numpy()
    if hasattr(y, "iloc"):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n_samples,), got shape {y.shape}")
    if y.size == 0:
        raise ValueError(f"{name} is empty")
    miss = _is_missing(y) if y.dtype.kind in "fO" else np.zeros(y.shape, bool)
    if miss.any():
        raise ValueError(f"{name} contains {int(miss.sum())} missing label(s) (NaN/None), first at position "
                         f"{int(np.flatnonzero(miss)[0])}")
    try:  # integers: by counting when their range is small (no sort); the same classes and codes
        classes, codes = _unique_inverse(y) if y.dtype.kind in "iu" else np.unique(y, return_inverse=True)
    except TypeError:
        classes, codes = np.unique(y.astype(str), return_inverse=True)
    return codes.ravel().astype(np.int64), classes


@fill_doc(**ENCODING_FRAGMENTS)
def check_classification_target(y: Any, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Class codes and sorted classes of the labels ``y`` of a classification task.

    The checks of scikit-learn's ``type_of_target``, with short messages: missing (NaN/None)
    or infinite labels are errors, and so is a continuous target: a float ``y`` with a
    non-integral value (scikit-learn's ``"continuous"`` target type).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels of any type.
    %(label_tail)s

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, is empty, holds missing or infinite labels, or is continuous.
    """
    arr = y.detach().cpu().numpy() if hasattr(y, "detach") else (y.to_numpy() if hasattr(y, "iloc") else y)
    arr = np.asarray(arr)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    values = arr
    if arr.dtype.kind == "O":  # numbers held in an object array (e.g. pandas nullable floats)
        try:
            values = arr.astype(np.float64)
        except (TypeError, ValueError):
            values = None
    if values is not None and values.ndim == 1 and values.dtype.kind == "f":
        inf = np.isinf(values)
        if inf.any():
            raise ValueError(f"{name} contains {int(inf.sum())} infinite label(s), e.g. at position "
                             f"{int(np.flatnonzero(inf)[0])}; class labels must be finite")
        finite = values[np.isfinite(values)]
        frac = finite != np.round(finite)
        if frac.any():
            uniq = np.unique(finite)
            raise ValueError(
                f"{name} is continuous ({uniq.size} distinct values, non-integral ones such as "
                f"{_preview(np.unique(finite[frac]).tolist(), 3)}); class labels are needed: discretize or "
                "encode the target first (for example with tensorprob.discretize)")
    return encode_labels(arr, name)  # arr: y as a NumPy array already
