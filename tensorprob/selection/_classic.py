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

The first pick of every method is argmax I(X_m;C). Each update adds one (candidate, x_j,
class) table for all candidates (RMRMR also the (candidate, x_r, x_j) tables of the new
ordered pairs); sums, minima and counts are kept incrementally.
"""
from __future__ import annotations

import numbers

import torch

from ..counting import joint_table, table_information
from ._base import GreedySelector
from ._greedy import Criterion, SelectionData

_METHODS = ("mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr")


class ClassicCriterion(Criterion):
    """Incremental state of every classic criterion (one class, ``method`` picks the formula)."""

    def __init__(self, method: str, beta: float = 1.0) -> None:
        if method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
        self.method, self.beta = method, beta

    def start(self, data: SelectionData) -> None:
        super().start(data)
        # the information quantities are float64 in any working dtype (see counting._tables), and
        # so are their running sums and minima: float32 sums would round near-tied picks apart
        z = torch.zeros(data.n_features, dtype=torch.float64, device=data.codes.device)
        self.sum_mi, self.sum_cmi, self.sum_jmi, self.sum_disr, self.sum_icap = (z.clone() for _ in range(5))
        self.min_cmi_y = torch.full_like(z, float("inf"))  # min_j I(X_m;C|X_j)
        self.min_jmi = torch.full_like(z, float("inf"))
        self.sum_pairs = z.clone()  # RMRMR: sum over ordered pairs s != r of I(X_m; X_r | X_s)

    def update(self, j: int) -> None:
        if self.method == "mim":  # relevance only: nothing to accumulate
            super().update(j)
            return
        q = self.data.pair_information(j)  # only the quantities this method reads are computed
        m = self.method
        if m in ("mifs", "mrmr", "cife", "icap", "mri", "rmrmr"):
            self.sum_mi += q["i_xa"]
        if m in ("cife", "mri", "rmrmr"):
            self.sum_cmi += q["i_xa_b"]
        if m == "jmi":
            self.sum_jmi += q["i_xa__b"]
        if m == "disr":
            # a ratio: the same in any base
            self.sum_disr += q["i_xa__b"] / q["h_xab"].clamp_min(torch.finfo(q["h_xab"].dtype).tiny)
        if m == "icap":
            self.sum_icap += (q["i_xa"] - q["i_xa_b"]).clamp_min(0)
        if m in ("cmim", "rmrmr"):
            self.min_cmi_y = torch.minimum(self.min_cmi_y, q["i_xb_a"])
        if m == "jmim":
            self.min_jmi = torch.minimum(self.min_jmi, q["i_xa__b"])
        if self.method == "rmrmr":
            d = self.data
            for r in self.selected:  # the new ordered pairs (j, r) and (r, j)
                T = joint_table(d.codes, d.card, d.codes[:, r], d.card, d.codes[:, j], d.card, dtype=d.dtype,
                                complete=d.complete)
                t = table_information(T, d.log_base)
                self.sum_pairs += t["i_xa_b"] + t["i_xb_a"]
        super().update(j)

    def scores(self) -> torch.Tensor:
        rel, n = self.data.relevance, len(self.selected)
        m = self.method
        if m == "mim":
            return rel
        if m == "mifs":
            return rel - self.beta * self.sum_mi
        if m == "mrmr":
            return rel - self.sum_mi / n
        if m == "cife":
            return rel - self.sum_mi + self.sum_cmi
        if m == "jmi":
            return self.sum_jmi
        if m == "cmim":
            return self.min_cmi_y
        if m == "jmim":
            return self.min_jmi
        if m == "disr":
            return self.sum_disr
        if m == "icap":
            return rel - self.sum_icap
        if m == "mri":
            return rel - 2.0 / (n + 1) * (self.sum_mi - self.sum_cmi)
        # rmrmr
        if n == 1:
            return self.min_cmi_y  # I(X_m; C | X_s1)
        return rel - (self.sum_mi - self.sum_cmi) / n - self.sum_pairs / (n * (n - 1))


def _classic(name: str, method: str, formula: str):
    doc = f"""{name} feature selection: ``J = {formula}`` (greedy; first pick argmax I(X_m;C)).

    Parameters
    ----------
    k : int or "all", default=10
        Number of features to select.
    discretizer : {{"uniform", "quantile", "mdl"}}, object or None, default="uniform"
        How continuous columns become codes (integer columns with at most 64 values,
        strings and bools are codes already); None makes continuous input an error.
    n_bins : int, default=5
    base : {{"e", 2}}, default="e"
        Logarithm base of the reported scores (nats or bits).
    device : {{"auto", "cpu", "cuda"}}, default="auto"
    dtype : optional float dtype of the computations (float64 on CPU, float32 on CUDA)

    Attributes
    ----------
    selected_ : ndarray of int
        Selected features in pick order.
    scores_ : ndarray
        Criterion value of each pick.
    n_features_in_ : int
    feature_names_in_ : ndarray of str (when X has column names)

    Notes
    -----
    Plug-in estimates from counts; entries with a missing value are dropped pairwise.
    Ties break to the lowest feature index. Constant features score 0.
    """

    class _Sel(GreedySelector):
        _method = method

        def __init__(self, k=10, *, discretizer="uniform", n_bins=5, base="e", device="auto", dtype=None):
            self.k = k
            self.discretizer = discretizer
            self.n_bins = n_bins
            self.base = base
            self.device = device
            self.dtype = dtype

        def _criterion(self):
            return ClassicCriterion(method)

    _Sel.__name__ = _Sel.__qualname__ = name
    _Sel.__doc__ = doc
    return _Sel


MIM = _classic("MIM", "mim", "I(X_m;C)")
MRMR = _classic("MRMR", "mrmr", "I(X_m;C) - (1/|S|) sum_j I(X_m;X_j)")
CIFE = _classic("CIFE", "cife", "I(X_m;C) - sum_j I(X_m;X_j) + sum_j I(X_m;X_j|C)")
JMI = _classic("JMI", "jmi", "sum_j I(X_m X_j; C)")
CMIM = _classic("CMIM", "cmim", "min_j I(X_m; C | X_j)")
JMIM = _classic("JMIM", "jmim", "min_j I(X_m X_j; C)")
DISR = _classic("DISR", "disr", "sum_j I(X_m X_j; C) / H(X_m X_j C)")
ICAP = _classic("ICAP", "icap", "I(X_m;C) - sum_j max(0, I(X_m;X_j) - I(X_m;X_j|C))")
MRI = _classic("MRI", "mri", "I(X_m;C) - 2/(|S|+1) sum_j [I(X_m;X_j) - I(X_m;X_j|C)]")
RMRMR = _classic("RMRMR", "rmrmr", "I(X_m;C) - (1/|S|) sum_j [I(X_m;X_j) - I(X_m;X_j|C)] - "
                 "1/(|S|(|S|-1)) sum_{s != r} I(X_m;X_r|X_s)  (step 2: I(X_m;C|X_s1))")


class MIFS(GreedySelector):
    """MIFS feature selection (Battiti 1994): ``J = I(X_m;C) - beta sum_j I(X_m;X_j)``.

    Parameters
    ----------
    k : int or "all", default=10
    beta : float, default=1.0
        Redundancy weight (beta = 1 is FID^{1,0} of paper 004).
    discretizer, n_bins, base, device, dtype
        As in :class:`MIM`.

    Attributes
    ----------
    selected_, scores_, n_features_in_, feature_names_in_
        As in :class:`MIM`.
    """

    _method = "mifs"

    def __init__(self, k=10, *, beta=1.0, discretizer="uniform", n_bins=5, base="e", device="auto", dtype=None):
        self.k = k
        self.beta = beta
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.base = base
        self.device = device
        self.dtype = dtype

    def _validate_extra(self) -> None:
        if isinstance(self.beta, bool) or not isinstance(self.beta, numbers.Real) or not self.beta >= 0:
            raise ValueError(f"The 'beta' parameter of MIFS must be a real number >= 0; got {self.beta!r}")

    def _criterion(self):
        return ClassicCriterion("mifs", beta=float(self.beta))
