"""Feature selectors: scikit-learn estimators sharing one base class."""
from ._base import BaseSelector
from ._gsm import GSMCPD

__all__ = ["BaseSelector", "GSMCPD"]
