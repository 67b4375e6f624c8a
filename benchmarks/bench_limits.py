"""Distance to the physical limit of a greedy step on this machine (issue 13): codes read and histogram updates.

    python benchmarks/bench_limits.py [--quick] [--repeats 5] [--datasets chess,mnist,coil20,planted-100k]
        [--methods MIM,MRMR,JMI,CMIM,DISR,ICAP] [--threads 1]

A greedy step of the count-based methods counts, for every remaining candidate c, the table of
(x_c, x_j, class) against the new pick j: it reads M codes per candidate (one byte each, the
codes being int8) and makes M histogram updates per candidate. Its floor on this machine is
therefore

    step_limit = max(M N bytes / read bandwidth, M N updates / scatter-add rate),

with the bandwidth and the rate measured here, in the same process, just before the selections:
the read bandwidth of a 256 MiB sum, and the rate of ``torch.bincount`` on M N indices into the
bins of one candidate's table (a histogram that stays in the L1 cache: the best case of a
scatter-add, which a per-candidate C loop such as FEAST's also has). MIM has no step: its floor is
one pass over the caller's integer array (8 bytes per entry) plus one histogram of all codes.

That is the floor of a histogram step. The CPU counts the tables of small alphabets another
way (``grouped_counts`` in ``tensorprob/counting/_tables.py``): the rows sorted by (x_j, class),
then per run of rows ``I - 1`` SIMD comparisons and byte sums per code, no scattered update at
all. That formulation is bound by the read of the codes alone, so each row also gives the ratio
to the read floor, ``M N bytes / read bandwidth`` (column ``read_ratio``); MIM's read floor is the
caller's int64 array read once.

The measured step is ``(t(k) - t(1)) / (k - 1)``: fits on the coded data with k and with 1
feature, so that the fixed costs (validation, encoding, the first table) cancel. CMIM is eager
here (``lazy=False``) because the limit is the eager step's; the lazy evaluation reads fewer codes
and may run below it. Median of ``--repeats`` warm runs; one table per thread count given.

Writes ``benchmarks/results/limits[_quick][_TAG].csv`` and prints the markdown table. Timings,
not tests.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, markdown

SCRIPT = Script("limits", __doc__)  # one thread by default: caps the pools before NumPy / torch start them

import numpy as np
import torch

import tensorprob as tp

K = {"chess": 36, "planted-100k": 20}
METHODS = {"MIM": tp.MIM, "MRMR": tp.MRMR, "JMI": tp.JMI, "CMIM": lambda k: tp.CMIM(k=k, lazy=False),
           "DISR": tp.DISR, "ICAP": tp.ICAP}


def median_time(fn, repeats: int) -> float:
    fn()  # warm
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def read_bandwidth(repeats: int) -> float:
    """Bytes per second of a sum over 256 MiB (read once, vectorized)."""
    x = torch.ones(2**25, dtype=torch.int64)  # 256 MiB
    return x.numel() * 8 / median_time(lambda: x.sum(), repeats)


def scatter_rate(n: int, bins: int, repeats: int) -> float:
    """Updates per second of ``torch.bincount`` of ``n`` random int64 indices into ``bins`` bins."""
    idx = torch.randint(0, bins, (n,), generator=torch.Generator().manual_seed(0))
    return n / median_time(lambda: torch.bincount(idx, minlength=bins), repeats)


def load(name: str):
    if name == "planted-100k":
        d = tp.datasets.make_planted((100000, 1000, 5, 10), random_state=0)
        return d.X.astype(np.int64), d.y.astype(np.int64)
    if name == "coil20":
        for folder in (os.environ.get("TENSORPROB_DATA", ""),
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data",
                                    "skfeature")):
            path = os.path.join(folder, "COIL20.mat")
            if folder and os.path.exists(path):
                X, y, _ = tp.datasets.load_dataset(path)
                break
        else:
            return None
    else:
        X, y, _ = tp.datasets.load_dataset(name)
    codes = tp.encode(X, discretizer="uniform", n_bins=5).codes.astype(np.int64)
    return codes, tp.encode_labels(y)[0].astype(np.int64)


def main(argv=None):
    ap = SCRIPT.parser(quick="chess and MNIST-5k, MRMR and JMI, 3 repeats", seed=False,
                       repeats_help="warm runs per figure, median (default 5)", repeats=5)
    ap.add_argument("--datasets", default="chess,mnist,coil20,planted-100k")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--note", default="", help="conditions of the run, written in the report (other load, ...)")
    args = SCRIPT.parse(ap, argv)
    names = ["chess", "mnist"] if args.quick else [d for d in args.datasets.split(",") if d]
    methods = ["MRMR", "JMI"] if args.quick else [m for m in args.methods.split(",") if m]
    reps = 3 if args.quick else args.repeats
    print(f"{SCRIPT.header()}\n", flush=True)
    bw = read_bandwidth(reps)
    rows = []
    for name in names:
        data = load(name)
        if data is None:
            print(f"{name}: COIL20.mat not found ($TENSORPROB_DATA or ../shared/data/skfeature): skipped")
            continue
        X, y = data
        M, N = X.shape
        k = min(K.get(name, 50), N)
        cells = 5 * 5 * int(y.max() + 1)  # (x, x_j, class) bins of one candidate
        rate = scatter_rate(M * N, cells, reps)  # the best case: one candidate's histogram, in L1
        step_limit = max(M * N / bw, M * N / rate)
        enc = tp.Encoded(X.astype(np.int8), np.full(N, 5))
        for method in methods:
            make = METHODS[method]
            if method == "MIM":  # no step: the whole fit from the caller's int64 array
                t = median_time(lambda make=make: make(k=k).fit(X, y), reps)
                limit = max(M * N * 8 / bw, M * N / rate)
                rows.append({"data": f"{name} ({M}x{N})", "method": method, "k": k, "threads": args.threads,
                             "measured_ms": 1e3 * t, "limit_ms": 1e3 * limit, "ratio": t / limit,
                             "read_ratio": t / (M * N * 8 / bw), "what": "whole fit from int64 X"})
            else:
                t_k = median_time(lambda make=make: make(k=k).fit(enc, y), reps)
                t_1 = median_time(lambda make=make: make(k=1).fit(enc, y), reps)
                step = (t_k - t_1) / (k - 1)
                rows.append({"data": f"{name} ({M}x{N})", "method": method, "k": k, "threads": args.threads,
                             "measured_ms": 1e3 * step, "limit_ms": 1e3 * step_limit, "ratio": step / step_limit,
                             "read_ratio": step / (M * N / bw), "what": "per greedy step"})
            print(rows[-1], flush=True)
        print(f"  {name}: read {bw / 1e9:.1f} GB/s, bincount {rate / 1e6:.0f} M updates/s "
              f"({'updates' if M * N / rate > M * N / bw else 'bytes'} bound)", flush=True)
        for r in rows:
            if r["data"].startswith(name) and "bandwidth_GBs" not in r:
                r.update(bandwidth_GBs=bw / 1e9, scatter_Mps=rate / 1e6)
    path = SCRIPT.out("limits" + ("_quick" if args.quick else ""))
    from _common import write_csv

    write_csv(path, [{**r, "commit": SCRIPT.commit} for r in rows])
    table = markdown(rows, ["data", "method", "k", "threads", "what", "measured_ms", "limit_ms", "ratio",
                            "read_ratio", "bandwidth_GBs", "scatter_Mps"])
    print(table)
    md = path[:-4] + ".md"
    with open(md, "w") as f:
        f.write(f"{SCRIPT.header()}; median of {reps} warm runs; {args.note}\n\n{table}\n")
    print(f"\nwrote {path} and {md}")


if __name__ == "__main__":
    main()
