"""Tables counted from the entries off each feature's most frequent value: work per entry that is not the usual one.

Most entries of typical codes sit at their feature's most frequent value, its *baseline*
``b_c`` (the background of an image, the zero count of a word). The ``baseline`` strategy keeps,
once per run, the other entries of every feature (row, value), in column order, and counts each
table from them alone: with ``g`` the group of a row (the pick's value and the class, ``a C + y``),

    n(c, v, g)   = #{off-baseline rows of c with value v in group g}      (v != b_c)
    n(c, b_c, g) = n(g) - sum_{v != b_c} n(c, v, g),

the group sizes ``n(g)`` the same for every candidate. A step then costs one gather and one
count per off-baseline entry plus a few operations per (candidate, group), instead of one
update per entry: about a sixth of the work on 5-bin image codes, a twentieth on word counts.
The counts are exact integers, and the entropies take the ``n log n - sum c log c`` form of
:class:`~tensorprob.counting.TableInformation`.

The off-baseline cells of a block of candidates are counted by a histogram where they are few
per candidate (small alphabets), and by sorting their keys and reading the runs where the
tables would have more cells than entries.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import torch

from .._config import setting
from . import _costs
from ._planner import Request, Strategy, register
from ._sorted import entropy_sums_refusal, run_sums
from ._tables import Quantities, _axis_sum, _xlogx

_CPU = torch.device("cpu")

#: Off-baseline entries per block of candidates (their keys and counts stay in cache).
_BLOCK_ENTRIES = 1 << 18


class OffBaseline:
    """The entries of every feature off its baseline value, in column order, made once per run.

    Attributes
    ----------
    baseline : ndarray of shape (N,)
        Each feature's most frequent value (the lowest of tied ones).
    rows, values : ndarray of shape (nnz,)
        Row (int32) and value (int16) of each off-baseline entry, feature by feature.
    owned : ndarray of shape (nnz,), or None
        ``feature * card + value`` of each entry (int64); None: made per block when read.
    starts : ndarray of shape (N + 1,)
        Where each feature's entries start.
    """

    @classmethod
    def of_sparse(cls, csc, card: int) -> OffBaseline:
        """The stored entries of sparse codes (a canonical ``csc_matrix``), with baseline 0 for every feature.

        The identity of the module notes holds for any baseline, not only the most frequent
        value: 0 keeps the stored entries as they are, without a pass to find each top value.
        """
        off = cls.__new__(cls)
        N = csc.shape[1]
        off.baseline = np.zeros(N, dtype=np.int64)
        off.rows = csc.indices if csc.indices.dtype == np.int32 else csc.indices.astype(np.int64)
        off.values = csc.data if csc.data.dtype.kind in "iu" else csc.data.astype(np.int16)  # read in place
        off.starts = csc.indptr.astype(np.int64, copy=False)
        off.nnz = int(off.starts[-1])
        off.owned = None  # made per block (8 bytes an entry less next to the caller's matrix)
        return off

    def __init__(self, fm: np.ndarray, card: int) -> None:
        N, M = fm.shape
        counts = np.zeros((N, card), dtype=np.int64)
        step = max(1, (1 << 22) // max(1, M))
        for s in range(0, N, step):  # per-feature histograms, a block of features at a time
            blk = fm[s:s + step].astype(np.int64) + (np.arange(min(step, N - s)) * card)[:, None]
            counts[s:s + step] = np.bincount(blk.ravel(), minlength=blk.shape[0] * card).reshape(-1, card)
        self.baseline = counts.argmax(1)
        rows, values, per = [], [], np.empty(N, dtype=np.int64)
        for s in range(0, N, step):  # the other entries, a block of features at a time (bounded temporaries)
            blk = fm[s:s + step]
            c, r = np.nonzero(blk != self.baseline[s:s + step, None])
            rows.append(r.astype(np.int32))
            values.append(blk[c, r].astype(np.int16))
            per[s:s + step] = np.bincount(c, minlength=blk.shape[0])
        self.rows = np.concatenate(rows) if rows else np.zeros(0, np.int32)
        self.values = np.concatenate(values) if values else np.zeros(0, np.int16)
        self.starts = np.concatenate([[0], np.cumsum(per)])
        self.nnz = int(self.starts[-1])
        # feature * card + value of every entry: the first digits of every key, made once
        self.owned = np.repeat(np.arange(N, dtype=np.int64) * card, per) + self.values


def entry_blocks(starts: np.ndarray, per: int) -> list[tuple[int, int]]:
    """Ranges of whole owners (features) of about ``per`` entries each; an owner with more is a block alone.

    ``starts`` (n + 1,) are where each owner's entries start (cumulative counts, the last the total).
    """
    n = starts.size - 1
    out, a = [], 0
    while a < n:
        b = int(np.searchsorted(starts, int(starts[a]) + per, side="right")) - 1
        b = min(n, max(b, a + 1))
        out.append((a, b))
        a = b
    return out


def _runs_by_owner(keys: np.ndarray, span: int, n: int, L: np.ndarray) -> np.ndarray:
    """``sum over runs of L[length]`` of the sorted 1-D ``keys``, per owner ``key // span`` (n owners)."""
    if keys.size == 0:
        return np.zeros(n)
    B = np.empty(keys.size, dtype=bool)
    B[0] = True
    np.not_equal(keys[1:], keys[:-1], out=B[1:])
    st = np.flatnonzero(B)
    lens = np.empty(st.size, dtype=np.int64)
    np.subtract(st[1:], st[:-1], out=lens[:-1])
    lens[-1] = keys.size - st[-1]
    return np.bincount(keys[st] // span, weights=L.take(lens), minlength=n)


def _xlogx_float(c: np.ndarray) -> np.ndarray:
    """``c log c`` of nonnegative float sums (0 at 0; a rounding just below 0 counts as 0)."""
    c = np.maximum(c, 0.0)
    out = np.zeros_like(c)
    np.multiply(c, np.log(c, where=c > 0, out=np.zeros_like(c)), out=out, where=c > 0)
    return out


def _weighted_runs(key: np.ndarray, w: np.ndarray, span: int, n: int) -> np.ndarray:
    """``sum over cells c log c`` per owner ``key // span`` (n owners), the cells' weights summed over equal keys."""
    if key.size == 0:
        return np.zeros(n)
    cells, at = np.unique(key, return_inverse=True)
    return np.bincount(cells // span, weights=_xlogx_float(np.bincount(at, weights=w)), minlength=n)


def baseline_entropy_sums(off: OffBaseline, cols: np.ndarray | None, g: np.ndarray, G: int, C: int, card: int,
                          M: int, margin: bool, full: bool = True,
                          g_of_entry=None, weights: np.ndarray | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``sum_cells c log c`` of the (x_c, g) tables of the candidates, and of their ``g // C`` margins.

    Parameters
    ----------
    off : OffBaseline
    cols : ndarray or None
        The candidates (None: every feature).
    g : ndarray of shape (M,), or (rows, which)
        Group of every row, ``0 .. G - 1``: shared, or candidate i's from ``rows[which[i]]``
        (listed pairs: one row of groups per pick).
    G, C : int
        Groups, and the span of their last digit (the class; 1 without it).
    card : int
        Values of the largest alphabet.
    M : int
        Rows.
    margin, full : bool
        Which sums: of the ``g // C`` margins, of the full tables.
    weights : ndarray of shape (M,), optional
        Row weights: the cells are float64 sums of weights (``c log c`` computed, not looked up).
    """
    L = _xlogx(M, _CPU).numpy()
    feats = np.arange(len(off.baseline)) if cols is None else np.asarray(cols)
    n = feats.size
    rows_g, which = (g, None) if isinstance(g, np.ndarray) else g
    shared = which is None
    w = weights
    sizes = np.bincount(rows_g, weights=w, minlength=G) if shared else None
    if not shared:
        pick_sizes = _group_sizes(rows_g, G, w)  # (picks, G)
    out_full = np.zeros(n) if full else None
    out_margin = np.zeros(n) if margin and C > 1 else None
    GA = G // C
    counts_per = off.starts[feats + 1] - off.starts[feats]
    csum = np.concatenate([[0], np.cumsum(counts_per)])
    whole = cols is None  # every feature: each block's entries are one slice
    for pos, end in entry_blocks(csum, _BLOCK_ENTRIES):
        nb = end - pos
        total = int(csum[end] - csum[pos])
        if whole:
            sl = slice(int(off.starts[pos]), int(off.starts[end]))
            r = off.rows[sl]
            if off.owned is not None:
                ov = off.owned[sl] - pos * card
            else:
                ov = np.repeat(np.arange(nb, dtype=np.int64) * card, counts_per[pos:end]) + off.values[sl]
        else:  # the entries of the block's candidates: runs starting at each candidate's first entry
            lens = counts_per[pos:end]
            idx = np.repeat(off.starts[feats[pos:end]] - (csum[pos:end] - csum[pos]), lens) + np.arange(total)
            r = off.rows[idx]
            ov = off.values[idx].astype(np.int64) + np.repeat(np.arange(nb) * card, lens)
        gr = rows_g[r] if shared else rows_g[which[pos:end][ov // card], r]
        key = ov * G + gr  # (candidate, value, group): its margin (candidate, value, a) is key // C
        # the off-baseline entries of every (candidate, group): the baseline cell is the group's rest
        wr = None if w is None else w[r]
        S = np.bincount((ov // card) * G + gr, weights=wr, minlength=nb * G).reshape(nb, G)
        base = (np.broadcast_to(sizes, (nb, G)) if shared else pick_sizes[which[pos:end]]) - S
        span = card * G
        if w is not None:  # float sums: the cells of equal keys summed, c log c computed
            if out_full is not None:
                out_full[pos:end] = _weighted_runs(key, wr, span, nb) + _xlogx_float(base).sum(1)
            if out_margin is not None:
                out_margin[pos:end] = (_weighted_runs(key // C, wr, card * GA, nb)
                                       + _xlogx_float(base.reshape(nb, GA, C).sum(2)).sum(1))
        elif _histogram(nb * span, total):  # few cells per entry: a histogram
            cnt = np.bincount(key, minlength=nb * span)
            if out_full is not None:
                out_full[pos:end] = L.take(cnt).reshape(nb, span).sum(1) + L.take(base).sum(1)
            if out_margin is not None:
                m = cnt.reshape(nb * card * GA, C).sum(1)
                out_margin[pos:end] = L.take(m).reshape(nb, -1).sum(1) + L.take(base.reshape(nb, GA, C).sum(2)).sum(1)
        else:  # more cells than entries: the runs of the sorted keys
            own = ov // card
            lens = np.bincount(own, minlength=nb)
            width = int(lens.max(initial=0))
            if nb * width <= 4 * max(total, 1):  # each candidate's keys one row, sorted row by row (fast)
                pad = np.full((nb, width), span, dtype=np.int32 if span * C < 2**31 else np.int64)
                at = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
                pad[own, at] = key - own * span  # a candidate's keys relative to it, the padding above them
                pad.sort(axis=1)
                fill = L.take(width - lens)  # the padding's run
                full_sums = run_sums(pad, L) - fill if out_full is not None else None
                margin_sums = run_sums(pad // C, L) - fill if out_margin is not None else None
            else:  # very uneven candidates: one sort of the block
                key.sort()
                full_sums = _runs_by_owner(key, span, nb, L) if out_full is not None else None
                margin_sums = _runs_by_owner(key // C, card * GA, nb, L) if out_margin is not None else None
            if out_full is not None:
                out_full[pos:end] = full_sums + L.take(base).sum(1)
            if out_margin is not None:
                out_margin[pos:end] = margin_sums + L.take(base.reshape(nb, GA, C).sum(2)).sum(1)
    if out_margin is None and margin:  # no class digit: the margin is the full table
        out_margin = out_full
    return out_full, out_margin


def baseline_cells(off: OffBaseline, cols: np.ndarray | None, g: Any, G: int, card: int,
                   weights: np.ndarray | None = None, max_cells: int = 1 << 22):
    """Every cell of the (x_c, g) tables of the candidates, a block of candidates at a time.

    Yields ``(pos, end, cells)``: ``cells`` (end - pos, card, G) float64 holds the tables of
    candidates ``pos:end``, the entries off each candidate's baseline counted (or their weights
    summed) and its baseline cell the group's rest. The blocks are cut by candidates alone (at
    most ``max_cells`` cells), so they are the same on every rank whatever its entries.
    ``g``: as for :func:`baseline_entropy_sums`.
    """
    feats = np.arange(len(off.baseline)) if cols is None else np.asarray(cols)
    rows_g, which = (g, None) if isinstance(g, np.ndarray) else g
    shared = which is None
    sizes = (np.bincount(rows_g, weights=weights, minlength=G) if shared
             else _group_sizes(rows_g, G, weights)).astype(np.float64)
    per = max(1, max_cells // max(1, card * G))
    for pos in range(0, feats.size, per):
        f = feats[pos:pos + per]
        nb = f.size
        lens = off.starts[f + 1] - off.starts[f]
        total = int(lens.sum())
        idx = np.repeat(off.starts[f] - (np.cumsum(lens) - lens), lens) + np.arange(total)
        r = off.rows[idx]
        own = np.repeat(np.arange(nb, dtype=np.int64), lens)
        gr = rows_g[r] if shared else rows_g[which[pos:pos + nb][own], r]
        key = (own * card + off.values[idx].astype(np.int64)) * G + gr
        cells = np.bincount(key, weights=None if weights is None else weights[r],
                            minlength=nb * card * G).astype(np.float64).reshape(nb, card, G)
        rest = (sizes[None, :] if shared else sizes[which[pos:pos + nb]]) - cells.sum(1)
        cells[np.arange(nb), off.baseline[f]] += rest  # no entry holds its baseline value
        yield pos, pos + nb, cells


def _reduced_entropy_sums(reduce: Any, off: OffBaseline, cols: np.ndarray | None, g: Any, G: int, C: int, card: int,
                          margin: bool, full: bool = True,
                          weights: np.ndarray | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """:func:`baseline_entropy_sums` of rows spread over ranks: each block's cells summed by ``reduce``, then c log c."""
    n = len(off.baseline) if cols is None else len(cols)
    out_full = np.zeros(n) if full else None
    out_margin = np.zeros(n) if margin and C > 1 else None
    for pos, end, cells in baseline_cells(off, cols, g, G, card, weights):
        cells = reduce(torch.from_numpy(cells)).numpy()
        nb = end - pos
        if out_full is not None:
            out_full[pos:end] = _xlogx_float(cells).reshape(nb, -1).sum(1)
        if out_margin is not None:
            out_margin[pos:end] = _xlogx_float(_axis_sum(cells.reshape(nb, card, G // C, C), 3)).reshape(nb, -1).sum(1)
    if out_margin is None and margin:
        out_margin = out_full
    return out_full, out_margin


#: A block's off-baseline cells are counted by a histogram while it has at most this many cells per
#: entry and at most ``_HIST_MAX_CELLS`` cells (then its passes stay near the cache); else by sorting.
_HIST_CELLS_PER_ENTRY = 12
_HIST_MAX_CELLS = 1 << 20


def _histogram(cells: int, entries: int) -> bool:
    """Whether a block of ``entries`` off-baseline entries and ``cells`` cells is counted by a histogram."""
    return cells <= min(_HIST_CELLS_PER_ENTRY * max(entries, 1), _HIST_MAX_CELLS)


def _group_sizes(g: np.ndarray, G: int, w: np.ndarray | None = None) -> np.ndarray:
    """Group sizes (or weights, ``w`` (M,)) of every row of ``g`` (n, M): (n, G)."""
    n = g.shape[0]
    ww = None if w is None else np.broadcast_to(w, g.shape).ravel()
    return np.bincount((g + (np.arange(n) * G)[:, None]).ravel(), weights=ww, minlength=n * G).reshape(n, G)


@register
class Baseline(Strategy):
    """Counts from each feature's entries off its most frequent value (:func:`baseline_entropy_sums`).

    Complete, unweighted codes in memory on the CPU, in one process: each table holds all M
    rows, the baseline cells are the group sizes less the other cells, and the entropies
    without the pair come from the class table. Pays where most entries are at the baseline
    (images, counts).
    """

    name = "baseline"
    devices = frozenset({"cpu"})
    kinds = frozenset({"relevance", "pair", "pair_free", "pairs"})
    reads_sparse = True  # the stored entries of sparse codes are its entries, at baseline 0

    def __init__(self, data) -> None:
        super().__init__(data)
        self._off: OffBaseline | None = None
        self._frac: float | None = None  # the share off the baseline as the class table tells it (a run's tables do not change)

    def applies(self, req: Request) -> str | None:
        d = self.data
        if d.sparse is not None and (d.distributed or (d.weighted and req.kind != "relevance")):
            # every cell, summed over the ranks (baseline 0 on all of them), or float sums of weights
            if not d.complete:
                return "missing entries (it counts complete rows)"
            return None
        why = entropy_sums_refusal(d, req)
        if why is not None:
            return why
        # an off-baseline entry: 10 bytes at most; sparse codes: their stored entries, read in place
        if d.sparse is None and d.n_features * d.n_total * 10 > setting("memory_budget"):
            return "the off-baseline entries could exceed memory_budget"
        return None

    def _entries(self) -> OffBaseline:
        if self._off is None:
            d = self.data
            sparse = d.sparse
            self._off = (OffBaseline.of_sparse(sparse.csc, d.max_card) if sparse is not None
                         else OffBaseline(d.feature_major_codes(), d.max_card))
        return self._off

    def seconds(self, req: Request) -> float:
        d = self.data
        N, M, I = d.n_features, d.n_total, d.max_card
        # the share of entries off the baseline: known once the entries are made, else the
        # class table's counts tell (the most frequent value of each feature)
        if d.sparse is not None:  # of every rank when distributed: the ranks estimate alike
            frac = d.sparse.nnz_all / max(1, N * M)
        elif self._off is not None:
            frac = self._off.nnz / max(1, N * M)
        elif self._frac is not None:
            frac = self._frac
        else:
            frac = _off_fraction(d)
            if d._class_table is not None:  # an estimate from the counts themselves: final for the run
                self._frac = frac
        if frac > _costs.BASELINE_MAX_OFF and d.sparse is None:  # little to save: never chosen, still counts when forced by name
            return math.inf
        C = 1 if req.kind == "pair_free" else d.n_classes
        A = 1 if req.kind == "relevance" else d.max_card if req.kind == "pairs" else int(d.cards[req.j])
        n = len(req.cand) if req.kind == "pairs" else (N if req.cols is None else len(req.cols))
        build = 0.0 if self._off is not None or d.sparse is not None else (
            (N * M * _costs.OFF_BASELINE_BUILD_S + d.transpose_seconds()) / max(1, d.planner.expected.get(req.kind, 1)))
        entries = n * M * frac
        margins = 2 if C > 1 else 1
        span = I * A * C
        # the off-baseline cells by a histogram or by sorted rows (one row per candidate), whichever the block takes
        cells = min(n * span * _costs.CELL_S * margins,
                    _costs.sort_seconds(n, int(entries / max(n, 1)) + 1)
                    + margins * _costs.run_seconds(n, int(entries / max(n, 1)) + 1, span))
        return (entries * _costs.OFF_ENTRY_S + cells + n * A * C * 2 * _costs.CELL_S * margins
                + build + _costs.BLOCK_CALL_S * (entries // _BLOCK_ENTRIES + 1))

    def count(self, req: Request) -> Quantities:
        from ._sorted import _missing_entropies

        d = self.data
        off = self._entries()
        M, I = d.n_total, d.max_card
        y = d.labels()
        w = d.sparse.weights if d.sparse is not None else None
        # distributed: every cell counted here and summed over the ranks, then the sums of c log c
        sums = (functools.partial(_reduced_entropy_sums, d.reduce) if d.distributed
                else functools.partial(baseline_entropy_sums, M=M))
        if req.kind == "relevance":
            xb, x = sums(off, None, y, d.n_classes, d.n_classes, I, margin=True, weights=w)
            return d.entropies_from_sums(req, {"h_xb": xb, "h_x": x})
        need = _missing_entropies(req)
        C = 1 if req.kind == "pair_free" else d.n_classes
        if req.kind == "pairs":
            rows_g, which = d.pick_keys(req.sel)
            # the rows of every pick so far are read (group sizes): the widest of them sets the groups
            A = int(d.cards[d.picked()].max(initial=1))
            g = (rows_g.astype(np.int64), which)
            cols = req.cand
        else:
            A = int(d.cards[req.j])
            a = d.column_codes(req.j).astype(np.int64)
            g = a * C + (y if C > 1 else 0)
            cols = req.cols
        xab, xa = sums(off, cols, g, A * C, C, I, margin="h_xa" in need and C > 1, full="h_xab" in need or C == 1,
                       weights=w)
        if C == 1:
            xa, xab = xab, None
        return d.entropies_from_sums(req, {"h_xab": xab, "h_xa": xa})


def _off_fraction(d) -> float:
    """The share of entries off their feature's most frequent value, from the class table when it is counted."""
    T = d._class_table
    if T is None:
        m = d._marginals
        if isinstance(m, dict):  # H(x) >= -log p_max: each feature's share off its top value is at most 1 - exp(-H)
            h = m["h_x"].to(torch.float64) * d.log_base
            return float((1.0 - torch.exp(-h)).mean())
        return 0.5  # unknown before any count: a middling guess
    if T.device.type == "cpu":  # adds of the class slices: torch's and NumPy's sums over a short last axis are slow
        per = _axis_sum(T[:, :, 0, :].numpy(), 2)  # (N, I) value counts
        # the maximum over the short value axis as I elementwise maxima of whole columns (the same reason)
        top = np.maximum.reduce(np.ascontiguousarray(per.T), axis=0)
        return float(1.0 - top.sum() / max(1.0, float(per.sum())))
    per = T.sum(3)[:, :, 0]
    return float(1.0 - per.max(1).values.sum() / max(1.0, float(per.sum())))
