"""SciPy sparse matrices to sparse integer codes, by the rules of :class:`~tensorprob.Encoder`.

A sparse matrix (term counts, variants, baskets) is a table whose implicit entries are the
value 0. :func:`encode_sparse` fits an :class:`~tensorprob.Encoder` on it exactly as
``Encoder._fit(X.toarray(), y)`` would (same kinds, categories, cardinalities, bin edges and
warnings) without ever writing the zeros: every decision depends on per-column statistics
(distinct values, range, integrality, missing and infinite entries, and for equal-frequency
and MDL bins the sorted finite values with their multiplicities and labels), and these follow
from the stored entries plus the number of implicit zeros of each column.

The codes come back sparse: the code of the value 0 is made 0 in every column by swapping,
in each column, the dense code ``z`` of 0 with the code 0 (all other codes unchanged), so that
the zeros stay implicit. Missing entries (a stored NaN, or one of ``missing_values``) are
stored as -1.

Everything is computed from the stored entries grouped by distinct (column, value) pair,
found in one vectorized pass (a presence table for integers of small range, otherwise one
sort), in memory and time about linear in the number of stored entries.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._config import get_config
from ._codes import _compact_dtype
from ._columns import _missing_keys, _user_missing
from ._discretize import Discretizer, _power_of_two_above, mdl_cut_points_of_counts
from ._encode import Encoder
from ._labels import union_classes
from ._numbers import NumberSummary
from ._summary import _NUMBER, _PLAIN, Summary, row_limit


class _Entries:
    """The stored entries of a sparse matrix, column by column (CSC order, duplicates summed).

    ``cols``, the column of each entry, is made on first use and kept (the common case, integer
    counts without missing entries, never needs it: 4 bytes an entry less).
    """

    def __init__(self, shape: tuple[int, int], indptr: np.ndarray, rows: np.ndarray, data: np.ndarray,
                 missing: np.ndarray | None) -> None:
        self.shape = shape
        self.indptr = indptr  # (N + 1,) where each column's entries start
        self.rows = rows  # row of each entry
        self.data = data  # value of each entry, as stored
        self.missing = missing  # missing entries (NaN or a missing value); None: none
        self._cols: np.ndarray | None = None

    @property
    def cols(self) -> np.ndarray:
        """Column of each entry (int32, or int64 for 2**31 columns or more)."""
        if self._cols is None:
            N = self.shape[1]
            self._cols = np.repeat(np.arange(N, dtype=np.int32 if N < 2**31 else np.int64), np.diff(self.indptr))
        return self._cols

    def cols_of(self, a: int, b: int) -> np.ndarray:
        """Columns of the entries ``a:b`` (int64), without making :attr:`cols`."""
        b = min(b, int(self.indptr[-1]))
        if self._cols is not None:
            return self._cols[a:b].astype(np.int64)
        return np.searchsorted(self.indptr, np.arange(a, b, dtype=np.int64), side="right") - 1

    def per_column(self, values: np.ndarray) -> np.ndarray:
        """``values[column]`` for every entry (one value per column repeated)."""
        return np.repeat(values, np.diff(self.indptr))


class _Groups(NamedTuple):
    """The distinct (column, value) pairs of the observed entries, sorted by column then value."""

    col: np.ndarray  # int64 column of each pair
    val: np.ndarray  # its value (float64 for floats, the matrix's dtype otherwise)
    count: np.ndarray  # int64 entries of each pair
    start: np.ndarray  # (N + 1,) where each column's pairs start
    of_entry: np.ndarray  # pair of each entry (-1 for a missing one)


def _entries(X: Any, missing_values: Any) -> _Entries:
    """The entries of the sparse matrix X in CSC order, with their missing mask.

    Raises
    ------
    TypeError
        X is not a SciPy sparse matrix or array, or its dtype is not numeric.
    ValueError
        Complex values, or ``missing_values`` that mark the value 0 (the implicit zeros would be missing).
    """
    import scipy.sparse as sp

    if not sp.issparse(X):
        raise TypeError(f"X must be a scipy.sparse matrix or array, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    kind = X.dtype.kind
    if kind == "c":
        raise ValueError("Complex data not supported: X is complex-valued; tensorprob handles real or categorical data")
    if kind not in "biuf":
        raise TypeError(f"sparse X has unsupported dtype {X.dtype}: a numeric or bool dtype is needed")
    A = X.tocsc()
    if not A.has_canonical_format:  # duplicates are summed, as toarray() sums them (on a copy: X is the caller's)
        A = A.copy() if A is X else A
        A.sum_duplicates()
    keys = _missing_keys(missing_values)
    if keys and bool(_user_missing(np.zeros(1, dtype=A.dtype), keys)[0]):
        raise ValueError(f"missing_values={missing_values!r} marks the value 0: the implicit zeros of a sparse "
                         "matrix would all be missing; pass a dense array or other missing_values")
    data = A.data
    miss = np.isnan(data) if kind == "f" else None
    if keys:
        user = _user_missing(data, keys)
        miss = user if miss is None else miss | user
    if miss is not None and not miss.any():
        miss = None
    M, N = A.shape
    return _Entries((M, N), A.indptr.astype(np.int64), A.indices, data, miss)


def _values(ent: _Entries) -> np.ndarray:
    """The stored values as the dense encoder reads them: float64 for floats, the dtype itself otherwise."""
    return ent.data.astype(np.float64, copy=False) if ent.data.dtype.kind == "f" else ent.data


def _groups(ent: _Entries, exact: bool = True) -> _Groups:
    """Group the observed entries by distinct (column, value) pair (a presence table or one sort).

    ``exact=False``: every observed entry is its own pair, in column order (not sorted by value):
    enough for columns that only need their range (equal-width bins of a float array).
    """
    N = ent.shape[1]
    v = _values(ent)
    obs = None if ent.missing is None else np.flatnonzero(~ent.missing)
    vo = v if obs is None else v[obs]
    n = vo.size
    itype = np.int32 if v.size < 2**31 else np.int64  # a pair index per entry: 4 bytes where they fit
    of = np.full(v.size, -1, dtype=itype) if obs is not None else None
    if not exact:
        co = ent.cols if obs is None else ent.cols[obs]
        g_of = np.arange(n, dtype=itype)
        if of is None:
            of = g_of
        else:
            of[obs] = g_of
        start = np.searchsorted(co, np.arange(N + 1), side="left").astype(np.int64)
        return _Groups(co.astype(np.int64), vo, np.ones(n, dtype=np.int64), start, of)
    table = None
    if v.dtype.kind in "biu" and n:
        lo, hi = int(vo.min()), int(vo.max())
        span = hi - lo + 1
        if hi < 2**62 and lo > -(2**62) and N * span <= max(1 << 16, 4 * n):
            table = (lo, span)
    if table is not None:  # integers of small range: a (column, value) presence table, no sort
        lo, span = table

        def keys_of(a: int, b: int) -> np.ndarray:  # the (column, value) keys of a block of entries
            cols = ent.cols_of(a, b) if obs is None else ent.cols[obs[a:b]].astype(np.int64)
            return cols * span + (vo[a:b].astype(np.int64) - lo)

        step = 1 << 20  # keys in blocks: an int64 key per entry is never held for all entries
        present = np.zeros(N * span, dtype=bool)
        for a in range(0, n, step):
            present[keys_of(a, a + step)] = True
        keys = np.flatnonzero(present)
        lut = np.cumsum(present, dtype=np.int64 if keys.size >= 2**31 else np.int32)
        lut -= 1
        g_of = np.empty(n, dtype=itype)
        for a in range(0, n, step):
            g_of[a:a + step] = lut[keys_of(a, a + step)]
        del lut, present
        gcol = keys // span
        gval = (keys - gcol * span + lo).astype(v.dtype)
        count = np.bincount(g_of, minlength=keys.size).astype(np.int64)
    else:
        co = ent.cols if obs is None else ent.cols[obs]
        order = np.lexsort((vo, co))
        sv, sc = vo[order], co[order]
        new = np.ones(n, dtype=bool)
        if n > 1:
            np.not_equal(sc[1:], sc[:-1], out=new[1:])
            new[1:] |= sv[1:] != sv[:-1]
        firsts = np.flatnonzero(new)
        gid = np.cumsum(new, dtype=itype)
        gid -= 1
        g_of = np.empty(n, dtype=itype)
        g_of[order] = gid
        del gid, order
        gcol, gval = sc[firsts].astype(np.int64), sv[firsts]
        count = np.diff(np.append(firsts, n)).astype(np.int64)
    if of is None:
        of = g_of
    else:
        of[obs] = g_of
    start = np.searchsorted(gcol, np.arange(N + 1), side="left").astype(np.int64)
    return _Groups(gcol, gval, count, start, of)


class _Stats(NamedTuple):
    """Per-column facts of the dense column (stored entries plus implicit zeros)."""

    n_zeros: np.ndarray  # implicit zeros
    zero_in: np.ndarray  # 0 is a value of the column but not among the stored ones
    n_neg: np.ndarray  # distinct observed values below 0
    n_distinct: np.ndarray  # distinct observed values (0 included)
    numbers: NumberSummary


def _stats(ent: _Entries, g: _Groups) -> _Stats:
    M, N = ent.shape
    n_zeros = M - np.diff(ent.indptr)
    is_zero = g.val == 0
    zero_in = (n_zeros > 0) & (np.bincount(g.col[is_zero], minlength=N) == 0)
    n_neg = np.bincount(g.col[g.val < 0], minlength=N).astype(np.int64)
    n_distinct = np.diff(g.start) + zero_in
    n_missing = np.zeros(N, np.int64) if ent.missing is None else np.bincount(ent.cols[ent.missing], minlength=N)
    if g.val.dtype.kind == "b":  # not numbers: the missing count only (the dense encoder's neutral summary)
        numbers = NumberSummary(n_missing.astype(np.int64), np.full(N, np.inf), np.full(N, -np.inf),
                                np.zeros(N, np.int64), np.ones(N, bool))
        return _Stats(n_zeros, zero_in, n_neg, n_distinct, numbers)
    fin = np.isfinite(g.val) if g.val.dtype.kind == "f" else np.ones(g.val.size, bool)
    lo = np.full(N, np.inf)
    hi = np.full(N, -np.inf)
    full = np.flatnonzero(np.diff(g.start) > 0)
    if full.size:  # per-column extremes of the finite values (pairs are grouped by column)
        fv = g.val.astype(np.float64, copy=False)
        at = g.start[full]
        lo[full] = np.minimum.reduceat(np.where(fin, fv, np.inf), at)
        hi[full] = np.maximum.reduceat(np.where(fin, fv, -np.inf), at)
    zeros = n_zeros > 0
    lo[zeros] = np.minimum(lo[zeros], 0.0)
    hi[zeros] = np.maximum(hi[zeros], 0.0)
    integral = np.ones(N, bool)
    n_inf = np.zeros(N, np.int64)
    if g.val.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            frac = fin & (g.val != np.round(g.val))
        integral &= np.bincount(g.col[frac], minlength=N) == 0
        n_inf = np.bincount(g.col[~fin], weights=g.count[~fin], minlength=N).astype(np.int64)
    numbers = NumberSummary(n_missing.astype(np.int64), lo, hi, n_inf, integral)
    return _Stats(n_zeros, zero_in, n_neg, n_distinct, numbers)


def _categories(g: _Groups, st: _Stats, cols: np.ndarray) -> list:
    """The sorted distinct values (0 included where it is implicit) of the columns ``cols``."""
    out = []
    for j in cols.tolist():
        vals = g.val[g.start[j]:g.start[j + 1]]
        if st.zero_in[j]:
            k = int(st.n_neg[j])
            vals = np.concatenate([vals[:k], np.zeros(1, dtype=vals.dtype), vals[k:]])
        else:
            vals = vals.copy()  # its own array: the categories outlive the pairs
        out.append(vals)
    return out


def _check_summarized(encoder: Encoder, what: str) -> None:
    """Refuse the discretizers a combined summary of sparse parts cannot fit (they need the rows' samples)."""
    if encoder._strategy() in ("quantile", "mdl") or not (isinstance(encoder.discretizer, str)
                                                         or encoder.discretizer is None):
        raise NotImplementedError(f"{what}: discretizer='uniform' (or 'auto', or None) only; equal-frequency and MDL "
                                  "bins need the rows' samples, not summarized for sparse input yet")


def _part_summary(encoder: Encoder, X: Any, y: Any) -> Summary:
    """The summary of one part of the rows (a rank's, a chunk's), to be combined with the others' before the decision."""
    ent = _entries(X, encoder.missing_values)
    g = _groups(ent, exact=not (ent.data.dtype.kind == "f" and _has_fraction(ent)))
    return _summary(encoder, ent, g, _stats(ent, g), y, prune=False)


def _encode_ranks(encoder: Encoder, X: Any, y: Any, layout: str) -> tuple[Any, ...]:
    """:func:`encode_sparse` of this rank's rows of data spread over the ranks (:func:`encode_sparse_parts`,
    one part per rank): one decision from all ranks' summaries, the row limit of all the rows."""
    from .. import _distributed

    def local() -> Any:
        if y is not None and len(y) != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)} labels")
        if not X.shape[1]:
            raise ValueError("0 feature(s) while a minimum of 1 is required.")
        if y is None or encoder.max_categories != "auto":
            return None
        return union_classes([np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)])

    mine = _distributed.agree(local)
    every = [c for c in _distributed.all_gather(mine) if c is not None]
    classes = union_classes(every) if every else None
    (codes,) = encode_sparse_parts(encoder, lambda: [X], classes, distributed=True)
    return (codes.tocsc() if layout == "csc" else codes), encoder.cardinalities_.copy()


