"""FID / GMD / AMD families of paper 004 in the MI and VI frameworks, and VMI (paper 001)."""
from __future__ import annotations

import numbers

import torch

from .._device import block_budget, chunk_ranges
from ..counting import gather_conditional, joint_table
from ..information._variational import VariationalState
from ._base import GreedySelector
from ._classic import ClassicCriterion
from ._greedy import Criterion, SelectionData

_MI_ORDERS = ((0, 0), (1, 0), (1, 1), (2, 1))
_FID_CLASSIC = {(0, 0): "mim", (1, 0): "mifs", (1, 1): "cife"}


class SampleMeanCriterion(Criterion):
    """``J = (1/M) sum_j log [pbar_{k2}(x_m | S, c) / pbar_{k1}(x_m | S)]`` with arithmetic or geometric means.

    State per (sample, candidate): the running sum over the 1-subsets of S of
    ``p^(x_m | x_s, c)`` (k2 = 1) and of ``p^(x_m | x_s)`` (k1 = 1) or of ``p^(x_m | x_s, x_r)``
    over the pairs of S (k1 = 2), as probabilities (AMD) or log-probabilities (GMD).
    """

    def __init__(self, mean: str, k1: int, k2: int) -> None:
        self.mean, self.k1, self.k2 = mean, k1, k2

    def _term(self, p: torch.Tensor) -> torch.Tensor:
        return p if self.mean == "arithmetic" else p.log_()

    def _avg(self, acc: torch.Tensor, n: int) -> torch.Tensor:
        return torch.div(acc, n).log_() if self.mean == "arithmetic" else torch.div(acc, n)

    @staticmethod
    def _accumulate(acc: torch.Tensor | None, t: torch.Tensor) -> torch.Tensor:
        return t if acc is None else acc.add_(t)

    def start(self, data: SelectionData) -> None:
        super().start(data)
        T = data.class_table
        ok = data.complete
        self.log_p_y = gather_conditional(T, data.codes, None, data.y, complete=ok).log_()  # log p^(x_m | c)
        self.log_p = gather_conditional(T, data.codes, None, data.y, marginalize_b=True,
                                        complete=ok).log_()  # log p^(x_m)
        self.num = self.den = self.first = self.pairs = None
        self.n_pairs = 0

    def update(self, j: int) -> None:
        d = self.data
        if self.k2 == 1 or self.k1 >= 1:
            T = joint_table(d.codes, d.card, d.codes[:, j], d.card, d.y, d.n_classes, dtype=d.dtype,
                            complete=d.complete)
            if self.k2 == 1:
                p = gather_conditional(T, d.codes, d.codes[:, j], d.y, complete=d.complete)
                self.num = self._accumulate(self.num, self._term(p))
            if self.k1 >= 1:
                t = self._term(gather_conditional(T, d.codes, d.codes[:, j], d.y, marginalize_b=True,
                                                  complete=d.complete))
                self.den = self._accumulate(self.den, t)
        if self.k1 == 2:
            for r in self.selected:  # the new pairs {r, j}
                T = joint_table(d.codes, d.card, d.codes[:, r], d.card, d.codes[:, j], d.card, dtype=d.dtype,
                                complete=d.complete)
                t = self._term(gather_conditional(T, d.codes, d.codes[:, r], d.codes[:, j], complete=d.complete))
                self.pairs = self._accumulate(self.pairs, t)
                self.n_pairs += 1
        super().update(j)

    def scores(self) -> torch.Tensor:
        """J of every candidate, in candidate blocks (cache-sized temporaries on the CPU)."""
        d = self.data
        n = len(self.selected)
        out = torch.empty(d.n_features, dtype=d.dtype, device=d.codes.device)
        M = d.codes.shape[0]
        for a, b in chunk_ranges(d.n_features, M * out.element_size(), block_budget(out.device)):
            log_num = self.log_p_y[:, a:b] if self.k2 == 0 else self._avg(self.num[:, a:b], n)
            if self.k1 == 0:
                log_den = self.log_p[:, a:b]
            elif self.k1 == 1 or self.n_pairs == 0:
                log_den = self._avg(self.den[:, a:b], n if self.k1 == 1 else 1)
            else:
                log_den = self._avg(self.pairs[:, a:b], self.n_pairs)
            out[a:b] = (log_num - log_den).mean(0)
        return out / d.log_base


