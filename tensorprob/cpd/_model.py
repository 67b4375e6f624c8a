"""The fitted CPD joint-PMF model."""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import torch

from .._device import RandomStateLike, make_generator, resolve_device, resolve_dtype
from ..estimators import _cpd as est
from ..estimators._cpd import Estimate


class CPDModel:
    """Nonnegative CPD (latent class / naive Bayes mixture) model of a joint PMF.

    ``P(x_1..x_N) = sum_f weights[f] prod_n factors[n][x_n, f]``: a hidden ``Z`` with
    ``P(Z = f) = weights[f]`` and ``factors[n][i, f] = P(X_n = i | Z = f)``.

    Parameters
    ----------
    weights : tensor of shape (F,)
        Mixing weights (a point of the simplex).
    factors : list of tensors of shape (I_n, F)
        Column-stochastic factor matrices, one per variable.
    feature_names : list of str, optional
    target : int, optional
        Index of the label variable when the model was fitted with ``y`` (the last one).
    classes : ndarray, optional
        Label of each code of the target variable.

    Attributes
    ----------
    weights, factors : torch tensors on the fit device
    n_iter_ : int
        M-steps performed.
    loglik_history_ : ndarray
        Mean training log-likelihood (nats per sample) after 0, 1, ..., ``n_iter_`` M-steps.
    converged_ : bool
        Whether the relative change fell to ``tol`` before ``n_iter_max``.
    encoder_ : Encoder or None
        The encoder that turned raw data into codes, when ``fit_cpd`` encoded it; its
        ``transform`` encodes new raw data for :meth:`log_prob` and friends.

    Notes
    -----
    Methods take integer codes (``-1`` marks a missing entry, marginalised exactly) as NumPy
    arrays or torch tensors and return torch tensors on the model's device.
    """

    def __init__(self, weights: torch.Tensor, factors: Sequence[torch.Tensor], *,
                 feature_names: Sequence[str] | None = None, target: int | None = None,
                 classes: np.ndarray | None = None) -> None:
        weights = torch.as_tensor(weights)
        factors = [torch.as_tensor(A, dtype=weights.dtype, device=weights.device) for A in factors]
        if weights.ndim != 1 or weights.numel() < 1:
            raise ValueError(f"weights must be a non-empty 1-D tensor, got shape {tuple(weights.shape)}")
        F = weights.numel()
        for n, A in enumerate(factors):
            if A.ndim != 2 or A.shape[1] != F:
                raise ValueError(f"factor {n} must have shape (I_{n}, {F}), got {tuple(A.shape)}")
        if not factors:
            raise ValueError("a CPD model needs at least one factor")
        if bool((weights < 0).any()) or any(bool((A < 0).any()) for A in factors):
            raise ValueError("weights and factors must be nonnegative")
        if not bool(torch.isfinite(weights).all()) or not all(bool(torch.isfinite(A).all()) for A in factors):
            raise ValueError("weights and factors must be finite")
        self.weights = weights
        self.factors = factors
        self.feature_names = list(feature_names) if feature_names is not None else [f"x{n}" for n in range(len(factors))]
        if len(self.feature_names) != len(factors):
            raise ValueError(f"{len(self.feature_names)} feature names for {len(factors)} factors")
        self.target = target
        self.classes = classes
        self.n_iter_ = 0
        self.loglik_history_ = np.empty(0)
        self.converged_ = False
        self.encoder_ = None

    # -- basic properties -----------------------------------------------------------------
    @property
    def rank(self) -> int:
        """Number of components F."""
        return int(self.weights.numel())

    @property
    def n_features(self) -> int:
        """Number of variables N (the label included)."""
        return len(self.factors)

    @property
    def cardinalities(self) -> np.ndarray:
        """Alphabet sizes I_n."""
        return np.array([A.shape[0] for A in self.factors], dtype=np.int64)

    @property
    def device(self) -> torch.device:
        return self.weights.device

    @property
    def dtype(self) -> torch.dtype:
        return self.weights.dtype

    def _logs(self) -> tuple[torch.Tensor, list[torch.Tensor]]:
        key = (self.weights.data_ptr(), tuple(A.data_ptr() for A in self.factors))
        if getattr(self, "_log_cache_key", None) != key:
            self._log_cache = (torch.log(self.weights), [torch.log(A) for A in self.factors])
            self._log_cache_key = key
        return self._log_cache

    def __repr__(self) -> str:
        return (f"CPDModel(rank={self.rank}, n_features={self.n_features}, device={self.device}, "
                f"dtype={self.dtype}, target={self.target})")

    # -- conversion -----------------------------------------------------------------------
    def to(self, device: Any = None, dtype: Any = None) -> "CPDModel":
        """A copy on another device and/or dtype (history and metadata kept)."""
        dev = resolve_device(device) if device is not None else self.device
        dt = resolve_dtype(dtype, dev) if dtype is not None else self.dtype
        out = CPDModel(self.weights.to(dev, dt), [A.to(dev, dt) for A in self.factors],
                       feature_names=self.feature_names, target=self.target, classes=self.classes)
        out._copy_fit_info(self)
        return out

    def _copy_fit_info(self, other: "CPDModel") -> None:
        self.n_iter_ = other.n_iter_
        self.loglik_history_ = other.loglik_history_
        self.converged_ = other.converged_
        self.encoder_ = other.encoder_

    def to_tensorly(self):
        """The model as a ``tensorly.cp_tensor.CPTensor`` (weights, factors) with torch tensors."""
        import tensorly as tl
        from tensorly.cp_tensor import CPTensor

        with tl.backend_context("pytorch"):
            return CPTensor((self.weights.clone(), [A.clone() for A in self.factors]))

    @classmethod
    def from_tensorly(cls, cp: Any, **kwargs: Any) -> "CPDModel":
        """Build a model from a nonnegative ``CPTensor`` (or ``(weights, factors)``).

        Columns are rescaled to sum to one with the scale moved into the weights, and the
        weights are normalised to sum to one (the tensor is read as a PMF up to scale).
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
            scaled.append(A / torch.where(s > 0, s, torch.ones_like(s)))
        total = w.sum()
        if not bool(total > 0):
            raise ValueError("the CP tensor is zero everywhere")
        return cls(w / total, scaled, **kwargs)

    def to_dense(self) -> torch.Tensor:
        """The full probability tensor (only for small models)."""
        log_w, log_f = self._logs()
        table = est.joint_log_table(log_w, log_f, list(range(self.n_features)))
        return torch.exp(torch.logsumexp(table, 1)).reshape(tuple(int(i) for i in self.cardinalities))

    # -- input checking -------------------------------------------------------------------
    def _codes(self, X: Any, variables: Sequence[int] | None = None) -> tuple[torch.Tensor, list[int]]:
        """Codes as an (M, N) int64 tensor on the model device; ``variables`` selects columns.

        ``X`` may have all N columns, or exactly one column per entry of ``variables``.
        """
        N = self.n_features
        var = list(range(N)) if variables is None else self._check_variables(variables)
        if torch.is_tensor(X):
            if X.is_floating_point() or X.dtype == torch.bool:
                raise TypeError(f"X must hold integer codes, got a {X.dtype} tensor")
            T = X.to(self.device, torch.int64)
        else:
            arr = np.asarray(X)
            if arr.dtype.kind not in "iu":
                if arr.dtype.kind == "f" and arr.size and np.all(np.isnan(arr) | (arr == np.round(arr))):
                    arr = np.where(np.isnan(arr), -1, arr).astype(np.int64)
                else:
                    raise TypeError(f"X must hold integer codes (-1 = missing), got dtype {arr.dtype}; "
                                    "encode raw data with model.encoder_.transform or tensorprob.encode")
            T = torch.as_tensor(arr.astype(np.int64), device=self.device)
        if T.ndim == 1:
            T = T[None, :] if T.numel() == (N if variables is None else len(var)) else T[:, None]
        if T.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_variables), got shape {tuple(T.shape)}")
        if T.shape[1] == N:
            full = T
        elif variables is not None and T.shape[1] == len(var):
            full = torch.full((T.shape[0], N), -1, dtype=torch.int64, device=self.device)
            full[:, var] = T
        else:
            want = f"{N}" if variables is None else f"{N} or {len(var)} (one per variable)"
            raise ValueError(f"X has {T.shape[1]} columns, expected {want}")
        cards = torch.as_tensor(self.cardinalities, device=self.device)
        sub = full[:, var]
        bad = (sub < -1) | (sub >= cards[var][None, :])
        if bool(bad.any()):
            r, c = (int(v) for v in torch.nonzero(bad)[0])
            n = var[c]
            raise ValueError(f"code out of range in column {n} ({self.feature_names[n]!r}): value {int(sub[r, c])} "
                             f"at row {r}, expected 0..{int(cards[n]) - 1} or -1 for missing")
        return full, var

    def _check_variables(self, variables: Sequence[int] | int) -> list[int]:
        if isinstance(variables, (int, np.integer)):
            variables = [int(variables)]
        var = [int(v) for v in variables]
        N = self.n_features
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
    def log_prob(self, X: Any, variables: Sequence[int] | None = None) -> torch.Tensor:
        """Log-probability (nats) of every row, marginal over ``variables`` (default all).

        Parameters
        ----------
        X : array-like or tensor of int codes, shape (M, N) or (M, len(variables))
            ``-1`` marks a missing entry, which is marginalised exactly.
        variables : sequence of int, optional

        Returns
        -------
        tensor of shape (M,)
        """
        codes, var = self._codes(X, variables)
        log_w, log_f = self._logs()
        return torch.logsumexp(est.latent_log_joint(log_w, log_f, codes, var), dim=1)

    def posterior(self, X: Any, variables: Sequence[int] | None = None) -> torch.Tensor:
        """``P(Z = f | x)`` for every row: tensor of shape (M, F)."""
        codes, var = self._codes(X, variables)
        log_w, log_f = self._logs()
        return torch.softmax(est.latent_log_joint(log_w, log_f, codes, var), dim=1)

    def predict_proba(self, X: Any, target: int | None = None) -> torch.Tensor:
        """``P(X_target | x_rest)`` (the CPD classifier): tensor of shape (M, I_target).

        ``X`` has all N columns (the target's column is ignored) or N - 1 (it is absent).
        ``target`` defaults to the label variable.
        """
        t = self._target_index(target)
        rest = [n for n in range(self.n_features) if n != t]
        if torch.is_tensor(X) or np.asarray(X).ndim == 2:
            ncol = X.shape[1] if X.ndim == 2 else None
            if ncol == self.n_features:
                X = X[:, rest]
        post = self.posterior(X, rest)
        return post @ self.factors[t].T

    def predict(self, X: Any, target: int | None = None) -> torch.Tensor:
        """Most probable code of ``target`` given the rest (ties to the lowest code)."""
        return torch.argmax(self.predict_proba(X, target), dim=1)

    def sample(self, n_samples: int, random_state: RandomStateLike = None, return_latent: bool = False):
        """Draw ``n_samples`` rows of codes (and the latent classes if asked)."""
        if int(n_samples) < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples}")
        gen = make_generator(random_state, self.device)
        log_w, log_f = self._logs()
        X, z = est.sample(log_w, log_f, int(n_samples), gen)
        return (X, z) if return_latent else X

    # -- information ----------------------------------------------------------------------
    def conditional_entropy_given_latent(self, variables: Sequence[int] | int) -> float:
        """Exact ``H(X_S | Z) = sum_{n in S} H(X_n | Z)`` in nats."""
        log_w, log_f = self._logs()
        return est.conditional_entropy_given_latent(log_w, log_f, self._check_variables(variables))

    def entropy(self, variables: Sequence[int] | None = None, method: str = "exact", n_samples: int = 10000,
                random_state: RandomStateLike = None, samples: torch.Tensor | None = None) -> Estimate:
        """Joint entropy ``H(X_S)`` in nats.

        Parameters
        ----------
        variables : sequence of int, optional
            Default all variables.
        method : {"exact", "mc"}
            Enumeration of the joint states (raises above the memory budget) or Monte-Carlo
            over ``n_samples`` model samples (or the given ``samples``, common random numbers).

        Returns
        -------
        Estimate
            ``(value, stderr)``; stderr is 0 for exact values.
        """
        var = list(range(self.n_features)) if variables is None else self._check_variables(variables)
        log_w, log_f = self._logs()
        if method == "exact":
            return Estimate(est.entropy_exact(log_w, log_f, var), 0.0)
        X = self._mc_samples(method, n_samples, random_state, samples)
        return Estimate(*est._mean_se(est.mc_terms(log_w, log_f, X, var)["neg_log_p"]))

    def _mc_samples(self, method: str, n_samples: int, random_state: RandomStateLike, samples: Any) -> torch.Tensor:
        if method != "mc":
            raise ValueError(f"method must be 'exact' or 'mc', got {method!r}")
        if samples is not None:
            return self._codes(samples)[0]
        if int(n_samples) < 2:
            raise ValueError(f"n_samples must be >= 2 for a Monte-Carlo estimate with a standard error, got {n_samples}")
        return self.sample(int(n_samples), random_state)

    def mutual_information(self, variables: Sequence[int], target: str | int = "latent", method: str = "exact",
                           estimator: str = "rao_blackwell", n_samples: int = 10000,
                           random_state: RandomStateLike = None, samples: torch.Tensor | None = None) -> Estimate:
        """``I(X_S; Z)`` (``target="latent"``) or ``I(X_S; X_t)`` (``target=t``) in nats.

        Parameters
        ----------
        variables : sequence of int
        target : "latent" or int
        method : {"exact", "mc"}
        estimator : {"rao_blackwell", "paper"}
            For the latent target with ``method="mc"``: ``H(Z) - E[H(P(Z|x_S))]``
            (Rao-Blackwellized, lower variance) or ``H^(X_S) - sum H(X_n|Z)`` (paper 000).
            For a variable target the Monte-Carlo estimator is ``H(X_t) - E[H(P(X_t|x_S))]``.

        Returns
        -------
        Estimate
        """
        var = self._check_variables(variables)
        if estimator not in ("rao_blackwell", "paper"):
            raise ValueError(f"estimator must be 'rao_blackwell' or 'paper', got {estimator!r}")
        log_w, log_f = self._logs()
        if isinstance(target, str):
            if target != "latent":
                raise ValueError(f"target must be 'latent' or a variable index, got {target!r}")
            t = None
        else:
            t = self._check_variables([target])[0]
            if t in var:
                raise ValueError(f"target variable {t} is also in variables")
        if method == "exact":
            h_s = est.entropy_exact(log_w, log_f, var)
            if t is None:
                return Estimate(h_s - est.conditional_entropy_given_latent(log_w, log_f, var), 0.0)
            h_t = est.entropy_exact(log_w, log_f, [t])
            return Estimate(h_s + h_t - est.entropy_exact(log_w, log_f, var + [t]), 0.0)
        X = self._mc_samples(method, n_samples, random_state, samples)
        terms = est.mc_terms(log_w, log_f, X, var, target=t)
        if t is not None:
            h_t = est.entropy_exact(log_w, log_f, [t])
            m, se = est._mean_se(terms["target_entropy"])
            return Estimate(h_t - m, se)
        if estimator == "paper":
            m, se = est._mean_se(terms["neg_log_p"])
            return Estimate(m - est.conditional_entropy_given_latent(log_w, log_f, var), se)
        m, se = est._mean_se(terms["post_entropy"])
        return Estimate(est.latent_entropy(log_w) - m, se)

    # -- persistence ----------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Save parameters, names, history and class labels (``torch.save``; no pickled code)."""
        state = {
            "format": "tensorprob.CPDModel/1",
            "weights": self.weights.detach().cpu(),
            "factors": [A.detach().cpu() for A in self.factors],
            "feature_names": list(self.feature_names),
            "target": self.target,
            "classes": None if self.classes is None else [str(c) for c in np.asarray(self.classes).tolist()],
            "classes_dtype": None if self.classes is None else str(np.asarray(self.classes).dtype),
            "n_iter": int(self.n_iter_),
            "loglik_history": torch.as_tensor(np.asarray(self.loglik_history_, dtype=np.float64)),
            "converged": bool(self.converged_),
        }
        torch.save(state, path)

    @classmethod
    def load(cls, path: str | os.PathLike, device: Any = None) -> "CPDModel":
        """Load a model written by :meth:`save`, onto ``device`` (default: the CPU)."""
        state = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or state.get("format") != "tensorprob.CPDModel/1":
            raise ValueError(f"{os.fspath(path)!r} is not a saved tensorprob CPDModel")
        classes = state["classes"]
        if classes is not None:
            classes = np.asarray(classes).astype(state["classes_dtype"]) if state["classes_dtype"] != "object" \
                else np.asarray(classes, dtype=object)
        m = cls(state["weights"], state["factors"], feature_names=state["feature_names"], target=state["target"],
                classes=classes)
        m.n_iter_ = state["n_iter"]
        m.loglik_history_ = state["loglik_history"].numpy()
        m.converged_ = state["converged"]
        return m.to(device) if device is not None else m
