"""Shared numpydoc fragments: a parameter that many public functions take is described once.

A docstring names a fragment on a line of its own, ``%(name)s``, indented as the parameter
entry would be; :func:`fill_doc` replaces that line by the fragment, re-indented. The final
``__doc__`` is plain numpydoc, so ``help()``, Sphinx and numpydoc's validation see full text.

>>> @fill_doc
... def f(device="auto"):
...     '''Do it.
...
...     Parameters
...     ----------
...     %(device)s
...     '''
>>> print(f.__doc__.splitlines()[4].strip())
device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
"""
from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable
from typing import TypeVar

__all__ = ["FRAGMENTS", "fill_doc"]

T = TypeVar("T")

FRAGMENTS: dict[str, str] = {
    "device": """\
device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
    Where the computation runs. ``"auto"`` is the configured default (see
    :func:`tensorprob.set_config`): CUDA when available, else the CPU.""",
    "dtype": """\
dtype : {"float32", "float64"}, torch.dtype or None, default=None
    Floating-point type of the computation. ``None`` is the configured default: float64 on
    the CPU, float32 on CUDA. Counts and plug-in information are accumulated in float64
    either way.""",
    "random_state": """\
random_state : int, numpy.random.Generator, torch.Generator or None, default=None
    Seed or generator of every random choice; ``None`` draws fresh entropy (not reproducible).""",
    "X_raw": """\
X : array-like, tensor or DataFrame of shape (n_samples, n_features)
    Raw data of any dtype, encoded by :func:`tensorprob.encode` (categories by value, a raw
    ``-1`` included; continuous columns discretized into ``n_bins`` bins). An
    :class:`~tensorprob.Encoded` is used as its codes (``-1`` = missing).""",
    "X_cpd": """\
X : array-like, tensor or DataFrame of shape (n_samples, n_features)
    Raw data of any dtype, encoded by :func:`tensorprob.encode` (categories by value, a raw
    ``-1`` included; continuous columns discretized into ``n_bins`` bins), except an integer
    array or tensor without a negative value, which the CPD fits take as codes (each value its
    own code, ``max + 1`` values per column; pass it through :func:`tensorprob.encode` to
    have its distinct values as the categories). An :class:`~tensorprob.Encoded` is used as its
    codes (``-1`` = missing).""",
    "X_stream": """\
X : array-like, tensor, DataFrame, RowChunks, callable or path
    Raw data of any dtype, encoded by :func:`tensorprob.encode` (categories by value, a raw
    ``-1`` included; continuous columns discretized into ``n_bins`` bins), except an integer
    array or tensor without a negative value, which the CPD fits take as codes (each value its
    own code, ``max + 1`` values per column). An :class:`~tensorprob.Encoded` is used as its
    codes (``-1`` = missing). A ``scipy.sparse`` matrix or array is fitted from its stored
    entries (implicit zeros are the value 0, a stored NaN is missing; the same encoding and
    model as its dense copy, on the CPU; see the user guide, "Sparse data"). Data larger than
    memory: a :class:`tensorprob.datasets.RowChunks`, a callable returning a fresh iterator of
    chunks, or the path of a Parquet file or directory, read in two passes (labels and weights
    then come with the chunks); see the user guide, "Data larger than memory". Chunks that are
    sparse matrices are coded and stacked as one sparse X.""",
    "y_labels": """\
y : array-like of shape (n_samples,)
    Class labels (any hashable values; missing labels are an error).""",
    "progress": """\
progress : bool, default=True
    Show a progress bar (needs the optional ``tqdm``; see :func:`tensorprob.set_config`).""",
    # -- CPD fitting (fit_cpd, fit_cpds, CPD, select_rank) --------------------------------------
    "cpd_y": """\
y : array-like of shape (n_samples,), optional
    Class labels, modelled as one more variable (the last), as in GSM-CPD.""",
    "n_restarts": """\
n_restarts : int, default=4
    Starts per model (run together in the batch); the one with the best final training
    log-likelihood is kept. EM finds a local optimum of the likelihood and one start often
    ends in a poor one; four batched starts cost about four single fits and, on MNIST-5k,
    COIL-20 and chess, end above pomegranate's best single fit (docs/benchmarks.md).
    ``n_restarts=1`` is the fastest fit.""",
    "n_restarts_rank": """\
n_restarts : int, default=1
    Starts per (rank, fold) model, run together in the batch; the one with the best final
    training log-likelihood is kept. One start by default: the search fits ranks x folds
    models already, and held-out scores compare ranks fitted the same way.""",
    "n_iter_max": """\
n_iter_max : int, default=500
    Largest number of expectation-maximization (EM) iterations (M-steps) per model.""",
    "tol": """\
tol : float, default=1e-6
    EM stops when the relative change of the mean training log-likelihood falls to ``tol``.""",
    "alpha": """\
alpha : float, default=0.0
    Dirichlet smoothing pseudo-count of the factor updates (0 = maximum likelihood). Positive
    values keep every value at a positive probability, which held-out scoring needs when a
    value is rare.""",
    "init": """\
init : {"kmeans++", "random"}, default="kmeans++"
    k-means++ seeding on the one-hot rows (Hamming distance) followed by one M-step, or
    factor columns uniform on the simplex. k-means++ usually starts closer to a good
    optimum; neither reaches the best optimum every time: use ``n_restarts`` (batched, cheap).""",
    "cpd_random_state": """\
random_state : int, numpy.random.Generator, torch.Generator or None, default=None
    Seed of the starts; restart ``j`` of every model uses the same stream, so a model's fit
    does not depend on which other models share the batch. ``None`` draws fresh entropy.""",
    "cardinalities": """\
cardinalities : sequence of int, optional
    Alphabet size of each column; giving it declares an integer ``X`` to be codes (``-1`` =
    missing). Without it a nonnegative integer ``X`` is its own codes (``max + 1`` values per
    column) and any other ``X`` is encoded.""",
    "cpd_missing_values": """\
missing_values : scalar, sequence or None, default=None
    Further values of raw ``X`` that mark a missing entry (see :func:`tensorprob.encode`).""",
    "discretizer": """\
discretizer : {"uniform", "quantile", "mdl"}, object with ``fit_transform`` or None, default="uniform"
    How :func:`tensorprob.encode` turns continuous columns of non-code input into codes (a
    :class:`tensorprob.encoding.Discretizer` strategy or a transformer such as scikit-learn's
    ``KBinsDiscretizer``).""",
    "n_bins": """\
n_bins : int, default=5
    Number of bins of each discretized float column of non-code input.""",
    "cpd_callback": """\
callback : callable, optional
    Called as ``callback(iteration, mean_logliks)`` after every EM iteration, with the
    ndarray of the mean training log-likelihood of every (model, restart) of the batch.""",
    "distributed": """\
distributed : bool, default=False
    Data-parallel fit on ``torch.distributed``: needs an initialized default process group
    (``torch.distributed.init_process_group``, e.g. under ``torchrun``; Gloo for CPU tensors,
    NCCL for CUDA), every rank calls with its own rows (zero rows allowed) and the same other
    arguments, and every rank gets the result of the single-process call on all the rows
    concatenated in rank order. Encoding (categories, cardinalities, bin edges, labels),
    weight rescaling and the EM statistics are combined across ranks; inputs whose number of
    columns or column types differ raise a ``ValueError`` naming the rank on every rank. Pass
    ``timeout=`` to ``init_process_group`` so that a rank that dies cannot leave the others
    waiting. See the user guide's "Scaling out" section.""",
    "cpd_references": """\
References
----------
.. [1] A. Yeredor and M. Haardt, "Maximum likelihood estimation of a low-rank probability
   mass tensor from partial observations", IEEE Signal Processing Letters, 2019.
.. [2] M. Amiridi, N. Kargas and N. D. Sidiropoulos, "Information-theoretic feature selection
   via tensor decomposition and submodularity", IEEE Trans. Signal Processing, 2021.""",
}

