"""Device and dtype resolution, random generators and the memory budget.

Every numeric path in tensorprob runs in torch on one ``device`` and ``dtype`` chosen
here: ``device="auto"`` picks CUDA when it is available; the default dtype is float64 on
the CPU and float32 on CUDA (both defaults can be fixed with ``set_config(device=...,
dtype=...)``). Random choices take ``random_state`` (None, an int, a NumPy
``Generator``/``RandomState`` or a ``torch.Generator``), turned into a ``torch.Generator``
on the target device so that draws happen where the data lives.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from ._config import get_config, parse_device, parse_dtype

DeviceLike = str | torch.device | None
RandomStateLike = None | int | np.integer | np.random.Generator | np.random.RandomState | torch.Generator


def resolve_device(device: DeviceLike = "auto") -> torch.device:
    """Turn ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a ``torch.device`` into a device.

    ``"auto"`` (or None) takes the configured default (:func:`tensorprob.set_config`), and
    CUDA when that is ``"auto"`` and a GPU is available.

    Raises
    ------
    ValueError
        If CUDA is asked for and not available, or the string is not a device.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        default = get_config()["device"]
        if default != "auto":
            return parse_device(default)
        return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    return parse_device(device)


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """Default floating dtype for ``device`` (float64 on CPU, float32 on CUDA) unless given.

    ``dtype=None`` takes the configured default (:func:`tensorprob.set_config`) when one is set.
    """
    if dtype is None:
        default = get_config()["dtype"]
        if default is not None:
            return parse_dtype(default)
        return torch.float32 if device.type == "cuda" else torch.float64
    return parse_dtype(dtype)


@contextmanager
def cpu_thread_cap(device: torch.device) -> Iterator[None]:
    """Run a block with torch's intra-op threads at ``get_config()["cpu_threads"]`` on the CPU, then restore them.

    Nothing changes on other devices, with ``cpu_threads=None``, or when torch already runs
    that many threads.
    """
    n = get_config()["cpu_threads"]
    prev = torch.get_num_threads()
    if device.type != "cpu" or n is None or n == prev:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


def seed_from_random_state(random_state: RandomStateLike) -> int:
    """Derive a 63-bit integer seed from any accepted ``random_state``."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
    if isinstance(random_state, (bool, np.bool_)):
        raise TypeError("random_state must be None, an int, a NumPy Generator or a torch.Generator, not a bool")
    if isinstance(random_state, (int, np.integer)):
        if int(random_state) < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, torch.Generator):
        return int(torch.randint(0, 2**62, (1,), generator=random_state).item())
    raise TypeError(
        "random_state must be None, an int, a NumPy Generator/RandomState or a torch.Generator, "
        f"got {type(random_state).__name__}"
    )


def make_generator(random_state: RandomStateLike, device: torch.device) -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded from ``random_state``.

    A ``torch.Generator`` already on ``device`` is returned as it is (draws advance it).
    """
    if isinstance(random_state, torch.Generator) and random_state.device.type == device.type:
        return random_state
    gen = torch.Generator(device=device)
    gen.manual_seed(seed_from_random_state(random_state))
    return gen


# On the CPU, a few elementwise passes over blocks of this many bytes run in cache and reuse
# the allocator's memory; temporaries of hundreds of MB stream through freshly mapped pages
# instead, several times slower per pass. Accelerators take
# whole memory-budget chunks (fewer kernel launches).
CPU_BLOCK_BYTES = 4 * 2**20


def block_budget(device: torch.device) -> int:
    """Bytes per temporary for blocked elementwise work on ``device`` (at most the memory budget)."""
    budget = get_config()["memory_budget"]
    return min(budget, CPU_BLOCK_BYTES) if torch.device(device).type == "cpu" else budget


def exp_floor(dtype: torch.dtype) -> float:
    """Smallest argument worth passing to ``exp`` in ``dtype``: exp of it is still a normal number.

    The CPU's vector exp takes a slow path for -inf and for subnormal or zero results, so
    log-domain terms far below their maximum are clamped here first.
    """
    return math.log(torch.finfo(dtype).tiny) + 10.0


def chunk_rows(bytes_per_row: int, n_rows: int, memory_budget: int | None = None) -> int:
    """Number of rows per chunk so that one chunk's temporaries fit the memory budget."""
    budget = get_config()["memory_budget"] if memory_budget is None else int(memory_budget)
    return int(max(1, min(n_rows, budget // max(1, int(bytes_per_row)))))


def chunk_ranges(n: int, bytes_per_item: int, memory_budget: int | None = None):
    """Yield ``(start, stop)`` ranges over ``n`` items, each range's temporaries within the budget."""
    step = chunk_rows(bytes_per_item, n, memory_budget)
    for start in range(0, n, step):
        yield start, min(n, start + step)


def halving_reduce(a: np.ndarray, op: np.ufunc) -> np.ndarray:
    """``op`` (``np.add``, ``np.bitwise_or``, ...) reduced over axis 0 of the writable array ``a``, in place, by halving.

    The upper half is combined into the lower, about log2(n) whole-array calls: NumPy's own
    reduction over axis 0 of narrow rows makes one short inner loop per row (2-20x slower on a
    few dozen to a few hundred columns). Returns ``a[0]``, a view; ``a`` is overwritten.
    """
    n = a.shape[0]
    while n > 1:
        h = n // 2
        op(a[:h], a[h:2 * h], out=a[:h])
        if n & 1:
            op(a[0], a[n - 1], out=a[0])
        n = h
    return a[0]


def is_sparse(X: object) -> bool:
    """Whether ``X`` is a scipy.sparse matrix or array (told without importing SciPy, for dense input)."""
    return hasattr(X, "tocsr") and hasattr(X, "nnz")


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """Detach, move to the CPU and convert to NumPy."""
    return t.detach().cpu().numpy()
