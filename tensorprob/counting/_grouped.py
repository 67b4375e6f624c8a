"""Counts by grouped comparisons: rows put in order of their key, then SIMD comparisons and byte sums.

The ``grouped`` strategy counts the (x_c, key) tables of every candidate column c without a
scattered update: the rows are put in order of their key (the class, or the pick's value and
the class; a stable sort of small integers), so that each group is a run of rows, and the count
of value v in every column of a block of rows is the byte sum over the block of ``block == v``
(vertical SIMD compares and byte adds over contiguous columns). Each count is an exact integer,
the same as a bincount's. Its work is ``M N V`` comparisons (V values), so it pays on small
alphabets; the planner weighs it against the histograms.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .._device import halving_reduce
from . import _costs
from ._planner import Request, Strategy, register

#: Bytes of the comparison buffer of one block of rows (values x rows x columns): cache-sized.
_GROUPED_BLOCK_BYTES = 2**20

#: Largest copy of the codes in key order that :func:`grouped_counts` makes in one gather.
_GROUPED_GATHER_BYTES = 2**26


def grouped_seconds(M: int, N: int, card: int, n_groups: int, complete: bool, itemsize: int = 1) -> float:
    """Estimated seconds of :func:`grouped_counts` on M rows x N columns (see :func:`grouped_work`)."""
    compares, calls, rows, cells = grouped_work(M, N, card, n_groups, complete, itemsize)
    return (compares * _costs.GROUPED_COMPARE_S + calls * _costs.GROUPED_CALL_S + rows * _costs.GROUPED_ROW_S
            + cells * _costs.GROUPED_OUT_S)


def grouped_work(M: int, N: int, card: int, n_groups: int, complete: bool,
                 itemsize: int = 1) -> tuple[float, float, float, float]:
    """(comparisons, NumPy calls, rows, output cells) of :func:`grouped_counts` on M rows x N columns in ``n_groups`` groups.

    ``M N V`` comparisons (``V`` = ``card - 1`` values on complete data, ``card`` otherwise),
    the calls of the way :func:`grouped_counts` takes for this shape (see
    :func:`_grouped_path`), the M rows put in key order (a sort of their keys and a gather of
    each row: a cache miss a row once the codes outgrow the cache), and the ``G V N`` counts
    written (many small groups: their byte sums and int64 counts outweigh the comparisons).
    """
    V = card - 1 if complete else card
    G = max(1, min(n_groups, M))
    compares = float(M * N * V)
    path = _grouped_path(M, N, V, G, itemsize)
    if path == "runs":  # one byte sum per group, one comparison per cache-sized buffer
        calls = 2 * G + 2 * M * V * N / _GROUPED_RUN_BYTES + 4
    elif path == "folded":  # per group, blocks of folded rows; then the folds' halving adds and the tails
        r, W, cap = _fold_shape(N, V)
        calls = G * (3 * math.ceil(M / G / r / cap) + 2) + 3 * r.bit_length() + 10
        compares += G * V * W + min(M, G * r / 2) * N * V * 4  # the int64 folds and tails, in comparisons
    else:
        calls = (G + M / _grouped_rows(N, V)) * 3 + G
    return compares, calls, float(M), float(G * V * N)


def _grouped_path(M: int, N: int, V: int, groups: int, itemsize: int) -> str:
    """The way :func:`grouped_counts` counts M kept rows of N columns in ``groups`` non-empty groups.

    ``"runs"`` (short groups, rows in key order: one call per group), ``"folded"`` (narrow rows in
    key order, read ``r`` rows as one) or ``"blocks"`` (group by group, a block of rows at a
    time; also when the copy in key order would be too large).
    """
    if M * N * itemsize > _GROUPED_GATHER_BYTES:
        return "blocks"
    if M <= 128 * groups and V * N * 255 <= _GROUPED_RUN_BYTES:
        return "runs"
    return "folded" if N < _FOLD_WIDTH // 2 else "blocks"


def _fold_shape(N: int, V: int) -> tuple[int, int, int]:
    """Rows read as one (a power of two), width of a folded row, folded rows per byte sum (:func:`_grouped_folded`)."""
    r = 1 << max(0, (_FOLD_WIDTH // N).bit_length() - 1)
    W = r * N
    return r, W, max(1, min(255, _GROUPED_BLOCK_BYTES // (V * W)))


def _grouped_rows(N: int, V: int) -> int:
    """Rows per block of :func:`grouped_counts`: byte sums of at most 255 rows, buffer within the block bytes."""
    return max(1, min(255, _GROUPED_BLOCK_BYTES // max(1, V * N)))


def _padded(shape: tuple[int, int, int], dtype: type) -> np.ndarray:
    """An uninitialized array of ``shape`` whose rows are 8 elements longer when the last axis is a multiple of 64.

    A power-of-two stride would send the transposed reads of the counts to a few cache sets.
    """
    G, card, N = shape
    return np.empty((G, card, N + (8 if N % 64 == 0 else 0)), dtype=dtype)[:, :, :N]


def grouped_counts(codes: np.ndarray, key: np.ndarray, n_groups: int, card: int, complete: bool) -> np.ndarray:
    """Counts (n_groups, card, N) int64 of (key of the row, value of column n), by comparisons, not scatters.

    The rows are put in order of their key (a stable sort of M small integers), so that each
    group is a run of rows; every run is read in blocks of at most 255 rows gathered into
    row-major order, and the count of value v in every column of a block is the byte sum over
    the block's rows of ``block == v``: SIMD comparisons and vertical byte additions over
    contiguous columns, instead of one scattered histogram update per entry, and no index
    array. Each (group, value, column) count is an exact integer, the same as the bincount's.

    Parameters
    ----------
    codes : ndarray of shape (M, N), int, C-contiguous
        Codes ``0 .. card - 1``, row-major; -1 (any negative value) marks a missing entry.
    key : ndarray of shape (M,), int
        Group of every row, ``0 .. n_groups - 1``; a negative key leaves the row out.
    n_groups : int
        Number of groups.
    card : int
        Values counted per column (``codes`` below ``card``).
    complete : bool
        No missing entry in ``codes``: the last value's count is then the group size minus
        the others' (one comparison pass fewer).

    Returns
    -------
    ndarray of shape (n_groups, card, N), int64
        Possibly a view of wider rows (see the padding below).
    """
    M, N = codes.shape
    out = _padded((n_groups, card, N), np.int64)
    if M == 0 or N == 0:
        out[...] = 0
        return out
    key = np.asarray(key, dtype=np.int64)
    # a stable sort of 16-bit keys is NumPy's radix sort
    order = np.argsort(key.astype(np.int16) if n_groups < 2**15 else key, kind="stable")
    kept = key >= 0
    sizes = np.bincount(key[kept], minlength=n_groups)
    V = card - 1 if complete else card
    rows = _grouped_rows(N, V)
    values = np.arange(V, dtype=codes.dtype if codes.dtype.kind in "iu" else np.int64)[:, None, None]
    a = M - int(kept.sum())  # left-out rows sort first
    # the kept rows in key order in one gather when that copy is small (then every block is a
    # view), else block by block
    path = _grouped_path(M - a, N, V, max(1, int((sizes > 0).sum())), codes.itemsize)
    ordered = None if path == "blocks" and (M - a) * N * codes.itemsize > _GROUPED_GATHER_BYTES else codes[order[a:]]
    if path == "runs":
        _grouped_in_runs(ordered, sizes, values, out)
    elif path == "folded":
        _grouped_folded(ordered, sizes, values, out)
    else:
        _grouped_by_blocks(codes, order, a, ordered, sizes, values, rows, out)
    if V < card:
        out[:, V] = sizes[:, None] - out[:, :V].sum(1)
    return out


#: Bytes of the comparison buffer of :func:`_grouped_in_runs` (values x rows x columns).
_GROUPED_RUN_BYTES = 2**21


def _grouped_in_runs(ordered: np.ndarray, sizes: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    """:func:`grouped_counts` of rows already in key order (``ordered``: the groups' runs one after another).

    Consecutive groups are compared with every value together, as many as fill a cache-sized
    buffer (:data:`_GROUPED_RUN_BYTES`); then each group of at most 255 rows is one byte sum
    straight into its (V, N) counts (a (groups, V, N) byte array, widened once at the end), and
    a longer group is compared and summed 255 rows at a time. About one NumPy call per group
    instead of three per block.
    """
    V, N = values.shape[0], ordered.shape[1]
    G = sizes.size
    short = (sizes > 0) & (sizes <= 255)
    counts8 = np.zeros((G, V, N), dtype=np.uint8) if short.any() else None
    out[~short] = 0  # the long and the empty groups (the short ones are written whole below)
    acc = np.empty((V, N), dtype=np.uint8)
    cap = max(255, _GROUPED_RUN_BYTES // max(1, V * N))
    buf = np.empty((V, cap, N), dtype=np.bool_)
    ends = np.cumsum(sizes)
    g = 0
    while g < G:
        r0 = int(ends[g] - sizes[g])
        if sizes[g] > cap:  # a group longer than the buffer: compared a buffer at a time
            _add_value_counts(ordered[r0:int(ends[g])], values, buf, acc, out[g, :V])
            g += 1
            continue
        h = max(g + 1, int(np.searchsorted(ends, r0 + cap, side="right")))  # the groups that fit the buffer
        n = int(ends[h - 1]) - r0
        q = buf[:, :n]
        np.equal(ordered[None, r0:r0 + n], values, out=q)
        u = q.view(np.uint8)
        for gg in range(g, h):
            s, r = int(sizes[gg]), int(ends[gg] - sizes[gg]) - r0
            if s and s <= 255:
                np.add.reduce(u[:, r:r + s], axis=1, dtype=np.uint8, out=counts8[gg])  # at most 255 per byte: exact
            elif s:
                _add_byte_sums(u, r, s, acc, out[gg, :V])
        g = h
    if counts8 is not None:
        out[short, :V] = counts8[short]


#: Bytes per folded row of :func:`_grouped_folded`: enough for NumPy's inner loops to run long.
_FOLD_WIDTH = 1024


def _grouped_folded(ordered: np.ndarray, sizes: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:
    """:func:`grouped_counts` of narrow rows already in key order, ``r`` rows read as one.

    On rows of a few dozen columns, every comparison or byte sum over rows makes one short
    NumPy inner loop per row (the calls cost more than the work). A
    group's run of rows is contiguous, so its first ``r * floor(s / r)`` rows are a
    ``(s / r, r N)`` view: the counts of that view's ``r N`` columns, folded back over the
    ``r`` row positions (a power of two: halving adds over all groups at once), are the
    group's counts (exact integer sums, in any order); the last ``s mod r`` rows of every
    group are counted together, their comparisons summed per group in one call.
    """
    V, N = values.shape[0], ordered.shape[1]
    G = sizes.size
    r, W, cap = _fold_shape(N, V)  # cap: folded rows per byte sum, exact in a byte
    eq = np.empty((V, cap, W), dtype=np.bool_)
    acc = np.empty((V, W), dtype=np.uint8)
    wide = np.zeros((G, V, W), dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    whole = sizes // r
    for g in np.flatnonzero(whole).tolist():
        q, r0 = int(whole[g]), int(starts[g])
        _add_value_counts(ordered[r0:r0 + q * r].reshape(q, W), values, eq, acc, wide[g])
    out[:, :V] = halving_reduce(np.moveaxis(wide.reshape(G, V, r, N), 2, 0), np.add)  # the r row positions
    tails = sizes - whole * r
    has = np.flatnonzero(tails)
    if has.size:  # the rows past each group's last whole fold, every group's together
        t = tails[has]
        at = np.cumsum(t) - t  # where each group's leftover rows start among them all
        rows = np.repeat(starts[has] + whole[has] * r - at, t) + np.arange(int(t.sum()))
        hit = ordered[None, rows] == values  # (V, rows, N)
        out[has, :V] += np.add.reduceat(hit, at, axis=1, dtype=np.int64).transpose(1, 0, 2)


def _add_value_counts(src: np.ndarray, values: np.ndarray, buf: np.ndarray, acc: np.ndarray, dst: np.ndarray) -> None:
    """``dst`` (V, W) += the rows of ``src`` (n, W) equal to each value (V, 1, 1), compared ``buf.shape[1]`` rows at a time."""
    cap = buf.shape[1]
    for b in range(0, src.shape[0], cap):
        q = buf[:, :min(cap, src.shape[0] - b)]
        np.equal(src[None, b:b + q.shape[1]], values, out=q)
        _add_byte_sums(q.view(np.uint8), 0, q.shape[1], acc, dst)


def _add_byte_sums(u: np.ndarray, r: int, s: int, acc: np.ndarray, dst: np.ndarray) -> None:
    """``dst`` (V, N) += the sums over rows ``r .. r + s`` of the 0/1 bytes ``u`` (V, rows, N), 255 rows at a time (exact in a byte)."""
    for b in range(r, r + s, 255):
        np.add.reduce(u[:, b:min(b + 255, r + s)], axis=1, dtype=np.uint8, out=acc)
        dst += acc


def _grouped_by_blocks(codes: np.ndarray, order: np.ndarray, a: int, ordered: np.ndarray | None, sizes: np.ndarray,
                       values: np.ndarray, rows: int, out: np.ndarray) -> None:
    """:func:`grouped_counts` group by group, in blocks of ``rows`` rows (compared and summed per block)."""
    V, N = values.shape[0], codes.shape[1]
    eq = np.empty((V, rows, N), dtype=np.bool_)
    acc = np.empty((V, N), dtype=np.uint8)
    out[...] = 0
    base = a
    for g, s in enumerate(sizes.tolist()):
        for r in range(a, a + s, rows):
            e = min(r + rows, a + s)
            block = codes[order[r:e]] if ordered is None else ordered[r - base:e - base]
            q = eq[:, :e - r]
            np.equal(block[None], values, out=q)
            np.add.reduce(q.view(np.uint8), axis=1, dtype=np.uint8, out=acc)  # at most 255 per byte: exact
            out[g, :V] += acc
        a += s




def weighted_grouped_counts(codes: np.ndarray, key: np.ndarray, n_groups: int, card: int, complete: bool,
                            weights: np.ndarray | None) -> np.ndarray:
    """:func:`grouped_counts` of rows with integral weights, (n_groups, card, N) float64 (int64 without weights).

    Rows of weight 0 are left out; the other rows are split by their weight into levels (one
    more digit of the group key), each level is counted as unweighted rows, and the levels are
    summed times their weights: exact integers (in float64 below 2**53), the sums a weighted
    bincount makes. The caller checks :func:`weight_levels` first.
    """
    N = codes.shape[1]
    key = np.asarray(key, dtype=np.int64)
    if weights is None:
        return grouped_counts(codes, key, n_groups, card, complete)
    w = np.asarray(weights, dtype=np.float64)
    kept = (w != 0) & (key >= 0)
    levels = np.unique(w[kept])
    out = _padded((n_groups, card, N), np.float64)
    out[...] = 0.0
    if levels.size:
        full = np.where(kept, np.searchsorted(levels, w) * n_groups + key, -1)  # (level, group) of each kept row
        T = grouped_counts(codes, full, levels.size * n_groups, card, complete)
        for i, v in enumerate(levels.tolist()):  # exact: integer products and sums below 2**53
            out += v * T[i * n_groups:(i + 1) * n_groups]
    return out


def weight_levels(weights: np.ndarray | None) -> int | None:
    """How many levels :func:`weighted_grouped_counts` splits ``weights`` into (1 without weights); None if it cannot.

    None when a weight is not an integer or there are more than ``GROUPED_MAX_LEVELS`` distinct
    nonzero weights.
    """
    if weights is None:
        return 1
    w = np.asarray(weights, dtype=np.float64)
    if not np.array_equal(w, np.round(w)):
        return None
    n = int(np.unique(w[w != 0]).size)
    return max(1, n) if n <= _costs.GROUPED_MAX_LEVELS else None


def grouped_table(rows: np.ndarray, y: np.ndarray, j: int | None, card: int, n_classes: int, complete: bool,
                  weights: np.ndarray | None, dtype: torch.dtype, cols: np.ndarray | None = None,
                  card_a: int | None = None) -> torch.Tensor:
    """(n, card, card_a, n_classes) counts of (x_c, x_j, class) by :func:`weighted_grouped_counts`.

    ``rows``: the codes row-major (M, N); ``y``: class codes (M,) (-1: no class, the row is left
    out); ``j`` None counts (x_c, class) (``card_a`` = 1); ``weights`` (M,) float64 or None
    (integral, see :func:`weight_levels`); ``cols``: count only these candidate columns (their
    tables in order; ``j`` still indexes ``rows``).
    """
    key = np.asarray(y, dtype=np.int64)
    A = 1 if j is None else (card if card_a is None else card_a)
    if j is not None:
        a = rows[:, j].astype(np.int64)
        key = np.where((a < 0) | (key < 0), -1, a * n_classes + key)
    if cols is not None:
        rows = rows[:, cols]  # one gather of the open columns (row-major)
    N = rows.shape[1]
    T = weighted_grouped_counts(rows, key, A * n_classes, card, complete, weights)  # (A C, card, N)
    out = torch.empty(N, card, A * n_classes, dtype=dtype)
    np.copyto(out.numpy(), T.transpose(2, 1, 0), casting="same_kind")  # exact integers, as the bincount's
    return out.view(N, card, A, n_classes)


@register
class Grouped(Strategy):
    """Grouped comparisons (:func:`grouped_counts`): CPU, codes in memory, integral weights.

    Class tables are grouped by class; pair tables by (x_j, class); class-free pair tables by
    x_j alone (rows without a class left out). Small alphabets: ``M N V`` one-byte compares
    cost less than ``M N`` scattered updates below about 15 values.
    """

    name = "grouped"
    devices = frozenset({"cpu"})
    kinds = frozenset({"class", "pair", "pair_free", "pair_table"})

    def applies(self, req: Request) -> str | None:
        d = self.data
        if d.stream is not None:
            return "the rows are streamed"
        if d.codes.dtype.is_floating_point:
            return "floating-point codes"
        if d.weight_levels is None:
            return f"weights that are not integers, or more than {_costs.GROUPED_MAX_LEVELS} distinct ones"
        if d.row_major_codes() is None:
            return "a row-major copy of the codes would exceed a quarter of memory_budget"
        return None

    def seconds(self, req: Request) -> float:
        d = self.data
        N = d.n_features if req.cols is None else len(req.cols)
        A = 1 if req.kind == "class" else d.max_card
        C = 1 if req.kind == "pair_free" else d.n_classes
        groups = A * C * d.weight_levels
        cells = N * d.max_card * A * C
        s = grouped_seconds(d.n_kept, N, d.max_card, groups, d.complete) + groups * d.max_card * N * _costs.GROUPED_CELL_S
        if req.kind in ("pair", "pair_free"):
            s += cells * _costs.CELL_S * 2 + _costs.QUANTITIES_CALL_S
        return s

    def count(self, req: Request):
        d = self.data
        y = d.y.numpy()
        if req.kind == "pair_free":
            y = np.where(y >= 0, 0, -1)
        C = 1 if req.kind == "pair_free" else d.n_classes
        w = None if d.weights is None else d.weights.to(torch.float64).numpy()
        T = grouped_table(d.row_major_codes(), y, None if req.kind == "class" else req.j, d.max_card, C, d.complete,
                          w, d.dtype, req.cols)
        return d.finish(req, d.reduce(T))
