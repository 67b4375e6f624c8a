"""The selector base classes: one scikit-learn base and its two kinds of input.

``_BaseSelector`` holds what every selector shares: the shared ``_parameter_constraints``
(enforced by scikit-learn's ``_fit_context`` on ``fit``), the checks of ``y`` and ``k``
(:meth:`_BaseSelector._validate_xy`), the support mask, and the registration of
``method_name`` for :func:`tensorprob.select_features`. It has exactly two subclasses:

- :class:`CodedSelector`: the input is encoded to integer codes by an
  :class:`~tensorprob.Encoder` (continuous columns discretized). A subclass implements
  ``_select(codes, cards, y, n_classes, k, device, dtype) -> (selected, scores)``, or, via
  :class:`GreedySelector`, only ``_criterion()``.
- :class:`RealSelector`: the input stays real (finite floats). A subclass implements
  ``_select_real(X, y, n_classes, k, device, dtype) -> (selected, scores)``.

A subclass extends ``_parameter_constraints`` with its own entries; constraints of
parameters that a class does not take are dropped when the class is defined, so that the
constraints and ``__init__`` always name the same parameters.
"""
from __future__ import annotations

import math
from abc import ABCMeta, abstractmethod
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.feature_selection import SelectorMixin
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from .._config import device_budget
from .._device import cpu_thread_cap, resolve_device, resolve_dtype
from .._docstrings import fill_doc
from .._params import CachedParamNames
from ..counting import CountingPlan, SelectionData
from ..encoding import Encoded, Encoder
from ..encoding._encode import check_classification_target, match_columns
from ._api import register
from ._docs import SELECTOR_FRAGMENTS


