"""Global, thread-local configuration: memory budget and category limits.

Use :func:`config_context` to change a setting for a block of code and
:func:`get_config` to read the current values.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

_DEFAULTS: dict[str, Any] = {
    # Bytes that one chunk of a chunked computation may allocate (per large temporary).
    "memory_budget": 512 * 2**20,
    # Integer columns with at most this many distinct values are treated as codes; string /
    # categorical columns with more distinct values are rejected, as are alphabets above it.
    "max_categories": 64,
}
_local = threading.local()


def _state() -> dict[str, Any]:
    if not hasattr(_local, "config"):
        _local.config = dict(_DEFAULTS)
    return _local.config


def get_config() -> dict[str, Any]:
    """Return a copy of the current configuration.

    Returns
    -------
    dict
        ``memory_budget`` (bytes a chunk of a chunked computation may allocate) and
        ``max_categories`` (largest alphabet accepted for a categorical variable, and the
        largest number of distinct values for which an integer column counts as codes).
    """
    return dict(_state())


def set_config(*, memory_budget: int | None = None, max_categories: int | None = None) -> None:
    """Set global configuration values (see :func:`get_config`)."""
    cfg = _state()
    if memory_budget is not None:
        if int(memory_budget) < 2**16:
            raise ValueError(f"memory_budget must be at least 65536 bytes, got {memory_budget!r}")
        cfg["memory_budget"] = int(memory_budget)
    if max_categories is not None:
        if int(max_categories) < 2:
            raise ValueError(f"max_categories must be at least 2, got {max_categories!r}")
        cfg["max_categories"] = int(max_categories)


@contextmanager
def config_context(**kwargs: Any) -> Iterator[None]:
    """Temporarily change configuration values inside a ``with`` block.

    Examples
    --------
    >>> import tensorprob
    >>> with tensorprob.config_context(memory_budget=2**24):
    ...     tensorprob.get_config()["memory_budget"]
    16777216
    """
    old = get_config()
    set_config(**kwargs)
    try:
        yield
    finally:
        _state().update(old)
