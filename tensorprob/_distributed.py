"""Process-group helpers for data-parallel fits on ``torch.distributed`` (private).

Every public function that takes ``distributed=True`` holds only its own rows on each
process (rank) of an initialized default process group and returns the global answer on
every rank. All communication goes through the collectives of ``torch.distributed``
(Gloo on CPU tensors, NCCL on CUDA tensors); nothing here opens sockets of its own.

The helpers are:

* :func:`active` - checks that a process group is initialized when ``distributed=True``;
* :func:`all_reduce_sum` - one float64 sum over ranks of a flat buffer (the EM packs the
  statistics of an iteration into one such buffer: one collective per iteration);
* :func:`all_gather` / :func:`broadcast` - Python objects (signatures, category sets,
  distinct rows) gathered to, or sent from rank 0 to, every rank;
* :func:`check_same` - the signature check: every rank compares a small description of its
  input with rank 0's and all ranks raise the same ``ValueError`` naming the ranks that differ;
* :func:`agree` - the error barrier: a step that raises on one rank makes every rank raise an
  error naming the failing rank(s), instead of leaving the others waiting in the next
  collective.

A rank that dies (or raises outside these barriers) still leaves the others blocked in
their next collective until the process group's timeout; pass ``timeout=`` to
``torch.distributed.init_process_group`` so that they fail instead of hanging.

``STATS`` counts the bytes and the wall-clock seconds spent in :func:`all_reduce_sum`
(the benchmarks report them); its cost is two clock reads per collective.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

#: Collective traffic of this process: ``bytes`` all-reduced, ``seconds`` spent in the
#: reductions, and ``calls``. Reset with :func:`reset_stats`.
STATS: dict[str, float] = {"bytes": 0, "seconds": 0.0, "calls": 0}


def reset_stats() -> None:
    """Zero :data:`STATS`."""
    STATS.update(bytes=0, seconds=0.0, calls=0)


def active(distributed: Any) -> bool:
    """Whether a call runs data-parallel: ``distributed=True`` and an initialized default group.

    Raises
    ------
    TypeError
        ``distributed`` is not a bool.
    ValueError
        ``distributed=True`` without an initialized default process group.
    """
    if not isinstance(distributed, bool):
        raise TypeError(f"distributed must be True or False, got {distributed!r}")
    if not distributed:
        return False
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise ValueError("distributed=True needs an initialized default process group: call "
                         "torch.distributed.init_process_group(...) first (for example under torchrun)")
    return True


def rank() -> int:
    import torch.distributed as dist

    return dist.get_rank()


def world_size() -> int:
    import torch.distributed as dist

    return dist.get_world_size()


def _comm_device(device: torch.device) -> torch.device:
    """Where a collective's tensor must live: the CPU for Gloo, the tensor's device for NCCL."""
    import torch.distributed as dist

    return device if dist.get_backend() == "nccl" else torch.device("cpu")


def all_reduce_sum(buf: torch.Tensor) -> torch.Tensor:
    """Sum of the 1-D float64 ``buf`` over all ranks, returned on ``buf``'s device (``buf`` is not changed).

    Every rank receives the same values (the collective's result is shared), so decisions
    taken from them, such as convergence, agree on all ranks.
    """
    import torch.distributed as dist

    t0 = time.perf_counter()
    work = buf.to(_comm_device(buf.device), torch.float64, copy=True)
    dist.all_reduce(work, op=dist.ReduceOp.SUM)
    STATS["seconds"] += time.perf_counter() - t0
    STATS["bytes"] += work.numel() * 8
    STATS["calls"] += 1
    return work.to(buf.device)


def all_gather(obj: Any) -> list:
    """``obj`` of every rank, in rank order (pickled; for small or moderate objects)."""
    import torch.distributed as dist

    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def broadcast(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank."""
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def check_same(what: str, signature: Any, describe: Callable[[Any], str] = repr) -> None:
    """Raise on every rank when ``signature`` is not the same on all ranks.

    Parameters
    ----------
    what : str
        What the signature describes, for the message ("number of features", ...).
    signature : picklable, comparable with ``==``
    describe : callable, optional
        Text of one rank's signature in the message.

    Raises
    ------
    ValueError
        On every rank: the ranks whose signature differs from rank 0's, and both values.
    """
    sigs = all_gather(signature)
    bad = [r for r, s in enumerate(sigs) if s != sigs[0]]
    if bad:
        r = bad[0]
        raise ValueError(f"distributed fit: the {what} differs across ranks: rank {r} has {describe(sigs[r])} "
                         f"but rank 0 has {describe(sigs[0])}" + (f" (ranks {bad} differ)" if len(bad) > 1 else ""))


_PASS_TYPES = (ValueError, TypeError, NotImplementedError, MemoryError)


def agree(step: Callable[[], Any]) -> Any:
    """Run ``step()`` on every rank; if it raises on any rank, raise on all of them.

    Each rank runs ``step`` and then joins one object all-gather of its outcome (an error
    flag with the message). When one or more ranks failed, every rank raises an error
    naming the first failing rank and its message: of the same class when it is a
    ``ValueError``, ``TypeError``, ``NotImplementedError`` or ``MemoryError`` (so callers can
    catch it as usual), a ``RuntimeError`` otherwise; a failing rank chains its own exception.
    """
    err: BaseException | None = None
    result = None
    try:
        result = step()
    except Exception as exc:  # noqa: BLE001 - reported to every rank below
        err = exc
    me = rank()
    passed = type(err) if isinstance(err, _PASS_TYPES) and type(err).__module__ == "builtins" else None
    outcomes = all_gather(None if err is None else (type(err).__name__, str(err), passed))
    failed = [r for r, o in enumerate(outcomes) if o is not None]
    if not failed:
        return result
    r = failed[0]
    name, msg, cls = outcomes[r]
    if me == r and err is not None:
        cls = type(err) if isinstance(err, _PASS_TYPES) else RuntimeError
    cls = cls if isinstance(cls, type) and issubclass(cls, _PASS_TYPES) else RuntimeError
    more = f" (ranks {failed} failed)" if len(failed) > 1 else ""
    raise cls(f"distributed fit: rank {r} raised {name}: {msg}{more}") from err


def raise_failed(flags: torch.Tensor, err: BaseException | None) -> None:
    """Raise on every rank when a reduced per-rank failure flag (``flags[r] > 0``) is set."""
    failed = torch.nonzero(flags > 0).flatten().tolist()
    if not failed:
        return
    r = failed[0]
    detail = f": {type(err).__name__}: {err}" if err is not None and rank() == r else ""
    more = f" (ranks {failed} failed)" if len(failed) > 1 else ""
    raise RuntimeError(f"distributed fit: rank {r} failed during the EM{detail}{more}") from err
