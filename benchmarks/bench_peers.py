"""Peer benchmark: tensorprob's selectors against the PyPI peers (speed and agreement), same codes.

    python benchmarks/bench_peers.py [--quick] [--timeout 60] [--datasets wine,chess,...] [--cp-apr-iters 200]
    python benchmarks/bench_peers.py --devices cuda --no-peers --tag cuda   # tensorprob CUDA rows only

Every dataset is discretized once (5 equal-width bins, ``tensorprob.encode``) and the same
integer codes go to tensorprob (on every device of --devices: CPU, plus CUDA when present)
and to each peer: skfeature-chappers, ITMO_FS and mrmr_selection (each peer run on the CPU
in a forked subprocess with a time limit; --no-peers skips them, a peer that is not
installed gives a "skipped" row). For every pair the table gives both times (tensorprob on
the CPU) and the agreement of the two ordered selections: the common prefix (how many first
picks are identical) and the overlap |A & B| / k of the sets. A second table gives
tensorprob's seconds per device.

The peers' definitions, read from their source, decide which tensorprob criterion a peer
is compared with, and the ``same definition`` column says whether the comparison is exact:

* skfeature ``MRMR`` is LCSI with a fixed beta = 0.8, gamma = 0 (not the 1/|S| of mRMR):
  compared with ``MIFS(beta=0.8)``; skfeature ``JMI`` is LCSI with beta = 0.8, gamma = 0.5
  (not 1/|S|): compared with JMI, definitions differ; skfeature ``ICAP`` computes the CMIM
  update (no clipping at 0): compared with CMIM; skfeature ``DISR`` divides the summed
  normalized joint MI by sum_j (1 + I(f; f_j)): definitions differ.
* ITMO_FS's criteria follow Brown et al. (2012) except ICAP, which clips the summed
  redundancy term once instead of every term.
* mrmr_selection's ``mrmr_classif`` is an F-statistic / Pearson mRMR (not an MI method):
  a speed reference; its agreement with MRMR is shown for information only.

Then the CPD fit against pyttb's ``cp_apr`` on chess (the KEEL kr-vs-kp table as a sparse
count tensor, rank 10): seconds and log-likelihood per sample.
"""
from __future__ import annotations

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (
    TP_REPEATS,
    Script,
    add_cp_apr_ref_args,
    call_with_timeout,
    device_table,
    guarded,
    have,
    machine,
    markdown,
    timed_selection,
)

SCRIPT = Script("peers", __doc__, default_threads=0)  # torch's default threads unless --threads

import numpy as np

import tensorprob as tp
from tensorprob.evaluation import selection_agreement

warnings.simplefilter("ignore")

# (peer library, peer method, tensorprob method, tensorprob options, definition note; "" = same definition)
_JMI_NOTE = "skfeature: fixed beta 0.8, gamma 0.5 instead of 1/|S|"
_DISR_NOTE = "skfeature divides the DISR sum by sum(1 + I(f; f_j))"
_ICAP_NOTE = "ITMO_FS clips the summed term, max(0, sum(...)), not sum(max(0, ...))"
_B5, _B8 = {"beta": 0.5}, {"beta": 0.8}
PAIRS = [("skfeature", peer, ours, opts, note) for peer, ours, opts, note in (
    ("MIM", "mim", {}, ""), ("MIFS", "mifs", _B5, ""), ("MRMR", "mifs", _B8, ""), ("JMI", "jmi", {}, _JMI_NOTE),
    ("CIFE", "cife", {}, ""), ("CMIM", "cmim", {}, ""), ("ICAP", "cmim", {}, ""), ("DISR", "disr", {}, _DISR_NOTE))]
PAIRS += [("ITMO_FS", peer, ours, opts, _ICAP_NOTE if peer == "ICAP" else "") for peer, ours, opts in (
    ("MIM", "mim", {}), ("MIFS", "mifs", _B5), ("MRMR", "mrmr", {}), ("JMI", "jmi", {}), ("CIFE", "cife", {}),
    ("CMIM", "cmim", {}), ("ICAP", "icap", {}), ("MRI", "mri", {}))]
