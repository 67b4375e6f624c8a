"""Canonical polyadic decomposition (CPD, latent class) models of joint PMFs, fitted by batched KL-EM.

- :func:`fit_cpd` fits one :class:`CPDModel`; :func:`fit_cpds` fits several (ranks, restarts,
  weight sets) in one batched expectation-maximization (EM) run and returns a list.
- :class:`CPD` is the scikit-learn estimator around ``fit_cpd``.
- :func:`select_rank` chooses the rank by the CPD classifier's cross-validated error.
"""
from ._estimator import CPD
from ._fit import fit_cpd, fit_cpds
from ._model import CPDModel
from ._rank import RankSelection, select_rank

__all__ = ["CPD", "CPDModel", "RankSelection", "fit_cpd", "fit_cpds", "select_rank"]
