"""``CPD``: the scikit-learn estimator around :func:`fit_cpd` (as tensorly's ``CP`` around ``parafac``)."""
from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._device import RandomStateLike, to_numpy
from .._docstrings import fill_doc
from .._params import CachedParamNames
from ..counting._sparse_rows import SparseCodeRows
from ._fit import fit_cpd

_X_CODES = """\
Parameters
----------
X : array-like, DataFrame, tensor, Encoded or scipy.sparse of shape (n_samples, n_features)
    Data like that given to ``fit``: raw values, encoded by the model's ``encoder_``, or,
    for a model fitted to codes, integer codes (``-1`` = missing); a
    :class:`tensorprob.Encoded` always holds codes; a sparse matrix is read from its stored
    entries (implicit entries are the value 0)."""


@fill_doc(X_codes=_X_CODES)
class CPD(CachedParamNames, BaseEstimator):
    """Nonnegative canonical polyadic decomposition (CPD) model of a joint PMF, as a scikit-learn estimator.

    A thin class: it stores the parameters of :func:`fit_cpd`, calls it in :meth:`fit` and
    keeps the fitted :class:`CPDModel` in ``model_``, so a CPD goes into a ``Pipeline`` or a
    ``GridSearchCV`` (scored by the mean log-likelihood of held-out rows).

    Parameters
    ----------
    rank : int, default=20
        Number of components F.
    %(cpd_em)s
    %(init)s
    %(cpd_encoding)s
    %(device)s
    %(dtype)s
    %(cpd_random_state)s

    Attributes
    ----------
    model_ : CPDModel
        The fitted model (the label, when ``fit`` got ``y``, is its last variable).
    n_iter_ : int
        EM iterations of the fit.
    converged_ : bool
        Whether the relative change of the log-likelihood fell to ``tol`` before ``n_iter_max``.

    See Also
    --------
    fit_cpd : The function this class calls.
    CPDModel : The fitted model.

    Examples
    --------
    >>> import tensorprob
    >>> from sklearn.model_selection import GridSearchCV
    >>> data = tensorprob.datasets.make_latent_class(600, [3, 3, 4], 2, random_state=0)
    >>> cpd = tensorprob.CPD(rank=2, device="cpu", random_state=0).fit(data.X)
    >>> cpd.model_.rank
    2
    >>> search = GridSearchCV(tensorprob.CPD(device="cpu", alpha=0.1, random_state=0),
    ...                       {"rank": [1, 2]}, cv=3).fit(data.X)
    >>> search.best_params_
    {'rank': 2}
    """

    _parameter_constraints: ClassVar[dict] = {
        "rank": [Interval(Integral, 1, None, closed="left")],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "n_iter_max": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "init": [StrOptions({"kmeans++", "random"})],
        "cardinalities": ["array-like", None],
        "discretizer": [str, object],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "missing_values": "no_validation",
        "device": [str, torch.device],
        "dtype": [str, torch.dtype, None],
        "random_state": ["random_state", torch.Generator],
    }

    def __init__(self, rank: int = 20, *, n_restarts: int = 4, n_iter_max: int = 500, tol: float = 1e-6,
                 alpha: float = 0.0, init: str = "kmeans++", cardinalities: Any = None, discretizer: Any = "uniform",
                 n_bins: int = 5, missing_values: Any = None, device: Any = "auto", dtype: Any = None,
                 random_state: RandomStateLike = None) -> None:
        self.rank = rank
        self.n_restarts = n_restarts
        self.n_iter_max = n_iter_max
        self.tol = tol
        self.alpha = alpha
        self.init = init
        self.cardinalities = cardinalities
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.device = device
        self.dtype = dtype
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any = None, sample_weight: Any = None) -> CPD:
        """Fit the model to ``X`` (and the labels ``y``, modelled as one more variable).

        Parameters
        ----------
        %(X_cpd)s
        %(cpd_y)s
        sample_weight : array-like of shape (n_samples,), optional
            Nonnegative finite row weights (default all 1), relative frequencies: they are rescaled
            to sum to the number of rows of positive weight, so only their ratios matter.

        Returns
        -------
        CPD
            This estimator, fitted.
        """
        self.model_ = fit_cpd(X, rank=self.rank, y=y, device=self.device, dtype=self.dtype,
                              n_restarts=self.n_restarts, n_iter_max=self.n_iter_max, tol=self.tol, alpha=self.alpha,
                              sample_weight=sample_weight, init=self.init, random_state=self.random_state,
                              cardinalities=self.cardinalities, discretizer=self.discretizer, n_bins=self.n_bins,
                              missing_values=self.missing_values)
        self.n_iter_ = self.model_.n_iter_
        self.converged_ = self.model_.converged_
        return self

    def _rows(self, X: Any, y: Any = None) -> torch.Tensor | SparseCodeRows:
        """Codes of ``X`` (and ``y``; an unseen label is missing) in all the model's variables."""
        check_is_fitted(self, "model_")
        m = self.model_
        t = m.target
        feats = [n for n in range(m.n_variables) if n != t]
        full, _ = m._codes(X, feats if t is not None else None)
        if y is not None and t is not None:
            labels = m._label_codes(y, unseen="missing")
            if isinstance(full, SparseCodeRows):
                return full.with_column(t, labels)
            full[:, t] = torch.as_tensor(labels, device=full.device)
        return full

    def score_samples(self, X: Any, y: Any = None) -> np.ndarray:
        """Log-likelihood (nats) of every row (with its label, when the model has one and ``y`` is given).

        %(X_codes)s
        y : array-like of shape (n_samples,), optional
            Labels of the rows (a label unseen in ``fit`` counts as missing); without ``y`` a
            model fitted with labels scores the features alone.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``log P(x)`` (or ``log P(x, y)``) of every row, float64.
        """
        full = self._rows(X, y)
        m = self.model_
        variables = None if y is not None or m.target is None else [n for n in range(m.n_variables) if n != m.target]
        return to_numpy(m.log_prob(full, variables, codes=True)).astype(np.float64)

    def score(self, X: Any, y: Any = None) -> float:
        """Mean log-likelihood per row (nats), the quantity EM maximizes; higher is better.

        As for scikit-learn's density estimators (``GaussianMixture.score``), the score of a
        CPD is the mean of :meth:`score_samples`, ``(1/M) sum_m log P(x_m)``, not the accuracy
        of :meth:`predict`: ``GridSearchCV`` over ranks then picks the rank with the best
        held-out likelihood. For the classification accuracy use
        ``sklearn.metrics.accuracy_score(y, cpd.predict(X))``.

        %(X_codes)s
        y : array-like of shape (n_samples,), optional
            Labels of the rows, as in :meth:`score_samples`.

        Returns
        -------
        float
            Mean of :meth:`score_samples` over the rows: ``-inf`` when a row has probability
            0 under the model (a value combination no component allows, possible with
            ``alpha=0``; a warning gives how many rows).

        Warns
        -----
        UserWarning
            Rows of probability 0, with their number.
        """
        s = self.score_samples(X, y)
        zero = int(np.isneginf(s).sum())
        if zero:
            warnings.warn(f"{zero} of {s.size} rows have probability 0 under the model (log-likelihood -inf), so the "
                          "mean log-likelihood is -inf; alpha > 0 (Dirichlet smoothing) gives every value a positive "
                          "probability", UserWarning, stacklevel=2)
        return float(np.mean(s))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``P(y | x)`` of every row (models fitted with a label).

        %(X_codes)s

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            ``P(y = c | x)``, columns in the order of ``model_.classes``.

        Raises
        ------
        AttributeError
            The model was fitted without labels.
        """
        check_is_fitted(self, "model_")
        if self.model_.target is None:
            raise AttributeError("predict_proba needs a model fitted with labels: call fit(X, y)")
        return to_numpy(self.model_.predict_proba(self._rows(X), codes=True))

    def predict(self, X: Any) -> np.ndarray:
        """Predict the most probable label of every row (ties to the first class).

        %(X_codes)s

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels, values of ``model_.classes``.
        """
        proba = self.predict_proba(X)
        return self.model_.classes[proba.argmax(1)]

    def sample(self, n_samples: int = 1, random_state: RandomStateLike = None) -> np.ndarray:
        """Draw rows of codes from the fitted model.

        Parameters
        ----------
        n_samples : int, default=1
            Number of rows drawn from the fitted model.
        %(random_state)s

        Returns
        -------
        ndarray of shape (n_samples, n_variables)
            Codes (int64), the label's code last when the model has one.
        """
        check_is_fitted(self, "model_")
        return to_numpy(self.model_.sample(n_samples, random_state=random_state))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.sparse = True  # fitted and scored from the stored entries
        return tags
