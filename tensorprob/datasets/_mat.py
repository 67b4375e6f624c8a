"""Reading the papers' benchmark sets from scikit-feature ``.mat`` files (by path or by name).

The scikit-feature repository publishes its benchmark sets as MATLAB files holding two
variables: ``X`` (samples x features) and ``Y`` (the labels, a column). They are not shipped
with any package, so tensorprob never copies them: :func:`tensorprob.datasets.load_dataset`
reads one from a path, or finds it by name in a folder (``data_home=`` or the environment
variable ``TENSORPROB_DATA``).

Values. A file whose ``X`` is integer-typed with few distinct values in all (at most
``max_categories`` of :func:`tensorprob.get_config`, 64 by default) holds codes that its
publishers already discretized (colon, leukemia, lymphoma, lung_small and nci9 store
``{-2, 0, 2}`` as int16): ``X`` is returned as that integer array, and the selectors encode
its columns by value, never re-binning them. Every other file (uint8 pixels of ORL and the
warp sets, uint16 madelon, float gene-expression, COIL-20 and Isolet values) holds
measurements: ``X`` is returned as float64, so that the encoder treats the whole array as
one kind of variable (a float array's integral columns are categories only when all of them
are) and discretizes every column (``n_bins=5`` equal-width bins by default), as the papers
binned them.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PAPER_MAT_SETS", "data_directory", "find_mat", "is_mat_path", "mat_set_name", "read_mat"]

#: Environment variable naming the folder of the ``.mat`` files when ``data_home`` is not given.
DATA_ENV = "TENSORPROB_DATA"

#: The papers' sets: our name -> (file stem in scikit-feature, other spellings, paper names, description).
PAPER_MAT_SETS: dict[str, tuple[str, tuple[str, ...], list[str], str]] = {
    "coil20": ("COIL20", ("coil-20", "coil_20"), ["COIL-20", "COIL20"],
               "Columbia object images: 1,440 x 1,024 grey levels (32 x 32) scaled to [0, 1], 20 objects"),
    "orl": ("ORL", (), ["ORL"], "ORL faces: 400 x 1,024 pixels 0..255 (32 x 32), 40 people"),
    "isolet": ("Isolet", (), ["Isolet", "ISOLET"], "spoken letters: 1,560 x 617 real features in [-1, 1], 26 letters"),
    "madelon": ("madelon", (), ["Madelon", "madelon"], "NIPS 2003 synthetic XOR-like set: 2,600 x 500 integers, 2 classes"),
    "colon": ("colon", (), ["Colon"], "colon tumour gene expression: 62 x 2,000, values already discretized"),
    "leukemia": ("leukemia", (), ["Leukemia"], "leukemia gene expression: 72 x 7,070, values already discretized"),
    "lymphoma": ("lymphoma", (), ["Lymphoma"], "lymphoma gene expression: 96 x 4,026, values already discretized"),
    "lung_small": ("lung_small", ("lung", "lung-small", "lungsmall"), ["Lung"],
                   "lung cancer (small): 73 x 325, values already discretized, 7 classes"),
    "nci9": ("nci9", ("nci-9",), ["NCI9"], "NCI-60 cancer cell lines: 60 x 9,712, values already discretized"),
    "allaml": ("ALLAML", ("all-aml", "all_aml"), ["ALLAML"], "ALL/AML leukemia gene expression: 72 x 7,129 reals"),
    "tox171": ("TOX-171", ("tox-171", "tox_171"), ["TOX-171", "TOX171"], "toxicology gene expression: 171 x 5,748 reals"),
    "glioma": ("GLIOMA", (), ["GLIOMA"], "glioma gene expression: 50 x 4,434 reals, 4 classes"),
    "warpar10p": ("warpAR10P", ("warp-ar10p",), ["warpAR10P"], "AR faces, 10 people: 130 x 2,400 pixels 0..255"),
    "warppie10p": ("warpPIE10P", ("warp-pie10p",), ["warpPIE10P"], "PIE faces, 10 people: 210 x 2,420 pixels 0..255"),
}
_IMAGE_SHAPES = {"coil20": (32, 32), "orl": (32, 32)}


def _squash(text: str) -> str:
    """Lower case without separators: ``"TOX-171"`` and ``"tox171"`` compare equal."""
    return re.sub(r"[^0-9a-z]", "", text.lower())


_BY_SPELLING: dict[str, str] = {}
for _name, (_stem, _aliases, _paper, _desc) in PAPER_MAT_SETS.items():
    for _s in (_name, _stem, *_aliases, *_paper):
        _BY_SPELLING[_squash(_s)] = _name


def mat_set_name(name: str) -> str | None:
    """Our name of one of the papers' sets, from any accepted spelling (case and separators ignored).

    Parameters
    ----------
    name : str
        A spelling such as ``"COIL-20"``, ``"tox171"`` or ``"lung"``.

    Returns
    -------
    str or None
        The key of :data:`PAPER_MAT_SETS`, or None for another name.
    """
    return _BY_SPELLING.get(_squash(name))


def is_mat_path(name: Any) -> bool:
    """Whether ``name`` is a path rather than a data set name.

    A path is an ``os.PathLike``, a string ending in ``.mat`` (any case), or a string with a
    directory separator that names an existing file.

    Parameters
    ----------
    name : str or os.PathLike
        What was passed to ``load_dataset``.

    Returns
    -------
    bool
    """
    if isinstance(name, os.PathLike):
        return True
    if not isinstance(name, str):
        return False
    text = name.strip()
    return text.lower().endswith(".mat") or (("/" in text or os.sep in text) and os.path.isfile(text))


def data_directory(data_home: str | os.PathLike | None) -> tuple[Path | None, str]:
    """The folder searched for ``.mat`` files and a description of where it came from.

    Parameters
    ----------
    data_home : str, os.PathLike or None
        An explicit folder; None reads the environment variable ``TENSORPROB_DATA``.

    Returns
    -------
    folder : Path or None
        None when neither is set.
    where : str
        ``"data_home='...'"``, ``"TENSORPROB_DATA='...'"`` or ``"no folder (...)"`` when
        neither is set, for error messages.
    """
    if data_home is not None:
        return Path(data_home).expanduser(), f"data_home={str(data_home)!r}"
    env = os.environ.get(DATA_ENV, "").strip()
    if env:
        return Path(env).expanduser(), f"{DATA_ENV}={env!r}"
    return None, f"no folder (data_home not given and {DATA_ENV} not set)"


def find_mat(name: str, folder: Path | None) -> Path | None:
    """The ``.mat`` file of ``name`` in ``folder``, or None.

    One of the papers' sets is looked up by its scikit-feature file stem (``"tox171"`` finds
    ``TOX-171.mat``, ``"lung"`` finds ``lung_small.mat``); any other name by itself. File names
    are compared in lower case: an exact match wins, then one that differs only in the
    separators ``-``, ``_`` and spaces.

    Parameters
    ----------
    name : str
        The data set name.
    folder : Path or None
        The folder to search (None: nothing is found).

    Returns
    -------
    Path or None
    """
    if folder is None or not folder.is_dir():
        return None
    known = mat_set_name(name)
    stem = PAPER_MAT_SETS[known][0] if known is not None else name.strip()
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".mat" and p.is_file())
    for p in files:
        if p.stem.lower() == stem.lower():
            return p
    for p in files:
        if _squash(p.stem) == _squash(stem):
            return p
    return None


def read_mat(path: str | os.PathLike, *, max_categories: int | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Read a scikit-feature ``.mat`` file: features ``X``, labels ``Y``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    max_categories : int or None, default=None
        Most distinct values of an integer ``X`` taken as codes (None: the configured
        ``max_categories``, 64 by default).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The file's integer array when it holds codes (integer dtype, at most
        ``max_categories`` distinct values in all), float64 otherwise.
    y : ndarray of shape (n_samples,)
        ``Y`` flattened; int64 when its values are integral.
    metadata : dict
        ``path``, ``source`` (``"skfeature-mat"``), ``shape``, ``dtype`` (of ``X`` in the file),
        ``discrete`` (True when ``X`` is returned as codes), ``feature_names`` and, for the
        papers' sets, ``description``, ``paper_names`` and ``image_shape`` where known.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If the file is not a MATLAB file or lacks ``X`` or ``Y``, or their shapes disagree.
    """
    import scipy.io
    import scipy.sparse as sp

    from .._config import get_config

    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"no such .mat file: {str(p)!r}")
    try:
        content = scipy.io.loadmat(str(p))
    except Exception as exc:  # scipy raises several types for a file that is not MATLAB
        raise ValueError(f"cannot read {str(p)!r} as a MATLAB file: {exc}") from exc
    missing = [v for v in ("X", "Y") if v not in content]
    if missing:
        found = sorted(v for v in content if not v.startswith("__"))
        raise ValueError(f"{str(p)!r} is not in the scikit-feature format: no variable {' or '.join(missing)} "
                         f"(variables: {', '.join(found) or 'none'})")
    X = content["X"]
    if sp.issparse(X):
        X = X.toarray()
    X = np.asarray(X)
    y = np.asarray(content["Y"]).ravel()
    if X.ndim != 2 or X.dtype.kind not in "iufb":
        raise ValueError(f"X of {str(p)!r} must be a 2-D numeric array, got {X.dtype} of shape {X.shape}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{str(p)!r}: X has {X.shape[0]} samples but Y has {y.shape[0]} labels")
    if y.dtype.kind in "iub" or (y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y))):
        y = y.astype(np.int64)
    limit = max_categories if max_categories is not None else get_config()["max_categories"]
    file_dtype = str(X.dtype)
    discrete = X.dtype.kind in "iu" and np.unique(X).size <= limit
    X = X if discrete else X.astype(np.float64)
    name = mat_set_name(p.stem)
    meta: dict[str, Any] = {"path": str(p.resolve()), "shape": tuple(X.shape), "dtype": file_dtype,
                            "discrete": bool(discrete), "feature_names": [f"x{j}" for j in range(X.shape[1])]}
    if name is not None and _squash(p.stem) == _squash(PAPER_MAT_SETS[name][0]):
        meta["description"] = PAPER_MAT_SETS[name][3]
        meta["paper_names"] = list(PAPER_MAT_SETS[name][2])
        if name in _IMAGE_SHAPES:
            meta["image_shape"] = _IMAGE_SHAPES[name]
    else:
        meta["description"] = f"scikit-feature .mat file {p.name}"
    return X, y, meta
