"""Streamed input shared by the out-of-core CPD fits and selectors: recognizing it, pass 1, coding a chunk.

Data given as row chunks (:class:`~tensorprob.datasets.RowChunks`, a callable returning a
fresh iterator of chunks, or a Parquet path) are read several times. This module holds what
every streamed consumer does the same way:

- :func:`as_chunks` tells streamed input from data in memory.
- :func:`learn_encoding` is pass 1. It reads every chunk and keeps what the encoding depends
  on. For integer codes taken as declared (the CPD fits) that is each column's maximum and
  whether a value is negative. Otherwise it is a small *representative* subset of each
  chunk's rows: per column the first row of each of its first ``max_categories + 1``
  distinct values, the rows of its smallest and largest finite value, its first missing,
  non-integral or non-numeric entry. :class:`~tensorprob.Encoder` fitted on these rows makes
  every decision the fit on all rows makes (categorical or continuous, the categories and the
  first value seen of each, equal-width bin edges, which need only the minimum and maximum),
  so the encoding equals the in-memory one. Equal-frequency and MDL bins need all the values
  of a column and are refused. Labels: the sorted union of the classes of every chunk.
- :meth:`ChunkEncoding.code` codes one chunk with what pass 1 learned (features, class codes,
  checked weights), in every later pass.

With ``distributed=True`` pass 1 runs on every rank over its own chunks and the ranks
combine what they learned (one all-gather), so every rank codes alike.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .. import _distributed
from .._config import get_config
from .._device import to_numpy
from ..datasets._chunks import RowChunks
from ..encoding import Encoded, Encoder, encode
from ..encoding._encode import (
    _columns,
    _is_missing,
    _key,
    _missing_keys,
    _numeric_view,
    _user_missing,
    check_classification_target,
)
from ._validation import _check_weights, _is_code_array

_STREAM_STRATEGIES = ("uniform", "auto")


def is_streamed(X: Any) -> bool:
    """Whether ``X`` is streamed input: a RowChunks, a path (Parquet), or a callable that is not an array."""
    return (isinstance(X, (RowChunks, str, os.PathLike))
            or (callable(X) and not hasattr(X, "shape") and not hasattr(X, "iloc")))


def as_chunks(X: Any) -> RowChunks | None:
    """``X`` as :class:`RowChunks` when it is streamed input (RowChunks, callable, Parquet path), else None."""
    if not is_streamed(X):
        return None
    if isinstance(X, RowChunks):
        return X
    if isinstance(X, (str, os.PathLike)):
        return RowChunks.from_parquet(X)
    return RowChunks(X)


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


@dataclass
class ChunkEncoding:
    """What pass 1 learned from all the chunks (of all ranks), and the coding of a chunk from it.

    Attributes
    ----------
    n_features : int
        Feature columns of every chunk.
    cards : ndarray of int64, shape (n_features,)
        Cardinalities of the features.
    names : list of str
        Feature names (the DataFrame columns, else ``x0, x1, ...``).
    columns : list of str or None
        The DataFrame column names of the chunks; None when the chunks are arrays.
    encoder : Encoder or None
        The fitted encoder; None when the chunks are taken as declared integer codes.
    classes : ndarray or None
        Sorted union of the labels of every chunk; None when the chunks have no labels.
    weighted : bool
        The chunks carry ``sample_weight``.
    n_rows : int
        Rows of every chunk (of all ranks).
    n_rows_local : int
        Rows of this process's chunks.
    """

    n_features: int
    cards: np.ndarray
    names: list
    columns: list | None
    encoder: Encoder | None
    classes: np.ndarray | None
    weighted: bool
    n_rows: int
    n_rows_local: int
    n_weight_sets: int | None = field(default=None, init=False)

    def code(self, i: int, X: Any, y: Any, w: Any, dtype: Any) -> tuple[np.ndarray, np.ndarray | None,
                                                                          np.ndarray | None] | None:
        """Chunk ``i`` coded: (codes (m, n_features), class codes (m,) or None, weights (m, K) or None).

        Codes and class codes in ``dtype``; weights float64, checked but not rescaled. None for
        a chunk without rows.

        Raises
        ------
        ValueError
            A code or label that pass 1 did not see (the chunks changed between the passes), a
            bad weight, or a chunk whose weights have another number of weight sets than the
            first chunk's.
        """
        X = _host(X)
        m = int(X.shape[0])
        if m == 0:
            return None
        if self.encoder is None:  # declared codes
            codes = np.asarray(X)
            if (codes < -1).any():
                raise ValueError("integer codes must be >= 0, or -1 for missing; found "
                                 f"{int(codes.min())} in chunk {i}")
            over = np.flatnonzero(codes.max(0) >= self.cards)
            if over.size:  # the chunks changed between the passes
                raise ValueError(f"chunk {i}: column {int(over[0])} has a code above the cardinality of pass 1")
        else:
            codes = self.encoder.transform(X)
        codes = codes.astype(dtype, copy=False)
        yc = None
        if self.classes is not None:
            codes_y, ycls = check_classification_target(y)
            classes = self.classes
            if classes.dtype.kind == "U" and ycls.dtype.kind != "U":
                ycls = ycls.astype(str)
            pos = np.searchsorted(classes, ycls)
            if (pos >= classes.size).any() or (classes[np.minimum(pos, classes.size - 1)] != ycls).any():
                raise ValueError(f"chunk {i}: a label that the first pass did not see (the chunks changed between "
                                 "the passes)")
            yc = pos.astype(dtype)[codes_y]
        W = None
        if self.weighted:
            W = _check_weights(w, m, local=True)
            if self.n_weight_sets is None:
                self.n_weight_sets = W.shape[1]
            elif W.shape[1] != self.n_weight_sets:
                raise ValueError(f"chunk {i}: sample_weight has {W.shape[1]} weight sets, chunk 0 has "
                                 f"{self.n_weight_sets}")
        return codes, yc, W


def learn_encoding(chunks: RowChunks, *, discretizer: Any, n_bins: int, missing_values: Any,
                   cardinalities: Any = None, declared_codes: bool = True, distributed: bool = False,
                   max_classes: int | None = None) -> ChunkEncoding:
    """Pass 1 over ``chunks`` (see the module docstring): the encoding of the features and the classes.

    Parameters
    ----------
    chunks : RowChunks
    discretizer, n_bins, missing_values : as for :func:`tensorprob.encode`
        Only ``"uniform"`` / ``"auto"`` (or None) bins continuous columns; another strategy
        is accepted when no column is continuous.
    cardinalities : sequence of int, optional
        Declared cardinalities of integer codes (``declared_codes`` only).
    declared_codes : bool, default=True
        Take chunks of nonnegative integers (without ``missing_values``) as codes as they
        are, of cardinality ``max + 1`` (the rule of the CPD fits); False: every chunk goes
        through the :class:`~tensorprob.Encoder` (the rule of the selectors).
    distributed : bool, default=False
        This process's chunks are one rank's share: the ranks combine what they learned.
    max_classes : int, optional
        Largest number of classes accepted.

    Raises
    ------
    ValueError
        Chunks that differ in their columns (or in giving labels or weights), no rows at all,
        a single class, more classes than ``max_classes``, or a discretizer that needs all
        the values of a continuous column.
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
        mine = first_pass()
        every = [s for s in [mine] if s[0] is not None]
    n_rows = sum(s[4] for s in every)
    if not every or n_rows == 0:
        raise ValueError("the streamed data holds no rows" + (" on any rank" if distributed else ""))
    frame, n_cols, columns, no_y, no_w = every[0][0]
    codes_ok = all(s[1] for s in every if s[4])
    neg = any(s[2] for s in every)
    tops = [s[3] for s in every if s[3] is not None]
    declared = declared_codes and codes_ok and missing_values is None and (cardinalities is not None or not neg)
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
    classes = None
    if not no_y:
        classes = _union_classes([c for s in every for c in s[6]])
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}); a label needs at least two classes")
        if max_classes is not None and classes.size > max_classes:
            raise ValueError(f"y has {classes.size} classes, above max_categories={max_classes}")
    return ChunkEncoding(int(n_cols), cards, names, columns if frame else None, encoder, classes, not no_w,
                         int(n_rows), int(mine[4]))
