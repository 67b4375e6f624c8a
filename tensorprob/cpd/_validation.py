"""Input preparation of the CPD fits: codes, cardinalities, names and labels, validated once."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .. import _distributed
from .._config import get_config
from .._io import check_weights
from .._io._passes import SparseValues
from ..counting import unique_rows
from ..counting._sparse_rows import SparseCodeRows, unique_sparse_rows
from ..encoding import Encoded, Encoder
from ..encoding._codes import _compact, _compact_dtype
from ..encoding._columns import _default_names
from ..encoding._labels import check_classification_target, global_labels


@dataclass
class PreparedData:
    """Codes, cardinalities and names of the data a CPD is fitted to (label last, if any).

    Built once per fit by :func:`prepare_data` (or directly from validated codes, as
    GSM-CPD does); the distinct rows are found once per device and reused by every fit that
    shares the data (:meth:`merge`).
    """

    codes: Any  # (M, N) integers in the smallest dtype that holds them, -1 missing (or SparseCodeRows)
    cards: np.ndarray  # (N,) int64
    names: list[str]
    target: int | None = None
    classes: np.ndarray | None = None
    encoder: Any = None
    _distinct: dict = field(default_factory=dict, repr=False)

    def distinct(self, device: torch.device) -> tuple[Any, torch.Tensor]:
        """Distinct rows (M', N) on ``device`` (sorted) and the index of every row among them (M,).

        Sparse codes (:class:`~tensorprob.counting._sparse_rows.SparseCodeRows`) stay sparse, on the CPU,
        in the order of the dense rows.
        """
        key = str(device)
        if key not in self._distinct:
            if isinstance(self.codes, SparseCodeRows):
                rows, _, inverse = unique_sparse_rows(self.codes)
                self._distinct[key] = (rows, torch.from_numpy(inverse))
            else:
                rows, _, inverse = unique_rows(torch.as_tensor(self.codes, device=device))
                self._distinct[key] = (rows, inverse)
        return self._distinct[key]

    def merge(self, weights: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """Distinct rows and the (M', K) float64 sums of the (M, K) per-row ``weights`` over each."""
        rows, inverse = self.distinct(device)
        W = torch.as_tensor(weights, dtype=torch.float64, device=device)
        merged = torch.zeros((rows.shape[0], W.shape[1]), dtype=torch.float64, device=device)
        return rows, merged.index_add_(0, inverse, W)



def _check_alphabets(cards: np.ndarray, limit: int) -> None:
    """Refuse a variable with more than ``limit`` (``max_categories``) values."""
    big = np.flatnonzero(cards > limit)
    if big.size:
        raise ValueError(
            f"variable {int(big[0])} has an alphabet of {int(cards[big[0]])} values, above max_categories={limit}; "
            "discretize it first (tensorprob.discretize) or raise the limit with "
            "tensorprob.config_context(max_categories=...)")


def prepare_data(X: Any, y: Any = None, *, cardinalities: Sequence[int] | None = None, discretizer: Any = "uniform",
                 n_bins: int = 5, missing_values: Any = None, distributed: bool = False) -> PreparedData:
    """Turn X (codes or raw data) and optional labels into codes with the label as the last variable.

    Declared codes (:func:`_declared`) are taken as they are (-1 = missing); anything else is raw
    data: an :class:`~tensorprob.Encoder` decides its encoding once (floats are discretized by
    ``discretizer``). With ``distributed`` each rank holds its own rows and every decision
    (cardinalities, categories, bins, classes) is taken from the summaries of all ranks; a rank
    may hold zero rows, all ranks together may not.
    """
    limit = get_config()["max_categories"]
    import scipy.sparse as sp

    if sp.issparse(X):
        return _prepare_sparse(X, y, cardinalities, discretizer, n_bins, missing_values, distributed)
    X = _declared(X, cardinalities, missing_values, distributed)
    enc = Encoder(discretizer=discretizer, n_bins=n_bins, missing_values=missing_values, distributed=distributed)
    codes = enc._fit(X, y, None)
    n_rows = sum(_distributed.all_gather(codes.shape[0])) if distributed else codes.shape[0]
    if n_rows == 0 or codes.shape[1] == 0:
        raise ValueError(f"X is empty (shape {codes.shape})" + (" on every rank: no rows to fit" if distributed else ""))
    if isinstance(X, Encoded):
        cards, encoder = X.cardinalities, X.encoder
        names = X.feature_names if X.feature_names is not None else list(enc.feature_names_)
    else:
        cards, names, encoder = enc.cardinalities_, list(enc.feature_names_), enc
    _check_alphabets(np.asarray(cards), limit)
    return _with_label(codes, np.asarray(cards, dtype=np.int64), names, _plain(encoder), y, limit, distributed)


def _prepare_sparse(X: Any, y: Any, cardinalities: Any, discretizer: Any, n_bins: int, missing_values: Any,
                    distributed: bool) -> PreparedData:
    """:func:`prepare_data` of a scipy.sparse X (this rank's rows when ``distributed``): see :func:`prepare_sparse_parts`."""
    return prepare_sparse_parts(lambda: iter([X]), int(X.shape[1]), y, cardinalities=cardinalities,
                                discretizer=discretizer, n_bins=n_bins, missing_values=missing_values,
                                distributed=distributed, whole=not distributed)


def prepare_sparse_parts(parts: Any, n_cols: int, y: Any, *, cardinalities: Any, discretizer: Any, n_bins: int,
                         missing_values: Any, distributed: bool = False, whole: bool = False,
                         values: SparseValues | None = None) -> PreparedData:
    """The prepared data of sparse matrices taken together as one (row chunks, a rank's rows): the codes stay sparse.

    Integer values without ``missing_values`` (or with ``cardinalities``) are codes as they are,
    as for dense integer arrays (the largest value of all the parts, and of all ranks, sets each
    cardinality); anything else is encoded by the dense rules, each column's code of 0 implicit
    and the codes kept in the dense encoder's numbering (the model's factors read like those of
    a dense fit). One matrix in one process (``whole``) is encoded by
    :func:`~tensorprob.encoding._sparse.encode_sparse` (every discretizer); parts and ranks by
    :func:`~tensorprob.encoding._sparse.encode_sparse_parts` (their summaries combined: equal
    widths only). The parts' codes are stacked (compact, the stored entries only).

    Parameters
    ----------
    parts : callable
        ``parts()`` gives the sparse matrices (the same columns), each time the same.
    n_cols : int
        Their number of columns.
    y : array-like or None
        The labels of all the parts' rows, in order.
    distributed : bool
        The parts are this rank's rows: every decision is taken from all ranks' (a rank may hold none).
    values : SparseValues, optional
        The parts' value facts when a pass over them made them already (this rank's); else one
        pass here.
    """
    import scipy.sparse as sp

    from ..encoding._sparse import encode_sparse, encode_sparse_parts

    def local() -> SparseValues:
        facts = values
        if facts is None:
            facts = SparseValues.empty(n_cols)
            for X in parts():
                facts = facts.add(X)
        if y is not None and len(y) != facts.n_rows:
            raise ValueError(f"X has {facts.n_rows} rows but y has {len(y)} labels")
        return facts

    M, ints, neg, top = _distributed.agree(local) if distributed else local()
    n_total = M
    if distributed:
        every = _distributed.all_gather((M, ints, neg, top))
        n_total = sum(e[0] for e in every)
        ints, neg = all(e[1] for e in every if e[0]), any(e[2] for e in every)
        top = np.max(np.stack([e[3] for e in every]), 0)
    if n_total == 0 or n_cols == 0:
        raise ValueError(f"X is empty ({n_total} rows, {n_cols} columns" + (" over all ranks)" if distributed else ")"))
    classes = ycodes = None
    if y is not None:
        ycodes, classes = global_labels(y) if distributed else check_classification_target(y)
    declared = cardinalities is not None or (ints and missing_values is None and not neg)
    if declared:
        if not ints:
            raise ValueError("cardinalities given with sparse X of a non-integer dtype: codes must be integers")
        cards = np.maximum(top, 0) + 1 if cardinalities is None else np.asarray(cardinalities, dtype=np.int64)
        if cards.shape != (n_cols,):
            raise ValueError(f"cardinalities has {cards.size} entries for {n_cols} columns")
        if neg or bool((top >= cards).any()):
            raise ValueError("sparse codes must lie in 0 .. cardinality - 1 (a sparse matrix has no missing code)")
        dt = _compact_dtype(cards)
        coded = []
        for X in parts():
            csr = sp.csr_matrix(X, copy=True)
            csr.sum_duplicates()
            csr.eliminate_zeros()
            coded.append(sp.csr_matrix((csr.data.astype(dt), csr.indices, csr.indptr), shape=csr.shape))
        base, names, encoder = np.zeros(n_cols, dtype=np.int64), _default_names(n_cols), None
    else:
        enc = Encoder(discretizer=discretizer, n_bins=n_bins, missing_values=missing_values)
        if whole:
            (X,) = list(parts())
            csr, cards, base = encode_sparse(enc, X, y, layout="csr", return_zero=True)
            coded = [csr]
        else:
            coded, base = encode_sparse_parts(enc, parts, classes, distributed=distributed, return_zero=True)
            cards = enc.cardinalities_.copy()
        for csr in coded:  # the dense numbering: the entries coded z (the value 0's code) are code 0
            csr.data[csr.data == base.astype(csr.data.dtype)[csr.indices]] = 0
        names, encoder = list(enc.feature_names_), _plain(enc)
    _check_alphabets(cards, get_config()["max_categories"])
    dt = _compact_dtype(cards)
    csr = coded[0] if len(coded) == 1 else sp.vstack(coded, format="csr") if coded else sp.csr_matrix((0, n_cols))
    rows = SparseCodeRows(csr.indptr, csr.indices, csr.data.astype(dt, copy=False), base)
    names = [str(n) for n in names]
    if y is None:
        return PreparedData(rows, cards, names, None, None, encoder)
    cards = _label_cards(cards, classes, get_config()["max_categories"], " over all ranks" if distributed else "")
    rows = rows.with_column(rows.shape[1], ycodes, _compact_dtype(cards))  # the label: one more variable
    return PreparedData(rows, cards, names + ["y"], n_cols, classes, encoder)


def _declared(X: Any, cardinalities: Any, missing_values: Any, distributed: bool) -> Any:
    """X as an :class:`~tensorprob.Encoded` when it declares codes, else X (raw data).

    Codes are an ``Encoded``, an integer array or tensor given with ``cardinalities``, or, the
    CPD fits' convention for data without ``missing_values``, an integer array or tensor
    without a negative value: each value is its own code, ``max + 1`` values per column (over
    all ranks when ``distributed``). Any other array is raw data (a raw -1 is a value).
    """
    if distributed:
        sig = (isinstance(X, Encoded), _is_int_array(X), None if cardinalities is None else
               list(map(int, cardinalities)), missing_values is not None)
        _distributed.check_same("input (Encoded?, integer codes?, cardinalities, missing_values given?)", sig)
    if isinstance(X, Encoded):
        return X
    if cardinalities is not None:
        return _distributed.agree(lambda: Encoded(X, cardinalities)) if distributed else Encoded(X, cardinalities)
    if missing_values is not None or not _is_int_array(X):
        return X
    arr = X.detach().cpu().numpy() if torch.is_tensor(X) else np.asarray(X)
    if arr.ndim != 2:
        return X  # the encoder names the problem
    top = arr.max(0).astype(np.int64) if arr.shape[0] else np.full(arr.shape[1], -1, np.int64)
    neg = bool(arr.size and arr.min() < 0)
    if distributed:  # codes on every rank (the signature checked that), raw if any rank has a negative value
        parts = _distributed.all_gather((neg, top))
        if any(n for n, _ in parts) or len({t.shape for _, t in parts}) > 1:
            return X
        top = np.max(np.stack([t for _, t in parts]), 0)
    elif neg:
        return X
    return Encoded(arr, np.maximum(top, 0) + 1)


def _is_int_array(X: Any) -> bool:
    """An integer (not bool) array or tensor, not a DataFrame."""
    if torch.is_tensor(X):
        return not X.is_floating_point() and X.dtype != torch.bool and not X.is_complex()
    return isinstance(X, np.ndarray) and X.dtype.kind in "iu"


def _plain(encoder: Any) -> Any:
    """The encoder with its categories as plain arrays (a model saves its encoder's state without pickle)."""
    if encoder is not None and hasattr(encoder, "cardinalities_"):
        encoder.categories_  # noqa: B018 - reading them cuts packed categories into per-column arrays
    return encoder


def _with_label(codes: np.ndarray, cards: np.ndarray, names: list, encoder: Any, y: Any, limit: int,
                distributed: bool) -> PreparedData:
    """The prepared data, the codes of the labels (of all ranks' classes when ``distributed``) as the last variable."""
    if y is None:
        return PreparedData(_compact(codes, cards), cards, [str(n) for n in names], None, None, encoder)
    if distributed:
        def check_length() -> None:
            if len(y) != codes.shape[0]:
                raise ValueError(f"X has {codes.shape[0]} rows but y has {len(y)} labels")

        _distributed.agree(check_length)
        ycodes, classes = global_labels(y)
        where = " over all ranks"
    else:
        ycodes, classes = check_classification_target(y)
        if ycodes.shape[0] != codes.shape[0]:
            raise ValueError(f"X has {codes.shape[0]} rows but y has {ycodes.shape[0]} labels")
        where = ""
    cards = _label_cards(cards, classes, limit, where)
    dt = _compact_dtype(cards)
    codes = np.concatenate([np.asarray(codes).astype(dt, copy=False), ycodes.astype(dt)[:, None]], axis=1)
    return PreparedData(codes, cards, [str(n) for n in names] + ["y"], codes.shape[1] - 1, classes, encoder)


def _label_cards(cards: np.ndarray, classes: np.ndarray, limit: int, where: str) -> np.ndarray:
    """The cardinalities with the label's appended, its classes checked (``where``: " over all ranks" or "")."""
    if classes.size < 2:
        raise ValueError(f"y has a single class ({classes[0]!r}){where}; a label needs at least two classes")
    if classes.size > limit:
        raise ValueError(f"y has {classes.size} classes, above max_categories={limit}")
    return np.concatenate([cards, [classes.size]]).astype(np.int64)


def _weight_scale(npos: np.ndarray, total: np.ndarray, distributed: bool = False) -> np.ndarray:
    """The factor ``npos / total`` that makes each weight set sum to its number of positive weights.

    ``npos`` and ``total`` (K,) are the positive-weight counts and weight totals of the rows
    seen here; with ``distributed`` they are this rank's, and are summed over all ranks first
    (after checking that every rank has the same K).

    Raises
    ------
    ValueError
        A weight set whose total is 0 (no data to fit) or overflows float64.
    """
    K = total.shape[0]
    if distributed:
        _distributed.check_same("number of weight sets (sample_weight columns)", K)
        both = _distributed.all_reduce_sum(torch.as_tensor(np.concatenate([npos, total]).astype(np.float64))).numpy()
        npos, total = both[:K], both[K:]
    zero = np.flatnonzero(~(total > 0))
    if zero.size:
        where = " over all ranks" if distributed else ""
        raise ValueError(f"sample_weight column {int(zero[0])} sums to zero{where}: no data to fit")
    if not np.isfinite(total).all():
        raise ValueError("sample_weight is too large: its sum overflows float64")
    return npos / total


def _global_weight_scale(w: np.ndarray) -> np.ndarray:
    """Rescale this rank's validated (n_rows, K) weights with the positive counts and totals of all ranks."""
    return w * _weight_scale((w > 0).sum(0).astype(np.float64), w.sum(0), distributed=True)[None, :]


def _check_weights(sample_weight: Any, n_rows: int, local: bool = False) -> np.ndarray:
    """Validated (n_rows, K) float64 weights, each column rescaled to sum to its number of positive entries.

    Weights are relative frequencies: only their ratios matter. Every weight set is rescaled
    so that it sums to the number of rows it gives a positive weight (0/1 weights, such as
    the training rows of a fold, are left as they are), which makes the fit, the Dirichlet
    pseudo-count ``alpha`` and the initialization independent of the absolute scale.
    """
    if sample_weight is None:
        return np.ones((n_rows, 1))
    w = check_weights(sample_weight, n_rows)
    if local:  # one rank's share: rescaled with the totals of all ranks (_global_weight_scale)
        return w
    with np.errstate(over="ignore"):
        total = w.sum(0)
    return w * _weight_scale((w > 0).sum(0), total)[None, :]


def _check_int(name: str, value: Any, low: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)
