"""Docstring fragments shared by the selectors, for :func:`tensorprob._docstrings.fill_doc`.

A selector's docstring names them on lines of their own (``%(coded_params)s``), indented as
the entry would be; ``@fill_doc(**SELECTOR_FRAGMENTS)`` fills them, together with the
package-wide fragments (``device``, ``dtype``, ``random_state``, ...).
"""
from __future__ import annotations

from .._docstrings import FRAGMENTS
from ..encoding._encode import ENCODING_FRAGMENTS

__all__ = ["SELECTOR_FRAGMENTS"]

_BASE = """\
base : {"e", 2}, default="e"
    Logarithm base of the information quantities and of the reported scores: nats
    (``"e"``) or bits (``2``)."""

_N_FEATURES_IN = """\
n_features_in_ : int
    Number of features seen by ``fit``.
feature_names_in_ : ndarray of str
    Names of the features seen by ``fit``; only when X has string column names."""

_DISTRIBUTED = """\
distributed : bool, default=False
    Data-parallel selection on ``torch.distributed``: under an initialized default process
    group (e.g. started by ``torchrun``; Gloo for CPU tensors, NCCL for CUDA) every rank
    calls ``fit`` with its own rows (zero rows allowed), the same other arguments and the
    same number of features, and every rank gets the selection of the single-process fit on
    all the rows concatenated. The encoding is learned from all ranks, class labels are
    coded against the union of every rank's classes, and every table (or sum over samples)
    is summed over the ranks as it is computed, so each rank takes the same picks. Errors
    on one rank (a different number of features, a bad label) raise on every rank, naming
    it. See the user guide's "Scaling out" section."""

SELECTOR_FRAGMENTS: dict[str, str] = {
    "distributed": _DISTRIBUTED,
    "k": """\
k : int or "all", default=10
    Number of features to select; ``"all"`` ranks every feature.""",
    "discretizer": ENCODING_FRAGMENTS["discretizer"],
    # n_bins is followed by missing_values in every coded selector's signature
    "n_bins": "\n".join([ENCODING_FRAGMENTS["n_bins"], ENCODING_FRAGMENTS["missing_values"]]),
    "base": _BASE,
    # the trailing parameters of every selector on integer codes
    "coded_params": "\n".join([ENCODING_FRAGMENTS["discretizer"], ENCODING_FRAGMENTS["n_bins"],
                               ENCODING_FRAGMENTS["missing_values"], _BASE,
                               FRAGMENTS["device"], FRAGMENTS["dtype"], _DISTRIBUTED]),
    # the trailing parameters of the selectors that draw random numbers
    "device_dtype_random_state": "\n".join([FRAGMENTS["device"], FRAGMENTS["dtype"], FRAGMENTS["random_state"]]),
    "picks": """\
selected_ : ndarray of int
    Selected features in pick order.
scores_ : ndarray of float
    Criterion value of each pick (in the units of ``base``).""",
    # the trailing attributes of the selectors on integer codes / on real values
    "coded_attributes": """\
encoder_ : Encoder
    The fitted encoder of X (its ``transform`` gives the codes the selection saw).
classes_ : ndarray
    The class labels, sorted.
""" + _N_FEATURES_IN,
    "real_attributes": """\
classes_ : ndarray
    The class labels, sorted.
""" + _N_FEATURES_IN,
    # the data of the examples on integer codes: the class is the sum of features 1 and 4 (mod 3)
    "example_xy": """\
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.integers(0, 3, (300, 6)); y = (X[:, 1] + X[:, 4]) % 3""",
}
