"""The fitted CPD joint-PMF model, canonical in log space."""
from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .._device import RandomStateLike, chunk_ranges, is_sparse, make_generator, resolve_device, resolve_dtype, to_numpy
from .._docstrings import fill_doc
from ..counting._sparse_rows import SparseCodeRows
from ..information._cpd import Estimate, LatentClassBatch, information

_MODEL_META = """\
variable_names : list of str, optional
    One name per variable (the label included); default ``x0, x1, ...``.
target : int, optional
    Index of the label variable when the model was fitted with ``y`` (the last one).
classes : ndarray, optional
    Label of each code of the target variable.
encoder : Encoder, optional
    The encoder that turned raw data into codes.
n_iter : int, default=0
    Fit diagnostic ``n_iter_``: M-steps performed (0 for a model built by hand).
loglik_history : ndarray, optional
    Fit diagnostic ``loglik_history_``: mean training log-likelihood after each M-step.
converged : bool, default=False
    Fit diagnostic ``converged_``: whether the fit met its tolerance."""

_CODES_KW = """\
codes : bool, optional
    Whether ``X`` holds integer codes. By default a model with an encoder (``encoder_``)
    takes raw data, as it was fitted, and encodes it; a model without one (built from
    parameters or fitted to codes) takes codes. ``True`` passes codes to a model with an
    encoder; a :class:`tensorprob.Encoded` always holds codes."""

_CODES = """\
Parameters
----------
X : array-like, DataFrame, tensor, Encoded or scipy.sparse, shape (M, N) or (M, len(variables))
    One row per sample: raw values (encoded with ``encoder_``) or integer codes (see
    ``codes``). A missing entry (``None``/``NaN`` in raw data, ``-1`` in codes) is
    marginalised exactly. Raw data of a model with a label may also hold the N - 1
    feature columns alone (the label's column absent). A sparse matrix is scored from its
    stored entries (implicit entries are the value 0, or code 0).
variables : sequence of int, optional
    Indices of the variables the columns of ``X`` hold (default all, in order).
""" + _CODES_KW

_MC = """\
n_samples : int, default=10000
    Number of model samples of the Monte-Carlo estimate (``method="mc"``).
random_state : int, numpy.random.Generator, torch.Generator or None, default=None
    Seed of the Monte-Carlo samples; ``None`` draws fresh entropy.
samples : array-like, DataFrame, tensor or Encoded of shape (T, N), optional
    Samples to use instead of drawing ``n_samples`` (common random numbers across calls):
    raw values or codes, as ``X`` of :meth:`log_prob` (the output of :meth:`sample` is
    codes: pass ``codes=True`` with it to a model with an encoder).
""" + _CODES_KW

# the fragments below that start a Parameters section hold its header too
_PREDICT = """\
Parameters
----------
X : array-like, DataFrame, tensor, Encoded or scipy.sparse
    All N columns (the target's column is ignored) or N - 1 (it is absent); raw values
    or integer codes (see ``codes``); a sparse matrix is read from its stored entries.
target : int, optional
    Index of the predicted variable; defaults to the label variable.
""" + _CODES_KW

_FORMAT = "tensorprob.CPDModel/3"


def _normalization_tol(dtype: torch.dtype, size: int) -> float:
    return max(1e-6, 16 * torch.finfo(dtype).eps * size)


def _check_normalized(weights: torch.Tensor, factors: Sequence[torch.Tensor], what: str) -> None:
    """Raise unless ``weights`` sums to 1 and every factor column sums to 1 (to 1e-6 in float64)."""
    dev = float((weights.to(torch.float64).sum() - 1).abs())
    tol = _normalization_tol(weights.dtype, weights.numel())
    if not dev <= tol:
        raise ValueError(f"{what}: the weights sum to {float(weights.to(torch.float64).sum())!r}, not 1 "
                         f"(tolerance {tol:.1e})")
    for n, A in enumerate(factors):
        col = A.to(torch.float64).sum(0)
        err = (col - 1).abs()
        tol = _normalization_tol(A.dtype, A.shape[0])
        if not bool((err <= tol).all()):
            f = int(torch.argmax(torch.where(torch.isnan(err), torch.inf, err)))
            raise ValueError(f"{what}: column {f} of factor {n} sums to {float(col[f])!r}, not 1 (tolerance {tol:.1e})")


_FRAGMENTS = {"codes_kw": _CODES_KW, "predict": _PREDICT, "model_meta": _MODEL_META, "codes": _CODES, "mc": _MC}


