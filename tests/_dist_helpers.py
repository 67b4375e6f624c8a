"""Run a function on several Gloo processes on localhost (tests of ``distributed=True``)."""
from __future__ import annotations

import datetime
import os
import socket
import traceback

import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, fn, args, queue) -> None:
    import torch
    import torch.distributed as dist

    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        queue.put((rank, "ok", fn(rank, world, *args)))
    except BaseException as exc:  # noqa: BLE001 - the test reads it
        queue.put((rank, "error", (type(exc).__name__, str(exc), traceback.format_exc())))
    finally:
        dist.destroy_process_group()


def run_ranks(fn, world: int = 2, args: tuple = (), timeout: float = 120.0) -> list:
    """``fn(rank, world, *args)`` on ``world`` spawned processes; per rank ("ok", result) or ("error", info)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, fn, args, queue)) for r in range(world)]
    for p in procs:
        p.start()
    out = {}
    try:
        for _ in range(world):
            r, status, value = queue.get(timeout=timeout)
            out[r] = (status, value)
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    return [out[r] for r in range(world)]
