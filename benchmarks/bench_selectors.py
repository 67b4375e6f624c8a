"""Selector speed benchmark: the tensorprob selectors no peer implements, and scaling (tensorprob only).

    python benchmarks/bench_selectors.py [--quick]
    python benchmarks/bench_selectors.py --devices cuda --tag cuda   # -> selectors_cuda.csv

The classic criteria (MIM, MIFS, MRMR, JMI, CIFE, CMIM, ICAP, DISR, MRI), their timings against
the peer libraries and the agreement of the selections are in ``bench_peers.py``, the one peer
runner. This script times PDA's AMD^{1,1}, VI-AMD^1 and VMI (naive and pairwise) with k = 50
(or all features when fewer) on MNIST-5k, chess, splice and optdigits (the codes of
``bench_peers.load_codes``), on every device of --devices (default: CPU, plus CUDA when
present); then a scaling table on planted latent class data (JMI, AMD^{1,1}, VMI-pairwise;
5 values per feature, 10 classes). Every figure is measured as in ``bench_peers.py``: in a
child process of the shared forkserver, the first call on its own, then the median of
``--repeats`` warm calls (3; 1 with --quick), at ``--threads`` threads (default: torch's).
Prints markdown tables, writes CSV and markdown.
"""
from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, device_table, forkserver, guarded, markdown

SCRIPT = Script("selectors", __doc__, default_threads=0)  # torch's default threads unless --threads

import numpy as np
import torch
from bench_peers import Skip, load_codes, measure_selection, save_data

import tensorprob as tp

warnings.simplefilter("ignore")

OURS = [("AMD^{1,1}", "pda", (("distribution", "amd"), ("k1", 1), ("k2", 1))),
        ("VI-AMD^1", "pda", (("distribution", "amd"), ("framework", "vi"), ("k1", 1))),
        ("VMI-naive", "vmi", (("q", "naive"),)), ("VMI-pairwise", "vmi", (("q", "pairwise"),))]
SCALING = [("JMI", "jmi", ()), OURS[0], OURS[3]]
DATASETS = ["mnist", "chess", "splice", "optdigits"]


def main(argv=None):
    ap = SCRIPT.bench_parser("a 1,000-row MNIST-5k subset, k=20, one warm run, small scaling table", peers=False,
                             repeats_help="warm runs per figure, median reported (default 3; 1 with --quick)")
    ap.add_argument("--datasets", help=f"comma-separated data sets (default {','.join(DATASETS)})")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds a first call, and each warm call, may take")
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling tables")
    args = SCRIPT.start(ap, argv, None, " (classic criteria and peers: bench_peers.py)",
                        base=lambda a: "selectors_partial" if a.no_scaling else None)
    devices, q = args.device_list, args.quick
    repeats = args.repeats if args.repeats is not None else (1 if q else 3)
    threads = args.threads or torch.get_num_threads()
    ctx = forkserver()
    rows, scale, failed = [], [], []  # selector rows, scaling rows, failed sections

    def save():
        SCRIPT.save(rows + scale)

    def measure(label, method, opts, stem, k, dev):
        r = measure_selection("tensorprob", method, opts, stem, k, threads, dev, repeats, args.timeout, ctx)
        return {"method": label, "k": k, "device": dev, "threads": threads, "seconds": r["s"],
                "first s": r["first s"], "timing": r["timing"], "note": r["note"],
                "first": " ".join(map(str, (r["picks"] or [])[:5]))}

    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench_selectors_") as tmp:
        names = args.datasets.split(",") if args.datasets else ["mnist"] if q else DATASETS
        for name in names:
            try:
                X, y, label = load_codes(name, 1000 if q else None)
            except Skip as exc:
                print(f"skipping {exc}", flush=True)
                continue
            k = min(20 if q else 50, X.shape[1])
            stem = save_data(tmp, name, X, y)

            def one_dataset(label=label, stem=stem, k=k):
                for mlabel, method, opts in OURS:
                    for dev in devices:
                        rows.append({"section": "selectors", "data": label,
                                     **measure(mlabel, method, opts, stem, k, dev)})

            guarded("selectors", one_dataset, rows, failed, data=label)
            save()
        table = markdown(rows, ["data", "k", "method", "device", "threads", "seconds", "first s", "timing", "note",
                                "first"])
        print(table)
        if len(devices) > 1:
            print(device_table(rows, ["data", "k", "method"], "seconds", devices))
        if not args.no_scaling:
            ns = [1000, 2000] if q else [5000, 20000, 70000]
            fs = [50, 100] if q else [100, 300, 1000]

            def scaling():
                width, depth = (100, 1000) if q else (784, 5000)
                for axis, n, f, seed in ([("samples", n, width, 0) for n in ns]
                                         + [("features", depth, f, 1) for f in fs]):
                    s = tp.datasets.make_latent_class(n, [5] * f + [10], 10, random_state=seed)
                    stem = save_data(tmp, f"scale_{n}_{f}", s.X[:, :f].astype(np.uint8), s.X[:, f].astype(np.int64))
                    for label, method, opts in SCALING:
                        for dev in devices:
                            scale.append({"section": "scaling", "axis": axis, "n_samples": n, "n_features": f,
                                          **measure(label, method, opts, stem, 10, dev)})

            guarded("scaling", scaling, scale, failed)
            save()
            scale_table = markdown(scale, ["axis", "n_samples", "n_features", "method", "k", "device", "threads",
                                           "seconds", "first s", "timing", "note"])
            print("\n" + scale_table)
            table += "\n\n## Scaling (planted latent class data, k = 10)\n\n" + scale_table
            if len(devices) > 1:
                print(device_table(scale, ["axis", "n_samples", "n_features", "method"], "seconds", devices))
    save()
    SCRIPT.write_text(f"{SCRIPT.header()}; warm runs per figure: {repeats} (median)\n\n" + table + "\n")
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