class _BaseSelector(SelectorMixin, CachedParamNames, BaseEstimator, metaclass=ABCMeta):
    """Root of every tensorprob selector; use :class:`CodedSelector` or :class:`RealSelector`.

    Attributes
    ----------
    method_name : str or None
        Class attribute: the ``method=`` name of :func:`tensorprob.select_features`. Setting
        it in a class body registers the class (``method_aliases`` adds other spellings).
    """

    method_name: ClassVar[str | None] = None
    method_aliases: ClassVar[tuple[str, ...]] = ()
    #: True where the method weights its statistics itself (the count-based criteria: weighted
    #: counts; PDA and VMI: weighted counts and weighted sample means; a batch of weight vectors
    #: runs as one greedy loop with its counts shared); otherwise a weight vector is
    #: applied by repeating each row as many times as its (integral) weight. Only a
    #: GreedySelector (which implements ``_select_weighted``) may set it.
    _native_weights: ClassVar[bool] = False
    #: Whether the running fit is data-parallel (set by ``fit`` from ``distributed``).
    _dist_on: bool = False

    _parameter_constraints: ClassVar[dict] = {
        "k": [Interval(Integral, 1, None, closed="left"), StrOptions({"all"})],
        "device": [str, torch.device, None],
        "dtype": [str, torch.dtype, None],
        "random_state": ["random_state", torch.Generator],
        "distributed": ["boolean"],
    }
    #: Why the method cannot run with ``distributed=True`` (empty: it can).
    _no_distributed: ClassVar[str] = ""
    #: Whether ``fit`` takes X as row chunks (data larger than memory; see ``_fit_stream``).
    _streams: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            # keep exactly the constraints of this class's parameters (scikit-learn's checks
            # require the two sets to be equal); bases without __init__ keep the full dict
            names = set(cls._get_param_names())
            cls._parameter_constraints = {k: v for k, v in cls._parameter_constraints.items() if k in names}
        if cls.__dict__.get("method_name"):
            register(cls.method_name, cls, aliases=cls.method_aliases)

    # ------------------------------------------------------------------ checks
    @abstractmethod
    def _check_X(self, X: Any) -> Any:
        """Check (and convert) X; implemented by the two bases."""

    def _validate_xy(self, X: Any, y: Any) -> tuple[Any, np.ndarray, int | None]:
        """Check X and y, set ``classes_``; return X (checked), the class codes and k.

        k is an int, or None for ``k="auto"`` (the method's own stopping rule).

        Raises
        ------
        ValueError
            When y is None, has missing or infinite labels, is continuous, has fewer than two
            classes or another length than X, or when k exceeds the number of features.
        """
        name = type(self).__name__
        if self._dist_on:
            return self._validate_xy_distributed(X, y)
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None")
        X = self._check_X(X)
        y_codes, classes = check_classification_target(y)
        n_samples = _num_samples(X.codes if isinstance(X, Encoded) else X)
        if len(y_codes) != n_samples:
            raise ValueError(f"X has {n_samples} samples but y has {len(y_codes)} labels")
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}): one class carries no information; "
                             "feature selection needs at least two")
        self.classes_ = classes
        n_features = (X.codes if isinstance(X, Encoded) else X).shape[1]
        return X, y_codes, self._resolve_k(int(n_features))

    def _start_fit(self) -> None:
        """Resolve ``distributed`` (sets ``_dist_on``); refuse it for a method that cannot run data-parallel."""
        from .. import _distributed

        wanted = getattr(self, "distributed", False)
        if wanted is True and self._no_distributed:
            raise ValueError(f"{type(self).__name__} does not support distributed=True: {self._no_distributed}")
        self._dist_on = _distributed.active(wanted)

    def _validate_xy_distributed(self, X: Any, y: Any) -> tuple[Any, np.ndarray, int | None]:
        """:meth:`_validate_xy` for this rank's rows: checks agreed on by all ranks, classes of all ranks.

        Every rank checks its own X and y (an error on one rank raises on all, naming it);
        the number of features must be the same everywhere; the labels are coded against the
        sorted union of every rank's classes. A rank may hold zero rows.
        """
        from .. import _distributed
        from ..encoding._labels import global_labels

        name = type(self).__name__

        def local() -> tuple[Any, int, int]:
            if y is None:
                raise ValueError(f"{name} requires y to be passed, but the target y is None")
            Xc = self._check_X(X)
            arr = Xc.codes if isinstance(Xc, Encoded) else Xc
            n = int(np.shape(arr)[0])
            if len(y) != n:
                raise ValueError(f"X has {n} samples but y has {len(y)} labels")
            return Xc, n, int(np.shape(arr)[1])

        X, n_samples, n_features = _distributed.agree(local)
        _distributed.check_same("number of features", n_features)
        total = sum(_distributed.all_gather(n_samples))
        if total < self._min_samples:
            raise ValueError(f"{name} needs at least {self._min_samples} samples over all ranks, got {total}")
        y_codes, classes = global_labels(y)
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}) over all ranks: one class carries no "
                             "information; feature selection needs at least two")
        self.classes_ = classes
        return X, y_codes, self._resolve_k(n_features)

    #: Fewest rows over all ranks that a distributed fit accepts.
    _min_samples: ClassVar[int] = 1

    def _weights(self, sample_weight: Any, resamples: Any, n_samples: int) -> np.ndarray | None:
        """:meth:`_check_weights`; distributed: the same kind of weights on every rank, totals over all ranks."""
        if not self._dist_on:
            return self._check_weights(sample_weight, resamples, n_samples)
        from .. import _distributed

        B = None if resamples is None else (np.shape(resamples)[1:] or (None,))[0]
        _distributed.check_same("weights (sample_weight given?, resamples given?, columns of resamples)",
                                (sample_weight is not None, resamples is not None, B))
        W = _distributed.agree(lambda: self._check_weights(sample_weight, resamples, n_samples, local=True))
        if W is None:
            return None
        totals = _distributed.all_reduce_sum(torch.as_tensor(W.sum(0), dtype=torch.float64)).numpy()
        empty = np.flatnonzero(totals == 0)
        if empty.size:
            which = "sample_weight" if resamples is None else f"weight vector(s) {empty[:5].tolist()}"
            raise ValueError(f"{which}: all weights are zero on every rank, nothing to select from")
        return W

    def _check_weights(self, sample_weight: Any, resamples: Any, n_samples: int,
                       local: bool = False) -> np.ndarray | None:
        """The row weights as float64 (n_samples, B), or None; sets ``n_selections_`` for ``resamples``.

        ``sample_weight`` (n_samples,) weighs one selection; ``resamples`` (n_samples, B) asks
        for B of them; given both, member b weighs row m by their product.

        Raises
        ------
        ValueError
            Weights that are not numeric, of the wrong shape or length, negative, NaN or
            infinite; a weight vector whose weights are all zero; or, for a method that
            applies weights by repeating rows, a weight that is not an integer.
        """
        if hasattr(self, "n_selections_"):
            del self.n_selections_
        if sample_weight is None and resamples is None:
            return None
        W = None
        for label, value, ndim in (("sample_weight", sample_weight, 1), ("resamples", resamples, 2)):
            if value is None:
                continue
            a = np.asarray(value)
            if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
                raise ValueError(f"{label} must be numeric, got dtype {a.dtype}")
            shape = "(n_samples,)" if ndim == 1 else "(n_samples, B)"
            if a.ndim != ndim:
                hint = " (for several selections at once pass resamples=W of shape (n_samples, B))" if ndim == 1 else ""
                raise ValueError(f"{label} must have shape {shape}, got shape {a.shape}{hint}")
            if a.shape[0] != n_samples:
                raise ValueError(f"{label} has {a.shape[0]} rows but X has {n_samples} samples")
            a = a.astype(np.float64).reshape(n_samples, 1) if ndim == 1 else a.astype(np.float64)
            if a.shape[1] == 0:
                raise ValueError("resamples of shape (n_samples, 0): pass at least one weight vector")
            if not np.isfinite(a).all():
                raise ValueError(f"{label} contains NaN or infinite values")
            if (a < 0).any():
                raise ValueError(f"{label} must be nonnegative (a weight of 0 leaves the row out)")
            W = a if W is None else W * a
        if resamples is not None:
            self.n_selections_ = int(W.shape[1])
        empty = np.flatnonzero(W.sum(0) == 0)
        if empty.size and not local:  # local: this rank's part of distributed data (see _weights)
            which = "sample_weight" if resamples is None else f"weight vector(s) {empty[:5].tolist()}"
            raise ValueError(f"{which}: all weights are zero, nothing to select from")
        if not self._native_weights and (W != np.round(W)).any():
            raise ValueError(f"{type(self).__name__} applies sample weights as frequency weights (each row "
                             "repeated as many times as its weight): they must be integers")
        return W

    def _resolve_k(self, n_features: int) -> int | None:
        if self.k == "all":
            return n_features
        if self.k == "auto":
            return None
        if self.k > n_features:
            raise ValueError(f"k={self.k} is larger than the number of features ({n_features})")
        return int(self.k)

    def _device_dtype(self) -> tuple[torch.device, torch.dtype]:
        device = resolve_device(self.device)
        return device, resolve_dtype(self.dtype, device)

    @abstractmethod
    def _fit(self, X: Any, y: Any, sample_weight: Any = None, resamples: Any = None) -> tuple[Any, Any]:
        """Validate, run the method; return (selected, scores). Implemented by the two bases."""

    @staticmethod
    def _repeated_rows(w: np.ndarray) -> np.ndarray:
        """Row indices with each row repeated ``w[m]`` (integral) times, in row order."""
        return np.repeat(np.arange(w.shape[0]), w.astype(np.int64))

    def _each_weight(self, W: np.ndarray, run) -> tuple[Any, Any]:
        """``run(rows)`` on the repeated rows of each weight vector; (B, k) results when 2-D weights were given."""
        results = [run(self._repeated_rows(W[:, b])) for b in range(W.shape[1])]
        return self._stack([r[0] for r in results], [r[1] for r in results])

    def _stack(self, selected: list, scores: list) -> tuple[Any, Any]:
        """One selection as it is; a batch (``n_selections_`` set) as (B, k) arrays."""
        if not hasattr(self, "n_selections_"):
            return selected[0], scores[0]
        lengths = {len(s) for s in selected}
        if len(lengths) > 1:  # a method with its own stopping rule (k="auto") may stop at different sizes
            width = max(lengths)
            sel = np.full((len(selected), width), -1, dtype=np.int64)
            val = np.full((len(selected), width), np.nan)
            for b, (s, v) in enumerate(zip(selected, scores)):
                sel[b, : len(s)], val[b, : len(v)] = s, v
            return sel, val
        return np.asarray(selected, dtype=np.int64), np.asarray(scores, dtype=np.float64)

    # ------------------------------------------------------------------ estimator API
    @fill_doc
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any = None, sample_weight: Any = None, resamples: Any = None) -> _BaseSelector:
        """Select features of ``X`` for the class labels ``y``.

        Parameters
        ----------
        %(X_raw)s
            Selectors on real values (HOFS, GMI) need finite floats instead. The count-based
            selectors (MIM, MIFS, MRMR, CIFE, JMI, CMIM, JMIM, DISR, ICAP, MRI, RMRMR) also
            take data larger than memory as row chunks: a
            :class:`tensorprob.datasets.RowChunks`, a callable returning a fresh iterator of
            chunks ``(X, y)`` or ``(X, y, sample_weight)``, or the path of a Parquet file or
            directory (every column a feature: use ``RowChunks.from_parquet(path,
            target=...)`` for the labels). The chunks are read twice (the encoding, then the
            codes, spilled to temporary files under ``$TMPDIR``) and every count reads the
            codes back in blocks of rows; see the user guide, "Selection on data larger than
            memory". They also take ``scipy.sparse`` matrices and arrays (and all-sparse
            DataFrames) as they are: implicit zeros are the value 0, a stored NaN is missing,
            and every table is counted from the stored entries (user guide, "Sparse data").
        y : array-like of shape (n_samples,), optional
            Class labels (any hashable values; missing labels are an error), at least two
            classes. Required for data in memory; must be None for streamed X, whose labels
            come with the chunks.
        sample_weight : array-like of shape (n_samples,), optional
            Row weights; integers are frequency weights (a row of weight 2 counts as two
            copies, a weight of 0 leaves the row out). Count-based selectors, PDA and VMI take
            any nonnegative weights (weighted counts, and for PDA and VMI weighted sample means,
            which divide by the total weight); the others apply them by repeating rows, so they
            must be integers. Must be None for streamed X (weights come with the chunks).
        resamples : array-like of shape (n_samples, B), optional
            A batch of B weight vectors (cross-validation fold masks, bootstrap counts,
            Poisson weights), the same kind of weights as ``sample_weight`` (multiplied by it
            when both are given): B selections, one per column, returned as ``selected_`` and
            ``scores_`` of shape (B, k) (``n_selections_ = B``). Column b gives what
            ``fit(X, y, sample_weight=resamples[:, b])`` gives. The count-based criteria,
            PDA and VMI advance the B selections together in one greedy loop and count the
            tables of a step together (PDA and VMI keep one per-sample state per selection,
            over its rows of positive weight); the other methods run one selection per column
            (see :func:`tensorprob.stability_selection`). Not available for streamed X.

        Notes
        -----
        With weights, the encoding (categories, bin edges) is still learned from all rows of
        ``X``, so that every weight vector of a batch sees the same codes; a supervised
        discretizer (``discretizer="mdl"``) is refused, since it would learn its cut points
        from the labels of rows the weights leave out.

        Returns
        -------
        self : object
            The fitted selector (``selected_``, ``scores_``; ``transform`` keeps the selected
            columns).
        """
        self._start_fit()
        chunks = self._stream_input(X, y, sample_weight, resamples)
        dev = resolve_device(self.device)
        with cpu_thread_cap(dev), device_budget(dev, self._dist_on):  # 1 CPU thread by default; the device's "auto" budget
            if chunks is not None:
                selected, scores = self._fit_stream(chunks)
            else:
                selected, scores = self._fit(X, y, sample_weight, resamples)
        self.selected_ = np.asarray(selected, dtype=np.int64)
        self.scores_ = np.asarray(scores, dtype=np.float64)
        return self

    def _stream_input(self, X: Any, y: Any, sample_weight: Any, resamples: Any) -> Any:
        """``X`` as RowChunks when it is streamed (checking the other arguments), else None."""
        from .._io import as_chunks, is_streamed

        if not is_streamed(X):
            return None
        name = type(self).__name__
        if not self._streams:
            raise TypeError(f"{name} does not take streamed X (RowChunks, a callable or a Parquet path): only the "
                            "count-based selectors (MIM, MIFS, MRMR, CIFE, JMI, CMIM, JMIM, DISR, ICAP, MRI, RMRMR) "
                            "select from row chunks; load the data into memory for this method")
        if y is not None or sample_weight is not None:
            raise ValueError(f"{name}.fit: with streamed X (RowChunks, a callable or a Parquet path) the labels and "
                             "weights come with the chunks, (X, y) or (X, y, sample_weight), or from "
                             "RowChunks.from_parquet(target=...); y and sample_weight must be None")
        if resamples is not None:
            raise ValueError(f"{name}.fit: resamples (a batch of weight vectors) is not available for streamed X; "
                             "fit once per weight vector, each given with the chunks as their sample_weight")
        return as_chunks(X)

    def _fit_stream(self, chunks: Any) -> tuple[Any, Any]:
        """Select from row chunks; the selectors with ``_streams`` set override this, the others refuse."""
        raise TypeError(f"{type(self).__name__} does not select from streamed X (row chunks or a Parquet path): "
                        "pass the data in memory")

    def transform(self, X: Any) -> Any:
        """Keep the selected columns of ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Data with the columns seen by ``fit``; DataFrame columns are matched by name, in
            any order.

        Returns
        -------
        array-like or DataFrame of shape (n_samples, n_selected)
            The selected columns, in their original order.
        """
        check_is_fitted(self, "selected_")
        return super().transform(match_columns(X, getattr(self, "feature_names_in_", None)))

    def _get_support_mask(self) -> np.ndarray:
        check_is_fitted(self, "selected_")
        if np.ndim(self.selected_) != 1:
            raise ValueError(f"this selector was fitted with resamples of {len(self.selected_)} weight vectors and holds one "
                             "selection per vector in selected_ (B, k): transform and get_support need a single "
                             "selection (fit without resamples)")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_] = True
        return mask

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def _sparse_frame(X: Any) -> Any:
    """A DataFrame whose every column is sparse (``pandas.SparseDtype``) as a COO matrix; anything else as it is."""
    if not hasattr(X, "sparse") or not hasattr(X, "dtypes"):
        return X
    import pandas as pd

    if len(X.dtypes) and all(isinstance(t, pd.SparseDtype) for t in X.dtypes):
        return X.sparse.to_coo()
    return X


