"""The :class:`Dataset` container, the table of set names and planted shapes, and the metadata every loader fills.

Shared by the loaders of shipped data (:mod:`._shipped`) and the planted generators
(:mod:`._synthetic`), which both build their :class:`Dataset` here.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class Dataset(NamedTuple):
    """A data set as ``(X, y, metadata)``.

    The fields are the constructor's parameters.

    Parameters
    ----------
    X : ndarray or DataFrame of shape (n_samples, n_features)
        Features: a float64 array, or a DataFrame when some column is categorical (or
        ``as_frame=True``); the integer codes of a ``.mat`` file of discretized values.
    y : ndarray of shape (n_samples,)
        Class labels (int64 for numeric sources, strings for KEEL).
    metadata : dict
        ``name``, ``source``, ``description``, ``n_samples``, ``n_features``, ``n_classes``,
        ``class_names``, ``feature_names``, ``categorical`` (per-feature bool),
        ``paper_names`` (names the papers use), and loader details.
    """

    X: Any
    y: np.ndarray
    metadata: dict


# names used by the papers (and common spellings) -> our name
_ALIASES = {
    "mnist5k": "mnist", "mnist-5k": "mnist", "kr-vs-kp": "chess", "krvskp": "chess", "kr_vs_kp": "chess",
    "landsat": "satimage", "sat": "satimage", "breast-cancer": "breast_cancer", "breastcancer": "breast_cancer",
    "planted_mnist70k": "planted-mnist70k", "planted_coil20": "planted-coil20",
}
_PAPER_NAMES = {"chess": ["KrVsKp", "kr-vs-kp", "Chess"], "satimage": ["Landsat", "Satimage"],
                "mnist": ["MNIST"], "splice": ["Splice"], "optdigits": ["Optdigits"], "spambase": ["Spambase"],
                "ionosphere": ["Ionosphere"], "sonar": ["Sonar"], "wdbc": ["WDBC", "Breast cancer (diagnostic)"],
                "wine": ["Wine"], "breast_cancer": ["WDBC"], "segment": ["Segment"], "vehicle": ["Vehicle"]}
# shapes of the planted stand-ins for data we cannot ship: (n_samples, n_features, n_values, n_classes)
PLANTED_SHAPES = {
    "planted-mnist70k": (70_000, 784, 5, 10, "MNIST-70k shape: 70,000 x 784 pixels in 5 bins, 10 classes"),
    "planted-coil20": (1_440, 1_024, 5, 20, "COIL-20 shape: 1,440 x 1,024 pixels in 5 bins, 20 classes"),
}


def _finish(X: Any, y: np.ndarray, meta: dict, *, name: str, source: str, as_frame: bool) -> Dataset:
    """The :class:`Dataset` of a loaded set: X as a float64 array unless a column is categorical, and its metadata."""
    import pandas as pd

    frame = X if hasattr(X, "columns") else None
    if frame is not None:
        categorical = [not (pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]))
                       for c in frame.columns]
        if not any(categorical) and not as_frame:
            X = frame.to_numpy(dtype=np.float64)
    else:
        categorical = [False] * X.shape[1]
        if as_frame:
            X = pd.DataFrame(X, columns=meta["feature_names"])
    classes = np.unique(y)
    meta = {"name": name, "source": source, "n_samples": len(y), "n_features": len(categorical),
            "n_classes": len(classes), "class_names": meta.pop("class_names", [str(c) for c in classes]),
            "categorical": categorical, "paper_names": _PAPER_NAMES.get(name, []), **meta}
    return Dataset(X, y, meta)