def encode_sparse_parts(encoder: Encoder, parts: Any, classes: np.ndarray | None = None, *,
                        distributed: bool = False, return_zero: bool = False) -> Any:
    """Fit ``encoder`` on the rows of several sparse matrices (row chunks) taken together; their codes, in order.

    Each part is summarized as :func:`summarize` summarizes dense rows; the summaries are
    combined (as the ranks' are) and the decision is taken on the whole, then each part is
    coded (:func:`transform_sparse`). ``parts`` is read twice (a callable returning a fresh
    iterable of the matrices). Equal-frequency and MDL bins need the rows' samples and are not
    available here.

    Parameters
    ----------
    encoder : Encoder
        The encoder to fit.
    parts : callable
        ``parts()`` gives the sparse matrices (the same columns), each time the same.
    classes : ndarray, optional
        The classes of all the parts' labels (of all ranks; for the ``"auto"`` row limit).
    distributed : bool, default=False
        The parts are this rank's: the summaries of all ranks are combined (one all-gather),
        so every rank takes the same decision; a rank may hold no part.
    return_zero : bool, default=False
        Also return the dense code of the value 0 of every column (as :func:`encode_sparse`).

    Returns
    -------
    codes : list of scipy.sparse.csr_matrix
        The codes of every part (code 0 for the value 0, as :func:`encode_sparse`).
    zero : ndarray of int64, shape (n_features,)
        With ``return_zero``.
    """
    from ._numbers import sample_cap

    _check_summarized(encoder, "distributed=True with sparse X" if distributed else "sparse row chunks")
    limit = encoder._limit()

    def combine(summary: Summary | None, part: Summary) -> Summary:
        return part if summary is None else summary.combine(part, limit,
                                                            sample_cap(part.n_features, get_config()["memory_budget"]))

    def local() -> Any:
        summary = None
        for X in parts():
            part = _part_summary(encoder, X, None)
            if summary is not None and part.n_features != summary.n_features:
                raise ValueError(f"a sparse chunk has {part.n_features} columns, the first had {summary.n_features}")
            summary = combine(summary, part)
        return summary

    if distributed:
        from .. import _distributed
        from ._summary import _portable

        mine = _distributed.agree(local)
        every = [s for s in _distributed.all_gather(None if mine is None else _portable(mine)) if s is not None]
        shapes = {(s.n_features, s.array_kind) for s in every}
        if len(shapes) > 1:
            raise ValueError(f"distributed fit: the sparse chunks of the ranks differ in (number of columns, dtype "
                             f"kind): {sorted(shapes)}")
        summary = None
        for s in every:  # rank order, as gather() combines
            summary = combine(summary, s)
    else:
        summary = local()
    if summary is None or summary.n_rows == 0:
        raise ValueError("the sparse data hold no rows" + (" on any rank" if distributed else ""))
    summary.classes = classes
    encoder.__dict__.pop("feature_names_in_", None)
    encoder._from_summary(summary)
    def code() -> list:
        return [transform_sparse(encoder, X, return_zero=True) for X in parts()]

    if distributed:
        from .. import _distributed

        coded = _distributed.agree(code)  # a rank's error raised on every rank, not a hang
    else:
        coded = code()
    codes = [c for c, _ in coded]
    if not return_zero:
        return codes
    return codes, (coded[0][1] if coded else transform_sparse(encoder, _empty_rows(summary.n_features), True)[1])


