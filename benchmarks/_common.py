"""Shared helpers of the benchmark scripts: the :class:`Script` scaffold, machine description, timing, tables.

Every script starts with ``SCRIPT = Script("<name>", __doc__)`` *before* importing NumPy or torch: it
reads ``--threads`` from the command line and caps the native thread pools. ``SCRIPT.parser(...)``
gives the shared options, ``SCRIPT.parse(ap)`` applies them, and ``SCRIPT.path`` / ``write_csv`` /
``read_csv`` / ``write_text`` place every output under ``--out-dir`` with the ``_quick`` and
``--tag`` suffixes. ``SCRIPT.commit`` is the one metadata value (``commit``) recorded with results.
"""
from __future__ import annotations

import csv
import math
import os
import platform
import threading
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


BENCH_REPEATS = ("timed runs per row, median reported (default: 1 on CPU; on CUDA 3 when the first run is under "
                 "2 s)")
TP_REPEATS = ("timed runs per tensorprob {}, median reported (default: CPU best of 3 on small data, else 1 run; "
              "CUDA median of 3 when a run is under 2 s)")


def add_cp_apr_ref_args(ap) -> None:
    """``--cp-apr-loglik`` / ``--cp-apr-seconds``: a chess cp_apr reference from an earlier CPU run."""
    ap.add_argument("--cp-apr-loglik", type=float, default=None,
                    help="chess cp_apr log-likelihood per sample from an earlier CPU run (used when cp_apr is "
                         "not run here, for s_to_cp_apr_loglik)")
    ap.add_argument("--cp-apr-seconds", type=float, default=None,
                    help="chess cp_apr seconds from the same earlier CPU run (for speedup_vs_this)")


def add_options(ap, options: dict) -> None:
    """``--<name>`` options from a table ``{name: (default, help[, choices])}``.

    The type is the default's (str for a ``None`` default).
    """
    for name, (default, help_, *choices) in options.items():
        ap.add_argument(f"--{name}", type=str if default is None else type(default), default=default, help=help_,
                        choices=choices[0] if choices else None)


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


def timed_selection(run, device, repeats=None, small: bool = False):
    """:func:`timed` for a selection: CPU best of 3 when ``small`` (else one run), CUDA as :func:`timed`.

    An explicit ``repeats`` gives the median of that many everywhere.
    """
    if repeats is None and not is_cuda(device):
        return timed(run, device, 3 if small else 1, reduce="min")
    return timed(run, device, repeats)


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


def device_table(rows: list[dict], keys: list[str], value: str, devices: list[str]) -> str:
    """Markdown of :func:`pivot`: one row per ``keys``, one ``<device> s`` column per device (after a newline)."""
    return "\n" + markdown(pivot(rows, keys, value, devices), keys + [f"{d} s" for d in devices])


def cross_rows(outer: tuple[str, list], inner: tuple[str, list], columns, cell) -> list[dict]:
    """Table rows for every (outer, inner) pair.

    Each row is ``{outer_name: o, inner_name: i}`` plus ``cell(o, i, c)`` in every column ``c`` of ``columns``.
    """
    (oname, ovals), (iname, ivals) = outer, inner
    return [{oname: o, iname: i, **{c: cell(o, i, c) for c in columns}} for o in ovals for i in ivals]


def report_head(quick: bool, info: list[dict], columns: list[str], settings: str = "tiny settings") -> list[str]:
    """The quick-run warning (with ``quick``, naming its ``settings``) and the ``## Data`` table of a report."""
    out = [f"**Quick smoke run:** {settings}; not a reproduction.", ""] if quick else []
    return out + ["## Data", "", markdown(info, columns), ""]


def load_with_ks(name: str, k_step: int = 10):
    """``(X, y, meta, ks)``: a data set of ``tensorprob.datasets`` and its k grid 10..min(100, N) by ``k_step``."""
    import tensorprob as tp

    X, y, meta = tp.datasets.load_dataset(name)
    return X, y, meta, list(range(10, min(100, meta["n_features"]) + 1, k_step))


