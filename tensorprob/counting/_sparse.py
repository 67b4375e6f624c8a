"""Contingency tables of sparse codes, counted from their stored entries (code 0 is implicit).

Sparse data (term counts, variants, baskets) are codes whose most frequent value, 0, is not
stored. Every table a selector reads can be counted from the stored entries alone: a cell with
a nonzero code somewhere is a count of stored entries, and the cells of code 0 are what the
margins leave. A class table costs one pass over the stored entries; the (x_c, x_j, class)
tables of every candidate against a pick j read only the stored entries of the rows where
x_j is off its most frequent value (the other rows are counted by the class table already),
so a greedy step costs time in proportion to the entries it touches, not to rows x features.

The codes come as the three arrays of a compressed sparse matrix (CSC for columns, CSR for
rows; SciPy's layout): stored codes are 1 .. card - 1 (an explicitly stored 0 counts as 0),
every entry is complete (no missing code), and every count is an exact integer, the same as a
dense count of the same codes.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch

from . import _costs
from ._planner import Request, Strategy, register


class SparseCodes(NamedTuple):
    """Codes of M rows x N columns held as both compressed layouts (code 0 not stored).

    Parameters
    ----------
    shape : (int, int)
        Rows M and columns N.
    col_ptr, col_rows, col_codes : ndarray
        CSC: the entries of column n are ``col_ptr[n]:col_ptr[n + 1]``, at rows ``col_rows``
        with codes ``col_codes``.
    row_ptr, row_cols, row_codes : ndarray
        CSR: the entries of row r are ``row_ptr[r]:row_ptr[r + 1]``, in columns ``row_cols``
        with codes ``row_codes``.
    """

    shape: tuple[int, int]
    col_ptr: np.ndarray
    col_rows: np.ndarray
    col_codes: np.ndarray
    row_ptr: np.ndarray
    row_cols: np.ndarray
    row_codes: np.ndarray

    @classmethod
    def from_scipy(cls, codes) -> SparseCodes:
        """Both layouts of a SciPy sparse matrix or array of integer codes (any format).

        Parameters
        ----------
        codes : scipy.sparse matrix or array of shape (M, N)
            Codes 0 .. card - 1, integers; 0 need not be stored (stored zeros count as 0).

        Returns
        -------
        SparseCodes
        """
        import scipy.sparse as sp

        if not sp.issparse(codes):
            raise TypeError(f"expected a scipy.sparse matrix or array, got {type(codes).__name__}")
        csc, csr = sp.csc_matrix(codes), sp.csr_matrix(codes)
        for m in (csc, csr):
            m.sum_duplicates()  # canonical: sorted, one entry per cell
            m.eliminate_zeros()
        M, N = csr.shape
        return cls((int(M), int(N)), csc.indptr.astype(np.int64), csc.indices.astype(np.int64), csc.data,
                   csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data)

    @property
    def nnz(self) -> int:
        """Stored entries."""
        return int(self.col_rows.size)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for every (s, n), in one vectorized pass."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths  # where each range starts in the output
    return np.repeat(starts - offsets, lengths) + np.arange(total, dtype=np.int64)


def sparse_class_table(codes: SparseCodes | Any, card: int, y: np.ndarray, n_classes: int,
                       weights: np.ndarray | None = None) -> np.ndarray:
    """Counts of (x_n, class) for every column: (N, card, n_classes), from the stored entries.

    Parameters
    ----------
    codes : SparseCodes or scipy.sparse.csc_matrix
        The codes (code 0 implicit; a stored -1 is a missing entry, counted nowhere).
    card : int
        Largest cardinality of the columns (the tables' second axis).
    y : ndarray of shape (M,), int
        Classes 0 .. n_classes - 1 (all rows, or a constant for class-free tables).
    n_classes : int
        Number of classes.
    weights : ndarray of shape (M,), optional
        Row weights (the counts are then their float64 sums).

    Returns
    -------
    ndarray of shape (N, card, n_classes)
        int64 counts, or float64 sums of weights.
    """
    ptr, rows, vals = _csc_arrays(codes)
    N = ptr.size - 1
    y = np.asarray(y, dtype=np.int64)
    C, I = int(n_classes), int(card)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    T = np.zeros((N, I, C), dtype=np.int64 if w is None else np.float64)
    missing = np.zeros((N, C), dtype=T.dtype)
    # blocks of whole columns of about _BLOCK_ENTRIES entries: the int64 keys of one block at a time
    for c0, c1 in _column_blocks(ptr, _BLOCK_ENTRIES):
        s, e = int(ptr[c0]), int(ptr[c1])
        col = np.repeat(np.arange(c1 - c0, dtype=np.int64), np.diff(ptr[c0:c1 + 1]))
        v = vals[s:e].astype(np.int64)
        r = rows[s:e]
        observed = v >= 0
        if not observed.all():  # missing entries: their rows leave the column's table, code 0 included
            gone = ~observed
            missing[c0:c1] += np.bincount(col[gone] * C + y[r[gone]], weights=None if w is None else w[r[gone]],
                                          minlength=(c1 - c0) * C).reshape(c1 - c0, C).astype(T.dtype, copy=False)
            col, r, v = col[observed], r[observed], v[observed]
        key = (col * I + v) * C + y[r]
        T[c0:c1] += np.bincount(key, weights=None if w is None else w[r],
                                minlength=(c1 - c0) * I * C).reshape(c1 - c0, I, C).astype(T.dtype, copy=False)
    # code 0: the class sizes less the stored entries (a stored 0 was counted in cell 0 already)
    sizes = np.bincount(y, weights=w, minlength=C)
    T[:, 0, :] = sizes[None, :] - T[:, 1:, :].sum(1) - missing
    return T


#: Stored entries per block of columns of :func:`sparse_class_table` (its int64 keys stay small).
_BLOCK_ENTRIES = 1 << 22


def _column_blocks(ptr: np.ndarray, per: int) -> list[tuple[int, int]]:
    """Ranges of whole columns holding about ``per`` entries each (a longer column is a block alone)."""
    N = ptr.size - 1
    out, c0 = [], 0
    while c0 < N:
        c1 = int(np.searchsorted(ptr, int(ptr[c0]) + per, side="right")) - 1
        c1 = min(N, max(c1, c0 + 1))
        out.append((c0, c1))
        c0 = c1
    return out or [(0, 0)]


def _csc_arrays(codes: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, row of each entry, code of each entry) of column-compressed codes."""
    if isinstance(codes, SparseCodes):
        return codes.col_ptr, codes.col_rows, codes.col_codes
    return codes.indptr, codes.indices, codes.data


def sparse_pair_tables(codes: SparseCodes, card: int, j: int, card_j: int, y: np.ndarray, n_classes: int,
                       class_table: np.ndarray, cols: tuple[int, int] | None = None) -> np.ndarray:
    """Counts of (x_c, x_j, class) for the candidates c against the pick j, from the entries of the rows off the pick's top value.

    With ``b`` the pick's most frequent code (0 for a sparse column), the cells with x_c and
    x_j both off their defaults (x_c != 0, x_j != b) come from the stored entries of the rows
    where x_j != b, at most half of the rows; the cells with x_j = b are the class table's
    counts less those, and the cells with x_c = 0 are the pick's own (x_j, class) counts less
    the rest of their column.

    Parameters
    ----------
    codes : SparseCodes
        The codes (complete; code 0 implicit).
    card : int
        Largest cardinality of the candidates (the tables' second axis).
    j : int
        The pick (column ``a`` of the tables).
    card_j : int
        Cardinality of the pick (the tables' third axis).
    y : ndarray of shape (M,), int
        Classes (a constant for class-free tables).
    n_classes : int
        Number of classes.
    class_table : ndarray of shape (N, card, n_classes), int
        :func:`sparse_class_table` of the same codes, classes and ``card``.
    cols : (int, int), optional
        Count only the candidates ``cols[0] .. cols[1] - 1`` (a block); None: every column.

    Returns
    -------
    ndarray of shape (n_cols, card, card_j, n_classes), int64
    """
    M, N = codes.shape
    c0, c1 = (0, N) if cols is None else (int(cols[0]), int(cols[1]))
    I, A, C = int(card), int(card_j), int(n_classes)
    y = np.asarray(y, dtype=np.int64)
    pick = class_table[j, :A, :]
    b = int(np.argmax(pick.sum(1)))  # the pick's most frequent code: its rows are not read
    s, e = int(codes.col_ptr[j]), int(codes.col_ptr[j + 1])
    stored, stored_a = codes.col_rows[s:e], codes.col_codes[s:e].astype(np.int64)
    if b == 0:
        keep = stored_a != 0  # an explicitly stored 0 is code 0
        rows, a = stored[keep], stored_a[keep]
    else:  # the pick is nonzero in most rows: read the others (its zeros among them)
        code = np.zeros(M, dtype=np.int64)
        code[stored] = stored_a
        rows = np.flatnonzero(code != b)
        a = code[rows]
    starts = codes.row_ptr[rows]
    lengths = codes.row_ptr[rows + 1] - starts
    at = _ranges(starts, lengths)
    cand = codes.row_cols[at]
    x = codes.row_codes[at].astype(np.int64)
    owner = np.repeat(np.arange(rows.size), lengths)  # the position in ``rows`` of each entry's row
    if cols is not None:
        inside = (cand >= c0) & (cand < c1)
        cand, x, owner = cand[inside], x[inside], owner[inside]
    key = (((cand - c0) * I + x) * A + a[owner]) * C + y[rows][owner]
    n = c1 - c0
    T = np.bincount(key, minlength=n * I * A * C).reshape(n, I, A, C)
    T[:, 0] = 0  # stored zeros of candidates: their cells are filled below
    # x_c != 0, x_j = b: the (x_c, class) counts less those with x_j != b
    T[:, 1:, b, :] = class_table[c0:c1, 1:, :] - T[:, 1:, :, :].sum(2)
    # x_c = 0: the (x_j, class) counts less those with x_c != 0
    T[:, 0, :, :] = pick[None] - T[:, 1:, :, :].sum(1)
    return T


def sparse_listed_pair_tables(codes: SparseCodes, card: int, cand: np.ndarray, sel: np.ndarray, cards: np.ndarray,
                              y: np.ndarray, n_classes: int, class_table: np.ndarray) -> np.ndarray:
    """Counts of (x_cand[i], x_sel[i], class) for listed pairs (CMIM's lazy rounds): (P, card, card, n_classes) int64.

    The pairs are grouped by their selected feature; each group is one call of
    :func:`sparse_pair_tables` restricted to its candidates (the entries of the rows off the
    pick's top code whose column is listed), so a round reads each pick's rows once.

    Parameters
    ----------
    codes : SparseCodes
        The codes (complete; code 0 implicit).
    card : int
        Largest cardinality (both table axes are padded to it).
    cand, sel : ndarray of int of shape (P,)
        The candidate and the selected feature of every pair.
    cards : ndarray of int of shape (N,)
        Cardinality of every column.
    y : ndarray of shape (M,), int
        Classes (a constant for class-free tables).
    n_classes : int
        Number of classes.
    class_table : ndarray of shape (N, card, n_classes), int
        :func:`sparse_class_table` of the same codes, classes and ``card``.

    Returns
    -------
    ndarray of shape (P, card, card, n_classes), int64
    """
    cand, sel = np.asarray(cand, dtype=np.int64), np.asarray(sel, dtype=np.int64)
    if cand.shape != sel.shape or cand.ndim != 1:
        raise ValueError(f"cand and sel must be 1-D of one length, got shapes {cand.shape} and {sel.shape}")
    I, C = int(card), int(n_classes)
    out = np.zeros((cand.size, I, I, C), dtype=np.int64)
    order = np.argsort(sel, kind="stable")
    picks, starts = np.unique(sel[order], return_index=True)
    bounds = np.append(starts, order.size)
    for j, s0, s1 in zip(picks.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
        at = order[s0:s1]  # the pairs of pick j
        c = cand[at]
        lo, hi = int(c.min()), int(c.max()) + 1  # one block spanning the group's candidates
        A = int(cards[j])
        T = sparse_pair_tables(codes, I, j, A, y, C, class_table, cols=(lo, hi))
        out[at, :, :A, :] = T[c - lo]
    return out


class SparseRows:
    """The sparse codes of a run, in memory, read as streamed rows are (code 0 implicit).

    A :class:`~tensorprob.counting.SelectionData` takes it as its ``stream``: the strategies
    that know sparse codes (``sparse-class``, ``baseline``) read the stored entries column by
    column, and every other count (the plain reference) reads dense blocks of rows made from
    them (:meth:`blocks`), so at most one block of rows is ever dense.

    Parameters
    ----------
    codes : scipy.sparse matrix or array of shape (M, N)
        Integer codes 0 .. card - 1 of the columns, -1 for a missing entry; 0 need not be stored.
    y : ndarray of shape (M,), int
        Class codes.
    weights : ndarray of shape (M,), optional
        Row weights (None: every row counts once).
    block_rows : int
        Rows of one dense block of :meth:`blocks`.

    Attributes
    ----------
    csc : scipy.sparse.csc_matrix
        The codes, canonical (sorted, no duplicates, no stored zero), int32 row indices.
    y : ndarray of shape (M,), int64
    weights : ndarray of shape (M,), float64, or None
    n_rows, n_features, nnz : int
    weighted, complete : bool
        Rows carry weights; no entry is missing.
    weight_total : float
        Total weight (the rows when unweighted).
    """

    def __init__(self, codes: Any, y: np.ndarray, weights: np.ndarray | None, block_rows: int) -> None:
        import scipy.sparse as sp

        csc = codes if isinstance(codes, sp.csc_matrix) else sp.csc_matrix(codes)  # a CSC matrix is not copied
        if not csc.has_canonical_format:
            csc = csc.copy() if csc is codes else csc  # the caller's matrix stays as it is
            csc.sum_duplicates()
        if csc.data.size and not csc.data.all():
            csc = csc.copy() if csc is codes else csc
            csc.eliminate_zeros()
        if csc.indices.dtype != np.int32 and csc.shape[0] < 2**31:
            csc.indices = csc.indices.astype(np.int32)
        self.csc = csc
        self.n_rows, self.n_features = (int(v) for v in csc.shape)
        self.y = np.asarray(y, dtype=np.int64)
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self.weighted = self.weights is not None
        self.weight_total = float(self.n_rows) if self.weights is None else float(self.weights.sum())
        self.complete = not bool(csc.data.size and csc.data.min() < 0)
        self.block_rows = max(1, int(block_rows))
        self._csr = None

    @property
    def nnz(self) -> int:
        """Stored entries."""
        return int(self.csc.nnz)

    def column(self, j: int) -> np.ndarray:
        """The codes of column ``j`` for every row (M,), int64 (-1 missing)."""
        out = np.zeros(self.n_rows, dtype=np.int64)
        s, e = int(self.csc.indptr[j]), int(self.csc.indptr[j + 1])
        out[self.csc.indices[s:e]] = self.csc.data[s:e]
        return out

    def blocks(self, device: Any) -> Any:
        """Dense blocks of rows on ``device``: (codes (b, N) feature-major, class codes (b,), weights (b,) or None)."""
        import torch

        if self._csr is None:
            self._csr = self.csc.tocsr()
        for s in range(0, max(1, self.n_rows), self.block_rows):
            e = min(self.n_rows, s + self.block_rows)
            dense = self._csr[s:e].T.toarray()  # (N, b): feature-major, as every count reads blocks
            codes = torch.from_numpy(np.ascontiguousarray(dense)).to(device).T
            y = torch.from_numpy(self.y[s:e]).to(device)
            w = None if self.weights is None else torch.from_numpy(self.weights[s:e]).to(device)
            yield codes, y, w

    def close(self) -> None:
        """Drop the row layout made for :meth:`blocks` (the codes stay)."""
        self._csr = None


@register
class SparseClass(Strategy):
    """The (x_c, class) table of every feature from the stored entries of sparse codes (:func:`sparse_class_table`).

    One pass over the stored entries; the cells of code 0 are the class sizes less the others.
    Any weights, missing entries (stored -1), distributed rows (each rank counts its own).
    """

    name = "sparse-class"
    kinds = frozenset({"class"})
    reads_sparse = True

    def applies(self, req: Request) -> str | None:
        return None if self.data.sparse is not None else "the codes are not sparse"

    def seconds(self, req: Request) -> float:
        d = self.data
        return d.sparse.nnz * 2 * _costs.KEY_S + d.n_features * d.max_card * d.n_classes * _costs.CELL_S

    def count(self, req: Request) -> torch.Tensor:
        d = self.data
        rows = d.sparse
        T = sparse_class_table(rows.csc, d.max_card, rows.y, d.n_classes, rows.weights)
        return d.reduce(torch.from_numpy(T).to(device=d.codes.device, dtype=d.dtype)[:, :, None, :])
