"""Class labels: their codes ``0..C-1``, the checks of a classification target, and the classes of all ranks."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ._columns import _is_missing, _preview, _unique_inverse

#: Docstring fragment of the label functions.
_LABEL_TAIL = {"label_tail": """\
name : str, default="y"
    Name used in error messages.

Returns
-------
codes : ndarray of shape (n_samples,), int64
    The code ``0..C-1`` of every label.
classes : ndarray of shape (C,)
    The label of each code, sorted."""}


@fill_doc(**_LABEL_TAIL)
def encode_labels(y: Any, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Encode class labels as codes ``0..C-1``.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, 1)
        Labels of any type (NumPy, torch, pandas); no missing value.
    %(label_tail)s

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, is empty or holds missing values.

    Examples
    --------
    >>> from tensorprob import encode_labels
    >>> codes, classes = encode_labels(["b", "a", "b"])
    >>> codes.tolist(), classes.tolist()
    ([1, 0, 1], ['a', 'b'])
    """
    if hasattr(y, "detach"):
        y = y.detach().cpu().numpy()
    if hasattr(y, "iloc"):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D (n_samples,), got shape {y.shape}")
    if y.size == 0:
        raise ValueError(f"{name} is empty")
    miss = _is_missing(y) if y.dtype.kind in "fO" else np.zeros(y.shape, bool)
    if miss.any():
        raise ValueError(f"{name} contains {int(miss.sum())} missing label(s) (NaN/None), first at position "
                         f"{int(np.flatnonzero(miss)[0])}")
    try:  # integers: by counting when their range is small (no sort); the same classes and codes
        classes, codes = _unique_inverse(y) if y.dtype.kind in "iu" else np.unique(y, return_inverse=True)
    except TypeError:
        classes, codes = np.unique(y.astype(str), return_inverse=True)
    return codes.ravel().astype(np.int64), classes


@fill_doc(**_LABEL_TAIL)
def check_classification_target(y: Any, name: str = "y") -> tuple[np.ndarray, np.ndarray]:
    """Class codes and sorted classes of the labels ``y`` of a classification task.

    The checks of scikit-learn's ``type_of_target``, with short messages: missing (NaN/None)
    or infinite labels are errors, and so is a continuous target: a float ``y`` with a
    non-integral value (scikit-learn's ``"continuous"`` target type).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels of any type.
    %(label_tail)s

    Raises
    ------
    ValueError
        If ``y`` is not 1-D, is empty, holds missing or infinite labels, or is continuous.
    """
    arr = y.detach().cpu().numpy() if hasattr(y, "detach") else (y.to_numpy() if hasattr(y, "iloc") else y)
    arr = np.asarray(arr)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    values = arr
    if arr.dtype.kind == "O":  # numbers held in an object array (e.g. pandas nullable floats)
        try:
            values = arr.astype(np.float64)
        except (TypeError, ValueError):
            values = None
    if values is not None and values.ndim == 1 and values.dtype.kind == "f":
        inf = np.isinf(values)
        if inf.any():
            raise ValueError(f"{name} contains {int(inf.sum())} infinite label(s), e.g. at position "
                             f"{int(np.flatnonzero(inf)[0])}; class labels must be finite")
        finite = values[np.isfinite(values)]
        frac = finite != np.round(finite)
        if frac.any():
            uniq = np.unique(finite)
            raise ValueError(
                f"{name} is continuous ({uniq.size} distinct values, non-integral ones such as "
                f"{_preview(np.unique(finite[frac]).tolist(), 3)}); class labels are needed: discretize or "
                "encode the target first (for example with tensorprob.discretize)")
    return encode_labels(arr, name)  # arr: y as a NumPy array already


def union_classes(parts: list[np.ndarray]) -> np.ndarray:
    """The sorted union of several arrays of class labels (by their text when the types do not compare)."""
    parts = [p for p in parts if p.size]
    if not parts:
        return np.zeros(0)
    try:
        return np.unique(np.concatenate(parts))
    except TypeError:
        return np.unique(np.concatenate([p.astype(str) for p in parts]))


def global_labels(y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Codes of this rank's labels against the sorted classes of all ranks (the classes every rank sees).

    Every rank checks its labels (an error on one raises on all, naming it) and the classes
    are all-gathered once; a rank may hold no labels.
    """
    from .. import _distributed

    def local() -> tuple[np.ndarray, np.ndarray]:
        if len(y) == 0:
            arr = np.asarray(y.detach().cpu().numpy() if hasattr(y, "detach") else y)
            return np.zeros(0, dtype=np.int64), arr.reshape(-1)
        return check_classification_target(y)

    codes, classes = _distributed.agree(local)
    union = union_classes(_distributed.all_gather(classes))
    if union.dtype.kind == "U" and classes.dtype.kind != "U":
        classes = classes.astype(str)
    return np.searchsorted(union, classes).astype(np.int64)[codes], union
