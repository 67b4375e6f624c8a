"""Contingency tables of all candidate features against one or two other columns, by bincount or by comparisons.

:func:`joint_table` builds every table in one ``torch.bincount`` pass over the (M x
candidates) codes with the combined index ``((cand * I + x_mc) * A + a_m) * B + b_m`` (I the
largest cardinality), chunked over candidates so that the index and the table fit the memory
budget. On the CPU, unweighted or integer-weighted tables of small alphabets are counted
without any scattered update by :func:`grouped_counts` (:func:`weighted_grouped_counts`) (rows sorted by the other columns, SIMD comparisons and byte
sums per run of rows), whichever its cost model (:func:`grouped_is_cheaper`) finds cheaper:
the same integer counts. Entries with a missing (-1) value in any of the columns involved are
dropped for that candidate (pairwise deletion), so each candidate's table may have its own total.

Missing data: observed-fraction weighting. A plug-in information computed on the
``n_obs`` rows of a table whose columns are all observed is multiplied by ``n_obs / n``
(``n`` the number of rows of the data set, the ``n_rows`` of :class:`TableInformation`)::

    I^(X; Y) = (n_obs / n) * I^_obs(X; Y)

This is what treating "missing" as one more value that carries no information gives: if
``X' = X`` where X is observed and ``X' = *`` elsewhere, independently of (X, Y), then
``I(X'; Y) = H(Y) - p_obs H(Y | X) - (1 - p_obs) H(Y) = p_obs I(X; Y)``. Without it a
column observed on few rows would win by the small-sample bias of the plug-in estimate
(about ``(|X| - 1)(|Y| - 1) / (2 n_obs)`` nats, which the factor brings back to the
``1 / (2 n)`` of a complete column); an all-missing column scores exactly 0. On complete
data the factor is not applied at all, so results are bit-identical to the unweighted
estimates. Entropies stay those of the observed rows.

Plug-in information quantities (natural logarithms; divide by ``log 2`` for bits) are
computed from these tables for all candidates at once, always in float64: the tables are
small (candidates x cells), and information values are differences of entropies whose
float32 rounding (about 1e-7 of an entropy) would decide near-tied picks differently from
float64. Counts themselves are exact in either dtype up to 2**24 per cell (float32).
"""
from __future__ import annotations

import math
from functools import cached_property
from typing import ClassVar

import numpy as np
import torch

from .._device import block_budget, chunk_ranges, halving_reduce


def _complete(codes: torch.Tensor, ab_ok: torch.Tensor) -> bool:
    """No missing (-1) entry in ``codes`` and none flagged in ``ab_ok`` (a min is cheaper than a mask)."""
    return bool(ab_ok.all()) and (codes.numel() == 0 or int(codes.amin()) >= 0)  # amin: min() is slow on int8


def _count(idx: torch.Tensor, nbins: int, weights: torch.Tensor | None, dtype: torch.dtype,
           atomic: bool | None = None) -> torch.Tensor:
    """Histogram of ``idx`` (all in ``[0, nbins)``) over ``nbins`` bins, optionally weighted.

    On the CPU ``torch.bincount`` (measured fastest there). On CUDA, bincount reads the
    index's min and max back to the host (two synchronizations per call), so an atomic
    ``index_add_`` into a zeroed table is used instead: it stays queued on the device.
    ``atomic`` forces one path (None: by device).
    """
    if (idx.device.type == "cpu") if atomic is None else not atomic:
        return torch.bincount(idx, weights=weights, minlength=nbins)
    vals = torch.ones(1, dtype=dtype, device=idx.device).expand(idx.numel()) if weights is None else weights
    return torch.zeros(nbins, dtype=dtype, device=idx.device).index_add_(0, idx, vals.to(dtype))


