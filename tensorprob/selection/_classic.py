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

from .._config import get_config
from .._device import chunk_ranges
from .._docstrings import fill_doc
from ..counting import SelectionData, joint_table, table_information
from ..counting._tables import _XLOGX_MAX, information_of_counts
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
            q = self.data.pair_information(j, classes=self.gamma is not None)
            if self.beta is not None:
                self.sum_mi += q.mi_x_a
            if self.gamma is not None:
                self.sum_cmi += q.cmi_x_a_given_b
        super().update(j)

    def static(self) -> bool:
        return self.beta is None and self.gamma is None  # MIM

    @property
    def pair_classes(self) -> bool:
        """Whether the criterion reads pair quantities with the class (only through ``gamma``)."""
        return self.gamma is not None

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
        The term of every candidate against a new pick ``X_j``, from its
        :class:`~tensorprob.counting.TableInformation` ``q``.
    minimum : bool
        Keep the minimum over the selected features instead of the sum.
    """

    def __init__(self, name: str, term: Callable[[Any], torch.Tensor], minimum: bool = False) -> None:
        self.name, self.term, self.minimum = name, term, minimum

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.acc = self._new_min() if self.minimum else self._new_sum()

    def update(self, j: int) -> None:
        t = self.term(self.data.pair_information(j))
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
    return _PairwiseCriterion("jmi", lambda q: q.mi_xa_b)


def _pair_itype(max_card: int) -> torch.dtype:
    """The narrowest integer type that holds a pair's code ``x_c * I + x_s`` (I = ``max_card``)."""
    cells = max_card ** 2
    return torch.int16 if cells < 2**15 else torch.int32 if cells < 2**31 else torch.int64


def pair_codes(codes: torch.Tensor, max_card: int) -> torch.Tensor:
    """``codes`` (M, N) as one contiguous row per feature (N, M), in :func:`_pair_itype`."""
    return codes.T.to(_pair_itype(max_card), memory_format=torch.contiguous_format)


def pair_cmi(data: SelectionData, codes_t: torch.Tensor | None, cand: torch.Tensor, sel: torch.Tensor,
             class_t: np.ndarray | None = None) -> torch.Tensor:
    """``I(X_cand[i]; C | X_sel[i])`` for a batch of (candidate, selected feature) pairs, float64 (P,).

    The value of ``data.pair_information(sel[i]).cmi_x_b_given_a[cand[i]]``, bit for bit on the
    CPU: the pair ``(x_c, x_s)`` is coded as one column ``x_c * I + x_s`` (I the padded
    cardinality; -1 where either is missing), whose (pair, class) table has the cells, in the
    same order, of the (x_c, x_s, class) table that
    :meth:`~tensorprob.counting.SelectionData.pair_information` counts (counts are exact
    integers), and a table's quantities come from the same float64 operations whatever the other
    tables of the batch: elementwise ones, and sums along each table's row. (A batch of one
    table is computed as two: a threaded sum may split the row of a single-output reduction.)
    ``codes_t`` is :func:`pair_codes` of ``data.codes`` (N, M): a pair's columns are two rows of
    it; None for streamed data, whose blocks are transposed as they are read. Chunked over
    pairs to the memory budget (streamed: one pass over the blocks per chunk of pairs).

    Complete, unweighted rows in memory on the CPU in one process are counted in NumPy
    (:func:`_pair_class_counts`, :func:`~tensorprob.counting._tables.information_of_counts`), from
    ``class_t``, :func:`pair_class_codes` (made here when not given): a lazy round's few dozen
    tables then cost a few NumPy calls each instead of some 60 small torch operations in all.
    """
    d = data
    if class_t is None:
        class_t = pair_class_codes(d, codes_t)
    if class_t is not None:
        v = _pair_cmi_numpy(d, codes_t.numpy(), class_t, cand.numpy(), sel.numpy())
        if v is not None:
            return torch.from_numpy(v)
    I, M, C = d.max_card, d.budget_rows, d.n_classes  # distributed: chunks sized alike on every rank
    complete = d.complete
    out = torch.empty(cand.numel(), dtype=torch.float64, device=d.codes.device)
    # per pair: NumPy, its table and the lookups of its entropies (the keys go in blocks of
    # _KEY_BLOCK); torch, the two gathered columns and their code, each M integers
    per_pair = 48 * I * I * C if class_t is not None else 3 * max(M, 1) * _pair_itype(I).itemsize
    for s, e in chunk_ranges(cand.numel(), per_pair, get_config()["memory_budget"]):
        c, j = cand[s:e], sel[s:e]
        if class_t is not None:  # tables past the lookups' range: their logarithms, in torch
            T = torch.from_numpy(_pair_class_counts(codes_t.numpy(), class_t, c.numpy(), j.numpy(), I, C))
        else:
            def tables(codes, y, w, dtype, c=c, j=j):
                ct = pair_codes(codes, I) if codes_t is None else codes_t
                xc, xs = ct.index_select(0, c), ct.index_select(0, j)
                pair = xc.mul_(I).add_(xs)
                if not complete:
                    pair.masked_fill_((pair < 0) | (xs < 0), -1)  # x_c < 0 makes the code negative
                return joint_table(pair.T, I * I, None, 1, y, C, weights=w, dtype=dtype, complete=complete)

            T = d.count(tables)
        if T.shape[0] == 1:  # a lone table is computed as two (see above)
            T = T.repeat(2, 1, 1, 1)
        info = table_information(T.view(T.shape[0], I, I, C), d.log_base, d.n_rows)
        out[s:e] = info.cmi_x_b_given_a[: e - s]
    return out


