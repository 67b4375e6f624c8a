"""Classic criteria of the Brown et al. (2012) framework, and their estimators.

With S the selected set, X_m a candidate and C the class (plug-in estimates):

=======  =====================================================================
MIM      I(X_m;C)
MIFS     I(X_m;C) - beta sum_j I(X_m;X_j)
MRMR     I(X_m;C) - (1/|S|) sum_j I(X_m;X_j)
CIFE     I(X_m;C) - sum_j I(X_m;X_j) + sum_j I(X_m;X_j|C)
JMI      sum_j I(X_m X_j; C)
CMIM     min_j I(X_m; C | X_j)   (variant="fleuret": min(I(X_m;C), min_j I(X_m; C | X_j)))
JMIM     min_j I(X_m X_j; C)
DISR     sum_j I(X_m X_j; C) / H(X_m X_j C)
ICAP     I(X_m;C) - sum_j max(0, I(X_m;X_j) - I(X_m;X_j|C))
MRI      I(X_m;C) - 2/(|S|+1) sum_j [I(X_m;X_j) - I(X_m;X_j|C)]
RMRMR    step 2: I(X_m;C|X_s1); then I(X_m;C) - (1/|S|) sum_j [I(X_m;X_j) - I(X_m;X_j|C)]
         - 1/(|S|(|S|-1)) sum_{s != r in S} I(X_m; X_r | X_s)   (Vinh et al. 2016 = GMD^{2,1})
FID^2,1  I(X_m;C) - I(X_m;X_s1) - sum_{j != s1} I(X_m;X_j|X_s1) + sum_j I(X_m;X_j|C)
         (Sun et al. 2020, eq. 6; ``PDA(distribution="fid", k1=2, k2=1)``)
=======  =====================================================================

MIM, MIFS, MRMR, CIFE and MRI are linear in the sums: Brown et al.'s
``J = I(X_m;C) - beta sum_j I(X_m;X_j) + gamma sum_j I(X_m;X_j|C)`` with (beta, gamma) =
(0, 0), (beta, 0), (1/|S|, 0), (1, 1) and (2/(|S|+1), 2/(|S|+1)); they share
:class:`LinearCriterion`. JMI, JMIM and DISR keep a sum or minimum of one pairwise term
(:class:`_PairwiseCriterion`); CMIM (two variants, lazy evaluation), ICAP and RMRMR have a
criterion class each.

The first pick of every method is argmax I(X_m;C). Each update adds one (candidate, x_j,
class) table for all candidates (RMRMR also the (candidate, x_r, x_j) tables of the new
ordered pairs); sums, minima and counts are kept incrementally. CMIM's lazy evaluation
counts only the (candidate, x_j) pairs whose candidate can still win
(:class:`CMIMCriterion`).
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from .._docstrings import fill_doc
from ..counting import SelectionData, _costs
from ._base import GreedySelector
from ._docs import SELECTOR_FRAGMENTS
from ._greedy import Criterion, tie_tolerance

_BROWN = ("Brown, G., Pocock, A., Zhao, M.-J. and Lujan, M. (2012). Conditional likelihood maximisation: "
          "a unifying framework for information theoretic feature selection. Journal of Machine Learning "
          "Research, 13, 27-66.")


# ---------------------------------------------------------------------------- criteria
class _SumsCriterion(Criterion):
    """Shared state: float64 running sums and minima over the selected features."""

    def start(self, data: SelectionData) -> None:
        super().start(data)
        # the information quantities are float64 in any working dtype (see counting._tables), and
        # so are their running sums and minima: float32 sums would round near-tied picks apart
        self._zero = torch.zeros(data.n_features, dtype=torch.float64, device=data.codes.device)

    def _new_sum(self) -> torch.Tensor:
        return self._zero.clone()

    def _new_min(self) -> torch.Tensor:
        return torch.full_like(self._zero, float("inf"))


class LinearCriterion(_SumsCriterion):
    """``J = I(X_m;C) - beta(|S|) sum_j I(X_m;X_j) + gamma(|S|) sum_j I(X_m;X_j|C)`` (Brown et al. 2012).

    Parameters
    ----------
    name : str
    beta, gamma : callable of |S| returning float, or None
        The weights of the redundancy and conditional-redundancy sums; None leaves the
        term out (and its tables uncounted).
    """

    def __init__(self, name: str, beta: Callable[[int], float] | None, gamma: Callable[[int], float] | None) -> None:
        self.name, self.beta, self.gamma = name, beta, gamma

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.sum_mi, self.sum_cmi = self._new_sum(), self._new_sum()

    def update(self, j: int) -> None:
        if self.beta is not None or self.gamma is not None:
            # only the quantities read below are computed; without gamma, only I(X_m; X_j)
            q = self.data.pair_information(j, self.pair_needed)
            if self.beta is not None:
                self.sum_mi += q.mi_x_a
            if self.gamma is not None:
                self.sum_cmi += q.cmi_x_a_given_b
        super().update(j)

    def static(self) -> bool:
        return self.beta is None and self.gamma is None  # MIM

    @property
    def pair_needed(self) -> tuple[str, ...]:
        """The pair quantities the criterion reads: ``I(X_m; X_j)`` (beta), ``I(X_m; X_j | C)`` (gamma)."""
        return (("mi_x_a",) if self.beta is not None else ()) + (("cmi_x_a_given_b",) if self.gamma is not None else ())

    def scores(self) -> torch.Tensor:
        n = len(self.selected)
        s = self.data.relevance
        if self.beta is not None:
            s = s - self.beta(n) * self.sum_mi
        if self.gamma is not None:
            s = s + self.gamma(n) * self.sum_cmi
        return s


class _PairwiseCriterion(_SumsCriterion):
    """``J`` = the running sum or minimum over the selected ``X_j`` of one pairwise term.

    Parameters
    ----------
    name : str
    term : callable
        The term of every candidate against a new pick ``X_j``, from its quantities ``q``.
    needed : tuple of str
        The quantities ``term`` reads.
    minimum : bool
        Keep the minimum over the selected features instead of the sum.
    """

    def __init__(self, name: str, term: Callable[[Any], torch.Tensor], needed: tuple[str, ...],
                 minimum: bool = False) -> None:
        self.name, self.term, self.pair_needed, self.minimum = name, term, needed, minimum

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.acc = self._new_min() if self.minimum else self._new_sum()

    def update(self, j: int) -> None:
        t = self.term(self.data.pair_information(j, self.pair_needed))
        if self.minimum:
            self.acc = torch.minimum(self.acc, t)
        else:
            self.acc += t
        super().update(j)

    def scores(self) -> torch.Tensor:
        return self.acc


def _disr_term(q: Any) -> torch.Tensor:
    return q.mi_xa_b / q.h_xab.clamp_min(torch.finfo(q.h_xab.dtype).tiny)


def jmi_criterion() -> _PairwiseCriterion:
    """``J = sum_j I(X_m X_j; C)``."""
    return _PairwiseCriterion("jmi", lambda q: q.mi_xa_b, ("mi_xa_b",))


CMIM_VARIANTS = ("brown", "fleuret")



class CMIMCriterion(_SumsCriterion):
    """CMIM: ``J = min(I(X_m;C), min_j I(X_m;C|X_j))`` (Fleuret) or ``min_j I(X_m;C|X_j)`` (Brown et al.).

    Both keep one partial score per candidate, the minimum over the selected features it has
    been conditioned on (started at ``I(X_m;C)``, resp. +inf), which only shrinks as S grows.

    Parameters
    ----------
    variant : {"brown", "fleuret"}, default="brown"
    lazy : bool or "auto", default="auto"
        Fleuret's lazy evaluation, vectorized (see :meth:`_lazy_scores`): a candidate is
        conditioned on the selected features it has not seen yet only while its partial score
        (an upper bound of its score) could still reach the best exact score. The picks and
        scores are those of the eager evaluation, which conditions every candidate on every new
        pick (one table count of all candidates per step), up to the rounding of float64 sums
        (the lazy rounds count listed pairs, :meth:`~tensorprob.counting.SelectionData.pairs_information`).
        ``"auto"``: on the CPU, lazy where the planner's estimate of one lazy step (the rounds'
        fixed cost ``LAZY_STEP_S`` and the listed pairs of a typical step,
        :func:`~tensorprob.counting._costs.lazy_pairs_per_step`) is below its estimate of one
        eager step (few features and rows: the eager step is a slice of the tables of all pairs,
        counted at once), eager on CUDA, and eager on streamed data, where every lazy round would read all the rows
        once more (``True`` still evaluates lazily there), and for the members of a batch that
        counts every member's step in one product
        (:attr:`~tensorprob.counting.SelectionData.batch_counts_steps_together`).
    seed : int, default=4
        Lazy: how many candidates of highest partial score are brought up to date first, to
        give the score to beat.
    depth : int, default=1
        Lazy: how many more features each remaining contender is conditioned on in the first
        round after the seed; the depth doubles every round. The defaults computed the fewest
        pairs of the settings tried (``benchmarks/bench_peers.py``'s CMIM rows). A round whose
        contenders' remaining pairs cost less than a round's fixed cost
        (:data:`~tensorprob.counting._costs.LAZY_ROUND_S`, at the planner's estimate per pair)
        brings them all the way up to date instead: fewer rounds where rows are few.
    """

    name = "cmim"
    pair_needed = ("cmi_x_b_given_a",)

    def __init__(self, variant: str = "brown", lazy: bool | str = "auto", seed: int = 4, depth: int = 1) -> None:
        if variant not in CMIM_VARIANTS:
            raise ValueError(f"variant must be one of {CMIM_VARIANTS}, got {variant!r}")
        self.variant, self.lazy, self.seed, self.depth = variant, lazy, int(seed), int(depth)

    def _use_lazy(self, data: SelectionData) -> bool:
        if not isinstance(self.lazy, str):  # True / False (NumPy bools included)
            return bool(self.lazy)
        if data.stream is not None and data.sparse is None:  # each lazy round is a pass over the blocks: eager reads fewer
            return False
        if data.batch_counts_steps_together:  # one product serves every member's eager step
            return False
        if data.codes.device.type != "cpu" or data.n_features < 3:  # off the CPU every round is a sync
            return False
        # one eager step (every candidate against a pick) against one lazy step (its rounds' fixed
        # cost and a typical number of listed pairs), both as the planner would count them; the
        # most relevant feature, the first pick, stands for the picks
        rel = data.relevance.cpu()
        m = min(data.n_features - 1, _costs.lazy_pairs_per_step(data.n_features, data.planned_steps + 1, self.seed))
        top = torch.topk(rel, m + 1).indices.numpy()
        eager = data.estimate_seconds(int(top[0]), self.pair_needed)
        lazy = _costs.LAZY_STEP_S + data.estimate_seconds(int(top[0]), self.pair_needed, top[1:])
        return lazy < eager

    def _pair_seconds(self) -> float:
        """The estimate of one more listed pair (its marginal cost), made once per run.

        By the strategy that counted the run's listed pairs so far (the seed rounds), else as the
        planner would choose.
        """
        if self._pair_s is None:
            data = self.data
            used = data.counting_plan.get("pairs") or {}
            name = max(used, key=used.get) if used else None
            top = int(self.order[0]) if self.order.size else 0
            m = max(1, min(64, data.n_features // 2))
            cand = np.arange(m, dtype=np.int64)
            one, two = (data.estimate_seconds(top, self.pair_needed, np.resize(cand, n), name) for n in (m, 2 * m))
            self._pair_s = max((two - one) / m, 0.0) if np.isfinite(two) else math.inf
        return self._pair_s

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.partial = data.relevance.clone() if self.variant == "fleuret" else self._new_min()
        self.lazy_ = self._use_lazy(data)
        self._pair_s: float | None = None
        if self.lazy_:
            # the bookkeeping of the lazy rounds lives on the host, in NumPy (a few microseconds
            # per operation instead of some 10-20 for a small torch one; a round already reads
            # its number of pairs back); only the tables are counted on the data's device
            N = data.n_features
            self._p = self.partial.cpu().numpy().copy()  # the partial minima (upper bounds)
            self.seen = np.zeros(N, dtype=np.int64)  # features conditioned on
            self.open = np.ones(N, dtype=bool)  # not selected
            self.order = np.empty(0, dtype=np.int64)  # the selected features, in order
            held = data.unobserved
            self.held = None if held is None or not bool(held.any()) else held.cpu().numpy()
            self.n_observed = N - (0 if self.held is None else int(self.held.sum()))

    def update(self, j: int) -> None:
        if self.lazy_:
            self.open[j] = False
            self.order = np.append(self.order, j)
            self._p[j] = -math.inf  # a selected feature's bound is never read again: below every candidate's
        else:
            self.partial = torch.minimum(self.partial, self.data.pair_information(j, self.pair_needed).cmi_x_b_given_a)
        super().update(j)

    def scores(self) -> torch.Tensor:
        if not self.lazy_:
            return self.partial
        return torch.from_numpy(self._lazy_scores()).to(self.partial.device)

    def _catch_up(self, idx: np.ndarray, depth: int) -> None:
        """Condition the candidates ``idx`` on their next ``depth`` unseen selected features (fewer if fewer are left)."""
        t = len(self.selected)
        todo = np.minimum(t - self.seen[idx], depth)
        cand = np.repeat(idx, todo)
        # position of each pair among its candidate's next features: seen, seen + 1, ...
        start = np.cumsum(todo) - todo
        pos = np.arange(cand.size) - np.repeat(start, todo) + self.seen[cand]
        values = self.data.pairs_information(cand, self.order[pos], self.pair_needed).cmi_x_b_given_a
        np.minimum.at(self._p, cand, values.cpu().numpy())  # a minimum: exact in any order
        self.seen[idx] += todo

    def _lazy_scores(self) -> np.ndarray:
        """Exact scores of the candidates that can win (the others -inf), computing as few pairs as possible.

        Invariant: ``partial[m]`` is the minimum over the first ``seen[m]`` selected features,
        an upper bound of the score. First the ``seed`` candidates of highest partial score are
        brought up to date (Fleuret's visiting order, by blocks); then every candidate whose
        bound reaches the tie threshold of the best exact score (see
        :func:`~tensorprob.selection._greedy.tie_tolerance`, with a margin) is conditioned on
        its next ``depth`` features, ``depth`` doubling each round, until no stale candidate's
        bound does. A stale candidate left out scores below the threshold of the true maximum,
        so it can neither win nor tie: the driver's pick and value are the eager ones.

        Each round reads only what can change: the selected features hold a bound of -inf, so
        the seed is the top ``seed`` of the bounds themselves; the best exact score rises only
        as candidates of the rounds become exact; and a candidate left out of a round (its bound
        below the threshold) stays out, as bounds only fall and the threshold only rises. One
        pass over all candidates after the seed, then every round on its own stale ones. Should
        a candidate be exact already (scored twice in a step), the best is only underestimated:
        more candidates are brought up to date, none wrongly left out.
        """
        t = len(self.selected)
        p, seen = self._p, self.seen
        # the candidates: the open features, less those the driver holds back (they score 0 anyway)
        avail = self.open & ~self.held if self.held is not None and t < self.n_observed else None
        if t == 0:  # every bound is exact: the relevance (Fleuret) or +inf (Brown)
            return p.copy() if avail is None else np.where(avail, p, -math.inf)
        n_avail = p.size - t if avail is None else int(avail.sum())
        if n_avail == 0:
            return np.full(p.size, -math.inf)
        tol = 2 * tie_tolerance(torch.float64)
        if n_avail > self.seed:  # the highest bounds, fully (torch's top-k: one pass)
            bounds = p if avail is None else np.where(avail, p, -math.inf)
            stale = np.sort(torch.topk(torch.from_numpy(bounds), self.seed, sorted=False).indices.numpy())
        else:
            stale = np.flatnonzero(self.open if avail is None else avail)
        self._catch_up(stale, t)
        best = float(p[stale].max())
        thr = best - tol * max(abs(best), 1.0)
        in_play = (p >= thr) & (seen < t)  # the selected (-inf) never reach thr
        stale = np.flatnonzero(in_play if avail is None else in_play & avail)
        depth = self.depth
        while stale.size:
            # all the way up to date in this round when its pairs cost less than another round would
            # (few rows: a round's fixed cost is that of hundreds of pairs); any depth gives the same scores
            todo = int((t - seen[stale]).sum())
            full = todo * self._pair_seconds() <= _costs.LAZY_ROUND_S
            self._catch_up(stale, t if full else depth)
            ps, done = p[stale], seen[stale] == t
            if done.any():
                best = max(best, float(ps[done].max()))
                thr = best - tol * max(abs(best), 1.0)
            stale = stale[~done & (ps >= thr)]
            depth *= 2
        exact = seen == t
        return np.where(exact if avail is None else exact & avail, p, -math.inf)


def cmim_criterion(variant: str = "brown", lazy: bool | str = "auto") -> CMIMCriterion:
    """CMIM of the given variant (see :class:`CMIMCriterion`)."""
    return CMIMCriterion(variant, lazy)


def jmim_criterion() -> _PairwiseCriterion:
    """``J = min_j I(X_m X_j; C)``."""
    return _PairwiseCriterion("jmim", lambda q: q.mi_xa_b, ("mi_xa_b",), minimum=True)


def disr_criterion() -> _PairwiseCriterion:
    """``J = sum_j I(X_m X_j; C) / H(X_m X_j C)`` (a ratio: the same in any base)."""
    return _PairwiseCriterion("disr", _disr_term, ("mi_xa_b", "h_xab"))


class ICAPCriterion(_SumsCriterion):
    """``J = I(X_m;C) - sum_j max(0, I(X_m;X_j) - I(X_m;X_j|C))``."""

    name = "icap"
    pair_needed = ("mi_x_a", "cmi_x_a_given_b")

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.sum_icap = self._new_sum()

    def update(self, j: int) -> None:
        q = self.data.pair_information(j, self.pair_needed)
        self.sum_icap += (q.mi_x_a - q.cmi_x_a_given_b).clamp_min(0)
        super().update(j)

    def scores(self) -> torch.Tensor:
        return self.data.relevance - self.sum_icap


class RMRMRCriterion(_SumsCriterion):
    """RMRMR (GMD^{2,1}): see the module docstring."""

    name = "rmrmr"
    pair_needed = ("mi_x_a", "cmi_x_a_given_b", "cmi_x_b_given_a")

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.sum_mi, self.sum_cmi = self._new_sum(), self._new_sum()
        self.min_cmi_y = self._new_min()  # step 2 reads I(X_m; C | X_s1)
        self.sum_pairs = self._new_sum()  # sum over ordered pairs s != r of I(X_m; X_r | X_s)

    def update(self, j: int) -> None:
        d = self.data
        q = d.pair_information(j, self.pair_needed)
        self.sum_mi += q.mi_x_a
        self.sum_cmi += q.cmi_x_a_given_b
        self.min_cmi_y = torch.minimum(self.min_cmi_y, q.cmi_x_b_given_a)
        for r in self.selected:  # the new ordered pairs (j, r) and (r, j): the (x_m, x_r, x_j) tables
            t = d.triple_information(r, j, ("cmi_x_a_given_b", "cmi_x_b_given_a"))
            self.sum_pairs += t.cmi_x_a_given_b + t.cmi_x_b_given_a
        super().update(j)

    def scores(self) -> torch.Tensor:
        n = len(self.selected)
        if n == 1:
            return self.min_cmi_y  # I(X_m; C | X_s1)
        return self.data.relevance - (self.sum_mi - self.sum_cmi) / n - self.sum_pairs / (n * (n - 1))


class FID21Criterion(_SumsCriterion):
    """FID^{2,1} of Sun et al. (2020), eq. 6 with k1 = 2, k2 = 1.

    With the conditioning subsets ``T_2 = (X_m, X_s1)`` (``s1`` the first selected feature,
    the reference feature the authors' code also uses for AMD^{2,1}) and ``T_1 = (X_m)``, the
    terms of eq. 6 that depend on the candidate give

        J = I(X_m;C) - I(X_m;X_s1) - sum_{j in S, j != s1} I(X_m;X_j|X_s1) + sum_{j in S} I(X_m;X_j|C),

    the FID counterpart (sums, one conditioning subset) of RMRMR = GMD^{2,1} (means over all
    ordered pairs). At |S| = 1 it is ``I(X_m;C|X_s1)``, as RMRMR's second step.
    """

    name = "fid21"
    pair_needed = ("cmi_x_a_given_b", "mi_x_a")

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.mi_s1, self.sum_cond, self.sum_cmi = self._new_sum(), self._new_sum(), self._new_sum()

    def update(self, j: int) -> None:
        d = self.data
        q = d.pair_information(j, self.pair_needed)
        self.sum_cmi += q.cmi_x_a_given_b  # I(X_m; X_j | C)
        if not self.selected:
            self.mi_s1 = q.mi_x_a  # I(X_m; X_s1)
        else:  # I(X_m; X_j | X_s1) from the (candidate, x_j, x_s1) tables
            self.sum_cond += d.triple_information(j, self.selected[0], ("cmi_x_a_given_b",)).cmi_x_a_given_b
        super().update(j)

    def scores(self) -> torch.Tensor:
        return self.data.relevance - self.mi_s1 - self.sum_cond + self.sum_cmi


def mim_criterion() -> LinearCriterion:
    """MIM: (beta, gamma) = (0, 0)."""
    return LinearCriterion("mim", None, None)


def mifs_criterion(beta: float = 1.0) -> LinearCriterion:
    """MIFS: (beta, gamma) = (beta, 0)."""
    return LinearCriterion("mifs", lambda n: beta, None)


def mrmr_criterion() -> LinearCriterion:
    """MRMR: (beta, gamma) = (1/|S|, 0)."""
    return LinearCriterion("mrmr", lambda n: 1.0 / n, None)


def cife_criterion() -> LinearCriterion:
    """CIFE: (beta, gamma) = (1, 1)."""
    return LinearCriterion("cife", lambda n: 1.0, lambda n: 1.0)


def mri_criterion() -> LinearCriterion:
    """MRI: (beta, gamma) = (2/(|S|+1), 2/(|S|+1))."""
    return LinearCriterion("mri", lambda n: 2.0 / (n + 1), lambda n: 2.0 / (n + 1))


# ---------------------------------------------------------------------------- estimators
_TEMPLATE = """{summary}

    Greedy forward selection by ``J = {formula}``{tail}; the first pick is ``argmax I(X_m;C)``.
    Plug-in estimates from counts (see :mod:`tensorprob.selection._classic`).

    Parameters
    ----------
    %(k)s{extra_params}
    %(coded_params)s

    Attributes
    ----------
    %(picks)s
    %(coded_attributes)s

    See Also
    --------
    select_features : The same by method name.
    JMI, CMIM, MRMR : Other criteria of the family.

    Notes
    -----
    Entries with a missing value are dropped pairwise. Ties break to the lowest feature
    index. Constant features score 0.{extra_notes}

    References
    ----------
    .. [1] {brown}
    .. [2] {reference}

    Examples
    --------
    >>> from tensorprob import {name}
    %(example_xy)s
    >>> {name}(k=2).fit(X, y).selected_.tolist()
    {picks}
    """


class _ClassicSelector(GreedySelector):
    """The parameters every classic selector shares (MIFS adds ``beta``).

    A subclass names its criterion factory and the picks of its example in the class
    statement, ``class MIM(_ClassicSelector, criterion=mim_criterion, picks="[4, 5]")``, and
    writes a short docstring: a first paragraph ``NAME (title) by ``J``.``, with the criterion J
    in double backquotes, then the reference of the method. Its ``method_name`` is its lower-case
    name, and its full docstring is built from ``_TEMPLATE`` (a subclass with parameters of its
    own adds their entries in ``_extra_params`` and paragraphs of notes in ``_extra_notes``).
    """

    _extra_params: ClassVar[str] = ""
    _extra_notes: ClassVar[str] = ""
    _native_weights: ClassVar[bool] = True
    _streams: ClassVar[bool] = True
    _reads_sparse: ClassVar[bool] = True

    def __init_subclass__(cls, criterion: Callable[..., Criterion] | None = None, picks: str = "",
                          **kwargs: Any) -> None:
        if criterion is not None:
            cls.method_name = cls.__name__.lower()
            cls._make_criterion = staticmethod(criterion)
            first, reference = inspect.cleandoc(cls.__doc__).split("\n\n", 1)
            summary, formula = " ".join(first.split()).split(" by ``", 1)
            formula, tail = formula.split("``", 1)
            doc = _TEMPLATE.format(summary=summary + " feature selection.", formula=formula, tail=tail.rstrip("."),
                                   extra_params=cls._extra_params,
                                   extra_notes=cls._extra_notes, brown=_BROWN,
                                   reference=" ".join(reference.split()), name=cls.__name__, picks=picks)
            cls.__doc__ = doc
            fill_doc(cls, **SELECTOR_FRAGMENTS)
        super().__init_subclass__(**kwargs)

    def __init__(self, k: int | str = 10, *, discretizer: Any = "uniform", n_bins: int = 5,
                 missing_values: Any = None, base: Any = "e", device: Any = "auto", dtype: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.base = base
        self.device = device
        self.dtype = dtype
        self.distributed = distributed

    def _criterion(self) -> Criterion:
        return self._make_criterion()


class MIM(_ClassicSelector, criterion=mim_criterion, picks="[4, 5]"):
    """MIM (mutual information maximisation) by ``I(X_m;C)``.

    Lewis, D. D. (1992). Feature selection and feature extraction for text categorization.
    Proceedings of the Workshop on Speech and Natural Language, 212-217.
    """


class MIFS(_ClassicSelector, criterion=mifs_criterion, picks="[4, 5]"):
    """MIFS (mutual information feature selection) by ``I(X_m;C) - beta sum_j I(X_m;X_j)``.

    Battiti, R. (1994). Using mutual information for selecting features in supervised neural net
    learning. IEEE Transactions on Neural Networks, 5(4), 537-550.
    """

    _extra_params = """
    beta : float, default=1.0
        Redundancy weight (beta = 1 is FID^{1,0} of Sun et al. 2020)."""
    _parameter_constraints: ClassVar[dict] = {**GreedySelector._parameter_constraints,
                                              "beta": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, k: int | str = 10, *, beta: float = 1.0, discretizer: Any = "uniform", n_bins: int = 5,
                 missing_values: Any = None, base: Any = "e", device: Any = "auto", dtype: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.beta = beta
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.base = base
        self.device = device
        self.dtype = dtype
        self.distributed = distributed

    def _criterion(self) -> Criterion:
        return mifs_criterion(float(self.beta))


class MRMR(_ClassicSelector, criterion=mrmr_criterion, picks="[4, 5]"):
    """MRMR (minimum redundancy maximum relevance) by ``I(X_m;C) - (1/|S|) sum_j I(X_m;X_j)``.

    Peng, H., Long, F. and Ding, C. (2005). Feature selection based on mutual information: criteria
    of max-dependency, max-relevance, and min-redundancy. IEEE TPAMI, 27(8), 1226-1238.
    """


class CIFE(_ClassicSelector, criterion=cife_criterion, picks="[4, 1]"):
    """CIFE (conditional infomax feature extraction) by ``I(X_m;C) - sum_j I(X_m;X_j) + sum_j I(X_m;X_j|C)``.

    Lin, D. and Tang, X. (2006). Conditional infomax learning: an integrated framework for feature
    extraction and fusion. ECCV 2006, 68-82.
    """


class JMI(_ClassicSelector, criterion=jmi_criterion, picks="[4, 1]"):
    """JMI (joint mutual information) by ``sum_j I(X_m X_j; C)``.

    Yang, H. H. and Moody, J. (1999). Data visualization and feature selection: new algorithms for
    nongaussian data. NIPS 12, 687-693.
    """


class CMIM(_ClassicSelector, criterion=cmim_criterion, picks="[4, 1]"):
    """CMIM (conditional mutual information maximisation) by ``min_j I(X_m;C|X_j)``
    (``variant="brown"``) or ``J = min(I(X_m;C), min_j I(X_m;C|X_j))`` (``variant="fleuret"``).

    Fleuret, F. (2004). Fast binary feature selection with conditional mutual information. Journal
    of Machine Learning Research, 5, 1531-1555.
    """

    _extra_params = """
    variant : {"brown", "fleuret"}, default="brown"
        Which CMIM. ``"brown"``: ``J = min_j I(X_m;C|X_j)``, the form of Brown et al. (2012),
        also computed by scikit-feature and ITMO_FS. ``"fleuret"``: Fleuret's algorithm, whose
        partial score starts at ``I(X_m;C)`` and is lowered by every selected feature,
        ``J = min(I(X_m;C), min_j I(X_m;C|X_j))``, so it never exceeds ``I(X_m;C)``; the
        criterion of FEAST (``fstoolbox``), whose ordered selections it reproduces. They differ
        where a candidate gains information from every selected feature
        (``I(X_m;C|X_j) > I(X_m;C)`` for all j).
    lazy : bool or "auto", default="auto"
        Fleuret's lazy evaluation: a candidate is conditioned on the selected features it has
        not seen yet only while its partial score could still win. The same picks and scores
        as the eager evaluation (every candidate against every pick; the scores up to the
        rounding of float64 sums), from fewer tables. ``"auto"``: on the CPU, lazy where the counting planner estimates a
        step of lazy rounds below an eager step (many features or many rows), eager otherwise
        (few rows and features, where the tables of all pairs are counted at once) and on CUDA, and
        eager on streamed X (row chunks), where each lazy round would read all the rows
        again; ``True`` is exact there too. With ``resamples=`` (four or more weight vectors
        of small integers) "auto" is eager on the CPU too: one matrix product then counts
        every selection's step."""
    _extra_notes = """

    The default is ``variant="brown"`` because it sees complementary features: a feature that
    says nothing about C alone but much together with a selected one (``I(X_m;C) = 0``,
    ``I(X_m;C|X_j) > 0``, as in an XOR) scores its conditional information, while Fleuret's
    score stays capped at ``I(X_m;C) = 0``. It is also what ``CMIM`` computed before ``variant``
    existed, so results do not change. Use ``variant="fleuret"`` to reproduce Fleuret's
    algorithm and FEAST. Both variants start with ``argmax I(X_m;C)`` and keep one partial
    minimum per candidate that only decreases as features are selected, which is what the lazy
    evaluation relies on."""
    _parameter_constraints: ClassVar[dict] = {**GreedySelector._parameter_constraints,
                                              "variant": [StrOptions(set(CMIM_VARIANTS))],
                                              "lazy": ["boolean", StrOptions({"auto"})]}

    def __init__(self, k: int | str = 10, *, variant: str = "brown", lazy: bool | str = "auto",
                 discretizer: Any = "uniform", n_bins: int = 5, missing_values: Any = None, base: Any = "e",
                 device: Any = "auto", dtype: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.variant = variant
        self.lazy = lazy
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.base = base
        self.device = device
        self.dtype = dtype
        self.distributed = distributed

    def _criterion(self) -> Criterion:
        return cmim_criterion(self.variant, self.lazy)


class JMIM(_ClassicSelector, criterion=jmim_criterion, picks="[4, 1]"):
    """JMIM (joint mutual information maximisation) by ``min_j I(X_m X_j; C)``.

    Bennasar, M., Hicks, Y. and Setchi, R. (2015). Feature selection using joint mutual information
    maximisation. Expert Systems with Applications, 42(22), 8520-8532.
    """


class DISR(_ClassicSelector, criterion=disr_criterion, picks="[4, 1]"):
    """DISR (double input symmetrical relevance) by ``sum_j I(X_m X_j; C) / H(X_m X_j C)``.

    Meyer, P. E., Schretter, C. and Bontempi, G. (2008). Information-theoretic feature selection in
    microarray data using variable complementarity. IEEE J. Sel. Topics Signal Process., 2(3),
    261-274.
    """


class ICAP(_ClassicSelector, criterion=ICAPCriterion, picks="[4, 5]"):
    """ICAP (interaction capping) by ``I(X_m;C) - sum_j max(0, I(X_m;X_j) - I(X_m;X_j|C))``.

    Jakulin, A. (2005). Machine learning based on attribute interactions. PhD thesis, University of
    Ljubljana.
    """


class MRI(_ClassicSelector, criterion=mri_criterion, picks="[4, 1]"):
    """MRI (maximal relevance and independence) by ``I(X_m;C) - 2/(|S|+1) sum_j [I(X_m;X_j) - I(X_m;X_j|C)]``.

    Wang, J., Wei, J.-M., Yang, Z. and Wang, S.-Q. (2017). Feature selection by maximizing independent
    classification information. IEEE TKDE, 29(4), 828-841.
    """


class RMRMR(_ClassicSelector, criterion=RMRMRCriterion, picks="[4, 1]"):
    """RMRMR (relaxed minimum redundancy maximum relevance) by ``I(X_m;C) - (1/|S|) sum_j [I(X_m;X_j) -
    I(X_m;X_j|C)] - 1/(|S|(|S|-1)) sum_{s != r} I(X_m;X_r|X_s)`` (step 2: ``I(X_m;C|X_s1)``).

    Vinh, N. X., Zhou, S., Chan, J. and Bailey, J. (2016). Can high-order dependencies improve mutual
    information based feature selection? Pattern Recognition, 53, 46-58.
    """
