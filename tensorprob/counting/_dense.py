"""Histogram strategies: the plain reference, cache-blocked keyed histograms, and all pairs at once.

``bincount`` is the reference: :func:`~tensorprob.counting.joint_table` (one ``torch.bincount``
of combined indices) and :class:`~tensorprob.counting.TableInformation`, blocked over candidates
so that a block's tables fit the memory budget. It applies to every request (weights, missing
entries, streamed and distributed rows, any device) and is what ``counting="reference"`` runs.

``keyed`` counts complete, unweighted rows in memory on the CPU with the same histogram, but a
block of candidates at a time sized to stay in cache, and turns each block's counts into the
entropies a step needs while they are there: its memory is one block, whatever the alphabet.

``all-pairs`` counts the (x_c, x_j, class) tables of every pair of features in one pass (one-hot
Gram matrices per class), for runs that read the tables of most pairs of few features.
"""
from __future__ import annotations

import numpy as np
import torch

from .._config import setting
from .._device import chunk_ranges
from . import _costs
from ._planner import KINDS, Request, Strategy, register
from ._sorted import entropy_sums_refusal
from ._tables import (
    _XLOGX_MAX,
    Quantities,
    _axis_sum,
    _blocked_transpose,
    _xlogx,
    _xlogx_np,
    joint_table,
    one_hot,
    quantities_of,
    rows_by_class,
    table_information,
)

_CPU = torch.device("cpu")


def _columns(codes: torch.Tensor, index: torch.Tensor | None, s: int, e: int) -> torch.Tensor:
    """Candidate columns ``s..e`` of ``codes`` (M, N) (of ``index`` when given), kept feature-major."""
    if index is None:
        return codes[:, s:e]
    idx = index[s:e]
    if codes.stride(0) == 1 and codes.shape[0] > 1:  # feature-major: contiguous rows of the (N, M) memory
        return codes.T.index_select(0, idx).T
    return codes.index_select(1, idx)


