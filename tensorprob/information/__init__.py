"""Information estimators: plug-in, CPD (exact / Monte-Carlo), variational, ICA, MST."""
from ._cpd import Estimate

__all__ = ["Estimate"]
