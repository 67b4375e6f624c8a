"""Out-of-core input of the CPD fits: row chunks read in two passes into a table of distinct rows.

Pass 1 (:func:`~tensorprob._io.learn_encoding`, shared with the streamed selectors) learns
the encoding and the classes from all the chunks. Pass 2 reads the chunks again, checked
against pass 1 (:meth:`~tensorprob._io.ChunkEncoding.replay`: a source that changed raises),
codes every chunk (:meth:`~tensorprob._io.ChunkEncoding.code`) and merges its distinct rows
into a running table (weights summed, float64). The EM then runs on that table: the in-memory fit
merges duplicate rows the same way first, so the two fits are the same computation. Memory
is bounded by one chunk plus the table of distinct rows (``RowChunks.max_distinct_rows``).

When the table would outgrow that limit (``RowChunks(storage="auto")``, the default), or
from the start with ``storage="spill"``, pass 2 writes the rows to a :class:`Spill`
instead: the table so far, then each chunk's rows with its own duplicates merged, as
compact integer codes and float64 weights in two temporary files. The EM reads them back
memory-mapped, one block of rows at a time at every pass (:meth:`EMData.blocks
<tensorprob.cpd._em.EMData.blocks>`; the E-step is the one of the rows in memory), so
memory is bounded by a block and the model, not by the rows. The sums run in another order
than on the table, so the fit equals the in-memory one up to rounding; k-means++ seeds are
drawn by passes over the blocks (another draw of the same distribution). The caller
removes the files (:meth:`Spill.close`) when the fit ends, also on error.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .. import _distributed
from .._config import get_config
from .._device import to_numpy
from .._io import RowChunks, as_chunks, learn_encoding
from .._io._passes import read_sparse_chunks
from ..counting import unique_rows
from ..counting._spill import TempFiles
from ..encoding._codes import _compact_dtype
from ._validation import PreparedData, _check_alphabets, _plain, _weight_scale, prepare_sparse_parts

__all__ = ["as_chunks", "prepare_sparse_stream", "prepare_stream"]


class Spill:
    """Coded rows and their weights written to temporary files, then read back memory-mapped.

    Pass 2 appends each chunk's rows (compact integer codes) and float64 weights to two
    files of a fresh directory under ``directory`` (default :func:`tempfile.gettempdir`);
    :meth:`finish` maps them as CPU tensors that the EM reads one block at a time, and
    :meth:`array` makes further per-row files there (the k-means++ seeding's state).
    :meth:`close` removes the directory; the fit calls it when it ends, also on error.
    """

    def __init__(self, n_cols: int, code_dtype: Any, n_weights: int, directory: Any = None,
                 block_rows: int | None = None) -> None:
        self.n_cols, self.code_dtype, self.n_weights = int(n_cols), np.dtype(code_dtype), int(n_weights)
        self.block_rows = block_rows
        self._tmp = TempFiles("tensorprob-spill-", directory)
        self.path = self._tmp.path
        self.n_rows = 0
        self._n_arrays = 0
        self._files = [open(self._tmp.file(name), "wb") for name in ("codes", "weights")]

    def append(self, rows: torch.Tensor, weights: torch.Tensor) -> None:
        """Write rows (M, N) and their weights (M, K) at the end of the files."""
        codes = np.ascontiguousarray(to_numpy(rows), dtype=self.code_dtype)
        w = np.ascontiguousarray(to_numpy(weights), dtype=np.float64).reshape(codes.shape[0], self.n_weights)
        self._files[0].write(codes.tobytes())
        self._files[1].write(w.tobytes())
        self.n_rows += codes.shape[0]

    def _map(self, name: str, dtype: Any, shape: tuple, mode: str) -> torch.Tensor:
        return torch.from_numpy(self._tmp.memmap(name, dtype, shape, mode))

    def finish(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Close the files; the rows (M, N) and weights (M, K) as tensors mapped from them."""
        for f in self._files:
            f.close()
        rows = self._map("codes", self.code_dtype, (self.n_rows, self.n_cols), "r+")
        W = self._map("weights", np.float64, (self.n_rows, self.n_weights), "r+")
        return rows, W

    def array(self, shape: tuple[int, ...], dtype: torch.dtype, fill: float) -> torch.Tensor:
        """A new per-row array in a file of the spill, filled with ``fill``, as a mapped CPU tensor."""
        np_dtype = torch.empty(0, dtype=dtype).numpy().dtype
        self._n_arrays += 1
        out = self._map(f"array{self._n_arrays}", np_dtype, tuple(shape), "w+")
        out.fill_(fill)
        return out

    def close(self) -> None:
        """Remove the files (the mapped tensors must not be used afterwards)."""
        for f in self._files:
            f.close()
        self._tmp.close()


def prepare_sparse_stream(chunks: RowChunks, *, cardinalities: Any, discretizer: Any, n_bins: int,
                          missing_values: Any, distributed: bool = False) -> tuple[PreparedData, np.ndarray | None]:
    """Row chunks that are sparse matrices: their codes stacked sparse in memory, as one sparse X is prepared.

    One pass reads the labels, weights and value facts (:func:`~tensorprob._io._passes.read_sparse_chunks`),
    then the encoding is decided from every chunk's summary (of all ranks with ``distributed``)
    and each chunk is coded (:func:`._validation.prepare_sparse_parts`). The chunks' rows are not
    merged as they are read: the codes are compact and hold only the stored entries.

    Returns
    -------
    prep : PreparedData
        Sparse codes (:class:`~tensorprob.counting._sparse_rows.SparseCodeRows`) of all the chunks' rows.
    sample_weight : ndarray or None
        The chunks' weights, concatenated (checked and rescaled by the fit, as for X in memory).
    """
    read = read_sparse_chunks(chunks, "fit_cpd", labels_required=False, distributed=distributed)
    prep = prepare_sparse_parts(lambda: (X for X, _, _ in chunks), read.n_cols, read.labels,
                                cardinalities=cardinalities, discretizer=discretizer, n_bins=n_bins,
                                missing_values=missing_values, distributed=distributed, values=read.values)
    return prep, read.weights


def prepare_stream(chunks: RowChunks, *, cardinalities: Any, discretizer: Any, n_bins: int, missing_values: Any,
                   device: torch.device, distributed: bool = False
                   ) -> tuple[PreparedData, torch.Tensor, torch.Tensor, Spill | None]:
    """Two passes over ``chunks``: the encoding, then the distinct rows with their merged weights (or a spill).

    Returns
    -------
    prep : PreparedData
        Cardinalities, names, label and encoder (its ``codes`` are empty: the rows are merged).
    rows : (M', N) tensor
        The distinct coded rows on ``device``, sorted as :func:`~tensorprob.counting.unique_rows`
        sorts them; or, when the rows were spilled, the spilled rows as a CPU tensor mapped
        from their file.
    W : (M', K) float64 tensor
        Their summed weights, each weight set rescaled as :func:`_check_weights` rescales it
        (on ``device``, or mapped from the spill's file).
    spill : Spill or None
        The files of the spilled rows; the caller removes them (:meth:`Spill.close`).
    """
    limit = get_config()["max_categories"]
    enc = learn_encoding(chunks, discretizer=discretizer, n_bins=n_bins, missing_values=missing_values,
                         cardinalities=cardinalities, int_codes=True, distributed=distributed, max_classes=limit)
    _check_alphabets(enc.cards, limit)
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
        spill: Spill | None = None
        n_seen = 0

        def cap_of(n_w: int) -> int:
            if chunks.max_distinct_rows is not None:
                return chunks.max_distinct_rows
            return max(1, 8 * get_config()["memory_budget"] // (cards.size * itemsize + 8 * n_w))

        def merge(table, pending):
            """The table merged with the pending rows, or None when it outgrows its limit (storage='auto')."""
            parts = ([table] if table is not None else []) + pending
            codes = torch.cat([p[0] for p in parts])
            weights = torch.cat([p[1] for p in parts])
            rows, merged, _ = unique_rows(codes, weights)
            cap = cap_of(weights.shape[1])
            if rows.shape[0] <= cap:
                return rows, merged
            if chunks.storage == "auto":
                return None
            raise ValueError(
                f"out-of-core fit: the data has more than {cap} distinct rows (at least {rows.shape[0]} found "
                f"after {n_seen} rows) and the table of distinct rows, about "
                f"{rows.shape[0] * (cards.size * itemsize + 8 * weights.shape[1]) / 2**20:.0f} MiB so far, "
                "exceeds its limit: raise RowChunks(max_distinct_rows=...) or memory_budget if memory allows, "
                "use RowChunks(storage='spill') (or 'auto') to stream the rows from temporary files at every "
                "EM iteration, coarsen the data (fewer bins, fewer columns), or split it over more processes "
                "with distributed=True")

        try:
            for i, X, y, w in enc.replay(chunks):
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
                if spill is None and chunks.storage == "spill":
                    spill = Spill(cards.size, dt, merged.shape[1], chunks.spill_dir, chunks.block_rows)
                if spill is not None:
                    spill.append(rows, merged)
                    continue
                pending.append((rows, merged))
                n_pending += rows.shape[0]
                if n_pending >= max(1 << 16, 0 if table is None else table[0].shape[0]):
                    new = merge(table, pending)
                    if new is None:  # too many distinct rows: from now on the rows go to files
                        spill = Spill(cards.size, dt, merged.shape[1], chunks.spill_dir, chunks.block_rows)
                        for part in ([table] if table is not None else []) + pending:
                            spill.append(*part)
                    table, pending, n_pending = new, [], 0
            if pending:
                new = merge(table, pending)
                if new is None:
                    spill = Spill(cards.size, dt, pending[0][1].shape[1], chunks.spill_dir, chunks.block_rows)
                    for part in ([table] if table is not None else []) + pending:
                        spill.append(*part)
                table = new
            if spill is not None:
                table = spill.finish()
        except BaseException:
            if spill is not None:
                spill.close()
            raise
        if table is None:
            table = (torch.zeros((0, cards.size), dtype=torch.from_numpy(np.zeros(0, dt)).dtype),
                     torch.zeros((0, 1 if no_w else (K or 1)), dtype=torch.float64))
        return table, npos, total, spill

    if distributed:
        made: list = []  # this rank's spill, removed here if another rank's pass 2 failed

        def step() -> tuple:
            out = second_pass()
            made.append(out[3])
            return out

        try:
            (rows, W), npos, total, spill = _distributed.agree(step)
        except BaseException:
            for sp in made:
                if sp is not None:
                    sp.close()
            raise
    else:
        (rows, W), npos, total, spill = second_pass()
    try:
        if not no_w:
            K = W.shape[1]
            if npos is None:  # a rank that read no chunk: nothing to add to the totals of all ranks
                npos, total = np.zeros(K), np.zeros(K)
            scale = torch.as_tensor(_weight_scale(npos, total, distributed))[None, :]
            if spill is None:
                W = W * scale
            else:  # in place, in the file, a block at a time
                for s0 in range(0, W.shape[0], spill.block_rows or (1 << 16)):
                    W[s0:s0 + (spill.block_rows or (1 << 16))] *= scale
    except BaseException:
        if spill is not None:
            spill.close()
        raise
    chunks.n_rows_ = int(n_rows)
    chunks.n_distinct_ = int(rows.shape[0])
    chunks.spilled_ = spill is not None
    prep = PreparedData(np.zeros((0, cards.size), dt), cards, names, target, classes, _plain(encoder))
    if spill is not None:  # the rows stay in their files, read a block at a time onto the device
        return prep, rows, W, spill
    return prep, rows.to(device), W.to(device), None
