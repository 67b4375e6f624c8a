"""Sparse codes: the rows of a run held as a compressed matrix (code 0 implicit), and the class table from them.

Sparse data (term counts, variants, baskets) are codes whose most frequent value, 0, is not
stored. :class:`SparseRows` holds them (CSC, the layout the counts read) as the ``stream`` of a
:class:`~tensorprob.counting.SelectionData`. Two strategies count from the stored entries: the
``sparse-class`` strategy of this module (the class table: a cell with a nonzero code is a count
of stored entries, the cells of code 0 are the class sizes less the others) and ``baseline``
(:mod:`~tensorprob.counting._baseline`, with baseline 0: the pair tables of a greedy step from
one pass over the stored entries). Every other count reads dense blocks of rows
(:meth:`SparseRows.blocks`). Counts are exact integers (float64 sums of weights), the same as a
dense count of the same codes.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from . import _costs
from ._baseline import entry_blocks
from ._planner import Request, Strategy, register


def sparse_class_table(codes: Any, card: int, y: np.ndarray, n_classes: int,
                       weights: np.ndarray | None = None) -> np.ndarray:
    """Counts of (x_n, class) for every column: (N, card, n_classes), from the stored entries.

    Parameters
    ----------
    codes : scipy.sparse.csc_matrix
        The codes, canonical (code 0 implicit; a stored -1 is a missing entry, counted nowhere).
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
    ptr, rows, vals = codes.indptr, codes.indices, codes.data
    N = ptr.size - 1
    y = np.asarray(y, dtype=np.int64)
    C, I = int(n_classes), int(card)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    T = np.zeros((N, I, C), dtype=np.int64 if w is None else np.float64)
    missing = np.zeros((N, C), dtype=T.dtype)
    # blocks of whole columns of about _BLOCK_ENTRIES entries: the int64 keys of one block at a time
    for c0, c1 in entry_blocks(ptr, _BLOCK_ENTRIES):
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
    nnz_all : int
        Stored entries of every rank (``nnz`` in one process).
    weighted, complete : bool
        Rows carry weights; no entry is missing.
    weight_total : float
        Total weight (the rows when unweighted).
    """

    def __init__(self, codes: Any, y: np.ndarray, weights: np.ndarray | None, block_rows: int,
                 distributed: bool = False) -> None:
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
        self.nnz_all = self.nnz  # of every rank: what the estimates read, the same on all of them
        if distributed:
            from .. import _distributed

            self.nnz_all = int(_distributed.all_reduce_sum(torch.tensor([float(self.nnz)], dtype=torch.float64))[0])

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
        return d.sparse.nnz_all * 2 * _costs.KEY_S + d.n_features * d.max_card * d.n_classes * _costs.CELL_S

    def count(self, req: Request) -> torch.Tensor:
        d = self.data
        rows = d.sparse
        T = sparse_class_table(rows.csc, d.max_card, rows.y, d.n_classes, rows.weights)
        return d.reduce(torch.from_numpy(T).to(device=d.codes.device, dtype=d.dtype)[:, :, None, :])
