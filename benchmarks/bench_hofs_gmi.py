"""Speed of HOFS and GMI (paper 002 / paper 003 settings).

HOFS k=30 on splice, optdigits and the MNIST-5k subset; GMI on MNIST-5k after PCA to 30
components (435 pairs) for n = 100, 300, 500, 2000 training samples (paper 003, Table 1),
and the batched Prim MST against a loop over scipy's minimum_spanning_tree in the same run,
on every device of --devices (default: CPU, plus CUDA when available).

The full scipy loop (a CPU program; 6 minutes for n = 2000 on a small machine) runs once per
size, beside the CPU rows (beside the first device when the CPU is not measured); other
devices' batched MSTs are checked against scipy on --mst-check trees, and --no-peers skips
the full loop everywhere (the check on --mst-check trees stays).

    python benchmarks/bench_hofs_gmi.py [--quick]
    python benchmarks/bench_hofs_gmi.py --devices cuda --no-peers --tag cuda   # -> hofs_gmi_cuda.csv

Prints markdown tables and writes benchmarks/results/hofs_gmi[_quick][_TAG].csv. ``--quick``: smaller sizes.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import BENCH_REPEATS, Script, device_table, sync, timed

SCRIPT = Script("hofs_gmi", __doc__)  # one thread by default: caps the pools before NumPy / torch start them

import numpy as np
import torch
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import cdist
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from tensorprob import GMI, HOFS
from tensorprob.datasets import load_keel, load_mnist_subset
from tensorprob.encoding import to_numeric
from tensorprob.information import batched_mst, split_and_permute


def scipy_mst_totals(P: np.ndarray) -> np.ndarray:
    """Total MST weight of every point set P[b] by scipy (the +1 shift keeps zero distances as edges)."""
    tot = []
    for b in range(P.shape[0]):
        D = cdist(P[b], P[b]) + 1.0
        np.fill_diagonal(D, 0.0)
        tot.append(minimum_spanning_tree(D).sum() - (P.shape[1] - 1))
    return np.asarray(tot)


def gmi_pipeline(n_components, k, dev):
    """Standardize, PCA, then GMI on the components (GMI standardizes its inputs again)."""
    return make_pipeline(StandardScaler(), PCA(n_components=n_components, random_state=0),
                         GMI(k=k, random_state=0, device=dev))


def mst_points(X, y, pipe, dev):
    """The (pair of PCA components) point sets of GMI, original half stacked on the permuted half."""
    sel = pipe[-1]
    Z = torch.as_tensor((pipe[:-1].transform(X) - sel.mean_) / sel.scale_, device=dev)
    g = torch.Generator(device=dev).manual_seed(0)
    Xo, Xp, *_ = split_and_permute(Z, torch.as_tensor(np.unique(y, return_inverse=True)[1], device=dev), g)
    pairs = torch.triu_indices(Z.shape[1], Z.shape[1], offset=1, device=dev).T
    return torch.cat([Xo[:, pairs].permute(1, 0, 2), Xp[:, pairs].permute(1, 0, 2)], 1)


def warm(dev):
    """Tiny HOFS, GMI and batched MST runs on ``dev`` (CUDA context and kernel loading out of the timings)."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 12)), rng.integers(0, 3, 200)
    HOFS(k=3, random_state=0, device=dev).fit(X, y)
    pipe = gmi_pipeline(6, 3, dev).fit(X, y)
    batched_mst(mst_points(X, y, pipe, dev))