def joint_table(codes: torch.Tensor, card: int, a: torch.Tensor | None = None, card_a: int = 1,
                b: torch.Tensor | None = None, card_b: int = 1, weights: torch.Tensor | None = None,
                dtype: torch.dtype = torch.float64, complete: bool | None = None) -> torch.Tensor:
    """Counts of (x_c, a, b) for every column c of ``codes``.

    Parameters
    ----------
    codes : int tensor of shape (M, n_cands)
        The candidate columns; -1 marks a missing entry.
    card : int
        Largest cardinality of the candidate columns.
    a : int tensor of shape (M,), optional
        First other column (a selected feature, ...); None counts as constant 0.
    card_a : int, default=1
        Alphabet size of ``a``.
    b : int tensor of shape (M,), optional
        Second other column (the class, ...); None counts as constant 0.
    card_b : int, default=1
        Alphabet size of ``b``.
    weights : tensor of shape (M,), optional
        Row weights (default 1).
    dtype : torch.dtype, default=torch.float64
        Value type of the counts.
    complete : bool, optional
        The caller knows that no entry of ``codes``, ``a`` or ``b`` is missing (or that some
        are: False). None checks, which costs two device-to-host transfers on a GPU; callers
        that count the same columns at every greedy step check once and pass the answer.

    Returns
    -------
    torch.Tensor of shape (n_cands, card, card_a, card_b)
        Counts (or summed weights) of every (x_c, a, b), in ``dtype``.

    Notes
    -----
    Candidates are processed in blocks whose index fits :func:`block_budget` (cache-sized on
    the CPU), with 32-bit indices where the block's bins allow. Without weights and missing
    entries the counts come from an unweighted bincount; a missing entry sends its sample
    to a discarded extra bin (weights: weight 0).
    """
    M, n = codes.shape
    dev = codes.device
    a = torch.zeros(M, dtype=torch.int64, device=dev) if a is None else a.to(torch.int64)
    b = torch.zeros(M, dtype=torch.int64, device=dev) if b is None else b.to(torch.int64)
    ab_ok = (a >= 0) & (b >= 0)
    ab = a.clamp_min(0) * card_b + b.clamp_min(0)  # (M,)
    per = card * card_a * card_b
    blocks = list(chunk_ranges(n, 4 * max(1, M), block_budget(dev)))
    widest = max((e - s for s, e in blocks), default=0)
    itype = torch.int32 if widest * per + 1 < 2**31 else torch.int64
    ab = ab.to(itype)
    complete = _complete(codes, ab_ok) if complete is None else complete
    # weighted counts are summed in float64 (exact for integral weights, one rounding to ``dtype``
    # for fractional ones instead of one per addition)
    w = None if weights is None else weights.to(torch.float64)
    out = torch.empty(n, per, dtype=dtype, device=dev)
    # feature-major codes (a transposed view, as SelectionData holds them): a block of
    # candidates is one contiguous slab, read in (candidate, sample) order
    fm = n > 1 and M > 1 and codes.stride(0) == 1
    for s, e in blocks:
        g = e - s
        c = codes[:, s:e].T if fm else codes[:, s:e]  # (g, M) contiguous, or (M, g)
        cand = torch.arange(g, dtype=itype, device=dev) * per
        if dev.type == "cpu":  # NumPy's integer loops: several times faster than torch's here
            idx = torch.from_numpy(_cpu_index(c.numpy(), card_a * card_b, ab.numpy(), cand.numpy(), fm))
        else:  # a fresh copy: the in-place ops below must never touch the caller's codes
            idx = c.to(itype, memory_format=torch.contiguous_format, copy=True).mul_(card_a * card_b)
            if fm:
                idx.add_(ab[None, :]).add_(cand[:, None])
            else:
                idx.add_(ab[:, None]).add_(cand[None, :])
        nbins = g * per
        if not complete:
            idx.masked_fill_((c < 0) | (~ab_ok[None, :] if fm else ~ab_ok[:, None]), nbins)  # the discarded bin
        vals = None if w is None else (w[None, :].expand(g, M) if fm else w[:, None].expand(M, g)).reshape(-1)
        out[s:s + g] = _count(idx.view(-1), nbins + 1, vals, dtype if w is None else torch.float64)[:nbins].view(g, per)
        del idx, vals  # before the next block's are made: one block's index at a time (measured 2x on a GPU)
    return out.view(n, card, card_a, card_b)


def _cpu_index(c: np.ndarray, scale: int, ab: np.ndarray, cand: np.ndarray, fm: bool) -> np.ndarray:
    """``c * scale + ab + cand`` (sample axis 1 if ``fm`` else 0) as a new C-ordered array of ``ab``'s dtype.

    On the CPU NumPy's integer loops (one multiply with a widening cast, two broadcast adds)
    build a block's bin indices 5-8x faster than the same torch ops (measured: 1M int8 codes
    into int32, 0.3 ms against 2.3 ms).
    """
    idx = np.multiply(c, scale, dtype=ab.dtype, order="C")
    np.add(idx, ab[None, :] if fm else ab[:, None], out=idx)
    np.add(idx, cand[:, None] if fm else cand[None, :], out=idx)
    return idx


#: Rough single-core costs (seconds) of the two ways to count on the CPU, for
#: :func:`grouped_is_cheaper`: one (value, entry) comparison and its byte sum of the grouped
#: count, one NumPy call of its inner loop (with its gather of a block of rows), and one
#: histogram update of the bincount with its index (3-8 ns measured; the low end, so that
#: the bincount keeps the close cases). Only their ratios matter (fitted to one JMI step's
#: count on MNIST-5k, COIL-20 and madelon: 2.9, 2.2 and 0.94 ms grouped).
_GROUPED_COMPARE_S, _GROUPED_CALL_S, _SCATTER_S = 0.17e-9, 3e-6, 3e-9

#: Bytes of the comparison buffer of one block of rows (values x rows x columns): cache-sized.
_GROUPED_BLOCK_BYTES = 2**20

#: Largest copy of the codes in key order that :func:`grouped_counts` makes in one gather.
_GROUPED_GATHER_BYTES = 2**26


def grouped_is_cheaper(M: int, N: int, card: int, n_groups: int, complete: bool) -> bool:
    """Whether :func:`grouped_counts` beats the bincount of :func:`joint_table` on M rows x N columns.

    Grouped: ``M N V`` comparisons (``V`` = ``card - 1`` values on complete data, ``card``
    otherwise) and a few NumPy calls per block of a group; bincount: ``M N`` scattered
    updates. Small alphabets favour the comparisons (5 values: about 5x fewer seconds on
    MNIST-5k), large ones the histogram (optdigits, 17 values).
    """
    return grouped_seconds(M, N, card, n_groups, complete) < M * N * _SCATTER_S


def grouped_seconds(M: int, N: int, card: int, n_groups: int, complete: bool) -> float:
    """Estimated seconds of :func:`grouped_counts` on M rows x N columns (the model of :func:`grouped_is_cheaper`)."""
    V = card - 1 if complete else card
    calls = (n_groups + M / _grouped_rows(N, V)) * 3 + n_groups
    return M * N * V * _GROUPED_COMPARE_S + calls * _GROUPED_CALL_S


