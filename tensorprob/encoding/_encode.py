"""Raw data (NumPy, torch, pandas; any dtype) to integer codes, cardinalities and names: the :class:`Encoder`.

The encoding of a table is decided once (:mod:`._summary`): its rows are summarized, the
summaries of row chunks or of the ranks of a process group are combined, and one decision
gives the kind, categories and cut points of every column. :meth:`Encoder.fit` is the case
of one summary; :func:`~tensorprob._io.learn_encoding` (row chunks) and ``distributed=True``
combine several. The codes are returned as an :class:`Encoded`.
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _check_feature_names, check_is_fitted

from .._config import get_config
from .._docstrings import fill_doc
from .._params import CachedParamNames
from ._codes import Encoded, _compact, _compact_dtype, check_encoded
from ._columns import (
    _columns,
    _default_names,
    _is_missing,
    _key,
    _missing_keys,
    _numeric_view,
    _object_categories,
    _outside_stacklevel,
    _preview,
    _unhashable,
    _user_missing,
)
from ._discretize import Discretizer
from ._labels import check_classification_target, encode_labels
from ._numbers import sample_cap
from ._summary import Decision, Read, Summary, decide, gather, row_limit, summarize

#: Docstring fragments of :class:`Encoder` and :func:`encode` (also used by the selectors, which
#: encode their input with an :class:`Encoder`).
ENCODING_FRAGMENTS: dict[str, str] = {
    "coding_rules": """\
Every column is categorical by value unless it is genuinely continuous: strings, bools,
pandas categoricals, integer columns (NumPy or pandas' nullable ``Int*``/``UInt*``) and float
columns whose finite values are all whole numbers, with at most ``max_categories`` distinct
values, get the codes ``0..I-1`` of their sorted distinct values (in a float array, as opposed
to a DataFrame, only when every column qualifies: an array is one kind of measurement). In an
object column values of different types stay different categories (``1``, ``"1"`` and
``True`` are three). Only floats with non-integral values, and numeric columns with more
distinct values, are continuous and go through ``discretizer``; ``+inf`` and ``-inf`` fall
in their column's last and first bin (in a column of whole numbers they are categories).
Missing entries (``None``, ``NaN``, ``pandas.NA``/``NaT`` and the ``missing_values``) get the
code -1; a raw ``-1`` is a value like any other. An :class:`Encoded` object is taken as
codes already (-1 missing); a plain array is always raw data.""",
    "X_columns": """\
X : ndarray, torch.Tensor, pandas.DataFrame or Encoded of shape (n_samples, n_features)
    Raw columns of any dtype (numbers, strings, bools, categoricals); ``None``/``NaN`` are
    missing. An :class:`Encoded` object (what :func:`encode` and :meth:`Encoder.transform`
    return) is used as its codes.""",
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
    column an error. A numeric column of whole numbers keeps its values as categories only
    while the rows suffice to estimate them: at most ``max(n_bins, floor(sqrt(M / (C m))))``
    values for M rows, C classes and ``m = get_config()["min_cell_count"]`` (default 5), so
    that a table of two such columns and the class holds ``m`` rows per cell on average; a
    column with more values is binned (the rule of ``max_categories="auto"`` of
    :class:`~tensorprob.Encoder`; ``discretizer=None`` bins nothing and keeps up to
    ``max_categories`` values).""",
    "discretizer_auto": """\
discretizer : {"auto", "uniform", "quantile", "mdl"}, object with ``fit_transform`` or None, default="auto"
    How continuous columns become codes: a :class:`~tensorprob.Discretizer` strategy
    (equal-width, equal-frequency or supervised MDL bins), or a transformer such as
    scikit-learn's ``KBinsDiscretizer`` (fitted on a clone). ``"auto"`` is ``"uniform"``
    with a warning naming the discretized columns (pass a strategy to silence it).
    ``None`` makes a continuous column an error.""",
    "n_bins": """\
n_bins : int, default=5
    Number of bins of the built-in discretizers (the largest number for ``"mdl"``).""",
    "max_categories": """\
max_categories : int, "auto" or None, default=None
    Largest alphabet of a categorical column, and the most distinct values a numeric column
    of whole numbers keeps as categories (None: ``get_config()["max_categories"]``, 64).
    ``"auto"``: that limit for the other columns, and for the numeric ones the limit the rows
    allow, ``max(n_bins, floor(sqrt(M / (C m))))`` values for M rows, C classes of ``y`` (1
    without ``y``) and ``m = get_config()["min_cell_count"]`` (default 5): a table of two such
    columns and the class then holds ``m`` rows per cell on average (the selectors' rule;
    ``m = 0`` turns it off; with ``discretizer=None``, which bins nothing, the limit is
    ``max_categories``).""",
    "distributed_encoding": """\
distributed : bool, default=False
    X holds this rank's rows of data spread over an initialized ``torch.distributed`` process
    group (zero rows allowed): every rank gets the categories, cardinalities and bin edges of
    all the rows, so all ranks encode identically. Columns whose number, names or dtype kinds
    differ across ranks raise a ``ValueError`` naming the rank. Every rank summarizes its rows
    (distinct values, ranges, and for equal-frequency and MDL bins a sample of the finite
    values with their labels) and the summaries are combined by one all-gather; a user
    discretizer object is refused (``NotImplementedError``).""",
    "missing_values": """\
missing_values : scalar, sequence or None, default=None
    Further values that mark a missing entry (for example ``"?"`` or ``-999``), besides
    ``None``, ``NaN`` and ``pandas.NA``/``NaT``. Matched by type and value: ``-1`` marks the
    number -1, not the string ``"-1"``.""",
}