# groups of the above that fit_cpd, fit_cpds and CPD document side by side
FRAGMENTS["cpd_em"] = "\n".join(FRAGMENTS[k] for k in ("n_restarts", "n_iter_max", "tol", "alpha"))
FRAGMENTS["cpd_encoding"] = "\n".join(FRAGMENTS[k] for k in ("cardinalities", "discretizer", "n_bins",
                                                                "cpd_missing_values"))
FRAGMENTS["cpd_fit_tail"] = "\n".join(FRAGMENTS[k] for k in ("init", "cpd_random_state", "cpd_encoding", "cpd_callback"))

_SLOT = re.compile(r"^(?P<indent>[ \t]*)%\((?P<name>\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc(obj: T | None = None, /, **extra: str) -> T | Callable[[T], T]:
    """Fill ``%(name)s`` lines of a docstring with shared fragments (decorator).

    Parameters
    ----------
    obj : function or class, optional
        The object whose ``__doc__`` is filled (``@fill_doc`` without parentheses). A class's
        own methods (static and class methods included) are filled too.
    **extra : str
        Fragments local to the caller, looked up before :data:`FRAGMENTS`.

    Returns
    -------
    object or decorator
        ``obj`` with its docstring filled, or a decorator doing so when ``obj`` is omitted.

    Raises
    ------
    KeyError
        A slot names no known fragment (a typo fails at import, never silently).
    """
    fragments = {**FRAGMENTS, **extra}

    def replace(m: re.Match) -> str:
        return textwrap.indent(fragments[m["name"]], m["indent"])

    def fill(target: T) -> T:
        members = [getattr(v, "__func__", v) for v in vars(target).values()] if isinstance(target, type) else []
        for item in [target, *(f for f in members if inspect.isfunction(f))]:
            if item.__doc__:
                item.__doc__ = _SLOT.sub(replace, item.__doc__)
        return target

    return fill if obj is None else fill(obj)
