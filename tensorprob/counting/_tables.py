"""Contingency tables of all candidate features against one or two other columns, by bincount or by comparisons.

:func:`joint_table` builds every table in one ``torch.bincount`` pass over the (M x
candidates) codes with the combined index ``((cand * I + x_mc) * A + a_m) * B + b_m`` (I the
largest cardinality; on the CPU ``(cand * A * B + a_m * B + b_m) * I + x_mc``, transposed back
as each block is written), chunked over candidates so that the index and the table fit the
memory budget. On the CPU, unweighted or integer-weighted tables of small alphabets are counted
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

from .._device import block_budget, chunk_ranges
from . import _costs


def _complete(codes: torch.Tensor, ab_ok: torch.Tensor) -> bool:
    """No missing (-1) entry in ``codes`` and none flagged in ``ab_ok`` (a min is cheaper than a mask)."""
    return bool(ab_ok.all()) and (codes.numel() == 0 or int(codes.amin()) >= 0)  # amin: min() is slow on int8


def _count(idx: torch.Tensor, nbins: int, weights: torch.Tensor | None, dtype: torch.dtype,
           atomic: bool | None = None) -> torch.Tensor:
    """Histogram of ``idx`` (all in ``[0, nbins)``) over ``nbins`` bins, optionally weighted.

    On the CPU ``torch.bincount`` (the fastest there). On CUDA, bincount reads the
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
    complete = _complete(codes, ab_ok) if complete is None else complete
    blocks = list(chunk_ranges(n, 4 * max(1, M), block_budget(dev)))
    widest = max((e - s for s, e in blocks), default=0)
    if dev.type == "cpu" and complete and weights is None and 1 < widest < n and codes.stride(1) == 1:
        if n * per * 8 <= _costs.CACHE_BLOCK_BYTES:
            # row-major codes, many rows, few narrow tables: blocks of columns would make NumPy
            # loop over a few entries per row; blocks of whole rows read contiguous slabs into
            # one cache-sized histogram
            counts = torch.zeros(n, per, dtype=torch.int64)
            _row_blocks(codes, card, card_a * card_b, ab, counts)
            return _to_value_major(counts, card, card_a, card_b, dtype)
        # wider tables: a row's updates would scatter over all of them; a feature-major copy
        # keeps each candidate's run of updates in one table (benchmarks/bench_counting_costs.py)
        codes = feature_major(codes)
    itype = torch.int32 if widest * per + 1 < 2**31 else torch.int64
    ab = ab.to(itype)
    # weighted counts are summed in float64 (exact for integral weights, one rounding to ``dtype``
    # for fractional ones instead of one per addition)
    w = None if weights is None else weights.to(torch.float64)
    cpu = dev.type == "cpu"
    # the CPU's keys put the other columns before x: each block's counts are transposed into place
    out = torch.empty((n, card, per // card) if cpu else (n, per), dtype=dtype, device=dev)
    # feature-major codes (a transposed view, as SelectionData holds them): a block of
    # candidates is one contiguous slab, read in (candidate, sample) order
    fm = n > 1 and M > 1 and codes.stride(0) == 1
    for s, e in blocks:
        g = e - s
        c = codes[:, s:e].T if fm else codes[:, s:e]  # (g, M) contiguous, or (M, g)
        cand = torch.arange(g, dtype=itype, device=dev) * per
        if cpu:  # NumPy's integer loops: several times faster than torch's here
            idx = torch.from_numpy(_cpu_index(c.numpy(), card, ab.numpy(), cand.numpy(), fm))
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
        cnt = _count(idx.view(-1), nbins + 1, vals, dtype if w is None else torch.float64)[:nbins]
        out[s:s + g] = cnt.view(g, per // card, card).transpose(1, 2) if cpu else cnt.view(g, per)
        del idx, vals, cnt  # before the next block's are made: one block's index at a time
    return out.view(n, card, card_a, card_b)


def _to_value_major(t: torch.Tensor, card: int, card_a: int, card_b: int, dtype: torch.dtype) -> torch.Tensor:
    """Counts laid out (candidate, a, b, x) as :func:`joint_table`'s (candidate, x, a, b) tables in ``dtype``."""
    n = t.shape[0]
    out = torch.empty(n, card, card_a * card_b, dtype=dtype)
    out.copy_(t.view(n, card_a * card_b, card).transpose(1, 2))
    return out.view(n, card, card_a, card_b)


def _row_blocks(codes: torch.Tensor, card: int, other: int, ab: torch.Tensor, out: torch.Tensor) -> None:
    """Add the counts of complete, unweighted row-major CPU codes (M, n) to ``out`` (n, other * card), by blocks of rows.

    Laid out (candidate, other, x), as :func:`_cpu_index` counts.
    """
    M, n = codes.shape
    per = card * other
    src = codes.numpy()
    abn = ab.to(torch.int32).numpy()
    offsets = _offsets(card, abn, np.arange(n, dtype=np.int32) * per)
    total = out.view(-1)
    # the index about in cache, yet several entries per bin (each block adds its whole table);
    # one buffer for every block (fresh arrays of this size would be page-faulted in each time)
    rows = min(M, max(1, max(_costs.CACHE_BLOCK_BYTES // 4, 4 * n * per) // max(1, n)))
    buf = np.empty((rows, n), dtype=np.int32)
    for s in range(0, M, rows):
        e = min(M, s + rows)
        idx = buf[:e - s]
        np.take(offsets, abn[s:e], axis=0, out=idx)
        np.add(idx, src[s:e], out=idx, casting="unsafe")  # codes within [0, card): exact in int32
        total += torch.bincount(torch.from_numpy(idx).view(-1), minlength=n * per)


def _offsets(card: int, ab: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """The (other value, candidate) bin offsets ``value * card + cand`` of :func:`_cpu_index`'s row-major keys."""
    return np.arange(0, card * (int(ab.max(initial=0)) + 1), card, dtype=ab.dtype)[:, None] + cand[None, :]


def _cpu_index(c: np.ndarray, card: int, ab: np.ndarray, cand: np.ndarray, fm: bool) -> np.ndarray:
    """Bin indices ``cand + ab * card + c`` (sample axis 1 if ``fm`` else 0), C-ordered, of ``ab``'s dtype.

    The other columns vary slower than the candidate's own code (the tables come out laid out
    (candidate, other, x)), so the sample's offset and the candidate's combine into one term:
    on row-major codes one widening add of a gathered (row, candidate) offset table, on
    feature-major codes two adds; NumPy's integer loops beat the same torch ops here.
    """
    if fm:
        idx = np.add(c, (ab * card)[None, :], dtype=ab.dtype)
        np.add(idx, cand[:, None], out=idx)
        return idx
    return np.add(c, _offsets(card, ab, cand)[ab], dtype=ab.dtype)


def _blocked_transpose(src: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``src`` (A, B) transposed into C-ordered (B, A) memory (new, or ``out``), in blocks of rows of about 256 KiB.

    A block's strided writes stay in cache, which makes NumPy's copy loops faster than one
    transposed copy or torch's ``contiguous``.
    """
    A, B = src.shape
    out = np.empty((B, A), dtype=src.dtype) if out is None else out
    rows = max(16, (1 << 18) // max(1, B * src.itemsize))
    for s in range(0, A, rows):
        out[:, s:s + rows] = src[s:s + rows].T
    return out


def feature_major(codes: torch.Tensor) -> torch.Tensor:
    """``codes`` (M, N) as a transposed view of contiguous (N, M) memory (on the CPU by :func:`_blocked_transpose`)."""
    if codes.device.type != "cpu":
        return codes.T.contiguous().T
    return torch.from_numpy(_blocked_transpose(codes.numpy())).T


def one_hot(x: torch.Tensor, card: int, dtype: torch.dtype, drop_last: bool = False) -> torch.Tensor:
    """One-hot codes (m, n * card) in ``dtype`` of integer codes ``x`` (m, n); a missing (-1) code is a row of zeros.

    ``drop_last``: (m, n * (card - 1)), without the columns of value ``card - 1`` (which then
    also codes as zeros).
    """
    width = card - 1 if drop_last else card
    if dtype in (torch.int8, torch.uint8):  # compared with every value (a missing or dropped code
        # matches none), the bool bytes read as 0 / 1: faster than a scatter
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
    ``m log m`` looked up in a table: a gather instead of a logarithm per cell. Other counts
    take ``-sum p log p``. Every path of the
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


def _xlogx_np(n: int) -> np.ndarray:
    """:func:`_xlogx`'s CPU table as a NumPy array (kept: the lazy rounds ask for it many times a step)."""
    global _XLOGX_NP
    if _XLOGX_NP is None or _XLOGX_NP.size <= n:
        _XLOGX_NP = _xlogx(n, _CPU).numpy()
    return _XLOGX_NP


_XLOGX_NP: np.ndarray | None = None

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

class Quantities:
    """Named quantities of a batch of tables, each a float64 tensor of shape (n,): what a count of quantities gives.

    Parameters
    ----------
    values : dict of str to torch.Tensor
        The computed quantities (informations such as ``mi_xa_b``, entropies such as ``h_xab``).
    """

    def __init__(self, values: dict[str, torch.Tensor]) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> torch.Tensor:
        if name.startswith("__"):
            raise AttributeError(name)
        have = ", ".join(sorted(self.__dict__)) or "none"
        raise AttributeError(f"the quantity {name!r} was not computed (computed: {have}): name it among the "
                             "quantities a count is asked for")


def quantities_of(info: TableInformation, needed: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """The quantities ``needed`` of ``info`` (computed now), by name."""
    return {q: getattr(info, q) for q in needed}


def _sum_axes(a: torch.Tensor, axes: list[int], dtype: torch.dtype | None = None) -> torch.Tensor:
    """``a`` summed over ``axes``, one axis at a time from the outermost.

    Each sum then adds whole contiguous slabs, several times faster than one call over all.
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
        buffer: a fresh large one faults in its pages on every allocation).
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

    NumPy reduces a short axis of many small rows slowly (one inner loop per row).
    """
    if axis == a.ndim - 1 and a.shape[axis] > 12:  # a longer last axis: NumPy's reduce is faster
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
