"""Out-of-core input of the CPD fits: row chunks read in two passes into a table of distinct rows.

Pass 1 reads every chunk and keeps what the encoding depends on. For integer codes that is
each column's maximum and whether a value is negative. For raw data it is a small
*representative* subset of each chunk's rows: per column the first row of each of its
first ``max_categories + 1`` distinct values, the rows of its smallest and largest finite
value, its first missing, non-integral or non-numeric entry. :class:`~tensorprob.Encoder`
fitted on these rows makes every decision the fit on all rows makes (categorical or
continuous, the categories and the first value seen of each, equal-width bin edges, which
need only the minimum and maximum), so the encoding equals the in-memory one. Equal-frequency
and MDL bins need all the values of a column and are refused. Labels: the union of the
classes of every chunk.

Pass 2 codes every chunk and merges its distinct rows into a running table (weights summed,
float64). The EM then runs on that table: the in-memory fit merges duplicate rows the same
way first, so the two fits are the same computation. Memory is bounded by one chunk plus
the table of distinct rows (``RowChunks.max_distinct_rows``).

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

import os
import shutil
import tempfile
from typing import Any

import numpy as np
import torch

from .. import _distributed
from .._config import get_config
from .._device import to_numpy
from ..counting import unique_rows
from ..datasets._chunks import RowChunks
from ..encoding import Encoded, encode
from ..encoding._encode import (
    _columns,
    _compact_dtype,
    _is_missing,
    _key,
    _missing_keys,
    _numeric_view,
    _user_missing,
    check_classification_target,
)
from ._validation import PreparedData, _check_weights, _is_code_array, _weight_scale

_STREAM_STRATEGIES = ("uniform", "auto")


def as_chunks(X: Any) -> RowChunks | None:
    """``X`` as :class:`RowChunks` when it is streamed input (RowChunks, callable, Parquet path), else None."""
    if isinstance(X, RowChunks):
        return X
    if isinstance(X, (str, os.PathLike)):
        return RowChunks.from_parquet(X)
    if callable(X) and not hasattr(X, "shape") and not hasattr(X, "iloc"):
        return RowChunks(X)
    return None


def _host(X: Any) -> Any:
    if isinstance(X, Encoded):
        raise TypeError("an Encoded chunk is not supported in streamed input: pass its codes with cardinalities=")
    if torch.is_tensor(X):
        return to_numpy(X)
    if hasattr(X, "iloc"):
        return X.to_frame() if X.ndim == 1 else X
    return X if isinstance(X, np.ndarray) else np.asarray(X)


def _take(X: Any, idx: np.ndarray) -> Any:
    return X.iloc[idx].reset_index(drop=True) if hasattr(X, "iloc") else X[idx]


def _concat(parts: list) -> Any:
    if hasattr(parts[0], "iloc"):
        import pandas as pd

        return pd.concat(parts, ignore_index=True)
    return np.concatenate(parts, axis=0)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _representative(X: Any, limit: int, miss_keys: set) -> np.ndarray:
    """Sorted indices of the rows of X the encoder's decisions depend on (see the module docstring)."""
    cols, _, pandas_cat = _columns(X)
    keep: list[np.ndarray] = []
    for j, col in enumerate(cols):
        if col.dtype.kind == "O" and not pandas_cat[j]:
            num = _numeric_view(col)
            if num is None:  # keep a non-number so that the subset is not read as numbers either
                miss0 = _is_missing(col)
                for i, v in enumerate(col):
                    if not miss0[i] and not _is_number(v):
                        keep.append(np.array([i]))
                        break
            else:
                col = num
        miss = _is_missing(col) | _user_missing(col, miss_keys)
        keep.append(np.flatnonzero(miss)[:1])
        ok = np.flatnonzero(~miss)
        if ok.size == 0:
            continue
        vals = col[ok]
        kind = vals.dtype.kind
        if kind in "iuf":
            _, first = np.unique(vals, return_index=True)
            keep.append(ok[first[:limit + 1]])
            fin = np.isfinite(vals) if kind == "f" else np.ones(vals.shape, bool)
            if fin.any():
                f_idx = np.flatnonzero(fin)
                keep.append(ok[f_idx[[np.argmin(vals[f_idx]), np.argmax(vals[f_idx])]]])
                if kind == "f":
                    frac = np.flatnonzero(fin & (vals != np.round(np.where(fin, vals, 0))))
                    keep.append(ok[frac[:1]])
            keep.append(ok[np.flatnonzero(~fin)[:1]])
        elif kind in "bUSMm":
            _, first = np.unique(vals, return_index=True)
            keep.append(ok[first[:limit + 1]])
        else:  # objects: the first row of each (type group, value) key
            seen: set = set()
            first_rows = []
            for i, v in zip(ok.tolist(), vals):
                try:
                    kv = _key(v)
                except TypeError:
                    first_rows.append(i)  # unhashable: the encoder's own error is raised on it
                    break
                if kv not in seen:
                    seen.add(kv)
                    first_rows.append(i)
                    if len(seen) > limit:
                        break
            keep.append(np.asarray(first_rows, dtype=np.int64))
    return np.unique(np.concatenate(keep).astype(np.int64)) if keep else np.zeros(0, np.int64)


