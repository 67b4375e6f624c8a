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
    Integer codes (``-1`` = missing) are used as they are; other data is encoded by
    :func:`tensorprob.encode` (floats discretized into ``n_bins`` bins).""",
    "y_labels": """\
y : array-like of shape (n_samples,)
    Class labels (any hashable values; missing labels are an error).""",
    "progress": """\
progress : bool, default=True
    Show a progress bar (needs the optional ``tqdm``; see :func:`tensorprob.set_config`).""",
}

_SLOT = re.compile(r"^(?P<indent>[ \t]*)%\((?P<name>\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc(obj: T | None = None, /, **extra: str) -> T | Callable[[T], T]:
    """Fill ``%(name)s`` lines of a docstring with shared fragments (decorator).

    Parameters
    ----------
    obj : function or class, optional
        The object whose ``__doc__`` is filled (``@fill_doc`` without parentheses).
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

    def fill(target: T) -> T:
        doc = target.__doc__
        if doc:
            def replace(m: re.Match) -> str:
                return textwrap.indent(fragments[m["name"]], m["indent"])
            target.__doc__ = _SLOT.sub(replace, doc)
        return target

    return fill if obj is None else fill(obj)