def _empty_rows(n_features: int) -> Any:
    """A sparse matrix of no rows and ``n_features`` columns (what a rank without chunks codes)."""
    import scipy.sparse as sp

    return sp.csr_matrix((0, n_features), dtype=np.float64)


def _summary(encoder: Encoder, ent: _Entries, g: _Groups, st: _Stats, y: Any, prune: bool = True) -> Summary:
    """The :class:`Summary` that summarizing ``X.toarray()`` makes, as far as the decision reads it.

    ``prune=False``: the values of every column that may be categories by ``max_categories``
    (not only by this part's row limit), for a summary combined with other parts' before the decision.
    """
    M, N = ent.shape
    kind = ent.data.dtype.kind
    limit = encoder._limit()
    labels = None if y is None else np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)
    classes = union_classes([labels]) if encoder.max_categories == "auto" and labels is not None else None
    values: list = [None] * N
    nd = st.n_distinct.astype(np.int64)
    if kind == "b":  # bools are categories by value (NumPy-sortable values, not numbers)
        for j, cats in zip(range(N), _categories(g, st, np.arange(N))):
            values[j] = cats
        return Summary(M, [_PLAIN] * N, values, nd, st.numbers, classes, None, "b" * N, "b", [False] * N)
    # only the columns that can be categories need their values (the decision reads no other)
    allowed = limit
    if prune and encoder.max_categories == "auto" and encoder.discretizer is not None:
        n_classes = 1 if classes is None else max(1, int(classes.size))
        allowed = row_limit(M, n_classes, encoder.n_bins, limit, get_config()["min_cell_count"])
    integral = st.numbers.integral
    if kind == "f" and not bool(integral.all()):  # a float array: counted only while every column can be categories
        nd[:] = -1
    else:
        nd[~integral] = -1
    ok = integral & (nd >= 0) & (nd <= allowed)
    cand = np.flatnonzero(ok)
    if kind == "f" and cand.size != N:  # a float array is categories only as a whole
        cand = cand[:0]
    for j, cats in zip(cand.tolist(), _categories(g, st, cand)):
        values[j] = cats
    return Summary(M, [_NUMBER] * N, values, nd, st.numbers, classes, None, kind * N, kind, [False] * N)


