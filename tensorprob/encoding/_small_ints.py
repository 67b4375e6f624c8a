"""Integer arrays of small range coded whole: every column's categories and codes in row-major passes.

A 2-D integer array (codes already, pixel counts, dosages) is the common input of the
selectors; reading it column by column costs a strided pass per column. Here every column is
summarized and coded at once (:func:`_small_int_array`), its categories kept packed
(:class:`_Categories`) until they are read.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._config import get_config
from .._device import chunk_rows, halving_reduce


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
    on demand (:meth:`tolist`, or one by ``[j]``): slicing every column in a Python loop costs as
    much as coding a wide array. Built from bitmasks (:meth:`of_masks`), even ``values``
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
