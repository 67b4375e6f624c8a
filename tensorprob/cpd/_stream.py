"""Out-of-core input of the CPD fits: row chunks read in two passes into a table of distinct rows.

Pass 1 (:func:`~tensorprob.cpd._chunked.learn_encoding`, shared with the streamed selectors)
learns the encoding and the classes from all the chunks. Pass 2 codes every chunk
(:meth:`~tensorprob.cpd._chunked.ChunkEncoding.code`) and merges its distinct rows into a
running table (weights summed, float64). The EM then runs on that table: the in-memory fit
merges duplicate rows the same way first, so the two fits are the same computation. Memory
is bounded by one chunk plus the table of distinct rows (``RowChunks.max_distinct_rows``).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .. import _distributed
from .._config import get_config
from ..counting import unique_rows
from ..datasets._chunks import RowChunks
from ..encoding._encode import _compact_dtype
from ._chunked import as_chunks, learn_encoding
from ._validation import PreparedData, _weight_scale

__all__ = ["as_chunks", "prepare_stream"]


def prepare_stream(chunks: RowChunks, *, cardinalities: Any, discretizer: Any, n_bins: int, missing_values: Any,
                   device: torch.device, distributed: bool = False
                   ) -> tuple[PreparedData, torch.Tensor, torch.Tensor]:
    """Two passes over ``chunks``: the encoding, then the distinct rows with their merged weights.

    Returns
    -------
    prep : PreparedData
        Cardinalities, names, label and encoder (its ``codes`` are empty: the rows are merged).
    rows : (M', N) tensor on ``device``
        The distinct coded rows, sorted as :func:`~tensorprob.counting.unique_rows` sorts them.
    W : (M', K) float64 tensor on ``device``
        Their summed weights, each weight set rescaled as :func:`_check_weights` rescales it.
    """
    limit = get_config()["max_categories"]
    enc = learn_encoding(chunks, discretizer=discretizer, n_bins=n_bins, missing_values=missing_values,
                         cardinalities=cardinalities, distributed=distributed, max_classes=limit)
    n_rows, encoder, classes = enc.n_rows, enc.encoder, enc.classes
    no_y, no_w = classes is None, not enc.weighted
    cards, names, target = enc.cards, list(enc.names), None
    if not no_y:
        cards = np.concatenate([cards, [classes.size]]).astype(np.int64)
        names = names + ["y"]
        target = len(names) - 1
    dt = _compact_dtype(cards)
    itemsize = np.dtype(dt).itemsize

    def second_pass() -> tuple:
        table: tuple[torch.Tensor, torch.Tensor] | None = None
        pending: list[tuple[torch.Tensor, torch.Tensor]] = []
        n_pending = 0
        npos = total = None
        K = None

        def merge(table, pending):
            parts = ([table] if table is not None else []) + pending
            codes = torch.cat([p[0] for p in parts])
            weights = torch.cat([p[1] for p in parts])
            rows, merged, _ = unique_rows(codes, weights)
            cap = chunks.max_distinct_rows
            if cap is None:
                cap = max(1, 8 * get_config()["memory_budget"] // (cards.size * itemsize + 8 * weights.shape[1]))
            if rows.shape[0] > cap:
                raise ValueError(
                    f"out-of-core fit: the data has more than {cap} distinct rows (at least {rows.shape[0]} found "
                    f"after {n_seen} rows) and the table of distinct rows, about "
                    f"{rows.shape[0] * (cards.size * itemsize + 8 * weights.shape[1]) / 2**20:.0f} MiB so far, "
                    "exceeds its limit: raise RowChunks(max_distinct_rows=...) or memory_budget if memory allows, "
                    "coarsen the data (fewer bins, fewer columns), or split it over more processes with "
                    "distributed=True")
            return rows, merged

        n_seen = 0
        for i, (X, y, w) in enumerate(chunks):
            coded = enc.code(i, X, y, w, dt)
            if coded is None:
                continue
            codes, yc, W = coded
            m = int(codes.shape[0])
            if not no_y:
                codes = np.concatenate([codes, yc[:, None]], axis=1)
            if no_w:
                W = np.ones((m, 1))
            else:
                if K is None:
                    K = W.shape[1]
                    npos, total = np.zeros(K), np.zeros(K)
                npos += (W > 0).sum(0)
                total += W.sum(0)
            rows, merged, _ = unique_rows(torch.as_tensor(np.ascontiguousarray(codes)),
                                          torch.as_tensor(W, dtype=torch.float64))
            n_seen += m
            pending.append((rows, merged))
            n_pending += rows.shape[0]
            if n_pending >= max(1 << 16, 0 if table is None else table[0].shape[0]):
                table, pending, n_pending = merge(table, pending), [], 0
        if pending:
            table = merge(table, pending)
        if table is None:
            table = (torch.zeros((0, cards.size), dtype=torch.from_numpy(np.zeros(0, dt)).dtype),
                     torch.zeros((0, 1 if no_w else (K or 1)), dtype=torch.float64))
        return table, npos, total

    if distributed:
        (rows, W), npos, total = _distributed.agree(second_pass)
    else:
        (rows, W), npos, total = second_pass()
    if not no_w:
        K = W.shape[1]
        if npos is None:  # a rank that read no chunk: nothing to add to the totals of all ranks
            npos, total = np.zeros(K), np.zeros(K)
        W = W * torch.as_tensor(_weight_scale(npos, total, distributed))[None, :]
    chunks.n_rows_ = int(n_rows)
    chunks.n_distinct_ = int(rows.shape[0])
    prep = PreparedData(np.zeros((0, cards.size), dt), cards, names, target, classes, encoder)
    return prep, rows.to(device), W.to(device)