def encode_sparse(encoder: Encoder, X: Any, y: Any = None, layout: str = "csr",
                  return_zero: bool = False) -> tuple[Any, ...]:
    """Fit ``encoder`` on the sparse matrix X (its implicit zeros are the value 0) and return (codes, cards).

    The fit is the one ``encoder._fit(X.toarray(), y, None)`` makes (kinds, categories, cardinalities,
    bin edges, the ``"auto"`` warning; the encoder ends with the same fitted attributes), computed
    from the stored entries without writing the zeros.

    Parameters
    ----------
    encoder : Encoder
        The encoder to fit (its parameters as for a dense fit; ``distributed`` is not supported).
    X : scipy.sparse matrix or array of shape (n_samples, n_features)
        Any format and numeric or bool dtype. Implicit entries are the value 0; a stored NaN and
        the ``missing_values`` are missing.
    y : array-like of shape (n_samples,), default=None
        Class labels: their number for ``max_categories="auto"``, and the labels of the
        supervised discretizer (``"mdl"``).
    layout : {"csr", "csc"}, default="csr"
        The compressed layout of the codes (``"csc"``: as they are made, no conversion).
    return_zero : bool, default=False
        Also return ``zero``, the dense encoder's code of the value 0 in every column.

    Returns
    -------
    codes : scipy.sparse.csr_matrix or csc_matrix of shape (n_samples, n_features)
        Canonical (sorted indices, no duplicates, no stored 0), in the compact integer dtype of
        the cardinalities. Column n holds the dense encoder's codes with the code of the value 0
        swapped with code 0; missing entries are stored as -1.
    cards : ndarray of int64, shape (n_features,)
        The cardinalities (``encoder.cardinalities_``).
    zero : ndarray of int64, shape (n_features,)
        With ``return_zero``: the dense code of the value 0 of each column (the code swapped
        with 0 in the sparse codes).

    Raises
    ------
    ValueError
        Where the dense fit raises (a continuous column with ``discretizer=None``, MDL without
        ``y``, an empty X); ``missing_values`` that mark 0; a user discretizer object on a
        continuous column (it would be fitted on the dense columns).
    NotImplementedError
        ``distributed=True`` with equal-frequency or MDL bins, or with ``return_zero``.
    """
    if getattr(encoder, "distributed", False):
        from .. import _distributed

        if _distributed.active(True):
            if return_zero:
                raise NotImplementedError("return_zero is not available with distributed=True")
            return _encode_ranks(encoder, X, y, layout)
    ent = _entries(X, encoder.missing_values)
    M, N = ent.shape
    if not N:
        raise ValueError(f"0 feature(s) (shape=({M}, 0)) while a minimum of 1 is required.")
    if M == 0:
        raise ValueError(f"X is empty ({M} rows, {N} columns)")
    if y is not None and len(y) != M:
        raise ValueError(f"X has {M} rows but y has {len(y)} labels")
    strategy = encoder._strategy()
    # a float array with a fraction is binned whole: equal widths need the ranges only, not the distinct values
    ranges_only = (ent.data.dtype.kind == "f" and strategy not in ("quantile", "mdl")
                   and _has_fraction(ent))
    g = _groups(ent, exact=not ranges_only)
    st = _stats(ent, g)
    summary = _summary(encoder, ent, g, st, y)
    encoder.__dict__.pop("feature_names_in_", None)  # an array has no column names
    saved = encoder.discretizer
    if strategy in ("quantile", "mdl"):  # the decision with equal widths (cheap); the edges are made below
        encoder.discretizer = "uniform"
    try:
        decision = encoder._from_summary(summary)
    finally:
        encoder.discretizer = saved
    cont = np.asarray(decision.continuous, dtype=np.int64)
    if cont.size and encoder.discretizer_ is None and strategy is None:
        raise ValueError(f"a user discretizer object ({type(encoder.discretizer).__name__}) is fitted on the dense "
                         f"values of the continuous columns ({cont.size} here, e.g. {encoder.feature_names_[cont[0]]!r})"
                         ": sparse input takes discretizer='uniform', 'quantile' or 'mdl'")
    if cont.size and strategy in ("quantile", "mdl"):
        if strategy == "quantile":
            edges = _quantile_edges(g, st, cont, encoder.n_bins)
        else:
            if y is None:
                raise ValueError("strategy='mdl' is supervised: pass the class labels y")
            edges = _mdl_edges(ent, g, st, cont, y, encoder.n_bins)
        disc = Discretizer(n_bins=encoder.n_bins, strategy=strategy)._set_edges(edges)
        disc.n_features_in_ = len(edges)
        encoder.discretizer_ = disc
        encoder.cardinalities_[cont] = disc.n_bins_
    # the code of every pair: its rank among the categories, or its bin
    gcode = np.zeros(g.val.size, dtype=np.int64)
    z = np.zeros(N, dtype=np.int64)
    cat = np.ones(N, bool)
    cat[cont] = False
    if g.val.size:
        gcode = np.arange(g.val.size, dtype=np.int64) - g.start[g.col]
        gcode += st.zero_in[g.col] & (g.val > 0)  # after an implicit 0 that no stored entry holds
    has_zero = (st.n_zeros > 0) | (np.bincount(g.col[g.val == 0], minlength=N) > 0)
    z[cat & has_zero] = st.n_neg[cat & has_zero]
    if cont.size:
        E, pos = _edge_table(encoder.discretizer_.bin_edges_, cont, N)
        in_cont = pos[g.col] >= 0
        gcode[in_cont] = _bins(g.val[in_cont].astype(np.float64), E, pos[g.col[in_cont]])
        z[cont] = _bins(np.zeros(cont.size), E, pos[cont])
    of_entry = g.of_entry
    del g
    ent.data = None  # the stored values are read no more: their memory goes before the codes' masks
    codes = _swapped(ent, of_entry, gcode, z, _compact_dtype(encoder.cardinalities_), release=True)
    out = (_compressed(ent, codes, encoder.cardinalities_, layout), encoder.cardinalities_.copy())
    return (*out, z.astype(np.int64)) if return_zero else out


