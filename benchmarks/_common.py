"""Shared helpers of the benchmark scripts: machine description, timing, markdown tables."""
from __future__ import annotations

import csv
import math
import os
import platform
import time
from datetime import date

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _cpu_name() -> str:
    cpu = platform.processor() or platform.machine() or "cpu"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


def is_cuda(device) -> bool:
    return str(device).startswith("cuda")


def device_info(device="cpu") -> dict:
    """Fields describing where a row ran: gpu, gpu_memory_gib, torch, cuda, cpu, cores, threads, date.

    ``gpu``, ``gpu_memory_gib`` and ``cuda`` (``torch.version.cuda``) are filled for CUDA devices
    only and left empty for CPU rows.
    """
    import torch

    info = {"gpu": "", "gpu_memory_gib": "", "torch": torch.__version__, "cuda": "", "cpu": _cpu_name(),
            "cores": os.cpu_count(), "threads": torch.get_num_threads(), "date": date.today().isoformat()}
    if is_cuda(device) and torch.cuda.is_available():
        idx = torch.device(device).index
        idx = torch.cuda.current_device() if idx is None else idx
        props = torch.cuda.get_device_properties(idx)
        info.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1), cuda=torch.version.cuda or "")
    return info


def machine() -> str:
    """One line describing the machine: CPU, cores, torch and threads, the GPU (when CUDA is available), date."""
    import torch

    info = device_info("cuda" if torch.cuda.is_available() else "cpu")
    gpu = (f", {info['gpu']} ({info['gpu_memory_gib']:g} GiB, CUDA {info['cuda']})"
           if info["gpu"] else ", no CUDA device")
    return (f"{info['cpu']}, {info['cores']} cores, torch {info['torch']} ({info['threads']} threads){gpu}, "
            f"{info['date']}")


def parse_devices(arg: str = "auto") -> list[str]:
    """``"cpu,cuda"`` / ``"cuda"`` / ``"cpu"`` / ``"auto"`` -> list of device strings.

    ``"auto"`` is ``["cpu"]`` plus ``"cuda"`` when CUDA is available. ``cuda:N`` is accepted.
    Raises ValueError (with a plain message) when CUDA is asked for and not available.
    """
    import torch

    out: list[str] = []
    for item in (a.strip().lower() for a in str(arg).split(",")):
        if not item:
            continue
        if item == "auto":
            new = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
        elif item == "cpu" or item == "cuda" or (item.startswith("cuda:") and item[5:].isdigit()):
            new = [item]
        else:
            raise ValueError(f"--devices: unknown device {item!r}; use a comma-separated list of cpu, cuda, "
                             "cuda:N, or auto")
        for dev in new:
            if is_cuda(dev):
                if not torch.cuda.is_available():
                    raise ValueError(f"--devices asks for {dev!r} but CUDA is not available on this machine "
                                     f"(torch {torch.__version__}, torch.cuda.is_available() is False); "
                                     "use --devices cpu or --devices auto")
                if ":" in dev and int(dev[5:]) >= torch.cuda.device_count():
                    raise ValueError(f"--devices asks for {dev!r} but only {torch.cuda.device_count()} CUDA "
                                     "device(s) are present")
            if dev not in out:
                out.append(dev)
    if not out:
        raise ValueError(f"--devices: no device in {arg!r}")
    return out


def add_common_args(ap, peers: bool = True, repeats_help: str = "") -> None:
    """The options every benchmark script shares: --devices, --out-dir, --tag, --repeats, --no-peers."""
    ap.add_argument("--devices", default="auto",
                    help="comma-separated devices: cpu, cuda, cpu,cuda or auto (cpu plus cuda when available)")
    ap.add_argument("--out-dir", default=RESULTS, help=f"where the CSV goes (default {RESULTS})")
    ap.add_argument("--tag", default="", help="appended to the CSV file name: --tag cuda writes e.g. gsm_cuda.csv")
    ap.add_argument("--repeats", type=int, default=None,
                    help=repeats_help or "timed runs per row, median reported (default: 1 on CPU; on CUDA 3 "
                                         "when the first run is under 2 s)")
    ap.add_argument("--no-peers", action="store_true",
                    help="tensorprob rows only: skip the CPU peer libraries" if peers else
                    "accepted for uniform command lines (this script runs no peers)")


def devices_or_exit(ap, arg: str) -> list[str]:
    """:func:`parse_devices`, turning its ValueError into an argparse error (exit status 2)."""
    try:
        return parse_devices(arg)
    except ValueError as exc:
        ap.error(str(exc))


def out_path(out_dir: str, base: str, tag: str = "", ext: str = "csv") -> str:
    """``<out_dir>/<base>[_<tag>].<ext>``."""
    tag = tag.strip().lstrip("_")
    return os.path.join(out_dir, f"{base}_{tag}.{ext}" if tag else f"{base}.{ext}")