def main(argv=None):
    ap = SCRIPT.bench_parser("smaller sizes", repeats_help=BENCH_REPEATS + "; the scipy loop always runs once")
    ap.add_argument("--mst-check", type=int, default=20,
                    help="trees checked against scipy where the full scipy loop does not run")
    args = SCRIPT.start(ap, argv, warm,
                        lambda a: f"; full scipy MST loop: {'no (--no-peers)' if a.no_peers else 'yes'}")
    devices = args.device_list
    rows: list[dict] = []
    failed: list[str] = []

    def save_rows():
        return [dict(r, quick=args.quick) for r in rows]

    # ---------------- HOFS
    k = 10 if args.quick else 30
    data = []
    for name in ("splice", "optdigits"):
        X, y = load_keel(name)
        data.append((name, to_numeric(X), np.asarray(y)))
    Xm, ym = load_mnist_subset()
    data.append(("mnist-5k", Xm[:1000] if args.quick else Xm, ym[:1000] if args.quick else ym))
    print(f"\n### HOFS, k={k}\n\n| dataset | samples | features | device | seconds | timing |\n"
          "|---|---|---|---|---|---|", flush=True)

    def hofs(name, X, y, dev):
        s, _, label = timed(lambda: HOFS(k=k, random_state=0, device=dev).fit(X, y), dev, args.repeats)
        print(f"| {name} | {X.shape[0]} | {X.shape[1]} | {dev} | {s:.2f} | {label} |", flush=True)
        rows.append({"bench": "hofs", "dataset": name, "n": X.shape[0], "d": X.shape[1], "device": dev, "seconds": s,
                     "k": k, "timing": label})

    for name, X, y in data:
        SCRIPT.sections("hofs", lambda dev, name=name, X=X, y=y: hofs(name, X, y, dev), rows, failed, save_rows,
                        bench="hofs", dataset=name)
    # ---------------- GMI on MNIST PCA-30
    sizes = (100, 300, 500) if args.quick else (100, 300, 500, 2000)
    full_loop_dev = None if args.no_peers else ("cpu" if "cpu" in devices else devices[0])
    print("\n### GMI on MNIST-5k, PCA to 30 components (435 pairs)\n")
    print("| n train | device | GMI fit s | batched MST s (435 trees) | scipy loop s | trees checked "
          "| same total weight |")
    print("|---|---|---|---|---|---|---|", flush=True)
    rng = np.random.default_rng(0)

    def gmi(n, X, y, dev):
        t_fit, sel, label = timed(lambda: gmi_pipeline(30, 10, dev).fit(X, y), dev,
                                  args.repeats)
        # the same 435 point sets, MST alone: batched Prim vs a loop over scipy
        pts = mst_points(X, y, sel, dev)
        sync(dev)
        t_b, (_, w), label_b = timed(lambda: batched_mst(pts), dev, args.repeats)
        P = pts.cpu().numpy()
        totals = w.sum(1).cpu().numpy()
        if dev == full_loop_dev:
            with_loop = True
            t = time.perf_counter()
            tot = scipy_mst_totals(P)
            t_s = time.perf_counter() - t
        else:
            with_loop = False
            idx = np.linspace(0, P.shape[0] - 1, min(args.mst_check, P.shape[0])).round().astype(int)
            tot, t_s, P, totals = scipy_mst_totals(P[idx]), float("nan"), P[idx], totals[idx]
        same = bool(np.allclose(tot, totals, atol=1e-6 if w.dtype == torch.float64 else 1e-3 * max(1.0, totals.max())))
        print(f"| {n} | {dev} | {t_fit:.2f} | {t_b:.2f} | {t_s:.2f} | {P.shape[0]} | {same} |", flush=True)
        rows.append({"bench": "gmi", "dataset": "mnist-5k-pca30", "n": n, "d": 30, "device": dev, "seconds": t_fit,
                     "timing": label, "mst_batched": t_b, "mst_batched_timing": label_b, "mst_scipy_loop": t_s,
                     "mst_trees_checked": P.shape[0], "mst_same_total_weight": same, "mst_dtype": str(w.dtype)[6:],
                     "k": 10, "note": "" if with_loop else "scipy loop not run here"})

    for n in sizes:
        idx = rng.choice(Xm.shape[0], n, replace=False)
        X, y = Xm[idx], ym[idx]
        SCRIPT.sections("gmi", lambda dev, n=n, X=X, y=y: gmi(n, X, y, dev), rows, failed, save_rows, bench="gmi", n=n)
    if len(devices) > 1:
        print(device_table(rows, ["bench", "dataset", "n"], "seconds", devices))
    SCRIPT.save(save_rows())
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
