"""Data-parallel EM and greedy selection (``distributed=True``) on 1, 2 and 4 Gloo processes on localhost.

For each data set and number of processes, with the rows split evenly over the processes and
one torch thread per process, the script reports the median of ``--repeats`` runs (3 by
default; per run the slowest process sets the time) of:

* EM: one rank-20 CPD (``init="random"``, ``tol=0`` so that every run does the same number
  of iterations): seconds per iteration (from the EM callback's time stamps, setup
  excluded), bytes all-reduced per iteration by each process (the one flat float64 buffer)
  and the communication share (seconds inside the all-reduce, which includes waiting for the
  slowest process, over the seconds of the iterations);
* greedy selection: JMI in float64, seconds per greedy step as (time of ``k = 1 + steps`` -
  time of ``k = 1``) / steps, so that the setup and the relevance pass cancel, with the bytes
  all-reduced per step and the communication share over the same difference.

It then projects, on paper, the EM iteration to 8-64 GPUs with NCCL from the 1-process cost
per row and the measured all-reduce size (the assumed link bandwidths, latency and GPU
speed-ups are printed with the table; see ``_projection``).

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
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

SETS = {"planted-1Mx100": ((1_000_000, 100, 5, 2), 6), "planted-mnist70k": ("planted-mnist70k", 6)}
SMALL = {"planted-20kx20": ((20_000, 19, 5, 2), 5), "planted-5kx50": ((5_000, 49, 5, 3), 5)}


def _data(shape):
    import numpy as np

    import tensorprob as tp

    d = tp.datasets.make_planted(shape, rank=10, random_state=0)
    return np.column_stack([np.asarray(d.X), np.asarray(d.y)]).astype(np.int8)


def _worker(rank, world, port, shape, n_iter, n_steps, repeats, queue):
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
    steps = []
    Xf, yl = X[lo:hi, :-1], X[lo:hi, -1]
    for _ in range(repeats):
        # seconds per greedy step: JMI with k = 1 + n_steps minus JMI with k = 1 (the relevance pass
        # and the setup cancel), bytes and seconds of all-reduce over the same difference
        out = []
        for k in (1, 1 + n_steps):
            _distributed.reset_stats()
            dist.barrier()
            t0 = time.perf_counter()
            tp.JMI(k=k, discretizer=None, device="cpu", dtype="float64", distributed=True).fit(Xf, yl)
            out.append((time.perf_counter() - t0, _distributed.STATS["seconds"], _distributed.STATS["bytes"]))
        (t1, c1, b1), (t2, c2, b2) = out
        steps.append(((t2 - t1) / n_steps, (b2 - b1) / n_steps, (c2 - c1) / (t2 - t1) if t2 > t1 else float("nan")))
    dist.destroy_process_group()
    queue.put((rank, runs, steps, hi - lo))


def _run(shape, world, n_iter, n_steps, repeats):
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, world, port, shape, n_iter, n_steps, repeats, queue))
             for r in range(world)]
    for p in procs:
        p.start()
    out = {r: rest for r, *rest in (queue.get() for _ in range(world))}
    for p in procs:
        p.join()
    if any(p.exitcode for p in procs):
        raise RuntimeError(f"a worker failed: exit codes {[p.exitcode for p in procs]}")

    def med(which):
        # per repeat, the slowest process sets the time; the median over repeats is reported
        per_repeat = [max((out[r][which][i] for r in range(world)), key=lambda t: t[0]) for i in range(repeats)]
        return tuple(statistics.median(t[k] for t in per_repeat) for k in range(3))

    return med(0), med(1), sum(out[r][2] for r in range(world))


# The projection to many GPUs (printed after the measured tables). Assumptions, all stated in the output:
# * bandwidth: NCCL bus bandwidth of large all-reduces, about 450 GB/s on 8 x H100 SXM over NVLink 4 /
#   NVSwitch (nccl-tests reference figures: 460-480 GB/s busbw) and about 45 GB/s per GPU across nodes
#   on 400 Gb/s InfiniBand NDR (one NIC per GPU; published multi-node busbw is 35-50 GB/s);
#   a ring moves 2 (p - 1) / p of the buffer through each GPU's link;
# * latency: our buffers are < 1 MiB, where NCCL's all-reduce costs tens of microseconds whatever the
#   size: 20 us within a node, plus 2 log2(nodes) x 10 us for the tree across nodes;
# * compute: the measured 1-process CPU seconds per row divided by an assumed GPU speed-up over one CPU
#   core; two values bracket it (100x: gather/scatter bound at a few hundred GB/s; 1000x: the
#   ratio of peak memory bandwidth and FLOP rate of an H100 to one core).
LINKS = (("NVLink", 450e9), ("InfiniBand NDR", 45e9))
NODE_LATENCY_S, TREE_HOP_S = 20e-6, 10e-6
# * a fixed cost per iteration on a GPU, whatever the rows: about 30 eager kernel launches of the E- and
#   M-steps at about 5 us each
GPU_FIXED_S = 150e-6
GPU_SPEEDUPS = (100, 1000)


def _allreduce_seconds(nbytes: float, p: int) -> tuple[str, float]:
    import math

    name, link = LINKS[0] if p <= 8 else LINKS[1]
    latency = NODE_LATENCY_S + (2 * math.log2(p / 8) * TREE_HOP_S if p > 8 else 0.0)
    return name, 2 * (p - 1) / p * nbytes / link + latency


def _per_row_cost(runs: list[tuple[int, float, float, int]]) -> dict:
    """Per data set: (CPU seconds per row and iteration on one core, bytes all-reduced, rows).

    ``runs`` holds (processes, seconds per iteration, bytes, rows) of one data set's rows. A
    run of p processes on this machine's cores spreads the rows over min(p, cores) cores, so
    its cost per row on one core is seconds x min(p, cores) / rows; the lowest over the runs is
    taken (a process whose rows fit ``memory_budget``'s incidence cache is several times faster
    per row than one that rebuilds its chunks at every pass, and a GPU holds them all).
    """
    cores = os.cpu_count() or 1
    best = min(sec * min(p, cores) / n for p, sec, _, n in runs)
    return best, runs[0][2], runs[0][3]


def _projection(measured: dict) -> list[str]:
    lines = ["", "**Projection to 8-64 GPUs with NCCL** (on paper, from the figures above)", "",
             "Model: seconds per EM iteration = fixed + (CPU seconds per row on one core / GPU speed-up) x rows / p "
             "+ all-reduce of the measured buffer: 2 (p - 1) / p x bytes / bandwidth + latency. Assumed: 8 GPUs "
             f"per node; bandwidth {LINKS[0][1] / 1e9:.0f} GB/s within a node (NVLink 4 / NVSwitch, H100 SXM; "
             f"nccl-tests reference busbw 460-480 GB/s) and {LINKS[1][1] / 1e9:.0f} GB/s per GPU across nodes "
             "(400 Gb/s InfiniBand NDR per GPU; published multi-node busbw 35-50 GB/s); latency of a small "
             f"all-reduce {NODE_LATENCY_S * 1e6:.0f} us within a node plus 2 log2(nodes) x "
             f"{TREE_HOP_S * 1e6:.0f} us across nodes (NCCL's tree). GPU speed-up over one CPU core assumed "
             f"{GPU_SPEEDUPS[0]}x and {GPU_SPEEDUPS[1]}x (NOT measured: no GPU was lent to this session; "
             f"`python benchmarks/bench_gpu.py` calibrates it), plus a fixed {GPU_FIXED_S * 1e6:.0f} us per "
             "iteration (about 30 eager kernel launches). Efficiency: the 1-GPU time over p times the p-GPU "
             "time.", "",
             "| data | GPU speed-up | p | rows / GPU | link | compute s / iter | all-reduce s / iter | efficiency |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    rows = []
    for name, runs in measured.items():
        per_row, nbytes, n_rows = _per_row_cost(runs)
        sec_per_iter = per_row * n_rows
        rows.append((name, sec_per_iter, nbytes, n_rows))
        # the same data 100 times taller: the compute grows with the rows, the all-reduce does not
        rows.append((f"{name} x 100 rows (extrapolated)", 100 * sec_per_iter, nbytes, 100 * n_rows))
    for name, sec_per_iter, nbytes, n_rows in rows:
        for speedup in GPU_SPEEDUPS:
            one = sec_per_iter / speedup
            for p in (8, 16, 32, 64):
                link_name, comm = _allreduce_seconds(nbytes, p)
                comp = GPU_FIXED_S + one / p
                lines.append(f"| {name} | {speedup}x | {p} | {n_rows // p:,} | {link_name} | {comp:.2e} | {comm:.2e} | "
                             f"{(GPU_FIXED_S + one) / (p * (comp + comm)):.0%} |")
    return lines


def _read_measured(path: str) -> dict:
    """The measured rows of an earlier output: per data set [(processes, s / iteration, bytes, rows)]."""
    rows_of = {name: (shape[0] if isinstance(shape, tuple) else 70_000) for name, (shape, _) in {**SETS, **SMALL}.items()}
    out: dict = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0] in rows_of and cells[1].isdigit():
            out.setdefault(cells[0], []).append((int(cells[1]), float(cells[2]), float(cells[3]) * 2**20,
                                                 rows_of[cells[0]]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", action="store_true", help="small data, few iterations: checks that the script works")
    ap.add_argument("--procs", default="1,2,4", help="numbers of processes (default 1,2,4)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10, help="greedy steps timed (JMI k = 1 + steps vs k = 1)")
    ap.add_argument("--out", default=None, help="also write the Markdown table here")
    ap.add_argument("--project-from", default=None,
                    help="skip the measurements: redo the projection from the measured table of an earlier output")
    ap.add_argument("--allow-dirty", action="store_true",
                    help="run with uncommitted edits to the library or the scripts (the report lists them)")
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _common import git_state, machine, refuse_dirty

    args.quick = args.small or args.project_from is not None  # a check of the script, or no new measurement
    refuse_dirty(ap, args)
    commit = git_state(__file__)
    sets = SMALL if args.small else SETS
    lines = [f"**Data-parallel EM and selection on torch.distributed (Gloo, localhost)"
             f"{' - small' if args.small else ''}**",
             "", f"machine: {machine()}; python {platform.python_version()}; date: {datetime.date.today()}; "
             f"commit: {commit}; 1 torch thread per process; median of {args.repeats} repeats; per repeat the "
             "slowest process sets the time. EM: rank-20 CPD, init='random', tol=0, rows split evenly. Greedy "
             f"step: JMI (float64), (time of k = {1 + args.steps} - time of k = 1) / {args.steps}. Communication "
             "share: seconds inside the all-reduce (which includes waiting for the slowest process) over the "
             "seconds timed.", "",
             "| data | processes | EM s / iteration | EM MiB all-reduced / iteration / process | EM communication "
             "share | greedy s / step | greedy KiB all-reduced / step / process | greedy communication share |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    print("\n".join(lines), flush=True)
    one_process = {}
    for name, (shape, n_iter) in ({} if args.project_from else sets).items():
        for world in (int(w) for w in args.procs.split(",")):
            (sec, nbytes, share), (gsec, gbytes, gshare), n_rows = _run(shape, world, n_iter, args.steps,
                                                                        args.repeats)
            one_process.setdefault(name, []).append((world, sec, nbytes, n_rows))
            row = (f"| {name} | {world} | {sec:.4f} | {nbytes / 2**20:.3f} | {100 * share:.1f}% | {gsec:.4f} | "
                   f"{gbytes / 2**10:.1f} | {100 * gshare:.1f}% |")
            lines.append(row)
            print(row, flush=True)
    if args.project_from:
        one_process = _read_measured(args.project_from)
        lines = open(args.project_from).read().split("\n**Projection")[0].rstrip("\n").split("\n")
        lines += ["", f"(The projection below was recomputed from these measurements by `--project-from` at commit "
                      f"{commit}.)"]
    if one_process:
        # the all-reduced buffer is the same on every process count
        extra = _projection(one_process)
        lines += extra
        print("\n".join(extra), flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
