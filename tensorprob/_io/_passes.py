"""Passes over row chunks, shared by the out-of-core CPD fits and selectors.

Data given as row chunks (:class:`~tensorprob.datasets.RowChunks`, a callable returning a
fresh iterator of chunks, or a Parquet path) are read several times. This module holds what
every streamed consumer does the same way:

- :func:`as_chunks` tells streamed input from data in memory.
- :func:`learn_encoding` is pass 1: it summarizes every chunk (:func:`~tensorprob.encoding.
  _summary.summarize`), combines the summaries, and decides the encoding once from the
  combined summary, exactly as the encoder decides it for the rows in memory
  (:meth:`~tensorprob.Encoder._from_summary`); labels: the sorted union of the classes of
  every chunk. It also records every chunk's number of rows and a digest of a few of its rows.
- :meth:`ChunkEncoding.replay` is every later pass: it yields the chunks again, checking each
  against what pass 1 recorded, so that a source that changed between the passes (fewer or
  more rows, or other values) raises instead of being fitted silently; and
  :meth:`ChunkEncoding.code` codes a chunk with what pass 1 learned.

With ``distributed=True`` pass 1 runs on every rank over its own chunks and the ranks combine
their summaries (one all-gather), so every rank codes alike.
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .. import _distributed
from .._config import get_config
from .._device import is_sparse
from ..encoding import Encoded, Encoder
from ..encoding._codes import check_encoded
from ..encoding._columns import _missing_keys
from ..encoding._labels import check_classification_target, union_classes
from ..encoding._numbers import sample_cap
from ..encoding._summary import Summary, summarize
from ._chunks import RowChunks

#: Rows of a chunk that its digest reads (spread evenly over the chunk).
_DIGEST_ROWS = 16


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


def check_weights(sample_weight: Any, n_rows: int) -> np.ndarray:
    """Validated (n_rows, K) float64 row weights (one column per weight set), not rescaled.

    Raises
    ------
    TypeError
        Weights that are not numbers.
    ValueError
        Another shape, NaN, infinite or negative weights.
    """
    w = sample_weight.detach().cpu().numpy() if hasattr(sample_weight, "detach") else np.asarray(sample_weight)
    try:
        w = w.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sample_weight must be numeric: {exc}") from exc
    if w.ndim == 1:
        w = w[:, None]
    if w.ndim != 2 or w.shape[0] != n_rows:
        raise ValueError(f"sample_weight must have shape ({n_rows},) or ({n_rows}, K), got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("sample_weight contains NaN or infinite values")
    if (w < 0).any():
        raise ValueError("sample_weight contains negative values")
    return w


def _host(X: Any) -> Any:
    """A chunk's X on the host: an array, a DataFrame or an Encoded, as it was given."""
    if isinstance(X, Encoded):
        return X
    if hasattr(X, "detach"):
        X = X.detach().cpu().numpy()
    if hasattr(X, "iloc"):
        return X.to_frame() if X.ndim == 1 else X
    return X if isinstance(X, np.ndarray) else np.asarray(X)


def _declared(X: Any, cardinalities: Any) -> Any:
    """A hosted chunk as declared codes when it is (an Encoded, or any chunk with ``cardinalities``), checked."""
    if isinstance(X, Encoded):
        return X.checked()
    return X if cardinalities is None else Encoded(X, cardinalities)


def _digest(X: Any, y: Any, w: Any) -> tuple[int, str]:
    """A chunk's number of rows and a digest of its shape and of a few rows spread over it (X, y and weights)."""
    m = int(X.shape[0])
    rows = np.unique(np.linspace(0, m - 1, min(m, _DIGEST_ROWS)).astype(np.int64)) if m else np.zeros(0, np.int64)
    h = hashlib.blake2b(digest_size=16)
    h.update(repr(tuple(X.shape)).encode())
    for part in (X.codes if isinstance(X, Encoded) else X, y, w):
        if part is None:
            h.update(b"|none")
            continue
        if hasattr(part, "iloc"):
            h.update(_frame_bytes(part.iloc[rows]))
            continue
        arr = np.asarray(part.detach().cpu().numpy() if hasattr(part, "detach") else part)
        sub = arr[rows] if arr.ndim else arr
        h.update(sub.dtype.str.encode())
        h.update(np.ascontiguousarray(sub).tobytes() if sub.dtype.kind in "biufcMm" else repr(sub.tolist()).encode())
    return m, h.hexdigest()


