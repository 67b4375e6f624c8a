"""Rows of codes held sparse for the CPD fits: each variable's base code implicit, the other entries stored.

:class:`SparseCodeRows` holds M rows of N coded variables as compressed rows whose stored
entries are exactly those off each variable's *base* code (the code of the value 0 of sparse
input); :func:`unique_sparse_rows` merges identical rows into weights, in the order
:func:`~tensorprob.counting.unique_rows` gives the dense rows; :class:`SparseIncidence` is the
EM's incidence matrix built from them, relative to the base codes (the layout
:class:`~tensorprob.counting.Incidence` uses with ``baseline=True``), so the E- and M-step
products cost one operation per stored entry and no dense row is ever made.
"""
from __future__ import annotations

import numpy as np
import torch

from .._config import get_config
from .._device import chunk_rows
from ._incidence import Incidence, _csr_pair_entries, offsets_of

#: Token order of :func:`unique_sparse_rows`: an entry below its base < a row's end < an entry above it.
_END = 1 << 60
_ABOVE = 1 << 61


class SparseCodeRows:
    """M rows of N coded variables, stored off each variable's base code.

    Parameters
    ----------
    indptr : ndarray of shape (M + 1,), int64
        Where each row's entries start.
    cols : ndarray of int
        Variable of each entry, increasing within a row.
    codes : ndarray of int
        Code of each entry (never its variable's base; -1 for a missing entry).
    base : ndarray of shape (N,), int64
        The implicit code of each variable.

    Attributes
    ----------
    shape : (int, int)
        Rows and variables.
    """

    def __init__(self, indptr: np.ndarray, cols: np.ndarray, codes: np.ndarray, base: np.ndarray) -> None:
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.cols = np.asarray(cols)
        self.codes = np.asarray(codes)
        self.base = np.asarray(base, dtype=np.int64)
        self.shape = (int(self.indptr.size - 1), int(self.base.size))
        self.device = torch.device("cpu")

    @classmethod
    def from_csr(cls, csr, base: np.ndarray) -> SparseCodeRows:
        """From a canonical CSR matrix of codes whose stored entries are off ``base`` (the implicit code)."""
        return cls(csr.indptr, csr.indices, csr.data, base)

    @classmethod
    def concat(cls, parts: list[SparseCodeRows]) -> SparseCodeRows:
        """The rows of ``parts`` (the same variables and base codes) one after the other."""
        if not parts:
            raise ValueError("no rows to concatenate")
        ends = np.cumsum([0] + [p.nnz for p in parts])
        indptr = np.concatenate([[0]] + [p.indptr[1:] + e for p, e in zip(parts, ends[:-1])])
        return cls(indptr, np.concatenate([p.cols for p in parts]), np.concatenate([p.codes for p in parts]),
                   parts[0].base)

    @property
    def nnz(self) -> int:
        """Stored entries."""
        return int(self.indptr[-1])

    def numel(self) -> int:
        """Rows x variables (what a dense copy would hold)."""
        return self.shape[0] * self.shape[1]

    def entries(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row within the block, variable, code) of the entries of rows ``start:stop``."""
        s, e = int(self.indptr[start]), int(self.indptr[stop])
        rows = np.repeat(np.arange(stop - start, dtype=np.int64), np.diff(self.indptr[start:stop + 1]))
        return rows, self.cols[s:e].astype(np.int64), self.codes[s:e].astype(np.int64)

    def dense(self, start: int = 0, stop: int | None = None, index: np.ndarray | None = None) -> np.ndarray:
        """The codes of rows ``start:stop`` (or ``index``) as a dense (rows, N) int64 array."""
        sub = self if index is None else self.take(np.asarray(index, dtype=np.int64))
        stop = sub.shape[0] if index is not None or stop is None else stop
        start = 0 if index is not None else start
        out = np.broadcast_to(sub.base, (stop - start, sub.shape[1])).copy()
        r, c, x = sub.entries(start, stop)
        out[r, c] = x
        return out

    def missing_counts(self, start: int, stop: int, weights: torch.Tensor | None = None) -> torch.Tensor:
        """Missing entries of each row of ``start:stop``: (rows,), or (rows, B) summed with per-variable ``weights`` (N, B)."""
        r, c, x = self.entries(start, stop)
        miss = x < 0
        n = stop - start
        if weights is None:
            return torch.from_numpy(np.bincount(r[miss], minlength=n).astype(np.float64))
        out = torch.zeros((n, weights.shape[1]), dtype=torch.float64)
        if miss.any():
            out.index_add_(0, torch.from_numpy(r[miss]), weights.cpu().to(torch.float64)[torch.from_numpy(c[miss])])
        return out.to(weights.device)

    def with_column(self, n: int, codes: np.ndarray, dtype: np.dtype | None = None) -> SparseCodeRows:
        """These rows with variable ``n`` set to ``codes`` (M,), stored where they are off its base code.

        ``n`` equal to the number of variables appends one (base code 0, its entry last in each
        row: no reordering); ``dtype`` is then the stored codes' dtype (default: wide enough for both).
        """
        M, N = self.shape
        codes = np.asarray(codes)
        if n == N:
            has = codes != 0
            ptr = np.zeros(M + 1, dtype=np.int64)
            np.cumsum(np.diff(self.indptr) + has, out=ptr[1:])
            cols = np.empty(int(ptr[-1]), dtype=np.int64 if N + 1 >= 2**31 else np.int32)
            vals = np.empty(int(ptr[-1]), dtype=dtype or np.result_type(self.codes.dtype, codes.dtype))
            old = np.repeat(ptr[:-1] - self.indptr[:-1], np.diff(self.indptr)) + np.arange(self.nnz, dtype=np.int64)
            cols[old], vals[old] = self.cols, self.codes
            last = ptr[1:][has] - 1
            cols[last], vals[last] = N, codes[has]
            return SparseCodeRows(ptr, cols, vals, np.append(self.base, 0))
        row = np.repeat(np.arange(M, dtype=np.int64), np.diff(self.indptr))
        keep = self.cols != n
        codes = codes.astype(np.int64)
        new = np.flatnonzero(codes != self.base[n])
        rows = np.concatenate([row[keep], new])
        cols = np.concatenate([self.cols[keep].astype(np.int64), np.full(new.size, n, dtype=np.int64)])
        vals = np.concatenate([self.codes[keep].astype(np.int64), codes[new]])
        order = np.lexsort((cols, rows))
        indptr = np.zeros(M + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=M), out=indptr[1:])
        return SparseCodeRows(indptr, cols[order], vals[order], self.base)

    def take(self, index: np.ndarray) -> SparseCodeRows:
        """The rows ``index`` (any order, repeats allowed)."""
        index = np.asarray(index, dtype=np.int64)
        lengths = self.indptr[index + 1] - self.indptr[index]
        ptr = np.zeros(index.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        at = np.repeat(self.indptr[index] - ptr[:-1], lengths) + np.arange(int(ptr[-1]), dtype=np.int64)
        return SparseCodeRows(ptr, self.cols[at], self.codes[at], self.base)


def _tokens(rows: SparseCodeRows, at: np.ndarray) -> np.ndarray:
    """One int64 per entry ``at`` whose lexicographic order over a row (its end as ``_END``) is the dense rows' order.

    At the first variable where two rows differ, either both store an entry there (the codes
    decide) or one does and the other holds the base: an entry above its base sorts after
    the base (and after any later variable), one below before it. So an entry above its base
    is ``_ABOVE + (N - n) * S + code``, one below ``n * S + code + 1`` (missing, -1, lowest).
    """
    N = rows.shape[1]
    span = int(max(int(rows.codes.max(initial=0)), int(rows.base.max(initial=0)))) + 2
    n = rows.cols[at].astype(np.int64)
    x = rows.codes[at].astype(np.int64)
    return np.where(x > rows.base[n], _ABOVE + (N - n) * span + x, n * span + x + 1)


def unique_sparse_rows(rows: SparseCodeRows, weights: np.ndarray | None = None
                       ) -> tuple[SparseCodeRows, np.ndarray, np.ndarray]:
    """Merge identical rows, ordered as :func:`~tensorprob.counting.unique_rows` orders the dense rows.

    The rows are sorted by their entries' tokens (:func:`_tokens`), last position first, with
    stable sorts (one pass per position of the longest row, each over one token per row), then
    neighbours with the same entries are merged. Memory: a few arrays of one value per row.

    Parameters
    ----------
    rows : SparseCodeRows
    weights : ndarray of shape (M,) or (M, B), optional
        Per-row weights (default one per row).

    Returns
    -------
    distinct : SparseCodeRows
        The distinct rows, in the dense rows' lexicographic order (missing lowest).
    merged : ndarray of shape (M',) or (M', B), float64
        Summed weights of each.
    inverse : ndarray of shape (M,), int64
        Index of each row among the distinct ones.
    """
    M = rows.shape[0]
    lengths = np.diff(rows.indptr)
    longest = int(lengths.max(initial=0))
    order = np.arange(M, dtype=np.int64)
    for p in range(longest - 1, -1, -1):
        has = lengths[order] > p
        key = np.full(M, _END, dtype=np.int64)
        key[has] = _tokens(rows, rows.indptr[order[has]] + p)
        order = order[np.argsort(key, kind="stable")]
    # a row starts a group unless it has the entries of the row before it (compared position by position)
    same = np.zeros(M, dtype=bool)
    if M > 1:
        prev, cur = order[:-1], order[1:]
        eq = lengths[prev] == lengths[cur]
        for p in range(longest):
            live = np.flatnonzero(eq & (lengths[cur] > p))
            if not live.size:
                break
            a, b = rows.indptr[cur[live]] + p, rows.indptr[prev[live]] + p
            eq[live] = (rows.cols[a] == rows.cols[b]) & (rows.codes[a] == rows.codes[b])
        same[1:] = eq
    group = np.cumsum(~same) - 1
    inverse = np.empty(M, dtype=np.int64)
    inverse[order] = group
    distinct = rows.take(order[~same])
    w = np.ones(M) if weights is None else np.asarray(weights, dtype=np.float64)
    merged = np.zeros((int(group[-1]) + 1 if M else 0,) + w.shape[1:], dtype=np.float64)
    np.add.at(merged, inverse, w)
    return distinct, merged, inverse


class SparseIncidence(Incidence):
    """The incidence matrix of :class:`SparseCodeRows`, stored relative to their base codes.

    The layout of :class:`~tensorprob.counting.Incidence` with ``baseline=True`` (its
    :meth:`~tensorprob.counting.Incidence.matmul` and
    :meth:`~tensorprob.counting.Incidence.matmul_t` apply unchanged), its baseline each
    variable's base code and its entries the stored ones, read in place.

    Parameters
    ----------
    rows : SparseCodeRows
    cardinalities : int tensor of shape (N,)
    dtype : torch.dtype
        Value type of S.
    bytes_per_row : int, optional
        The caller's dense temporaries per row (sizes the chunks, as for ``Incidence``).
    dtype_t : torch.dtype, optional
        Value type of S^T (default ``dtype``).
    """

    def __init__(self, rows: SparseCodeRows, cardinalities: torch.Tensor, dtype: torch.dtype,
                 bytes_per_row: int | None = None, dtype_t: torch.dtype | None = None) -> None:
        self.codes = rows
        self.device = torch.device("cpu")
        cards = cardinalities.to(torch.int64).cpu()
        self.offsets = offsets_of(cards)
        self.n_cols = int(cards.sum())
        self.dtype, self.dtype_t = dtype, dtype_t or dtype
        self.kernel, self._scatter = False, None
        M = rows.shape[0]
        self._use_baseline(cards, torch.from_numpy(rows.base.copy()))
        self.itype = torch.int32 if max(rows.nnz, self.ext_cols, M) < 2**31 else torch.int64
        isz = torch.tensor([], dtype=self.itype).element_size()
        self._entry_bytes = 2 * isz
        self._ones: dict = {}
        budget = get_config()["memory_budget"]
        per_entry = self._entry_bytes + 4 * 8  # the chunk's entries and their int64 temporaries
        mean = rows.nnz / max(M, 1)
        kept = rows.nnz * self._entry_bytes
        cached = bytes_per_row is None or kept <= budget // 2
        if bytes_per_row is None:
            step = M
        else:
            step = chunk_rows(int(bytes_per_row + mean * per_entry) + 1, M,
                              memory_budget=budget - kept if cached else budget)
        self.ranges = [(s, min(M, s + step)) for s in range(0, M, step)] or [(0, 0)]
        self._cached = [(s, e, *self._build(s, e)) for s, e in self.ranges] if cached else None
        self._flat_t = {}

    def _build(self, start: int, stop: int, transpose: bool = True):
        _, c, x = self.codes.entries(start, stop)
        ext = np.where(x >= 0, self.ext_offsets.numpy()[c] + x, self._miss_pos.numpy()[c])
        return _csr_pair_entries(self.codes.indptr[start:stop + 1] - self.codes.indptr[start], ext, stop - start,
                                 self.ext_cols, self.dtype, self.dtype_t, self.itype, transpose, ones=self._ones)

    def _at_base(self, start: int, stop: int, redo: torch.Tensor) -> torch.Tensor:
        """(rows, len(redo)) bool: the rows of ``start:stop`` at the base code of the variables ``redo``."""
        r, c, _ = self.codes.entries(start, stop)
        slot = np.full(self.codes.shape[1], -1, dtype=np.int64)
        slot[redo.cpu().numpy()] = np.arange(redo.numel())
        hit = slot[c] >= 0
        out = np.ones((stop - start, redo.numel()), dtype=bool)
        out[r[hit], slot[c[hit]]] = False  # a stored entry is off the base (missing included)
        return torch.from_numpy(out)

    def flat(self, start: int = 0, stop: int | None = None, index: torch.Tensor | None = None) -> torch.Tensor:
        """Flat column indices ``offset[n] + x_mn`` (-1 where missing) of rows ``start:stop`` or ``index``."""
        dense = self.codes.dense(start, stop, None if index is None else index.cpu().numpy())
        c = torch.from_numpy(dense)
        return torch.where(c >= 0, c + self.offsets[None, :], -1)

    def flat_t(self, start: int, stop: int) -> torch.Tensor:
        raise NotImplementedError("sparse rows are multiplied by CSR products, not by the kernels")
