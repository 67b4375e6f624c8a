"""Base class of every tensorprob selector (scikit-learn ``SelectorMixin`` + ``BaseEstimator``).

A subclass declares its extra parameters in ``_extra_constraints`` and implements
``_select(codes, cards, y, n_classes, k, device, dtype) -> (selected, scores)`` on integer
codes (``-1`` = missing); ``fit`` does validation, encoding and bookkeeping.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin

from .._device import resolve_device, resolve_dtype
from ..encoding import encode, encode_labels


class BaseSelector(SelectorMixin, BaseEstimator):
    """Shared ``fit`` / ``transform`` machinery; see the module docstring.

    Common parameters (set by subclasses' ``__init__``): ``k`` (int, "all", or "auto" where
    the method defines a stopping rule), ``discretizer`` ("uniform", "quantile", "mdl", an
    object with ``fit_transform``, or None), ``n_bins``, ``device``, ``dtype``.
    """

    _allow_auto = False

    def _validate_common(self) -> None:
        name = type(self).__name__
        k = self.k
        ok = (isinstance(k, numbers.Integral) and not isinstance(k, bool) and k >= 1) or k == "all" or \
            (self._allow_auto and k == "auto")
        allowed = "an int >= 1 or 'all'" + (" or 'auto'" if self._allow_auto else "")
        if not ok:
            raise ValueError(f"The 'k' parameter of {name} must be {allowed}; got {k!r}")
        if not (isinstance(self.n_bins, numbers.Integral) and not isinstance(self.n_bins, bool) and self.n_bins >= 2):
            raise ValueError(f"The 'n_bins' parameter of {name} must be an int >= 2; got {self.n_bins!r}")
        d = self.discretizer
        if not (d is None or d in ("uniform", "quantile", "mdl") or hasattr(d, "fit_transform")):
            raise ValueError(f"The 'discretizer' parameter of {name} must be 'uniform', 'quantile', 'mdl', "
                             f"an object with fit_transform, or None; got {d!r}")

    def _prepare(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Validate and encode (X, y): codes, cardinalities, label codes, number of classes."""
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None")
        try:
            import scipy.sparse as sp

            if sp.issparse(X):
                raise TypeError(f"{name} does not accept sparse input: pass a dense array (X.toarray())")
        except ImportError:  # pragma: no cover - scipy comes with scikit-learn
            pass
        if not (hasattr(X, "shape") and hasattr(X, "__len__")) and not hasattr(X, "iloc"):
            X = np.asarray(X)
        if getattr(X, "ndim", 2) == 2 and X.shape[1] == 0:
            raise ValueError(f"0 feature(s) (shape=({X.shape[0]}, 0)) while a minimum of 1 is required.")
        names = None
        if hasattr(X, "columns"):
            names = np.asarray([str(c) for c in X.columns], dtype=object)
        elif hasattr(X, "dtype") and getattr(X, "ndim", 2) == 2 and np.asarray(X).dtype.kind in "fc":
            if np.iscomplexobj(X):
                raise ValueError("Complex data not supported")
        y_codes, classes = encode_labels(y)
        n_rows = X.shape[0] if hasattr(X, "shape") else len(X)
        if len(y_codes) != n_rows:
            raise ValueError(f"X has {n_rows} samples but y has {len(y_codes)} labels")
        if classes.size < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}): one class carries no information; "
                             "feature selection needs at least two")
        enc = encode(X, y_codes, discretizer=self.discretizer, n_bins=self.n_bins)
        self.n_features_in_ = enc.codes.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.classes_ = classes
        self.encoder_ = enc.encoder
        return enc.codes.astype(np.int64), enc.cardinalities, y_codes, int(classes.size)

    def _resolve_k(self, n_features: int) -> int | None:
        if self.k == "all":
            return n_features
        if self.k == "auto":
            return None
        if self.k > n_features:
            raise ValueError(f"k={self.k} is larger than the number of features ({n_features})")
        return int(self.k)

    def _log_base(self) -> float:
        base = getattr(self, "base", "e")
        if base in ("e", None):
            return 1.0
        if base == 2:
            return float(np.log(2.0))
        raise ValueError(f"The 'base' parameter of {type(self).__name__} must be 'e' or 2; got {base!r}")

    def _validate_extra(self) -> None:
        """Subclasses check their own parameters here (called by ``fit``)."""

    def fit(self, X: Any, y: Any) -> "BaseSelector":
        """Select features of ``X`` (raw or coded) for the labels ``y``.

        Returns
        -------
        self
        """
        self._validate_common()
        self._validate_extra()
        if hasattr(self, "base"):
            self._log_base()
        codes, cards, y_codes, n_classes = self._prepare(X, y)
        k = self._resolve_k(codes.shape[1])
        device = resolve_device(self.device)
        dtype = resolve_dtype(self.dtype, device)
        selected, scores = self._select(codes, cards, y_codes, n_classes, k, device, dtype)
        self.selected_ = np.asarray(selected, dtype=np.int64)
        self.scores_ = np.asarray(scores, dtype=np.float64)
        return self

    def _get_support_mask(self) -> np.ndarray:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "selected_")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.selected_] = True
        return mask

    def _select(self, codes, cards, y, n_classes, k, device: torch.device, dtype: torch.dtype):
        raise TypeError(f"{type(self).__name__} does not define _select")  # pragma: no cover

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.input_tags.categorical = True  # strings, bools and categoricals are encoded, not rejected
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True  # NaN is a missing entry
        return tags


class GreedySelector(BaseSelector):
    """A selector run by the shared greedy driver with the criterion from ``_criterion()``."""

    def _criterion(self):
        raise TypeError(f"{type(self).__name__} does not define _criterion")  # pragma: no cover

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        from ._greedy import SelectionData, greedy_forward

        data = SelectionData(torch.as_tensor(codes, device=device), int(max(1, cards.max())),
                             torch.as_tensor(y, device=device), n_classes, dtype=dtype, log_base=self._log_base())
        return greedy_forward(self._criterion(), data, codes.shape[1] if k is None else k)