PAIRS += [("mrmr_selection", "mrmr_classif", "mrmr", {}, "F-statistic / Pearson mRMR, not MI")]
# skfeature's LCSI family as (beta, gamma), from its wrappers' source. The wrappers themselves
# (MIM.mim, MIFS.mifs, ...) return the rank transform of the picks even with mode="index" in
# skfeature-chappers 1.2.1 (they call lcsi in its default "rank" mode), so we call lcsi directly.
_LCSI = {"MIM": (0.0, 0.0), "MIFS": (0.5, 0.0), "MRMR": (0.8, 0.0), "JMI": (0.8, 0.5), "CIFE": (1.0, 1.0)}


def peer_select(library: str, method: str, X: np.ndarray, y: np.ndarray, k: int) -> list[int]:
    """Run one peer selector and return its ordered picks (runs inside the subprocess)."""
    if library == "skfeature" and method in _LCSI:
        from skfeature.function.information_theoretical_based.LCSI import lcsi

        beta, gamma = _LCSI[method]
        out = lcsi(X.astype(float), y, mode="index", beta=beta, gamma=gamma, n_selected_features=k)
    elif library == "skfeature":
        import importlib

        mod = importlib.import_module(f"skfeature.function.information_theoretical_based.{method}")
        out = getattr(mod, method.lower())(X.astype(float), y, mode="index", n_selected_features=k)
    elif library == "ITMO_FS":
        from ITMO_FS.filters.multivariate import MultivariateFilter

        f = MultivariateFilter(method, k, beta=0.5 if method == "MIFS" else None)
        f.fit(X, y)
        out = f.selected_features
    elif library == "mrmr_selection":
        import pandas as pd
        from mrmr import mrmr_classif

        out = mrmr_classif(pd.DataFrame(X.astype(float)), pd.Series(y), K=k, show_progress=False)
    else:
        raise ValueError(library)
    return [int(i) for i in np.asarray(out).ravel()[:k]]


def load(name: str):
    X, y, meta = tp.datasets.load_dataset(name)
    enc = tp.encode(X, n_bins=5)
    return enc.codes.astype(np.int64), tp.encode_labels(y)[0], meta


def available(library: str) -> bool:
    return have({"skfeature": "skfeature", "ITMO_FS": "ITMO_FS", "mrmr_selection": "mrmr"}[library])


def tp_label(method, opts):
    return method.upper() + (f"(beta={opts['beta']})" if "beta" in opts else "")


def warm(device):
    """Every tensorprob criterion of PAIRS once on tiny data (CUDA context and kernels out of the timings)."""
    s = tp.datasets.make_latent_class(300, [5] * 20 + [3], 3, random_state=0)
    for _, _, method, opts, _ in PAIRS:
        tp.select_features(s.X[:, :20], s.X[:, 20], 5, method=method, device=device, **opts)


def selector_rows(names, k_max, timeout, libraries, devices=("cpu",), repeats=None, peers=True, out=None,
                  ours_out=None):
    """Peer rows (appended to ``out``) and tensorprob rows per device (appended to ``ours_out``).

    ``libraries``: the installed peers; with ``peers`` a missing one gives "skipped" rows.
    Tensorprob timing: CPU best of 3 on small data (else one run), CUDA median of 3 when a run is under
    2 s; an explicit ``repeats`` gives the median of that many everywhere.
    """
    rows = [] if out is None else out
    tp_rows = [] if ours_out is None else ours_out
    for name in names:
        X, y, _ = load(name)
        k = min(k_max, X.shape[1])
        data = f"{name} ({X.shape[0]}x{X.shape[1]})"
        ours = {}
        for dev in devices:
            for _, _, method, opts, _ in PAIRS:
                key = (method, tuple(sorted(opts.items())), dev)
                if key in ours:
                    continue

                def run(X=X, y=y, k=k, method=method, dev=dev, opts=opts):
                    return tp.select_features(X, y, k, method=method, device=dev, **opts).selected_.tolist()

                secs, sel, timing = timed_selection(run, dev, repeats, X.size < 10**6)
                ours[key] = (secs, sel)
                tp_rows.append({"section": "tensorprob", "data": data, "k": k, "tensorprob": tp_label(method, opts),
                                "device": dev, "tensorprob s": secs, "timing": timing,
                                "first picks": " ".join(map(str, sel[:5]))})
        ref_dev = "cpu" if "cpu" in devices else devices[0]
        for library, pmethod, method, opts, differs in PAIRS if peers else []:
            secs_tp, sel_tp = ours[(method, tuple(sorted(opts.items())), ref_dev)]
            label = tp_label(method, opts)
            row = {"section": "peers", "data": data, "k": k, "peer": f"{library} {pmethod}",
                   "tensorprob": label, "same definition": "no: " + differs if differs else "yes", "device": "cpu",
                   "tensorprob s": secs_tp if ref_dev == "cpu" else float("nan")}
            if library not in libraries:
                row.update({"peer s": float("nan"), "note": f"skipped: {library} not installed"})
                rows.append(row)
                continue
            status, value, secs = call_with_timeout(peer_select, (library, pmethod, X, y, k), timeout)
            if status != "ok":
                row.update({"peer s": float("nan"), "note": value})
            else:
                prefix, overlap = selection_agreement(sel_tp, value)
                row.update({"peer s": secs, "speedup": secs / row["tensorprob s"], "common prefix": f"{prefix}/{k}",
                            "overlap": overlap})
            rows.append(row)
            print(f"  {row['data']:<24} {row['peer']:<28} vs {label:<16} {row.get('common prefix', row.get('note'))}",
                  flush=True)
    return rows


