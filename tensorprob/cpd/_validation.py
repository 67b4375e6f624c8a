"""Input preparation of the CPD fits: codes, cardinalities, names and labels, validated once."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .. import _distributed
from .._config import get_config
from .._device import to_numpy
from ..counting import unique_rows
from ..encoding import Encoded, encode
from ..encoding._encode import _compact, _compact_dtype, check_classification_target


@dataclass
class PreparedData:
    """Codes, cardinalities and names of the data a CPD is fitted to (label last, if any).

    Built once per fit by :func:`prepare_data` (or directly from validated codes, as
    GSM-CPD does); the distinct rows are found once per device and reused by every fit that
    shares the data (:meth:`merge`).
    """

    codes: np.ndarray  # (M, N) integers in the smallest dtype that holds them, -1 missing
    cards: np.ndarray  # (N,) int64
    names: list[str]
    target: int | None = None
    classes: np.ndarray | None = None
    encoder: Any = None
    _distinct: dict = field(default_factory=dict, repr=False)

    def distinct(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """Distinct rows (M', N) on ``device`` (sorted) and the index of every row among them (M,)."""
        key = str(device)
        if key not in self._distinct:
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

def _is_code_array(X: Any) -> bool:
    if torch.is_tensor(X):
        return not X.is_floating_point() and X.dtype != torch.bool and not X.is_complex()
    if hasattr(X, "iloc"):
        return False
    arr = np.asarray(X)
    return arr.dtype.kind in "iu"


def _declared_codes(X: Any, cardinalities: Any, missing_values: Any) -> bool:
    """Whether X is taken as codes: an integer array with ``cardinalities`` (then -1 is missing),
    or a nonnegative one (its values are their own codes); a raw ``-1`` is otherwise a value."""
    if not _is_code_array(X) or missing_values is not None:
        return False
    if cardinalities is not None:
        return True
    arr = to_numpy(X) if torch.is_tensor(X) else np.asarray(X)
    return not (arr.size and arr.min() < 0)


def prepare_data(X: Any, y: Any = None, *, cardinalities: Sequence[int] | None = None, discretizer: Any = "uniform",
                 n_bins: int = 5, missing_values: Any = None, distributed: bool = False) -> PreparedData:
    """Turn X (codes or raw data) and optional labels into codes with the label as the last variable.

    An :class:`~tensorprob.Encoded` is taken as codes (-1 = missing). So are integer arrays and
    tensors given with ``cardinalities`` (-1 = missing), and nonnegative integer arrays
    (cardinalities ``max + 1`` per column). Anything else, a raw ``-1`` included, goes through
    :func:`tensorprob.encode` (floats are discretized by ``discretizer``). With ``distributed``
    each rank holds its own rows and every decision (codes or raw, cardinalities, categories,
    bins, classes) is taken from all ranks' data: see :func:`_prepare_distributed`.
    """
    if distributed:
        return _prepare_distributed(X, y, cardinalities=cardinalities, discretizer=discretizer, n_bins=n_bins,
                                    missing_values=missing_values)
    limit = get_config()["max_categories"]
    encoder = None
    names = None
    encoded = isinstance(X, Encoded)
    if encoded:
        names, encoder = X.feature_names, X.encoder
        if cardinalities is None:
            cardinalities = X.cardinalities
        X = np.asarray(X.codes)
    if encoded or _declared_codes(X, cardinalities, missing_values):
        codes = to_numpy(X) if torch.is_tensor(X) else np.asarray(X)  # no copy: checked, then stored compact
        if codes.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {codes.shape}")
        if codes.shape[0] == 0 or codes.shape[1] == 0:
            raise ValueError(f"X is empty (shape {codes.shape})")
        if (codes < -1).any():
            raise ValueError("integer codes must be >= 0, or -1 for missing; found "
                             f"{int(codes.min())} (encode raw integer data with tensorprob.encode)")
        if cardinalities is None:
            cards = np.maximum(codes.max(0), 0) + 1
        else:
            cards = np.asarray(cardinalities, dtype=np.int64)
            if cards.shape != (codes.shape[1],):
                raise ValueError(f"cardinalities has shape {cards.shape}, expected ({codes.shape[1]},)")
            small = np.flatnonzero(cards < 1)
            if small.size:
                raise ValueError(f"cardinalities must be >= 1, got {int(cards[small[0]])} for column {int(small[0])}")
            over = np.flatnonzero(codes.max(0) >= cards)
            if over.size:
                raise ValueError(f"column {int(over[0])} has code {int(codes[:, over[0]].max())} >= its "
                                 f"cardinality {int(cards[over[0]])}")
        names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(codes.shape[1])]
        _check_alphabets(cards, limit)
    else:
        enc = encode(X, y, discretizer=discretizer, n_bins=n_bins, missing_values=missing_values)
        codes, cards, names, encoder = enc.codes, enc.cardinalities, enc.feature_names, enc.encoder
    target = classes = None
    if y is not None:
        ycodes, classes = check_classification_target(y)
        if ycodes.shape[0] != codes.shape[0]:
            raise ValueError(f"X has {codes.shape[0]} rows but y has {ycodes.shape[0]} labels")
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}); a label needs at least two classes")
        if classes.size > limit:
            raise ValueError(f"y has {classes.size} classes, above max_categories={limit}")
        cards = np.concatenate([cards, [classes.size]])
        dt = _compact_dtype(cards)
        codes = np.concatenate([codes.astype(dt, copy=False), ycodes.astype(dt)[:, None]], axis=1)
        names = list(names) + ["y"]
        target = codes.shape[1] - 1
    cards = np.asarray(cards, dtype=np.int64)
    return PreparedData(_compact(codes, cards), cards, list(names), target, classes, encoder)


