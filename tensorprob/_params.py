"""Estimator parameter names, read from each class's constructor once."""
from __future__ import annotations


class CachedParamNames:
    """Mixin for scikit-learn estimators: ``_get_param_names`` computed once per class.

    scikit-learn reads the constructor's signature (``inspect.signature``) on every
    ``get_params``, hence on every ``fit`` (parameter validation), ``clone`` and ``repr``, a
    visible share of a small selection. The names depend only on the class's
    ``__init__``, so each class keeps its own sorted tuple, computed on first use; a subclass
    computes its own (it may define another ``__init__``). Put this mixin before
    ``BaseEstimator`` in the bases.
    """

    @classmethod
    def _get_param_names(cls) -> list[str]:
        names = cls.__dict__.get("_param_names_cache")
        if names is None:
            names = tuple(super()._get_param_names())
            cls._param_names_cache = names  # on this class only (looked up in its own __dict__)
        return list(names)
