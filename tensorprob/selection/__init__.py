"""Feature selectors: scikit-learn estimators sharing one base class and one greedy driver."""
from ._api import available_methods, register, select_features
from ._base import BaseSelector, GreedySelector
from ._classic import CIFE, CMIM, DISR, ICAP, JMI, JMIM, MIFS, MIM, MRI, MRMR, RMRMR
from ._gmi import GMI
from ._gsm import GSMCPD
from ._hofs import HOFS
from ._pda import PDA, VMI
from ._spectral import SPECCMI

for _name, _cls in (("mim", MIM), ("mifs", MIFS), ("mrmr", MRMR), ("cife", CIFE), ("jmi", JMI), ("cmim", CMIM),
                    ("jmim", JMIM), ("disr", DISR), ("icap", ICAP), ("mri", MRI), ("rmrmr", RMRMR),
                    ("spec_cmi", SPECCMI), ("gsm-cpd", GSMCPD),
                    ("pda", PDA), ("vmi", VMI), ("hofs", HOFS), ("gmi", GMI)):
    register(_name, _cls)

__all__ = ["BaseSelector", "CIFE", "CMIM", "DISR", "GMI", "GSMCPD", "GreedySelector", "HOFS", "ICAP", "JMI", "JMIM",
           "MIFS", "MIM",
           "MRI", "MRMR", "PDA", "RMRMR", "SPECCMI", "VMI", "available_methods", "register", "select_features"]
