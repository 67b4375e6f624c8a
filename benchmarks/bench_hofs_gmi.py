"""Speed of HOFS and GMI (paper 002 / paper 003 settings).

HOFS k=30 on splice, optdigits and the MNIST-5k subset; GMI on MNIST-5k after PCA to 30
components (435 pairs) for n = 100, 300, 500, 2000 training samples (paper 003, Table 1),
and the batched Prim MST against a loop over scipy's minimum_spanning_tree in the same run.
Prints markdown tables and writes CSV under benchmarks/results/. ``--quick``: smaller sizes.
"""
import argparse
import csv
import datetime
import os
import platform
import time

import numpy as np
import torch
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import cdist

from tensorprob import GMI, HOFS
from tensorprob.datasets import load_keel, load_mnist_subset
from tensorprob.estimators._mst import _split_and_permute, batched_mst


def numeric(X):
    try:
        import pandas as pd
        if isinstance(X, pd.DataFrame):
            return np.column_stack([pd.factorize(X[c])[0] if X[c].dtype == object else X[c].to_numpy(float)
                                    for c in X.columns]).astype(float)
    except ImportError:
        pass
    return np.asarray(X, dtype=float)


def devices():
    out = ["cpu"]
    if torch.cuda.is_available():
        out.append("cuda")
    return out


def sync(dev):
    if dev == "cuda":
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1: on a small shared machine more threads oversubscribe)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    rows = []
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    # ---------------- HOFS
    k = 10 if args.quick else 30
    data = []
    for name in ("splice", "optdigits"):
        X, y = load_keel(name)
        data.append((name, numeric(X), np.asarray(y)))
    Xm, ym = load_mnist_subset()
    data.append(("mnist-5k", Xm[:1000] if args.quick else Xm, ym[:1000] if args.quick else ym))
    print(f"\n### HOFS, k={k}\n\n| dataset | samples | features | device | seconds |\n|---|---|---|---|---|")
    for name, X, y in data:
        for dev in devices():
            t = time.perf_counter()
            HOFS(k=k, random_state=0, device=dev).fit(X, y)
            sync(dev)
            s = time.perf_counter() - t
            print(f"| {name} | {X.shape[0]} | {X.shape[1]} | {dev} | {s:.2f} |")
            rows.append({"bench": "hofs", "dataset": name, "n": X.shape[0], "d": X.shape[1], "device": dev, "seconds": s, "k": k})
    # ---------------- GMI on MNIST PCA-30
    sizes = (100, 300, 500) if args.quick else (100, 300, 500, 2000)
    print("\n### GMI on MNIST-5k, PCA to 30 components (435 pairs)\n")
    print("| n train | device | GMI fit s | batched MST s (435 trees) | scipy loop s | same total weight |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in sizes:
        idx = rng.choice(Xm.shape[0], n, replace=False)
        X, y = Xm[idx], ym[idx]
        for dev in devices():
            t = time.perf_counter()
            sel = GMI(k=10, n_components=30, random_state=0, device=dev).fit(X, y)
            sync(dev)
            t_fit = time.perf_counter() - t
            # the same 435 point sets, MST alone: batched Prim vs a loop over scipy
            Z = torch.as_tensor((X - sel.mean_) / sel.scale_ @ sel.components_.T, device=dev)
            Z = Z / Z.std(0)
            g = torch.Generator(device=dev).manual_seed(0)
            Xo, Xp, *_ = _split_and_permute(Z, torch.as_tensor(np.unique(y, return_inverse=True)[1], device=dev), g)
            pairs = torch.triu_indices(30, 30, offset=1, device=dev).T
            pts = torch.cat([Xo[:, pairs].permute(1, 0, 2), Xp[:, pairs].permute(1, 0, 2)], 1)
            t = time.perf_counter()
            _, w = batched_mst(pts)
            sync(dev)
            t_b = time.perf_counter() - t
            P = pts.cpu().numpy()
            t = time.perf_counter()
            tot = []
            for b in range(P.shape[0]):
                D = cdist(P[b], P[b]) + 1.0
                np.fill_diagonal(D, 0.0)
                tot.append(minimum_spanning_tree(D).sum() - (P.shape[1] - 1))
            t_s = time.perf_counter() - t
            same = np.allclose(np.asarray(tot), w.sum(1).cpu().numpy(), atol=1e-6)
            print(f"| {n} | {dev} | {t_fit:.2f} | {t_b:.2f} | {t_s:.2f} | {same} |")
            rows.append({"bench": "gmi", "dataset": "mnist-5k-pca30", "n": n, "d": 30, "device": dev, "seconds": t_fit,
                         "mst_batched": t_b, "mst_scipy_loop": t_s, "k": 10})
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", "hofs_gmi.csv")
    keys = ["bench", "dataset", "n", "d", "device", "seconds", "mst_batched", "mst_scipy_loop", "k"]
    new = not os.path.exists(path)
    with open(path, "a", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=keys + ["date", "machine", "torch", "quick", "threads"])
        if new:
            wr.writeheader()
        for r in rows:
            wr.writerow({**{k_: r.get(k_, "") for k_ in keys}, "date": stamp, "machine": platform.processor() or platform.machine(),
                         "torch": torch.__version__, "quick": args.quick,
                         "threads": torch.get_num_threads()})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
