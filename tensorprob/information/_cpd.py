"""Information quantities of CPD (latent class) models: one batched core, exact and Monte-Carlo.

A model is ``P(x) = sum_f lambda_f prod_n A_n[x_n, f]`` with a hidden ``Z``,
``P(Z = f) = lambda_f``. The core, :class:`LatentClassBatch`, holds G models over the same V
variables in log space, padded to ``log_w`` (G, F) and ``log_f`` (G, V, I, F) (``-inf``
beyond a variable's alphabet and for unused components), and evaluates, for G models x T
samples x C candidate variables at once:

- ``H(X_n | Z) = -sum_f lambda_f sum_i A_n[i, f] log A_n[i, f]`` (exact, closed form);
- ``H(X_S)`` exactly by enumerating the prod_{n in S} I_n joint states (below a memory
  budget), or by Monte-Carlo: ``-(1/T) sum_t log P(x_S^(t))`` over T model samples;
- ``I(X_S; Z)`` as ``H(X_S) - sum_{n in S} H(X_n | Z)`` (the plug-in form of Amiridi et al.)
  or Rao-Blackwellized, ``H(Z) - E[H(P(Z | x_S))]``;
- ``I(X_S; X_t) = H(X_t) - E[H(P(X_t | x_S))]`` (Rao-Blackwellized) or the plug-in
  ``E[log P(x_S, x_t) - log P(x_S) - log P(x_t)]``.

:meth:`tensorprob.CPDModel.entropy` / :meth:`~tensorprob.CPDModel.mutual_information`
(G = 1, C = 1), the incremental :class:`CPDInformation` (G = 1, all candidates) and
:func:`stacked_information` (G models, C = 1) are thin callers. Natural logarithms; divide by
``log(2)`` for bits.

Monte-Carlo values are reported as estimated, never clipped, always with their standard
error. The plug-in form ``H^(X_S) - sum H(X_n | Z)`` subtracts an exact sum from a sampled
entropy, so when ``I(X_S; Z)`` is near 0 it is negative about half the time (by a few
standard errors at most, with high probability); a negative value reads as "not
distinguishable from 0 at this sample size", and the Rao-Blackwellized form has a smaller
standard error. Clipping at 0 would bias the estimate upwards and hide that noise. Exact
values are differences of enumerated entropies and are not clipped either (rounding may
leave them a few ulps below 0). Joint-state probabilities are divided by the total mass of
the weights, so the entropy of a constant ``X_S`` is exactly 0 in both float32 and float64,
exact and Monte-Carlo.

References
----------
.. [1] M. Amiridi, N. Kargas and N. D. Sidiropoulos, "Information-theoretic feature selection
   via tensor decomposition and submodularity", IEEE Trans. Signal Processing, 2021.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch

from .._config import get_config
from .._device import block_budget, chunk_ranges, exp_floor
from .._docstrings import fill_doc
from ._sampling import draw_codes, draw_latent


class Estimate(NamedTuple):
    """An information estimate in nats, its standard error and the method that produced it.

    The fields are the constructor's parameters.

    Parameters
    ----------
    value : float
        The estimate (nats).
    stderr : float
        Monte-Carlo standard error of ``value``; 0 for exact values.
    method : {"exact", "mc", "rao_blackwell"}
        ``"exact"``: enumeration of the joint states (no sampling error, ``stderr`` is 0);
        ``"mc"``: the plain Monte-Carlo average over model samples (for ``I(X_S; Z)``, the
        plug-in form ``H^(X_S) - sum H(X_n | Z)`` of Amiridi et al.);
        ``"rao_blackwell"``: the Rao-Blackwellized Monte-Carlo form (lower variance).

    Notes
    -----
    Monte-Carlo estimates are not clipped: an information near 0 may be estimated below 0
    (by a few ``stderr``), and is reported as it is: clipping at 0 would bias it upwards.

    Examples
    --------
    >>> from tensorprob import Estimate
    >>> e = Estimate(0.5, 0.01, "mc")
    >>> float(e), e.stderr, e.method
    (0.5, 0.01, 'mc')
    """

    value: float
    stderr: float
    method: str

    def __float__(self) -> float:
        return float(self.value)


ESTIMATORS = ("mc", "rao_blackwell", "exact")


def _xlogx_sum(p: torch.Tensor, dim: int) -> torch.Tensor:
    return torch.where(p > 0, p * torch.log(p.clamp_min(torch.finfo(p.dtype).tiny)), torch.zeros_like(p)).sum(dim)


def _state_limit(F: int, max_states: int | None, per_state: int = 8) -> int:
    return max_states if max_states is not None else get_config()["memory_budget"] // (per_state * max(F, 1))


def _too_many(n_states: int, limit: int, what: str) -> ValueError:
    return ValueError(f"exact enumeration over {n_states} joint states of {what} exceeds the limit of {limit} states "
                      "(memory budget); use method='mc' (CPDModel.entropy / mutual_information) or "
                      "estimator='rao_blackwell' or 'mc' (GSMCPD, CPDInformation), or raise the budget with "
                      "tensorprob.config_context(memory_budget=...)")


def mean_se(terms: torch.Tensor, dim: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean over ``dim`` and its standard error (float64; ``inf`` for a single term)."""
    T = terms.shape[dim]
    t = terms.to(torch.float64)
    se = t.std(dim, unbiased=True) / math.sqrt(T) if T > 1 else torch.full_like(t.mean(dim), math.inf)
    return t.mean(dim), se


