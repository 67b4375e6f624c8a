"""Raw data (NumPy, torch, pandas; any dtype) to integer codes, cardinalities and names."""
from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any, ClassVar, NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _check_feature_names, check_is_fitted

from .._config import get_config
from .._docstrings import fill_doc
from ._discretize import Discretizer

#: Docstring fragments of :class:`Encoder` and :func:`encode` (also used by the selectors, which
#: encode their input with an :class:`Encoder`).
ENCODING_FRAGMENTS: dict[str, str] = {
    "coding_rules": """\
Strings, bools, pandas categoricals and integer columns with at most ``max_categories``
distinct values are categorical: their sorted distinct values get codes ``0..I-1``.
Floats, and integer columns with more distinct values, are continuous and go through
``discretizer``. ``None``/``NaN`` (and ``missing_code`` in integer columns) become -1.""",
    "X_columns": """\
X : ndarray, torch.Tensor or pandas.DataFrame of shape (n_samples, n_features)
    Raw columns of any dtype (numbers, strings, bools, categoricals); ``None``/``NaN`` are
    missing.""",
    "y_supervised": """\
y : array-like of shape (n_samples,), default=None
    Class labels, used only by a supervised discretizer (``"mdl"``).""",
    "feature_names": """\
feature_names : sequence of str, default=None
    Names to use instead of the DataFrame columns / ``x0, x1, ...``.""",
}
# the parameters of Encoder.fit and Encoder.fit_transform
ENCODING_FRAGMENTS["fit_params"] = "\n".join(ENCODING_FRAGMENTS[name] for name in ("X_columns", "y_supervised",
                                                                                  "feature_names"))
ENCODING_FRAGMENTS |= {
    "discretizer": """\
discretizer : {"uniform", "quantile", "mdl"}, object with ``fit_transform`` or None, default="uniform"
    How continuous columns become codes: a :class:`~tensorprob.Discretizer` strategy
    (equal-width, equal-frequency or supervised MDL bins), or a transformer such as
    scikit-learn's ``KBinsDiscretizer`` (fitted on a clone). ``None`` makes a continuous
    column an error.""",
    "n_bins": """\
n_bins : int, default=5
    Number of bins of the built-in discretizers (the largest number for ``"mdl"``).""",
    "max_categories": """\
max_categories : int or None, default=None
    Largest alphabet of a categorical column (None: ``get_config()["max_categories"]``, 64).""",
    "missing_code": """\
missing_code : int or None, default=-1
    Value that marks a missing entry in integer columns (the code convention); None for none.""",
}


def _is_missing(values: np.ndarray) -> np.ndarray:
    """Boolean mask of None / NaN / pandas NA entries of a 1-D array of any dtype."""
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind == "O":
        try:
            import pandas as pd  # vectorized when pandas is installed
        except ImportError:  # pragma: no cover - pandas comes with the data extras
            return np.fromiter((v is None or (isinstance(v, float) and v != v) or _is_pd_na(v) for v in values),
                               dtype=bool, count=values.size)
        return np.asarray(pd.isna(values), dtype=bool)
    return np.zeros(values.shape, dtype=bool)


def _is_pd_na(v: Any) -> bool:
    t = type(v).__name__
    return t in ("NAType", "NaTType")