class VariationalCriterion(Criterion):
    """The VI bound ``L(C + i)`` with the restart rule of the authors' codes.

    When the best new bound exceeds the previous one by less than ``restart_threshold``
    (in the chosen base) and the chain is not empty, the chain is dropped, nothing is
    selected in that iteration, and the next step starts a new chain (whose first bound is
    ``I^(x_i; y)``); earlier picks stay selected but leave the bound.
    """

    def __init__(self, q: str, restart_threshold: float = 0.01) -> None:
        self.q, self.restart_threshold = q, restart_threshold

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.state = VariationalState(data, self.q)
        self.prev = 0.0
        self.n_restarts = 0

    def first_scores(self) -> torch.Tensor:
        return self.state.bounds()

    def scores(self) -> torch.Tensor:
        return self.state.bounds()

    def accept(self, j: int, score: float) -> bool:
        if self.state.chain and score - self.prev < self.restart_threshold:
            self.state.reset()
            self.prev = 0.0
            self.n_restarts += 1
            return False
        self.prev = score
        return True

    def update(self, j: int) -> None:
        self.state.add(j)
        super().update(j)


class _PerSampleSelector(GreedySelector):
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False  # per-sample estimators need complete data
        return tags

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        if (codes < 0).any():
            raise ValueError(f"{type(self).__name__} needs complete data: X has missing values (NaN/None or "
                             "code -1); impute them or drop those rows")
        return super()._select(codes, cards, y, n_classes, k, device, dtype)


