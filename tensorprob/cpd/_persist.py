"""A pickle-free codec of model metadata (class labels, encoder state) as JSON text.

:meth:`CPDModel.save` writes tensors and one JSON string, which ``torch.load(weights_only=True)``
reads back without unpickling anything. The JSON holds plain values, NumPy arrays of any
dtype (tagged with the dtype, so bools, datetimes and strings come back as they were) and
the state (``__dict__``) of scikit-learn estimators of ``tensorprob`` or ``sklearn`` (the
encoder and its discretizer); loading re-creates such an estimator with ``cls.__new__`` and
its state, and never imports a module or calls code outside those two packages.
"""
from __future__ import annotations

import importlib
import json
from typing import Any

import numpy as np

_ALLOWED_PACKAGES = ("tensorprob", "sklearn")


class PersistError(ValueError):
    """A value that cannot be written, or a description that cannot be read back, without pickle."""


def _encode(v: Any, where: str) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (int, float)) and type(v) in (int, float):
        return v
    if isinstance(v, np.ndarray):
        return _encode_array(v, where)
    if isinstance(v, np.generic):
        return {"__scalar__": _encode_array(np.asarray(v), where)}
    if isinstance(v, np.dtype):
        return {"__dtype__": v.str}
    if isinstance(v, tuple):
        return {"__tuple__": [_encode(x, where) for x in v]}
    if isinstance(v, list):
        return [_encode(x, where) for x in v]
    if isinstance(v, dict):
        if all(isinstance(k, str) for k in v):
            return {"__dict__": {k: _encode(x, f"{where}.{k}") for k, x in v.items()}}
        # other keys (e.g. the encoder's (type, value) category keys) as a list of pairs
        return {"__items__": [[_encode(k, f"{where}[key]"), _encode(x, f"{where}[{k!r}]")] for k, x in v.items()]}
    cls = type(v)
    mod = cls.__module__
    if mod.split(".")[0] in _ALLOWED_PACKAGES and _is_estimator(cls):
        return {"__object__": f"{mod}:{cls.__qualname__}", "state": _encode(dict(vars(v)), where)}
    raise PersistError(f"{where}: a {mod}.{cls.__qualname__} cannot be saved without pickle "
                       f"(only plain values, NumPy arrays and tensorprob / scikit-learn estimators can)")


def _encode_array(a: np.ndarray, where: str) -> dict:
    k = a.dtype.kind
    if k in "biuf":
        data = a.tolist()
    elif k in "Mm":
        data = a.view(np.int64).tolist()
    elif k == "U":
        data = a.tolist()
    elif k == "S":
        data = [x.decode("latin-1") for x in a.ravel().tolist()]
    elif k == "O":
        data = [_encode(x, where) for x in a.ravel().tolist()]
    else:
        raise PersistError(f"{where}: an array of dtype {a.dtype} cannot be saved")
    if k in "SO":
        return {"__ndarray__": a.dtype.str, "shape": list(a.shape), "flat": data}
    return {"__ndarray__": a.dtype.str, "shape": list(a.shape), "data": data}


def _is_estimator(cls: type) -> bool:
    from sklearn.base import BaseEstimator

    return isinstance(cls, type) and issubclass(cls, BaseEstimator)


def _decode(v: Any) -> Any:
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "__ndarray__" in v:
        return _decode_array(v)
    if "__scalar__" in v:
        return _decode_array(v["__scalar__"])[()]
    if "__dtype__" in v:
        return np.dtype(str(v["__dtype__"]))
    if "__tuple__" in v:
        return tuple(_decode(x) for x in v["__tuple__"])
    if "__dict__" in v:
        return {str(k): _decode(x) for k, x in v["__dict__"].items()}
    if "__items__" in v:
        items = v["__items__"]
        if not isinstance(items, list) or not all(isinstance(kv, list) and len(kv) == 2 for kv in items):
            raise PersistError("bad __items__ entry")
        try:
            return {_decode(k): _decode(x) for k, x in items}
        except TypeError as exc:  # an unhashable key
            raise PersistError(f"bad __items__ key ({exc})") from None
    if "__object__" in v:
        mod, _, name = str(v["__object__"]).partition(":")
        if mod.split(".")[0] not in _ALLOWED_PACKAGES or not name.isidentifier():
            raise PersistError(f"refusing to build an object of {v['__object__']!r}")
        cls = getattr(importlib.import_module(mod), name, None)
        if not _is_estimator(cls):
            raise PersistError(f"{v['__object__']!r} is not a scikit-learn estimator class")
        state = _decode(v["state"])
        if not isinstance(state, dict):
            raise PersistError(f"bad state of {v['__object__']!r}")
        obj = cls.__new__(cls)
        obj.__dict__.update(state)
        return obj
    raise PersistError(f"unknown tagged value with keys {sorted(v)}")


def _decode_array(v: dict) -> np.ndarray:
    dt = np.dtype(str(v["__ndarray__"]))
    shape = tuple(int(s) for s in v["shape"])
    k = dt.kind
    if k in "biufU":
        return np.array(v["data"], dtype=dt).reshape(shape)
    if k in "Mm":
        return np.array(v["data"], dtype=np.int64).reshape(shape).view(dt)
    flat = v["flat"]
    if k == "S":
        return np.array([str(x).encode("latin-1") for x in flat], dtype=dt).reshape(shape)
    if k == "O":
        out = np.empty(len(flat), dtype=object)
        for i, x in enumerate(flat):
            out[i] = _decode(x)
        return out.reshape(shape)
    raise PersistError(f"arrays of dtype {dt} are not readable")


def dumps(value: Any, where: str = "value") -> str:
    """JSON text of ``value`` (raises :class:`PersistError` for what cannot be saved without pickle)."""
    return json.dumps(_encode(value, where), allow_nan=True)


def loads(text: str) -> Any:
    """The value of :func:`dumps` text."""
    return _decode(json.loads(text))