def _pair_cmi_numpy(d: SelectionData, ct: np.ndarray, class_t: np.ndarray, cand: np.ndarray,
                    sel: np.ndarray) -> np.ndarray | None:
    """:func:`pair_cmi` of complete, unweighted rows in NumPy (``class_t`` given), float64 (P,); None past the lookups.

    Every table's total is the number of rows, and ``h(x_j)``, ``h(x_j, class)`` are the
    selected feature's entropies of the class table
    (:meth:`~tensorprob.counting.SelectionData.marginal_entropies`, the values the eager step
    seeds): per pair only the (x_c, x_j) and (x_c, x_j, class) entropies are computed. A
    lazy round costs a few NumPy calls (about 0.1 ms fixed; the arcene shape makes some 70
    rounds in a selection of 50).
    """
    I, C, M = d.max_card, d.n_classes, int(ct.shape[1])
    m = d.marginal_entropies()
    if m is None or M > _XLOGX_MAX:
        return None
    h_x, h_xb = m["h_x"].numpy(), m["h_xb"].numpy()
    out = np.empty(cand.size, dtype=np.float64)
    for s, e in chunk_ranges(cand.size, 48 * I * I * C, get_config()["memory_budget"]):
        c, j = cand[s:e], sel[s:e]
        T = _pair_class_counts(ct, class_t, c, j, I, C)
        out[s:e] = information_of_counts(T, "cmi_x_b_given_a", d.log_base, {"h_a": h_x[j], "h_ab": h_xb[j]}, total=M)
    return out


def pair_class_codes(data: SelectionData, codes_t: torch.Tensor | None, empty: bool = False) -> np.ndarray | None:
    """``x_n * C + class`` of every feature (N, M), NumPy: :func:`pair_cmi`'s operand on the CPU; else None.

    None unless the rows are complete, unweighted and in memory on the CPU in one process
    (``codes_t``, :func:`pair_codes`, on the CPU). ``empty``: the array uninitialized, for a
    caller that writes the rows it reads (a pair reads only its selected feature's row: a lazy
    CMIM writes the row of each pick, on the arcene shape 50 rows instead of 10,000).
    """
    d = data
    if (codes_t is None or codes_t.device.type != "cpu" or not d.complete or d._weighted or d.distributed
            or d.stream is not None):
        return None
    C = d.n_classes
    cells = d.max_card * C
    dt = np.int8 if cells <= 2**7 else np.int16 if cells <= 2**15 else np.int32 if cells <= 2**31 else np.int64
    if empty:
        return np.empty(tuple(codes_t.shape), dtype=dt)
    return np.add(np.multiply(codes_t.numpy(), C, dtype=dt), d.y.numpy().astype(dt))


#: Keys per block of :func:`_pair_class_counts` (1 MiB of them): blocks stay in the cache.
_KEY_BLOCK = 1 << 17