def _frame_bytes(df: Any) -> bytes:
    import pandas as pd

    frame = df.to_frame() if df.ndim == 1 else df
    try:
        values = pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()
    except TypeError:  # unhashable entries
        values = repr(frame.to_numpy().tolist()).encode()
    return repr([str(c) for c in frame.columns]).encode() + values


def _changed(what: str) -> ValueError:
    return ValueError(f"the row source changed between the passes: {what}; a source read in several passes must give "
                      "the same chunks each time (a callable that returns a fresh iterator over the same data)")


class SparseChunkError(TypeError):
    """Pass 1 found sparse matrices as row chunks: the caller reads them by its sparse path (raised on every rank)."""


class SparseValues(NamedTuple):
    """What decides whether sparse values are codes as they are: their rows, integer dtypes, signs and maxima."""

    n_rows: int  # rows of the matrices read
    ints: bool  # every matrix of an integer dtype
    neg: bool  # a stored value below 0
    top: np.ndarray  # the largest stored integer value of each column (-1: none)

    @classmethod
    def empty(cls, n_cols: int) -> SparseValues:
        return cls(0, True, False, np.full(n_cols, -1, dtype=np.int64))

    def add(self, X: Any) -> SparseValues:
        """These facts with one more sparse matrix's."""
        if X.format not in ("csr", "csc", "coo", "bsr"):  # DOK, LIL, DIA: no min / max of their own
            X = X.tocsr()
        ints, neg, top = self.ints and X.dtype.kind in "iu", self.neg, self.top
        if X.nnz:
            neg = neg or bool(X.min() < 0)
            if X.dtype.kind in "iu":
                top = np.maximum(top, np.asarray(X.max(axis=0).toarray()).ravel().astype(np.int64))
        return SparseValues(self.n_rows + int(X.shape[0]), ints, neg, top)


class SparseChunks(NamedTuple):
    """What one pass over sparse row chunks learns (:func:`read_sparse_chunks`)."""

    n_rows: int  # this process's rows
    n_cols: int
    labels: np.ndarray | None  # of all the chunks, concatenated; None when they carry none
    weights: np.ndarray | None  # (n_rows,) or (n_rows, K) as the chunks give them; None when they carry none
    values: SparseValues  # of this process's chunks


def read_sparse_chunks(chunks: RowChunks, what: str, *, labels_required: bool, values: bool = True,
                       distributed: bool = False) -> SparseChunks:
    """One pass over row chunks that are sparse matrices: their rows, columns, labels, weights and values, checked.

    Returns the number of rows (of this process's chunks), of columns, the labels of all the
    chunks concatenated (None when the chunks carry none), their weights (None when they carry
    none; an (n_rows,) or (n_rows, K) array as the chunks give them) and the facts of their
    values that decide whether they are codes (:class:`SparseValues`, this process's). With
    ``distributed`` an error on one rank raises on all, and every rank must agree on the
    columns and on giving labels and weights (a rank may hold no chunk). ``values=False``
    skips the value facts (a min / max scan of every chunk) for callers that encode the
    chunks anyway; ``SparseChunks.values`` is then empty.

    Raises
    ------
    TypeError
        A dense chunk among sparse ones.
    ValueError
        Chunks with other numbers of columns, labels of another length, labels or weights on
        some chunks only, or no labels where ``labels_required``.
    """
    def local() -> tuple:
        n_rows, n_cols, labels, weights, facts = 0, None, [], [], None
        for i, (X, y, w) in enumerate(chunks):
            if not is_sparse(X):
                raise TypeError(f"chunk {i} is dense while another chunk is sparse: the chunks must all be sparse "
                                "or all dense")
            if n_cols is not None and X.shape[1] != n_cols:
                raise ValueError(f"chunk {i} has {X.shape[1]} columns, chunk 0 has {n_cols}")
            n_cols = X.shape[1]
            if values:
                facts = (facts or SparseValues.empty(n_cols)).add(X)
            if y is None and labels_required:
                raise ValueError(f"{what} requires labels: give each chunk as (X, y) or (X, y, sample_weight)")
            if y is not None and len(y) != X.shape[0]:
                raise ValueError(f"chunk {i}: {X.shape[0]} rows but {len(y)} labels")
            labels.append(y)
            weights.append(w)
            n_rows += int(X.shape[0])
        for name, got in (("labels", labels), ("sample_weight", weights)):
            if any(v is not None for v in got) and any(v is None for v in got):
                raise ValueError(f"some chunks carry {name} and others do not")
        y_all = None if not labels or labels[0] is None else np.concatenate([np.asarray(v) for v in labels])
        w_all = None if not weights or weights[0] is None else np.concatenate(
            [np.asarray(v, dtype=np.float64) for v in weights])
        if n_cols is None and not distributed:
            raise ValueError("the streamed data holds no chunks")
        return n_rows, n_cols, y_all, w_all, facts

    if not distributed:
        n_rows, n_cols, y_all, w_all, facts = local()
        return SparseChunks(n_rows, n_cols, y_all, w_all, facts or SparseValues.empty(n_cols))
    n_rows, n_cols, y_all, w_all, facts = _distributed.agree(local)
    # a rank without chunks gives none of them: it follows the others
    kinds = {(c, y, w) for c, y, w in _distributed.all_gather((n_cols, y_all is not None, w_all is not None))
             if c is not None}
    if not kinds:
        raise ValueError("the streamed data holds no chunks on any rank")
    if len(kinds) > 1:
        raise ValueError(f"distributed fit: the ranks' sparse chunks differ in (columns, labels?, weights?): "
                         f"{sorted(kinds)}")
    n_cols, has_y, has_w = next(iter(kinds))
    if has_y and y_all is None:
        y_all = np.zeros(0)
    if has_w and w_all is None:
        w_all = np.zeros(0)
    return SparseChunks(n_rows, n_cols, y_all, w_all, facts or SparseValues.empty(n_cols))