class PDA(_PerSampleSelector):
    """Feature selection under the FID, GMD or AMD distribution assumptions (Sun et al., AAAI 2020).

    Parameters
    ----------
    k : int or "all", default=10
    distribution : {"fid", "gmd", "amd"}, default="amd"
    framework : {"mi", "vi"}, default="mi"
    k1, k2 : int, default 1, 1
        MI framework: orders of the conditional subsets, (k1, k2) in {(0,0), (1,0), (1,1),
        (2,1)} (FID: not (2,1), which the paper does not define). VI framework: the order of
        q is ``k1`` in {0, 1} (``k2`` is ignored).
    restart_threshold : float, default=0.01
        VI framework: the chain restarts when the bound grows by less than this (nats).
    discretizer, n_bins, base, device, dtype
        As in :class:`tensorprob.MIM`.

    Attributes
    ----------
    selected_, scores_, n_features_in_, feature_names_in_
    n_restarts_ : int (VI framework) — how often the chain was dropped

    Notes
    -----
    MI framework: FID^{0,0}, FID^{1,0}, FID^{1,1} are MIM, MIFS (beta 1) and CIFE. GMD and
    AMD run as per-sample sample-mean estimators (eq. 15; GMD's closed forms are MIM, MRMR,
    JMI and RMRMR, which the tests confirm). A conditional probability whose conditioning
    event has probability below 1e-10 counts as 0. VI framework: see
    :class:`VariationalCriterion`. Per-sample methods need complete data. Ties break to the
    lowest index.
    """

    def __init__(self, k=10, *, distribution="amd", framework="mi", k1=1, k2=1, restart_threshold=0.01,
                 discretizer="uniform", n_bins=5, base="e", device="auto", dtype=None):
        self.k = k
        self.distribution = distribution
        self.framework = framework
        self.k1 = k1
        self.k2 = k2
        self.restart_threshold = restart_threshold
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.base = base
        self.device = device
        self.dtype = dtype

    def _validate_extra(self) -> None:
        if self.distribution not in ("fid", "gmd", "amd"):
            raise ValueError(f"The 'distribution' parameter of PDA must be 'fid', 'gmd' or 'amd'; "
                             f"got {self.distribution!r}")
        if self.framework not in ("mi", "vi"):
            raise ValueError(f"The 'framework' parameter of PDA must be 'mi' or 'vi'; got {self.framework!r}")
        if self.framework == "mi":
            if (self.k1, self.k2) not in _MI_ORDERS:
                raise ValueError(f"PDA in the MI framework supports (k1, k2) in {_MI_ORDERS}; "
                                 f"got ({self.k1!r}, {self.k2!r})")
            if self.distribution == "fid" and (self.k1, self.k2) == (2, 1):
                raise ValueError("FID^{2,1} is not defined by paper 004 (FID covers (0,0), (1,0), (1,1): "
                                 "MIM, MIFS, CIFE); use distribution='gmd' (RMRMR) or 'amd'")
        elif self.k1 not in (0, 1):
            raise ValueError(f"PDA in the VI framework supports order k1 in (0, 1); got {self.k1!r}")
        t = self.restart_threshold
        if isinstance(t, bool) or not isinstance(t, numbers.Real) or not t >= 0:
            raise ValueError(f"The 'restart_threshold' parameter of PDA must be a real number >= 0; got {t!r}")

    def _criterion(self) -> Criterion:
        if self.framework == "vi":
            q = "naive" if self.k1 == 0 else self.distribution
            self._vi = VariationalCriterion(q, float(self.restart_threshold))
            return self._vi
        if self.distribution == "fid":
            return ClassicCriterion(_FID_CLASSIC[(self.k1, self.k2)], beta=1.0)
        return SampleMeanCriterion("arithmetic" if self.distribution == "amd" else "geometric", self.k1, self.k2)

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        out = super()._select(codes, cards, y, n_classes, k, device, dtype)
        if self.framework == "vi":
            self.n_restarts_ = self._vi.n_restarts
        return out


class VMI(PDA):
    """Variational information maximization (Gao, Ver Steeg & Galstyan, NIPS 2016).

    Greedy maximization of the variational lower bound ``I(X_S; Y) >= H(Y) + E[log q(y|x_S)]``
    with q the naive (``q="naive"``) or pairwise (``q="pairwise"``, geometric mean of the
    pairwise conditionals, = GMD^1 of paper 004) auto-regressive distribution, and the
    authors' restart rule (``restart_threshold``, 0.01 nats).

    Parameters
    ----------
    k : int or "all", default=10
    q : {"naive", "pairwise"}, default="pairwise"
    restart_threshold : float, default=0.01
    discretizer, n_bins, base, device, dtype
        As in :class:`tensorprob.MIM`.

    Attributes
    ----------
    selected_ : ndarray of int
    scores_ : ndarray
        The bound at each pick: lower bounds of ``I(X_S; Y)`` (nats unless ``base=2``) of the
        chain in force when the feature was added.
    n_restarts_ : int
    n_features_in_, feature_names_in_
    """

    def __init__(self, k=10, *, q="pairwise", restart_threshold=0.01, discretizer="uniform", n_bins=5, base="e",
                 device="auto", dtype=None):
        self.k = k
        self.q = q
        self.restart_threshold = restart_threshold
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.base = base
        self.device = device
        self.dtype = dtype

    @property
    def distribution(self) -> str:
        return "gmd"

    @property
    def framework(self) -> str:
        return "vi"

    @property
    def k1(self) -> int:
        return 0 if self.q == "naive" else 1

    @property
    def k2(self) -> int:
        return self.k1

    def _validate_extra(self) -> None:
        if self.q not in ("naive", "pairwise"):
            raise ValueError(f"The 'q' parameter of VMI must be 'naive' or 'pairwise'; got {self.q!r}")
        super()._validate_extra()