@fill_doc(**_FRAGMENTS)
class CPDModel:
    """Nonnegative canonical polyadic decomposition (CPD) model of a joint probability mass function (PMF).

    ``P(x_1..x_N) = sum_f weights[f] prod_n factors[n][x_n, f]``: a latent class (naive Bayes
    mixture) model with a hidden ``Z``, ``P(Z = f) = weights[f]`` and
    ``factors[n][i, f] = P(X_n = i | Z = f)``. The parameters are held in log space
    (:attr:`log_weights`, :attr:`log_factors`); the probabilities are derived from them once
    and cached. Fitted models come from :func:`tensorprob.fit_cpd` (through
    :meth:`from_log_params`, without leaving log space).

    Parameters
    ----------
    weights : tensor of shape (F,)
        Mixing weights (a point of the simplex).
    factors : list of tensors of shape (I_n, F)
        Column-stochastic factor matrices, one per variable.
    %(model_meta)s
    normalize : bool, default=False
        Rescale ``weights`` to sum to one and every factor column to sum to one. Without it
        the parameters must already be normalized (to 1e-6 in float64, a few ulps times the
        size in float32), else a ``ValueError``.

    Attributes
    ----------
    log_weights : tensor of shape (F,)
        ``log P(Z = f)`` (canonical).
    log_factors : list of tensors of shape (I_n, F)
        ``log P(X_n = i | Z = f)`` (canonical).
    weights : tensor of shape (F,)
        ``exp(log_weights)`` (cached).
    factors : list of tensors of shape (I_n, F)
        ``exp(log_factors)`` (cached).
    n_iter_ : int
        M-steps performed.
    loglik_history_ : ndarray
        Mean training log-likelihood (nats per sample) after 0, 1, ..., ``n_iter_`` M-steps.
    converged_ : bool
        Whether the relative change fell to ``tol`` before ``n_iter_max``.
    encoder_ : Encoder or None
        The encoder that turned raw data into codes, when ``fit_cpd`` encoded it; its
        ``transform`` encodes new raw data for :meth:`log_prob` and friends.

    See Also
    --------
    tensorprob.fit_cpd : Fits a model by expectation-maximization (EM).
    tensorprob.CPD : The scikit-learn estimator around ``fit_cpd``.

    Notes
    -----
    Methods take the data the model was fitted on, as scikit-learn estimators do: a model
    with an encoder (``encoder_``, set by :func:`tensorprob.fit_cpd` on raw data) encodes
    raw values (NumPy arrays, lists, DataFrames, tensors; the label's column holds values of
    :attr:`classes`), and takes integer codes only through an explicit path: a
    :class:`tensorprob.Encoded` or ``codes=True``. A model without an encoder (built from
    parameters, :meth:`from_log_params` or :meth:`from_tensorly`, or fitted to codes) takes
    integer codes and rejects a code outside ``0..I_n - 1``. A missing entry (``-1``,
    ``None``, ``NaN``) is marginalised exactly. Results are torch tensors on the model's
    device, except :meth:`predict`, which returns labels as a NumPy array (like scikit-learn).

    %(cpd_references)s

    Examples
    --------
    >>> import torch
    >>> from tensorprob import CPDModel
    >>> m = CPDModel(torch.tensor([0.5, 0.5], dtype=torch.float64),
    ...              [torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64)] * 2)
    >>> m
    CPDModel(rank=2, n_variables=2, device=cpu, dtype=torch.float64, target=None)
    >>> round(float(m.log_prob([[0, 0]])[0].exp()), 4)
    0.41
    >>> [round(p, 2) for p in m.predict_proba([[0, 1]], target=1)[0].tolist()]
    [0.82, 0.18]
    """

    def __init__(self, weights: torch.Tensor, factors: Sequence[torch.Tensor], *,
                 variable_names: Sequence[str] | None = None, target: int | None = None,
                 classes: np.ndarray | None = None, encoder: Any = None, n_iter: int = 0,
                 loglik_history: np.ndarray | None = None, converged: bool = False, normalize: bool = False) -> None:
        weights = torch.as_tensor(weights)
        factors = [torch.as_tensor(A, dtype=weights.dtype, device=weights.device) for A in factors]
        self._check_shapes(weights, factors)
        if bool((weights < 0).any()) or any(bool((A < 0).any()) for A in factors):
            raise ValueError("weights and factors must be nonnegative")
        if not bool(torch.isfinite(weights).all()) or not all(bool(torch.isfinite(A).all()) for A in factors):
            raise ValueError("weights and factors must be finite")
        if normalize:
            if not bool(weights.sum() > 0) or any(bool((A.sum(0) <= 0).any()) for A in factors):
                raise ValueError("normalize=True needs weights and factor columns with positive sums")
            weights = weights / weights.sum()
            factors = [A / A.sum(0, keepdim=True) for A in factors]
        else:
            try:
                _check_normalized(weights, factors, "CPDModel")
            except ValueError as exc:
                raise ValueError(f"{exc}; pass normalize=True to rescale") from None
        self._set(torch.log(weights), [torch.log(A) for A in factors], variable_names, target, classes, encoder,
                  n_iter, loglik_history, converged)
        self._probs = (weights, factors)  # the given probabilities are the cache: no exp(log) round trip

    @classmethod
    def from_log_params(cls, log_weights: torch.Tensor, log_factors: Sequence[torch.Tensor], *,
                        variable_names: Sequence[str] | None = None, target: int | None = None,
                        classes: np.ndarray | None = None, encoder: Any = None, n_iter: int = 0,
                        loglik_history: np.ndarray | None = None, converged: bool = False) -> CPDModel:
        """A model from log parameters, kept as they are (the canonical representation).

        Parameters
        ----------
        log_weights : tensor of shape (F,)
            ``log P(Z = f)`` (``-inf`` for a component without mass); cast to the factors' dtype.
        log_factors : list of tensors of shape (I_n, F)
            ``log P(X_n = i | Z = f)``.
        %(model_meta)s

        Returns
        -------
        CPDModel
            A model holding the given log parameters (not copied when dtype and device match).

        Raises
        ------
        ValueError
            Mismatched shapes, or a NaN / ``+inf`` log parameter.

        Examples
        --------
        >>> import math, torch
        >>> from tensorprob import CPDModel
        >>> lw = torch.log(torch.tensor([0.25, 0.75], dtype=torch.float64))
        >>> lf = [torch.log(torch.tensor([[0.5, 1.0], [0.5, 0.0]], dtype=torch.float64))]
        >>> m = CPDModel.from_log_params(lw, lf)
        >>> m.weights.tolist(), m.factors[0].tolist()
        ([0.25, 0.75], [[0.5, 1.0], [0.5, 0.0]])
        >>> m.log_weights is lw
        True
        """
        log_factors = [torch.as_tensor(A) for A in log_factors]
        if not log_factors:
            raise ValueError("a CPD model needs at least one factor")
        dt, dev = log_factors[0].dtype, log_factors[0].device
        log_factors = [A.to(dev, dt) for A in log_factors]
        log_weights = torch.as_tensor(log_weights).to(dev, dt)
        cls._check_shapes(log_weights, log_factors)
        if any(bool((torch.isnan(T) | (T == torch.inf)).any()) for T in [log_weights, *log_factors]):
            raise ValueError("log parameters must not be NaN or +inf")
        m = cls.__new__(cls)
        m._set(log_weights, log_factors, variable_names, target, classes, encoder, n_iter, loglik_history, converged)
        m._probs = None
        return m

    @staticmethod
    def _check_shapes(weights: torch.Tensor, factors: Sequence[torch.Tensor]) -> None:
        if weights.ndim != 1 or weights.numel() < 1:
            raise ValueError(f"weights must be a non-empty 1-D tensor, got shape {tuple(weights.shape)}")
        if not factors:
            raise ValueError("a CPD model needs at least one factor")
        F = weights.numel()
        for n, A in enumerate(factors):
            if A.ndim != 2 or A.shape[1] != F:
                raise ValueError(f"factor {n} must have shape (I_{n}, {F}), got {tuple(A.shape)}")

    def _set(self, log_w: torch.Tensor, log_f: list[torch.Tensor], names: Sequence[str] | None, target: int | None,
             classes: Any, encoder: Any, n_iter: int, history: Any, converged: bool) -> None:
        self.log_weights, self.log_factors = log_w, list(log_f)
        self.variable_names = list(names) if names is not None else [f"x{n}" for n in range(len(log_f))]
        if len(self.variable_names) != len(log_f):
            raise ValueError(f"{len(self.variable_names)} variable names for {len(log_f)} factors")
        self.target = target
        self.classes = classes
        self.encoder_ = encoder
        self.n_iter_ = int(n_iter)
        self.loglik_history_ = np.empty(0) if history is None else np.asarray(history, dtype=np.float64)
        self.converged_ = bool(converged)
        self._batch: LatentClassBatch | None = None

    # -- basic properties -----------------------------------------------------------------
    @property
    def weights(self) -> torch.Tensor:
        """Mixing weights ``P(Z = f)``, shape (F,) (derived from :attr:`log_weights`, cached)."""
        return self._probabilities()[0]

    @property
    def factors(self) -> list[torch.Tensor]:
        """Factors ``P(X_n = i | Z = f)``, one (I_n, F) tensor per variable (derived, cached)."""
        return self._probabilities()[1]

    def _probabilities(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        if self._probs is None:
            self._probs = (torch.exp(self.log_weights), [torch.exp(A) for A in self.log_factors])
        return self._probs

    def _core(self) -> LatentClassBatch:
        """This model as a batch of one for the information core (built once)."""
        if self._batch is None:
            self._batch = LatentClassBatch(*self.stack([self]))
        return self._batch

    @property
    def rank(self) -> int:
        """Number of components F."""
        return int(self.log_weights.numel())

    @property
    def n_variables(self) -> int:
        """Number of variables N (the label included, when the model has one)."""
        return len(self.log_factors)

    @property
    def cardinalities(self) -> np.ndarray:
        """Alphabet sizes I_n."""
        return np.array([A.shape[0] for A in self.log_factors], dtype=np.int64)

    @property
    def device(self) -> torch.device:
        """Device of the parameters."""
        return self.log_weights.device

    @property
    def dtype(self) -> torch.dtype:
        """Floating dtype of the parameters."""
        return self.log_weights.dtype

    def __repr__(self) -> str:
        return (f"CPDModel(rank={self.rank}, n_variables={self.n_variables}, device={self.device}, "
                f"dtype={self.dtype}, target={self.target})")

    @staticmethod
    def stack(models: Sequence[CPDModel]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded log parameters of G models over the same variables, for batched work.

        Parameters
        ----------
        models : sequence of CPDModel
            Models with the same number of variables, device and dtype (ranks and alphabets
            may differ).

        Returns
        -------
        log_w : tensor of shape (G, F)
            Log weights; ``-inf`` for components beyond a model's rank.
        log_f : tensor of shape (G, V, I, F)
            Log factors; ``-inf`` for values beyond a variable's alphabet, 0 (``log 1``) for
            components beyond a model's rank. F and I are the largest over the models.

        Raises
        ------
        ValueError
            No models, or models over different numbers of variables.

        Examples
        --------
        >>> import torch
        >>> from tensorprob import CPDModel
        >>> a = CPDModel(torch.tensor([1.0], dtype=torch.float64), [torch.tensor([[0.5], [0.5]], dtype=torch.float64)])
        >>> b = CPDModel(torch.tensor([0.5, 0.5], dtype=torch.float64),
        ...              [torch.tensor([[0.2, 0.3], [0.3, 0.3], [0.5, 0.4]], dtype=torch.float64)])
        >>> log_w, log_f = CPDModel.stack([a, b])
        >>> tuple(log_w.shape), tuple(log_f.shape)
        ((2, 2), (2, 1, 3, 2))
        >>> log_w[0].tolist()
        [0.0, -inf]
        """
        models = list(models)
        if not models:
            raise ValueError("stack needs at least one model")
        V = models[0].n_variables
        if any(m.n_variables != V for m in models):
            raise ValueError(f"models describe different numbers of variables: {[m.n_variables for m in models]}")
        dev, dt = models[0].device, models[0].dtype
        F = max(m.rank for m in models)
        I = max(int(m.cardinalities.max()) for m in models)
        log_w = torch.full((len(models), F), -torch.inf, dtype=dt, device=dev)
        log_f = torch.full((len(models), V, I, F), -torch.inf, dtype=dt, device=dev)
        for g, m in enumerate(models):  # assembling the models' small tables (no data loop)
            log_w[g, : m.rank] = m.log_weights
            for v, A in enumerate(m.log_factors):
                log_f[g, v, : A.shape[0], : m.rank] = A
                log_f[g, v, : A.shape[0], m.rank:] = 0.0
        return log_w, log_f

    def marginal(self, variables: Sequence[int]) -> CPDModel:
        """The model of the variables ``variables`` alone (the others summed out): a subset of factors.

        Parameters
        ----------
        variables : sequence of int
            Indices of the variables kept, in the order of the new model.

        Returns
        -------
        CPDModel
            The model of ``P(x_S)``: the same weights and the factors of ``variables``.
            No label, no fit diagnostics.
        """
        var = self._check_variables(variables)
        return CPDModel.from_log_params(self.log_weights, [self.log_factors[v] for v in var],
                                        variable_names=[self.variable_names[v] for v in var])

    # -- conversion -----------------------------------------------------------------------
    def _meta(self) -> dict:
        return {"variable_names": self.variable_names, "target": self.target, "classes": self.classes,
                "encoder": self.encoder_, "n_iter": self.n_iter_, "loglik_history": self.loglik_history_,
                "converged": self.converged_}

    def to(self, device: Any = None, dtype: Any = None) -> CPDModel:
        """A copy on another device and/or dtype (history and metadata kept).

        Parameters
        ----------
        device : {"auto", "cpu", "cuda"}, torch.device or None, default=None
            Device of the copy; ``None`` keeps the model's.
        dtype : {"float32", "float64"}, torch.dtype or None, default=None
            Floating dtype of the copy; ``None`` keeps the model's.

        Returns
        -------
        CPDModel
            The copy (log parameters converted, diagnostics and metadata shared).
        """
        dev = resolve_device(device) if device is not None else self.device
        dt = resolve_dtype(dtype, dev) if dtype is not None else self.dtype
        return CPDModel.from_log_params(self.log_weights.to(dev, dt), [A.to(dev, dt) for A in self.log_factors],
                                        **self._meta())

    def to_tensorly(self):
        """The model as a ``tensorly.cp_tensor.CPTensor`` (weights, factors) with torch tensors.

        Returns
        -------
        tensorly.cp_tensor.CPTensor
            ``(weights, factors)``: copies of :attr:`weights` and :attr:`factors`.

        Raises
        ------
        ImportError
            When tensorly (an optional dependency) is not installed.
        """
        try:
            import tensorly as tl
            from tensorly.cp_tensor import CPTensor
        except ImportError as exc:
            raise ImportError('CPDModel.to_tensorly needs tensorly: pip install "tensorprob[tensorly]"') from exc

        with tl.backend_context("pytorch"):
            return CPTensor((self.weights.clone(), [A.clone() for A in self.factors]))

    @classmethod
    def from_tensorly(cls, cp: Any, **kwargs: Any) -> CPDModel:
        """Build a model from a nonnegative ``CPTensor`` (or ``(weights, factors)``).

        Columns are rescaled to sum to one with the scale moved into the weights, and the
        weights are normalised to sum to one (the tensor is read as a PMF up to scale).

        Parameters
        ----------
        cp : CPTensor or (weights, factors)
            ``weights`` may be None (all ones).
        **kwargs
            Passed to :class:`CPDModel` (``variable_names``, ``target``, ...).

        Returns
        -------
        CPDModel
            The normalised model (a PMF).

        Raises
        ------
        ValueError
            Negative entries, or a tensor that is zero everywhere.
        """
        weights, factors = cp
        factors = [torch.as_tensor(np.asarray(A) if not torch.is_tensor(A) else A) for A in factors]
        dtype = factors[0].dtype if factors[0].is_floating_point() else torch.float64
        factors = [A.to(dtype) for A in factors]
        F = factors[0].shape[1]
        w = (torch.ones(F, dtype=dtype) if weights is None else
             torch.as_tensor(np.asarray(weights) if not torch.is_tensor(weights) else weights).to(dtype))
        w = w.to(factors[0].device)
        if bool((w < 0).any()) or any(bool((A < 0).any()) for A in factors):
            raise ValueError("a CPD joint PMF needs nonnegative weights and factors")
        scaled = []
        for A in factors:
            s = A.sum(0)
            w = w * s
            scaled.append(torch.where(s > 0, A / torch.where(s > 0, s, torch.ones_like(s)), 1.0 / A.shape[0]))
        total = w.sum()
        if not bool(total > 0):
            raise ValueError("the CP tensor is zero everywhere")
        return cls(w / total, scaled, **kwargs)

    def to_dense(self) -> torch.Tensor:
        """The full probability tensor (only for small models).

        Returns
        -------
        tensor of shape ``tuple(cardinalities)``
            ``P(x_1, ..., x_N)`` of every joint state.
        """
        cur = self.log_weights[None, :]
        for A in self.log_factors:
            cur = (cur[:, None, :] + A[None, :, :]).reshape(-1, self.rank)
        return torch.exp(torch.logsumexp(cur, 1)).reshape(tuple(int(i) for i in self.cardinalities))

    # -- input checking -------------------------------------------------------------------
    def _codes(self, X: Any, variables: Sequence[int] | None = None,
               codes: bool | None = None) -> tuple[torch.Tensor, list[int]]:
        """Codes as an (M, N) int64 tensor on the model device; ``variables`` selects columns.

        ``X`` may have all N columns, or exactly one column per entry of ``variables`` (or,
        for raw data of a model with a label, the N - 1 feature columns). An ``Encoded``
        holds codes; otherwise a model with an encoder encodes raw data unless ``codes=True``.
        """
        from ..encoding import Encoded

        if isinstance(X, SparseCodeRows):  # rows coded already (by the estimator)
            return X, list(range(self.n_variables)) if variables is None else self._check_variables(variables)
        if isinstance(X, Encoded):
            if codes is False:
                raise ValueError("X is an Encoded object (codes) but codes=False was passed")
            X, codes = X.codes, True
        if codes is None:
            codes = self.encoder_ is None
        if is_sparse(X):
            return self._sparse_codes(X, variables, codes)
        if not codes:
            if self.encoder_ is None:
                raise ValueError("this model has no encoder (it was built from parameters or fitted to codes): "
                                 "pass integer codes (codes=True), or fit the model to raw data")
            X = self._encode_raw(X, variables)
        return self._check_codes(X, variables)

    def _encode_raw(self, X: Any, variables: Sequence[int] | None) -> np.ndarray:
        """Raw data (NumPy, lists, DataFrames, tensors) to (M, N) codes with ``encoder_``, -1 outside ``variables``."""
        N, t, enc = self.n_variables, self.target, self.encoder_
        var = list(range(N)) if variables is None else self._check_variables(variables)
        feats = [n for n in range(N) if n != t]
        if int(getattr(enc, "n_features_in_", len(feats))) != len(feats):
            raise ValueError(f"the model's encoder takes {enc.n_features_in_} columns but the model has "
                             f"{len(feats)} feature variables")
        frame = hasattr(X, "iloc") and hasattr(X, "columns")
        if not frame:
            if torch.is_tensor(X):
                X = to_numpy(X)
            X = np.asarray(X, dtype=object) if isinstance(X, (list, tuple)) else np.asarray(X)
            if X.ndim == 1:
                X = X[None, :]
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D (n_samples, n_variables), got shape {X.shape}")
        width, M = int(X.shape[1]), int(X.shape[0])
        wanted = set(var)
        src = {int(n): j for j, n in enumerate(self._column_variables(width, var, variables is not None, True))
               if n in wanted}

        def column(j: int) -> np.ndarray:
            return np.asarray(X.iloc[:, j]) if frame else X[:, j]

        out = np.full((M, N), -1, dtype=np.int64)
        fvar = [n for n in var if n != t]
        if fvar:
            built = not all(n in src for n in feats)
            if not built:  # every feature column is there: encode them as they are
                cols = [src[n] for n in feats]
                part = X.iloc[:, cols] if frame else X[:, cols]
            else:  # the absent feature columns are missing entries
                names = getattr(enc, "feature_names_in_", None)
                if frame and names is not None:
                    import pandas as pd

                    part = pd.DataFrame({str(nm): (X.iloc[:, src[n]].reset_index(drop=True) if n in src else
                                                   pd.Series([None] * M, dtype=object))
                                         for nm, n in zip(names, feats)})
                else:
                    part = np.full((M, len(feats)), None, dtype=object)
                    for k, n in enumerate(feats):
                        if n in src:
                            part[:, k] = column(src[n])
            with warnings.catch_warnings():
                if built:
                    warnings.filterwarnings("ignore", message=".*feature names.*")
                out[:, feats] = np.asarray(enc.transform(part)).astype(np.int64)
            out[:, [n for n in feats if n not in var]] = -1
        if t is not None and t in var:
            out[:, t] = self._label_codes(column(src[t]), unseen="error")
        return out

    def _label_codes(self, y: Any, unseen: str = "error") -> np.ndarray:
        """Codes of labels (values of :attr:`classes`): -1 for missing ones; unseen ones raise or are missing."""
        from ..encoding._encode import _is_missing

        y = np.asarray(to_numpy(y) if torch.is_tensor(y) else y)
        if self.classes is None:
            raise ValueError("this model has no class labels to encode")
        classes = np.asarray(self.classes)
        miss = _is_missing(y) if y.dtype.kind in "fO" else np.zeros(y.shape, bool)
        vals = y[~miss]
        try:
            pos = np.searchsorted(classes, vals).clip(0, len(classes) - 1)
            ok = np.asarray(classes[pos] == vals, dtype=bool)
        except TypeError:
            cs, vs = classes.astype(str), vals.astype(str)
            pos = np.searchsorted(cs, vs).clip(0, len(cs) - 1)
            ok = np.asarray(cs[pos] == vs, dtype=bool)
        if not ok.all() and unseen == "error":
            raise ValueError(f"label {vals[~ok][0]!r} was not seen when fitting; classes are {classes.tolist()}")
        out = np.full(y.shape, -1, dtype=np.int64)
        out[~miss] = np.where(ok, pos, -1)
        return out

    def _check_codes(self, X: Any, variables: Sequence[int] | None = None) -> tuple[torch.Tensor, list[int]]:
        """Validated integer codes as an (M, N) int64 tensor on the model device."""
        N = self.n_variables
        var = list(range(N)) if variables is None else self._check_variables(variables)
        if torch.is_tensor(X):
            if X.is_floating_point() or X.dtype == torch.bool:
                raise TypeError(f"X must hold integer codes, got a {X.dtype} tensor")
            T = X.to(self.device, torch.int64)
        else:
            arr = np.asarray(X)  # lists and other array-likes too
            T = torch.as_tensor(_integer_codes(arr, arr.dtype), device=self.device)
        if T.ndim == 1:
            T = T[None, :] if T.numel() == (N if variables is None else len(var)) else T[:, None]
        if T.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_variables), got shape {tuple(T.shape)}")
        of_col = self._column_variables(int(T.shape[1]), var, variables is not None, False)
        if T.shape[1] == N:
            full = T
        else:
            full = torch.full((T.shape[0], N), -1, dtype=torch.int64, device=self.device)
            full[:, torch.as_tensor(of_col, device=self.device)] = T
        cards = torch.as_tensor(self.cardinalities, device=self.device)
        sub = full[:, var]
        bad = (sub < -1) | (sub >= cards[var][None, :])
        if bool(bad.any()):
            r, c = (int(v) for v in torch.nonzero(bad)[0])
            raise self._out_of_range(var[c], int(sub[r, c]), r)
        return full, var

    def _column_variables(self, width: int, var: list[int], given: bool, features: bool) -> np.ndarray:
        """The variable each of ``width`` columns holds: all N, one per entry of ``var`` (``given``: the caller
        named them), or, for raw data (``features``), the N - 1 features of a model whose label is not asked for."""
        N, t = self.n_variables, self.target
        if width == N:
            return np.arange(N)
        if given and width == len(var):
            return np.asarray(var)
        if features and t is not None and width == N - 1 and t not in var:
            return np.asarray([n for n in range(N) if n != t])
        want = f"{N}" if not given else f"{N} or {len(var)} (one per variable)"
        raise ValueError(f"X has {width} columns, expected {want}")

    def _out_of_range(self, n: int, value: int, row: int) -> ValueError:
        """The error of a code outside variable ``n``'s alphabet (and not -1, missing)."""
        return ValueError(f"code out of range in column {n} ({self.variable_names[n]!r}): value {value} at row {row}, "
                          f"expected 0..{int(self.cardinalities[n]) - 1} or -1 for missing")

    def _sparse_codes(self, X: Any, variables: Sequence[int] | None, codes: bool) -> tuple[SparseCodeRows, list[int]]:
        """A scipy.sparse X as :class:`SparseCodeRows` in the model's variables, and the variables to score.

        Columns map to variables as for dense rows (all N, one per entry of ``variables``, or the
        N - 1 features of a model with a label). Codes (``codes=True``): each stored value is
        its code (-1 missing), an implicit entry code 0. Raw data: the features are coded by
        the model's encoder from their stored entries (implicit zeros are the value 0), each
        variable's code of 0 implicit. A variable without a column is missing in every row.
        """
        import scipy.sparse as sp

        from ..encoding._sparse import transform_sparse

        N, t = self.n_variables, self.target
        var = list(range(N)) if variables is None else self._check_variables(variables)
        feats = [n for n in range(N) if n != t]
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_variables), got shape {tuple(X.shape)}")
        width = int(X.shape[1])
        of_col = self._column_variables(width, var, variables is not None, not codes)  # as for dense rows
        base = np.zeros(N, dtype=np.int64)
        if codes:
            csr = sp.csr_matrix(X)
            csr = sp.csr_matrix((_integer_codes(csr.data, csr.dtype), csr.indices.copy(), csr.indptr.copy()),
                                shape=csr.shape)
            csr.sum_duplicates()
            csr.eliminate_zeros()
            cards = self.cardinalities[of_col][csr.indices]
            bad = np.flatnonzero((csr.data < -1) | (csr.data >= cards))
            if bad.size:
                r = int(np.searchsorted(csr.indptr, bad[0], side="right") - 1)
                raise self._out_of_range(int(of_col[csr.indices[bad[0]]]), int(csr.data[bad[0]]), r)
        else:
            if self.encoder_ is None:
                raise ValueError("this model has no encoder (it was built from parameters or fitted to codes): "
                                 "pass integer codes (codes=True), or fit the model to raw data")
            if of_col.tolist() != feats:
                raise ValueError(f"raw sparse X must hold the model's {len(feats)} feature columns, in order (got "
                                 f"{width} columns)")
            csr, zero = transform_sparse(self.encoder_, X, return_zero=True)
            csr.data = csr.data.astype(np.int64)
            csr.data[csr.data == zero[csr.indices]] = 0  # the dense numbering: the value 0's code is implicit
            base[of_col] = zero
        rows = SparseCodeRows(csr.indptr, of_col[csr.indices], csr.data, base)
        present = set(of_col.tolist())
        return rows, [n for n in var if n in present]

    def _sparse_log_joint(self, rows: SparseCodeRows, variables: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """``log P(Z = f, x_S)`` of sparse rows as its finite part and its count of zero factors: two (M, F) tensors.

        Every row starts from the variables' implicit codes (one (F,) sum for all rows); each
        stored entry swaps its variable's implicit code for its own (a missing entry for no
        factor), so the work is one gather per stored entry. A probability 0 is counted rather
        than summed as ``-inf`` (an implicit code of probability 0 that an entry replaces
        cancels exactly); the joint is ``-inf`` where the count is positive.
        """
        dev, dt, F = self.device, self.dtype, self.rank
        N = self.n_variables
        table = torch.cat(list(self.log_factors), 0)  # (D, F)
        offs = torch.as_tensor(np.concatenate([[0], np.cumsum(self.cardinalities)[:-1]]), device=dev)
        in_var = torch.zeros(N, dtype=torch.bool, device=dev)
        in_var[list(variables)] = True
        at_base = table[offs + torch.as_tensor(rows.base, device=dev)]  # (N, F)
        base_zero = torch.isneginf(at_base) & in_var[:, None]
        base_fin = at_base.masked_fill(torch.isneginf(at_base) | ~in_var[:, None], 0.0)
        fin0 = self.log_weights + base_fin.sum(0)
        zero0 = base_zero.sum(0).to(dt)
        M = rows.shape[0]
        finite = torch.empty((M, F), dtype=dt, device=dev)
        zeros = torch.empty((M, F), dtype=dt, device=dev)
        itemsize = torch.finfo(dt).bits // 8
        per_row = (6 * F * itemsize + 32) * max(1, rows.nnz // max(1, M)) + 2 * F * itemsize  # its entries' temporaries
        for s, e in chunk_ranges(M, per_row):
            r, c, x = (torch.as_tensor(a, device=dev) for a in rows.entries(s, e))
            keep = in_var[c]
            r, c, x = r[keep], c[keep], x[keep]
            obs = (x >= 0)[:, None]
            val = table[offs[c] + x.clamp_min(0)]
            val_zero = torch.isneginf(val) & obs
            val_fin = val.masked_fill(val_zero | ~obs, 0.0)
            finite[s:e] = fin0
            finite[s:e].index_add_(0, r, val_fin - base_fin[c])
            zeros[s:e] = zero0
            zeros[s:e].index_add_(0, r, val_zero.to(dt) - base_zero[c].to(dt))
        return finite, zeros

    def _check_variables(self, variables: Sequence[int] | int) -> list[int]:
        if isinstance(variables, (int, np.integer)):
            variables = [int(variables)]
        var = [int(v) for v in variables]
        N = self.n_variables
        for v in var:
            if not 0 <= v < N:
                raise ValueError(f"variable index {v} out of range for a model of {N} variables")
        if len(set(var)) != len(var):
            raise ValueError(f"variables contain duplicates: {var}")
        return var

    def _target_index(self, target: int | None) -> int:
        if target is None:
            if self.target is None:
                raise ValueError("this model has no label variable; pass target=<variable index>")
            return int(self.target)
        return self._check_variables([target])[0]

    # -- probabilities --------------------------------------------------------------------
    def _latent_log_joint(self, codes: torch.Tensor | SparseCodeRows, variables: Sequence[int]) -> torch.Tensor:
        """``log P(Z = f, x_S)`` for every row (M, F); missing entries (-1) are left out exactly."""
        if isinstance(codes, SparseCodeRows):
            finite, zeros = self._sparse_log_joint(codes, variables)
            return finite.masked_fill(zeros > 0, -torch.inf)
        out = self.log_weights[None, :].expand(codes.shape[0], -1).clone()
        for n in variables:  # loop over variables; each step is a gather vectorized over rows
            x = codes[:, n]
            g = self.log_factors[n][x.clamp_min(0)]
            out += torch.where((x >= 0)[:, None], g, torch.zeros_like(g))
        return out

    def log_prob(self, X: Any, variables: Sequence[int] | None = None, *, codes: bool | None = None) -> torch.Tensor:
        """Log-probability (nats) of every row, marginal over ``variables`` (default all).

        %(codes)s

        Returns
        -------
        tensor of shape (M,)
            ``log P(x_S)`` of every row.

        Raises
        ------
        TypeError
            Non-integer codes.
        ValueError
            A wrong number of columns, a code out of range, a raw value the encoder never saw,
            or raw data for a model without an encoder.

        Examples
        --------
        >>> import numpy as np, pandas as pd, tensorprob
        >>> df = pd.DataFrame({"a": [1, 2, 3, 4] * 25, "b": [10, 20, 10, 20] * 25})
        >>> m = tensorprob.fit_cpd(df, rank=1, device="cpu", dtype="float64")
        >>> raw = m.log_prob(pd.DataFrame({"a": [2], "b": [20]}))
        >>> bool(raw == m.log_prob([[1, 1]], codes=True))
        True
        """
        full, var = self._codes(X, variables, codes)
        return torch.logsumexp(self._latent_log_joint(full, var), dim=1)

    def posterior(self, X: Any, variables: Sequence[int] | None = None, *, codes: bool | None = None) -> torch.Tensor:
        """Posterior ``P(Z = f | x)`` of the latent class of every row.

        %(codes)s

        Returns
        -------
        tensor of shape (M, F)
            Rows on the simplex.

        Notes
        -----
        A row the model gives probability 0 (each component gives one of its values
        probability 0) has no posterior in the strict sense; it gets the limit of the
        posterior as those zero probabilities go to 0 together: the posterior, given the row's
        other values, over the components that rule out the fewest of its values. Its
        :meth:`log_prob` is ``-inf``.
        """
        full, var = self._codes(X, variables, codes)
        L = self._latent_log_joint(full, var)
        post = torch.softmax(L, dim=1)
        zero = torch.isneginf(L).all(1)
        if bool(zero.any()):
            some = full.take(to_numpy(torch.nonzero(zero).flatten())) if isinstance(full, SparseCodeRows) else full[zero]
            post[zero] = torch.softmax(self._least_ruled_out(some, var), dim=1)
        return post

    def _least_ruled_out(self, codes: torch.Tensor | SparseCodeRows, variables: Sequence[int]) -> torch.Tensor:
        """Logits of the posterior of rows of probability 0 (see :meth:`posterior`): (M, F)."""
        live = torch.isfinite(self.log_weights)
        if isinstance(codes, SparseCodeRows):
            finite, zeros = self._sparse_log_joint(codes, variables)
        else:
            finite = self.log_weights[None, :].expand(codes.shape[0], -1).clone()
            zeros = torch.zeros_like(finite)
            for n in variables:  # a gather per variable, vectorized over rows
                x = codes[:, n]
                g = self.log_factors[n][x.clamp_min(0)]
                g = torch.where((x >= 0)[:, None], g, torch.zeros_like(g))
                out = torch.isneginf(g)
                zeros += out.to(zeros.dtype)
                finite += g.masked_fill(out, 0.0)
        fewest = zeros.masked_fill(~live[None, :], torch.inf).amin(1, keepdim=True)
        return finite.masked_fill((zeros > fewest) | ~live[None, :], -torch.inf)

    def predict_proba(self, X: Any, target: int | None = None, *, codes: bool | None = None) -> torch.Tensor:
        """``P(X_target | x_rest)`` (the CPD classifier): tensor of shape (M, I_target).

        %(predict)s

        Returns
        -------
        tensor of shape (M, I_target)
            ``P(X_target = i | x_rest)``; rows on the simplex (for a row of features the
            model gives probability 0, through the limit described in :meth:`posterior`).
            Columns are the codes of the target: for the label, in the order of
            :attr:`classes`.
        """
        t = self._target_index(target)
        rest = [n for n in range(self.n_variables) if n != t]
        post = self.posterior(X, rest, codes=codes)
        return post @ self.factors[t].T

    def predict_codes(self, X: Any, target: int | None = None, *, codes: bool | None = None) -> torch.Tensor:
        """The most probable code of ``target`` given the rest (ties to the lowest code).

        %(predict)s

        Returns
        -------
        int64 tensor of shape (M,)
            The argmax of :meth:`predict_proba` of every row, on the model's device.

        See Also
        --------
        predict : The same prediction as labels (values of :attr:`classes`).
        """
        return torch.argmax(self.predict_proba(X, target, codes=codes), dim=1)

    def predict(self, X: Any, target: int | None = None, *, codes: bool | None = None) -> np.ndarray:
        """Predict the most probable value of ``target`` given the rest, in the original label space.

        %(predict)s

        Returns
        -------
        ndarray of shape (M,)
            For the label variable, values of :attr:`classes` (as scikit-learn classifiers
            return them); for a feature target, the encoder's category values of that column
            when it has them (the codes of a discretized column, or of a model without an
            encoder). Ties go to the lowest code.

        See Also
        --------
        predict_codes : The codes, as a tensor on the model's device.

        Examples
        --------
        >>> import numpy as np, tensorprob
        >>> rng = np.random.default_rng(0)
        >>> y = rng.choice(["cat", "dog"], 300)
        >>> X = np.column_stack([(y == "dog") ^ (rng.random(300) < 0.1), rng.integers(0, 3, 300)])
        >>> m = tensorprob.fit_cpd(X, rank=2, y=y, device="cpu", random_state=0)
        >>> m.predict([[1, 0], [0, 2]]).tolist()
        ['dog', 'cat']
        >>> m.predict_codes([[1, 0], [0, 2]]).tolist()
        [1, 0]
        """
        t = self._target_index(target)
        pred = to_numpy(self.predict_codes(X, t, codes=codes))
        values = self._values_of(t)
        return pred if values is None else np.asarray(values)[pred]

    def _values_of(self, n: int) -> np.ndarray | None:
        """The original values of variable ``n``'s codes: the classes of the label, an encoder's categories, or None."""
        if n == self.target:
            return None if self.classes is None else np.asarray(self.classes)
        enc = self.encoder_
        if enc is None:
            return None
        j = n - (self.target is not None and self.target < n)  # the encoder's column of variable n
        try:
            cats = enc.categories_[j]
        except (AttributeError, IndexError, TypeError):
            return None
        return None if cats is None else np.asarray(cats)

    def sample(self, n_samples: int, random_state: RandomStateLike = None, return_latent: bool = False):
        """Draw ``n_samples`` rows of codes (and the latent classes if asked).

        Parameters
        ----------
        n_samples : int
            Number of rows drawn (at least 1).
        %(random_state)s
        return_latent : bool, default=False
            Also return the latent class of every row.

        Returns
        -------
        X : int64 tensor of shape (n_samples, N)
            The codes.
        z : int64 tensor of shape (n_samples,)
            The latent classes; only with ``return_latent=True``.
        """
        if int(n_samples) < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}")
        gen = make_generator(random_state, self.device)
        X, z = self._core().sample(int(n_samples), gen)
        return (X[0], z[0]) if return_latent else X[0]

    # -- information ----------------------------------------------------------------------
    def conditional_entropy_given_latent(self, variables: Sequence[int] | int) -> float:
        """Exact ``H(X_S | Z) = sum_{n in S} H(X_n | Z)`` in nats.

        Parameters
        ----------
        variables : sequence of int or int
            The variables ``S``.

        Returns
        -------
        float
            The conditional entropy (nats).
        """
        return float(self._core().h_given_z[0, self._check_variables(variables)].sum())

    def entropy(self, variables: Sequence[int] | None = None, method: str = "exact", n_samples: int = 10000,
                random_state: RandomStateLike = None, samples: Any = None, codes: bool | None = None) -> Estimate:
        """Joint entropy ``H(X_S)`` in nats.

        Parameters
        ----------
        variables : sequence of int, optional
            Default all variables.
        method : {"exact", "mc"}, default="exact"
            Enumeration of the joint states (raises above the memory budget) or Monte-Carlo
            over ``n_samples`` model samples (or the given ``samples``, common random numbers).
        %(mc)s

        Returns
        -------
        Estimate
            ``(value, stderr, method)`` in nats: ``method="exact"`` with ``stderr=0`` for an
            enumeration, ``method="mc"`` with its Monte-Carlo standard error otherwise.

        Examples
        --------
        >>> import math, torch
        >>> from tensorprob import CPDModel
        >>> m = CPDModel(torch.tensor([1.0], dtype=torch.float64), [torch.full((4, 1), 0.25, dtype=torch.float64)] * 2)
        >>> round(m.entropy().value / math.log(4), 6)
        2.0
        """
        var = list(range(self.n_variables)) if variables is None else self._check_variables(variables)
        if method == "exact":
            v, _ = information(self._core(), var, estimator="entropy_exact")
            return Estimate(float(v[0]), 0.0, "exact")
        X = self._mc_samples(method, n_samples, random_state, samples, codes)
        v, se = information(self._core(), var, estimator="entropy", samples=X[None])
        return Estimate(float(v[0]), float(se[0]), "mc")

    def _mc_samples(self, method: str, n_samples: int, random_state: RandomStateLike, samples: Any,
                    codes: bool | None = None) -> torch.Tensor:
        if method != "mc":
            raise ValueError(f"method must be 'exact' or 'mc', got {method!r}")
        if samples is not None:
            return self._codes(samples, None, codes)[0]
        if int(n_samples) < 2:
            raise ValueError(f"n_samples must be >= 2 for a Monte-Carlo estimate with a standard error, "
                             f"got {n_samples}")
        return self.sample(int(n_samples), random_state)

    def mutual_information(self, variables: Sequence[int], target: str | int = "latent", method: str = "exact",
                           estimator: str = "rao_blackwell", n_samples: int = 10000,
                           random_state: RandomStateLike = None, samples: Any = None,
                           codes: bool | None = None) -> Estimate:
        """``I(X_S; Z)`` (``target="latent"``) or ``I(X_S; X_t)`` (``target=t``) in nats.

        Parameters
        ----------
        variables : sequence of int
            The variables ``S``.
        target : "latent" or int, default="latent"
            The latent class ``Z`` or the index of a variable outside ``variables``.
        method : {"exact", "mc"}, default="exact"
            As in :meth:`entropy`.
        estimator : {"rao_blackwell", "paper"}, default="rao_blackwell"
            For the latent target with ``method="mc"``: ``H(Z) - E[H(P(Z|x_S))]``
            (Rao-Blackwellized, lower variance) or ``H^(X_S) - sum H(X_n|Z)`` (the plug-in
            form of Amiridi et al.). For a variable target the Monte-Carlo estimator is
            ``H(X_t) - E[H(P(X_t|x_S))]``.
        %(mc)s

        Returns
        -------
        Estimate
            ``(value, stderr, method)`` in nats: ``method="exact"`` with ``stderr=0`` for an
            enumeration; for Monte-Carlo, the estimator that ran (``"mc"``, the plug-in
            form, or ``"rao_blackwell"``) with its standard error.

        Raises
        ------
        ValueError
            An unknown target, method or estimator, or a target inside ``variables``.

        Examples
        --------
        >>> import torch
        >>> from tensorprob import CPDModel
        >>> A = torch.eye(2, dtype=torch.float64)  # each variable is a copy of Z
        >>> m = CPDModel(torch.tensor([0.5, 0.5], dtype=torch.float64), [A, A])
        >>> round(m.mutual_information([0]).value, 6), round(m.mutual_information([0], target=1).value, 6)
        (0.693147, 0.693147)
        """
        var = self._check_variables(variables)
        if estimator not in ("rao_blackwell", "paper"):
            raise ValueError(f"estimator must be 'rao_blackwell' or 'paper', got {estimator!r}")
        if isinstance(target, str):
            if target != "latent":
                raise ValueError(f"target must be 'latent' or a variable index, got {target!r}")
            t = None
        else:
            t = self._check_variables([target])[0]
            if t in var:
                raise ValueError(f"target variable {t} is also in variables")
        if method == "exact":
            v, _ = information(self._core(), var, target=t, estimator="exact")
            return Estimate(float(v[0]), 0.0, "exact")
        X = self._mc_samples(method, n_samples, random_state, samples, codes)
        kind = "mc" if estimator == "paper" and t is None else "rao_blackwell"
        v, se = information(self._core(), var, target=t, estimator=kind, samples=X[None])
        return Estimate(float(v[0]), float(se[0]), kind)

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Save log parameters, names, fit diagnostics, class labels and the encoder, without pickle.

        The file (``torch.save`` format ``tensorprob.CPDModel/3``) holds the log parameters as
        tensors and everything else as one JSON text: class labels and encoder categories as
        arrays tagged with their dtype (bools, datetimes, strings and mixed objects come back as
        they were) and the encoder (with its discretizer) as the state of a tensorprob /
        scikit-learn estimator. :meth:`load` reads it with ``torch.load(weights_only=True)``
        and unpickles nothing. The file is written atomically: to a temporary file in the same
        folder, flushed to disk and renamed over ``path``, so an interrupted save (Ctrl-C, a
        full disk) leaves the file that was there before, or the complete new one.

        Parameters
        ----------
        path : str or os.PathLike
            File written.

        Raises
        ------
        ValueError
            Metadata that cannot be written without pickle (e.g. an encoder holding a
            discretizer that is not a tensorprob or scikit-learn estimator, or class labels
            that are arbitrary Python objects).
        """
        from .._files import atomic_write
        from ._persist import dumps

        meta = {"variable_names": [str(v) for v in self.variable_names], "target": self.target,
                "classes": None if self.classes is None else np.asarray(self.classes),
                "encoder": self.encoder_, "n_iter": int(self.n_iter_), "converged": bool(self.converged_)}
        state = {
            "format": _FORMAT,
            "log_weights": self.log_weights.detach().cpu(),
            "log_factors": [A.detach().cpu() for A in self.log_factors],
            "loglik_history": torch.as_tensor(np.asarray(self.loglik_history_, dtype=np.float64)),
            "meta": dumps(meta, "model"),
        }
        with atomic_write(path) as fh:  # an interrupted save leaves the file that was there
            torch.save(state, fh)

    @classmethod
    def load(cls, path: str | os.PathLike, device: Any = None) -> CPDModel:
        """Load a model written by :meth:`save`, onto ``device`` (default: the CPU).

        Nothing is unpickled (``torch.load(weights_only=True)`` and a JSON description), and
        what is read is validated: shapes, nonnegative parameters normalized to 1e-6, names,
        label and class labels consistent with them.

        Parameters
        ----------
        path : str or os.PathLike
            File written by :meth:`save`.
        device : {"auto", "cpu", "cuda"}, torch.device or None, default=None
            Device of the loaded model; ``None`` is the CPU.

        Returns
        -------
        CPDModel
            The saved model, its encoder and fit diagnostics included.

        Raises
        ------
        ValueError
            The file is not a saved model: truncated, corrupt, foreign, of another format
            version, or with inconsistent contents.
        """
        name = os.fspath(path)
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - one error for every unreadable file
            raise ValueError(f"{name!r} is not a saved tensorprob CPDModel (unreadable: {type(exc).__name__}); "
                             "it may be truncated, corrupt or another kind of file") from None
        try:
            m = cls._from_state(state)
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            raise ValueError(f"{name!r} is not a saved tensorprob CPDModel ({exc})") from None
        return m.to(device) if device is not None else m

    @classmethod
    def _from_state(cls, state: Any) -> CPDModel:
        from ._persist import loads

        if not isinstance(state, dict) or state.get("format") != _FORMAT:
            fmt = state.get("format") if isinstance(state, dict) else None
            raise ValueError(f"unknown format {fmt!r}, expected {_FORMAT!r}" if isinstance(fmt, str)
                             else "not a tensorprob model file")
        lw, lf, hist = state["log_weights"], state["log_factors"], state["loglik_history"]
        if not (torch.is_tensor(lw) and isinstance(lf, list) and lf and all(torch.is_tensor(A) for A in lf)
                and torch.is_tensor(hist)):
            raise ValueError("parameters are not tensors")
        if not lw.is_floating_point() or any(A.dtype != lw.dtype for A in lf):
            raise ValueError("parameters are not of one floating dtype")
        meta = loads(state["meta"])
        if not isinstance(meta, dict):
            raise TypeError("bad metadata")
        m = cls.from_log_params(lw, lf, variable_names=meta["variable_names"], target=meta["target"],
                                classes=meta["classes"], encoder=meta["encoder"], n_iter=meta["n_iter"],
                                loglik_history=hist.to(torch.float64).numpy(), converged=meta["converged"])
        _check_normalized(m.weights, m.factors, "stored parameters")
        if m.target is not None:
            if not isinstance(m.target, int) or not 0 <= m.target < m.n_variables:
                raise ValueError(f"target {m.target!r} out of range")
            if m.classes is not None and len(m.classes) != int(m.cardinalities[m.target]):
                raise ValueError(f"{len(m.classes)} class labels for a label of {int(m.cardinalities[m.target])} "
                                 "values")
        if m.encoder_ is not None:
            feats = m.n_variables - (m.target is not None)
            if int(getattr(m.encoder_, "n_features_in_", -1)) != feats:
                raise ValueError("the encoder does not match the model's variables")
        if m.loglik_history_.ndim != 1:
            raise ValueError("bad log-likelihood history")
        return m


def _integer_codes(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Codes given as numbers (a dense array's values or a sparse matrix's stored ones) as int64, NaN as -1.

    Integers are taken as they are; floats only when every value is integral or NaN. Anything
    else is raw data, refused with the way to encode it.
    """
    if dtype.kind in "iu":
        return values.astype(np.int64)
    if dtype.kind == "f" and np.all(np.isnan(values) | (values == np.round(values))):
        return np.where(np.isnan(values), -1, values).astype(np.int64)
    raise TypeError(f"X must hold integer codes (-1 = missing), got dtype {dtype}; encode raw data with "
                    "model.encoder_.transform or tensorprob.encode")