class _Pass1:
    """What pass 1 learns from the chunks of this process."""

    def __init__(self, limit: int, miss_keys: set, sample: bool, cardinalities: Any) -> None:
        self.limit, self.miss_keys, self.sample, self.cardinalities = limit, miss_keys, sample, cardinalities
        self.sig: tuple | None = None
        self.summary: Summary | None = None
        self.cards: np.ndarray | None = None  # of declared codes
        self.encoder: Any = None  # the encoder of Encoded chunks (when they share one)
        self.n_rows = 0
        self.seen: list[tuple[int, str]] = []
        self.classes: list[np.ndarray] = []
        self.sparse = False  # the first chunk is a sparse matrix

    def add(self, i: int, X: Any, y: Any, w: Any) -> bool:
        """Take chunk ``i`` into the summary; False when it is a sparse first chunk (the pass stops there)."""
        if is_sparse(X):
            if i:
                raise TypeError(f"chunk {i} is sparse while another chunk is dense: the chunks must all be sparse or "
                                "all dense")
            self.sparse = True
            return False
        X = _host(X)
        self.seen.append(_digest(X, y, w))
        X = _declared(X, self.cardinalities)
        shape = tuple(X.shape)
        if len(shape) != 2:
            raise ValueError(f"chunk {i}: X must be 2-D (n_samples, n_features), got shape {shape}")
        frame = hasattr(X, "iloc")
        declared = isinstance(X, Encoded)
        sig = (frame, shape[1], [str(c) for c in X.columns] if frame else None, y is None, w is None, declared)
        if self.sig is None:
            self.sig = sig
        elif sig != self.sig:
            raise ValueError(f"chunk {i} differs from chunk 0 in (DataFrame?, number of columns, column names, labels "
                             f"absent?, weights absent?, Encoded?): {sig} vs {self.sig}")
        if y is not None:
            n_y = len(y)
            if n_y != shape[0]:
                raise ValueError(f"chunk {i}: X has {shape[0]} rows but y has {n_y} labels")
            if n_y:
                self.classes.append(check_classification_target(y)[1])
        if declared:
            if self.cards is not None and X.cardinalities.tolist() != self.cards.tolist():
                raise ValueError(f"chunk {i}: Encoded cardinalities {X.cardinalities.tolist()} differ from chunk 0's "
                                 f"{self.cards.tolist()}")
            self.encoder = X.encoder if i == 0 or X.encoder is self.encoder else None
            self.cards = X.cardinalities
        else:
            part = summarize(X, y, limit=self.limit, miss_keys=self.miss_keys, sample=self.sample).summary
            cap = sample_cap(shape[1], get_config()["memory_budget"])
            self.summary = part if self.summary is None else self.summary.combine(part, self.limit, cap)
        self.n_rows += shape[0]
        return True

    def result(self) -> tuple:
        return self.sig, self.summary, self.cards, self.n_rows, self.classes, self.sparse


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
    columns : list or None
        The DataFrame column labels of the chunks; None when the chunks are arrays.
    encoder : Encoder or None
        The fitted encoder; None when the chunks are declared codes.
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
    cardinalities: Any = None  # declared with the fit (plain chunks are then codes)
    seen: list = field(default_factory=list, repr=False)  # (rows, digest) of every chunk of pass 1
    n_weight_sets: int | None = field(default=None, init=False)

    @property
    def feature_names_in(self) -> np.ndarray | None:
        """The column labels as scikit-learn keeps them: only when every label is a string."""
        if self.columns is None or not all(isinstance(c, str) for c in self.columns):
            return None
        return np.asarray(self.columns, dtype=object)

    def replay(self, chunks: RowChunks) -> Iterator[tuple[int, Any, Any, Any]]:
        """A later pass over ``chunks``: ``(i, X, y, sample_weight)`` per chunk, each checked against pass 1.

        Raises
        ------
        ValueError
            A chunk with another number of rows or other values (by its digest) than in pass 1,
            or another number of chunks: the source changed between the passes.
        """
        i = -1
        for i, (X, y, w) in enumerate(chunks):
            if i >= len(self.seen):
                raise _changed(f"the first pass read {len(self.seen)} chunk(s) ({self.n_rows_local} rows), this one "
                               f"reads more")
            Xh = _host(X)
            m, digest = _digest(Xh, y, w)
            m0, digest0 = self.seen[i]
            if m != m0:
                raise _changed(f"chunk {i} held {m0} rows in the first pass and holds {m} now")
            if digest != digest0:
                raise _changed(f"chunk {i} holds other values than in the first pass ({m} rows both times)")
            yield i, Xh, y, w
        if i + 1 < len(self.seen):
            raise _changed(f"the first pass read {len(self.seen)} chunk(s) ({self.n_rows_local} rows), this one "
                           f"{i + 1}")

    def code(self, i: int, X: Any, y: Any, w: Any, dtype: Any) -> tuple[np.ndarray, np.ndarray | None,
                                                                          np.ndarray | None] | None:
        """Chunk ``i`` coded: (codes (m, n_features), class codes (m,) or None, weights (m, K) or None).

        Codes and class codes in ``dtype``; weights float64, checked but not rescaled. None for
        a chunk without rows.

        Raises
        ------
        ValueError
            A code or label that pass 1 did not see, a bad weight, or a chunk whose weights have
            another number of weight sets than the first chunk's.
        """
        X = _declared(_host(X), self.cardinalities)
        m = int(X.shape[0])
        if m == 0:
            return None
        if isinstance(X, Encoded):  # declared codes, checked against the cardinalities of pass 1
            codes, _ = check_encoded(X.codes, self.cards, self.names)
        else:
            codes = self.encoder._transform(X)
        codes = codes.astype(dtype, copy=False)
        yc = None
        if self.classes is not None:
            codes_y, ycls = check_classification_target(y)
            classes = self.classes
            if classes.dtype.kind == "U" and ycls.dtype.kind != "U":
                ycls = ycls.astype(str)
            pos = np.searchsorted(classes, ycls)
            if (pos >= classes.size).any() or (classes[np.minimum(pos, classes.size - 1)] != ycls).any():
                raise ValueError(f"chunk {i}: a label that the first pass did not see")
            yc = pos.astype(dtype)[codes_y]
        W = None
        if self.weighted:
            W = check_weights(w, m)
            if self.n_weight_sets is None:
                self.n_weight_sets = W.shape[1]
            elif W.shape[1] != self.n_weight_sets:
                raise ValueError(f"chunk {i}: sample_weight has {W.shape[1]} weight sets, chunk 0 has "
                                 f"{self.n_weight_sets}")
        return codes, yc, W


