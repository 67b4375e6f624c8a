"""tensorprob: low-rank CPD models of joint PMFs and information-theoretic feature selection.

The public API is this module's namespace; modules with a leading underscore are private.
Importing tensorprob never probes CUDA and never imports triton.
"""
from . import datasets, evaluation, selection
from ._config import config_context, get_config, set_config
from .cpd import CPD, CPDModel, RankSelection, fit_cpd, fit_cpds, select_rank
from .encoding import Discretizer, Encoded, Encoder, discretize, encode, encode_labels
from .evaluation import stability_selection
from .information import Estimate
from .selection import *  # noqa: F403  (the selector classes; tensorprob.selection.__all__ lists them once)
from .selection import available_methods, select_features

__version__ = "0.2.0"

__all__ = [
    "CPD",
    "CPDModel",
    "Estimate",
    *(name for name in selection.__all__ if name[0].isupper() and not name.endswith("Selector")),
    "available_methods",
    "evaluation",
    "select_features",
    "selection",
    "datasets",
    "fit_cpd",
    "fit_cpds",
    "RankSelection",
    "select_rank",
    "Discretizer",
    "Encoded",
    "Encoder",
    "config_context",
    "discretize",
    "encode",
    "encode_labels",
    "get_config",
    "set_config",
    "stability_selection",
]