@register
class Bincount(Strategy):
    """The plain reference: :func:`~tensorprob.counting.joint_table` and :class:`~tensorprob.counting.TableInformation`.

    Every kind, every kind of data. The quantity kinds are counted a block of candidates at a
    time (their tables within a quarter of the memory budget), so memory stays bounded at any
    alphabet; the table kinds give the whole dense table the caller asked for.
    """

    name = "bincount"
    kinds = frozenset(KINDS)
    reads_sparse = True  # through dense blocks of rows (SparseRows.blocks)

    def seconds(self, req: Request) -> float:
        d = self.data
        if req.kind == "members":
            return d.reference_seconds(req)
        n, cells = _tables_and_cells(d, req)
        rows = d.budget_rows if d.stream is None else d.n_kept  # streamed: every block is read
        scatter = _costs.scatter_seconds(cells * 8 * min(n, 64))
        s = n * rows * (2 * _costs.KEY_S + scatter) + n * cells * 8e-10
        c = d.codes
        if n * cells * 8 > _costs.CACHE_BLOCK_BYTES and c.ndim == 2 and c.shape[1] > 1 and c.stride(0) != 1:
            s += c.numel() * _costs.TRANSPOSE_S  # joint_table's feature-major copy of row-major codes
        if req.kind in ("pair", "pair_free", "pairs", "triple"):
            s += n * cells * 6 * _costs.CELL_S + _costs.QUANTITIES_CALL_S * _n_blocks(d, n, cells)
        elif req.kind == "relevance":
            s += n * cells * 4 * _costs.CELL_S
        return s


    def count(self, req: Request):
        d = self.data
        if req.kind == "members":
            return d.count_reference(req)
        I, C, complete = d.max_card, d.n_classes, d.complete
        if req.kind == "class":
            return d.count(lambda codes, y, w, dt: joint_table(codes, I, None, 1, y, C, weights=w, dtype=dt,
                                                               complete=complete))
        if req.kind == "pair_table":
            j = req.j
            return d.count(lambda codes, y, w, dt: joint_table(codes, I, codes[:, j], I, y, C, weights=w, dtype=dt,
                                                               complete=complete))
        if req.kind == "triple_table":
            r, j = req.r, req.j
            return d.count(lambda codes, y, w, dt: joint_table(codes, I, codes[:, r], I, codes[:, j], I, weights=w,
                                                               dtype=dt, complete=complete))
        if req.kind == "pairs":
            return self._pairs(req)
        return self._blocked(req)

    def _blocked(self, req: Request) -> Quantities:
        """Quantities of the class, pair, class-free pair or triple tables, a memory-sized block of candidates at a time."""
        d = self.data
        I, C, complete = d.max_card, d.n_classes, d.complete
        n, cells = _tables_and_cells(d, req)
        index = None if req.cols is None else torch.from_numpy(req.cols).to(d.codes.device)
        kind, j, r = req.kind, req.j, req.r
        parts: dict[str, list[torch.Tensor]] = {q: [] for q in req.needed}
        for s, e in chunk_ranges(n, 32 * cells, setting("memory_budget") // 4):
            def tables(codes, y, w, dt, s=s, e=e):
                x = _columns(codes, index, s, e)
                if kind == "relevance":
                    return joint_table(x, I, None, 1, y, C, weights=w, dtype=dt, complete=complete)
                if kind == "pair":
                    return joint_table(x, I, codes[:, j], I, y, C, weights=w, dtype=dt, complete=complete)
                if kind == "pair_free":  # rows without a class count nowhere, as in the class tables
                    return joint_table(x, I, codes[:, j], I, torch.where(y >= 0, 0, -1), 1, weights=w, dtype=dt,
                                       complete=complete)
                return joint_table(x, I, codes[:, r], I, codes[:, j], I, weights=w, dtype=dt, complete=complete)

            T = d.count(tables)
            for q, v in _block_quantities(T, d, req.needed).items():
                parts[q].append(v)
        return Quantities({q: _cat(v, n, d) for q, v in parts.items()})

    def _pairs(self, req: Request) -> Quantities:
        """Quantities of the (x_c, x_s, class) tables of listed pairs: the pair as one column ``x_c I + x_s``."""
        d = self.data
        I, C, complete = d.max_card, d.n_classes, d.complete
        cand = torch.from_numpy(req.cand).to(d.codes.device)
        sel = torch.from_numpy(req.sel).to(d.codes.device)
        P = cand.numel()
        itype = torch.int16 if I * I < 2**15 else torch.int32 if I * I < 2**31 else torch.int64
        parts: dict[str, list[torch.Tensor]] = {q: [] for q in req.needed}
        per = max(32 * I * I * C, 3 * max(d.budget_rows, 1) * torch.empty((), dtype=itype).element_size())
        for s, e in chunk_ranges(P, per, setting("memory_budget") // 4):
            def tables(codes, y, w, dt, c=cand[s:e], j=sel[s:e]):
                ct = codes.T.to(itype, memory_format=torch.contiguous_format)
                xc, xs = ct.index_select(0, c), ct.index_select(0, j)
                pair = xc.mul_(I).add_(xs)
                if not complete:
                    pair.masked_fill_((pair < 0) | (xs < 0), -1)  # x_c < 0 makes the code negative
                return joint_table(pair.T, I * I, None, 1, y, C, weights=w, dtype=dt, complete=complete)

            T = d.count(tables).view(-1, I, I, C)
            for q, v in _block_quantities(T, d, req.needed).items():
                parts[q].append(v)
        return Quantities({q: _cat(v, P, d) for q, v in parts.items()})


@register
class ClassTable(Strategy):
    """The entropies of the class tables from the dense class table (counted by the planner's choice), in NumPy.

    :class:`~tensorprob.counting.TableInformation`'s values bit for bit, in a few NumPy calls.
    """

    name = "class-table"
    devices = frozenset({"cpu"})
    kinds = frozenset({"relevance"})
    reads_sparse = True  # it reads the class table, which the planner counts

    def applies(self, req: Request) -> str | None:
        d = self.data
        if d.n_total > _XLOGX_MAX:
            return "more rows than the m log m lookup table holds"
        return None

    def seconds(self, req: Request) -> float:
        d = self.data
        cells = d.n_features * d.max_card * d.n_classes
        if d._class_table is not None:
            return cells * 3 * _costs.CELL_S
        return d.planner.estimate(Request("class")) + cells * 3 * _costs.CELL_S

    def count(self, req: Request) -> Quantities:
        return Quantities(self.data.class_table_entropies())


def _block_quantities(T: torch.Tensor, d, needed: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """The quantities ``needed`` of the tables T, each computed from its own table (a lone table as two)."""
    lone = T.shape[0] == 1
    if lone:  # a threaded sum may split the row of a single-output reduction: compute it as two tables
        T = T.repeat(2, 1, 1, 1)
    vals = quantities_of(table_information(T, d.log_base, d.n_rows), needed)
    return {q: v[:1] if lone else v for q, v in vals.items()}


def _cat(parts: list[torch.Tensor], n: int, d) -> torch.Tensor:
    if not parts:
        return torch.zeros(n, dtype=torch.float64, device=d.codes.device)
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _tables_and_cells(d, req: Request) -> tuple[int, int]:
    """Tables of ``req`` and the cells of each, as the dense strategies count them (padded to the largest alphabet)."""
    I, C = d.max_card, d.n_classes
    if req.kind == "pairs":
        return len(req.cand), I * I * C
    n = d.n_features if req.cols is None else len(req.cols)
    cells = {"class": I * C, "relevance": I * C, "pair": I * I * C, "pair_table": I * I * C, "pair_free": I * I,
             "triple": I ** 3, "triple_table": I ** 3}.get(req.kind, I * I * C)
    return n, cells


def _n_blocks(d, n: int, cells: int) -> int:
    return -(-n // max(1, (setting("memory_budget") // 4) // max(1, 32 * cells)))


# ------------------------------------------------------------------ cache-blocked keyed histograms
def keyed_entropy_sums(x: np.ndarray, g: np.ndarray, stride: int, C: int, top: int, margin: bool,
                       full: bool = True) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``sum_cells c log c`` of the tables of keys ``x * stride + g`` and of their ``// C`` margin, by histograms.

    The arguments are those of :func:`~tensorprob.counting._sorted.sorted_entropy_sums` (``top``:
    the largest code of ``x`` plus one; ``g`` an (M,) array, or ``(rows, which)``: candidate i's
    groups are ``rows[which[i]]``). Candidates are counted a block at a time, their
    ``top * stride`` cells each within a cache-sized block; the sums are taken from the counts
    while they are in cache.
    """
    n, M = x.shape
    per = top * stride
    if n * max(M, per) <= _SMALL_KEYS:  # a few listed pairs (CMIM's lazy rounds): fewer, cheaper calls
        return _small_entropy_sums(x, g, stride, C, per, margin, full)
    L = _xlogx(M, _CPU)
    xab = np.empty(n) if full else None
    xa = np.empty(n) if margin else None
    step = max(1, min(n, _costs.CACHE_BLOCK_BYTES // (8 * per), (2**31 - 1) // max(per, 1)))
    kt = np.int32 if step * per < 2**31 else np.int64
    offsets = (np.arange(step, dtype=kt) * per)[:, None]
    rows, which = (g, None) if isinstance(g, np.ndarray) else g
    # one buffer of each size for every block: fresh ones of some megabytes would each be
    # page-faulted in again (and make the time of a run swing with the allocator's state)
    keys = np.empty((min(n, step), M), dtype=kt)
    # a transposed view of row-major codes (a MIM run's) beyond the last-level cache: each block's
    # columns are copied into one buffer by blocks of rows, instead of a copy of all the codes
    # (fresh memory: page faults); within the cache strided reads cost about what copies would
    strided = (n > 1 and M > 1 and not x.flags.c_contiguous and x.T.flags.c_contiguous
               and x.nbytes > _costs.CACHE_L3_BYTES)
    block = np.empty((min(n, step), M), dtype=x.dtype) if strided else None
    groups = rows.astype(kt, copy=False) if which is None else np.empty((min(n, step), M), dtype=rows.dtype)
    logs = torch.empty(min(n, step) * per, dtype=L.dtype) if full else None
    for s in range(0, n, step):
        e = min(n, s + step)
        k = keys[:e - s]
        np.multiply(_blocked_transpose(x.T[:, s:e], block[:e - s]) if strided else x[s:e], stride, dtype=kt, out=k)
        if which is None:
            k += groups
        else:
            np.add(k, np.take(rows, which[s:e], axis=0, out=groups[:e - s]), out=k, casting="unsafe")
        k += offsets[:e - s]
        cnt = torch.bincount(torch.from_numpy(k).view(-1), minlength=(e - s) * per)
        if full:
            xab[s:e] = torch.index_select(L, 0, cnt, out=logs[:(e - s) * per]).view(e - s, per).sum(1).numpy()
        if margin:
            m = cnt.view(e - s, per // C, C).sum(2)
            xa[s:e] = L.index_select(0, m.view(-1)).view(e - s, -1).sum(1).numpy()
    return xab, xa


#: Keys (and cells) up to which :func:`keyed_entropy_sums` counts in NumPy in one block: below it
#: the calls' fixed costs dominate, and NumPy's are lower than torch's.
_SMALL_KEYS = 8192


def _small_entropy_sums(x: np.ndarray, g, stride: int, C: int, per: int, margin: bool,
                        full: bool) -> tuple[np.ndarray | None, np.ndarray | None]:
    """:func:`keyed_entropy_sums` of a few candidates, one NumPy histogram of all their keys."""
    n, M = x.shape
    L = _xlogx_np(M)
    rows, which = (g, None) if isinstance(g, np.ndarray) else g
    k = np.multiply(x, stride, dtype=np.intp)
    k += rows if which is None else rows[which]
    k += np.arange(0, n * per, per, dtype=np.intp)[:, None]
    cnt = np.bincount(k.ravel(), minlength=n * per)
    xab = L.take(cnt).reshape(n, per).sum(1) if full else None
    xa = None
    if margin:  # the class margin: one segmented sum where the classes are many, else adds of a short axis's slices
        m = np.add.reduceat(cnt, np.arange(0, cnt.size, C)) if C >= 8 else _axis_sum(cnt.reshape(-1, C), 1)
        xa = L.take(m).reshape(n, per // C).sum(1)
    return xab, xa


@register
class Keyed(Strategy):
    """Cache-blocked histograms of complete, unweighted codes in memory on the CPU (:func:`keyed_entropy_sums`).

    Its work is one scattered update per code plus the cells of the tables (each feature's
    pick at its own alphabet), its memory one cache-sized block; the entropies without the
    pair come from the class table.
    """

    name = "keyed"
    devices = frozenset({"cpu"})
    kinds = frozenset({"relevance", "pair", "pair_free", "pairs"})

    def applies(self, req: Request) -> str | None:
        return entropy_sums_refusal(self.data, req)

    def seconds(self, req: Request) -> float:
        d = self.data
        n = len(req.cand) if req.kind == "pairs" else (d.n_features if req.cols is None else len(req.cols))
        C = 1 if req.kind == "pair_free" else d.n_classes
        A = (1 if req.kind == "relevance" else int(d.cards[req.sel].max(initial=1)) if req.kind == "pairs"
             else int(d.cards[req.j]))
        per = d.max_card * A * C
        M = d.n_total
        scatter = _costs.scatter_seconds(8 * per)
        margins = 2 if req.kind == "relevance" else 1 + (C > 1 and "h_xa" in _missing(req))
        step = max(1, _costs.CACHE_BLOCK_BYTES // (8 * per))
        transposed = _costs.TRANSPOSE_S if d.large_row_major else 0.0  # each block's columns copied
        return (n * M * (3 * _costs.KEY_S + scatter + transposed)
                + n * per * (0.3e-9 + margins * _costs.CELL_S) + _costs.BLOCK_CALL_S * (n // step + 1))

    def count(self, req: Request) -> Quantities:
        d = self.data
        need = _missing(req)
        C = 1 if req.kind == "pair_free" else d.n_classes
        fm = d.codes.T.numpy()  # (N, M): a strided view of a row-major run's codes, its blocks transposed in turn
        if req.kind == "relevance":
            xb, x = keyed_entropy_sums(fm, d.y.numpy().astype(np.int64), C, C, d.max_card, True)
            return d.entropies_from_sums(req, {"h_xb": xb, "h_x": x})
        if req.kind == "pairs":
            A = int(d.cards[req.sel].max(initial=1))
            x = fm[req.cand]
            g = d.pick_keys(req.sel)  # (rows, which)
        else:
            A = int(d.cards[req.j])
            x = fm if req.cols is None else fm[req.cols]
            g = fm[req.j].astype(np.int64) * C + (d.y.numpy() if C > 1 else 0)
        xab, xa = keyed_entropy_sums(x, g, A * C, C, d.max_card, "h_xa" in need and C > 1,
                                     full="h_xab" in need or C == 1)
        if C == 1:
            xa, xab = xab, None
        return d.entropies_from_sums(req, {"h_xab": xab, "h_xa": xa})


def _missing(req: Request) -> set[str]:
    from ._sorted import _missing_entropies

    return _missing_entropies(req)


# ------------------------------------------------------------------ all pairs at once
@register
class AllPairs(Strategy):
    """The (x_c, x_j, class) tables of every pair of features in one pass (:func:`pair_products`).

    One-hot Gram matrices per class: ``2 M (N I)^2`` multiply-adds instead of ``M N`` histogram
    updates per step, and the quantities of all pairs in one batch; what pays on few features
    whose pairs a run mostly reads (a greedy run of k of N features reads k - 1 of them). The
    class-free kind counts one Gram matrix of all labelled rows. Fractional weights count the
    pairs by a bincount of pair codes instead (the products sum exactly only integral weights).
    """

    name = "all-pairs"
    kinds = frozenset({"pair", "pair_free"})
    subsets = False  # every feature's rows of the tables of all pairs

    def __init__(self, data) -> None:
        super().__init__(data)
        self._info: dict[bool, object] = {}

    def applies(self, req: Request) -> str | None:
        d = self.data
        N, I = d.n_features, d.max_card
        C = 1 if req.kind == "pair_free" else d.n_classes
        budget = setting("memory_budget")
        if N * N * I * I * C * 8 * 3 > budget:
            return "the tables of all pairs exceed the memory budget"
        if d.weighted and d.budget_rows * N * N * 4 > budget:
            return "weighted pair codes of all pairs exceed the memory budget"
        return None

    def seconds(self, req: Request) -> float:
        classes = req.kind == "pair"
        if classes in self._info:
            return self.data.n_features * 1e-8
        d = self.data
        N, I, M = d.n_features, d.max_card, d.budget_rows
        C = d.n_classes if classes else 1
        madd = _costs.PRODUCT_MADD_S if d.codes.device.type == "cpu" else _costs.PRODUCT_MADD_GPU_S
        build = M * (N * I) ** 2 * madd + N * N * I * I * C * 6 * _costs.CELL_S + M * N * I * _costs.ONEHOT_S
        return build / max(1, d.planner.expected.get(req.kind, 1))

    def count(self, req: Request):
        d = self.data
        classes = req.kind == "pair"
        info = self._info.get(classes)
        if info is None:
            info = self._info[classes] = table_information(self._tables(classes), d.log_base, d.n_rows)
        N = d.n_features
        return _Rows(info, slice(req.j * N, (req.j + 1) * N))  # every feature's, whatever the open candidates

    def _tables(self, classes: bool) -> torch.Tensor:
        """(x_c, x_j, class) tables of every (j, c), j-major: (N * N, I, I, C); class-free (N * N, I, I, 1)."""
        d = self.data
        N, I, complete = d.n_features, d.max_card, d.complete
        C = d.n_classes if classes else 1

        def tables(codes: torch.Tensor, y: torch.Tensor, w: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor:
            if not classes:  # one class: every labelled row
                y = torch.where(y >= 0, 0, -1)
            if w is None or bool((w == w.round()).all()):  # exact integer sums: the products
                return pair_products(codes, I, y, C, w, complete).to(dtype)
            ct = codes.T.to(torch.int32)  # (N, M)
            pair = ct[None, :, :] * I + ct[:, None, :]  # (j, c, M): x_c * I + x_j
            if not complete:
                pair.masked_fill_((ct[None, :, :] < 0) | (ct[:, None, :] < 0), -1)
            return joint_table(pair.view(N * N, -1).T, I * I, None, 1, y, C, weights=w, dtype=dtype,
                               complete=complete)

        return d.count(tables).view(N * N, I, I, C)


class _Rows:
    """The rows ``index`` of every quantity of a :class:`TableInformation` (read as attributes)."""

    def __init__(self, info, index: slice) -> None:
        self._info, self._index = info, index

    def __getattr__(self, name: str) -> torch.Tensor:
        if name[0] == "_":
            raise AttributeError(name)
        v = self.__dict__[name] = getattr(self._info, name)[self._index]  # read once
        return v


def pair_products(codes: torch.Tensor, I: int, y: torch.Tensor, C: int, w: torch.Tensor | None,
                   complete: bool = False) -> torch.Tensor:
    """Every (x_c, x_j, class) table, j-major (N * N, I, I, C) float64, as one-hot Gram matrices per class.

    With ``E`` the one-hot codes (rows x (feature, value); a missing code is a row of zeros, so
    a pair counts only the rows where both are observed), the class-``k`` block of all pair
    tables is ``E_k^T W_k E_k``: a matrix product of (N I)^2 outputs per class instead of M N^2
    histogram updates. Sums of ones (float32 below 2**24 rows) and float64 sums of integral
    weights are exact: the same counts as the bincounts. Rows are taken in blocks within the
    memory budget; rows without a class count nowhere.

    ``complete`` unweighted rows (no missing code): ``E`` leaves out every feature's last value,
    a product of (N (I - 1))^2 outputs (a fraction ((I - 1) / I)^2 of the work); the
    cells with a last value are the margins (each class's rows of every (feature, value), and
    its size) minus the counted cells, integers below 2**24 in float32: the same counts.
    """
    M, N = codes.shape
    dev = codes.device
    # unweighted counts below 2**24 are exact in float32 whatever the order of the sums (every
    # partial sum is an integer float32 holds), and its products take half the time
    gt = torch.float32 if w is None and M < 2**24 else torch.float64
    drop = complete and w is None and I > 1
    J = I - 1 if drop else I
    G = torch.zeros(C, N * J, N * J, dtype=gt, device=dev)
    m = torch.zeros(C, N * J, dtype=gt, device=dev)  # rows of each (feature, value) per class (drop only)
    order, sizes = rows_by_class(y, C)  # each class a contiguous run of rows
    ends = np.cumsum(sizes).tolist()
    step = max(1, min(M, setting("memory_budget") // max(1, 16 * N * I)))
    # E^T W E is symmetric: only the blocks on and above the diagonal are multiplied, then
    # mirrored (3 blocks: 6 products of a ninth); under 128 columns one product is faster
    n = N * J
    parts = 1 if n < 128 else 3 if n < 768 else 4
    cuts = [round(i * n / parts) for i in range(parts + 1)]
    blocks = [(slice(cuts[a], cuts[a + 1]), slice(cuts[b], cuts[b + 1])) for a in range(parts) for b in range(a, parts)]
    for k in range(C):
        for s in range(ends[k - 1] if k else 0, ends[k], step):
            rows = order[s:min(s + step, ends[k])]
            E = one_hot(codes.index_select(0, rows), I, gt, drop_last=drop)
            wE = E if w is None else E * w.index_select(0, rows).to(gt)[:, None]
            for A, B in blocks:
                G[k, A, B].addmm_(wE[:, A].T, E[:, B])
            if drop:
                m[k] += E.sum(0)
    for A, B in blocks:
        if A != B:
            G[:, B, A] = G[:, A, B].transpose(1, 2)
    if drop:  # the cells of the last values, from the margins
        g, mv = G.view(C, N, J, N, J), m.view(C, N, J)
        full = torch.empty(C, N, I, N, I, dtype=gt, device=dev)
        full[:, :, :J, :, :J] = g
        full[:, :, :J, :, J] = mv[:, :, :, None] - g.sum(4)  # x_c = v, x_j last
        full[:, :, J, :, :J] = mv[:, None, :, :] - g.sum(2)  # x_c last, x_j = u
        n_k = torch.tensor(sizes, dtype=gt, device=dev)[:, None, None]
        tot = mv.sum(2)
        full[:, :, J, :, J] = n_k - tot[:, :, None] - tot[:, None, :] + g.sum((2, 4))
        G = full
    # G[k][(c, v), (j, u)] -> (j, c, v, u, k)
    return G.view(C, N, I, N, I).permute(3, 1, 2, 4, 0).reshape(N * N, I, I, C).to(torch.float64)