def separate_fits(codes, ranks, folds, n_restarts: int = 1, **fit_kw) -> None:
    """What ``select_rank`` batches, one fit at a time: every rank on every training fold (as sample weights).

    ``n_restarts`` is select_rank's (1 by default), so that both sides fit the same models;
    before 2026-11-26 the separate fits took fit_cpd's default of four starts, four times the
    models of the batch, and the tables overstated the batch's advantage.
    """
    import numpy as np

    import tensorprob as tp

    for rk in ranks:
        for tr, _ in folds:
            w = np.zeros(len(codes))
            w[tr] = 1.0
            tp.fit_cpd(codes, rank=rk, sample_weight=w, random_state=0, n_restarts=n_restarts, **fit_kw)


def per_dataset(df, names):
    """``(name, rows of df with that dataset)`` for every name with rows, in the order of ``names``."""
    for name in names:
        d = df[df["dataset"] == name]
        if not d.empty:
            yield name, d


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
    """Write ``rows`` as a CSV (columns sorted), atomically: an interrupted run leaves the old file."""
    from tensorprob._files import atomic_write

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    keys = sorted({k for r in rows for k in r})
    with atomic_write(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def forkserver(preload=("numpy", "torch", "tensorprob")):
    """The ``forkserver`` multiprocessing context, its server preloading ``__main__`` and ``preload``.

    Children forked from that server start in a few milliseconds with the modules already imported but
    with no OpenMP thread pool: forking the benchmark process itself after torch ran a parallel region
    hangs a child that runs one (GNU OpenMP is not fork-safe), which rules out plain ``fork`` for peers
    built on torch (pomegranate) and for tensorprob's own runs at several thread counts.
    """
    import multiprocessing as mp

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", *preload])
    return ctx


def settle_threads(limit: float = 3.0, quiet: float = 0.05) -> float:
    """Wait until every other thread of this process has been asleep for ``quiet`` seconds (at most ``limit``).

    Setting a BLAS library's thread count in a freshly forked child (threadpoolctl's
    ``threadpool_limits``) starts OpenBLAS's worker threads, which spin for about 0.1 s before they
    sleep. On two cores they take the timed thread's core for a whole scheduler tick (4 ms) every
    few calls: chess MIM read 1.2 ms or 5.5 ms by chance, and FEAST's calls the same. Linux only
    (``/proc/self/task``); elsewhere it returns at once. Returns the seconds waited.
    """
    me, t0, calm_since = str(threading.get_native_id()), time.perf_counter(), None
    try:
        while time.perf_counter() - t0 < limit:
            busy = False
            for tid in os.listdir("/proc/self/task"):
                if tid == me:
                    continue
                try:
                    with open(f"/proc/self/task/{tid}/stat") as fh:
                        state = fh.read().rpartition(")")[2].split()[0]
                except OSError:  # the thread ended
                    continue
                busy |= state == "R"
            now = time.perf_counter()
            calm_since = None if busy else (calm_since if calm_since is not None else now)
            if calm_since is not None and now - calm_since >= quiet:
                break
            time.sleep(0.005)
    except OSError:  # no /proc
        pass
    return time.perf_counter() - t0


def warm_heap(nbytes: int = 24 << 20) -> None:
    """Free one ``nbytes`` array in this process, as any process that once held a large array has.

    glibc serves an allocation at or above its mmap threshold (128 KiB at start) with a fresh
    mapping, every page of which faults on first touch, and raises the threshold to the size of
    the largest mapped block freed (up to 32 MiB). A child forked from the forkserver that only
    loads a small ``.npy`` keeps a threshold of about its largest temporary, so every call maps
    and faults its temporaries again: 2,350 page faults (4 ms) per planted-satimage MRMR fit,
    none when the same child had made its data first. Called in every library's child before it
    is timed, so all of them run with the allocator of a process that has handled a large array.
    The block must stay under the 32 MiB cap (a larger one leaves the threshold where it was).
    """
    import numpy as np

    a = np.ones(nbytes, dtype=np.uint8)  # touched, so it is mapped and unmapped for real
    del a


def _finished(out):
    """A call's result; a dict with a callable ``"finish"`` is replaced by what that returns (untimed work such as
    scoring a fitted model)."""
    return out["finish"]() if isinstance(out, dict) and callable(out.get("finish")) else out


#: Most warm calls :func:`measure_in_child` makes to fill ``min_seconds``.
MAX_WARM_CALLS = 1000


def _measured_child(prepare, args, repeats, limit, q, min_seconds=0.0) -> None:
    try:
        run = prepare(*args)  # imports, data, thread caps: not timed
        q.put(("ready",))
        t0 = time.perf_counter()
        out = run()
        first = time.perf_counter() - t0
        q.put(("first", first, _finished(out)))
        warm, spent = [], 0.0
        while first <= limit and repeats and (len(warm) < repeats or (spent < min_seconds
                                                                      and len(warm) < MAX_WARM_CALLS)):
            t0 = time.perf_counter()
            out = run()
            warm.append(time.perf_counter() - t0)
            spent += warm[-1]
        q.put(("ok", _finished(out) if warm else None, first, warm))
        if callable(getattr(run, "close", None)):
            run.close()  # e.g. worker pools: the child leaves through os._exit, without atexit handlers
    except Exception as exc:  # noqa: BLE001 - a peer's failure is a table row, not a crash
        q.put(("error", f"error: {type(exc).__name__}: {exc}"[:200]))


def measure_in_child(prepare, args: tuple, repeats: int, timeout: float, setup_timeout: float = 600.0,
                     ctx=None, min_seconds: float = 0.0) -> dict:
    """Time ``run = prepare(*args)`` in a child process: one first call, then ``repeats`` warm calls.

    With ``min_seconds``, warm calls go on past ``repeats`` until they add up to that many
    seconds (at most :data:`MAX_WARM_CALLS`): a sub-millisecond call's median of 7 still holds
    the warm-up of a fresh child (caches, copy-on-write pages of the forkserver's memory), which
    the same child's later calls do not show (the satimage-shaped MIM: 1.4-1.8 ms over 7 calls,
    about 1.0 ms once warm).

    ``prepare`` (picklable: a module-level function) does the untimed work (imports, loading the data,
    thread caps) and returns the zero-argument ``run``; when ``run`` returns a dict with a callable
    ``"finish"``, the result is what ``finish()`` returns, called after the clock stops; ``run.close()``,
    when it exists, is called at the end. The first call is timed on its own (Numba JIT
    compilation, torch's first use, caches); the warm calls follow in the same process, unless the
    first one took over ``timeout`` seconds. Limits: ``setup_timeout`` for ``prepare``, ``timeout`` for
    the first call, ``timeout`` per warm call after it; a child past a limit is stopped.

    Returns a dict: ``status`` ("ok", "error", "timeout"), ``value`` (the last call's result, or the
    message), ``first`` (seconds), ``warm`` (list of seconds) and ``note``.
    """
    import queue

    ctx = ctx or forkserver()
    q = ctx.Queue()
    p = ctx.Process(target=_measured_child, args=(prepare, args, repeats, timeout, q, min_seconds))
    p.start()
    out = {"status": "timeout", "value": None, "first": float("nan"), "warm": [], "note": ""}
    stage, deadline = "setup", time.perf_counter() + setup_timeout
    try:
        while True:
            try:
                msg = q.get(timeout=0.2)
            except queue.Empty:
                if time.perf_counter() > deadline:
                    limit = {"setup": setup_timeout, "first": timeout}.get(stage, timeout)
                    what = "setup" if stage == "setup" else "first call"
                    out["note"] = (f"timeout ({what} > {limit:g} s)" if stage != "warm" else
                                   f"warm calls over {timeout:g} s each (first call only)")
                    out["status"] = "ok" if stage == "warm" else "timeout"
                    break
                if not p.is_alive():
                    try:
                        msg = q.get(timeout=1.0)
                    except queue.Empty:
                        out.update(status="error", note=f"error: child exited with status {p.exitcode}")
                        break
                else:
                    continue
            if msg[0] == "ready":
                stage, deadline = "first", time.perf_counter() + timeout
            elif msg[0] == "first":
                out.update(first=msg[1], value=msg[2])
                stage, deadline = "warm", time.perf_counter() + timeout * max(repeats, 1) + min_seconds + 5.0
            elif msg[0] == "ok":
                out.update(status="ok", first=msg[2], warm=list(msg[3]))
                if msg[1] is not None:
                    out["value"] = msg[1]
                if not msg[3] and repeats:
                    out["note"] = f"first call over {timeout:g} s: no warm calls"
                break
            else:
                out.update(status="error", value=msg[1], note=msg[1])
                break
    finally:
        if out["status"] != "timeout":
            p.join(timeout=30.0)  # let it close what it opened
        if p.is_alive():
            p.terminate()
        p.join()
    return out


def warm_median(result: dict) -> tuple[float, str]:
    """(median of the warm calls of :func:`measure_in_child`, or NaN; a label such as "median of 3")."""
    import numpy as np

    warm = result.get("warm") or []
    return (float(np.median(warm)) if warm else float("nan")), (f"median of {len(warm)}" if warm else "first only")


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
    """Torch at ``n`` threads, and tensorprob's selectors left at that count (``cpu_threads=None``)."""
    import torch

    import tensorprob as tp

    torch.set_num_threads(int(n))
    tp.set_config(cpu_threads=None)


# what a result depends on: the library, the kernels and the scripts (not their outputs)
_TRACKED_FOR_RESULTS = ("tensorprob", "kernels", "benchmarks", ":(exclude)benchmarks/results",
                        ":(exclude)benchmarks/REPRODUCTIONS.md")


def uncommitted_edits(path: str = __file__) -> list[str]:
    """Files of the library, kernels or scripts that differ from the checkout's commit (tracked or new).

    Empty when the tree is clean, and when there is no ``.git`` beside ``benchmarks/`` (a copy of the
    tree, whose commit ``$TENSORPROB_COMMIT`` names).
    """
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    if os.environ.get("TENSORPROB_COMMIT", "").strip() or not os.path.exists(os.path.join(root, ".git")):
        return []
    try:
        out = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=all", "--",
                              *_TRACKED_FOR_RESULTS],
                             capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return []
    return [ln[3:] for ln in out if ln.strip() and not ln[3:].endswith((".pyc", "/"))]


