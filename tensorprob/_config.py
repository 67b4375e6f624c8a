"""Process-wide configuration with context-local overrides: memory budget and category limits.

:func:`set_config` changes the process-wide values, which every thread sees (also threads
started earlier, and worker threads of thread pools). :func:`config_context` overrides values
for a ``with`` block through a :mod:`contextvars` variable: the override holds in the code of
that block (and in asyncio tasks and ``contextvars.copy_context().run`` calls started from
it), not in other threads, so concurrent blocks in different threads never see each other's
values. The library itself starts no threads.

Use :func:`config_context` to change a setting for a block of code and
:func:`get_config` to read the current values.
"""
from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_DEFAULTS: dict[str, Any] = {
    # Bytes that one chunk of a chunked computation may allocate (per large temporary). While
    # "auto" (the private flag below), work on a CUDA device gets DEVICE_SHARE of its memory
    # instead, when that is more (see device_budget).
    "memory_budget": 512 * 2**20,
    "_memory_budget_auto": True,
    # Numeric columns (integers, integral floats) with at most this many distinct values are
    # categories by value; categorical columns with more distinct values are rejected.
    "max_categories": 64,
    # Least expected rows per cell of a pair-and-class table for which a selector keeps the values of
    # an integral numeric column as categories (more values are binned; 0: only max_categories).
    "min_cell_count": 5,
    # Show tqdm progress bars (on stderr) for greedy selection steps and EM iterations; tqdm is
    # optional (the "progress" extra): without it the setting has no effect.
    "progress": False,
    # What device="auto" means: "auto" (CUDA when available, else the CPU), or a device.
    "device": "auto",
    # What dtype=None means: None (float64 on the CPU, float32 on CUDA), "float32" or "float64".
    "dtype": None,
    # torch intra-op threads while a selector or a CPD fit runs on the CPU (None: torch's own
    # setting). One thread stays steady when another process holds a core, where two threads
    # lose several times (docs/benchmarks.md, "Threads"; benchmarks/results/busy.md).
    "cpu_threads": 1,
    # How tables are counted: "auto" (the planner's cheapest strategy), "reference" (the plain
    # bincount everywhere) or a strategy's name; the environment variable sets the default.
    "counting": (os.environ.get("TENSORPROB_COUNTING", "") or "auto").strip().lower(),
}
#: Validators of settings whose values a lower layer cannot know: the counting package registers
#: the check of ``counting`` (its strategy names) here when it is imported.
VALIDATORS: dict[str, Callable[[Any], Any]] = {}
_global: dict[str, Any] = dict(_DEFAULTS)
_lock = threading.Lock()  # guards writes to the process-wide values
# The configuration in effect: the process-wide dict, or the copy a config_context installed.
_current: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("tensorprob_config", default=None)


def _state() -> dict[str, Any]:
    cfg = _current.get()
    return _global if cfg is None else cfg


