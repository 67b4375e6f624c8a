"""GSM-CPD: greedy submodular feature selection on a CPD model of (X, Y) (paper 000, Alg. 2).

A CPD (latent class) model of the joint PMF of the features and the label is fitted (rank
given, or chosen by the CPD classifier's 5-fold validation error over {5, 10, 15, 20, 30});
then ``g(S) = I(X_S; Z)`` with Z the model's latent variable, monotone submodular, is
maximized greedily, which guarantees ``(1 - 1/e)`` of the best k-subset's value for the
exact g. Every step evaluates all candidates at once on one matrix of model samples
(common random numbers): the per-sample running ``log P(Z, x_S)`` (T x F) plus one gathered
column per candidate, a (T x candidates x F) computation chunked to the memory budget.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from .._config import progress_bar
from .._device import make_generator, seed_from_random_state
from .._docstrings import fill_doc
from ..counting import unique_rows
from ..cpd._fit import fit_batched
from ..cpd._model import CPDModel
from ..information._cpd import CPDInformation, stacked_information
from ._base import CodedSelector
from ._docs import SELECTOR_FRAGMENTS
from ._greedy import lowest_argmax


def greedy_information(info: CPDInformation, candidates: list[int], k: int | None, *, lazy: bool = False,
                       auto_tol: float = 1e-3, lazy_batch: int = 8):
    """Greedy maximization of the CPD information ``info`` over ``candidates``.

    Parameters
    ----------
    info : CPDInformation
        Incremental objective (its ``selected`` grows as features are picked).
    candidates : list of int
    k : int or None
        Number of features; None stops when the best gain falls below ``auto_tol`` nats.
    lazy : bool
        Lazy greedy (Minoux): candidates are re-evaluated in batches of ``lazy_batch`` in
        decreasing order of their last gain (an upper bound by submodularity) until the best
        fresh gain is at least the next bound. Equal to plain greedy for the exact estimator
        (up to ties); with a Monte-Carlo estimate submodularity holds only approximately.

    Returns
    -------
    selected, values, stderrs : lists (g(S) and its standard error after each pick)

    Notes
    -----
    Ties go to the lowest feature index.
    """
    rest = torch.as_tensor(sorted(candidates), dtype=torch.int64)
    bounds = torch.full((rest.numel(),), math.inf, dtype=torch.float64)
    selected, values, stderrs = [], [], []
    current = 0.0
    bar = progress_bar(k, "selecting (GSM-CPD)")
    while rest.numel() and (k is None or len(selected) < k):
        if not lazy or not selected:
            vals, _ses = info.evaluate(rest)
            gains = vals.double().cpu() - current
            bounds = gains.clone()
            # the one tie rule of the package: lowest index among (dtype-aware) ties
            pos = lowest_argmax(gains.to(vals.dtype), torch.ones(gains.numel(), dtype=torch.bool))
            best_gain = float(gains[pos])
        else:
            order = torch.sort(bounds, descending=True, stable=True).indices
            fresh = torch.zeros(rest.numel(), dtype=torch.bool)  # re-evaluated in this step
            i = 0
            while i < order.numel():
                batch = order[i:i + lazy_batch]
                vals, _ = info.evaluate(rest[batch])
                bounds[batch] = vals.double().cpu() - current
                fresh[batch] = True
                # the same tie rule as the plain branch, among the fresh gains
                pos = lowest_argmax(bounds.to(vals.dtype), fresh)
                best_gain = float(bounds[pos])
                i += lazy_batch
                if i >= order.numel() or best_gain >= float(bounds[order[i]]):
                    break
        if k is None and best_gain < auto_tol:
            break
        j = int(rest[pos])
        info.add(j)
        current = info.value
        selected.append(j)
        values.append(info.value)
        stderrs.append(info.stderr)
        keep = torch.ones(rest.numel(), dtype=torch.bool)
        keep[pos] = False
        rest, bounds = rest[keep], bounds[keep]
        bar.update()
    bar.close()
    return selected, values, stderrs


def remodel_greedy(codes: torch.Tensor, cards: torch.Tensor, label: int, candidates: list[int], k: int | None, *,
                   rank: int, target: str, estimator: str, n_samples: int, seed: int, dtype: torch.dtype,
                   n_restarts: int, n_iter_max: int, tol: float, auto_tol: float, chunk: int = 16,
                   distributed: bool = False):
    """The paper's large-data variant: at every step refit a CPD of (X_{S+c}, Y) for every candidate c.

    All candidates' models are fitted as one batched EM per chunk of ``chunk`` candidates
    (variable subsets as per-model masks over the columns S, Y and the chunk), then
    ``I(X_{S+c}; Z_c)`` (or ``I(X_{S+c}; Y)``) of each refitted model is estimated for all of
    them at once, and the best candidate is added.
    """
    device = codes.device
    gen = make_generator(seed, device)
    rest = sorted(candidates)
    selected, values, stderrs = [], [], []
    current = 0.0
    step = 0
    while rest and (k is None or len(selected) < k):
        vals_all, ses_all = [], []
        for a in range(0, len(rest), chunk):
            group = rest[a:a + chunk]
            cols = selected + [label] + group
            sub = codes[:, cols]
            rows, W, _ = unique_rows(sub, torch.ones(sub.shape[0], 1, dtype=torch.float64, device=device))
            G, base = len(group), len(selected) + 1
            mask = torch.zeros(len(cols), G, dtype=torch.bool, device=device)
            mask[:base] = True
            mask[base + torch.arange(G), torch.arange(G)] = True
            fits = fit_batched(rows, cards[cols], W.repeat(1, G), [rank], n_restarts=n_restarts,
                               n_iter_max=n_iter_max, tol=tol, alpha=0.0, init="kmeans++",
                               seed=int(np.random.SeedSequence([seed, step, a]).generate_state(1)[0]), dtype=dtype,
                               var_mask=mask, distributed=distributed)
            # model g describes S, its candidate and the label (last); the other columns are marginalized
            var_pos = list(range(len(selected)))
            log_w, log_f = CPDModel.stack([m.marginal(var_pos + [base + g, len(selected)]) for g, m in enumerate(fits)])
            V = len(selected) + 2
            if target == "latent":
                v, se = stacked_information(log_w, log_f[:, :-1], target=None, estimator=estimator,
                                            n_samples=n_samples, gen=gen)
            else:
                v, se = stacked_information(log_w, log_f, target=V - 1, estimator=estimator, n_samples=n_samples,
                                            gen=gen)
            vals_all.append(v.double().cpu())
            ses_all.append(se.double().cpu())
        vals = torch.cat(vals_all)
        pos = lowest_argmax(vals.to(dtype), torch.ones(vals.numel(), dtype=torch.bool))
        if k is None and float(vals[pos]) - current < auto_tol:
            break
        j = rest.pop(pos)
        selected.append(j)
        current = float(vals[pos])
        values.append(current)
        stderrs.append(float(torch.cat(ses_all)[pos]))
        step += 1
    return selected, values, stderrs


_TARGETS = ("latent", "label")
_ESTIMATORS = ("mc", "rao_blackwell", "exact")


@dataclass
class GSMCPDResult:
    """What :func:`gsm_cpd_fit` finds (the fitted attributes of :class:`GSMCPD`)."""

    selected: np.ndarray  # (k,) int64 feature indices in pick order
    scores: np.ndarray  # (k,) g(S) after each pick (nats)
    scores_stderr: np.ndarray  # (k,) Monte-Carlo standard errors (0 for exact)
    rank: int
    model: CPDModel | None  # the CPD of (X, y); None with remodel
    rank_errors: np.ndarray | None  # mean validation error per candidate rank, when the rank was chosen


def gsm_cpd_fit(codes: np.ndarray, cards: np.ndarray, y_codes: np.ndarray, n_classes: int, k: int | None, *,
                rank: int | None, ranks: tuple, cv: int, target: str, estimator: str, n_samples: int, lazy: bool,
                remodel: bool, auto_tol: float, n_restarts: int, n_iter_max: int, tol: float, device: torch.device,
                dtype: torch.dtype, random_state: Any, distributed: bool = False) -> GSMCPDResult:
    """Run GSM-CPD on validated codes (the label as ``y_codes``); see :class:`GSMCPD`.

    The codes are taken as validated by the selector: they are stacked with the label once
    and their distinct rows are found once, shared by the rank selection and the fit.

    With ``distributed`` the codes are this rank's rows: the rank selection and the CPD fit
    run data-parallel (every rank gets the same model), the number of distinct rows is that
    of all ranks together, and the greedy search then works on the model alone (Monte-Carlo
    draws from rank 0's seed), so every rank makes the same picks.
    """
    import warnings

    from ..cpd._fit import _fit_prepared
    from ..cpd._rank import _select_rank_prepared
    from ..cpd._validation import PreparedData

    if target not in _TARGETS:
        raise ValueError(f"target must be one of {_TARGETS}, got {target!r}")
    if estimator not in _ESTIMATORS:
        raise ValueError(f"estimator must be one of {_ESTIMATORS}, got {estimator!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2 (a Monte-Carlo estimate needs two draws for its "
                         f"standard error), got {n_samples!r}")
    seed = seed_from_random_state(random_state)
    if distributed:
        from .. import _distributed

        seed = _distributed.broadcast(seed)  # one seed for every rank, whatever random_state is
    full = np.concatenate([codes, y_codes[:, None]], axis=1).astype(np.int64)
    full_cards = np.concatenate([cards, [n_classes]]).astype(np.int64)
    label = full.shape[1] - 1
    prep = PreparedData(full, full_cards, [f"x{j}" for j in range(label)] + ["y"], target=label,
                        classes=np.arange(n_classes))
    distinct = prep.distinct(device)[0]
    if distributed:  # the distinct rows of all ranks together
        from .. import _distributed

        every = _distributed.all_gather(distinct.cpu().numpy())
        n_distinct = int(np.unique(np.concatenate(every), axis=0).shape[0])
    else:
        n_distinct = distinct.shape[0]
    if rank is None:
        usable = [r for r in ranks if r <= n_distinct]
        if not usable:
            raise ValueError(f"every candidate rank {tuple(ranks)} exceeds the {n_distinct} distinct rows of the data")
        sel = _select_rank_prepared(prep, [int(r) for r in usable], int(cv), device=device, dtype=dtype,
                                    n_restarts=n_restarts, n_iter_max=n_iter_max, tol=float(tol), alpha=0.0,
                                    seed=seed, distributed=distributed)
        rank, rank_errors = sel.best_rank, sel.mean_errors
    else:
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
            raise ValueError(f"rank must be a positive integer or None, got {rank!r}")
        if rank > n_distinct:
            raise ValueError(f"rank={rank} is too large for the data: only {n_distinct} distinct rows "
                             "(features and label)")
        rank_errors = None
    candidates = list(range(label))
    if remodel:
        sel_, vals, ses = remodel_greedy(torch.as_tensor(full, device=device), torch.as_tensor(full_cards), label,
                                         candidates, k, rank=int(rank), target=target, estimator=estimator,
                                         n_samples=int(n_samples), seed=seed, dtype=dtype, n_restarts=n_restarts,
                                         n_iter_max=n_iter_max, tol=tol, auto_tol=auto_tol, distributed=distributed)
        model = None
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # re-raised below with the numbers
            model = _fit_prepared(prep, [int(rank)], np.ones((full.shape[0], 1)), device=device, dtype=dtype,
                                  n_restarts=n_restarts, n_iter_max=n_iter_max, tol=float(tol), alpha=0.0,
                                  init="kmeans++", random_state=seed, distributed=distributed)[0]
        if not model.converged_:
            h = model.loglik_history_
            warnings.warn(f"GSM-CPD: the rank-{rank} CPD did not converge in {model.n_iter_} iterations (last "
                          f"relative change {abs(h[-1] - h[-2]) / max(abs(h[-2]), 1e-12):.2e} > tol={tol:g}); "
                          "selections rest on an unconverged model", UserWarning, stacklevel=3)
        log_w, log_f = CPDModel.stack([model])
        samples = None if estimator == "exact" else model.sample(int(n_samples), random_state=seed + 1)
        info = CPDInformation(log_w[0], log_f[0], target=None if target == "latent" else label, estimator=estimator,
                              samples=samples)
        sel_, vals, ses = greedy_information(info, candidates, k, lazy=lazy, auto_tol=auto_tol)
    return GSMCPDResult(np.asarray(sel_, dtype=np.int64), np.asarray(vals, dtype=np.float64),
                        np.asarray(ses, dtype=np.float64), int(rank), model, rank_errors)


@fill_doc(**SELECTOR_FRAGMENTS)
class GSMCPD(CodedSelector):
    """GSM-CPD (greedy submodular maximization on a CPD model) feature selection.

    Amiridi, Kargas & Sidiropoulos's Alg. 2. Fits a nonnegative CPD (canonical polyadic
    decomposition) (latent class) model of the joint PMF of the discretized features
    and the label, then greedily maximizes ``g(S) = I(X_S; Z)`` (``target="latent"``, the
    paper's monotone submodular surrogate) or the model's ``I(X_S; Y)`` (``target="label"``).

    Parameters
    ----------
    k : int, "all" or "auto", default=10
        Number of features; ``"auto"`` stops when the best gain falls below ``auto_tol`` nats
        (the intrinsic dimension of paper 000, section III).
    rank : int or None, default=None
        CPD rank; None chooses it among ``ranks`` by the CPD classifier's ``cv``-fold
        validation error (one batched fit).
    ranks : tuple of int, default=(5, 10, 15, 20, 30)
        Candidate ranks when ``rank=None``.
    cv : int, default=5
        Folds of the validation that chooses the rank when ``rank=None``.
    target : {"latent", "label"}, default="latent"
        The information maximized: with the model's latent variable Z (the paper's
        surrogate) or with the label Y.
    estimator : {"rao_blackwell", "mc", "exact"}, default="rao_blackwell"
        Monte-Carlo with the Rao-Blackwellized (lower variance) or the paper's plug-in form,
        or exact enumeration (small problems).
    n_samples : int, default=5000
        Model samples T shared by every candidate evaluation (common random numbers).
    lazy : bool, default=False
        Lazy greedy (Minoux) evaluation.
    remodel : bool, default=False
        The paper's large-data variant: refit the CPD of (X_{S+c}, Y) for every candidate c at
        every step (batched) and pick the best; costly.
    auto_tol : float, default=1e-3
        Stopping threshold of ``k="auto"``, in nats: the selection stops when the best gain
        of ``g`` falls below it.
    n_restarts, n_iter_max, tol : int, int, float, default=1, 200, 1e-6
        CPD fitting options (see :func:`tensorprob.fit_cpd`).
    %(discretizer)s
    %(n_bins)s
    %(device_dtype_random_state)s
        Here it seeds the CPD fits and the model samples.
    %(distributed)s
        GSM-CPD sums over rows only in the CPD fit (and the validation that picks its
        rank); the greedy search then reads the fitted model, which is the same on every rank.

    Attributes
    ----------
    selected_ : ndarray of int
        Selected feature indices in the order they were picked.
    scores_ : ndarray
        ``g(S)`` (nats) after each pick.
    scores_stderr_ : ndarray
        Monte-Carlo standard error of each score (0 for ``estimator="exact"``).
    rank_ : int
        The CPD rank used (``rank``, or the one chosen among ``ranks``).
    model_ : CPDModel or None
        The fitted CPD of (X, y) (None with ``remodel=True``).
    rank_errors_ : ndarray or None
        Mean validation error of each candidate rank when the rank was chosen.
    %(coded_attributes)s

    See Also
    --------
    JMI, VMI : Greedy selectors on plug-in and variational estimates.
    tensorprob.fit_cpd : The CPD model alone.

    Notes
    -----
    Ties break to the lowest feature index.

    References
    ----------
    .. [1] Amiridi, M., Kargas, N. and Sidiropoulos, N. D. Information-theoretic feature selection via
       tensor decomposition and submodularity. IEEE Transactions on Signal Processing, 69 (2021).

    Examples
    --------
    >>> import numpy as np
    >>> from tensorprob import GSMCPD
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 3, (300, 5)); y = (X[:, 1] > 0).astype(int)
    >>> GSMCPD(k=1, rank=2, estimator="exact", random_state=0).fit(X, y).selected_.tolist()
    [1]
    """

    method_name = "gsm_cpd"
    method_aliases = ("gsm-cpd",)
    # value checks of target, estimator and n_samples stay in gsm_cpd_fit (its messages)
    _parameter_constraints: ClassVar[dict] = {
        **CodedSelector._parameter_constraints,
        "k": [Interval(Integral, 1, None, closed="left"), StrOptions({"all", "auto"})],
        "rank": [Interval(Integral, 1, None, closed="left"), None],
        "ranks": ["array-like"],
        "cv": [Interval(Integral, 2, None, closed="left")],
        "target": [str],
        "estimator": [str],
        "n_samples": [Integral],
        "lazy": ["boolean"],
        "remodel": ["boolean"],
        "auto_tol": [Interval(Real, 0, None, closed="left")],
        "n_restarts": [Interval(Integral, 1, None, closed="left")],
        "n_iter_max": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, k: int | str = 10, *, rank: int | None = None, ranks: tuple = (5, 10, 15, 20, 30), cv: int = 5,
                 target: str = "latent", estimator: str = "rao_blackwell", n_samples: int = 5000, lazy: bool = False,
                 remodel: bool = False, auto_tol: float = 1e-3, n_restarts: int = 1, n_iter_max: int = 200,
                 tol: float = 1e-6, discretizer: Any = "uniform", n_bins: int = 5, missing_values: Any = None,
                 device: Any = "auto", dtype: Any = None, random_state: Any = None,
                 distributed: bool = False) -> None:
        self.k = k
        self.rank = rank
        self.ranks = ranks
        self.cv = cv
        self.target = target
        self.estimator = estimator
        self.n_samples = n_samples
        self.lazy = lazy
        self.remodel = remodel
        self.auto_tol = auto_tol
        self.n_restarts = n_restarts
        self.n_iter_max = n_iter_max
        self.tol = tol
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.device = device
        self.dtype = dtype
        self.random_state = random_state
        self.distributed = distributed

    def _select(self, codes: np.ndarray, cards: np.ndarray, y: np.ndarray, n_classes: int, k: int | None,
                device: torch.device, dtype: torch.dtype) -> tuple[np.ndarray, np.ndarray]:
        out = gsm_cpd_fit(codes, cards, y, n_classes, k, rank=self.rank, ranks=tuple(self.ranks), cv=self.cv,
                          target=self.target, estimator=self.estimator, n_samples=self.n_samples,
                          lazy=bool(self.lazy), remodel=bool(self.remodel), auto_tol=float(self.auto_tol),
                          n_restarts=self.n_restarts, n_iter_max=self.n_iter_max, tol=self.tol, device=device,
                          dtype=dtype, random_state=self.random_state, distributed=self._dist_on)
        self.scores_stderr_ = out.scores_stderr
        self.rank_, self.model_, self.rank_errors_ = out.rank, out.model, out.rank_errors
        return out.selected, out.scores
