"""Shared helpers of the benchmark scripts: machine description, timing, markdown tables."""
from __future__ import annotations

import csv
import os
import platform
import time
from datetime import date


def machine() -> str:
    import torch

    cpu = platform.processor() or "cpu"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    gpu = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return (f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} ({torch.get_num_threads()} threads){gpu}, "
            f"{date.today().isoformat()}")


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


def sync(device) -> None:
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def markdown(rows: list[dict], columns: list[str]) -> str:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        out.append("| " + " | ".join(_fmt(r.get(c, "")) for c in columns) + " |")
    return "\n".join(out)


def _fmt(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "n/a"
        return f"{v:.4g}" if abs(v) < 1e4 else f"{v:.1f}"
    return str(v)


def write_csv(path: str, rows: list[dict]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    keys = sorted({k for r in rows for k in r})
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def _timed_child(fn, args, q) -> None:
    try:
        t0 = time.perf_counter()
        value = fn(*args)
        q.put(("ok", value, time.perf_counter() - t0))
    except Exception as exc:  # noqa: BLE001 - a peer's failure is a table row, not a crash
        q.put(("error", f"error: {type(exc).__name__}: {exc}"[:100], float("nan")))


def call_with_timeout(fn, args: tuple, timeout: float):
    """Run ``fn(*args)`` in a forked process; returns (status, value or message, seconds inside the child).

    status is "ok", "error" (value is the message) or "timeout".
    """
    import multiprocessing as mp
    import queue

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_timed_child, args=(fn, args, q))
    p.start()
    try:
        out = q.get(timeout=timeout)  # read before join: a large result would block the child's exit
    except queue.Empty:
        out = ("timeout", f"timeout (> {timeout:g} s)", float("nan"))
    if p.is_alive():
        p.terminate()
    p.join()
    return out


def threads_from_argv(argv=None, default: int = 1) -> int:
    """Read ``--threads N`` (else $TENSORPROB_THREADS, else ``default``) and cap the native thread pools.

    Call before NumPy / torch are imported: OpenMP / OpenBLAS / MKL read these variables once at
    start-up. Call :func:`set_torch_threads` after importing torch.
    """
    import sys

    argv = sys.argv[1:] if argv is None else argv
    n = os.environ.get("TENSORPROB_THREADS", str(default))
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            n = argv[i + 1]
        elif a.startswith("--threads="):
            n = a.split("=", 1)[1]
    n = str(max(1, int(n)))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = n
    return int(n)


def set_torch_threads(n: int) -> None:
    import torch

    torch.set_num_threads(int(n))


def git_state(path: str) -> str:
    """``<commit>`` of the checkout holding ``path``, plus a note when the library has uncommitted edits."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "tensorprob"], capture_output=True,
                               text=True, check=True).stdout.split("\n")
        dirty = [ln[3:] for ln in dirty if ln.strip()]
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return head + (f" (with uncommitted edits to {', '.join(dirty)})" if dirty else "")