def parse_device(device: Any) -> Any:
    """A ``torch.device`` from ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a device, checked against this machine.

    Raises
    ------
    ValueError
        If CUDA is asked for and not available, or the string is not a device.
    """
    import torch

    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        try:
            dev = torch.device(device)
        except RuntimeError as exc:
            raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or a torch.device, got {device!r}") from exc
    else:
        raise TypeError(f"device must be a string or torch.device, got {type(device).__name__}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={str(device)!r} was asked for but CUDA is not available on this machine "
                "(torch.cuda.is_available() is False); use device='cpu' or device='auto'"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={str(device)!r}: only {torch.cuda.device_count()} CUDA device(s) present")
    elif dev.type != "cpu":
        raise ValueError(f"device type {dev.type!r} is not supported; use 'cpu' or 'cuda'")
    return dev


def parse_dtype(dtype: Any) -> Any:
    """``torch.float32`` or ``torch.float64`` from a name (``"float32"``, ``"single"``, ...) or a dtype."""
    import torch

    if isinstance(dtype, str):
        table = {"float32": torch.float32, "float64": torch.float64, "single": torch.float32, "double": torch.float64}
        if dtype not in table:
            raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
        return table[dtype]
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    return dtype


def setting(name: str) -> Any:
    """The current value of one setting (no copy of the configuration: what hot paths read)."""
    return _state()[name]


def get_config() -> dict[str, Any]:
    """Return a copy of the current configuration.

    Returns
    -------
    dict
        ``memory_budget`` (bytes a chunk of a chunked computation may allocate: the budget in
        effect, which inside a fit on a CUDA device under the default ``"auto"`` is the
        device's, see :func:`set_config`) and
        ``max_categories`` (largest alphabet accepted for a categorical variable, and the
        largest number of distinct values for which a numeric column is categorical),
        ``min_cell_count`` (the selectors keep an integral numeric column's values as
        categories only while a table of two such columns and the class holds at least this
        many rows per cell on average, default 5; see ``Encoder(max_categories="auto")``),
        ``progress`` (show tqdm progress bars on stderr for greedy steps and EM iterations;
        tqdm is an optional dependency, ``pip install "tensorprob[progress]"``, and without it
        the setting is accepted and no bar is shown), ``device`` (what ``device="auto"`` resolves
        to: ``"auto"`` picks CUDA when available, or a fixed ``"cpu"`` / ``"cuda"`` /
        ``"cuda:N"``) and ``dtype`` (what ``dtype=None`` resolves to: ``None`` gives float64 on
        the CPU and float32 on CUDA, or a fixed ``"float32"`` / ``"float64"``) and
        ``cpu_threads`` (torch intra-op threads while a selector or a CPD fit runs on the CPU, default 1;
        None leaves torch's setting) and ``counting`` (how contingency tables are counted:
        ``"auto"``, ``"reference"`` or a strategy name; see :func:`set_config`).
    """
    return {k: v for k, v in _state().items() if not k.startswith("_")}


# The automatic budget on a CUDA device: this fraction of its memory, never less than the CPU's
# default; the CPU's 512 MiB keeps a large EM from caching its incidence on a GPU
# (``benchmarks/bench_gpu.py``, docs/benchmarks.md).
DEVICE_SHARE = 1 / 16


def auto_budget(device: Any) -> int:
    """The memory budget that ``memory_budget="auto"`` gives work on ``device`` (bytes).

    The CPU's default (512 MiB) on the CPU; on a CUDA device, :data:`DEVICE_SHARE` of its
    total memory when that is more.
    """
    import torch

    device = torch.device(device)
    base = _DEFAULTS["memory_budget"]
    if device.type != "cuda":
        return base
    return max(base, int(torch.cuda.get_device_properties(device).total_memory * DEVICE_SHARE))


@contextmanager
def device_budget(device: Any, distributed: bool = False) -> Iterator[None]:
    """Run a block with the automatic memory budget of ``device`` (:func:`auto_budget`).

    Only while the budget is ``"auto"``: a budget set with :func:`set_config` or
    :func:`config_context` holds everywhere. The estimators' ``fit`` and the CPD fits wrap
    their work in it once their device is known. ``distributed``: every rank of the process
    group takes the smallest budget of the ranks (one all-gather), since the budget sizes the
    chunks and chunked collectives must run alike on every rank.
    """
    st = _state()
    auto = st.get("_memory_budget_auto") and getattr(device, "type", str(device)) != "cpu"
    budget = auto_budget(device) if auto else st["memory_budget"]
    if distributed:
        from . import _distributed

        budget = min(_distributed.all_gather(budget))
    if budget == st["memory_budget"]:
        yield
        return
    token = _current.set(dict(st, memory_budget=budget))
    try:
        yield
    finally:
        _current.reset(token)


_UNSET: Any = object()


def set_config(*, memory_budget: int | str | None = None, max_categories: int | None = None,
               min_cell_count: float | None = None,
               progress: bool | None = None, device: Any = None, dtype: Any = _UNSET,
               cpu_threads: Any = _UNSET, counting: str | None = None) -> None:
    """Set configuration values; ``None`` leaves a value unchanged.

    Outside :func:`config_context` the values are process-wide (every thread sees them);
    inside one they change that block's values only, and are undone when it ends.

    Parameters
    ----------
    memory_budget : int or "auto", optional
        Bytes one chunk of a chunked computation may allocate (at least 65536). ``"auto"``
        (the default): 512 MiB on the CPU, and on a CUDA device a sixteenth of its memory
        when that is more (8.7 GiB on a 140 GiB H200); an int holds on every device. A
        data-parallel fit (``distributed=True``) takes the smallest budget of its ranks. Beyond the
        chunks, what a computation keeps across its passes counts against it too: the EM
        caches its incidence matrix only when it fits (otherwise each pass rebuilds it chunk
        by chunk), and PDA/VMI keep their per-sample sums only when they fit (otherwise each
        step recomputes them from the selected features' tables). What stays is the data as
        compact codes (1 byte per entry up to 127 values) and parameters of the model size.
    max_categories : int, optional
        Largest alphabet of a categorical column, and the largest number of distinct values
        for which a numeric column is categorical (at least 2).
    min_cell_count : float, optional
        Least average number of rows per cell of a table of two integral numeric columns and
        the class for which the selectors keep such a column's values as categories: at most
        ``max(n_bins, floor(sqrt(n_rows / (n_classes * min_cell_count))))`` values (and at most
        ``max_categories``); a column with more is binned by the selector's discretizer.
        Default 5 (the usual least expected count of a chi-square cell); 0 keeps every
        column with up to ``max_categories`` values.
    progress : bool, optional
        Show tqdm progress bars on stderr (needs the optional tqdm, the ``progress`` extra;
        without it no bar is shown).
    device : str or torch.device, optional
        What ``device="auto"`` means from now on: ``"auto"`` (CUDA when available) or a fixed
        device such as ``"cpu"`` or ``"cuda:0"``. Validated here, so a bad value fails at once.
    dtype : {"float32", "float64"}, torch.dtype or None, optional
        What ``dtype=None`` means from now on; ``None`` restores the per-device default
        (float64 on the CPU, float32 on CUDA).
    cpu_threads : int or None, optional
        Torch intra-op threads while a selector's ``fit`` or a CPD fit runs on the CPU (default
        1); the previous count is restored when it returns. ``None`` leaves torch's setting
        (``torch.set_num_threads``). One thread stays steady when another process keeps a core
        busy, where all of them lose several times; on an idle multi-core machine ``None`` is
        faster for CPD fits (docs/benchmarks.md, "Threads"). ``torch.set_num_threads`` is
        process-wide: fits run at the same time in several threads of one process should agree
        on the value.
    counting : str, optional
        How contingency tables are counted: ``"auto"`` (the default: for every table the
        cheapest strategy that applies, by the planner's estimates), ``"reference"`` (the plain
        bincount for every table) or the name of one strategy
        (``tensorprob.counting.strategies()``), forced for the kinds of tables it counts (an
        error where it does not apply). Every strategy counts the same integers, so only the
        speed changes (and the last bits of float64 sums). The environment variable
        ``TENSORPROB_COUNTING`` sets the default. A fitted selector records what ran in
        ``counting_plan_``.

    See Also
    --------
    get_config : The current values.
    config_context : Change values for a ``with`` block only.

    Examples
    --------
    >>> import tensorprob
    >>> tensorprob.set_config(max_categories=32)
    >>> tensorprob.get_config()["max_categories"]
    32
    >>> tensorprob.set_config(max_categories=64)
    """
    new: dict[str, Any] = {}  # only the values named here change (another thread may set others)
    if device is not None:
        new["device"] = "auto" if isinstance(device, str) and device == "auto" else str(parse_device(device))
    if dtype is not _UNSET:
        if dtype is None:
            new["dtype"] = None
        else:

            new["dtype"] = str(parse_dtype(dtype)).replace("torch.", "")
    if cpu_threads is not _UNSET:
        if cpu_threads is not None and (isinstance(cpu_threads, bool) or not isinstance(cpu_threads, int)
                                        or cpu_threads < 1):
            raise ValueError(f"cpu_threads must be a positive int or None, got {cpu_threads!r}")
        new["cpu_threads"] = cpu_threads
    if progress is not None:
        new["progress"] = bool(progress)
    if counting is not None:
        new["counting"] = VALIDATORS.get("counting", str)(counting)
    if isinstance(memory_budget, str) and memory_budget == "auto":
        new.update({"memory_budget": _DEFAULTS["memory_budget"], "_memory_budget_auto": True})
    elif memory_budget is not None:
        if isinstance(memory_budget, (str, bool)) or int(memory_budget) < 2**16:
            raise ValueError(f"memory_budget must be 'auto' or at least 65536 bytes, got {memory_budget!r}")
        new.update({"memory_budget": int(memory_budget), "_memory_budget_auto": False})
    if min_cell_count is not None:
        if isinstance(min_cell_count, bool) or not isinstance(min_cell_count, (int, float)) or not (
                min_cell_count >= 0 and min_cell_count < float("inf")):
            raise ValueError(f"min_cell_count must be a finite number >= 0, got {min_cell_count!r}")
        new["min_cell_count"] = min_cell_count
    if max_categories is not None:
        if int(max_categories) < 2:
            raise ValueError(f"max_categories must be at least 2, got {max_categories!r}")
        new["max_categories"] = int(max_categories)
    with _lock:  # validated above: all values change together, or none
        _state().update(new)


@contextmanager
def config_context(**kwargs: Any) -> Iterator[None]:
    """Temporarily change configuration values inside a ``with`` block.

    Parameters
    ----------
    **kwargs
        Any keyword argument of :func:`set_config`; the previous values are restored when the
        block ends, also on an exception. The values hold in the current thread (context)
        only: a thread started inside the block sees the process-wide values unless it runs
        its work through ``contextvars.copy_context().run``.

    Examples
    --------
    >>> import tensorprob
    >>> with tensorprob.config_context(memory_budget=2**24):
    ...     tensorprob.get_config()["memory_budget"]
    16777216
    """
    token = _current.set(dict(_state()))  # this block's own copy; other threads keep theirs
    try:
        set_config(**kwargs)
        yield
    finally:
        _current.reset(token)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def progress_bar(total: int | None, desc: str) -> Any:
    """A tqdm bar on stderr when the ``progress`` setting is on, else a no-op.

    tqdm is optional (the ``progress`` extra); when it is not installed the bar is a no-op too.
    """
    if not _state()["progress"]:
        return _NoBar()
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional: the 'progress' extra
        return _NoBar()
    return tqdm(total=total, desc=desc, leave=False)