class _Pass1:
    """What pass 1 learns from the chunks of this process."""

    def __init__(self, limit: int, miss_keys: set, need_rep: bool) -> None:
        self.limit, self.miss_keys, self.need_rep = limit, miss_keys, need_rep
        self.sig: tuple | None = None
        self.codes_ok = True
        self.neg = False
        self.top: np.ndarray | None = None
        self.n_rows = 0
        self.rep_parts: list = []
        self.rep_rows = 0
        self.classes: list[np.ndarray] = []

    def add(self, i: int, X: Any, y: Any, w: Any) -> None:
        X = _host(X)
        shape = tuple(X.shape)
        if len(shape) != 2:
            raise ValueError(f"chunk {i}: X must be 2-D (n_samples, n_features), got shape {shape}")
        frame = hasattr(X, "iloc")
        sig = (frame, shape[1], [str(c) for c in X.columns] if frame else None, y is None, w is None)
        if self.sig is None:
            self.sig = sig
        elif sig != self.sig:
            raise ValueError(f"chunk {i} differs from chunk 0 in (DataFrame?, number of columns, column names, labels "
                             f"absent?, weights absent?): {sig} vs {self.sig}")
        if y is not None:
            n_y = len(y)
            if n_y != shape[0]:
                raise ValueError(f"chunk {i}: X has {shape[0]} rows but y has {n_y} labels")
            if n_y:
                self.classes.append(check_classification_target(y)[1])
        self.n_rows += shape[0]
        if shape[0] == 0:
            return
        is_code = _is_code_array(X)
        self.codes_ok &= is_code
        if is_code:
            arr = np.asarray(X)
            self.neg |= bool(arr.min() < 0)
            top = arr.max(0).astype(np.int64)
            self.top = top if self.top is None else np.maximum(self.top, top)
        if self.need_rep:
            self.rep_parts.append(_take(X, _representative(X, self.limit, self.miss_keys)))
            self.rep_rows += self.rep_parts[-1].shape[0]
            if len(self.rep_parts) > 1 and self.rep_rows > 4 * shape[1] * (self.limit + 5):
                self.rep_parts = [self.reduced()]
                self.rep_rows = self.rep_parts[0].shape[0]

    def reduced(self) -> Any:
        rep = _concat(self.rep_parts)
        return _take(rep, _representative(rep, self.limit, self.miss_keys))

    def summary(self) -> tuple:
        return (self.sig, self.codes_ok, self.neg, self.top, self.n_rows,
                self.reduced() if self.rep_parts else None, self.classes)


