"""Classic criteria of the Brown et al. (2012) framework, and their estimators.

With S the selected set, X_m a candidate and C the class (plug-in estimates):

=======  =====================================================================
MIM      I(X_m;C)
MIFS     I(X_m;C) - beta sum_j I(X_m;X_j)
MRMR     I(X_m;C) - (1/|S|) sum_j I(X_m;X_j)
CIFE     I(X_m;C) - sum_j I(X_m;X_j) + sum_j I(X_m;X_j|C)
JMI      sum_j I(X_m X_j; C)
CMIM     min_j I(X_m; C | X_j)
JMIM     min_j I(X_m X_j; C)
DISR     sum_j I(X_m X_j; C) / H(X_m X_j C)
ICAP     I(X_m;C) - sum_j max(0, I(X_m;X_j) - I(X_m;X_j|C))
MRI      I(X_m;C) - 2/(|S|+1) sum_j [I(X_m;X_j) - I(X_m;X_j|C)]
RMRMR    step 2: I(X_m;C|X_s1); then I(X_m;C) - (1/|S|) sum_j [I(X_m;X_j) - I(X_m;X_j|C)]
         - 1/(|S|(|S|-1)) sum_{s != r in S} I(X_m; X_r | X_s)   (Vinh et al. 2016 = GMD^{2,1})
=======  =====================================================================

MIM, MIFS, MRMR, CIFE and MRI are linear in the sums: Brown et al.'s
``J = I(X_m;C) - beta sum_j I(X_m;X_j) + gamma sum_j I(X_m;X_j|C)`` with (beta, gamma) =
(0, 0), (beta, 0), (1/|S|, 0), (1, 1) and (2/(|S|+1), 2/(|S|+1)); they share
:class:`LinearCriterion`. JMI, CMIM, JMIM and DISR keep a sum or minimum of one pairwise
term (:class:`_PairwiseCriterion`); ICAP and RMRMR have a criterion class each.

The first pick of every method is argmax I(X_m;C). Each update adds one (candidate, x_j,
class) table for all candidates (RMRMR also the (candidate, x_r, x_j) tables of the new
ordered pairs); sums, minima and counts are kept incrementally.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from numbers import Real
from typing import Any, ClassVar

import torch
from sklearn.utils._param_validation import Interval

from .._docstrings import fill_doc
from ..counting import SelectionData, joint_table, table_information
from ._base import GreedySelector
from ._docs import SELECTOR_FRAGMENTS
from ._greedy import Criterion

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
            q = self.data.pair_information(j)  # only the quantities read below are computed
            if self.beta is not None:
                self.sum_mi += q.mi_x_a
            if self.gamma is not None:
                self.sum_cmi += q.cmi_x_a_given_b
        super().update(j)

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


def cmim_criterion() -> _PairwiseCriterion:
    """``J = min_j I(X_m; C | X_j)``."""
    return _PairwiseCriterion("cmim", lambda q: q.cmi_x_b_given_a, minimum=True)


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
        for r in self.selected:  # the new ordered pairs (j, r) and (r, j)
            T = joint_table(d.codes, d.max_card, d.codes[:, r], d.max_card, d.codes[:, j], d.max_card,
                            dtype=d.dtype, complete=d.complete)
            t = table_information(T, d.log_base, d.n_rows)
            self.sum_pairs += t.cmi_x_a_given_b + t.cmi_x_b_given_a
        super().update(j)

    def scores(self) -> torch.Tensor:
        n = len(self.selected)
        if n == 1:
            return self.min_cmi_y  # I(X_m; C | X_s1)
        return self.data.relevance - (self.sum_mi - self.sum_cmi) / n - self.sum_pairs / (n * (n - 1))


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
    index. Constant features score 0.

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
    name, and its full docstring is built from ``_TEMPLATE``.
    """

    _extra_params: ClassVar[str] = ""

    def __init_subclass__(cls, criterion: Callable[..., Criterion] | None = None, picks: str = "",
                          **kwargs: Any) -> None:
        if criterion is not None:
            cls.method_name = cls.__name__.lower()
            cls._make_criterion = staticmethod(criterion)
            first, reference = inspect.cleandoc(cls.__doc__).split("\n\n", 1)
            summary, formula = " ".join(first.split()).split(" by ``", 1)
            formula, tail = formula.split("``", 1)
            doc = _TEMPLATE.format(summary=summary + " feature selection.", formula=formula, tail=tail.rstrip("."),
                                   extra_params=cls._extra_params, brown=_BROWN,
                                   reference=" ".join(reference.split()), name=cls.__name__, picks=picks)
            cls.__doc__ = doc
            fill_doc(cls, **SELECTOR_FRAGMENTS)
        super().__init_subclass__(**kwargs)

    def __init__(self, k: int | str = 10, *, discretizer: Any = "uniform", n_bins: int = 5,
                 missing_values: Any = None, base: Any = "e", device: Any = "auto", dtype: Any = None) -> None:
        self.k = k
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.base = base
        self.device = device
        self.dtype = dtype

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
                 missing_values: Any = None, base: Any = "e", device: Any = "auto", dtype: Any = None) -> None:
        self.k = k
        self.beta = beta
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.missing_values = missing_values
        self.base = base
        self.device = device
        self.dtype = dtype

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
    """CMIM (conditional mutual information maximisation) by ``min_j I(X_m; C | X_j)``.

    Fleuret, F. (2004). Fast binary feature selection with conditional mutual information. Journal
    of Machine Learning Research, 5, 1531-1555.
    """


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