def _local_shape(X: Any) -> tuple:
    """The shape of X without converting it (DataFrames, tensors and arrays)."""
    if isinstance(X, Encoded):
        return tuple(np.shape(X.codes))
    return tuple(X.shape) if hasattr(X, "shape") else tuple(np.shape(np.asarray(X, dtype=object)))


def _global_labels(y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Codes of this rank's labels against the sorted classes of all ranks (the classes every rank sees)."""
    def local() -> tuple[np.ndarray, np.ndarray]:
        if len(y) == 0:
            arr = np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)
            return np.zeros(0, dtype=np.int64), arr.reshape(-1)
        return check_classification_target(y)

    codes, classes = _distributed.agree(local)
    every = [c for c in _distributed.all_gather(classes) if c.size]
    try:
        union = np.unique(np.concatenate(every))
    except TypeError:
        union = np.unique(np.concatenate(every).astype(str))
        classes = classes.astype(str)
    return np.searchsorted(union, classes).astype(np.int64)[codes], union


def _prepare_distributed(X: Any, y: Any, *, cardinalities: Sequence[int] | None, discretizer: Any, n_bins: int,
                         missing_values: Any) -> PreparedData:
    """:func:`prepare_data` on this rank's rows, with every data-dependent choice made from all ranks.

    The ranks first compare a signature (input kind, number of columns, whether labels are
    given, the declared cardinalities) and raise together on a mismatch. Codes take the
    column maxima over all ranks; raw data goes through :func:`tensorprob.encode` with
    ``distributed=True``; labels are coded against the union of every rank's classes. A rank
    may hold zero rows; all ranks together may not.
    """
    limit = get_config()["max_categories"]
    encoded = isinstance(X, Encoded)

    def inspect() -> tuple:
        shape = _local_shape(X)
        is_code = encoded or _is_code_array(X)
        arr = None
        if is_code and not encoded:
            arr = to_numpy(X) if torch.is_tensor(X) else np.asarray(X)
        neg = bool(arr is not None and arr.size and arr.min() < 0)
        n_cols = shape[1] if len(shape) == 2 else -1
        return (encoded, is_code, n_cols, y is None, None if cardinalities is None else list(map(int, cardinalities)),
                missing_values is not None), neg, shape[0] if shape else 0

    sig, neg, n_rows = _distributed.agree(inspect)
    _distributed.check_same("input (Encoded?, integer codes?, number of columns, labels absent?, cardinalities, "
                            "missing_values given?)", sig)
    counts = _distributed.all_gather((neg, n_rows))
    if sum(c[1] for c in counts) == 0:
        raise ValueError("X is empty on every rank: no rows to fit")
    declared = encoded or (sig[1] and not sig[5] and (cardinalities is not None or not any(c[0] for c in counts)))
    names = encoder = None
    if declared:
        cards_given = cardinalities
        if encoded:
            names, encoder = X.feature_names, X.encoder
            cards_given = X.cardinalities if cards_given is None else cards_given
            src = np.asarray(X.codes)
        else:
            src = to_numpy(X) if torch.is_tensor(X) else np.asarray(X)

        def check_codes() -> np.ndarray:
            codes = src
            if codes.ndim != 2:
                raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {codes.shape}")
            if codes.shape[1] == 0:
                raise ValueError(f"X is empty (shape {codes.shape})")
            if codes.size and (codes < -1).any():
                raise ValueError("integer codes must be >= 0, or -1 for missing; found "
                                 f"{int(codes.min())} (encode raw integer data with tensorprob.encode)")
            top = codes.max(0).astype(np.int64) if codes.shape[0] else np.full(codes.shape[1], -1, np.int64)
            if cards_given is not None:
                cards = np.asarray(cards_given, dtype=np.int64)
                if cards.shape != (codes.shape[1],):
                    raise ValueError(f"cardinalities has shape {cards.shape}, expected ({codes.shape[1]},)")
                small = np.flatnonzero(cards < 1)
                if small.size:
                    raise ValueError(f"cardinalities must be >= 1, got {int(cards[small[0]])} for column "
                                     f"{int(small[0])}")
                over = np.flatnonzero(top >= cards)
                if over.size:
                    raise ValueError(f"column {int(over[0])} has code {int(top[over[0]])} >= its cardinality "
                                     f"{int(cards[over[0]])}")
            return top

        top = _distributed.agree(check_codes)
        codes = src
        if cards_given is None:
            cards = np.maximum(np.max(np.stack(_distributed.all_gather(top)), 0), 0) + 1
        else:
            cards = np.asarray(cards_given, dtype=np.int64)
        names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(codes.shape[1])]
        _check_alphabets(cards, limit)
    else:
        enc = encode(X, y, discretizer=discretizer, n_bins=n_bins, missing_values=missing_values, distributed=True)
        codes, cards, names, encoder = enc.codes, enc.cardinalities, enc.feature_names, enc.encoder
    target = classes = None
    if y is not None:
        def check_length() -> None:
            if len(y) != codes.shape[0]:
                raise ValueError(f"X has {codes.shape[0]} rows but y has {len(y)} labels")

        _distributed.agree(check_length)
        ycodes, classes = _global_labels(y)
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}) over all ranks; a label needs at least two "
                             "classes")
        if classes.size > limit:
            raise ValueError(f"y has {classes.size} classes, above max_categories={limit}")
        cards = np.concatenate([cards, [classes.size]])
        dt = _compact_dtype(cards)
        codes = np.concatenate([np.asarray(codes).astype(dt, copy=False), ycodes.astype(dt)[:, None]], axis=1)
        names = list(names) + ["y"]
        target = codes.shape[1] - 1
    cards = np.asarray(cards, dtype=np.int64)
    return PreparedData(_compact(np.asarray(codes), cards), cards, list(names), target, classes, encoder)


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
    w = to_numpy(sample_weight) if torch.is_tensor(sample_weight) else np.asarray(sample_weight)
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
