"""tensorprob: low-rank CPD models of joint PMFs and information-theoretic feature selection.

The public API is this module's namespace; modules with a leading underscore are private.
Importing tensorprob never probes CUDA and never imports triton.
"""
from ._config import config_context, get_config, set_config
from .encoding import Discretizer, Encoded, Encoder, discretize, encode, encode_labels
from .selection._gmi import GMI
from .selection._hofs import HOFS

__version__ = "0.1.0"

__all__ = [
    "Discretizer",
    "Encoded",
    "Encoder",
    "GMI",
    "HOFS",
    "config_context",
    "discretize",
    "encode",
    "encode_labels",
    "get_config",
    "set_config",
]
