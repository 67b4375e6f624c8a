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
:class:`LinearCriterion`. The others have a criterion class each.

The first pick of every method is argmax I(X_m;C). Each update adds one (candidate, x_j,
class) table for all candidates (RMRMR also the (candidate, x_r, x_j) tables of the new
ordered pairs); sums, minima and counts are kept incrementally.
"""
from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import Any, ClassVar

import torch
from sklearn.utils._param_validation import Interval

from ..counting import SelectionData, joint_table, table_information
from ._base import GreedySelector
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


class JMICriterion(_SumsCriterion):
    """``J = sum_j I(X_m X_j; C)``."""

    name = "jmi"

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.sum_jmi = self._new_sum()

    def update(self, j: int) -> None:
        self.sum_jmi += self.data.pair_information(j).mi_xa_b
        super().update(j)

    def scores(self) -> torch.Tensor:
        return self.sum_jmi


class CMIMCriterion(_SumsCriterion):
    """``J = min_j I(X_m; C | X_j)``."""

    name = "cmim"

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.min_cmi_y = self._new_min()

    def update(self, j: int) -> None:
        self.min_cmi_y = torch.minimum(self.min_cmi_y, self.data.pair_information(j).cmi_x_b_given_a)
        super().update(j)

    def scores(self) -> torch.Tensor:
        return self.min_cmi_y


class JMIMCriterion(_SumsCriterion):
    """``J = min_j I(X_m X_j; C)``."""

    name = "jmim"

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.min_jmi = self._new_min()

    def update(self, j: int) -> None:
        self.min_jmi = torch.minimum(self.min_jmi, self.data.pair_information(j).mi_xa_b)
        super().update(j)

    def scores(self) -> torch.Tensor:
        return self.min_jmi


class DISRCriterion(_SumsCriterion):
    """``J = sum_j I(X_m X_j; C) / H(X_m X_j C)`` (a ratio: the same in any base)."""

    name = "disr"

    def start(self, data: SelectionData) -> None:
        super().start(data)
        self.sum_disr = self._new_sum()

    def update(self, j: int) -> None:
        q = self.data.pair_information(j)
        self.sum_disr += q.mi_xa_b / q.h_xab.clamp_min(torch.finfo(q.h_xab.dtype).tiny)
        super().update(j)

    def scores(self) -> torch.Tensor:
        return self.sum_disr


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
            t = table_information(T, d.log_base)
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
def _doc(acronym: str, title: str, formula: str, reference: str, picks: str, extra_params: str = "") -> str:
    """The shared docstring of a classic selector (the family differs only in these fields)."""
    return f"""{acronym} ({title}) feature selection.

    Greedy forward selection by ``J = {formula}``; the first pick is ``argmax I(X_m;C)``.
    Plug-in estimates from counts (see :mod:`tensorprob.selection._classic`).

    Parameters
    ----------
    k : int or "all", default=10
        Number of features to select.{extra_params}
    discretizer : {{"uniform", "quantile", "mdl"}}, object with ``fit_transform`` or None, default="uniform"
        How continuous columns become codes (integer columns with at most 64 values,
        strings and bools are codes already); None makes continuous input an error.
    n_bins : int, default=5
        Bins of the built-in discretizers.
    base : {{"e", 2}}, default="e"
        Logarithm base of the reported scores (nats or bits).
    device : {{"auto", "cpu", "cuda"}} or torch.device, default="auto"
    dtype : str or torch.dtype, default=None
        Float dtype of the computations (None: float64 on CPU, float32 on CUDA).

    Attributes
    ----------
    selected_ : ndarray of int
        Selected features in pick order.
    scores_ : ndarray of float
        Criterion value of each pick.
    encoder_ : Encoder
        The fitted encoder of X.
    classes_ : ndarray
        The class labels.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has column names.

    See Also
    --------
    select_features : the same by method name.
    JMI, CMIM, MRMR : other criteria of the family.

    Notes
    -----
    Entries with a missing value are dropped pairwise. Ties break to the lowest feature
    index. Constant features score 0.

    References
    ----------
    .. [1] {_BROWN}
    .. [2] {reference}

    Examples
    --------
    >>> import numpy as np
    >>> from tensorprob import {acronym}
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 3, (300, 6)); y = (X[:, 1] + X[:, 4]) % 3
    >>> {acronym}(k=2).fit(X, y).selected_.tolist()
    {picks}
    """


class _ClassicSelector(GreedySelector):
    """The parameters every classic selector shares (MIFS adds ``beta``)."""

    def __init__(self, k: int | str = 10, *, discretizer: Any = "uniform", n_bins: int = 5, base: Any = "e",
                 device: Any = "auto", dtype: Any = None) -> None:
        self.k = k
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.base = base
        self.device = device
        self.dtype = dtype


class MIM(_ClassicSelector):
    __doc__ = _doc("MIM", "mutual information maximisation", "I(X_m;C)",
                   "Lewis, D. D. (1992). Feature selection and feature extraction for text categorization. "
                   "Proceedings of the Workshop on Speech and Natural Language, 212-217.", "[4, 5]")
    method_name = "mim"

    def _criterion(self) -> Criterion:
        return mim_criterion()


class MIFS(GreedySelector):
    __doc__ = _doc("MIFS", "mutual information feature selection", "I(X_m;C) - beta sum_j I(X_m;X_j)",
                   "Battiti, R. (1994). Using mutual information for selecting features in supervised neural "
                   "net learning. IEEE Transactions on Neural Networks, 5(4), 537-550.", "[4, 5]",
                   extra_params="\n    beta : float, default=1.0\n        Redundancy weight (beta = 1 is "
                                "FID^{1,0} of Sun et al. 2020).")
    method_name = "mifs"
    _parameter_constraints: ClassVar[dict] = {**GreedySelector._parameter_constraints,
                                              "beta": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, k: int | str = 10, *, beta: float = 1.0, discretizer: Any = "uniform", n_bins: int = 5,
                 base: Any = "e", device: Any = "auto", dtype: Any = None) -> None:
        self.k = k
        self.beta = beta
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.base = base
        self.device = device
        self.dtype = dtype

    def _criterion(self) -> Criterion:
        return mifs_criterion(float(self.beta))


class MRMR(_ClassicSelector):
    __doc__ = _doc("MRMR", "minimum redundancy maximum relevance", "I(X_m;C) - (1/|S|) sum_j I(X_m;X_j)",
                   "Peng, H., Long, F. and Ding, C. (2005). Feature selection based on mutual information: "
                   "criteria of max-dependency, max-relevance, and min-redundancy. IEEE TPAMI, 27(8), 1226-1238.",
                   "[4, 5]")
    method_name = "mrmr"

    def _criterion(self) -> Criterion:
        return mrmr_criterion()


class CIFE(_ClassicSelector):
    __doc__ = _doc("CIFE", "conditional infomax feature extraction",
                   "I(X_m;C) - sum_j I(X_m;X_j) + sum_j I(X_m;X_j|C)",
                   "Lin, D. and Tang, X. (2006). Conditional infomax learning: an integrated framework for "
                   "feature extraction and fusion. ECCV 2006, 68-82.", "[4, 1]")
    method_name = "cife"

    def _criterion(self) -> Criterion:
        return cife_criterion()


class JMI(_ClassicSelector):
    __doc__ = _doc("JMI", "joint mutual information", "sum_j I(X_m X_j; C)",
                   "Yang, H. H. and Moody, J. (1999). Data visualization and feature selection: new algorithms "
                   "for nongaussian data. NIPS 12, 687-693.", "[4, 1]")
    method_name = "jmi"

    def _criterion(self) -> Criterion:
        return JMICriterion()


class CMIM(_ClassicSelector):
    __doc__ = _doc("CMIM", "conditional mutual information maximisation", "min_j I(X_m; C | X_j)",
                   "Fleuret, F. (2004). Fast binary feature selection with conditional mutual information. "
                   "Journal of Machine Learning Research, 5, 1531-1555.", "[4, 1]")
    method_name = "cmim"

    def _criterion(self) -> Criterion:
        return CMIMCriterion()


class JMIM(_ClassicSelector):
    __doc__ = _doc("JMIM", "joint mutual information maximisation", "min_j I(X_m X_j; C)",
                   "Bennasar, M., Hicks, Y. and Setchi, R. (2015). Feature selection using joint mutual "
                   "information maximisation. Expert Systems with Applications, 42(22), 8520-8532.", "[4, 1]")
    method_name = "jmim"

    def _criterion(self) -> Criterion:
        return JMIMCriterion()


class DISR(_ClassicSelector):
    __doc__ = _doc("DISR", "double input symmetrical relevance", "sum_j I(X_m X_j; C) / H(X_m X_j C)",
                   "Meyer, P. E., Schretter, C. and Bontempi, G. (2008). Information-theoretic feature selection "
                   "in microarray data using variable complementarity. IEEE J. Sel. Topics Signal Process., 2(3), "
                   "261-274.", "[4, 1]")
    method_name = "disr"

    def _criterion(self) -> Criterion:
        return DISRCriterion()


class ICAP(_ClassicSelector):
    __doc__ = _doc("ICAP", "interaction capping", "I(X_m;C) - sum_j max(0, I(X_m;X_j) - I(X_m;X_j|C))",
                   "Jakulin, A. (2005). Machine learning based on attribute interactions. PhD thesis, University "
                   "of Ljubljana.", "[4, 5]")
    method_name = "icap"

    def _criterion(self) -> Criterion:
        return ICAPCriterion()


class MRI(_ClassicSelector):
    __doc__ = _doc("MRI", "maximal relevance and independence",
                   "I(X_m;C) - 2/(|S|+1) sum_j [I(X_m;X_j) - I(X_m;X_j|C)]",
                   "Wang, J., Wei, J.-M., Yang, Z. and Wang, S.-Q. (2017). Feature selection by maximizing "
                   "independent classification information. IEEE TKDE, 29(4), 828-841.", "[4, 1]")
    method_name = "mri"

    def _criterion(self) -> Criterion:
        return mri_criterion()


class RMRMR(_ClassicSelector):
    __doc__ = _doc("RMRMR", "relaxed minimum redundancy maximum relevance",
                   "I(X_m;C) - (1/|S|) sum_j [I(X_m;X_j) - I(X_m;X_j|C)] - 1/(|S|(|S|-1)) sum_{s != r} "
                   "I(X_m;X_r|X_s)`` (step 2: ``I(X_m;C|X_s1)",
                   "Vinh, N. X., Zhou, S., Chan, J. and Bailey, J. (2016). Can high-order dependencies improve "
                   "mutual information based feature selection? Pattern Recognition, 53, 46-58.", "[4, 1]")
    method_name = "rmrmr"

    def _criterion(self) -> Criterion:
        return RMRMRCriterion()