def _edge_table(edges: list, cont: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """The cut points of the continuous columns padded with NaN (width, n_cont), and each column's place in it."""
    width = max((e.size for e in edges), default=0)
    E = np.full((width, len(edges)), np.nan)
    for k, e in enumerate(edges):
        E[:e.size, k] = e
    pos = np.full(N, -1, dtype=np.int64)
    pos[cont] = np.arange(cont.size)
    return E, pos


def _bins(v: np.ndarray, E: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The bin of each value ``v`` in continuous column ``pos``: the cut points at or below it (as ``_bin_codes``)."""
    out = np.zeros(v.size, dtype=np.int64)
    for i in range(E.shape[0]):
        out += v >= E[i][pos]  # a NaN pad is never reached
    return out


def _has_fraction(ent: _Entries) -> bool:
    """Whether a finite observed value is not a whole number (a float array is then binned whole)."""
    v = ent.data
    step = 1 << 20
    for a in range(0, v.size, step):  # in blocks: a few temporaries of a block, not of nnz
        b = v[a:a + step]
        with np.errstate(invalid="ignore"):
            frac = np.isfinite(b) & (b != np.round(b))
        if ent.missing is not None:
            frac &= ~ent.missing[a:a + step]
        if frac.any():
            return True
    return False


def _swapped(ent: _Entries, of_entry: np.ndarray, gcode: np.ndarray, z: np.ndarray, dtype: np.dtype,
             release: bool = False) -> np.ndarray:
    """The code of every entry (in ``dtype``) with, per column, the code ``z`` of the value 0 swapped with 0
    (-1: missing). ``release``: ``of_entry`` is the caller's last reference, dropped once read."""
    gcode = gcode.astype(dtype)
    z = z.astype(dtype)
    if not gcode.size:
        codes = np.zeros(of_entry.size, dtype=dtype)
    else:  # a missing entry's index is -1: any pair's code, overwritten below
        codes = gcode[of_entry if ent.missing is None else np.maximum(of_entry, 0)]
    if release:
        del of_entry
    zc = ent.per_column(z)
    was_z, was_0 = codes == zc, codes == 0
    codes[was_z] = 0
    codes[was_0] = zc[was_0]
    if ent.missing is not None:
        codes[ent.missing] = -1
    return codes


def _compressed(ent: _Entries, codes: np.ndarray, cards: np.ndarray, layout: str = "csr") -> Any:
    """The canonical CSR (or CSC) matrix of the nonzero codes (stored 0s dropped)."""
    import scipy.sparse as sp

    if layout not in ("csr", "csc"):
        raise ValueError(f"layout must be 'csr' or 'csc', got {layout!r}")
    M, N = ent.shape
    keep = codes != 0
    dtype = _compact_dtype(cards)
    if keep.all():  # no entry coded 0 (counts: only the value 0 is): the entries' rows and pointers as they are
        indptr, rows, data = ent.indptr, ent.rows, codes.astype(dtype, copy=False)
    else:
        counts = np.bincount(ent.cols[keep], minlength=N)
        indptr = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        rows, data = ent.rows[keep], codes[keep].astype(dtype, copy=False)
    del keep
    csc = sp.csc_matrix((data, rows, indptr), shape=(M, N))
    csc.sort_indices()  # the entries came in CSC order: a check of the rows within each column
    if layout == "csc":
        return csc
    out = csc.tocsr()  # column after column into rows: sorted indices, no duplicates
    out.sort_indices()
    return out


def _virtual(g: _Groups, st: _Stats, cont: np.ndarray) -> tuple:
    """The finite values of the continuous columns with their multiplicities, the implicit zeros as one pair.

    Returns (col, val, count, start) sorted by column then value, ``start`` (n_cont + 1) where
    each column's pairs start, and ``idx``: for each pair, its pair in ``g`` (-1: the implicit zeros).
    """
    pos = np.full(st.n_zeros.size, -1, dtype=np.int64)
    pos[cont] = np.arange(cont.size)
    sel = np.flatnonzero((pos[g.col] >= 0) & np.isfinite(g.val.astype(np.float64)))
    zc = cont[st.n_zeros[cont] > 0]
    col = np.concatenate([pos[g.col[sel]], pos[zc]])
    val = np.concatenate([g.val[sel].astype(np.float64), np.zeros(zc.size)])
    cnt = np.concatenate([g.count[sel], st.n_zeros[zc].astype(np.int64)])
    idx = np.concatenate([sel, np.full(zc.size, -1, dtype=np.int64)])
    order = np.lexsort((val, col))
    col, val, cnt, idx = col[order], val[order], cnt[order], idx[order]
    start = np.searchsorted(col, np.arange(cont.size + 1), side="left")
    return col, val, cnt, start, idx


def _quantile_edges(g: _Groups, st: _Stats, cont: np.ndarray, n_bins: int) -> list[np.ndarray]:
    """Equal-frequency cut points of the continuous columns, as the dense fit makes them.

    The dense fit takes ``np.percentile(v, linspace(0, 100, n_bins + 1), method="averaged_inverted_cdf")``
    of each column's finite values ``v`` (zeros included) through scikit-learn's
    ``KBinsDiscretizer``, which drops the bins narrower than 1e-8; each quantile is a fixed
    combination of two order statistics of ``v``, read here from the sorted distinct values and
    their multiplicities (the same floating-point operations as NumPy's).
    """
    _, val, cnt, start, _ = _virtual(g, st, cont)
    cs = np.zeros(cnt.size + 1, dtype=np.int64)
    np.cumsum(cnt, out=cs[1:])  # the sorted columns one after another
    ends = cs[1:]
    base = cs[start[:-1]]
    n = cs[start[1:]] - base
    lo, hi = st.numbers.lo[cont], st.numbers.hi[cont]
    edges = [np.empty(0) for _ in range(cont.size)]
    varying = np.flatnonzero(hi > lo)
    if not varying.size:
        return edges
    q = np.true_divide(np.linspace(0, 100, n_bins + 1), 100)
    nv = n[varying]
    vi = nv[:, None] * q[None, :] - 1  # NumPy's virtual index of "averaged_inverted_cdf"
    prev = np.floor(vi)
    nxt = prev + 1
    above = vi >= (nv - 1)[:, None]
    prev[above], nxt[above] = -1, -1
    below = vi < 0
    prev[below], nxt[below] = 0, 0
    prev, nxt = prev.astype(np.intp), nxt.astype(np.intp)
    gamma = vi - prev
    t = np.where(gamma == 0, 0.5, 1.0)
    last = (nv - 1)[:, None]

    def at(p: np.ndarray) -> np.ndarray:  # the p-th value (-1: the last) of each column's sorted values
        p = np.where(p < 0, last + p + 1, p) + base[varying][:, None]
        return val[np.searchsorted(ends, p, side="right")]

    a, b = at(prev), at(nxt)
    with np.errstate(over="ignore"):
        wide = ~np.isfinite(hi[varying] - lo[varying])
    scale = np.ones(varying.size)
    scale[wide] = _power_of_two_above(np.maximum(np.abs(lo[varying][wide]), np.abs(hi[varying][wide])))
    if wide.any():  # the dense fit cuts the values divided by a power of two (exact) and scales back
        a, b = a / scale[:, None], b / scale[:, None]
    diff = b - a
    res = a + diff * t
    res = np.where(t >= 0.5, b - diff * (1 - t), res)
    for k, j in enumerate(varying.tolist()):
        e = res[k]
        e = e[np.ediff1d(e, to_begin=np.inf) > 1e-8]
        edges[j] = np.asarray(e[1:-1], dtype=np.float64) * scale[k]
    return edges


def _mdl_edges(ent: _Entries, g: _Groups, st: _Stats, cont: np.ndarray, y: Any, n_bins: int) -> list[np.ndarray]:
    """Supervised MDL cut points of the continuous columns, as the dense fit makes them.

    The MDL criterion reads the class counts of the finite values at the boundaries between
    distinct values only, so the sorted distinct values with their class counts (the implicit
    zeros' counts are the classes of the rows without a stored entry) give the same splits.
    """
    labels = np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)
    try:
        _, yc = np.unique(labels, return_inverse=True)
    except TypeError:  # labels of several types: their text tells the classes apart
        _, yc = np.unique(labels.astype(str), return_inverse=True)
    yc = yc.ravel().astype(np.int64)
    C = int(yc.max()) + 1 if yc.size else 1
    col, val, _, start, idx = _virtual(g, st, cont)
    # class counts of every pair, and of each continuous column's implicit zeros
    obs = np.flatnonzero(g.of_entry >= 0)
    pair_cls = np.bincount(g.of_entry[obs] * C + yc[ent.rows[obs]], minlength=g.val.size * C).reshape(-1, C)
    pos = np.full(ent.shape[1], -1, dtype=np.int64)
    pos[cont] = np.arange(cont.size)
    stored = pos[ent.cols] >= 0
    stored_cls = np.bincount(pos[ent.cols[stored]] * C + yc[ent.rows[stored]],
                             minlength=cont.size * C).reshape(-1, C)
    zero_cls = np.bincount(yc, minlength=C)[None, :] - stored_cls
    W = np.where((idx >= 0)[:, None], pair_cls[np.maximum(idx, 0)], zero_cls[col])
    lo, hi = st.numbers.lo[cont], st.numbers.hi[cont]
    edges = [np.empty(0) for _ in range(cont.size)]
    for k in np.flatnonzero(hi > lo).tolist():
        a, b = int(start[k]), int(start[k + 1])
        edges[k] = _mdl_weighted(val[a:b], W[a:b], n_bins)
    return edges


def _mdl_weighted(u: np.ndarray, W: np.ndarray, max_bins: int | None) -> np.ndarray:
    """:func:`~tensorprob.encoding._discretize.mdl_cut_points` of the values ``u`` (sorted, distinct, but
    a zero may repeat) with class counts ``W`` (D, C): the same splits, on the boundaries only."""
    keep = np.ones(u.size, bool)
    keep[1:] = u[1:] != u[:-1]
    if not keep.all():  # a stored zero next to the implicit ones: one value
        W = np.add.reduceat(W, np.flatnonzero(keep), axis=0)
        u = u[keep]
    return mdl_cut_points_of_counts(u, W[:, W.sum(0) > 0], max_bins)


def transform_sparse(encoder: Encoder, X: Any, return_zero: bool = False) -> Any:
    """The sparse codes of X by a fitted encoder, with the relabelling of :func:`encode_sparse`.

    Parameters
    ----------
    encoder : Encoder
        A fitted encoder (by :func:`encode_sparse` or on the dense data).
    X : scipy.sparse matrix or array of shape (n_samples, n_features)
        The columns seen by the fit; implicit entries are the value 0.
    return_zero : bool, default=False
        Also return the dense code of the value 0 of every column (as :func:`encode_sparse`).

    Returns
    -------
    codes : scipy.sparse.csr_matrix
        Canonical, in the compact dtype of the cardinalities: in every column the dense code
        of the value 0 swapped with code 0; missing entries stored as -1.
    zero : ndarray of int64, shape (n_features,)
        With ``return_zero``.

    Raises
    ------
    ValueError
        Another number of columns, or a value the fit did not see (the dense transform's
        message, naming the first such value of the first such column); a continuous
        column of a user discretizer object.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(encoder)
    ent = _entries(X, encoder.missing_values)
    M, N = ent.shape
    if N != encoder.n_features_in_:
        raise ValueError(f"X has {N} features, but {type(encoder).__name__} is expecting "
                         f"{encoder.n_features_in_} features as input.")
    cont = np.asarray(encoder._cont_idx, dtype=np.int64)
    cat = np.ones(N, bool)
    cat[cont] = False
    if cont.size and not isinstance(encoder.discretizer_, Discretizer):
        raise ValueError("a user discretizer object codes the dense values of its columns: sparse input takes "
                         "discretizer='uniform', 'quantile' or 'mdl'")
    v = _values(ent)
    codes = np.zeros(v.size, dtype=np.int64)
    z = np.zeros(N, dtype=np.int64)
    cats = encoder.categories_
    ccols = np.flatnonzero(cat)
    if ccols.size:
        lens = np.fromiter((0 if cats[j] is None else len(cats[j]) for j in ccols.tolist()), np.int64, ccols.size)
        flat = [cats[j] for j in ccols.tolist() if cats[j] is not None and len(cats[j])]
        cv = np.concatenate(flat) if flat else np.zeros(0, dtype=v.dtype)
        if cv.dtype.kind == "O" or any(encoder._lookup[j] is not None for j in ccols.tolist()):
            raise ValueError("transform_sparse codes numeric categories only: this encoder was fitted on other values")
        ccol = np.repeat(ccols, lens)
        cstart = np.zeros(N, dtype=np.int64)
        cstart[ccols] = np.cumsum(lens) - lens
        # the code of 0 in each categorical column (none: the identity)
        zpos, zok = _match(ccol, cv, ccols, np.zeros(ccols.size, dtype=cv.dtype))
        z[ccols[zok]] = zpos[zok] - cstart[ccols[zok]]
        sel = np.flatnonzero(cat[ent.cols] & (True if ent.missing is None else ~ent.missing))
        epos, eok = _match(ccol, cv, ent.cols[sel], v[sel])
        codes[sel[eok]] = epos[eok] - cstart[ent.cols[sel[eok]]]
        zero_bad = ccols[~zok & (M - np.diff(ent.indptr)[ccols] > 0)]
        bad_entry = sel[~eok]
        if zero_bad.size or bad_entry.size:
            _unseen(encoder, ent, zero_bad, bad_entry)
    if cont.size:
        E, pos = _edge_table(encoder.discretizer_.bin_edges_, cont, N)
        sel = np.flatnonzero(pos[ent.cols] >= 0)
        codes[sel] = _bins(v[sel].astype(np.float64), E, pos[ent.cols[sel]])
        z[cont] = _bins(np.zeros(cont.size), E, pos[cont])
    zc = z[ent.cols]
    was_z, was_0 = codes == zc, codes == 0
    codes[was_z] = 0
    codes[was_0] = zc[was_0]
    if ent.missing is not None:
        codes[ent.missing] = -1
    out = _compressed(ent, codes, encoder.cardinalities_)
    return (out, z) if return_zero else out


def _match(ccol: np.ndarray, cv: np.ndarray, col: np.ndarray, val: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each (col, val), the position of the equal (column, category) among ``(ccol, cv)`` (sorted by
    column, then value) and whether there is one: one sort of both together."""
    n = ccol.size
    allc = np.concatenate([ccol, col])
    allv = np.concatenate([cv, val.astype(np.result_type(cv.dtype, val.dtype), copy=False)])
    flag = np.concatenate([np.zeros(n, np.int8), np.ones(col.size, np.int8)])
    order = np.lexsort((flag, allv, allc))  # a category before the equal entries
    idx = np.arange(order.size)
    lastcat = np.maximum.accumulate(np.where(order < n, idx, -1)) if order.size else idx
    where = np.flatnonzero(order >= n)
    k = lastcat[where]
    found = np.where(k >= 0, order[np.maximum(k, 0)], 0)
    e = order[where] - n
    pos = np.zeros(col.size, dtype=np.int64)
    ok = np.zeros(col.size, dtype=bool)
    hit = (k >= 0)
    if n:
        hit &= (ccol[found] == col[e]) & (cv[found] == val[e])
    pos[e] = found
    ok[e] = hit
    return pos, ok


def _unseen(encoder: Encoder, ent: _Entries, zero_bad: np.ndarray, bad_entry: np.ndarray) -> None:
    """Raise the dense transform's error: the first unseen value (in row order) of the first column holding one."""
    j = int(min(zero_bad.min() if zero_bad.size else ent.shape[1], ent.cols[bad_entry].min() if bad_entry.size
                else ent.shape[1]))
    rows = []
    if j in set(zero_bad.tolist()):
        stored = np.sort(ent.rows[ent.indptr[j]:ent.indptr[j + 1]])
        gaps = np.flatnonzero(stored != np.arange(stored.size))
        rows.append((int(gaps[0]) if gaps.size else stored.size, ent.data.dtype.type(0)))
    mine = bad_entry[ent.cols[bad_entry] == j]
    if mine.size:
        i = mine[np.argmin(ent.rows[mine])]
        rows.append((int(ent.rows[i]), ent.data[i]))
    value = min(rows, key=lambda rv: rv[0])[1]
    raise ValueError(f"column {encoder.feature_names_[j]!r} has a value not seen when fitting: {value!r}")


__all__ = ["encode_sparse", "transform_sparse"]
