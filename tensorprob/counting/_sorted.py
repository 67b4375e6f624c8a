"""Entropies of tables counted by sorting each candidate's row keys: work per row, whatever the alphabet.

A plug-in entropy needs only the counts that are not zero: with ``c`` the counts of the cells of a
table of ``n`` rows, ``n H = n log n - sum_cells c log c``. The ``sorted`` strategy codes every
row of candidate c as one small integer key, ``(x_c A + a) C + y`` (A the pick's alphabet, C the
classes), sorts each candidate's keys (SIMD sorting networks: about a nanosecond a key for rows of
a few hundred), and reads the counts as the lengths of the runs of equal keys. The (x_c, a)
margin is the runs of ``key // C`` in the same order (a prefix of the key). Its work is
``O(M log M)`` per candidate and its memory one block of keys, where a table of
``I_c A C`` cells (45 x 45 x 10 = 20,250 for 100 rows of pixel values) would be mostly zeros.

Two ways to sum ``c log c`` over the runs of a sorted row, chosen per block by how many runs
there are: with many repeats, over the runs (``m log m`` looked up per run); with few (most keys
distinct, each adding 0), over the repeats only: a run of length ``m`` is ``m - 1`` consecutive
positions whose key equals the previous one. Both give exact integer run lengths, so the same
sums of looked-up values.
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from . import _costs
from ._planner import Request, Strategy, register
from ._tables import _XLOGX_MAX, _xlogx

_CPU = torch.device("cpu")

#: Keys per block (a block of candidates' sorted keys and their temporaries stay in cache).
_BLOCK_KEYS = 1 << 18


def key_dtype(cells: int) -> np.dtype:
    """The narrowest signed integer type whose values reach ``cells - 1`` (int16 sorts fastest)."""
    return np.dtype(np.int16 if cells <= 2**15 else np.int32 if cells <= 2**31 else np.int64)


def run_sums(s: np.ndarray, L: np.ndarray) -> np.ndarray:
    """``sum over runs of L[run length]`` of every row of ``s`` (g, M), its rows sorted: float64 (g,).

    With ``L[m] = m log m`` this is ``sum_cells c log c`` of the table whose cells the keys name.
    """
    g, M = s.shape
    if g == 0 or M == 0:
        return np.zeros(g)
    flat = s.reshape(-1)
    B = np.empty(g * M, dtype=bool)
    np.not_equal(flat[1:], flat[:-1], out=B[1:])
    B[::M] = True  # a row starts a run
    R = int(np.count_nonzero(B))
    if R <= 0.62 * g * M:  # repeats are many: one looked-up value per run
        st = np.flatnonzero(B)
        lens = np.empty(R, dtype=np.int64)
        np.subtract(st[1:], st[:-1], out=lens[:-1])
        lens[-1] = g * M - st[-1]
        cnt = np.count_nonzero(B.reshape(g, M), axis=1)
        return np.add.reduceat(L.take(lens), np.cumsum(cnt) - cnt)
    # most keys distinct: only the repeats, whose positions form one block per run of length > 1
    np.logical_not(B, out=B)
    B[::M] = False
    idx = np.flatnonzero(B)
    if idx.size == 0:
        return np.zeros(g)
    brk = np.empty(idx.size, dtype=bool)
    brk[0] = True
    np.not_equal(idx[1:] - idx[:-1], 1, out=brk[1:])  # a row's first key is never a repeat: blocks stay in rows
    bs = np.flatnonzero(brk)
    bl = np.empty(bs.size, dtype=np.int64)
    np.subtract(bs[1:], bs[:-1], out=bl[:-1])
    bl[-1] = idx.size - bs[-1]
    return np.bincount(idx[bs] // M, weights=L.take(bl + 1), minlength=g)


def sorted_entropy_sums(x: np.ndarray, g: np.ndarray, stride: int, C: int, top: int, margin: bool,
                        full: bool = True) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``sum_cells c log c`` of the tables of keys ``x * stride + g`` (rows of x) and of their ``// C`` margin.

    Parameters
    ----------
    x : ndarray of shape (n, M), int
        The candidates' codes (one row each, complete).
    g : ndarray of shape (M,), or (rows, which)
        ``a C + y`` of every row (a the pick, y the class): shared, or candidate i's from
        ``rows[which[i]]`` (listed pairs: one row per pick).
    stride : int
        ``A C``: the span of ``g``.
    C : int
        Span of the last key digit (the class; 1 without it).
    top : int
        Largest code of ``x`` plus one (the keys' range is ``top * stride``).
    margin : bool
        Also the sums of the ``key // C`` tables (the (x, a) margin).
    full : bool, default=True
        The sums of the full tables (False: only the margin's).

    Returns
    -------
    (ndarray or None, ndarray or None)
        float64 (n,) sums of the full tables and of the margins (None where not asked for).
    """
    n, M = x.shape
    kt = key_dtype(top * stride)
    L = _xlogx(M, _CPU).numpy()
    xab = np.empty(n) if full else None
    xa = np.empty(n) if margin else None
    step = max(1, _BLOCK_KEYS // max(1, M))
    rows, which = (g, None) if isinstance(g, np.ndarray) else g
    for s in range(0, n, step):
        e = min(n, s + step)
        k = np.multiply(x[s:e], stride, dtype=kt, order="C")
        k += (rows if which is None else rows[which[s:e]]).astype(kt, copy=False)
        k.sort(axis=1)
        if full:
            xab[s:e] = run_sums(k, L)
        if margin:
            xa[s:e] = run_sums(k // C if C > 1 else k, L)
    return xab, xa


@register
class Sorted(Strategy):
    """Row keys sorted per candidate, counts read as runs (:func:`sorted_entropy_sums`).

    Complete, unweighted codes in memory on the CPU, in one process: each table holds all M
    rows, and the entropies without the pair (of x, the class, the pick) are the class table's
    (``SelectionData.marginal_entropies``), so a step computes only ``H(x, a)`` and
    ``H(x, a, class)``. Pays where the tables have many more cells than rows.
    """

    name = "sorted"
    devices = frozenset({"cpu"})
    kinds = frozenset({"relevance", "pair", "pair_free", "pairs"})

    def applies(self, req: Request) -> str | None:
        return entropy_sums_refusal(self.data, req)

    def seconds(self, req: Request) -> float:
        d = self.data
        n = _n_tables(d, req)
        M = d.n_total
        margins = 2 if req.kind == "relevance" else len(_missing_entropies(req))
        A = 1 if req.kind == "relevance" else d.max_card
        C = 1 if req.kind == "pair_free" else d.n_classes
        runs = _costs.run_seconds(n, M, d.max_card * A * C)
        if margins > 1:  # the (x, a) margin: keys of fewer cells
            runs += _costs.run_seconds(n, M, d.max_card * A) * (margins - 1)
        return (_costs.sort_seconds(n, M) + 2 * n * M * _costs.KEY_S + runs
                + _costs.BLOCK_CALL_S * (n * M // _BLOCK_KEYS + 1) + d.transpose_seconds())

    def count(self, req: Request):
        d = self.data
        need = _missing_entropies(req)
        C = 1 if req.kind == "pair_free" else d.n_classes
        fm = d.feature_major_codes()
        if req.kind == "relevance":
            xb, x = sorted_entropy_sums(fm, d.y.numpy().astype(np.int64), C, C, d.max_card, True)
            return d.entropies_from_sums(req, {"h_xb": xb, "h_x": x})
        if req.kind == "pairs":
            A = int(d.cards[req.sel].max(initial=1))
            x = fm[req.cand]
            g = d.pick_keys(req.sel)
        else:
            A = int(d.cards[req.j])
            x = fm if req.cols is None else fm[req.cols]
            g = fm[req.j].astype(np.int64) * C + (d.y.numpy() if C > 1 else 0)
        xab, xa = sorted_entropy_sums(x, g, A * C, C, d.max_card, "h_xa" in need and C > 1,
                                      full="h_xab" in need or C == 1)
        if C == 1:
            xa, xab = xab, None
        return d.entropies_from_sums(req, {"h_xab": xab, "h_xa": xa})


def entropy_sums_refusal(d, req: Request) -> str | None:
    """Why the strategies that sum ``c log c`` of complete rows (sorted, keyed, baseline) cannot count ``req``; None: they can.

    Their sums read the ``m log m`` lookup table by count, are not additive over blocks of rows,
    and leave the entropies without the pair to the class table.
    """
    if (d.stream is not None and d.sparse is None) or d.distributed:
        return "streamed or distributed rows (its sums are not additive over blocks of rows)"
    if not d.complete or d.weighted:
        return "missing entries or weights (it counts complete, unweighted rows)"
    if d.n_total > _XLOGX_MAX:
        return "more rows than the m log m lookup table holds"
    if req.kind != "relevance" and d.marginal_entropies() is None:
        return "no marginal entropies of the class table"
    return None


def _n_tables(d, req: Request) -> int:
    if req.kind == "pairs":
        return len(req.cand)
    return d.n_features if req.cols is None else len(req.cols)


def _missing_entropies(req: Request) -> frozenset[str]:
    """The entropies of ``req.needed`` that the class table does not give: of h_xa and h_xab."""
    return _missing_of(req.kind, req.needed)


@functools.lru_cache(maxsize=256)
def _missing_of(kind: str, needed: tuple[str, ...]) -> frozenset[str]:
    from ._tables import _QUANTITIES

    out = set()
    for q in needed:
        parts = (q,) if q.startswith("h_") else (*_QUANTITIES[q][0], *_QUANTITIES[q][1])
        out.update(e for e in parts if e in ("h_xa", "h_xab"))
    if kind == "pair_free":
        out.discard("h_xab")
    return frozenset(out)