_SAMPLES = """\
samples : int64 tensor of shape (G, T, V)
    T samples of every model (codes of all V variables), e.g. from :meth:`sample`."""

_KIND = """\
kind : {"entropy", "mc", "rao_blackwell", "exact"}
    The quantity and estimator: ``"entropy"`` is ``H(X_S)``; the others are ``I(X_S; Z)``
    (``target=None``) or ``I(X_S; X_target)``, by the plug-in Monte-Carlo form (``"mc"``),
    Rao-Blackwellized (``"rao_blackwell"``) or, in :meth:`exact`, by enumeration."""

_TARGET = """\
target : int or None
    Index of the target variable; None for the latent ``Z``."""

_HZ = """\
hz : tensor of shape (G, C)
    ``sum_{n in S + c} H(X_n | Z)`` of every model and candidate (used for the latent target)."""

_CANDIDATES = """\
candidates : int64 tensor of shape (C,) or None
    Candidate variables c, each evaluated as ``S + c``; None evaluates S itself (C = 1)."""

_FRAGMENTS = {"samples": _SAMPLES, "kind": _KIND, "target": _TARGET, "hz": _HZ, "candidates": _CANDIDATES}


@fill_doc(**_FRAGMENTS)
class LatentClassBatch:
    """G latent class models over the same V variables, in log space: the batched information core.

    Parameters
    ----------
    log_w : tensor of shape (G, F)
        Log mixing weights (``-inf`` for unused components).
    log_f : tensor of shape (G, V, I, F)
        Log factors, ``log P(X_v = i | Z = f)`` (``-inf`` beyond a variable's alphabet).

    Attributes
    ----------
    h_z : tensor of shape (G,)
        ``H(Z)`` of every model (nats).
    h_given_z : tensor of shape (G, V)
        ``H(X_v | Z)`` of every model and variable (nats).

    See Also
    --------
    tensorprob.CPDModel.stack : Builds ``log_w`` and ``log_f`` from fitted models.
    """

    def __init__(self, log_w: torch.Tensor, log_f: torch.Tensor) -> None:
        if log_w.ndim != 2 or log_f.ndim != 4 or log_f.shape[0] != log_w.shape[0] or log_f.shape[3] != log_w.shape[1]:
            raise ValueError(f"log_w (G, F) and log_f (G, V, I, F) do not match: {tuple(log_w.shape)}, "
                             f"{tuple(log_f.shape)}")
        self.log_w, self.log_f = log_w, log_f
        self.G, self.V, self.I, self.F = log_f.shape
        w = torch.exp(log_w)
        # log of the total mass (0 up to rounding): probabilities of joint states are divided by
        # it, so that a state of probability one (a constant variable) has exactly P = 1, H = 0
        self.log_mass = torch.logsumexp(log_w, -1)  # (G,)
        self.h_z = -_xlogx_sum(w, 1)  # (G,)
        self.h_given_z = -(w[:, None, :] * _xlogx_sum(torch.exp(log_f), 2)).sum(-1)  # (G, V)
        self.log_flat = log_f.reshape(self.G, self.V * self.I, self.F)  # (G, V I, F): gathers index v I + x
        # largest alphabet of each variable over the models: values beyond it are padding in all of them
        real = torch.isfinite(log_f).any(-1).any(0)  # (V, I)
        pos = torch.arange(1, self.I + 1, device=log_f.device)
        self.cards = (real * pos).amax(1).clamp_min(1).tolist()
        self._marginals: dict[int, torch.Tensor] = {}

    # -- closed forms ------------------------------------------------------------------------
    def marginal(self, t: int) -> torch.Tensor:
        """Marginal ``P(X_t = i)`` of every model (cached).

        Parameters
        ----------
        t : int
            Index of the variable.

        Returns
        -------
        tensor of shape (G, I)
            The marginal PMF of ``X_t`` of every model (0 beyond its alphabet).
        """
        if t not in self._marginals:
            self._marginals[t] = torch.einsum("gif,gf->gi", torch.exp(self.log_f[:, t]), torch.exp(self.log_w))
        return self._marginals[t]

    def h_marginal(self, t: int) -> torch.Tensor:
        """Entropy ``H(X_t)`` of every model (nats).

        Parameters
        ----------
        t : int
            Index of the variable; its alphabet's padding has probability 0.

        Returns
        -------
        tensor of shape (G,)
            ``H(X_t)`` of every model.
        """
        return -_xlogx_sum(self.marginal(t), 1)

    # -- sampling ------------------------------------------------------------------------------
    def sample(self, n_samples: int, gen: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw ``n_samples`` samples of every model.

        Parameters
        ----------
        n_samples : int
            Number of samples T drawn from every model.
        gen : torch.Generator or None
            Generator of the draws, on the models' device; None uses torch's global one.

        Returns
        -------
        codes : int64 tensor of shape (G, T, V)
            The sampled codes.
        z : int64 tensor of shape (G, T)
            The latent class of every sample.
        """
        z = draw_latent(torch.exp(self.log_w), n_samples, gen)
        return draw_codes(torch.exp(self.log_f), z, gen), z

    # -- Monte-Carlo ---------------------------------------------------------------------------
    def gather(self, samples: torch.Tensor, variables: torch.Tensor) -> torch.Tensor:
        """Gather the log factor rows ``log A_v[x_v^(t), :]`` of the samples' codes.

        Parameters
        ----------
        %(samples)s
        variables : int64 tensor of shape (C,)
            The variables v whose rows are gathered.

        Returns
        -------
        tensor of shape (G, T, C, F)
            ``log P(X_v = x_v^(t) | Z = f)``.
        """
        idx = variables[None, None, :] * self.I + samples[:, :, variables]  # (G, T, C)
        g = torch.arange(self.G, device=idx.device)[:, None, None]
        return self.log_flat[g, idx]

    def running(self, samples: torch.Tensor, variables: Sequence[int]) -> torch.Tensor:
        """Running log joint ``log P(Z = f, x_S^(t))`` of every sample, for S = ``variables``.

        Parameters
        ----------
        %(samples)s
        variables : sequence of int
            The set S.

        Returns
        -------
        tensor of shape (G, T, F)
            ``log P(Z = f, x_S^(t))``.
        """
        L = self.log_w[:, None, :].expand(self.G, samples.shape[1], self.F).clone()
        for v in variables:  # one gather per variable of S, vectorized over models and samples
            L = L + self.gather(samples, torch.tensor([v], device=samples.device))[:, :, 0]
        return L

    def mc_terms(self, L: torch.Tensor, *, kind: str, target: int | None = None,
                 samples: torch.Tensor | None = None) -> torch.Tensor:
        """Per-sample Monte-Carlo terms, whose mean plus :meth:`mc_constant` is the estimate.

        Parameters
        ----------
        L : tensor of shape (G, T, C, F)
            Running log joints ``log P(Z = f, x_{S+c}^(t))``; may be overwritten.
        %(kind)s
        %(target)s
        samples : int64 tensor of shape (G, T, V), optional
            The samples ``L`` was built from (needed for a variable target).

        Returns
        -------
        tensor of shape (G, T, C)
            The terms (``-log P(x)`` for ``"entropy"``).
        """
        if target is None and kind == "rao_blackwell":
            # -H(softmax(L)) = sum_f e_f (L_f - m) / s - log s, with e = exp(L - m), s = sum e:
            # no logarithm over the G x T x C x F entries, and L is reused in place. Shifted entries
            # are clamped at ``exp_floor``: their weight, far below eps against s >= 1, is lost to
            # rounding anyway.
            L.sub_(L.amax(dim=-1, keepdim=True)).clamp_min_(exp_floor(L.dtype))
            E = torch.exp(L)
            s = E.sum(-1)
            return (E.mul_(L)).sum(-1) / s - torch.log(s)  # the constant H(Z) is added later
        lse = torch.logsumexp(L, dim=-1)  # (G, T, C)
        if target is None or kind == "entropy":
            # mean = H^(X_S) (P normalized by the total mass: exactly 0 for a constant X_S); the
            # H(X_n | Z) sum is subtracted by the constant ("mc")
            return (self.log_mass[:, None, None] - lse).add_(0.0)
        y = samples[:, :, target]  # (G, T)
        if kind == "mc":
            ly = self.gather(samples, torch.tensor([target], device=y.device))  # (G, T, 1, F)
            log_p_y = torch.log(torch.gather(self.marginal(target), 1, y))  # (G, T)
            return torch.logsumexp(L + ly, dim=-1) - lse - log_p_y[..., None]
        post = torch.exp(L - lse[..., None])
        return _xlogx_sum(torch.einsum("gtcf,gif->gtci", post, torch.exp(self.log_f[:, target])), -1)

    def mc_constant(self, *, kind: str, target: int | None, hz: torch.Tensor) -> torch.Tensor:
        """The constant that :meth:`mc_terms` leaves out of the estimate.

        Parameters
        ----------
        %(kind)s
        %(target)s
        %(hz)s

        Returns
        -------
        tensor of shape (G, C)
            Added to the mean of the terms.
        """
        if kind == "entropy":
            return torch.zeros_like(hz)
        if target is None:
            return -hz if kind == "mc" else self.h_z[:, None].expand_as(hz)
        if kind == "mc":
            return torch.zeros_like(hz)
        return self.h_marginal(target)[:, None].expand_as(hz)

    def mc_estimate(self, base: torch.Tensor, samples: torch.Tensor, candidates: torch.Tensor | None, *, kind: str,
                    target: int | None, hz: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Monte-Carlo estimates of every model and candidate, with their standard errors.

        Each candidate adds one gathered column to the running log joint of S. Candidates are
        evaluated in blocks whose (G, T, block, F) temporaries fit the block budget.

        Parameters
        ----------
        base : tensor of shape (G, T, F)
            Running log joint of S (:meth:`running`).
        %(samples)s
        %(candidates)s
        %(kind)s
        %(target)s
        %(hz)s

        Returns
        -------
        values : tensor of shape (G, C)
            The estimates (nats).
        stderr : tensor of shape (G, C)
            Their Monte-Carlo standard errors.
        """
        G, T, F = base.shape
        if candidates is None:
            terms = self.mc_terms(base[:, :, None, :].clone(), kind=kind, target=target, samples=samples)
            mean, se = mean_se(terms, 1)
        else:
            means, ses = [], []
            for a, b in chunk_ranges(candidates.numel(), G * T * F * base.element_size(), block_budget(base.device)):
                L = self.gather(samples, candidates[a:b]).add_(base[:, :, None, :])  # (G, T, c, F)
                m, s = mean_se(self.mc_terms(L, kind=kind, target=target, samples=samples), 1)
                means.append(m)
                ses.append(s)
            mean, se = torch.cat(means, 1), torch.cat(ses, 1)
        const = self.mc_constant(kind=kind, target=target, hz=hz)
        return mean.to(self.log_w.dtype) + const, se.to(self.log_w.dtype)

    # -- exact ---------------------------------------------------------------------------------
    def table(self, variables: Sequence[int], max_states: int | None = None) -> torch.Tensor:
        """Log joint ``log P(Z = f, x_S)`` of every joint state of S (C order).

        Parameters
        ----------
        variables : sequence of int
            The set S.
        max_states : int, optional
            Enumeration limit (default from the memory budget).

        Returns
        -------
        tensor of shape (G, states, F)
            The enumerated table, ``states = prod_{n in S} I_n``.

        Raises
        ------
        ValueError
            More joint states than the limit.
        """
        cards = [self.card(v) for v in variables]
        n_states = math.prod(cards)
        limit = _state_limit(self.F, max_states)
        if n_states > limit:
            raise _too_many(n_states, limit, f"{len(cards)} variables")
        cur = self.log_w[:, None, :]
        for v, c in zip(variables, cards):
            cur = (cur[:, :, None, :] + self.log_f[:, v, None, :c, :]).reshape(self.G, -1, self.F)
        return cur

    def card(self, v: int) -> int:
        """Largest alphabet of variable ``v`` over the models (values beyond it are padding in all).

        Parameters
        ----------
        v : int
            Index of the variable.

        Returns
        -------
        int
            The alphabet size.
        """
        return int(self.cards[v])

    def exact(self, table: torch.Tensor, candidates: torch.Tensor | None, *, kind: str, target: int | None,
              hz: torch.Tensor, max_states: int | None = None) -> torch.Tensor:
        """Exact values by enumeration of S's joint table, extended by each candidate.

        Parameters
        ----------
        table : tensor of shape (G, K, F)
            S's joint table (:meth:`table`).
        %(candidates)s
        %(kind)s
        %(target)s
        %(hz)s
        max_states : int, optional
            Enumeration limit (default from the memory budget).

        Returns
        -------
        tensor of shape (G, C)
            ``H(X_{S+c})`` for ``kind="entropy"``, else ``I(X_{S+c}; Z)`` or ``I(X_{S+c}; X_target)``.

        Raises
        ------
        ValueError
            A candidate's joint table exceeds the limit.
        """
        G, K, F = table.shape
        if candidates is None:
            return self._exact_value(table[:, None], kind=kind, target=target, hz=hz)
        cards = [self.card(int(c)) for c in candidates.tolist()]
        Imax = max(cards)
        t_card = 1 if target is None else self.card(target)
        limit = _state_limit(F, max_states, 32)
        if K * Imax * t_card > limit:
            raise _too_many(K * Imax * t_card, limit, "a candidate")
        pad = self.log_f[:, candidates, :Imax]  # (G, C, Imax, F): padding is -inf, contributes nothing
        out = torch.empty(G, candidates.numel(), dtype=self.log_w.dtype, device=self.log_w.device)
        step = max(1, limit // max(1, K * Imax * t_card))
        for a in range(0, candidates.numel(), step):
            J = (table[:, None, :, None, :] + pad[:, a:a + step, None, :, :]).reshape(G, -1, K * Imax, F)
            out[:, a:a + step] = self._exact_value(J, kind=kind, target=target, hz=hz[:, a:a + step])
        return out

    def _exact_value(self, J: torch.Tensor, *, kind: str, target: int | None, hz: torch.Tensor) -> torch.Tensor:
        """Value for joint tables J (G, C, states, F) of ``log P(Z, x_{S+c})``."""
        log_p = torch.logsumexp(J, -1) - self.log_mass[:, None, None]  # P normalized by the total mass
        h = (-_xlogx_sum(torch.exp(log_p), -1)).add_(0.0)  # (G, C): H(X_{S+c}); + 0.0 turns -0.0 into 0
        if kind == "entropy":
            return h
        if target is None:
            return h - hz
        t = self.card(target)
        Jt = J[..., None, :] + self.log_f[:, None, None, target, :t, :]  # (G, C, states, I_t, F)
        h_joint = -_xlogx_sum(torch.exp(torch.logsumexp(Jt, -1)).flatten(2), -1)
        return h + self.h_marginal(target)[:, None] - h_joint


def information(batch: LatentClassBatch, variables: Sequence[int], *, target: int | None = None,
                estimator: str = "rao_blackwell", samples: torch.Tensor | None = None,
                max_states: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``H(X_S)`` (``estimator="entropy"`` / ``"entropy_exact"``), ``I(X_S; Z)`` or ``I(X_S; X_t)`` of G models.

    Parameters
    ----------
    batch : LatentClassBatch
        The G models.
    variables : sequence of int
        The set S.
    target : int, optional
        Index of the target variable; None for the latent ``Z``.
    estimator : {"rao_blackwell", "exact", "mc", "entropy", "entropy_exact"}, default="rao_blackwell"
        ``"entropy"`` is the Monte-Carlo entropy, ``"entropy_exact"`` its enumeration.
    samples : int64 tensor of shape (G, T, V), optional
        Model samples (Monte-Carlo estimators).
    max_states : int, optional
        Enumeration limit of the exact estimators (default from the memory budget).

    Returns
    -------
    values : tensor of shape (G,)
        The quantity of every model (nats).
    stderr : tensor of shape (G,)
        Its Monte-Carlo standard error (0 for the exact estimators).
    """
    var = list(variables)
    hz = batch.h_given_z[:, var].sum(1, keepdim=True) if var else torch.zeros(batch.G, 1, dtype=batch.log_w.dtype,
                                                                                 device=batch.log_w.device)
    if estimator in ("exact", "entropy_exact"):
        kind = "entropy" if estimator == "entropy_exact" else "exact"
        if not var and kind == "entropy":
            z = torch.zeros(batch.G, dtype=batch.log_w.dtype, device=batch.log_w.device)
            return z, z
        v = batch.exact(batch.table(var, max_states), None, kind=kind, target=target, hz=hz)[:, 0]
        return v, torch.zeros_like(v)
    kind = "entropy" if estimator == "entropy" else estimator
    base = batch.running(samples, var)
    v, se = batch.mc_estimate(base, samples, None, kind=kind, target=target, hz=hz)
    return v[:, 0], se[:, 0]


class CPDInformation:
    """Incremental ``g(S) = I(X_S; Z)`` or ``I(X_S; X_t)`` of one CPD model, all candidates at once.

    The state is the per-sample running log joint ``log P(Z = f, x_S^(t))`` (T x F) over one
    matrix of T model samples drawn once (common random numbers, so candidate differences are
    not swamped by sampling noise); a candidate c adds one gathered column ``log A_c[x_tc, :]``,
    and every candidate is evaluated in one (T x candidates x F) computation chunked to the
    memory budget. With ``estimator="exact"`` the state is the enumerated joint table of
    ``X_S`` (states x F) and candidates are evaluated by enumeration, vectorized over them.
    The arithmetic is that of :class:`LatentClassBatch` with one model.

    Parameters
    ----------
    log_w : tensor of shape (F,)
        The model's log weights.
    log_factors : tensor of shape (V, I, F) (``-inf`` padded) or list of (I_n, F) tensors
        The model's log factors.
    target : int, optional
        None for the latent Z, or the index of a variable (e.g. the label).
    estimator : {"rao_blackwell", "mc", "exact"}, default="rao_blackwell"
        ``"mc"`` is the plug-in Monte-Carlo form of Amiridi et al. (latent target:
        ``H^(X_S) - sum_{n in S} H(X_n | Z)``; variable target:
        ``mean_t [log P(x_S, x_t) - log P(x_S) - log P(x_t)]``); ``"rao_blackwell"`` is
        ``H(Z) - mean_t H(P(Z | x_S^(t)))`` or ``H(X_t) - mean_t H(P(X_t | x_S^(t)))`` (lower
        variance); ``"exact"`` enumerates the joint states (raises above the memory budget).
    samples : int64 tensor of shape (T, V), optional
        Model samples (needed unless ``estimator="exact"``).
    max_states : int, optional
        Enumeration limit (default from the memory budget).

    Attributes
    ----------
    selected : list of int
        S, in the order the variables were added.
    value, stderr : float
        ``g(S)`` and its standard error after the last :meth:`add`.

    Raises
    ------
    ValueError
        An unknown estimator, or a Monte-Carlo estimator without samples.

    Examples
    --------
    >>> import torch
    >>> from tensorprob import CPDModel
    >>> from tensorprob.information import CPDInformation
    >>> m = CPDModel(torch.tensor([0.5, 0.5], dtype=torch.float64),
    ...              [torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64)] * 3)
    >>> log_w, log_f = m.stack([m])
    >>> info = CPDInformation(log_w[0], log_f[0], estimator="exact")
    >>> vals, _ = info.evaluate([0, 1, 2])
    >>> [round(v, 4) for v in vals.tolist()]
    [0.3681, 0.3681, 0.3681]
    """

    def __init__(self, log_w: torch.Tensor, log_factors: torch.Tensor | Sequence[torch.Tensor], *,
                 target: int | None = None, estimator: str = "rao_blackwell", samples: torch.Tensor | None = None,
                 max_states: int | None = None) -> None:
        if estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
        if not torch.is_tensor(log_factors):
            log_factors = _pad_logs(list(log_factors))
        self.batch = LatentClassBatch(log_w[None], log_factors[None])
        self.log_w = log_w
        self.target, self.estimator, self.max_states = target, estimator, max_states
        self.selected: list[int] = []
        if estimator == "exact":
            self.table = log_w[None, None, :].clone()  # (1, states, F): log P(Z = f, x_S)
        else:
            if samples is None:
                raise ValueError(f"estimator={estimator!r} needs model samples")
            self.samples = samples[None]  # (1, T, V)
            self.base = log_w[None, None, :].expand(1, samples.shape[0], -1).clone()  # (1, T, F)
        self.value, self.stderr = 0.0, 0.0

    def evaluate(self, candidates: Sequence[int] | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Evaluate ``g(S + c)`` for every candidate c.

        Parameters
        ----------
        candidates : sequence of int or int64 tensor
            The candidate variables (C of them; may be empty).

        Returns
        -------
        values : tensor of shape (C,)
            ``g(S + c)`` (nats).
        stderr : tensor of shape (C,)
            Their standard errors (0 for ``estimator="exact"``).
        """
        dev, dt = self.log_w.device, self.log_w.dtype
        cands = torch.as_tensor(candidates, dtype=torch.int64, device=dev).reshape(-1)
        if cands.numel() == 0:
            z = torch.empty(0, dtype=dt, device=dev)
            return z, z
        hz = (self.batch.h_given_z[:, self.selected].sum(1, keepdim=True) + self.batch.h_given_z[:, cands])  # (1, C)
        if self.estimator == "exact":
            vals = torch.empty(cands.numel(), dtype=dt, device=dev)
            for a in range(0, cands.numel(), 64):
                c = cands[a:a + 64]
                vals[a:a + 64] = self.batch.exact(self.table, c, kind="exact", target=self.target, hz=hz[:, a:a + 64],
                                                  max_states=self.max_states)[0]
            return vals, torch.zeros_like(vals)
        v, se = self.batch.mc_estimate(self.base, self.samples, cands, kind=self.estimator, target=self.target, hz=hz)
        return v[0], se[0]

    def add(self, j: int) -> None:
        """Add variable ``j`` to S (one gather for the Monte-Carlo state).

        Parameters
        ----------
        j : int
            Index of the variable added; :attr:`value` and :attr:`stderr` become ``g(S + j)``.
        """
        j = int(j)
        v, se = self.evaluate([j])
        self.value, self.stderr = float(v[0]), float(se[0])
        if self.estimator == "exact":
            c = self.batch.card(j)
            F = self.batch.F
            self.table = (self.table[:, :, None, :] + self.batch.log_f[:, j, None, :c, :]).reshape(1, -1, F)
        else:
            self.base = self.base + self.batch.gather(self.samples, torch.tensor([j], device=self.base.device))[:, :, 0]
        self.selected.append(j)


def _pad_logs(log_factors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per-variable (I_n, F) log factors -> a ``-inf``-padded (V, Imax, F) tensor."""
    F = log_factors[0].shape[1]
    Imax = max(int(A.shape[0]) for A in log_factors)
    out = torch.full((len(log_factors), Imax, F), -torch.inf, dtype=log_factors[0].dtype,
                     device=log_factors[0].device)
    for v, A in enumerate(log_factors):
        out[v, : A.shape[0]] = A
    return out


def stacked_information(log_w: torch.Tensor, log_factors: torch.Tensor, *, target: int | None, estimator: str,
                        n_samples: int, gen: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``I(X_V; Z)`` or ``I(X_V; X_target)`` for G models over the same V variables at once.

    Parameters
    ----------
    log_w : tensor of shape (G, F)
        Log weights (``-inf`` for unused components).
    log_factors : tensor of shape (G, V, I, F)
        Log factors (``-inf`` for values beyond a variable's alphabet), as from
        :meth:`tensorprob.CPDModel.stack`.
    target : int or None
        None (latent) or the position in V of the target variable (excluded from X_V).
    estimator : {"exact", "mc", "rao_blackwell"}
        As in :class:`CPDInformation`.
    n_samples : int
        T samples drawn from every model (Monte-Carlo estimators).
    gen : torch.Generator or None
        Generator of the samples, on the models' device; None uses torch's global one.

    Returns
    -------
    values : tensor of shape (G,)
        The mutual information of every model (nats).
    stderr : tensor of shape (G,)
        Its Monte-Carlo standard error (0 for ``estimator="exact"``).
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    batch = LatentClassBatch(log_w, log_factors)
    feats = [v for v in range(batch.V) if v != target]
    samples = None if estimator == "exact" else batch.sample(int(n_samples), gen)[0]
    return information(batch, feats, target=target, estimator=estimator, samples=samples)