def refuse_dirty(ap, args) -> None:
    """``ap.error`` when a run that writes results (not ``--quick``, not ``--from-csv``) has uncommitted edits.

    Results must name the commit that produced them; ``--allow-dirty`` runs anyway (a trial: the
    report then lists the edits beside the commit).
    """
    if getattr(args, "quick", False) or getattr(args, "from_csv", False) or getattr(args, "allow_dirty", False):
        return
    dirty = uncommitted_edits()
    if dirty:
        shown = ", ".join(dirty[:6]) + (f" and {len(dirty) - 6} more" if len(dirty) > 6 else "")
        ap.error(f"uncommitted edits to {shown}: results must come from a clean commit (commit or stash them, "
                 "run from a clean clone, or pass --allow-dirty for a trial run whose report lists the edits)")


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
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    dirty = uncommitted_edits(path)
    return head + (f" (with uncommitted edits to {', '.join(dirty)})" if dirty else "")


# ------------------------------------------------------------------ the one scaffold of every script
# metadata keys older result files used for the commit (``--from-csv`` still reads them)
_LEGACY_COMMIT_KEYS = ("commit", "git", "run_commit")


class Script:
    """Arguments, thread caps, result paths, the machine / commit header and CSV checkpoints of one script.

    Parameters
    ----------
    name : str
        Base name of the outputs, e.g. ``"vmi_table3"`` -> ``<out_dir>/vmi_table3[_part][_quick][_tag].csv``.
    doc : str
        The script's module docstring (its first line is the ``--help`` description).
    default_threads : int, default=1
        Threads when neither ``--threads`` nor ``$TENSORPROB_THREADS`` is given (0: leave torch's default).

    Notes
    -----
    The constructor caps OpenMP / OpenBLAS / MKL threads, so it must run before NumPy and torch
    are imported.
    """

    def __init__(self, name: str, doc: str | None, default_threads: int = 1):
        self.name = name
        self.doc = doc or name
        capped = default_threads or _threads_arg()  # a script with torch's default still honours --threads
        self.threads = threads_from_argv(default=default_threads) if capped else 0
        self.args = None
        self.csv = ""
        self._commit = None

    def parser(self, *, quick: str = "", from_csv: bool = False, seed: bool = True, repeats: int | None = None,
               repeats_help: str = "", devices: bool = False, peers: bool | None = None, tag: str = "",
               options: dict | None = None):
        """An ArgumentParser with the shared options.

        Always ``--out-dir``, ``--tag`` and ``--threads``; ``--quick`` when ``quick`` (its help text),
        ``--from-csv`` when ``from_csv``, ``--seed`` when ``seed``, ``--repeats`` when ``repeats`` or
        ``repeats_help`` is given (default ``repeats``), ``--devices`` when ``devices`` and
        ``--no-peers`` when ``peers`` is not None; ``tag`` is the default of ``--tag``; ``options`` adds the
        script's own (see :func:`add_options`).
        """
        import argparse

        ap = argparse.ArgumentParser(description=self.doc.strip().splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        if quick:
            ap.add_argument("--quick", action="store_true", help=quick)
        if from_csv:
            ap.add_argument("--from-csv", action="store_true",
                            help="rebuild the report from the CSV files of an earlier run (in --out-dir)")
        if seed:
            ap.add_argument("--seed", type=int, default=0, help="seed of every random choice (splits, fits, samples)")
        if repeats is not None or repeats_help:
            ap.add_argument("--repeats", type=int, default=repeats, help=repeats_help or "repeats")
        if devices:
            ap.add_argument("--devices", default="auto",
                            help="comma-separated devices: cpu, cuda, cpu,cuda or auto (cpu plus cuda when available)")
        if peers is not None:
            ap.add_argument("--no-peers", action="store_true",
                            help="tensorprob rows only: skip the CPU peer libraries" if peers else
                            "accepted for uniform command lines (this script runs no peers)")
        ap.add_argument("--out-dir", default=RESULTS, help=f"where results go (default {RESULTS})")
        ap.add_argument("--tag", default=tag, help="appended to every output name: --tag cuda writes e.g. x_cuda.csv")
        ap.add_argument("--threads", type=int, default=self.threads,
                        help="torch / BLAS threads (default $TENSORPROB_THREADS or the script's default)")
        ap.add_argument("--allow-dirty", action="store_true",
                        help="run with uncommitted edits to the library or the scripts (a trial: the report lists "
                             "them); without it such a run stops")
        add_options(ap, options or {})
        return ap

    def cli(self, argv=None, **parser_kw):
        """:meth:`parser` (``parser_kw``, kept as ``self.ap`` for ``ap.error``) then :meth:`parse`; returns the args."""
        self.ap = self.parser(**parser_kw)
        return self.parse(self.ap, argv)

    def parse(self, ap, argv=None):
        """Parse, set torch's threads, resolve ``--devices`` (into ``args.device_list``); returns the args."""
        args = ap.parse_args(argv)
        refuse_dirty(ap, args)
        if args.threads:
            set_torch_threads(args.threads)
        if hasattr(args, "devices"):
            args.device_list = devices_or_exit(ap, args.devices)
        self.args = args
        return args

    @property
    def quick(self) -> bool:
        return bool(getattr(self.args, "quick", False))

    def path(self, part: str = "", ext: str = "csv") -> str:
        """``<out_dir>/<name>[_<part>][_quick][_<tag>].<ext>``."""
        return self.out(self.name + (f"_{part}" if part else "") + ("_quick" if self.quick else ""), ext)

    def out(self, base: str, ext: str = "csv") -> str:
        """``<out_dir>/<base>[_<tag>].<ext>``."""
        return out_path(self.args.out_dir, base, self.args.tag, ext)

    @property
    def commit(self) -> str:
        """The checkout that produces the results (see :func:`git_state`; read once)."""
        if self._commit is None:
            self._commit = git_state(__file__)
        return self._commit

    def bench_parser(self, quick: str = "", *, peers: bool = True, repeats_help: str = BENCH_REPEATS):
        """:meth:`parser` of a timing script: ``--quick``, ``--devices``, ``--repeats``, ``--no-peers`` (no ``--seed``)."""
        return self.parser(quick=quick, seed=False, repeats_help=repeats_help, devices=True, peers=peers)

    def start(self, ap, argv=None, warm=None, note="", base=None):
        """Parse (:meth:`parse`), print machine / commit / devices (plus ``note``), warm up CUDA with ``warm``.

        ``note`` and ``base`` may be functions of the parsed args.

        The CSV of :meth:`save` is ``<out_dir>/<base>[_<tag>].csv``; ``base`` (a string, or a function of the
        parsed args) defaults to ``name[_quick]``.
        """
        args = self.parse(ap, argv)
        base = base(args) if callable(base) else base
        note = note(args) if callable(note) else note
        self.csv = self.out(base) if base else self.path()
        print(f"machine: {machine()}\ncommit: {self.commit}\ndevices: {', '.join(args.device_list)}{note}\n",
              flush=True)
        if warm is not None:
            warm_up(args.device_list, warm)
        return args

    def save(self, rows: list[dict]) -> None:
        """Checkpoint: ``rows`` with the device and commit columns (:func:`annotate`) to the CSV of :meth:`start`."""
        write_csv(self.csv, annotate(rows, self.commit))

    def sections(self, name: str, fn, rows: list[dict], failed: list[str], save_rows=None, **row) -> None:
        """``fn(device)`` under :func:`guarded` for every device, saving ``save_rows`` (default ``rows``) after each."""
        for dev in self.args.device_list:
            guarded(name, lambda dev=dev: fn(dev), rows, failed, device=dev, **row)
            self.save(rows if save_rows is None else save_rows())

    def done(self, failed: list[str]) -> None:
        """Say where the CSV went; exit status 1 when a section failed."""
        print(f"\nwrote {self.csv}")
        finish(failed)

    def header(self, recorded: str | None = None) -> str:
        """One line: the command, the machine and the commit (``recorded`` when rebuilding from CSV)."""
        flags = " --quick" if self.quick else ""
        return (f"`python benchmarks/{self.name_of_file()}{flags}` — {machine()}; tensorprob "
                f"{recorded or self.commit}; threads: {self.args.threads}")

    def name_of_file(self) -> str:
        import __main__

        return os.path.basename(getattr(__main__, "__file__", "") or f"{self.name}.py")

    def write_csv(self, part: str, rows) -> str:
        """Write ``rows`` (list of dicts or a DataFrame) to :meth:`path` (a checkpoint: call it as often as useful)."""
        if hasattr(rows, "to_dict"):
            rows = rows.to_dict("records")
        path = self.path(part)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        write_csv(path, list(rows))
        return path

    def read_csv(self, part: str, **kwargs):
        """The DataFrame written by :meth:`write_csv` (``None`` when the file is missing)."""
        import pandas as pd

        path = self.path(part)
        return pd.read_csv(path, **kwargs) if os.path.exists(path) else None

    def merged_rows(self, part: str, new_rows, done) -> list[dict]:
        """The rows of ``part`` kept from earlier runs (data sets not in ``done``) followed by ``new_rows``.

        For scripts whose data sets can run in separate sessions: each run replaces its own
        data sets' rows and keeps the others.
        """
        old = self.read_csv(part, keep_default_na=False)
        old = [] if old is None else [r for r in old.to_dict("records") if r["dataset"] not in done]
        return old + list(new_rows)

    def write_meta(self, rows: list[dict], seconds: float, part: str = "data") -> None:
        """Data-set descriptions plus the run's minutes and ``commit``, for ``--from-csv``."""
        self.write_csv(part, [dict(r, total_minutes=seconds / 60, commit=self.commit) for r in rows])

    def read_meta(self, part: str = "data") -> tuple[list[dict], float, str | None]:
        """(rows without the metadata keys, total seconds, commit recorded by the run) from :meth:`write_meta`."""
        df = self.read_csv(part, keep_default_na=False)
        if df is None:
            raise SystemExit(f"--from-csv: {self.path(part)} does not exist")
        rows = df.to_dict("records")
        commit = next((str(rows[0][k]) for k in _LEGACY_COMMIT_KEYS if rows and rows[0].get(k)), None)
        total = float(rows[0].get("total_minutes") or 0) * 60 if rows else 0.0
        for r in rows:
            for k in (*_LEGACY_COMMIT_KEYS, "total_minutes"):
                r.pop(k, None)
        return rows, total, commit

    def publish(self, text: str) -> None:
        """Write the markdown report (:meth:`write_text`) and print it."""
        self.write_text(text)
        print(text)

    def write_text(self, text: str, ext: str = "md") -> str:
        """Write the report ``text`` to :meth:`path` with extension ``ext``, atomically."""
        from tensorprob._files import atomic_write

        path = self.path("", ext)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with atomic_write(path, "w") as fh:
            fh.write(text)
        return path


def _threads_arg() -> int:
    """``--threads N`` from argv without capping anything (0 when absent): scripts that keep torch's default."""
    import sys

    argv = sys.argv[1:]
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return 0