_BUILTIN = ("auto", "uniform", "quantile", "mdl")


@fill_doc(**ENCODING_FRAGMENTS)
class Encoder(OneToOneFeatureMixin, TransformerMixin, CachedParamNames, BaseEstimator):
    """Encoder of raw columns (NumPy, torch, pandas; any dtype) as integer codes (a scikit-learn transformer).

    %(coding_rules)s

    Parameters
    ----------
    %(discretizer_auto)s
    %(n_bins)s
    %(max_categories)s
    %(missing_values)s
    %(distributed_encoding)s

    Attributes
    ----------
    feature_names_ : list of str
        Column names (DataFrame columns, or ``x0, x1, ...``).
    cardinalities_ : ndarray of int64
        Alphabet size of every column.
    kinds_ : list of {"categorical", "codes", "discretized"}
        Kind of every column: categorical by value, codes of an :class:`Encoded` input used as
        they are, or continuous values binned by the discretizer.
    categories_ : list of ndarray or None
        For categorical and code columns, the value of each code (sorted).
    discretized_ : list of str
        Names of the columns that were discretized (continuous), in order.
    discretizer_ : Discretizer or object or None
        Fitted discretizer of the continuous columns (in the order they appear).
    n_features_in_ : int
        Number of columns seen by ``fit``.
    feature_names_in_ : ndarray of str
        Only when every column name of X is a string (scikit-learn's rule); other names
        (pandas' default ``0, 1, ...``) match by position.

    See Also
    --------
    encode : The function form, returning an :class:`Encoded`.
    Discretizer : The discretizer of continuous columns.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorprob import Encoder
    >>> X = np.array([["a", 0.1], ["b", 0.9], [None, 0.5]], dtype=object)
    >>> enc = Encoder(discretizer="uniform", n_bins=2).fit(X)
    >>> enc.transform(X).codes.tolist(), enc.kinds_, enc.discretized_
    ([[0, 0], [1, 1], [-1, 1]], ['categorical', 'discretized'], ['x1'])
    """

    _parameter_constraints: ClassVar[dict] = {
        "discretizer": [StrOptions(set(_BUILTIN)), HasMethods(["fit_transform"]), None],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "max_categories": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "missing_values": "no_validation",  # any value, or a sequence of values
        "distributed": ["boolean"],
    }

    def __init__(self, discretizer: Any = "auto", n_bins: int = 5, max_categories: int | str | None = None,
                 missing_values: Any = None, distributed: bool = False) -> None:
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.max_categories = max_categories
        self.missing_values = missing_values
        self.distributed = distributed

    @property
    def categories_(self) -> list[np.ndarray | None]:
        """For categorical and code columns, the value of each code (sorted); None for the others."""
        cats = self.__dict__.get("_categories")
        if cats is None:
            raise AttributeError(f"{type(self).__name__} has no attribute 'categories_' (not fitted)")
        if not isinstance(cats, list):  # an array coded at once keeps its categories packed until read
            cats = self._categories = cats.tolist()
        return cats

    @categories_.setter
    def categories_(self, value: Any) -> None:
        self._categories = value

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
    def fit_transform(self, X: Any, y: Any = None, feature_names: Sequence[str] | None = None) -> Encoded:
        """Fit, then return the codes of X (computed once).

        Parameters
        ----------
        %(fit_params)s

        Returns
        -------
        Encoded
            The codes (in the smallest signed integer dtype that holds them, -1 for missing),
            the cardinalities, the names and this encoder.
        """
        return self._encoded(self._fit(X, y, feature_names))

    def _encoded(self, codes: np.ndarray) -> Encoded:
        return Encoded._trusted(codes, self.cardinalities_.copy(), list(self.feature_names_), self)

    # -- fitting -------------------------------------------------------------------------
    def _limit(self) -> int:
        """``max_categories`` as a number (the configured one for None and "auto")."""
        return get_config()["max_categories"] if self.max_categories in (None, "auto") else int(self.max_categories)

    def _strategy(self) -> str | None:
        """The built-in strategy of the discretizer ("uniform" for "auto"), or None for a user object or None."""
        if not isinstance(self.discretizer, str):
            return None
        return "uniform" if self.discretizer == "auto" else self.discretizer

    def _work_dtype(self, limit: int) -> type:
        # every alphabet is at most max(limit, n_bins) values, except a user discretizer's
        narrow = isinstance(self.discretizer, str) or self.discretizer is None
        return np.int16 if narrow and max(limit, self.n_bins) < 2**15 else np.int32

    def _fit(self, X: Any, y: Any, feature_names: Sequence[str] | None, checked: bool = False) -> np.ndarray:
        """Fit; return the codes of X (an array in its compact dtype). The selectors call this directly.

        ``checked``: X is an ``Encoded`` its caller has just checked (not scanned a second time).
        """
        from .. import _distributed

        dist = _distributed.active(self.distributed)
        if isinstance(X, Encoded):
            if dist:
                return _distributed.agree(lambda: self._fit_encoded(X, feature_names, dist, checked))
            return self._fit_encoded(X, feature_names, dist, checked)
        if dist and not (isinstance(self.discretizer, str) or self.discretizer is None):
            raise NotImplementedError("distributed=True fits the built-in discretizers ('uniform', 'quantile', "
                                      "'mdl') across ranks; a user discretizer object cannot be fitted on rows "
                                      "spread over processes: discretize the columns first")
        limit = self._limit()
        options = dict(limit=limit, miss_keys=_missing_keys(self.missing_values),
                       sample=self._strategy() in ("quantile", "mdl"), classes=self.max_categories == "auto",
                       work=self._work_dtype(limit))
        if dist:
            read, summary = self._summarize_ranks(X, y, options)
        else:
            _check_sparse(self, X)
            read = summarize(X, y, **options)
            summary = read.summary
            if not summary.n_features:
                raise ValueError(f"0 feature(s) (shape=({summary.n_rows}, 0)) while a minimum of 1 is required.")
            if summary.n_rows == 0:
                raise ValueError(f"X is empty ({summary.n_rows} rows, {summary.n_features} columns)")
            if type(X) is np.ndarray:  # scikit-learn's check for an array without names, without its 20 us
                self.__dict__.pop("feature_names_in_", None)
            else:
                _check_feature_names(self, X, reset=True)
        decision = self._from_summary(summary, feature_names)
        return self._code_read(read, decision, y)

    def _summarize_ranks(self, X: Any, y: Any, options: dict) -> tuple[Read, Summary]:
        """This rank's read of X and the summary of all ranks' rows (every rank checks its own first)."""
        from .. import _distributed

        def local() -> Read:
            _check_sparse(self, X)
            read = summarize(X, y, **options)
            if not read.summary.n_features:
                raise ValueError("0 feature(s) while a minimum of 1 is required.")
            _check_feature_names(self, X, reset=True)
            return read

        read = _distributed.agree(local)
        _distributed.check_same("columns (number, names, dtype kinds)", read.summary.signature())
        budget = get_config()["memory_budget"]
        summary = gather(read.summary, options["limit"], sample_cap(read.summary.n_features, budget))
        if summary.n_rows == 0:
            raise ValueError(f"X is empty on every rank (0 rows, {summary.n_features} columns)")
        return read, summary

    def _from_summary(self, summary: Summary, feature_names: Sequence[str] | None = None) -> Decision:
        """Decide the encoding of the rows ``summary`` describes and set the fitted attributes (but a user
        discretizer's, fitted on the data by :meth:`_code_read`)."""
        N = summary.n_features
        if feature_names is not None:
            if len(feature_names) != N:
                raise ValueError(f"feature_names has {len(feature_names)} entries but X has {N} columns")
            names = [str(n) for n in feature_names]
        else:
            names = [str(c) for c in summary.labels] if summary.labels is not None else _default_names(N)
        limit = self._limit()
        allowed = limit
        if self.max_categories == "auto" and self.discretizer is not None:  # None: nothing to bin with
            n_classes = 1 if summary.classes is None else max(1, int(summary.classes.size))
            allowed = row_limit(summary.n_rows, n_classes, self.n_bins, limit, get_config()["min_cell_count"])
        decision = decide(summary, names, limit=limit, row_limit=allowed)
        cont = decision.continuous
        self.n_features_in_ = N
        self.feature_names_ = names
        self.kinds_ = decision.kinds
        self.categories_ = decision.categories
        self.discretized_ = [names[j] for j in cont]
        self._cont_idx = list(cont)
        self._lookup = decision.lookup
        self.discretizer_ = None
        if isinstance(decision.categories, list):
            cards = np.fromiter((0 if c is None else len(c) for c in decision.categories), dtype=np.int64, count=N)
        else:  # packed categories of an integer array coded whole
            cards = decision.categories.counts.astype(np.int64)
        np.maximum(cards, 1, out=cards)
        if cont:
            if self.discretizer is None:
                raise ValueError(
                    f"column {names[cont[0]]!r} is continuous ({len(cont)} continuous column(s) in all) but "
                    "discretizer=None; pass discretizer='uniform'|'quantile'|'mdl' or encode the data first")
            strategy = self._strategy()
            if strategy is not None:
                if strategy == "mdl" and summary.numbers.samples is not None and any(
                        summary.numbers.samples[j].labels is None for j in cont):
                    raise ValueError("strategy='mdl' is supervised: pass the class labels y")
                self.discretizer_ = Discretizer._of_summary(summary.numbers.take(cont), self.n_bins, strategy)
                cards[cont] = self.discretizer_.n_bins_
            if self.discretizer == "auto":
                warnings.warn(
                    f"{len(cont)} continuous column(s) discretized into {self.n_bins} equal-width bins: "
                    f"{_preview([names[j] for j in cont])}; pass discretizer='uniform' (or another strategy) "
                    "to silence this warning, or encode them yourself", UserWarning, stacklevel=_outside_stacklevel())
        self.cardinalities_ = cards
        return decision

    def _fit_encoded(self, X: Encoded, feature_names: Sequence[str] | None, dist: bool = False,
                     checked: bool = False) -> np.ndarray:
        if not checked:
            X = X.checked()
        if dist:
            from .. import _distributed

            _distributed.check_same("Encoded cardinalities", X.cardinalities.tolist())
        codes, cards = X.codes, X.cardinalities.copy()
        if feature_names is None:
            feature_names = X.feature_names
        # the default names are strings already (a str() of 10,000 of them is a share of a small fit)
        names = _default_names(codes.shape[1]) if feature_names is None else [str(n) for n in feature_names]
        if len(names) != codes.shape[1]:
            raise ValueError(f"feature_names has {len(names)} entries but X has {codes.shape[1]} columns")
        from ._small_ints import _Categories

        self.__dict__.pop("feature_names_in_", None)
        self.n_features_in_ = codes.shape[1]
        self.feature_names_ = names
        self.kinds_ = ["codes"] * codes.shape[1]
        self.categories_ = _Categories(np.arange(int(cards.sum()), dtype=np.int64)
                                       - np.repeat(np.cumsum(cards) - cards, cards), cards)  # 0 .. c - 1, cut when read
        self.discretized_ = []
        self.discretizer_ = None
        self.cardinalities_ = cards
        self._cont_idx = []
        self._lookup = [None] * codes.shape[1]
        return codes

    # -- coding --------------------------------------------------------------------------
    def _code_read(self, read: Read, decision: Decision, y: Any) -> np.ndarray:
        """The codes of the table that ``read`` read, with what the reading left (no second pass over a column)."""
        M, N = read.summary.n_rows, read.summary.n_features
        cards = self.cardinalities_
        if read.table is None and not decision.continuous and not isinstance(decision.categories, list):
            return _compact(read.fast[1], cards)  # an integer array coded whole, in memory
        codes = np.empty((M, N), dtype=self._work_dtype(self._limit()))
        cont = set(decision.continuous)
        fast_cats = None if read.fast is None else read.fast[0]
        for j in range(N):
            if j in cont:
                continue
            if fast_cats is not None and fast_cats[j] is not None:  # coded at once while reading
                local = fast_cats[j]
                col = read.fast[1][:, j]
                cats = self.categories_[j] if isinstance(decision.categories, list) else local
                codes[:, j] = col if len(cats) == len(local) else np.searchsorted(cats, local)[col]
                continue
            factor = read.factors[j]
            miss = read.missing[j]
            if factor is None:  # not read for codes (e.g. another rank held the values): code it now
                col = read.column(j)
                miss = _is_missing(col) | _user_missing(col, _missing_keys(self.missing_values))
                codes[:, j] = -1
                codes[~miss, j] = self._code_observed(j, col[~miss])
                continue
            lut = self._lut(j, factor)
            if miss is None:
                codes[:, j] = factor.inverse if lut is None else lut[factor.inverse]
            else:
                codes[:, j] = -1
                codes[~miss, j] = factor.inverse if lut is None else lut[factor.inverse]
        if cont:
            idx = decision.continuous
            if read.floats is not None:  # a float array: all its columns (one copy at most, row-major)
                values = read.floats if len(idx) == N else np.ascontiguousarray(read.floats[:, idx])
            else:
                values = np.stack([self._float_column(read, j) for j in idx], axis=1)
            if self.discretizer_ is None:  # a user discretizer object: fitted here, on a copy
                from sklearn.base import clone

                disc = clone(self.discretizer) if hasattr(self.discretizer, "get_params") else self.discretizer
                out = np.asarray(disc.fit_transform(values))
                self.discretizer_ = disc
                cards[idx] = np.maximum(1, out.max(0).astype(np.int64) + 1) if M else 1
            else:
                from ._discretize import _bin_codes

                out = _bin_codes(values, self.discretizer_.bin_edges_)
            if len(idx) == N:  # every column binned: the bin codes are the codes
                return _compact(out, cards)
            codes[:, idx] = out
        return _compact(codes, cards)

    def _float_column(self, read: Read, j: int) -> np.ndarray:
        """Column j as float64 with NaN for its missing entries."""
        col = read.column(j)
        miss = read.missing[j]
        if miss is None:
            miss = _is_missing(col) | _user_missing(col, _missing_keys(self.missing_values))
        return np.where(miss, np.nan, col.astype(np.float64))

    def _lut(self, j: int, factor: Any) -> np.ndarray | None:
        """The fitted code of each of a column's values as read (None: they are the fitted codes already)."""
        table = self._lookup[j]
        if table is not None:
            keys = factor.values if factor.keyed else [_key(v) for v in np.asarray(factor.values).tolist()]
            return np.asarray([table[kv] for kv in keys], dtype=np.int64)
        cats = self.categories_[j]
        if len(cats) == len(factor.values):
            return None
        return np.searchsorted(cats, factor.values)

    def _code_observed(self, j: int, vals: np.ndarray) -> np.ndarray:
        """The codes of the observed values ``vals`` of categorical column j.

        Raises
        ------
        ValueError
            A value the fit did not see.
        """
        table = self._lookup[j]
        if table is not None:
            try:
                inverse, keys, firsts = _object_categories(vals)
                known = [table.get(kv, -1) for kv in keys]
            except TypeError:  # unhashable: a value no fit can have seen (named below)
                known, firsts = None, [next(v for v in vals if _unhashable(v))]
            if known is None or -1 in known:
                v = firsts[0 if known is None else known.index(-1)]
                raise ValueError(f"column {self.feature_names_[j]!r} has a value not seen when fitting: {v!r}") from None
            return np.asarray(known, dtype=np.int64)[inverse]
        cat = self.categories_[j]
        try:
            pos = np.searchsorted(cat, vals).clip(0, max(len(cat) - 1, 0))
            ok = np.asarray(cat[pos] == vals, dtype=bool) if len(cat) else np.zeros(vals.shape[0], dtype=bool)
        except TypeError:
            ok = np.zeros(vals.shape[0], dtype=bool)
            pos = np.zeros(vals.shape[0], dtype=np.int64)
        if not np.all(ok):
            raise ValueError(f"column {self.feature_names_[j]!r} has a value not seen when fitting: "
                             f"{vals[~ok][0]!r}")
        return pos

    def _reorder(self, X: Any) -> Any:
        return match_columns(X, getattr(self, "feature_names_in_", None))

    @fill_doc(**ENCODING_FRAGMENTS)
    def transform(self, X: Any) -> Encoded:
        """Encode new data with the fitted categories and bins.

        Parameters
        ----------
        %(X_columns)s
            The columns must match those seen by ``fit``; DataFrame columns are matched by name
            (in any order) when they are strings, by position otherwise.

        Returns
        -------
        Encoded
            The codes (-1 for missing), the cardinalities, the names and this encoder: every
            model and selector takes them as codes.

        Raises
        ------
        ValueError
            On a category never seen when fitting, or other columns than when fitting; on an
            :class:`Encoded` of other cardinalities.
        """
        check_is_fitted(self)
        if isinstance(X, Encoded):  # codes already: never encoded again
            X = X.checked()
            if X.cardinalities.tolist() != self.cardinalities_.tolist():
                raise ValueError(f"X is an Encoded with cardinalities {_preview(X.cardinalities.tolist())}, but this "
                                 f"encoder's are {_preview(self.cardinalities_.tolist())}: codes of other data")
            return X if X.encoder is self else self._encoded(X.codes)
        return self._encoded(self._transform(X))

    def _transform(self, X: Any) -> np.ndarray:
        _check_sparse(self, X)
        X = self._reorder(X)
        table = _columns(X)
        _check_feature_names(self, X, reset=False)
        cols = table.cols
        if len(cols) != self.n_features_in_:
            raise ValueError(f"X has {len(cols)} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        n_rows = cols[0].shape[0]
        miss_keys = _missing_keys(self.missing_values)
        codes = np.empty((n_rows, len(cols)), dtype=np.int32)
        cont = {}
        for j, kind in enumerate(self.kinds_):
            col = cols[j]
            if col.dtype.kind == "O" and not table.pandas_cat[j] and (kind != "categorical" or self._lookup[j] is None):
                num = _numeric_view(col)
                col = col if num is None else num
            miss = _is_missing(col) | _user_missing(col, miss_keys)
            if kind == "discretized":
                cont[j] = np.where(miss, np.nan, np.asarray(col, dtype=np.float64))
                continue
            codes[:, j] = -1
            codes[~miss, j] = self._code_observed(j, col[~miss])
        if cont:
            values = np.stack([cont[j] for j in self._cont_idx], axis=1)
            if isinstance(self.discretizer_, Discretizer):  # its cut points, as at fit (any number of rows)
                from ._discretize import _bin_codes

                codes[:, self._cont_idx] = _bin_codes(values, self.discretizer_.bin_edges_)
            else:
                codes[:, self._cont_idx] = np.asarray(self.discretizer_.transform(values)).astype(np.int64)
        return _compact(codes, self.cardinalities_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN / None are missing entries (code -1)
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.transformer_tags.preserves_dtype = []  # the output is integer codes
        return tags


def match_columns(X: Any, fitted: Any) -> Any:
    """``X`` with the ``fitted`` columns in the fitted order, when X is a DataFrame (matched by name).

    Columns in another order are put in the fitted order (tensorprob matches DataFrame columns
    by name). Missing or unseen names raise scikit-learn's own error; duplicate names are an
    error; anything else (arrays, frames of a fit without string names) is returned as it is.
    """
    if fitted is None or not (hasattr(X, "iloc") and hasattr(X, "columns")):
        return X
    cols = [str(c) for c in X.columns]
    seen: set = set()
    dup = list(dict.fromkeys(c for c in cols if c in seen or seen.add(c)))
    if dup:
        raise ValueError(f"X has duplicate column names: {_preview(dup)}; every column needs its own name")
    fitted = [str(c) for c in fitted]
    if set(cols) != set(fitted):  # scikit-learn's message, naming the unseen and the missing columns
        _check_feature_names(_Fitted(np.asarray(fitted, dtype=object)), X, reset=False)
    if cols == fitted:
        return X
    position = {c: i for i, c in enumerate(cols)}
    return X.iloc[:, [position[c] for c in fitted]]


class _Fitted:
    """The fitted feature names alone, for scikit-learn's check of a DataFrame's names."""

    def __init__(self, names: np.ndarray) -> None:
        self.feature_names_in_ = names


def _check_sparse(est: Any, X: Any) -> None:
    import scipy.sparse as sp

    if sp.issparse(X):
        raise TypeError(f"{type(est).__name__} does not accept sparse input: pass a dense array (X.toarray())")


@fill_doc(**ENCODING_FRAGMENTS)
def encode(X: Any, y: Any = None, *, discretizer: Any = "auto", n_bins: int = 5,
           max_categories: int | str | None = None, feature_names: Sequence[str] | None = None,
           missing_values: Any = None, distributed: bool = False) -> Encoded:
    """Encode raw data of any dtype as integer codes.

    %(coding_rules)s

    Parameters
    ----------
    %(X_columns)s
    %(y_supervised)s
    %(discretizer_auto)s
    %(n_bins)s
    %(max_categories)s
    %(feature_names)s
    %(missing_values)s
    %(distributed_encoding)s

    Returns
    -------
    Encoded
        The codes, cardinalities, feature names and the fitted encoder; its ``discretized``
        lists the columns that were discretized.

    Examples
    --------
    >>> import numpy as np, tensorprob
    >>> enc = tensorprob.encode(np.array([["a", True], ["b", False], [None, True]], dtype=object))
    >>> enc.codes.tolist(), enc.cardinalities.tolist()
    ([[0, 1], [1, 0], [-1, 1]], [2, 2])
    >>> tensorprob.encode(np.array([[-1], [0], [1], [0]])).cardinalities.tolist()  # -1 is a value
    [3]
    """
    enc = Encoder(discretizer=discretizer, n_bins=n_bins, max_categories=max_categories, missing_values=missing_values,
                  distributed=distributed)
    return enc.fit_transform(X, y, feature_names)


__all__ = ["ENCODING_FRAGMENTS", "Encoded", "Encoder", "_compact", "_compact_dtype", "_is_missing",
           "check_classification_target", "check_encoded", "encode", "encode_labels", "match_columns"]