def timed(fn, device, repeats=None, under: float = 2.0, reduce: str = "median"):
    """Time ``fn()`` on ``device`` (synchronizing CUDA before each clock read).

    Returns (seconds, result of the last run, label such as "median of 3"). ``repeats=None``: one
    run on the CPU; on CUDA three when the first run took under ``under`` seconds. ``reduce`` is
    "median" or "min" (best of).
    """
    import numpy as np

    times, out = [], None
    n = 1 if repeats is None else max(1, int(repeats))
    i = 0
    while i < n:
        sync(device)
        t0 = time.perf_counter()
        out = fn()
        sync(device)
        times.append(time.perf_counter() - t0)
        if i == 0 and repeats is None and is_cuda(device) and times[0] < under:
            n = 3
        i += 1
    secs = float(np.min(times) if reduce == "min" else np.median(times))
    label = "1 run" if len(times) == 1 else f"{'best' if reduce == 'min' else 'median'} of {len(times)}"
    return secs, out, label


def warm_up(devices, fn) -> None:
    """Run ``fn(device)`` once on every CUDA device (context creation, kernel loading) and report the time.

    A failure is printed and the script goes on (the timed sections report their own errors).
    """
    import traceback

    for dev in devices:
        if is_cuda(dev):
            t0 = time.perf_counter()
            try:
                sync(dev)
                fn(dev)
                sync(dev)
            except Exception as exc:  # noqa: BLE001 - the timed runs will show the error as rows
                traceback.print_exc()
                print(f"{dev} warm-up failed: {type(exc).__name__}: {exc}", flush=True)
                continue
            print(f"{dev} warm-up: {time.perf_counter() - t0:.2f} s (not in the tables)", flush=True)


def have(module: str) -> bool:
    """Whether ``module`` imports here (any failure, not only ImportError, counts as missing)."""
    import importlib

    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001 - a peer that cannot load is a skipped row, not a crash
        return False
    return True


def guarded(name: str, fn, rows: list[dict], failed: list[str], **row) -> None:
    """Run one benchmark section; on an exception print the traceback, add an error row and go on.

    On a rented GPU an error in one section should not cost the others: the script ends with
    exit status 1 after writing what it measured (see :func:`finish`).
    """
    import traceback

    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - reported as a row and in the exit status
        traceback.print_exc()
        print(f"section {name!r} failed: {type(exc).__name__}: {exc}", flush=True)
        rows.append({"section": name, **row, "note": f"error: {type(exc).__name__}: {exc}"[:200]})
        failed.append(name)


def finish(failed: list[str]) -> None:
    if failed:
        print(f"\nsections that failed: {', '.join(failed)}", flush=True)
        raise SystemExit(1)


def annotate(rows: list[dict], commit: str, default_device: str = "cpu") -> list[dict]:
    """Give every row a ``device`` column (``default_device`` where missing), the :func:`device_info` fields of
    that device and ``commit``; returns ``rows`` (changed in place)."""
    cache: dict = {}
    for r in rows:
        dev = r.get("device") or default_device
        if dev not in cache:
            cache[dev] = device_info(dev)
        r["device"] = dev
        for key, value in cache[dev].items():
            r.setdefault(key, value)
        r["commit"] = commit
    return rows


def pivot(rows: list[dict], keys: list[str], value: str, devices: list[str], suffix: str = " s") -> list[dict]:
    """Long rows (one per device) -> one row per ``keys`` with a ``<device><suffix>`` column per device."""
    out: dict = {}
    for r in rows:
        if r.get("device") not in devices or value not in r:
            continue
        k = tuple(r.get(c, "") for c in keys)
        out.setdefault(k, dict(zip(keys, k)))[f"{r['device']}{suffix}"] = r[value]
    return list(out.values())


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
        if math.isnan(v):
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


def git_state(path: str = __file__) -> str:
    """``<commit>`` of the checkout holding ``path``, plus a note when the library has uncommitted edits.

    ``$TENSORPROB_COMMIT``, when set, is returned as is (for copies of the tree without ``.git``, such as
    the one on a rented GPU machine); without it and without a ``.git`` beside ``benchmarks/`` the
    answer is "unknown commit" (a parent directory's repository is never consulted).
    """
    import subprocess

    env = os.environ.get("TENSORPROB_COMMIT", "").strip()
    if env:
        return env
    root = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    if not os.path.exists(os.path.join(root, ".git")):
        return "unknown commit"
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "tensorprob"], capture_output=True,
                               text=True, check=True).stdout.split("\n")
        dirty = [ln[3:] for ln in dirty if ln.strip()]
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return head + (f" (with uncommitted edits to {', '.join(dirty)})" if dirty else "")