def _union_classes(parts: list[np.ndarray]) -> np.ndarray:
    every = np.concatenate(parts)
    try:
        return np.unique(every)
    except TypeError:
        return np.unique(every.astype(str))


def _codes_cards(top: np.ndarray | None, n_cols: int, cardinalities: Any, limit: int) -> np.ndarray:
    """Cardinalities of declared codes (as :func:`prepare_data` checks them)."""
    top = np.full(n_cols, -1, np.int64) if top is None else top
    if cardinalities is None:
        cards = np.maximum(top, 0) + 1
    else:
        cards = np.asarray(cardinalities, dtype=np.int64)
        if cards.shape != (n_cols,):
            raise ValueError(f"cardinalities has shape {cards.shape}, expected ({n_cols},)")
        small = np.flatnonzero(cards < 1)
        if small.size:
            raise ValueError(f"cardinalities must be >= 1, got {int(cards[small[0]])} for column {int(small[0])}")
        over = np.flatnonzero(top >= cards)
        if over.size:
            raise ValueError(f"column {int(over[0])} has code {int(top[over[0]])} >= its cardinality "
                             f"{int(cards[over[0]])}")
    big = np.flatnonzero(cards > limit)
    if big.size:
        raise ValueError(f"variable {int(big[0])} has an alphabet of {int(cards[big[0]])} values, above "
                         f"max_categories={limit}; discretize it first (tensorprob.discretize) or raise the limit "
                         "with tensorprob.config_context(max_categories=...)")
    return cards


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
        self.path = tempfile.mkdtemp(prefix="tensorprob-spill-", dir=directory)
        self.n_rows = 0
        self._maps: list = []
        self._files = [open(os.path.join(self.path, name), "wb") for name in ("codes", "weights")]

    def append(self, rows: torch.Tensor, weights: torch.Tensor) -> None:
        """Write rows (M, N) and their weights (M, K) at the end of the files."""
        codes = np.ascontiguousarray(to_numpy(rows), dtype=self.code_dtype)
        w = np.ascontiguousarray(to_numpy(weights), dtype=np.float64).reshape(codes.shape[0], self.n_weights)
        self._files[0].write(codes.tobytes())
        self._files[1].write(w.tobytes())
        self.n_rows += codes.shape[0]

    def _map(self, name: str, dtype: Any, shape: tuple, mode: str) -> torch.Tensor:
        if shape[0] == 0:  # an empty file cannot be mapped
            return torch.from_numpy(np.zeros(shape, dtype))
        arr = np.memmap(os.path.join(self.path, name), dtype=dtype, mode=mode, shape=shape)
        self._maps.append(arr)
        return torch.from_numpy(arr)

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
        out = self._map(f"array{len(self._maps)}", np_dtype, tuple(shape), "w+")
        out.fill_(fill)
        return out

    def close(self) -> None:
        """Remove the files (the mapped tensors must not be used afterwards)."""
        for f in self._files:
            f.close()
        for arr in self._maps:
            mm = getattr(arr, "_mmap", None)
            if mm is not None:
                try:
                    mm.close()
                except (BufferError, ValueError):  # still referenced (a tensor view): the OS frees it later
                    pass
        self._maps = []
        shutil.rmtree(self.path, ignore_errors=True)


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
    miss_keys = _missing_keys(missing_values)
    strategy_ok = discretizer is None or (isinstance(discretizer, str) and discretizer in _STREAM_STRATEGIES)

    def first_pass() -> tuple:
        p1 = _Pass1(limit, miss_keys, need_rep=True)
        for i, (X, y, w) in enumerate(chunks):
            p1.add(i, X, y, w)
        return p1.summary()

    if distributed:
        mine = _distributed.agree(first_pass)
        every = [s for s in _distributed.all_gather(mine) if s[0] is not None]
        sigs = [s[0] for s in every]
        bad = [r for r, s in enumerate(sigs) if s != sigs[0]]
        if bad:
            raise ValueError(f"distributed fit: the chunks of the ranks differ in (DataFrame?, number of columns, "
                             f"column names, labels absent?, weights absent?): {sigs[bad[0]]} vs {sigs[0]}")
    else:
        every = [first_pass()]
        every = [s for s in every if s[0] is not None]
    n_rows = sum(s[4] for s in every)
    if not every or n_rows == 0:
        raise ValueError("the streamed data holds no rows" + (" on any rank" if distributed else ""))
    _, n_cols, _, no_y, no_w = every[0][0]
    codes_ok = all(s[1] for s in every if s[4])
    neg = any(s[2] for s in every)
    tops = [s[3] for s in every if s[3] is not None]
    declared = codes_ok and missing_values is None and (cardinalities is not None or not neg)
    encoder = None
    if declared:
        cards = _codes_cards(np.max(np.stack(tops), 0) if tops else None, n_cols, cardinalities, limit)
        names = [f"x{j}" for j in range(n_cols)]
    else:
        reps = [s[5] for s in every if s[5] is not None]
        rep = _concat(reps)
        if len(reps) > 1:
            p = _Pass1(limit, miss_keys, True)
            p.rep_parts = [rep]
            rep = p.reduced()
        enc = encode(rep, None, discretizer=discretizer if strategy_ok else "uniform", n_bins=n_bins,
                     missing_values=missing_values)
        encoder = enc.encoder
        if not strategy_ok:
            if encoder.discretized_:
                raise ValueError(
                    f"out-of-core fit: discretizer={discretizer!r} needs all the values of the continuous "
                    f"column(s) {encoder.discretized_[:5]}, which streamed data does not hold in memory; use "
                    "discretizer='uniform' (equal-width bins need only each column's minimum and maximum) or "
                    "discretize those columns before streaming them")
            encoder.set_params(discretizer=discretizer)
        cards, names = np.asarray(enc.cardinalities, dtype=np.int64), list(enc.feature_names)
    classes = target = None
    if not no_y:
        classes = _union_classes([c for s in every for c in s[6]])
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}); a label needs at least two classes")
        if classes.size > limit:
            raise ValueError(f"y has {classes.size} classes, above max_categories={limit}")
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
            for i, (X, y, w) in enumerate(chunks):
                X = _host(X)
                m = int(X.shape[0])
                if m == 0:
                    continue
                if declared:
                    codes = np.asarray(X)
                    if (codes < -1).any():
                        raise ValueError("integer codes must be >= 0, or -1 for missing; found "
                                         f"{int(codes.min())} in chunk {i}")
                    over = np.flatnonzero(codes.max(0) >= cards[:n_cols])
                    if over.size:  # the chunks changed between the passes
                        raise ValueError(f"chunk {i}: column {int(over[0])} has a code above the cardinality of "
                                         "pass 1")
                else:
                    codes = encoder.transform(X)
                codes = codes.astype(dt, copy=False)
                if not no_y:
                    yc, ycls = check_classification_target(y)
                    pos = np.searchsorted(classes, ycls if classes.dtype.kind != "U" or ycls.dtype.kind == "U"
                                          else ycls.astype(str))
                    codes = np.concatenate([codes, pos.astype(dt)[yc][:, None]], axis=1)
                if no_w:
                    W = np.ones((m, 1))
                else:
                    W = _check_weights(w, m, local=True)
                    if K is None:
                        K = W.shape[1]
                        npos, total = np.zeros(K), np.zeros(K)
                    elif W.shape[1] != K:
                        raise ValueError(f"chunk {i}: sample_weight has {W.shape[1]} weight sets, chunk 0 has {K}")
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
                        new = None
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
    prep = PreparedData(np.zeros((0, cards.size), dt), cards, names, target, classes, encoder)
    if spill is not None:  # the rows stay in their files, read a block at a time onto the device
        return prep, rows, W, spill
    return prep, rows.to(device), W.to(device), None
