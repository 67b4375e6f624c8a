"""Reproduction of paper 001 (VMI, Gao, Ver Steeg & Galstyan 2016), Table 3: mean CV error over k.

    python benchmarks/repro_vmi_table3.py [--quick] [--repeats 1] [--folds 10] [--k-step 1]
        [--discretizer mdl] [--n-bins 5] [--sensitivity uniform] [--datasets chess,splice,...] [--threads 1]

Average 10-fold cross-validation error (%) of a linear SVM (C = 1, min-max scaled continuous
values) over k = 10..min(100, N) selected features, and its standard deviation over k, for
mRMR, JMI, CMIM, SPEC_CMI, VMI-naive and VMI-pairwise, on the Table 3 data sets that ship
with our dependencies: KrVsKp (chess), Splice, Optdigits, Spambase, Ionosphere, Landsat
(satimage). Win/tie/loss of VMI against each competitor by a paired t-test (5 %) over the k
grid. Selection runs inside every training fold (``tensorprob.evaluation.cv_protocol``);
the paper selected once on all data. ``--sensitivity`` re-runs the data sets with continuous
columns under other discretizations. Writes ``results/vmi_table3.{csv,md}`` and the per-k
curves and W/T/L tests ``results/vmi_table3_{curves,wtl}.csv`` (``_quick`` suffix with ``--quick``).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import git_state, machine, markdown, set_torch_threads, threads_from_argv, write_csv  # noqa: E402

_THREADS = threads_from_argv()  # before NumPy / torch start their thread pools

import numpy as np  # noqa: E402

import tensorprob as tp  # noqa: E402
from tensorprob.evaluation import cv_protocol, summarize  # noqa: E402

warnings.simplefilter("ignore")  # LinearSVC convergence warnings on some folds
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

METHODS = ["mRMR", "JMI", "CMIM", "SPEC_CMI", "VMI-naive", "VMI-pairwise"]
COMPETITORS = METHODS[:4]
OURS_VMI = METHODS[4:]

# Paper 001, Table 3: mean (std) of the CV error in %, columns mRMR, JMI, CMIM, SPEC_CMI,
# VMI-naive, VMI-pairwise (the text extraction lost the last three column names and the
# bold/underline marks; the order is inferred from the text and checked against the W/T/L lines).
PAPER = {
    "chess": ("KrVsKp", [(5.1, 0.7), (5.2, 0.6), (5.3, 0.5), (5.1, 0.6), (5.3, 0.5), (5.1, 0.7)]),
    "splice": ("Splice", [(13.6, 0.4), (13.7, 0.5), (14.7, 0.3), (13.7, 0.5), (13.7, 0.5), (13.7, 0.5)]),
    "optdigits": ("Optdigits", [(7.6, 3.3), (7.6, 3.2), (7.5, 3.4), (9.2, 6.0), (7.2, 2.5), (7.6, 3.6)]),
    "spambase": ("Spambase", [(6.9, 0.7), (7.0, 0.8), (6.8, 0.7), (9.0, 2.3), (6.6, 0.3), (6.6, 0.3)]),
    "ionosphere": ("Ionosphere", [(12.8, 0.9), (16.6, 1.6), (13.1, 0.8), (16.8, 1.6), (12.7, 1.9), (12.0, 1.0)]),
    "satimage": ("Landsat", [(19.5, 1.2), (18.9, 1.0), (19.1, 1.1), (21.0, 3.5), (18.8, 0.8), (18.8, 1.0)]),
}
# Paper's W/T/L over its 17 data sets (paired t-test, 5 %): VMI-naive, VMI-pairwise vs each competitor.
PAPER_WTL = {"VMI-naive": ["11/4/2", "10/6/1", "10/7/0", "13/2/2"],
             "VMI-pairwise": ["9/6/2", "9/6/2", "13/3/1", "12/3/2"]}

# Likely causes of differences, per data set (facts about our copies of the data; written after
# the runs, see the markdown). Direction-specific remarks are added automatically.
DATA_NOTES = {
    "chess": "same data as the paper's (3196 x 36, all categorical, so no discretization is involved); what "
             "remains is the protocol (in-fold selection, another fold split) and the numeric coding the linear "
             "SVM sees for the categorical values (our ordinal codes of the sorted letters)",
    "splice": "our KEEL copy has 3190 rows (the paper's 3175) and the linear SVM sees ordinal codes of the "
              "letters A/C/D/G/N/R/S/T; the diagnostics below show how much this coding alone moves a linear SVM, "
              "so the paper must have used another numeric coding",
    "optdigits": "values are counts 0..16 that we discretize with the chosen rule (the paper's discretization is "
                 "not stated in our copy), and with 10 classes the error curve is steep in k, so the mean over k "
                 "depends on the k grid",
    "spambase": "KEEL's copy has 4597 rows (UCI 4601) and heavy-tailed word frequencies whose discretization "
                "(not stated by the paper) decides which features look informative",
    "ionosphere": "KEEL's copy has 33 features (the constant second attribute of the UCI data is dropped); 351 "
                  "samples make 10-fold errors noisy (one test sample = 2.9 % of a fold)",
    "satimage": "Landsat = satimage, 6435 x 36 in both; the pixel values 0..255 are discretized by a rule the "
                "paper does not state",
}


def selectors(discretizer, n_bins, device):
    kw = dict(discretizer=discretizer, n_bins=n_bins, device=device)
    return {"mRMR": tp.MRMR(**kw), "JMI": tp.JMI(**kw), "CMIM": tp.CMIM(**kw), "SPEC_CMI": tp.SPECCMI(**kw),
            "VMI-naive": tp.VMI(q="naive", **kw), "VMI-pairwise": tp.VMI(q="pairwise", **kw)}


def run_dataset(name, X, y, ks, args, discretizer, n_bins):
    t0 = time.perf_counter()
    res = cv_protocol(selectors(discretizer, n_bins, args.device), X, y, ks=ks, n_splits=args.folds,
                      n_repeats=args.repeats, classifiers=("linear_svm",), random_state=args.seed, progress=False,
                      dataset=name)
    secs = time.perf_counter() - t0
    curves = res.groupby(["method", "k"])["error"].mean().unstack("k") * 100  # % error per k, mean over splits
    summ = summarize(res).set_index("method")
    return res, curves, summ, secs


def wtl(curves, ref, other, alpha=0.05):
    """Paired t-test over the k grid: "W" (ref lower error), "L" or "T"."""
    from scipy.stats import ttest_rel

    a, b = curves.loc[ref].to_numpy(), curves.loc[other].to_numpy()
    if a.size < 2 or np.allclose(a, b):
        return "T", float("nan")
    p = float(ttest_rel(a, b).pvalue)
    if not np.isfinite(p) or p >= alpha:
        return "T", p
    return ("W" if a.mean() < b.mean() else "L"), p


def encoding_diagnostics(names, folds, seed):
    """Linear SVM on all features of the categorical sets: ordinal codes (as the protocol) vs one-hot."""
    import pandas as pd
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    from tensorprob.evaluation import make_classifier
    from tensorprob.evaluation._protocols import _numeric

    rows = []
    for name in names:
        X, y, meta = tp.datasets.load_dataset(name)
        if not all(meta["categorical"]):
            continue
        cv = StratifiedKFold(folds, shuffle=True, random_state=seed)
        err = {}
        for coding, Xn in (("ordinal codes (protocol)", _numeric(X)),
                           ("one-hot", pd.get_dummies(X.astype(str)).to_numpy(np.float64))):
            err[coding] = 100 * (1 - cross_val_score(make_classifier("linear_svm"), Xn, y, cv=cv).mean())
        rows.append({"dataset": name, "n_features": meta["n_features"], **{f"error_% {c}": v for c, v in err.items()}})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: ionosphere and chess, 3 folds, k step 10, no sensitivity run (< 1 min)")
    ap.add_argument("--repeats", type=int, default=1, help="repeats of the stratified CV (paper: 1)")
    ap.add_argument("--folds", type=int, default=10, help="CV folds (paper: 10; leave-one-out below 100 samples)")
    ap.add_argument("--k-step", type=int, default=1, help="step of the k grid 10..min(100, N) (default 1: every k)")
    ap.add_argument("--discretizer", default="mdl", help="discretizer of the selectors: mdl, uniform, quantile")
    ap.add_argument("--n-bins", type=int, default=5, help="bins (uniform/quantile) or most intervals (mdl)")
    ap.add_argument("--sensitivity", default="uniform",
                    help="comma-separated other discretizers to re-run the continuous sets with ('' for none)")
    ap.add_argument("--datasets", default=",".join(PAPER), help="comma-separated subset of " + ",".join(PAPER))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0, help="seed of the fold assignment")
    ap.add_argument("--threads", type=int, default=_THREADS, help="torch / BLAS threads (default $TENSORPROB_THREADS or 1)")
    args = ap.parse_args(argv)
    set_torch_threads(args.threads)
    names = args.datasets.split(",")
    if args.quick:
        names, args.folds, args.k_step, args.sensitivity = ["ionosphere", "chess"], 3, 10, ""
    unknown = [n for n in names if n not in PAPER]
    if unknown:
        ap.error(f"unknown data set(s) {unknown}; choose from {list(PAPER)}")
    sens = [s for s in args.sensitivity.split(",") if s and s != args.discretizer]
    suffix = "_quick" if args.quick else ""
    started = time.perf_counter()
    print(f"machine: {machine()}\n", flush=True)

    rows, curve_rows, wtl_rows, info = [], [], [], []
    for name in names:
        X, y, meta = tp.datasets.load_dataset(name)
        n_feat = meta["n_features"]
        ks = list(range(10, min(100, n_feat) + 1, args.k_step))
        continuous = not all(meta["categorical"])
        info.append({"dataset": name, "paper name": PAPER[name][0], "samples": meta["n_samples"],
                     "features": n_feat, "classes": meta["n_classes"],
                     "continuous": "yes" if continuous else "no (categorical)",
                     "k grid": f"{ks[0]}..{ks[-1]} step {args.k_step} ({len(ks)} values)"})
        for disc in [args.discretizer] + (sens if continuous else []):
            res, curves, summ, secs = run_dataset(name, X, y, ks, args, disc, args.n_bins)
            print(f"{name} [{disc}]: {secs:.1f} s", flush=True)
            for j, m in enumerate(METHODS):
                pm, ps = PAPER[name][1][j]
                ours, sd = float(curves.loc[m].mean()), float(curves.loc[m].std(ddof=1)) if len(ks) > 1 else 0.0
                assert abs(ours - 100 * summ.loc[m, "mean_error"]) < 1e-9  # same number as summarize()
                rows.append({"dataset": name, "paper_name": PAPER[name][0], "method": m, "discretizer": disc,
                             "n_bins": args.n_bins, "ours_error_pct": ours, "ours_std_over_k": sd,
                             "paper_error_pct": pm, "paper_std": ps, "diff": ours - pm,
                             "exceeds_paper_std": abs(ours - pm) > ps, "n_splits": int(res["split"].nunique()),
                             "n_k": len(ks), "select_seconds_mean": float(summ.loc[m, "select_seconds"])})
                for k, e in curves.loc[m].items():
                    curve_rows.append({"dataset": name, "method": m, "discretizer": disc, "k": int(k), "error_pct": e})
            for ref in OURS_VMI:
                for other in COMPETITORS:
                    outcome, p = wtl(curves, ref, other)
                    wtl_rows.append({"dataset": name, "discretizer": disc, "reference": ref, "method": other,
                                     "outcome": outcome, "p_value": p})
    total = time.perf_counter() - started
    diag = [] if args.quick else encoding_diagnostics(names, args.folds, args.seed)

    write_csv(os.path.join(RESULTS, f"vmi_table3{suffix}.csv"), rows)
    write_csv(os.path.join(RESULTS, f"vmi_table3_wtl{suffix}.csv"), wtl_rows)
    write_csv(os.path.join(RESULTS, f"vmi_table3_curves{suffix}.csv"), curve_rows)
    md = report(args, names, info, rows, wtl_rows, diag, sens, total)
    with open(os.path.join(RESULTS, f"vmi_table3{suffix}.md"), "w") as fh:
        fh.write(md)
    print(md)


def _cell(r, with_paper=True):
    s = f"{r['ours_error_pct']:.1f}({r['ours_std_over_k']:.1f})"
    return s + (f" [{r['paper_error_pct']:.1f}({r['paper_std']:.1f})]" if with_paper else "")


def report(args, names, info, rows, wtl_rows, diag, sens, total):
    disc = args.discretizer
    main_rows = [r for r in rows if r["discretizer"] == disc]
    by = {(r["dataset"], r["method"]): r for r in main_rows}
    out = [f"# Paper 001 (VMI), Table 3: mean CV error over k, ours vs paper{' (QUICK SMOKE RUN)' if args.quick else ''}",
           "",
           f"`python benchmarks/repro_vmi_table3.py{' --quick' if args.quick else ''}` — {machine()}; tensorprob "
           f"{git_state(__file__)}. Threads: {args.threads} (torch and BLAS), on a shared 2-core machine under load; "
           f"total {total / 60:.1f} min (timings are indicative only).",
           "",
           "**Protocol.** Linear SVM (LinearSVC, C = 1) on min-max scaled continuous values (categorical columns: "
           f"ordinal codes), {args.repeats} x {args.folds}-fold stratified CV (seed {args.seed}), error averaged over "
           f"k = 10..min(100, N) in steps of {args.k_step}; cells are mean(std over k) in %. Selection runs inside "
           "each training fold (`cv_protocol`), while the paper selected once on all data before cross-validating "
           "(optimistic). W/T/L: paired t-test (5 %) between the per-k CV error curves (the paper names a paired "
           "t-test; that it pairs over k is our reading, consistent with its std being taken over k).",
           "",
           f"**Discretization (selectors only).** `discretizer=\"{disc}\", n_bins={args.n_bins}`"
           + (" (Fayyad-Irani MDL, at most 5 intervals)" if disc == "mdl" else "")
           + ". Our copy of the paper says only that all data are discretized and defers the details to a "
           "supplement we do not have and to the protocol of Nguyen et al. (2014); the 5-interval MDL rule is what "
           "paper 004 uses for the same protocol. This choice is a **doubt**; "
           + (f"the sensitivity table re-runs the continuous sets with {', '.join(sens)}." if sens else
              "no sensitivity run in this invocation."),
           "",
           "**Paper numbers.** Transcribed from the text extraction of Table 3 (rows KrVsKp, Splice, Optdigits, "
           "Spambase, Ionosphere, Landsat). The extraction lost the names of the last three columns and the "
           "bold/underline marks; the column order mRMR, JMI, CMIM, SPEC_CMI, VMI-naive, VMI-pairwise is inferred "
           "(the footnote omits MIM and CIFE from six compared methods; the W/T/L lines have four entries; "
           "VMI-naive, column 5, never has a higher error than CMIM, matching its 10/7/0). The numbers themselves "
           "read cleanly.",
           ""]
    if args.quick:
        out += ["**Quick smoke run:** two data sets, 3 folds, k step 10; not a reproduction.", ""]
    out += ["## Data", "", markdown(info, list(info[0])), "",
            f"## Table 3 rows: ours [paper], error % mean(std over k), discretizer {disc}", ""]
    table = []
    for name in names:
        row = {"dataset": f"{PAPER[name][0]} ({name})"}
        for m in METHODS:
            row[m] = _cell(by[(name, m)])
        table.append(row)
    out += [markdown(table, ["dataset"] + METHODS), ""]

    # W/T/L
    out += [f"## Win/tie/loss of VMI (ours over {len(names)} data sets; paper over its 17)", ""]
    wt = []
    for ref in OURS_VMI:
        row = {"reference": ref}
        for j, other in enumerate(COMPETITORS):
            o = [w["outcome"] for w in wtl_rows if w["reference"] == ref and w["method"] == other
                 and w["discretizer"] == disc]
            row[f"vs {other}"] = f"{o.count('W')}/{o.count('T')}/{o.count('L')} [{PAPER_WTL[ref][j]}]"
        wt.append(row)
    out += [markdown(wt, ["reference"] + [f"vs {c}" for c in COMPETITORS]), ""]
    detail = []
    for name in names:
        row = {"dataset": name}
        for ref in OURS_VMI:
            row[ref] = " ".join(w["outcome"] for other in COMPETITORS for w in wtl_rows
                                if w["dataset"] == name and w["reference"] == ref and w["method"] == other
                                and w["discretizer"] == disc)
        detail.append(row)
    out += ["Per data set (outcomes vs mRMR, JMI, CMIM, SPEC_CMI):", "", markdown(detail, ["dataset"] + OURS_VMI), ""]

    # best method per row
    best = []
    for name in names:
        ours = sorted(METHODS, key=lambda m: by[(name, m)]["ours_error_pct"])
        paper = sorted(METHODS, key=lambda m: PAPER[name][1][METHODS.index(m)][0])
        best.append({"dataset": name, "ours: best, second": f"{ours[0]}, {ours[1]}",
                     "paper: best, second (by mean; ties in paper order)": f"{paper[0]}, {paper[1]}"})
    out += ["Best and second best by mean error:", "", markdown(best, list(best[0])), ""]

    for s in sens:
        srows = [r for r in rows if r["discretizer"] == s]
        if not srows:
            continue
        sb = {(r["dataset"], r["method"]): r for r in srows}
        st = []
        for name in names:
            if (name, METHODS[0]) not in sb:
                continue
            row = {"dataset": f"{PAPER[name][0]} ({name})"}
            for m in METHODS:
                row[m] = _cell(sb[(name, m)])
            st.append(row)
        out += [f"## Sensitivity: discretizer {s}, n_bins {args.n_bins} (continuous sets only), ours [paper]", "",
                markdown(st, ["dataset"] + METHODS), ""]
    if diag:
        out += ["## Diagnostics: numeric coding of categorical data for the linear SVM (all features, "
                f"{args.folds}-fold CV, error %)", "", markdown(diag, list(diag[0])), ""]

    out += [f"## Differences larger than the paper's standard deviation (discretizer {disc})", ""]
    for name in names:
        cells = [by[(name, m)] for m in METHODS if by[(name, m)]["exceeds_paper_std"]]
        if not cells:
            out.append(f"- **{PAPER[name][0]}**: every cell within the paper's std.")
            continue
        up = sum(c["diff"] > 0 for c in cells)
        listing = "; ".join(f"{c['method']} {c['ours_error_pct']:.1f} vs {c['paper_error_pct']:.1f} "
                            f"({c['diff']:+.1f}, paper std {c['paper_std']:.1f})" for c in cells)
        if up == len(cells):
            direction = ("ours is higher everywhere, the direction expected from selecting inside each training "
                         "fold (the paper's selection on all data is optimistic)")
        elif up == 0:
            direction = ("ours is lower everywhere, opposite to the protocol difference, so the data version, "
                         "the discretization or the classifier's coding of the data must account for it")
        else:
            direction = "the differences go both ways, so they are not a protocol offset alone"
        out.append(f"- **{PAPER[name][0]}** ({len(cells)} of {len(METHODS)} cells: {listing}): {direction}; "
                   f"likely reasons: {DATA_NOTES[name]}.")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    main()