def _grouped_rows(N: int, V: int) -> int:
    """Rows per block of :func:`grouped_counts`: byte sums of at most 255 rows, buffer within the block bytes."""
    return max(1, min(255, _GROUPED_BLOCK_BYTES // max(1, V * N)))


def _padded(shape: tuple[int, int, int], dtype: type) -> np.ndarray:
    """An uninitialized array of ``shape`` whose rows are 8 elements longer when the last axis is a multiple of 64.

    A power-of-two stride would send the transposed reads of the counts to a few cache sets
    (COIL-20's 1,024 columns: 4x slower).
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
    # a stable sort of 16-bit keys is NumPy's radix sort (satimage's 6,435 rows: 3x faster)
    order = np.argsort(key.astype(np.int16) if n_groups < 2**15 else key, kind="stable")
    kept = key >= 0
    sizes = np.bincount(key[kept], minlength=n_groups)
    V = card - 1 if complete else card
    rows = _grouped_rows(N, V)
    values = np.arange(V, dtype=codes.dtype if codes.dtype.kind in "iu" else np.int64)[:, None, None]
    a = M - int(kept.sum())  # left-out rows sort first
    # the kept rows in key order in one gather when that copy is small (then every block is a
    # view), else block by block
    ordered = codes[order[a:]] if (M - a) * N * codes.itemsize <= _GROUPED_GATHER_BYTES else None
    kept_groups = max(1, int((sizes > 0).sum()))
    if ordered is not None and (M - a) <= 128 * kept_groups and V * N * 255 <= _GROUPED_RUN_BYTES:
        # short groups, and a buffer of 255 rows within the cache budget: one call per group
        # pays (COIL-20's JMI step, 100 groups of about 14 rows: 1.6 -> 1.0 ms); long groups or
        # wide rows (MNIST-5k's 50 groups of 100 rows, the arcene shape's 40,000-byte rows)
        # keep the blocks, whose buffer stays smaller
        _grouped_in_runs(ordered, sizes, values, out)
    elif ordered is not None and N < _FOLD_WIDTH // 2:
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
    instead of three per block (COIL-20's JMI step: 100 groups of about 14 rows).
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
    NumPy inner loop per row (chess's 36 columns: most of the time goes to loop calls). A
    group's run of rows is contiguous, so its first ``r * floor(s / r)`` rows are a
    ``(s / r, r N)`` view: the counts of that view's ``r N`` columns, folded back over the
    ``r`` row positions (a power of two: halving adds over all groups at once), are the
    group's counts (exact integer sums, in any order); the last ``s mod r`` rows of every
    group are counted together, their comparisons summed per group in one call.
    """
    V, N = values.shape[0], ordered.shape[1]
    G = sizes.size
    r = 1 << max(0, (_FOLD_WIDTH // N).bit_length() - 1)
    W = r * N
    cap = max(1, min(255, _GROUPED_BLOCK_BYTES // (V * W)))  # folded rows per byte sum: exact in a byte
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


#: Most distinct nonzero weights that :func:`weighted_grouped_counts` counts as levels (bootstrap
#: counts have a handful; fold masks one).
_GROUPED_MAX_LEVELS = 16


def weighted_grouped_counts(codes: np.ndarray, key: np.ndarray, n_groups: int, card: int, complete: bool,
                            weights: np.ndarray | None) -> np.ndarray | None:
    """:func:`grouped_counts` of rows with integral weights, (n_groups, card, N); None where it does not apply.

    Float64 sums of the weights (int64 counts when ``weights`` is None).

    Rows of weight 0 are left out; the other rows are split by their weight into at most
    :data:`_GROUPED_MAX_LEVELS` levels (one more digit of the group key), each level is counted
    as unweighted rows, and the levels are summed times their weights: exact integers (in
    float64 below 2**53), the sums a weighted bincount makes. None when a weight is not an
    integer, when there are more levels, or when the cost model (:func:`grouped_is_cheaper`, on
    the rows kept) prefers the bincount.
    """
    N = codes.shape[1]
    key = np.asarray(key, dtype=np.int64)
    if weights is None:
        if not grouped_is_cheaper(int((key >= 0).sum()), N, card, n_groups, complete):
            return None
        return grouped_counts(codes, key, n_groups, card, complete)
    w = np.asarray(weights, dtype=np.float64)
    if not np.array_equal(w, np.round(w)):
        return None
    kept = (w != 0) & (key >= 0)
    levels = np.unique(w[kept])
    L = levels.size
    if L > _GROUPED_MAX_LEVELS or not grouped_is_cheaper(int(kept.sum()), N, card, n_groups * max(1, L), complete):
        return None
    out = _padded((n_groups, card, N), np.float64)
    out[...] = 0.0
    if L:
        full = np.where(kept, np.searchsorted(levels, w) * n_groups + key, -1)  # (level, group) of each kept row
        T = grouped_counts(codes, full, L * n_groups, card, complete)
        for i, v in enumerate(levels.tolist()):  # exact: integer products and sums below 2**53
            out += v * T[i * n_groups:(i + 1) * n_groups]
    return out


def one_hot(x: torch.Tensor, card: int, dtype: torch.dtype, drop_last: bool = False) -> torch.Tensor:
    """One-hot codes (m, n * card) in ``dtype`` of integer codes ``x`` (m, n); a missing (-1) code is a row of zeros.

    ``drop_last``: (m, n * (card - 1)), without the columns of value ``card - 1`` (which then
    also codes as zeros).
    """
    width = card - 1 if drop_last else card
    if dtype in (torch.int8, torch.uint8):  # compared with every value (a missing or dropped code
        # matches none), the bool bytes read as 0 / 1: 36 ms on MNIST-5k against 67 by a scatter
        values = torch.arange(width, dtype=x.dtype, device=x.device)
        return (x.unsqueeze(2) == values).view(x.shape[0], -1).view(dtype)
    x = x.to(torch.int64)
    E = torch.zeros(*x.shape, width, dtype=dtype, device=x.device)
    hit = (x >= 0) & (x < width) if drop_last else x >= 0
    E.scatter_(2, x.clamp(0, width - 1).unsqueeze(2), hit.to(dtype).unsqueeze(2))
    return E.view(x.shape[0], -1)


def rows_by_class(y: torch.Tensor, n_classes: int) -> tuple[torch.Tensor, list[int]]:
    """Row order sorting ``y`` by class (stable; rows without a class last) and the size of each class's run."""
    y = y.to(torch.int64)
    y = torch.where(y >= 0, y, torch.full_like(y, n_classes))
    return torch.argsort(y, stable=True), torch.bincount(y, minlength=n_classes + 1)[:n_classes].tolist()


def entropy_of_counts(counts: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """Plug-in entropy (nats) of the joint distribution over ``dims`` of each table in the batch.

    Parameters
    ----------
    counts : torch.Tensor of shape (n, ...)
        A batch of count tables (dimension 0 is the batch); the dimensions not in ``dims``
        are summed out first.
    dims : tuple of int
        The dimensions of the joint distribution.

    Returns
    -------
    torch.Tensor of shape (n,)
        The entropy of each table (float64; exactly 0 for a constant or an empty table).

    Notes
    -----
    On the CPU, integer counts (totals up to ``2**20``) take ``H = (n log n - sum_cells c log c) / n`` with
    ``m log m`` looked up in a table: a gather instead of a logarithm per cell (1.8x on the
    (x, x_j, class) tables of COIL-20). Other counts take ``-sum p log p``. Every path of the
    library counts the same tables, so both sides of a comparison take the same formula.
    """
    keep = {0, *dims}
    other = tuple(d for d in range(1, counts.ndim) if d not in keep)
    c = counts.sum(dim=other) if other else counts
    c = c.reshape(c.shape[0], -1).to(torch.float64)
    tot = c.sum(1, keepdim=True)
    # on the CPU only: the range and integrality checks read values back, a sync per call on a GPU
    top = float(tot.max()) if tot.numel() and c.device.type == "cpu" else math.inf
    if top <= _XLOGX_MAX:
        ci = c.to(torch.int64)  # truncated; nonnegative counts are integers iff no total shrinks
        t = ci.sum(1)
        if torch.equal(t.to(torch.float64), tot.squeeze(1)):  # integer counts: n log n looked up
            L = _xlogx(int(top), c.device)
            s = L.take(t) - L.take(ci).sum(1)  # n log n - sum_cells c log c = n H
            return (s / tot.squeeze(1).clamp_min(1.0)).clamp_min_(0.0).add_(0.0)  # a constant table: exactly 0
    tiny = torch.finfo(torch.float64).tiny
    p = c / tot.clamp_min(tiny)
    return (-(p * torch.log(p.clamp_min(tiny))).sum(1)).add_(0.0)  # + 0.0: a constant gives 0, not -0


#: Largest count whose ``n log n`` is looked up (a table of 8 MiB); larger totals take the logs.
_XLOGX_MAX = 2**20
_XLOGX: dict[torch.device, torch.Tensor] = {}


def _xlogx(n: int, device: torch.device) -> torch.Tensor:
    """``[m log m for m in 0..n]`` in float64 (0 log 0 = 0), kept per device and grown by doubling."""
    table = _XLOGX.get(device)
    if table is None or table.numel() <= n:
        size = 1 << max(10, int(n).bit_length())
        m = torch.arange(size, dtype=torch.float64, device=device)
        table = torch.special.xlogy(m, m)
        _XLOGX[device] = table
    return table


_NAMES = {1: "x", 2: "a", 3: "b"}

#: The dims of each entropy's margin (``h_xb``: x and b, dims 1 and 3).
_ENTROPY_DIMS = {"h_" + "".join(_NAMES[d] for d in dims): dims
                 for dims in ((1,), (2,), (3,), (1, 2), (1, 3), (2, 3), (1, 2, 3))}
_CPU = torch.device("cpu")

#: Each information as the entropies added, then those subtracted, in this order (it decides the
#: last bit, and selections compare these values): :class:`TableInformation` and
#: :func:`information_of_counts` both read it.
_QUANTITIES = {
    "mi_x_a": (("h_x", "h_a"), ("h_xa",)),
    "mi_x_b": (("h_x", "h_b"), ("h_xb",)),
    "cmi_x_a_given_b": (("h_xb", "h_ab"), ("h_xab", "h_b")),
    "cmi_x_b_given_a": (("h_xa", "h_ab"), ("h_xab", "h_a")),
    "mi_xa_b": (("h_xa", "h_b"), ("h_xab",)),
}


def _entropy(*dims: int) -> cached_property:
    """A cached property: the joint entropy over ``dims`` of every table."""
    def h(self: TableInformation) -> torch.Tensor:
        return self._h(*dims)
    h.__doc__ = f"Joint entropy of ({', '.join(_NAMES[d] for d in dims)}), shape (n,)."
    return cached_property(h)


def _information(what: str, plus: tuple[str, ...], minus: tuple[str, ...]) -> cached_property:
    """A cached property: the entropies ``plus`` summed, ``minus`` subtracted, in order, clamped at 0."""
    def info(self: TableInformation) -> torch.Tensor:
        v = getattr(self, plus[0])
        for name in plus[1:]:
            v = v + getattr(self, name)
        for name in minus:
            v = v - getattr(self, name)
        return self._nonneg(v)
    info.__doc__ = f"``{what}``, shape (n,)."
    return cached_property(info)


class TableInformation:
    """Plug-in quantities of a batch of tables T (n, I, A, B) of (x, a, b), each computed on first read.

    Entropies and informations are in nats divided by ``scale`` (``log 2``: bits), float64,
    one value per table; informations are clamped at 0 (rounding can make a difference of
    entropies slightly negative). With ``n_rows`` every information is multiplied by the
    observed fraction ``T.sum() / n_rows`` of its table (pairwise deletion of missing
    entries; see the module notes): ``I^ = (n_obs / n) I^_obs``; an empty table gives 0.

    Parameters
    ----------
    T : torch.Tensor of shape (n, I, A, B)
        Counts of (x, a, b), e.g. from :func:`joint_table`.
    scale : float, default=1.0
        Divisor of every quantity (1 for nats, ``log 2`` for bits).
    n_rows : float or torch.Tensor of shape (n,), optional
        Number (or total weight) of rows the tables were counted from, missing entries
        included (one per table for tables of different data). None (complete data) applies
        no weighting.

    Attributes
    ----------
    h_x, h_a, h_b, h_xa, h_xb, h_ab, h_xab : torch.Tensor of shape (n,)
        Joint entropies of the named variables.
    mi_x_a, mi_x_b : torch.Tensor of shape (n,)
        ``I(x; a)`` and ``I(x; b)``.
    cmi_x_a_given_b, cmi_x_b_given_a : torch.Tensor of shape (n,)
        ``I(x; a | b)`` and ``I(x; b | a)``.
    mi_xa_b : torch.Tensor of shape (n,)
        ``I(x, a; b)``.

    See Also
    --------
    table_information : The function that builds it.

    Examples
    --------
    >>> import torch
    >>> from tensorprob.counting import joint_table, table_information
    >>> x = torch.tensor([[0], [1], [0], [1]])
    >>> info = table_information(joint_table(x, 2, None, 1, x[:, 0], 2))
    >>> round(float(info.mi_x_b[0]), 6)  # x is the label: I = H = log 2
    0.693147
    """

    def __init__(self, T: torch.Tensor, scale: float = 1.0, n_rows: float | torch.Tensor | None = None) -> None:
        self.T, self.scale, self.n_rows = T, scale, n_rows
        self._margins: dict[tuple[int, ...], torch.Tensor] = {}

    @cached_property
    def _totals(self) -> torch.Tensor | None:
        """Each table's total (int64) when T holds integer counts that the ``m log m`` table covers (CPU), else None.

        Then every entropy takes :func:`entropy_of_counts`'s lookup formula on integer margins
        summed once and shared (the (x, a) margin gives the x margin, ...): integer sums are exact
        in any order, so the values are bit for bit those of :func:`entropy_of_counts`, which
        converts and checks each margin anew. Otherwise every entropy goes through it.
        """
        T = self.T
        if T.device.type != "cpu" or T.numel() == 0:
            return None
        tot = T.reshape(T.shape[0], -1).sum(1, dtype=torch.float64)
        if float(tot.max()) > _XLOGX_MAX:
            return None
        # truncated to int32 (counts of at most 2**20 per table; the lookups take int32 indices):
        # integers iff no total shrinks, entropy_of_counts' test
        ci = T.to(torch.int32)
        t = ci.reshape(T.shape[0], -1).sum(1, dtype=torch.int32)  # exact: totals of at most 2**20
        if not torch.equal(t.to(torch.float64), tot):
            return None
        self._margins[(1, 2, 3)] = ci
        return t.to(torch.int64)

    def _margin(self, dims: tuple[int, ...]) -> torch.Tensor:
        """Integer counts over ``dims`` (sorted), the other dimensions summed out, from the smallest known margin."""
        m = self._margins.get(dims)
        if m is None:
            src = min((d for d in self._margins if set(dims) < set(d)), key=lambda d: self._margins[d].numel())
            m = self._margins[src].sum(dim=tuple(1 + i for i, d in enumerate(src) if d not in dims), dtype=torch.int32)
            self._margins[dims] = m
        return m

    def _h(self, *dims: int) -> torch.Tensor:
        t = self._totals
        if t is None:
            return entropy_of_counts(self.T, dims) / self.scale
        c = self._margin(tuple(sorted(dims)))
        L = _xlogx(int(t.max()), c.device)
        # index_select: the cells' lookups in the layout take gives
        return self._entropy_of_sums(t, L, L.index_select(0, c.reshape(-1)).view(c.shape[0], -1).sum(1))

    def _entropy_of_sums(self, t: torch.Tensor, L: torch.Tensor, cells: torch.Tensor) -> torch.Tensor:
        """Entropies from ``n log n - sum_cells c log c = n H``: totals ``t``, the ``m log m`` table ``L``, cell sums."""
        s = L.take(t) - cells
        return (s / t.to(torch.float64).clamp_min(1.0)).clamp_min_(0.0).add_(0.0) / self.scale

    @cached_property
    def observed_fraction(self) -> torch.Tensor | None:
        """``n_obs / n`` of every table, float64 of shape (n,); None without ``n_rows``."""
        if self.n_rows is None:
            return None
        tot = self.T.reshape(self.T.shape[0], -1).to(torch.float64).sum(1)
        n = self.n_rows
        n = n.to(tot).clamp_min(1.0) if isinstance(n, torch.Tensor) else max(float(n), 1.0)
        return (tot / n).clamp_(0.0, 1.0)

    def _nonneg(self, v: torch.Tensor) -> torch.Tensor:
        v = v.clamp_min(0.0)
        w = self.observed_fraction
        return v if w is None else v * w

    # entropies (dims: 1 = x, 2 = a, 3 = b)
    h_x = _entropy(1)
    h_a = _entropy(2)
    h_b = _entropy(3)
    h_xa = _entropy(1, 2)
    h_xb = _entropy(1, 3)
    h_ab = _entropy(2, 3)
    h_xab = _entropy(1, 2, 3)

    # informations, as sums of the entropies above (the order of the terms is kept fixed:
    # it decides the last bit, and selections compare these values)
    mi_x_a = _information("I(x; a)", *_QUANTITIES["mi_x_a"])
    mi_x_b = _information("I(x; b)", *_QUANTITIES["mi_x_b"])
    cmi_x_a_given_b = _information("I(x; a | b)", *_QUANTITIES["cmi_x_a_given_b"])
    cmi_x_b_given_a = _information("I(x; b | a)", *_QUANTITIES["cmi_x_b_given_a"])
    mi_xa_b = _information("I(x, a; b)", *_QUANTITIES["mi_xa_b"])

def _sum_axes(a: torch.Tensor, axes: list[int], dtype: torch.dtype | None = None) -> torch.Tensor:
    """``a`` summed over ``axes``, one axis at a time from the outermost.

    Each sum then adds whole contiguous slabs: on (10, 50, 5, 784, 5) float64 lookups the sum
    over axes (0, 2, 4) takes 3.8 ms so, 30 ms in one call over the three.
    """
    for n, i in enumerate(sorted(axes)):
        a = a.sum(i - n, dtype=dtype)
    return a


class ClassOuterInformation(TableInformation):
    """:class:`TableInformation` of n·N tables held class-outer, as one product per class writes them.

    The tables are ``T[b * N + c] = P[:, b, :, c, :]`` read as (x, a, class), with ``P`` int32 of
    shape (C, n, A, N, I): ``P[y, b, a, c, x]`` counts (x_c = x, x_a = a, class y) of member
    ``b``. The quantities, each of shape (n * N,) (member major), are computed without moving
    the counts into that layout: the margins are integer sums over the axes (exact in any
    order), and each entropy is ``n log n - sum_cells c log c`` over looked-up ``m log m``
    values, as in :class:`TableInformation` (the order of the final float64 sums differs, hence
    the values up to rounding). Every total must be at most ``_XLOGX_MAX``.

    Parameters
    ----------
    margins : dict
        Integer margins keyed by the table dimensions they keep (1 = x, 2 = a, 3 = class), each
        with P's axes that remain, in P's order: ``{(1, 2, 3): P}``, or margins summed while the
        products ran (then ``xab_cells`` gives the full tables' sums of looked-up values). A
        margin without x may have a candidate axis of length 1: complete data, where it is the
        same for every candidate (its entropies are repeated).
    n, N : int
        Members and candidates.
    scale, n_rows
        As for :class:`TableInformation` (``n_rows`` of shape (n * N,)).
    scratch : torch.Tensor, optional
        A float64 buffer of at least the largest margin's size for the looked-up values (a kept
        buffer: a fresh one of MNIST-5k's size faults in its pages on every allocation).
    xab_cells : torch.Tensor of shape (n * N,), optional
        ``sum_cells c log c`` of every full table, when ``margins`` lacks (1, 2, 3).
    """

    #: the axis of P of each table dimension (x, a, class); n is axis 1, N axis 3
    _AXES: ClassVar[dict[int, int]] = {1: 4, 2: 2, 3: 0}

    def __init__(self, margins: dict[tuple[int, ...], torch.Tensor], n: int, N: int, scale: float = 1.0,
                 n_rows: torch.Tensor | None = None, scratch: torch.Tensor | None = None,
                 xab_cells: torch.Tensor | None = None) -> None:
        super().__init__(margins.get((1, 2, 3)), scale, n_rows)
        self._margins.update(margins)
        self.n, self.N = n, N
        self._scratch, self._xab_cells = scratch, xab_cells

    @classmethod
    def of_counts(cls, P: torch.Tensor, scale: float = 1.0, n_rows: torch.Tensor | None = None,
                  scratch: torch.Tensor | None = None, complete: bool = False) -> ClassOuterInformation:
        """The information of the counts ``P`` (C, n, A, N, I); ``complete``: no x is missing."""
        margins = {(1, 2, 3): P}
        if complete and P.shape[3] > 1:  # the (a, class) margin of the first candidate serves all
            margins[(2, 3)] = P[:, :, :, 0].sum(3, dtype=torch.int32).unsqueeze(3)
        return cls(margins, P.shape[1], P.shape[3], scale, n_rows, scratch)

    @staticmethod
    def _axes_of(dims: tuple[int, ...]) -> list[int]:
        """P's axes that a margin over ``dims`` keeps, in order (n and N always)."""
        kept = {ClassOuterInformation._AXES[d] for d in dims} | {1, 3}
        return sorted(kept)

    @cached_property
    def _totals(self) -> torch.Tensor:
        return self._expand(self._margin((1,)).sum(2, dtype=torch.int64)).reshape(-1)  # (n, N, I) -> (n * N,)

    def _expand(self, v: torch.Tensor) -> torch.Tensor:
        """(n, N') values with N' = 1 (a margin without x of complete data) repeated to (n, N)."""
        return v.expand(self.n, self.N) if v.shape[1] != self.N else v

    def _margin(self, dims: tuple[int, ...]) -> torch.Tensor:
        """Integer counts over ``dims``, in P's axis order with the other table dimensions summed out."""
        m = self._margins.get(dims)
        if m is None:
            src = min((d for d in self._margins if set(dims) < set(d)), key=lambda d: self._margins[d].numel())
            axes = self._axes_of(src)
            drop = [axes.index(self._AXES[d]) for d in src if d not in dims]
            m = _sum_axes(self._margins[src], drop, torch.int32)
            self._margins[dims] = m
        return m

    def _h(self, *dims: int) -> torch.Tensor:
        t = self._totals
        L = _xlogx(int(t.max()), t.device)
        if dims == (1, 2, 3) and self._xab_cells is not None:
            cells = self._xab_cells
        else:
            c = self._margin(tuple(sorted(dims)))
            out = None if self._scratch is None else self._scratch[:c.numel()]
            looked = torch.index_select(L, 0, c.reshape(-1), out=out).view(c.shape)
            axes = self._axes_of(dims)
            cells = self._expand(_sum_axes(looked, [axes.index(self._AXES[d]) for d in dims])).reshape(-1)
        return self._entropy_of_sums(t, L, cells)

    @cached_property
    def observed_fraction(self) -> torch.Tensor | None:
        if self.n_rows is None:
            return None
        return (self._totals.to(torch.float64) / self.n_rows.to(torch.float64).clamp_min(1.0)).clamp_(0.0, 1.0)


def table_information(T: torch.Tensor, scale: float = 1.0,
                      n_rows: float | torch.Tensor | None = None) -> TableInformation:
    """Plug-in information quantities of x (dim 1), a (dim 2), b (dim 3) of each table T (n, I, A, B).

    Parameters
    ----------
    T : torch.Tensor of shape (n, I, A, B)
        Counts, e.g. from :func:`joint_table`.
    scale : float, default=1.0
        Divisor of every quantity: 1 for nats, ``log 2`` for bits.
    n_rows : float or torch.Tensor of shape (n,), optional
        Rows (or total weight) of the data, missing entries included: every information is
        multiplied by its table's observed fraction ``T.sum() / n_rows``; a tensor gives each
        table its own. None: no weighting (complete data).

    Returns
    -------
    TableInformation
        Entropies ``h_x ... h_xab`` and informations ``mi_x_a``, ``mi_x_b``,
        ``cmi_x_a_given_b``, ``cmi_x_b_given_a``, ``mi_xa_b``, each computed when first read.
    """
    return TableInformation(T, scale, n_rows)


def _axis_sum(a: np.ndarray, axis: int, dtype: type | None = None) -> np.ndarray:
    """``a.sum(axis)`` of an integer array as adds of its slices, in ``dtype`` (default ``a``'s).

    NumPy reduces a short axis of many small rows slowly (400 tables of 5 x 5 x 2 counts:
    50 us against 10).
    """
    if axis == a.ndim - 1 and a.shape[axis] > 12:  # a longer last axis: NumPy's reduce (1024 x 25 x 20: 0.6x)
        return a.sum(axis, dtype=dtype or a.dtype)
    head = (slice(None),) * axis
    out = a[head + (0,)].astype(dtype or a.dtype)
    for i in range(1, a.shape[axis]):
        out += a[head + (i,)]
    return out


def information_of_counts(T: np.ndarray, name: str, scale: float = 1.0,
                          known: dict[str, np.ndarray] | None = None, total: int | None = None) -> np.ndarray | None:
    """``getattr(table_information(T, scale), name)`` of integer counts T (n, I, A, B) of complete data, in NumPy.

    The same float64 operations in the same order as :class:`TableInformation`'s lookup path
    (``n H = n log n - sum_cells c log c``; the terms of :data:`_QUANTITIES`): integer margins
    (exact in any order), the ``m log m`` values of one lookup table, each table's row of
    looked-up values summed by torch's row sum (the one reduction whose order decides the last
    bit; a lone table is summed as two, see :func:`~tensorprob.selection._classic.pair_cmi`),
    and elementwise operations, which round alike in NumPy. So the values are those of
    :func:`table_information` bit for bit, in a few NumPy calls per entropy instead of some 40
    small torch operations in all: what a lazy CMIM round of a few dozen tables, or the class
    table of a small data set, costs.

    Parameters
    ----------
    T : ndarray of shape (n, I, A, B), integer
        Counts of (x, a, b), no missing entry (no observed-fraction weighting).
    name : str
        One of ``mi_x_a``, ``mi_x_b``, ``cmi_x_a_given_b``, ``cmi_x_b_given_a``, ``mi_xa_b``.
    scale : float, default=1.0
        Divisor of the entropies (``log 2``: bits).
    known : dict, optional
        Entropies (n,) already known by name (``h_a``, ...), used instead of computing them:
        values from the same operations on margins of the same integers (for example
        :meth:`~tensorprob.counting.SelectionData.marginal_entropies`) keep the result's bits.
    total : int, optional
        Every table's total, when the caller knows it (complete rows, unweighted: the rows);
        None sums it.

    Returns
    -------
    ndarray of shape (n,), float64, or None
        The quantity of each table; None where a table's total exceeds the lookup table
        (``_XLOGX_MAX``): then :class:`TableInformation` takes the logarithms instead.
    """
    plus, minus = _QUANTITIES[name]
    h = entropies_of_counts(T, plus + minus, scale, known, total)
    return None if h is None else information_of_entropies(h, name)


def information_of_entropies(h: dict[str, np.ndarray], name: str) -> np.ndarray:
    """The quantity ``name`` from its entropies ``h`` (NumPy), added and subtracted in :data:`_QUANTITIES`' order, at least 0."""
    plus, minus = _QUANTITIES[name]
    v = h[plus[0]]
    for e in plus[1:]:
        v = v + h[e]
    for e in minus:
        v = v - h[e]
    return np.maximum(v, 0.0)


def entropies_of_counts(T: np.ndarray, names: tuple[str, ...], scale: float = 1.0,
                        known: dict[str, np.ndarray] | None = None,
                        total: int | None = None) -> dict[str, np.ndarray] | None:
    """The entropies ``names`` (``h_x``, ``h_xab``, ...) of integer counts T (n, I, A, B), in NumPy; see :func:`information_of_counts`.

    Each is :class:`TableInformation`'s value bit for bit (the same lookups, the same row sums,
    the same elementwise operations); ``known`` ones are taken as given. None where a table's
    total exceeds the lookup table (``_XLOGX_MAX``).
    """
    n = T.shape[0]
    if n == 0:
        return {e: np.zeros(0) for e in names}
    margins = {(1, 2, 3): np.ascontiguousarray(T, dtype=np.int64)}

    def margin(dims: tuple[int, ...]) -> np.ndarray:  # integer sums: exact from any margin that holds dims
        m = margins.get(dims)
        if m is None:
            src = (1, 2, 3)
            for d in margins:
                if len(d) < len(src) and set(dims) < set(d):
                    src = d
            m = margins[src]
            for axis in range(len(src), 0, -1):
                if src[axis - 1] not in dims:
                    m = m.reshape(m.shape[:axis] + m.shape[axis + 1:]) if m.shape[axis] == 1 else _axis_sum(m, axis)
            margins[dims] = m
        return m

    # every table's total, its m log m and its divisor: scalars when the caller gives the total
    # (the same float64 operations broadcast, so the same values)
    t = _axis_sum(margin((1,)), 1) if total is None else int(total)
    top = int(t.max()) if total is None else t
    if top > _XLOGX_MAX:
        return None
    L = _xlogx(top, _CPU).numpy()
    Lt, tf = L[t], (np.maximum(t, 1).astype(np.float64) if total is None else float(max(t, 1)))

    def h(entropy: str) -> np.ndarray:
        if known is not None and entropy in known:
            return known[entropy]
        rows = L.take(margin(_ENTROPY_DIMS[entropy]).reshape(n, -1))
        rows = np.repeat(rows, 2, axis=0) if n == 1 else rows  # a threaded sum may split a lone row
        s = Lt - torch.from_numpy(rows).sum(1).numpy()[:n]
        return (np.maximum(s / tf, 0.0) + 0.0) / scale

    return {e: h(e) for e in names}


def conditional_table(T: torch.Tensor, *, marginalize_b: bool = False, min_prob: float = 1e-10) -> torch.Tensor:
    """The conditional probabilities ``p^(x | a, b)`` of every cell of counts T (n, I, A, B).

    Parameters
    ----------
    T : torch.Tensor of shape (n, I, A, B)
        Counts from :func:`joint_table`.
    marginalize_b : bool, default=False
        Condition on a only (b summed out first): shape (n, I, A, 1).
    min_prob : float, default=1e-10
        A conditioning event with probability below this gives probability 0.

    Returns
    -------
    torch.Tensor of shape (n, I, A, B), or (n, I, A, 1) with ``marginalize_b``
        ``T / sum_x T`` per candidate and conditioning event, 0 where the event is rarer than
        ``min_prob`` (or never seen).
    """
    if marginalize_b:
        T = T.sum(3, keepdim=True)
    tiny = torch.finfo(T.dtype).tiny
    cond = T.sum(1, keepdim=True)  # (n, 1, A, B): counts of the conditioning event per candidate
    totals = cond.sum((1, 2, 3), keepdim=True).clamp_min(tiny)
    return torch.where(cond / totals >= min_prob, T / cond.clamp_min(tiny), torch.zeros_like(T))


def gather_conditional(T: torch.Tensor, codes: torch.Tensor, a: torch.Tensor | None, b: torch.Tensor | None,
                       *, over_b: bool = False, marginalize_b: bool = False, min_prob: float = 1e-10,
                       complete: bool | None = None) -> torch.Tensor:
    """Per-sample conditional probabilities ``p^(x_c | a, b)`` gathered from tables T (n, I, A, B).

    Parameters
    ----------
    T : torch.Tensor of shape (n, I, A, B)
        Counts from :func:`joint_table` of the candidate columns ``codes``.
    codes : int tensor of shape (M, n)
        The candidate columns T was built from; -1 marks a missing entry.
    a : int tensor of shape (M,) or None
        First conditioning column used to build T (None = constant 0).
    b : int tensor of shape (M,) or None
        Second conditioning column used to build T (None = constant 0).
    over_b : bool, default=False
        Return ``p^(x_mc | a_m, b = v)`` for every value v of b, shape (M, n, B).
    marginalize_b : bool, default=False
        Condition on a only: ``p^(x_mc | a_m)`` (b summed out).
    min_prob : float, default=1e-10
        A conditioning event with probability below this gives probability 0.
    complete : bool, optional
        Known completeness of ``codes``, ``a``, ``b`` (None: checked here; see :func:`joint_table`).

    Returns
    -------
    torch.Tensor of shape (M, n), or (M, n, B) with ``over_b``
        The conditional probabilities; 0 where x_c, a or b is missing.
    """
    n, I, A, B = T.shape
    M = codes.shape[0]
    dev = codes.device
    if marginalize_b:
        B, b = 1, None
    # conditional probability tables (small), then one lookup per (sample, candidate)
    P = conditional_table(T, marginalize_b=marginalize_b, min_prob=min_prob)
    a_ = torch.zeros(M, dtype=torch.int64, device=dev) if a is None else a.to(torch.int64)
    b_ = torch.zeros(M, dtype=torch.int64, device=dev) if b is None else b.to(torch.int64)
    ab_ok = (a_ >= 0) & (b_ >= 0)
    complete = _complete(codes, ab_ok) if complete is None else complete
    if over_b:  # rows of B values at (i * I + x) * A + a
        width, stride, off = B, A, a_.clamp_min(0)
    else:  # single values at ((i * I + x) * A + a) * B + b
        width, stride, off = 1, A * B, a_.clamp_min(0) * B + b_.clamp_min(0)
    itype = torch.int32 if n * I * stride < 2**31 else torch.int64
    off = off.to(itype)
    flat = P.reshape(-1, width)
    out = torch.empty((M, n, B) if over_b else (M, n), dtype=P.dtype, device=dev)
    for s, e in chunk_ranges(n, M * max(4, width * P.element_size()), block_budget(dev)):
        c = codes[:, s:e]
        g = e - s
        idx = c.to(itype, memory_format=torch.contiguous_format, copy=True).clamp_min_(0).mul_(stride).add_(off[:, None])
        idx.add_((torch.arange(s, s + g, dtype=itype, device=dev) * (I * stride))[None, :])
        vals = flat.index_select(0, idx.view(-1)).view(M, g, width)
        if not complete:
            vals.mul_(((c >= 0) & ab_ok[:, None]).unsqueeze(2))  # 0 where x_c, a or b is missing
        out[:, s:s + g] = vals if over_b else vals[..., 0]
    return out