def learn_encoding(chunks: RowChunks, *, discretizer: Any, n_bins: int, missing_values: Any,
                   cardinalities: Any = None, int_codes: bool = False, max_categories: int | str | None = None,
                   distributed: bool = False, max_classes: int | None = None) -> ChunkEncoding:
    """Pass 1 over ``chunks`` (see the module docstring): the encoding of the features and the classes.

    Parameters
    ----------
    chunks : RowChunks
    discretizer, n_bins, missing_values, max_categories : as for :class:`tensorprob.Encoder`
        A discretizer object (not a built-in strategy) cannot be fitted on chunks: it is
        refused when a column is continuous.
    cardinalities : sequence of int, optional
        Declares every chunk's X as integer codes of these cardinalities (-1 missing), as
        ``fit_cpd(..., cardinalities=)`` does for data in memory. Chunks that are
        :class:`~tensorprob.Encoded` are codes without it.
    int_codes : bool, default=False
        The CPD fits' convention: when every chunk is an integer array without a negative
        value (and no ``missing_values`` are given), the values are their own codes, ``max + 1``
        values per column over all the chunks.
    distributed : bool, default=False
        This process's chunks are one rank's share: the ranks combine what they learned.
    max_classes : int, optional
        Largest number of classes accepted.

    Raises
    ------
    ValueError
        Chunks that differ in their columns (or in giving labels or weights), no rows at all,
        a single class, more classes than ``max_classes``, or a discretizer object with a
        continuous column.
    """
    limit = get_config()["max_categories"] if max_categories in (None, "auto") else int(max_categories)
    strategy = "uniform" if discretizer == "auto" else discretizer
    p1 = _Pass1(limit, _missing_keys(missing_values), strategy in ("quantile", "mdl"), cardinalities)

    def first_pass() -> tuple:
        for i, (X, y, w) in enumerate(chunks):
            if not p1.add(i, X, y, w):
                break
        return p1.result()

    sparse_found = SparseChunkError("the row chunks are sparse matrices")
    if distributed:
        gathered = _distributed.all_gather(_distributed.agree(first_pass))
        kinds = {s[5] for s in gathered if s[5] or s[0] is not None}
        if kinds == {True}:
            raise sparse_found
        if len(kinds) > 1:
            raise TypeError("distributed fit: some ranks' chunks are sparse matrices and others' dense: the chunks "
                            "must all be sparse or all dense")
        every = [s for s in gathered if s[0] is not None]
        sigs = [s[0] for s in every]
        bad = [r for r, s in enumerate(sigs) if s != sigs[0]]
        if bad:
            raise ValueError(f"distributed fit: the chunks of the ranks differ in (DataFrame?, number of columns, "
                             f"column names, labels absent?, weights absent?, Encoded?): {sigs[bad[0]]} vs {sigs[0]}")
    else:
        first_pass()
        if p1.sparse:
            raise sparse_found
        every = [p1.result()] if p1.sig is not None else []
    n_rows = sum(s[3] for s in every)
    if not every or n_rows == 0:
        raise ValueError("the streamed data holds no rows" + (" on any rank" if distributed else ""))
    frame, n_cols, columns, no_y, no_w, declared = every[0][0]
    classes = None
    if not no_y:
        classes = union_classes([c for s in every for c in s[4]])
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}); a label needs at least two classes")
        if max_classes is not None and classes.size > max_classes:
            raise ValueError(f"y has {classes.size} classes, above max_categories={max_classes}")
    enc_kw = dict(n_features=int(n_cols), columns=columns if frame else None, classes=classes, weighted=not no_w,
                  n_rows=int(n_rows), n_rows_local=int(p1.n_rows), cardinalities=cardinalities, seen=p1.seen)
    if declared:
        cards = [s[2] for s in every if s[2] is not None]
        if any(c.tolist() != cards[0].tolist() for c in cards):
            raise ValueError("distributed fit: the Encoded cardinalities of the chunks differ across ranks")
        names = [str(c) for c in columns] if frame else [f"x{j}" for j in range(n_cols)]
        return ChunkEncoding(cards=cards[0], names=names, encoder=p1.encoder if not distributed else None, **enc_kw)
    summary = None
    cap = sample_cap(n_cols, get_config()["memory_budget"])
    for s in every:
        if s[1] is not None:
            summary = s[1] if summary is None else summary.combine(s[1], limit, cap)
    if int_codes and cardinalities is None and missing_values is None and summary.array_kind in ("i", "u") and bool(
            (summary.numbers.lo >= 0).all()):
        cards = np.maximum(summary.numbers.hi, 0).astype(np.int64) + 1
        return ChunkEncoding(cards=cards, names=[f"x{j}" for j in range(n_cols)], encoder=None,
                             **dict(enc_kw, cardinalities=cards))
    summary.classes = classes
    encoder = Encoder(discretizer=discretizer, n_bins=n_bins, max_categories=max_categories,
                      missing_values=missing_values)
    if frame and all(isinstance(c, str) for c in columns):
        encoder.feature_names_in_ = np.asarray(columns, dtype=object)
    encoder._from_summary(summary)
    if encoder.discretized_ and encoder.discretizer_ is None:
        raise ValueError(
            f"out-of-core fit: a discretizer object cannot be fitted on row chunks, and the column(s) "
            f"{encoder.discretized_[:5]} are continuous; use discretizer='uniform', 'quantile' or 'mdl', or "
            "discretize those columns before streaming them")
    return ChunkEncoding(cards=np.asarray(encoder.cardinalities_, dtype=np.int64), names=list(encoder.feature_names_),
                         encoder=encoder, **enc_kw)