def _columns(X: Any) -> tuple[list[np.ndarray], list[str] | None, list[bool]]:
    """Split X into 1-D column arrays; return names (when X has them) and pandas categorical flags."""
    if hasattr(X, "iloc") and hasattr(X, "columns"):  # pandas DataFrame
        import pandas as pd
        from pandas.api import types as pdt

        cols, cat = [], []
        for name in X.columns:
            s = X[name]
            dt = s.dtype
            categorical = isinstance(dt, pd.CategoricalDtype)
            text_or_bool = isinstance(dt, (pd.StringDtype, pd.BooleanDtype))
            # pandas' nullable numbers (Int64, UInt8, Float64, ...): numbers with pd.NA
            nullable_number = pdt.is_extension_array_dtype(dt) and not categorical and not text_or_bool and (
                pdt.is_integer_dtype(dt) or pdt.is_float_dtype(dt))
            is_cat = categorical or text_or_bool or pdt.is_object_dtype(dt)
            if categorical or text_or_bool:
                arr = np.asarray(s.astype(object))
            elif nullable_number:
                arr = np.asarray(s.astype(object))
                is_cat = False
                miss = _is_missing(arr)
                vals = np.full(arr.shape, np.nan)
                vals[~miss] = arr[~miss].astype(np.float64)
                arr = vals.astype(np.int64) if pdt.is_integer_dtype(dt) and not miss.any() else vals
            else:
                arr = np.asarray(s)
            cols.append(arr)
            cat.append(is_cat)
        return cols, [str(c) for c in X.columns], cat
    if hasattr(X, "iloc"):  # pandas Series
        return _columns(X.to_frame())
    if hasattr(X, "detach"):  # torch tensor
        X = X.detach().cpu().numpy()
    X = np.asarray(X)
    if X.ndim == 1:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got a 1-D array of shape {X.shape}; "
                         "Reshape your data with X.reshape(-1, 1) for a single feature")
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    return [X[:, j] for j in range(X.shape[1])], None, [False] * X.shape[1]


def _numeric_view(col: np.ndarray) -> np.ndarray | None:
    """Float/int view of an object column whose non-missing entries are all real numbers, else None."""
    if col.dtype.kind != "O":
        return None
    miss = _is_missing(col)
    vals = col[~miss]
    if not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
               for v in vals):
        return None
    if all(isinstance(v, (int, np.integer)) for v in vals) and not miss.any():
        return col.astype(np.int64)
    out = np.full(col.shape, np.nan)
    out[~miss] = vals.astype(np.float64)
    return out