def _pair_class_counts(ct: np.ndarray, class_t: np.ndarray, c: np.ndarray, j: np.ndarray, I: int,
                       C: int) -> np.ndarray:
    """Counts (P, I, I, C) of (x_c[p], x_j[p], class) of complete codes, by NumPy bincounts.

    ``ct`` (N, M): the codes, one row per feature; ``class_t``: :func:`pair_class_codes`. The
    key of a row is ``x_c * I C + (x_j C + class)`` plus the pair's offset: one gathered
    product and two adds per entry, in blocks of about :data:`_KEY_BLOCK` keys (3x faster
    than one pass over 20 pairs of 100,000 rows).
    """
    P, M = c.size, ct.shape[1]
    per = I * I * C
    out = np.empty((P, per), dtype=np.int64)
    step = max(1, _KEY_BLOCK // max(1, M))
    # int32 keys counted by torch's bincount: 1.5x faster than NumPy's on intp keys (20,000
    # pairs of 200 rows: 8.8 against 13.4 ms); intp where a block's cells pass int32
    kt = np.int32 if min(step, P) * per < 2**31 else np.int64
    for s in range(0, P, step):
        cc, jj = c[s:s + step], j[s:s + step]
        key = np.multiply(ct[cc], I * C, dtype=kt)
        key += class_t[jj]
        key += (np.arange(cc.size, dtype=kt) * per)[:, None]
        counts = torch.bincount(torch.from_numpy(key.reshape(-1)), minlength=cc.size * per)
        out[s:s + cc.size] = counts.numpy().reshape(cc.size, per)
    return out.reshape(P, I, I, C)


CMIM_VARIANTS = ("brown", "fleuret")

#: ``lazy="auto"`` evaluates lazily on the CPU when one eager step's work, N * (M + cells of a
#: table), reaches this: below it the per-round overhead of the lazy rounds (a few dozen small
#: torch operations) costs more than the counting it saves (measured: chess, splice, optdigits).
LAZY_MIN_WORK = 2**19
#: ``lazy="auto"`` is eager for the members of a batch of at least this many whose tables the
#: int8 products count (:mod:`~tensorprob.counting._batched`): one product serves every
#: member's step (MNIST-5k, k = 50, bootstrap members: 3 take as long eager as lazy, 6 take 0.70 s
#: eager against 1.03 s lazy).
EAGER_MIN_BATCH = 4


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
        pick (one table count of all candidates per step); bit for bit on the CPU (see
        :func:`pair_cmi`). ``"auto"``: lazy on the CPU when a step's work reaches
        :data:`LAZY_MIN_WORK`, eager otherwise, and eager on streamed data, where every lazy
        round would read all the rows once more (``True`` still evaluates lazily there), and
        for the members of a batch of at least :data:`EAGER_MIN_BATCH` whose tables the int8
        products count (one product serves every member's eager step).
    seed : int, default=4
        Lazy: how many candidates of highest partial score are brought up to date first, to
        give the score to beat.
    depth : int, default=1
        Lazy: how many more features each remaining contender is conditioned on in the first
        round after the seed; the depth doubles every round. The defaults compute the fewest
        pairs of those measured (k = 50, Fleuret's variant: the arcene shape 11,187 pairs
        against 20,557 with 8 and 2, MNIST-5k 3,968 against 4,781; 5-10 % less time; Fleuret's
        one-candidate-at-a-time loop, which no batch can follow, takes 8,653 on the arcene shape).
    """

    name = "cmim"

    def __init__(self, variant: str = "brown", lazy: bool | str = "auto", seed: int = 4, depth: int = 1) -> None:
        if variant not in CMIM_VARIANTS:
            raise ValueError(f"variant must be one of {CMIM_VARIANTS}, got {variant!r}")
        self.variant, self.lazy, self.seed, self.depth = variant, lazy, int(seed), int(depth)

    def _use_lazy(self, data: SelectionData) -> bool:
        if not isinstance(self.lazy, str):  # True / False (NumPy bools included)
            return bool(self.lazy)
        if data.stream is not None:  # each lazy round is a pass over the blocks: eager reads fewer
            return False
        batch = getattr(data, "_batch", None)
        if batch is not None and batch._raw_ok and len(batch.members) >= EAGER_MIN_BATCH:
            # a member of a batch whose tables the int8 products count: every member's eager
            # step comes from one product, 3-4x cheaper than lazy members on their own
            # (100 bootstrap members of MNIST-5k, k = 50: 6.3 s eager, 17 s lazy)
            return False
        cells = data.max_card ** 2 * data.n_classes
        return data.codes.device.type == "cpu" and data.n_features * (data.budget_rows + cells) >= LAZY_MIN_WORK

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.partial = data.relevance.clone() if self.variant == "fleuret" else self._new_min()
        self.lazy_ = self._use_lazy(data)
        if self.lazy_:
            # the bookkeeping of the lazy rounds lives on the host, in NumPy (a few microseconds
            # per operation instead of some 10-20 for a small torch one; a round already reads
            # its number of pairs back); only the tables are counted on the data's device
            N = data.n_features
            self._p = self.partial.cpu().numpy().copy()  # the partial minima (upper bounds)
            self.seen = np.zeros(N, dtype=np.int64)  # features conditioned on
            self.open = np.ones(N, dtype=bool)  # not selected
            self.order = np.empty(0, dtype=np.int64)  # the selected features, in order
            # the codes one row per feature (a pair's two columns are two contiguous rows); streamed
            # data are transposed block by block as they are read
            self.codes_t = None if data.stream is not None else pair_codes(data.codes, data.max_card)
            # the CPU's NumPy path, else None; the row of each pick is written when it is picked
            self.class_t = pair_class_codes(data, self.codes_t, empty=True)
            if self.class_t is not None:  # the class in class_t's dtype, for update's rows
                self._class_y = data.y.numpy().astype(self.class_t.dtype)
            held = data.unobserved
            self.held = None if held is None or not bool(held.any()) else held.cpu().numpy()
            self.n_observed = N - (0 if self.held is None else int(self.held.sum()))

    def update(self, j: int) -> None:
        if self.lazy_:
            self.open[j] = False
            self.order = np.append(self.order, j)
            if self.class_t is not None:  # pair_class_codes' row of the pick
                np.add(np.multiply(self.codes_t.numpy()[j], self.data.n_classes, dtype=self.class_t.dtype),
                       self._class_y, out=self.class_t[j])
            self._p[j] = -math.inf  # a selected feature's bound is never read again: below every candidate's
        else:
            self.partial = torch.minimum(self.partial, self.data.pair_information(j).cmi_x_b_given_a)
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
        dev = self.partial.device
        values = pair_cmi(self.data, self.codes_t, torch.from_numpy(cand).to(dev),
                          torch.from_numpy(self.order[pos]).to(dev), self.class_t)
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
            self._catch_up(stale, depth)
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
    return _PairwiseCriterion("jmim", lambda q: q.mi_xa_b, minimum=True)


def disr_criterion() -> _PairwiseCriterion:
    """``J = sum_j I(X_m X_j; C) / H(X_m X_j C)`` (a ratio: the same in any base)."""
    return _PairwiseCriterion("disr", _disr_term)


class ICAPCriterion(_SumsCriterion):
    """``J = I(X_m;C) - sum_j max(0, I(X_m;X_j) - I(X_m;X_j|C))``."""

    name = "icap"

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.sum_icap = self._new_sum()

    def update(self, j: int) -> None:
        q = self.data.pair_information(j)
        self.sum_icap += (q.mi_x_a - q.cmi_x_a_given_b).clamp_min(0)
        super().update(j)

    def scores(self) -> torch.Tensor:
        return self.data.relevance - self.sum_icap


class RMRMRCriterion(_SumsCriterion):
    """RMRMR (GMD^{2,1}): see the module docstring."""

    name = "rmrmr"

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.sum_mi, self.sum_cmi = self._new_sum(), self._new_sum()
        self.min_cmi_y = self._new_min()  # step 2 reads I(X_m; C | X_s1)
        self.sum_pairs = self._new_sum()  # sum over ordered pairs s != r of I(X_m; X_r | X_s)

    def update(self, j: int) -> None:
        d = self.data
        q = d.pair_information(j)
        self.sum_mi += q.mi_x_a
        self.sum_cmi += q.cmi_x_a_given_b
        self.min_cmi_y = torch.minimum(self.min_cmi_y, q.cmi_x_b_given_a)
        I, complete = d.max_card, d.complete
        for r in self.selected:  # the new ordered pairs (j, r) and (r, j)
            T = d.count(lambda codes, y, w, dtype, r=r: joint_table(codes, I, codes[:, r], I, codes[:, j], I, weights=w,
                                                                  dtype=dtype, complete=complete))
            t = table_information(T, d.log_base, d.n_rows)
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

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.mi_s1, self.sum_cond, self.sum_cmi = self._new_sum(), self._new_sum(), self._new_sum()

    def update(self, j: int) -> None:
        d = self.data
        q = d.pair_information(j)
        self.sum_cmi += q.cmi_x_a_given_b  # I(X_m; X_j | C)
        if not self.selected:
            self.mi_s1 = q.mi_x_a  # I(X_m; X_s1)
        else:  # I(X_m; X_j | X_s1) from the (candidate, x_j, x_s1) tables
            I, complete, s1 = d.max_card, d.complete, self.selected[0]
            T = d.count(lambda codes, y, w, dtype: joint_table(codes, I, codes[:, j], I, codes[:, s1], I, weights=w,
                                                               dtype=dtype, complete=complete))
            self.sum_cond += table_information(T, d.log_base, d.n_rows).cmi_x_a_given_b
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
        as the eager evaluation (every candidate against every pick; bit for bit on the CPU),
        from fewer tables. ``"auto"``: lazy on the CPU when the data are large enough for it to
        pay (about half a million codes, N x M, and more), eager otherwise and on CUDA, and
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
