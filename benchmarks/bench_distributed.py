"""Data-parallel EM (``distributed=True``) on 1, 2 and 4 Gloo processes on localhost.

For each data set and number of processes the script fits one rank-20 CPD (``init="random"``,
``tol=0`` so that every run does the same number of iterations) with the rows split evenly
over the processes, and reports, as the median of ``--repeats`` runs (3 by default):

* seconds per EM iteration (from the EM callback's time stamps, setup excluded),
* bytes all-reduced per iteration by each process (the one flat float64 buffer),
* the communication share: seconds spent inside the all-reduce over the seconds of the
  iterations (the all-reduce also waits for the slowest process, so imbalance counts here).

Data sets: a planted 1,000,000 x 100 set (5 values per variable) and a planted 70,000 x 785
set (``make_planted("planted-mnist70k")``, the label as the last variable); ``--small`` runs
20,000 x 20 and 5,000 x 50 with few iterations, a check that the script works. The output
(Markdown on stdout, and ``--out`` if given) records the machine, the date and the git commit.

Usage::

    python benchmarks/bench_distributed.py --small
    python benchmarks/bench_distributed.py --out benchmarks/results/distributed.md
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import socket
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

SETS = {"planted-1Mx100": ((1_000_000, 100, 5, 2), 10), "planted-mnist70k": ("planted-mnist70k", 10)}
SMALL = {"planted-20kx20": ((20_000, 19, 5, 2), 5), "planted-5kx50": ((5_000, 49, 5, 3), 5)}


def _data(shape):
    import numpy as np

    import tensorprob as tp

    d = tp.datasets.make_planted(shape, rank=10, random_state=0)
    return np.column_stack([np.asarray(d.X), np.asarray(d.y)]).astype(np.int8)


def _worker(rank, world, port, shape, n_iter, repeats, queue):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(minutes=30))
    import tensorprob as tp
    from tensorprob import _distributed

    X = _data(shape)
    lo, hi = rank * len(X) // world, (rank + 1) * len(X) // world
    cards = X.max(0).astype(int) + 1
    runs = []
    for _ in range(repeats):
        stamps = []
        marks = []

        def callback(it, ll, stamps=stamps, marks=marks):
            stamps.append(time.perf_counter())
            marks.append((_distributed.STATS["seconds"], _distributed.STATS["bytes"]))

        _distributed.reset_stats()
        tp.fit_cpd(X[lo:hi], rank=20, cardinalities=cards, device="cpu", init="random", tol=0.0, n_iter_max=n_iter,
                   random_state=0, callback=callback, distributed=True)
        span = stamps[-1] - stamps[0]
        iters = len(stamps) - 1
        comm = marks[-1][0] - marks[0][0]
        runs.append((span / iters, (marks[-1][1] - marks[0][1]) / iters, comm / span))
    dist.destroy_process_group()
    queue.put((rank, runs))


def _run(shape, world, n_iter, repeats):
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, world, port, shape, n_iter, repeats, queue)) for r in range(world)]
    for p in procs:
        p.start()
    out = dict(queue.get() for _ in range(world))
    for p in procs:
        p.join()
    # per repeat, the slowest process sets the time; the median over repeats is reported
    per_repeat = [max((out[r][i] for r in range(world)), key=lambda t: t[0]) for i in range(repeats)]
    med = lambda k: statistics.median(t[k] for t in per_repeat)  # noqa: E731
    return med(0), med(1), med(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", action="store_true", help="small data, few iterations: checks that the script works")
    ap.add_argument("--procs", default="1,2,4", help="numbers of processes (default 1,2,4)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _common import machine

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    sets = SMALL if args.small else SETS
    lines = [f"# Data-parallel EM on torch.distributed (Gloo, localhost){' - small' if args.small else ''}", "",
             f"machine: {machine()}; python {platform.python_version()}; date: {datetime.date.today()}; "
             f"commit: {commit}; rank 20, init='random', median of {args.repeats} repeats", "",
             "| data | processes | s / iteration | MiB all-reduced / iteration / process | communication share |",
             "| --- | ---: | ---: | ---: | ---: |"]
    print("\n".join(lines), flush=True)
    for name, (shape, n_iter) in sets.items():
        for world in (int(w) for w in args.procs.split(",")):
            sec, nbytes, share = _run(shape, world, n_iter, args.repeats)
            row = f"| {name} | {world} | {sec:.4f} | {nbytes / 2**20:.3f} | {100 * share:.1f}% |"
            lines.append(row)
            print(row, flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