@fill_doc(**SELECTOR_FRAGMENTS)
class CodedSelector(_BaseSelector):
    """Base of the selectors that work on integer codes (count-based, PDA, VMI, SPEC_CMI, GSM-CPD).

    ``fit`` encodes X with an :class:`~tensorprob.Encoder` (the rules of :func:`tensorprob.encode`:
    categories by value, continuous columns discretized by ``discretizer`` into ``n_bins`` bins,
    missing entries code -1; an :class:`~tensorprob.Encoded` is taken as codes) and
    calls ``_select(codes, cards, y, n_classes, k, device, dtype) -> (selected, scores)``.

    Attributes
    ----------
    %(coded_attributes)s
    """

    _parameter_constraints: ClassVar[dict] = {
        **_BaseSelector._parameter_constraints,
        "discretizer": [StrOptions({"uniform", "quantile", "mdl"}), HasMethods(["fit_transform"]), None],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "base": [StrOptions({"e"}), Options(Integral, {2}), None],
        "missing_values": "no_validation",  # any value or sequence of values (see tensorprob.encode)
    }

    def _check_X(self, X: Any) -> Any:
        import scipy.sparse as sp

        name = type(self).__name__
        if isinstance(X, Encoded):  # codes already (-1 missing), checked again: the encoder takes them as they are
            X = X.checked()
            if X.shape[1] == 0:
                raise ValueError(f"0 feature(s) (shape=({X.shape[0]}, 0)) while a minimum of 1 is required.")
            return X
        X = _sparse_frame(X)
        if sp.issparse(X):
            if not self._reads_sparse:
                raise TypeError(f"{name} does not accept sparse input: pass a dense array (X.toarray()); the "
                                "count-based selectors (MIM, MIFS, MRMR, CIFE, JMI, CMIM, JMIM, DISR, ICAP, MRI, "
                                "RMRMR) and SPEC_CMI take scipy.sparse matrices as they are")
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {tuple(X.shape)}")
            if X.shape[1] == 0:
                raise ValueError(f"0 feature(s) (shape=({X.shape[0]}, 0)) while a minimum of 1 is required.")
            if np.iscomplexobj(getattr(X, "data", np.zeros(0))):
                raise ValueError("Complex data not supported")
            return X
        if not (hasattr(X, "shape") and hasattr(X, "__len__")) and not hasattr(X, "iloc"):
            X = np.asarray(X)
        if len(X.shape) != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {tuple(X.shape)}; Reshape your data "
                             "with X.reshape(-1, 1) for a single feature")
        if X.shape[1] == 0:
            raise ValueError(f"0 feature(s) (shape=({X.shape[0]}, 0)) while a minimum of 1 is required.")
        if hasattr(X, "dtype") and not hasattr(X, "iloc") and np.iscomplexobj(X):
            raise ValueError("Complex data not supported")
        return X

    def _new_encoder(self) -> Encoder:
        """The encoder of a fit: the selector's discretizer, the rows' limit on categories, all ranks' rows."""
        return Encoder(discretizer=self.discretizer, n_bins=self.n_bins, max_categories="auto",
                       missing_values=getattr(self, "missing_values", None), distributed=self._dist_on)

    @property
    def _log_base(self) -> float:
        """Divisor of the information quantities: 1 (nats) or log 2 (bits), from ``base``."""
        return math.log(2.0) if self.base == 2 else 1.0

    def _selection_data(self, codes: np.ndarray, cards: np.ndarray, y: np.ndarray, n_classes: int,
                        device: torch.device, dtype: torch.dtype, row_major: bool = False) -> SelectionData:
        """The codes on the device, in the units of ``base``, for the criteria (``row_major``: see SelectionData)."""
        return SelectionData(torch.as_tensor(codes, device=device), np.asarray(cards),
                             torch.as_tensor(y, device=device), n_classes, dtype=dtype, log_base=self._log_base,
                             distributed=self._dist_on, row_major=row_major)

    #: The selector counts tables of sparse codes from their stored entries (scipy.sparse X taken as it is).
    _reads_sparse: ClassVar[bool] = False

    def _fit(self, X: Any, y: Any, sample_weight: Any = None, resamples: Any = None) -> tuple[Any, Any]:
        import scipy.sparse as sp

        X, y_codes, k = self._validate_xy(X, y)
        W = self._weights(sample_weight, resamples, len(y_codes))
        if W is not None and self.discretizer == "mdl" and not isinstance(X, Encoded):
            raise ValueError(f"{type(self).__name__}: discretizer='mdl' learns its cut points from the labels of all "
                             "rows, including those the sample weights leave out; discretize per weight vector "
                             "(or pass tp.Encoded codes) instead")
        if sp.issparse(X):
            return self._fit_sparse(X, y_codes, k, W)
        # distributed: categories and bin edges from all ranks' rows, so every rank codes alike;
        # integral numeric columns keep their values only while the rows suffice (max_categories="auto")
        self.encoder_ = self._new_encoder()
        # not fit_transform: its scikit-learn wrappers (output container, a nested validation of
        # parameters that are the selector's, validated already) are a visible share of a small fit
        codes = self.encoder_._fit(X, y_codes, None, checked=isinstance(X, Encoded))  # _validate_xy checked it
        self.n_features_in_ = codes.shape[1]
        names = getattr(self.encoder_, "feature_names_in_", None)  # scikit-learn's rule: string names only
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        device, dtype = self._device_dtype()
        cards, n_classes = self.encoder_.cardinalities_, int(self.classes_.size)
        # codes stay in the encoder's compact dtype (int8 for up to 127 values): 8x less to hold and to read
        if W is None:
            return self._select(codes, cards, y_codes, n_classes, k, device, dtype)
        if self._native_weights:
            selected, scores = self._select_weighted(codes, cards, y_codes, n_classes, k, device, dtype, W)
            return self._stack(selected, scores)
        return self._each_weight(W, lambda rows: self._select(codes[rows], cards, y_codes[rows], n_classes, k,
                                                              device, dtype))

    def _fit_sparse(self, X: Any, y_codes: np.ndarray, k: int | None, W: np.ndarray | None) -> tuple[Any, Any]:
        """Select from a scipy.sparse X: its values encoded with code 0 for 0, kept implicit (:meth:`_select_sparse`).

        Weights: one selection per weight vector, each counted from the stored entries.
        """
        from ..encoding._sparse import encode_sparse

        # distributed: one encoding from all ranks' summaries, each rank's rows coded and counted where they are
        self.encoder_ = self._new_encoder()
        codes, cards = encode_sparse(self.encoder_, X, y_codes, layout="csc")  # the layout the counts read
        self.n_features_in_ = int(codes.shape[1])
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        device, dtype = self._device_dtype()
        if not self._dist_on:
            # the stored entries are counted by NumPy on the host; on a GPU sparse codes could only
            # be read as dense blocks of rows (bench_sparse.py's CUDA column)
            device = torch.device("cpu")
        n_classes = int(self.classes_.size)
        if W is None:
            return self._select_sparse(codes, cards, y_codes, None, n_classes, k, device, dtype)
        plan, runs = CountingPlan(), []
        for b in range(W.shape[1]):
            runs.append(self._select_sparse(codes, cards, y_codes, W[:, b], n_classes, k, device, dtype))
            if hasattr(self, "counting_plan_"):  # the selectors that record their counting
                plan.merge(self.counting_plan_)
        if hasattr(self, "counting_plan_"):
            self.counting_plan_ = plan
        return self._stack([r[0] for r in runs], [r[1] for r in runs])

    def _select_sparse(self, codes: Any, cards: np.ndarray, y: np.ndarray, w: np.ndarray | None, n_classes: int,
                       k: int | None, device: torch.device, dtype: torch.dtype) -> tuple[Any, Any]:
        """Pick features from sparse codes (M, N) (code 0 implicit, -1 missing) with row weights ``w`` (or None)."""
        raise TypeError(f"{type(self).__name__} does not accept sparse input: pass a dense array (X.toarray())")

    def _sparse_selection_data(self, codes: Any, cards: np.ndarray, y: np.ndarray, w: np.ndarray | None,
                               n_classes: int, device: torch.device, dtype: torch.dtype) -> SelectionData:
        """The run's data over sparse codes (CSC, code 0 implicit): a :class:`SelectionData` whose stream holds them."""
        from ..counting._sparse import SparseRows
        from ..counting._spill import default_block_rows

        N = int(codes.shape[1])
        rows = SparseRows(codes, y, w, default_block_rows(N), distributed=self._dist_on)
        tdt = torch.from_numpy(np.zeros(0, codes.dtype)).dtype
        return SelectionData(torch.empty((0, N), dtype=tdt, device=device), np.asarray(cards),
                             torch.empty(0, dtype=torch.int64, device=device), n_classes, dtype=dtype,
                             log_base=self._log_base, stream=rows, distributed=self._dist_on)

    @abstractmethod
    def _select(self, codes: np.ndarray, cards: np.ndarray, y: np.ndarray, n_classes: int, k: int | None,
                device: torch.device, dtype: torch.dtype) -> tuple[Any, Any]:
        """Pick features from codes (M, N) (-1 missing), cardinalities (N,), class codes (M,)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True  # strings, bools and categoricals are encoded, not rejected
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True  # NaN is a missing entry
        tags.input_tags.sparse = self._reads_sparse  # scipy.sparse counted from its stored entries
        return tags


class GreedySelector(CodedSelector):
    """A coded selector run by the shared greedy driver with the criterion from ``_criterion()``.

    See :mod:`tensorprob.selection._greedy` for the criterion protocol.
    """

    @abstractmethod
    def _criterion(self):
        """The criterion object (see :class:`tensorprob.selection._greedy.Criterion`) of one fit."""

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        from ._greedy import greedy_forward

        criterion = self._criterion()
        # scores that never change (MIM) read only the class table: no feature-major copy
        data = self._selection_data(codes, cards, y, n_classes, device, dtype, row_major=criterion.static())
        try:
            return greedy_forward(criterion, data, codes.shape[1] if k is None else k)
        finally:
            self.counting_plan_ = data.counting_plan

    def _select_sparse(self, codes, cards, y, w, n_classes, k, device, dtype):
        from ._greedy import greedy_forward

        data = self._sparse_selection_data(codes, cards, y, w, n_classes, device, dtype)
        try:
            return greedy_forward(self._criterion(), data, int(codes.shape[1]) if k is None else k)
        finally:
            data.stream.close()
            self.counting_plan_ = data.counting_plan

    #: The criterion keeps per-sample state (PDA, VMI): a weighted selection then holds only the
    #: rows of positive weight (see :func:`tensorprob.counting._batched.compact_rows`), so that
    #: its work per step is that of its rows and its sample means never read a row left out.
    _compact_rows: ClassVar[bool] = False

    def _chunk_classes(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Class codes of the chunks' labels and the sorted classes (of all ranks when distributed), two at least."""
        if self._dist_on:
            from ..encoding._labels import global_labels

            y_codes, classes = global_labels(y)
        else:
            y_codes, classes = check_classification_target(y)
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r})" + (" over all ranks" if self._dist_on else "")
                             + ": feature selection needs at least two")
        return y_codes, classes

    def _fit_stream_sparse(self, chunks: Any) -> tuple[list[int], list[float]]:
        """Select from row chunks that are sparse matrices: one encoding of all of them, their codes kept sparse.

        Pass 1 summarizes every chunk and the labels, pass 2 codes each chunk
        (:func:`~tensorprob.encoding._sparse.encode_sparse_parts`); the codes (compact, the
        stored entries only) are stacked in memory and counted as a sparse matrix in memory is.
        With ``distributed=True`` the chunks are this rank's: the summaries and classes of all
        ranks decide one encoding, and each rank counts its own rows (as for a sparse matrix).
        """
        import scipy.sparse as sp

        from .._io._passes import read_sparse_chunks
        from ..encoding._sparse import encode_sparse_parts

        read = read_sparse_chunks(chunks, type(self).__name__, labels_required=True, values=False,
                                  distributed=self._dist_on)
        y_all, w_all = read.labels, read.weights
        y_codes, classes = self._chunk_classes(y_all)
        self.classes_ = classes
        self.encoder_ = self._new_encoder()
        parts = encode_sparse_parts(self.encoder_, lambda: (X for X, _, _ in chunks), classes,
                                    distributed=self._dist_on)
        n_cols = self.encoder_.n_features_in_
        codes = sp.vstack(parts, format="csc") if parts else sp.csc_matrix((0, n_cols), dtype=np.int8)
        self.n_features_in_ = int(n_cols)
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        W = None
        if w_all is not None:
            W = self._weights(w_all, None, codes.shape[0])[:, 0]
        chunks.n_rows_ = int(codes.shape[0])
        k = self._resolve_k(self.n_features_in_)
        device, dtype = self._device_dtype()
        return self._select_sparse(codes, self.encoder_.cardinalities_, y_codes, W, int(classes.size), k, device,
                                   dtype)

    def _fit_stream(self, chunks: Any) -> tuple[list[int], list[float]]:
        """Select from row chunks, in two passes and then counts over blocks of spilled rows.

        Pass 1 (:func:`~tensorprob._io.learn_encoding`, the one the out-of-core CPD fits use)
        learns the encoding and the classes. Pass 2 (checked against pass 1: a source that
        changed between the passes raises) codes each chunk and spills its
        codes (feature-major), class codes and weights to temporary files
        (:class:`~tensorprob.counting._spill.SpilledRows`, removed when the fit ends, also on
        error; under ``RowChunks.spill_dir`` when set). The greedy run then counts over blocks of
        ``RowChunks.block_rows`` rows (default
        :func:`~tensorprob.counting._spill.default_block_rows`), so that memory holds one
        chunk (pass 2) or one block (the counts), never all the rows. The codes, classes and
        counts are those of the fit on the concatenated rows.
        """
        from .._distributed import agree, all_reduce_sum
        from .._io import learn_encoding
        from .._io._passes import SparseChunkError
        from ..counting._spill import SpilledRows, default_block_rows
        from ..encoding._codes import _compact_dtype
        from ._greedy import greedy_forward

        name = type(self).__name__
        try:
            enc = learn_encoding(chunks, discretizer=self.discretizer, n_bins=self.n_bins, max_categories="auto",
                                 missing_values=getattr(self, "missing_values", None), distributed=self._dist_on)
        except SparseChunkError:  # the chunks' codes stay sparse, in memory
            return self._fit_stream_sparse(chunks)
        if enc.classes is None:
            raise ValueError(f"{name} requires labels: give each chunk as (X, y) or (X, y, sample_weight), or read "
                             "Parquet files with RowChunks.from_parquet(path, target=...)")
        self.encoder_ = enc.encoder
        self.classes_ = enc.classes
        self.n_features_in_ = enc.n_features
        if enc.feature_names_in is not None:
            self.feature_names_in_ = enc.feature_names_in
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        k = self._resolve_k(enc.n_features)
        device, dtype = self._device_dtype()
        cards, n_classes = enc.cards, int(enc.classes.size)
        codes_dtype, y_dtype = _compact_dtype(cards), _compact_dtype(np.array([n_classes]))
        block_rows = getattr(chunks, "block_rows", None) or default_block_rows(enc.n_features)
        with SpilledRows(enc.n_rows_local, enc.n_features, codes_dtype, y_dtype, enc.weighted, block_rows,
                         directory=getattr(chunks, "spill_dir", None)) as rows:
            def spill() -> None:
                for i, Xc, yc, wc in enc.replay(chunks):
                    coded = enc.code(i, Xc, yc, wc, codes_dtype)
                    if coded is None:
                        continue
                    codes, y_codes, W = coded
                    if W is not None and W.shape[1] != 1:
                        raise ValueError(f"chunk {i}: sample_weight of shape {W.shape} gives {W.shape[1]} weight "
                                         "sets; a selection takes one weight per row (resamples are not "
                                         "available for streamed X)")
                    rows.append(codes, y_codes, None if W is None else W[:, 0])

            agree(spill) if self._dist_on else spill()
            if enc.weighted:
                total = rows.weight_total
                if self._dist_on:
                    total = float(all_reduce_sum(torch.tensor([total], dtype=torch.float64))[0])
                if total == 0:
                    raise ValueError("sample_weight: all weights are zero" + (" on every rank" if self._dist_on
                                                                              else "") + ", nothing to select from")
            tdt = torch.from_numpy(np.zeros(0, codes_dtype)).dtype
            data = SelectionData(torch.empty((0, enc.n_features), dtype=tdt, device=device),
                                 np.asarray(cards), torch.empty(0, dtype=torch.int64, device=device),
                                 n_classes, dtype=dtype, log_base=self._log_base, distributed=self._dist_on,
                                 stream=rows)
            chunks.n_rows_ = enc.n_rows
            try:
                return greedy_forward(self._criterion(), data, enc.n_features if k is None else k)
            finally:
                self.counting_plan_ = data.counting_plan

    def _select_weighted(self, codes, cards, y, n_classes, k, device, dtype, W):
        """B weighted selections (lists of B picks and of B score lists), the batch counted together."""
        from ..counting._batched import BatchedSelectionData, compact_rows
        from ._greedy import greedy_forward, greedy_forward_batched

        k = codes.shape[1] if k is None else k
        Wt = torch.as_tensor(W, dtype=torch.float64, device=device)
        if W.shape[1] == 1:  # one weighted selection: the single-run path with weighted counts
            if self._compact_rows:
                data = compact_rows(torch.as_tensor(codes, device=device), torch.as_tensor(y, device=device),
                                    Wt[:, 0], np.asarray(cards), n_classes, dtype=dtype,
                                    log_base=self._log_base, distributed=self._dist_on)
            else:
                data = self._selection_data(codes, cards, y, n_classes, device, dtype)
                data.weights = Wt[:, 0]  # before any read of the data (its totals are taken on first use)
            try:
                sel, val = greedy_forward(self._criterion(), data, k)
            finally:
                self.counting_plan_ = data.counting_plan
            return [sel], [val]
        criteria = [self._criterion() for _ in range(W.shape[1])]
        codes_t, y_t = torch.as_tensor(codes, device=device), torch.as_tensor(y, device=device)
        selected, scores = [None] * W.shape[1], [None] * W.shape[1]
        self.counting_plan_ = CountingPlan()
        for group in self._member_groups(criteria, W, codes.shape[1], n_classes, dtype):
            batch = BatchedSelectionData(codes_t, np.asarray(cards), y_t, n_classes, Wt[:, group], dtype=dtype,
                                         log_base=self._log_base, distributed=self._dist_on,
                                         compact=self._compact_rows)
            try:
                sel, val = greedy_forward_batched([criteria[b] for b in group], batch, k)
            finally:
                self.counting_plan_.merge(batch.counting_plan)
            for b, s, v in zip(group, sel, val):
                selected[b], scores[b] = s, v
        return selected, scores

    def _member_groups(self, criteria, W: np.ndarray, n_features: int, n_classes: int,
                       dtype: torch.dtype) -> list[list[int]]:
        """The members split into groups of even size whose per-sample states fit ``memory_budget`` together.

        One group (the whole batch) for the criteria without per-sample state. A state is sized
        on all rows (a member over its rows of positive weight needs less; a batch that keeps its
        members' states side by side needs all). Distributed: on the most rows of one rank, so
        that every rank forms the same groups.
        """
        from .._config import get_config

        B = W.shape[1]
        rows = W.shape[0]
        if self._dist_on:
            from .. import _distributed

            rows = max(_distributed.all_gather(rows))
        state = max(c.state_bytes(int(rows), n_features, n_classes, dtype) for c in criteria)
        size = B if state == 0 else max(1, min(B, get_config()["memory_budget"] // state))
        return [g.tolist() for g in np.array_split(np.arange(B), -(-B // size))]


@fill_doc(**SELECTOR_FRAGMENTS)
class RealSelector(_BaseSelector):
    """Base of the selectors that work on real values (HOFS, GMI).

    X must be finite floats (scikit-learn's ``validate_data``: at least 2 samples); ``fit``
    calls ``_select_real(X, y, n_classes, k, device, dtype) -> (selected, scores)`` with X a
    float64 ndarray and y the class codes ``0 .. n_classes - 1``.

    Attributes
    ----------
    %(real_attributes)s
    """

    _min_samples: ClassVar[int] = 2

    def _check_X(self, X: Any) -> np.ndarray:
        # distributed: a rank may hold fewer rows (the total is checked over all ranks)
        X = validate_data(self, X, dtype=np.float64, ensure_all_finite=True, ensure_min_samples=0 if self._dist_on else 2)
        return X if X.flags.writeable else X.copy()  # torch takes no read-only memory (a memmap)

    def _fit(self, X: Any, y: Any, sample_weight: Any = None, resamples: Any = None) -> tuple[Any, Any]:
        X, y_codes, k = self._validate_xy(X, y)
        W = self._weights(sample_weight, resamples, len(y_codes))
        device, dtype = self._device_dtype()
        n_classes = int(self.classes_.size)
        if W is None:
            return self._select_real(X, y_codes, n_classes, k, device, dtype)
        return self._each_weight(W, lambda rows: self._select_real(X[rows], y_codes[rows], n_classes, k, device, dtype))

    @abstractmethod
    def _select_real(self, X: np.ndarray, y: np.ndarray, n_classes: int, k: int, device: torch.device,
                     dtype: torch.dtype) -> tuple[Any, Any]:
        """Pick features from a finite float64 matrix (M, N) and class codes (M,)."""