@fill_doc(**ENCODING_FRAGMENTS)
class Encoder(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Encoder of raw columns (NumPy, torch, pandas; any dtype) as integer codes (a scikit-learn transformer).

    %(coding_rules)s

    Parameters
    ----------
    %(discretizer)s
    %(n_bins)s
    %(max_categories)s
    %(missing_code)s

    Attributes
    ----------
    feature_names_ : list of str
        Column names (DataFrame columns, or ``x0, x1, ...``).
    cardinalities_ : ndarray of int64
        Alphabet size of every column.
    kinds_ : list of {"categorical", "codes", "discretized"}
        Kind of every column: categorical values, integer codes used as they are, or
        continuous values binned by the discretizer.
    categories_ : list of ndarray or None
        For categorical and code columns, the value of each code (sorted).
    discretizer_ : Discretizer or object or None
        Fitted discretizer of the continuous columns (in the order they appear).
    n_features_in_ : int
        Number of columns seen by ``fit``.
    feature_names_in_ : ndarray of str
        Only when X has string column names.

    See Also
    --------
    encode : The function form, returning codes, cardinalities, names and the encoder.
    Discretizer : The discretizer of continuous columns.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorprob import Encoder
    >>> X = np.array([["a", 0.1], ["b", 0.9], [None, 0.5]], dtype=object)
    >>> enc = Encoder(n_bins=2).fit(X)
    >>> enc.transform(X).tolist(), enc.kinds_
    ([[0, 0], [1, 1], [-1, 1]], ['categorical', 'discretized'])
    """

    _parameter_constraints: ClassVar[dict] = {
        "discretizer": [StrOptions({"uniform", "quantile", "mdl"}), HasMethods(["fit_transform"]), None],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "max_categories": [Interval(Integral, 1, None, closed="left"), None],
        "missing_code": [Integral, None],
    }

    def __init__(self, discretizer: Any = "uniform", n_bins: int = 5, max_categories: int | None = None,
                 missing_code: int | None = -1) -> None:
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.max_categories = max_categories
        self.missing_code = missing_code

    @fill_doc(**ENCODING_FRAGMENTS)
    @_fit_context(prefer_skip_nested_validation=False)  # a user discretizer is validated when it fits
    def fit(self, X: Any, y: Any = None, feature_names: Sequence[str] | None = None) -> Encoder:
        """Learn the categories and bins of every column.

        Parameters
        ----------
        %(fit_params)s

        Returns
        -------
        self : Encoder
            The fitted encoder (``kinds_``, ``categories_``, ``cardinalities_``, ...).
        """
        self._fit(X, y, feature_names)
        return self

    @fill_doc(**ENCODING_FRAGMENTS)
    @_fit_context(prefer_skip_nested_validation=False)
    def fit_transform(self, X: Any, y: Any = None, feature_names: Sequence[str] | None = None) -> np.ndarray:
        """Fit, then return the codes of X (computed once).

        Parameters
        ----------
        %(fit_params)s

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Codes in the smallest signed integer dtype that holds them, -1 for missing.
        """
        return self._fit(X, y, feature_names)

    # -- fitting -------------------------------------------------------------------------
    def _fit(self, X: Any, y: Any, feature_names: Sequence[str] | None) -> np.ndarray:
        _check_sparse(self, X)
        cols, names, pandas_cat = _columns(X)
        n_rows = cols[0].shape[0] if cols else int(np.shape(X)[0])
        if not cols:
            raise ValueError(f"0 feature(s) (shape=({n_rows}, 0)) while a minimum of 1 is required.")
        if n_rows == 0:
            raise ValueError(f"X is empty ({n_rows} rows, {len(cols)} columns)")
        _check_feature_names(self, X, reset=True)
        self.n_features_in_ = len(cols)
        if feature_names is not None:
            if len(feature_names) != len(cols):
                raise ValueError(f"feature_names has {len(feature_names)} entries but X has {len(cols)} columns")
            names = [str(n) for n in feature_names]
        if names is None:
            names = [f"x{j}" for j in range(len(cols))]
        limit = self.max_categories if self.max_categories is not None else get_config()["max_categories"]
        kinds: list[str] = []
        cats: list[np.ndarray | None] = []
        codes = np.empty((n_rows, len(cols)), dtype=np.int64)
        cont_idx: list[int] = []
        for j, col in enumerate(cols):
            if col.dtype.kind == "O" and not pandas_cat[j]:
                num = _numeric_view(col)
                col = col if num is None else num
            elif col.dtype.kind == "O":
                num = _numeric_view(col)
                if num is not None and num.dtype.kind == "f":
                    col = num  # a pandas object column holding floats: continuous
            kind = col.dtype.kind
            if kind in "iu":
                miss = (col == self.missing_code) if self.missing_code is not None else np.zeros(n_rows, bool)
                uniq = np.unique(col[~miss])
                if uniq.size <= limit:
                    kinds.append("codes")
                    cats.append(uniq)
                    codes[:, j] = np.where(miss, -1, np.searchsorted(uniq, col))
                else:
                    kinds.append("discretized")
                    cats.append(None)
                    cols[j] = np.where(miss, np.nan, col.astype(np.float64))
                    cont_idx.append(j)
            elif kind in "fc":
                if kind == "c":
                    raise ValueError(f"Complex data not supported: column {names[j]!r} is complex-valued; "
                                     "tensorprob handles real or categorical data")
                kinds.append("discretized")
                cats.append(None)
                cols[j] = col.astype(np.float64)
                cont_idx.append(j)
            elif kind in "bOUSM" or pandas_cat[j]:
                miss = _is_missing(col) if kind == "O" else np.zeros(n_rows, bool)
                vals = col[~miss]
                try:
                    uniq, inv = np.unique(vals, return_inverse=True)
                except TypeError:  # mixed types: order by their text
                    vals = vals.astype(str)
                    uniq, inv = np.unique(vals, return_inverse=True)
                if uniq.size > limit:
                    raise ValueError(
                        f"column {names[j]!r} has {uniq.size} categories, above max_categories={limit}; "
                        "raise the limit with tensorprob.config_context(max_categories=...) or pass max_categories"
                    )
                kinds.append("categorical")
                cats.append(uniq)
                codes[:, j] = -1
                codes[~miss, j] = inv.ravel()
            else:
                raise TypeError(f"column {names[j]!r} has unsupported dtype {col.dtype}")
        self.discretizer_ = None
        if cont_idx:
            if self.discretizer is None:
                raise ValueError(
                    f"column {names[cont_idx[0]]!r} is continuous ({len(cont_idx)} continuous column(s) in all) but "
                    "discretizer=None; pass discretizer='uniform'|'quantile'|'mdl' or encode the data first"
                )
            cont = np.stack([cols[j] for j in cont_idx], axis=1)
            if np.isinf(cont).any():
                bad = names[cont_idx[int(np.flatnonzero(np.isinf(cont).any(0))[0])]]
                raise ValueError(f"column {bad!r} contains infinite values")
            if isinstance(self.discretizer, str):
                disc = Discretizer(n_bins=self.n_bins, strategy=self.discretizer)
            else:  # a user object: fit a copy, never the caller's instance
                from sklearn.base import clone

                disc = clone(self.discretizer) if hasattr(self.discretizer, "get_params") else self.discretizer
            out = np.asarray(disc.fit_transform(cont, y) if isinstance(disc, Discretizer) else disc.fit_transform(cont))
            codes[:, cont_idx] = out.astype(np.int64)
            self.discretizer_ = disc
        cards = np.empty(len(cols), dtype=np.int64)
        dj = 0
        for j in range(len(cols)):
            if kinds[j] == "discretized":
                if isinstance(self.discretizer_, Discretizer):
                    cards[j] = self.discretizer_.n_bins_[dj]
                else:
                    cards[j] = max(1, int(codes[:, j].max()) + 1)
                dj += 1
            else:
                cards[j] = max(1, len(cats[j]))
        self.feature_names_ = list(names)
        self.kinds_ = kinds
        self.categories_ = cats
        self.cardinalities_ = cards
        self._cont_idx = cont_idx
        return _compact(codes, cards)

    @fill_doc(**ENCODING_FRAGMENTS)
    def transform(self, X: Any) -> np.ndarray:
        """Encode new data with the fitted categories and bins.

        Parameters
        ----------
        %(X_columns)s
            The columns must match those seen by ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            Codes, -1 for missing.

        Raises
        ------
        ValueError
            On a category never seen when fitting, or a different number of columns.
        """
        check_is_fitted(self)
        _check_sparse(self, X)
        cols, _, _ = _columns(X)
        _check_feature_names(self, X, reset=False)
        if len(cols) != self.n_features_in_:
            raise ValueError(f"X has {len(cols)} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        n_rows = cols[0].shape[0]
        codes = np.empty((n_rows, len(cols)), dtype=np.int64)
        for j, (kind, cat) in enumerate(zip(self.kinds_, self.categories_)):
            if kind == "discretized":
                continue
            col = cols[j]
            if kind == "codes":
                num = _numeric_view(col)
                col = col if num is None else num
                miss = (col == self.missing_code) if self.missing_code is not None else np.zeros(n_rows, bool)
                if col.dtype.kind == "f":
                    miss |= np.isnan(col)
            else:
                miss = _is_missing(col) if col.dtype.kind == "O" else np.zeros(n_rows, bool)
            vals = col[~miss]
            try:
                pos = np.searchsorted(cat, vals).clip(0, len(cat) - 1)
                ok = cat[pos] == vals
            except TypeError:
                cs = cat.astype(str)
                vs = vals.astype(str)
                pos = np.searchsorted(cs, vs).clip(0, len(cs) - 1)
                ok = cs[pos] == vs
            if not np.all(ok):
                raise ValueError(f"column {self.feature_names_[j]!r} has a value not seen when fitting: "
                                 f"{vals[~np.asarray(ok)][0]!r}")
            codes[:, j] = -1
            codes[~miss, j] = pos
        if self._cont_idx:
            cont = np.stack([np.asarray(cols[j], dtype=np.float64) for j in self._cont_idx], axis=1)
            codes[:, self._cont_idx] = np.asarray(self.discretizer_.transform(cont)).astype(np.int64)
        return _compact(codes, self.cardinalities_)


    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN / None are missing entries (code -1)
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.transformer_tags.preserves_dtype = []  # the output is integer codes
        return tags


def _check_sparse(est: Any, X: Any) -> None:
    import scipy.sparse as sp

    if sp.issparse(X):
        raise TypeError(f"{type(est).__name__} does not accept sparse input: pass a dense array (X.toarray())")


def _compact(codes: np.ndarray, cards: np.ndarray) -> np.ndarray:
    """Store codes in the smallest signed integer dtype that holds every cardinality."""
    top = int(cards.max()) if cards.size else 1
    for dt in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dt).max:
            return codes.astype(dt)
    return codes


class Encoded(NamedTuple):
    """Result of :func:`encode`: the codes, their alphabet sizes and names, and the encoder.

    Parameters
    ----------
    codes : ndarray of shape (n_samples, n_features)
        Integer codes ``0..I_n-1`` of every column n, -1 for missing.
    cardinalities : ndarray of shape (n_features,)
        Alphabet sizes ``I_n``.
    feature_names : list of str
        Column names (DataFrame columns, or ``x0, x1, ...``).
    encoder : Encoder
        The fitted :class:`Encoder`, whose ``transform`` encodes new data the same way.
    """

    codes: np.ndarray
    cardinalities: np.ndarray
    feature_names: list
    encoder: Encoder


@fill_doc(**ENCODING_FRAGMENTS)
def encode(X: Any, y: Any = None, *, discretizer: Any = "uniform", n_bins: int = 5,
           max_categories: int | None = None, feature_names: Sequence[str] | None = None,
           missing_code: int | None = -1) -> Encoded:
    """Encode raw data of any dtype as integer codes.

    %(coding_rules)s

    Parameters
    ----------
    %(X_columns)s
    %(y_supervised)s
    %(discretizer)s
    %(n_bins)s
    %(max_categories)s
    %(feature_names)s
    %(missing_code)s

    Returns
    -------
    Encoded
        Named tuple ``(codes, cardinalities, feature_names, encoder)``.

    Examples
    --------
    >>> import numpy as np, tensorprob
    >>> enc = tensorprob.encode(np.array([["a", True], ["b", False], [None, True]], dtype=object))
    >>> enc.codes.tolist(), enc.cardinalities.tolist()
    ([[0, 1], [1, 0], [-1, 1]], [2, 2])
    """
    enc = Encoder(discretizer=discretizer, n_bins=n_bins, max_categories=max_categories, missing_code=missing_code)
    codes = enc.fit_transform(X, y, feature_names)
    return Encoded(codes, enc.cardinalities_.copy(), list(enc.feature_names_), enc)


def encode_labels(y: Any, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Encode class labels as codes ``0..C-1``.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, 1)
        Labels of any type (NumPy, torch, pandas); no missing value.
    name : str, default="y"
        Name used in error messages.

    Returns
    -------
    codes : ndarray of shape (n_samples,), int64
        The code ``0..C-1`` of every label.
    classes : ndarray of shape (C,)
        The label of each code, sorted.

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, is empty or holds missing values.

    Examples
    --------
    >>> from tensorprob import encode_labels
    >>> codes, classes = encode_labels(["b", "a", "b"])
    >>> codes.tolist(), classes.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    if hasattr(y, "detach"):
        y = y.detach().cpu().numpy()
    if hasattr(y, "iloc"):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n_samples,), got shape {y.shape}")
    if y.size == 0:
        raise ValueError(f"{name} is empty")
    miss = _is_missing(y) if y.dtype.kind in "fO" else np.zeros(y.shape, bool)
    if miss.any():
        raise ValueError(f"{name} contains {int(miss.sum())} missing label(s) (NaN/None), first at position "
                         f"{int(np.flatnonzero(miss)[0])}")
    try:
        classes, codes = np.unique(y, return_inverse=True)
    except TypeError:
        classes, codes = np.unique(y.astype(str), return_inverse=True)
    return codes.ravel().astype(np.int64), classes