def cpd_rows(maxiters: int, devices=("cpu",), peers=True, repeats=None, cp_apr_ref=(None, None)):
    from bench_cpd import chess_vs_cp_apr

    rows = []
    chess_vs_cp_apr(10, rows, maxiters, devices=devices, peers=peers, repeats=repeats, cp_apr_ref=cp_apr_ref)
    return rows


def main(argv=None):
    ap = SCRIPT.bench_parser("wine and breast_cancer only, k=10, short cp_apr",
                             repeats_help=TP_REPEATS.format("selection"))
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a peer may take per run")
    ap.add_argument("--datasets", help="comma-separated dataset names (tensorprob.datasets.load_dataset)")
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--cp-apr-iters", type=int, default=200,
                    help="cp_apr outer iterations on chess (0: skip the chess CPD section)")
    add_cp_apr_ref_args(ap)
    libraries = []

    def note(args):
        if not args.no_peers:
            libraries.extend(lib for lib in ("skfeature", "ITMO_FS", "mrmr_selection") if available(lib))
        return f"\npeers installed: {'not run (--no-peers)' if args.no_peers else ', '.join(libraries) or 'none'}"

    args = SCRIPT.start(ap, argv, warm, note)
    devices = args.device_list
    names = (args.datasets.split(",") if args.datasets else
             ["wine", "breast_cancer"] if args.quick else
             ["wine", "breast_cancer", "ionosphere", "splice", "chess", "optdigits", "mnist"])
    k = 10 if args.quick else args.k
    peers = not args.no_peers
    rows, tp_rows, cpd, failed = [], [], [], []  # peer rows, tensorprob rows, chess CPD rows, failed sections

    def save():
        SCRIPT.save(rows + tp_rows + cpd)

    guarded("selectors", lambda: selector_rows(names, k, args.timeout, libraries, devices, args.repeats, peers,
                                               rows, tp_rows), tp_rows, failed)
    save()
    cols = ["data", "k", "peer", "tensorprob", "same definition", "common prefix", "overlap", "tensorprob s",
            "peer s", "speedup", "note"]
    table = markdown(rows, cols) if peers else "(peers not run: --no-peers)"
    print("\n" + table)
    tp_table = device_table(tp_rows, ["data", "k", "tensorprob"], "tensorprob s", devices).lstrip("\n")
    print("\ntensorprob seconds per device:\n\n" + tp_table)
    if args.cp_apr_iters:
        guarded("chess", lambda: cpd.extend(cpd_rows(20 if args.quick else args.cp_apr_iters, devices, peers,
                                                     args.repeats, (args.cp_apr_loglik, args.cp_apr_seconds))),
                cpd, failed)
        save()
    cpd_cols = ["data", "method", "device", "iterations", "s_total", "s_per_iter", "loglik", "s_to_cp_apr_loglik",
                "speedup_vs_this", "timing", "note"]
    if cpd:
        print("\n" + markdown(cpd, cpd_cols))
    SCRIPT.write_text(f"machine: {machine()}\n\ncommit: {SCRIPT.commit}\n\npeers: {', '.join(libraries) or 'none'}; "
                      f"k = {k}; peer time limit {args.timeout:g} s\n\n{table}\n\ntensorprob seconds per device:\n\n"
                      f"{tp_table}\n\n" + (markdown(cpd, cpd_cols) + "\n" if cpd else ""))
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
