"""Feature selectors: scikit-learn estimators on one base class, most run by one greedy driver.

Every selector sets a ``method_name`` and is thereby registered for
:func:`select_features`; :func:`available_methods` lists the names and :func:`get_selector`
returns the class of a name.
"""
from ._api import available_methods, get_selector, register, select_features
from ._base import CodedSelector, GreedySelector, RealSelector
from ._classic import CIFE, CMIM, DISR, ICAP, JMI, JMIM, MIFS, MIM, MRI, MRMR, RMRMR
from ._gmi import GMI, PairwiseDp
from ._graph import SPEC, TraceRatio
from ._gsm import GSMCPD
from ._hofs import HOFS
from ._pda import PDA, VMI
from ._spectral import SPECCMI

__all__ = [
           "CIFE",
           "CMIM",
           "DISR",
           "GMI",
           "GSMCPD",
           "HOFS",
           "ICAP",
           "JMI",
           "JMIM",
           "MIFS",
           "MIM",
           "MRI",
           "MRMR",
           "PDA",
           "PairwiseDp",
           "RMRMR",
           "SPEC",
           "SPECCMI",
           "TraceRatio",
           "VMI",
           "CodedSelector",
           "GreedySelector",
           "RealSelector",
           "available_methods",
           "get_selector",
           "register",
           "select_features",
]
