"""Codes as a type: :class:`Encoded`, its one validator, and the compact dtype of codes.

Everything discrete in tensorprob works on codes, an (M, N) integer array whose column n
holds ``0..I_n-1`` and -1 for a missing entry. A plain array is raw data, whatever its dtype:
its values are categories (a raw -1 is a value). Codes are declared by wrapping them in an
:class:`Encoded` (what :func:`~tensorprob.encode` and ``Encoder.transform`` return), which
every model and selector takes as codes, so that codes are never encoded a second time.
:func:`check_encoded` is the one check of declared codes, run when an ``Encoded`` is made and
again at every entry point that takes one (its arrays can be changed in between).
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: The one message of codes that are not codes (the details follow it).
_BAD_CODES = ("Encoded codes must be >= 0 and below their column's cardinality, whole numbers, -1 marking a "
              "missing entry")


def _compact_dtype(cards: np.ndarray) -> np.dtype:
    """Smallest signed integer dtype that holds every cardinality (so every code and -1)."""
    top = int(np.max(cards)) if np.size(cards) else 1
    for dt in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def _compact(codes: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """Codes in :func:`_compact_dtype` (no copy when they already are)."""
    return codes.astype(_compact_dtype(cards), copy=False)


def check_encoded(codes: Any, cardinalities: Any, feature_names: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """The codes (compact dtype) and cardinalities (int64) of declared codes, checked.

    Codes are integers (an integer array, or floats or bools with whole values) from 0 to
    their column's cardinality - 1, or -1 for a missing entry; cardinalities are integers >= 1,
    one per column.

    Raises
    ------
    ValueError
        Codes that are not 2-D, a value that is not such a code (the message names the first
        one: its column, row and value), or cardinalities of another number or below 1.
    """
    if hasattr(codes, "detach"):  # torch tensor
        codes = codes.detach().cpu().numpy()
    codes = np.asarray(codes)
    if codes.ndim != 2:
        raise ValueError(f"{_BAD_CODES}: they must form a 2-D array (n_samples, n_features), got shape {codes.shape}")
    cards = np.asarray(cardinalities.detach().cpu().numpy() if hasattr(cardinalities, "detach") else cardinalities)
    if cards.shape != (codes.shape[1],) or cards.dtype.kind not in "iuf" or (
            cards.size and (not np.all(np.isfinite(cards)) or np.any(cards != np.round(cards)) or cards.min() < 1)):
        raise ValueError(f"Encoded cardinalities must be >= 1, one integer per column ({codes.shape[1]} columns): "
                         f"got {cards.tolist() if cards.size <= 10 else cards.shape}")
    cards = cards.astype(np.int64)
    if codes.dtype.kind == "b":
        codes = codes.astype(np.int8)
    elif codes.dtype.kind not in "iu":
        try:
            values = codes.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{_BAD_CODES}: got an array of dtype {codes.dtype}") from None
        whole = np.isfinite(values) & (values == np.round(values))
        if not whole.all():
            r, c = (int(v) for v in np.argwhere(~whole)[0])
            raise ValueError(f"{_BAD_CODES}: {_where(c, feature_names)} holds {codes[r, c]!r} at row {r}")
        codes = values
    # the extremes in the codes' own dtype (whole-array passes, several times faster than per
    # column); per column only where the largest code reaches the smallest cardinality; the
    # entries only on failure
    if codes.size and (codes.min() < -1 or (codes.max() >= cards.min() and (
            bool((codes.min(axis=0) < -1).any()) or bool((codes.max(axis=0) >= cards).any())))):
        bad = (codes < -1) | (codes >= cards)
        if bad.any():
            r, c = (int(v) for v in np.argwhere(bad)[0])
            raise ValueError(f"{_BAD_CODES}: {_where(c, feature_names)} holds {codes[r, c].item()!r} at row {r}, "
                             f"its cardinality is {int(cards[c])}")
    return _compact(codes, cards), cards


def _where(col: int, names: Any) -> str:
    name = None if names is None or col >= len(names) else names[col]
    return f"column {col}" + ("" if name is None else f" ({name!r})")


class Encoded:
    """Codes declared as such: the codes, their alphabet sizes and names, and the encoder that made them.

    What :func:`encode` and :meth:`Encoder.transform` return, and how codes you made yourself
    are declared: ``Encoded(codes, cardinalities)``. The codes are checked when the object is
    made (see Parameters) and kept in the smallest integer dtype that holds them. An
    ``Encoded`` behaves as its array of codes where an array is expected (``np.asarray``,
    ``shape``, ``len``, rows by ``enc[rows]``, which keep it an ``Encoded``).

    Parameters
    ----------
    codes : array-like or tensor of shape (n_samples, n_features)
        Integer codes ``0..I_n-1`` of every column n, -1 for missing (floats with whole values
        are taken as such integers).
    cardinalities : array-like of shape (n_features,)
        Alphabet sizes ``I_n`` (integers >= 1).
    feature_names : list of str or None, default=None
        Column names (DataFrame columns, or ``x0, x1, ...``).
    encoder : Encoder or None, default=None
        The fitted :class:`Encoder`, whose ``transform`` encodes new raw data the same way.

    Attributes
    ----------
    codes : ndarray of shape (n_samples, n_features)
        The codes, in the smallest signed integer dtype that holds them.
    cardinalities : ndarray of int64, shape (n_features,)
    feature_names : list of str or None
    encoder : Encoder or None
    discretized : list of str
        Names of the columns that the encoder discretized.

    Raises
    ------
    ValueError
        A value that is not a code of its column (one message, naming the first such value),
        or cardinalities that do not fit the columns.

    Notes
    -----
    An ``Encoded`` is how tensorprob recognizes data that is encoded already: :func:`encode`,
    :class:`Encoder`, :func:`~tensorprob.fit_cpd`, fitted models and the coded selectors take
    its codes as they are, -1 as missing, and check them again when they receive them. A plain
    array is raw data: its values are categories, and ``-1`` is a value.

    Examples
    --------
    >>> import numpy as np, tensorprob
    >>> enc = tensorprob.Encoded(np.array([[0, 1], [2, -1]]), [3, 2])
    >>> enc.codes.dtype, enc.shape, enc.cardinalities.tolist()
    (dtype('int8'), (2, 2), [3, 2])
    >>> tensorprob.Encoded(np.array([[0.5, 1]]), [3, 2])
    Traceback (most recent call last):
    ...
    ValueError: Encoded codes must be >= 0 and below their column's cardinality, whole numbers, -1 marking a missing entry: column 0 holds np.float64(0.5) at row 0
    """

    __slots__ = ("cardinalities", "codes", "encoder", "feature_names")

    def __init__(self, codes: Any, cardinalities: Any, feature_names: list | None = None,
                 encoder: Any = None) -> None:
        names = None if feature_names is None else [str(n) for n in feature_names]
        self.codes, self.cardinalities = check_encoded(codes, cardinalities, names)
        if names is not None and len(names) != self.codes.shape[1]:
            raise ValueError(f"Encoded has {len(names)} feature names for {self.codes.shape[1]} columns")
        self.feature_names = names
        self.encoder = encoder

    @classmethod
    def _trusted(cls, codes: np.ndarray, cardinalities: np.ndarray, feature_names: list | None = None,
                 encoder: Any = None) -> Encoded:
        """An ``Encoded`` of codes that tensorprob made itself (compact, in range): not checked again."""
        out = cls.__new__(cls)
        out.codes, out.cardinalities = codes, np.asarray(cardinalities, dtype=np.int64)
        out.feature_names, out.encoder = feature_names, encoder
        return out

    def checked(self) -> Encoded:
        """This object with its codes checked again (an entry point's check; the arrays may have changed).

        Returns
        -------
        Encoded
            The same codes (in their compact dtype) and cardinalities, checked.
        """
        codes, cards = check_encoded(self.codes, self.cardinalities, self.feature_names)
        return Encoded._trusted(codes, cards, self.feature_names, self.encoder)

    @property
    def discretized(self) -> list:
        """Names of the columns that were discretized (continuous), as ``encoder.discretized_``."""
        return [] if self.encoder is None else list(getattr(self.encoder, "discretized_", []))

    # -- the array of codes --------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return self.codes.shape

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> np.dtype:
        return self.codes.dtype

    def __len__(self) -> int:
        return self.codes.shape[0]

    def __iter__(self):
        return iter(self.codes)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.codes if dtype is None else self.codes.astype(dtype)
        return out.copy() if copy else out

    def __getitem__(self, key: Any) -> Any:
        """Rows (``enc[rows]``, ``enc[rows, ...]``) as an ``Encoded``; anything else as the array's item."""
        rows = key[0] if isinstance(key, tuple) and len(key) == 2 and key[1] is Ellipsis else key
        if isinstance(key, tuple) and rows is key:
            return self.codes[key]
        if isinstance(rows, (int, np.integer)):
            return self.codes[rows]
        return Encoded._trusted(self.codes[rows], self.cardinalities, self.feature_names, self.encoder)

    def __repr__(self) -> str:
        names = "" if self.feature_names is None else f", feature_names={self.feature_names[:5]}" + (
            "..." if len(self.feature_names) > 5 else "")
        return (f"Encoded(codes of shape {self.codes.shape}, cardinalities={self.cardinalities.tolist()[:10]}"
                f"{'...' if self.cardinalities.size > 10 else ''}{names})")

    def __getstate__(self) -> tuple:
        return self.codes, self.cardinalities, self.feature_names, self.encoder

    def __setstate__(self, state: tuple) -> None:
        self.codes, self.cardinalities, self.feature_names, self.encoder = state
