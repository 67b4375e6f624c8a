"""The encoding decided once: a summary of every column, summaries that combine, and one decision.

How raw data becomes codes depends on a few facts per column, the same whether the rows are
in memory, read as row chunks, or spread over the ranks of a process group (pomegranate's
``summarize`` / ``from_summaries``):

- :func:`summarize` reads a table (one chunk, one rank's rows, or all of them) into a
  :class:`Summary`: per column its kind (numbers, NumPy-sortable values, or Python objects),
  its distinct values up to ``max_categories`` (an object column's by (type group, value),
  with the first value seen of each), whether its finite numbers are whole, their range, its
  missing and infinite entries and, for equal-frequency and MDL bins, a sample of its finite
  values with their labels; and the classes of the labels.
- :meth:`Summary.combine` adds two summaries (chunks in order, or ranks in rank order);
  :func:`gather` combines the summaries of all ranks with one all-gather.
- :func:`decide` turns a summary into the kind of every column (categories by value, or
  continuous and binned) and its categories; the cut points follow from the summary
  (:func:`~tensorprob.encoding._discretize.edges_of`).

The rule of :func:`decide`: strings, bools, datetimes and object columns are categories by
value (more than ``max_categories`` distinct values is an error); numeric columns are
categories by value when their finite values are whole and they have at most ``row_limit``
distinct values, otherwise continuous. In a float array (as opposed to a DataFrame) all the
columns are one kind of measurement: they are categories only when every column qualifies.
``row_limit`` is ``max_categories``, or with ``max_categories="auto"`` the limit that the
number of rows and classes allows (:func:`row_limit`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ._columns import (
    RawTable,
    _columns,
    _is_missing,
    _key,
    _numeric_view,
    _object_categories,
    _sort_keys,
    _unique_inverse,
    _user_missing,
)
from ._labels import union_classes
from ._numbers import NumberSummary, Sample
from ._small_ints import _Categories, _small_int_array

_NUMBER, _PLAIN, _OBJECT = "number", "plain", "object"


def row_limit(n_rows: int, n_classes: int, n_bins: int, limit: int, min_count: float) -> int:
    """The most distinct values an integral numeric column may keep as categories, for ``n_rows`` rows.

    A table of two such columns and the class has ``I * I * C`` cells; keeping at most
    ``floor(sqrt(n_rows / (C * min_count)))`` values leaves at least ``min_count`` rows per cell
    on average. A column with at most ``n_bins`` values keeps them (binning would not make it
    coarser), and none keeps more than ``limit`` (``max_categories``). ``min_count <= 0``: ``limit``.
    """
    if min_count <= 0:
        return int(limit)
    # floor(sqrt(x)) = isqrt(floor(x)): the largest k with k * k <= x, in integers
    by_rows = math.isqrt(math.floor(n_rows / (max(1, n_classes) * float(min_count))))
    return int(min(limit, max(n_bins, by_rows)))


@dataclass
class Summary:
    """What the encoding of a table depends on, per column (see the module docstring).

    Attributes
    ----------
    n_rows : int
    kinds : list of {"number", "plain", "object"}
        Numbers (NumPy numbers, pandas nullable numbers, object columns of real numbers), values
        NumPy sorts (bools, strings, bytes, datetimes), or Python objects (pandas categoricals,
        strings and nullable booleans, mixed object columns), told apart by (type group, value).
    values : list
        Per column its distinct observed values, sorted (numbers, plain) or as a ``{key: first
        value}`` dict in order of appearance (objects); None when there are more than
        ``max_categories`` of them, or for numbers that are not all whole (not counted).
    n_distinct : ndarray of int64
        Distinct observed values per column: exact while ``values`` holds them, at least
        ``max_categories + 1`` when it does not; -1 where they were not counted.
    numbers : NumberSummary
        Missing entries, finite range, infinite entries, integrality and samples of every
        column (neutral for columns that are not numbers).
    classes : ndarray or None
        The sorted classes of the labels, when asked for.
    labels : list or None
        The DataFrame's column labels (None for an array).
    dtype_kinds : str
        The dtype kind of every column as given (one letter each; a DataFrame's own dtypes).
    array_kind : str or None
        The dtype kind of an array input ('f' makes it a float array); None for a DataFrame.
    pandas_cat : list of bool
        Columns that hold categories as they are (pandas categorical, string, boolean).
    combined : bool
        Whether the summary combines parts (then a count beyond ``max_categories`` is a lower bound).
    """

    n_rows: int
    kinds: list
    values: list
    n_distinct: np.ndarray
    numbers: NumberSummary
    classes: np.ndarray | None = None
    labels: list | None = None
    dtype_kinds: str = ""
    array_kind: str | None = None
    pandas_cat: list = field(default_factory=list)
    combined: bool = False

    @property
    def n_features(self) -> int:
        return len(self.kinds)

    @property
    def float_array(self) -> bool:
        return self.array_kind == "f"

    def combine(self, other: Summary, limit: int, cap: int | None) -> Summary:
        """The summary of the rows of ``self`` followed by those of ``other`` (same columns).

        Distinct values are united up to ``limit``; samples keep at most ``cap`` values. A
        column that holds numbers in one part and other values in the other holds mixed
        values: object categories by (type group, value).

        Raises
        ------
        ValueError
            A column whose parts cannot be told apart as categories (numbers of which more
            than ``limit`` are distinct, beside values of another kind).
        """
        kinds, values, nd = [], [], np.empty(self.n_features, np.int64)
        for j in range(self.n_features):
            k, v, n = _merge(self, other, j, limit)
            kinds.append(k)
            values.append(v)
            nd[j] = n
        classes = self.classes if other.classes is None else (
            other.classes if self.classes is None else union_classes([self.classes, other.classes]))
        numbers = self.numbers.combine(other.numbers, cap, shift=self.n_rows)
        for j in (j for j, k in enumerate(kinds) if k != _NUMBER):  # numbers beside other values: no range
            numbers.lo[j], numbers.hi[j], numbers.n_inf[j], numbers.integral[j] = np.inf, -np.inf, 0, True
            if numbers.samples is not None:
                numbers.samples[j] = Sample(np.zeros(0, np.int64), np.zeros(0), None)
        return Summary(self.n_rows + other.n_rows, kinds, values, nd, numbers,
                       classes, self.labels, self.dtype_kinds, _array_kind(self.array_kind, other.array_kind),
                       self.pandas_cat, True)

    def signature(self) -> tuple:
        """What must be the same on every rank: number of columns, their labels, dtype kinds and pandas kinds."""
        return (self.n_features, None if self.labels is None else [str(c) for c in self.labels], self.dtype_kinds,
                list(self.pandas_cat))


def _array_kind(a: str | None, b: str | None) -> str | None:
    """The dtype kind of two arrays concatenated (NumPy's promotion of numbers; anything else: objects)."""
    if a is None or b is None:
        return a if a == b else None
    if a in "iub" and b in "iub":
        return "i" if a != b else a
    if a in "iufb" and b in "iufb":
        return "f"
    return a if a == b else "O"


def _merge(a: Summary, b: Summary, j: int, limit: int) -> tuple[str, Any, int]:
    """Kind, values and number of distinct values of column ``j`` of the rows of ``a`` and ``b``."""
    ka, kb = a.kinds[j], b.kinds[j]
    va, vb = a.values[j], b.values[j]
    na, nb = int(a.n_distinct[j]), int(b.n_distinct[j])
    if na == 0 or nb == 0:  # a part without an observed value adds nothing (and has no kind of its own)
        return (kb, vb, nb) if na == 0 else (ka, va, na)
    if ka == kb and ka in (_NUMBER, _PLAIN):
        if va is None or vb is None:
            return ka, None, -1 if min(na, nb) < 0 else max(na, nb)
        both = np.concatenate([va, vb]) if va.dtype == vb.dtype or ka == _NUMBER else np.concatenate(
            [va.astype(object), vb.astype(object)])
        try:
            u = np.unique(both)
        except TypeError:
            return _merge_objects(_as_keys(ka, va), _as_keys(kb, vb), limit)
        return (ka, u, int(u.size)) if u.size <= limit else (ka, None, int(u.size))
    if (ka != _OBJECT and va is None) or (kb != _OBJECT and vb is None):
        return _OBJECT, None, max(na, nb, limit + 1)  # numbers beyond the limit beside other values
    return _merge_objects(_as_keys(ka, va), _as_keys(kb, vb), limit)


def _as_keys(kind: str, values: Any) -> dict | None:
    """Values of a part as ``{key: first value}`` (object categories)."""
    if values is None or kind == _OBJECT:
        return values
    return {_key(v): v for v in values.tolist()} if kind == _NUMBER else {_key(v): v for v in values}


def _merge_objects(ta: dict | None, tb: dict | None, limit: int) -> tuple[str, Any, int]:
    if ta is None or tb is None:
        return _OBJECT, None, limit + 1
    table = dict(ta)
    for kv, v in tb.items():
        table.setdefault(kv, v)  # the first value seen of a key is kept
    return (_OBJECT, table, len(table)) if len(table) <= limit else (_OBJECT, None, len(table))


class ColumnCodes(NamedTuple):
    """What reading a column left to code it without reading it again (in memory only).

    ``values`` are the column's distinct observed values (sorted, or object keys in order of
    appearance) and ``inverse`` the position of every observed entry among them; ``missing``
    marks the missing entries (None: none).
    """

    values: Any
    inverse: np.ndarray
    missing: np.ndarray | None
    keyed: bool  # values are object keys


@dataclass
class Read:
    """A table read for its summary, with what coding it needs from the reading (in memory only)."""

    table: RawTable | None  # None: an integer array coded whole (``fast``), never split into columns
    summary: Summary
    factors: list  # per column: ColumnCodes or None
    missing: list  # per column: missing-entry mask or None
    fast: tuple | None = None  # (_Categories, codes) of an integer array coded at once
    floats: np.ndarray | None = None  # a float array as float64, NaN for missing entries
    array: np.ndarray | None = None  # the integer array coded whole

    def column(self, j: int) -> np.ndarray:
        """Column j as read (numeric views of object columns applied)."""
        return self.array[:, j] if self.table is None else self.table.cols[j]


def summarize(X: Any, y: Any = None, *, limit: int, miss_keys: set, sample: bool = False, classes: bool = False,
              work: type = np.int32) -> Read:
    """Read ``X`` into a :class:`Summary` (see the module docstring), keeping what its coding needs.

    Parameters
    ----------
    X : ndarray, tensor, DataFrame or array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), optional
        Labels: their classes (``classes``) and the labels of the sampled values (``sample``).
    limit : int
        ``max_categories``: distinct values beyond it are not kept.
    miss_keys : set
        The keys of the user's ``missing_values``.
    sample : bool
        Keep every finite value of the numeric columns (equal-frequency and MDL cut points),
        with its row (counted from 0: :meth:`Summary.combine` counts another part's rows on).
    classes : bool
        Summarize the classes of ``y``.
    work : dtype
        Integer dtype of the codes written while reading (an integer array coded whole).

    Raises
    ------
    ValueError, TypeError
        A table that is not 2-D, complex values, unhashable or unsupported values.
    """
    int_array = type(X) is np.ndarray and X.ndim == 2 and X.dtype.kind in "iu"
    labels = None if y is None else np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)
    cls = union_classes([labels]) if classes and labels is not None else None
    fast = None if (miss_keys or not int_array) else _small_int_array(X, limit, work)
    if fast is not None and bool(fast[0].counts.all()):  # every column coded at once: no column is read again
        return _whole_int_array(X, fast, labels, cls, sample)
    table = _columns(X)
    M, N = (table.array.shape if table.array is not None else
            ((table.cols[0].shape[0] if table.cols else 0), len(table.cols)))
    array_kind = None if table.array is None else table.array.dtype.kind
    cols = list(table.cols)
    if array_kind == "f":
        return _float_array(table, M, N, labels, cls, miss_keys, limit, sample)
    factors: list = [None] * N
    missing: list = [None] * N
    kinds, values = [], []
    nd = np.empty(N, np.int64)
    parts = []
    for j in range(N):
        if fast is not None and fast[0][j] is not None:  # an integer column coded at once
            cats = fast[0][j]
            kinds.append(_NUMBER)
            values.append(cats)
            nd[j] = cats.size
            parts.append(NumberSummary.of(cats[[0, -1]][:, None]))  # its range: its extreme categories
            if sample:
                parts[-1].samples = [Sample(np.arange(M), X[:, j].astype(np.float64), labels)]
            continue
        col = cols[j]
        if col.dtype.kind == "O" and not table.pandas_cat[j]:
            num = _numeric_view(col)
            if num is not None:
                col = cols[j] = num
        kind = col.dtype.kind
        if kind == "c":
            raise ValueError(f"Complex data not supported: column {_name(table, j)!r} is complex-valued; "
                             "tensorprob handles real or categorical data")
        miss = _is_missing(col) | _user_missing(col, miss_keys)
        any_miss = bool(miss.any())
        missing[j] = miss if any_miss else None
        vals = col[~miss] if any_miss else col
        if kind in "iuf":
            V = vals.astype(np.float64, copy=False) if kind == "f" else vals
            part = NumberSummary.of(V[:, None], None if labels is None else (labels[~miss] if any_miss else labels),
                                    sample=sample)
            part.n_missing[:] = int(miss.sum())
            if sample:
                part.samples[0] = part.samples[0]._replace(rows=np.flatnonzero(~miss)[part.samples[0].rows])
            parts.append(part)
            kinds.append(_NUMBER)
            # whole numbers are counted; others only when read from an object column (their
            # values may meet other kinds of values in another chunk or rank)
            if bool(part.integral[0]) or table.cols[j].dtype.kind == "O":
                uniq, inv = _unique_inverse(vals)
                nd[j] = uniq.size
                values.append(uniq if uniq.size <= limit else None)
                if uniq.size <= limit:
                    factors[j] = ColumnCodes(uniq, inv, missing[j], False)
            else:
                nd[j] = -1
                values.append(None)
            continue
        parts.append(_neutral(int(miss.sum()), sample))  # not numbers: no range, no sample
        if kind in "bUSMm":
            uniq, inv = np.unique(vals, return_inverse=True)
            kinds.append(_PLAIN)
            nd[j] = uniq.size
            values.append(uniq if uniq.size <= limit else None)
            factors[j] = ColumnCodes(uniq, inv.ravel(), missing[j], False) if uniq.size <= limit else None
        elif kind == "O":
            try:
                inverse, keys, firsts = _object_categories(vals)
            except TypeError as exc:
                raise TypeError(f"column {_name(table, j)!r} holds unhashable values ({exc})") from None
            kinds.append(_OBJECT)
            nd[j] = len(keys)
            values.append(dict(zip(keys, firsts)) if len(keys) <= limit else None)
            factors[j] = ColumnCodes(keys, inverse, missing[j], True) if len(keys) <= limit else None
        else:
            raise TypeError(f"column {_name(table, j)!r} has unsupported dtype {col.dtype}")
    numbers = NumberSummary.stack(parts) if parts else NumberSummary.of(np.zeros((M, 0)), sample=sample)
    summary = Summary(M, kinds, values, nd, numbers, cls, table.labels, _source_kinds(X, table),
                      array_kind, list(table.pandas_cat))
    return Read(RawTable(cols, table.labels, table.pandas_cat, table.array), summary, factors, missing,
                None if fast is None else fast)


def _source_kinds(X: Any, table: RawTable) -> str:
    """The dtype kind of every column as given (a DataFrame's own dtypes: an ``Int64`` column is 'i' with or
    without missing entries, though it is read as floats when it has some)."""
    if table.labels is not None and hasattr(X, "dtypes"):
        return "".join(getattr(dt, "kind", "O") for dt in X.dtypes)
    return "".join(c.dtype.kind for c in table.cols)


def _neutral(n_missing: int, sample: bool) -> NumberSummary:
    """The number summary of a column that does not hold numbers: its missing count only."""
    out = NumberSummary.of(np.empty((0, 1)), sample=sample)
    out.n_missing[:] = n_missing
    return out


def _name(table: RawTable, j: int) -> str:
    return f"x{j}" if table.labels is None else str(table.labels[j])


def _whole_int_array(X: np.ndarray, fast: tuple, labels: Any, classes: Any, sample: bool) -> Read:
    """The summary of an integer array whose every column :func:`_small_int_array` coded."""
    cats: _Categories = fast[0]
    M, N = X.shape
    counts = cats.counts
    ends = cats.ends
    vals = cats.values.astype(np.float64)
    numbers = NumberSummary(np.zeros(N, np.int64), vals[ends - counts], vals[ends - 1], np.zeros(N, np.int64),
                            np.ones(N, bool))
    if sample:
        rows = np.arange(M, dtype=np.int64)
        numbers.samples = [Sample(rows, X[:, j].astype(np.float64), labels) for j in range(N)]
    summary = Summary(M, [_NUMBER] * N, _LazyList(cats), counts.astype(np.int64), numbers, classes, None,
                      X.dtype.kind * N, X.dtype.kind, [False] * N)
    return Read(None, summary, [None] * N, [None] * N, fast, None, X)


class _LazyList:
    """The per-column categories of :class:`_Categories` as a list, cut only where read."""

    def __init__(self, cats: _Categories) -> None:
        self._cats = cats

    def __len__(self) -> int:
        return len(self._cats)

    def __getitem__(self, j: int) -> np.ndarray:
        return self._cats[j]

    def __iter__(self):
        return iter(self._cats.tolist())

    @property
    def packed(self) -> _Categories:
        return self._cats


def _float_array(table: RawTable, M: int, N: int, labels: Any, classes: Any, miss_keys: set, limit: int,
                 sample: bool) -> Read:
    """The summary of a float array: its columns are counted only while they can all be categories."""
    V = table.array.astype(np.float64, copy=False)
    if miss_keys:
        V = np.where(_user_missing(V, miss_keys), np.nan, V)
    numbers = NumberSummary.of(V, labels, sample=sample)
    values: list = [None] * N
    nd = np.full(N, -1, np.int64)
    factors: list = [None] * N
    missing: list = [None] * N
    if bool(numbers.integral.all()):  # count while every column can still be categories (one kind of measurement)
        for j in range(N):
            col = V[:, j]
            miss = np.isnan(col) if numbers.n_missing[j] else None
            uniq, inv = _unique_inverse(col[~miss] if miss is not None else col)
            nd[j] = uniq.size
            if uniq.size > limit:
                break
            values[j] = uniq
            missing[j] = miss
            factors[j] = ColumnCodes(uniq, inv, miss, False)
    summary = Summary(M, [_NUMBER] * N, values, nd, numbers, classes, None, "f" * N, "f", [False] * N)
    return Read(table, summary, factors, missing, None, V)


def gather(summary: Summary, limit: int, cap: int | None) -> Summary:
    """The summary of all ranks' rows, on every rank (one all-gather; ranks combined in rank order)."""
    from .. import _distributed

    parts = _distributed.all_gather(_portable(summary))
    out = parts[0]
    for part in parts[1:]:
        out = out.combine(part, limit, cap)
    return out


def _portable(summary: Summary) -> Summary:
    """The summary with its lazily cut categories cut (what is sent to the other ranks)."""
    if isinstance(summary.values, _LazyList):
        return Summary(summary.n_rows, summary.kinds, summary.values.packed.tolist(), summary.n_distinct,
                       summary.numbers, summary.classes, summary.labels, summary.dtype_kinds, summary.array_kind,
                       summary.pandas_cat, summary.combined)
    return summary


class Decision(NamedTuple):
    """The kind and categories of every column (:func:`decide`).

    ``kinds`` holds "categorical" or "discretized" per column; ``categories`` the value of each
    code of a categorical column (None for a discretized one); ``lookup`` the ``{key: code}``
    of object categories (None elsewhere); ``continuous`` the discretized columns, in order.
    """

    kinds: list
    categories: list
    lookup: list
    continuous: list


def decide(summary: Summary, names: list[str], *, limit: int, row_limit: int) -> Decision:
    """The kind and categories of every column of the rows ``summary`` describes (see the module docstring).

    Raises
    ------
    ValueError
        A categorical column with more than ``limit`` distinct values.
    """
    N = summary.n_features
    nd = summary.n_distinct
    lazy = isinstance(summary.values, _LazyList)  # an integer array coded whole: every column counted
    counted = np.ones(N, bool) if lazy else np.fromiter((v is not None for v in summary.values), bool, count=N)
    number = np.fromiter((k == _NUMBER for k in summary.kinds), bool, count=N)
    ok = number & summary.numbers.integral & (nd >= 0) & (nd <= row_limit) & counted  # categories by value
    whole_array = summary.float_array and bool(ok.all())
    if lazy and bool(ok.all()):
        return Decision(["categorical"] * N, summary.values.packed, [None] * N, [])
    kinds, cats, lookup, cont = [], [], [], []
    for j in range(N):
        kind = summary.kinds[j]
        if kind == _NUMBER:
            if whole_array if summary.float_array else ok[j]:
                kinds.append("categorical")
                cats.append(summary.values[j])
            else:
                kinds.append("discretized")
                cats.append(None)
                cont.append(j)
            lookup.append(None)
            continue
        if summary.values[j] is None:
            _check_limit(names[j], int(nd[j]), limit, exact=not summary.combined)
        if kind == _PLAIN:
            kinds.append("categorical")
            cats.append(summary.values[j])
            lookup.append(None)
            continue
        table = summary.values[j]
        order = _sort_keys(list(table))
        uniq = np.empty(len(order), dtype=object)
        uniq[:] = [table[kv] for kv in order]
        kinds.append("categorical")
        cats.append(uniq)
        lookup.append({kv: i for i, kv in enumerate(order)})
    return Decision(kinds, cats, lookup, cont)


def _check_limit(name: str, size: int, limit: int, exact: bool = True) -> None:
    if size > limit:
        what = f"{size}" if exact else f"more than {limit}"
        raise ValueError(f"column {name!r} has {what} categories, above max_categories={limit}; raise the limit "
                         "with tensorprob.config_context(max_categories=...) or pass max_categories")


__all__ = ["ColumnCodes", "Decision", "Read", "Summary", "decide", "gather", "row_limit", "summarize"]
