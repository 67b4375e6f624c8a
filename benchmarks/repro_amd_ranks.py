"""Reproduction of paper 004 (FID / GMD / AMD, Sun et al. 2020), Tables 3, 4 and 5: average ranks.

    python benchmarks/repro_amd_ranks.py [--quick] [--repeats 5] [--folds 10] [--k-step 10]
        [--datasets paper,extra | hd | name,...] [--data-home DIR] [--tables 3,4,5]
        [--discretizer mdl,authors] [--test-unit auto|repeat|fold] [--threads 1] [--tag T] [--from-csv]

Table 3: nine selectors, FID / GMD / AMD in three comparisons: J^{1,0} (MIFS / MRMR / AMD^{1,0}),
J^{1,1} (CIFE / JMI / AMD^{1,1}) and the VI framework of order 1 (FID^1 / GMD^1 = VMI-pairwise /
AMD^1). Table 4: the orders J^{0,0} (MIM), J^{1,0}, J^{1,1}, J^{2,1} of GMD (MIM / MRMR / JMI /
RMRMR) and of AMD. Table 5: AMD^1 (VI) and AMD^{2,1} against MRI, SPEC_CMI, CMIM, Trace ratio
and SPEC. FID and GMD in the MI framework run as their closed forms (``tp.MIFS`` / ``CIFE`` /
``MRMR`` / ``JMI`` / ``RMRMR`` / ``MIM``: the same selections as ``tp.PDA``, see
tests/test_selectors.py), AMD and the VI framework as ``tp.PDA``.

Selection on 5-interval MDL codes fitted on each training fold (``--discretizer mdl``, the paper's
text) or on the authors' code's binning (``authors``: min-max scaling and ``digitize`` against 5
equal-spaced edges, 4 bins plus one for the column maximum; unsupervised, so fitted once on all
rows and the folds run batched); integer-coded sets (colon, lymphoma, lung_small, nci9, leukemia)
are used as they are and run batched. Classifiers (3-NN and linear SVM, C = 1) on the continuous
values; mean error over k = 10..min(100, N) (steps of ``--k-step``) of ``--repeats`` x 10-fold CV
(stratified; plain shuffled K-fold when no class has 10 members). Per data set, classifier and
comparison every method gets the rank 1 + (number of methods of its comparison with a
significantly lower error: Wilcoxon rank-sum, Holm-corrected, 5 %), averaged over data sets; the
plain mean-error ranks of ``tensorprob.evaluation.average_ranks`` are reported beside them.

Data sets: ``paper`` = the paper's sets that ship with our dependencies (9 of its 29), ``extra`` =
similar sets not in the paper, ``hd`` = the paper's high-dimensional scikit-feature sets read from
``--data-home`` (default ``$TENSORPROB_DATA`` or ``../shared/data/skfeature``; absent files are
skipped with a message). Writes ``results/amd_ranks[_tag].{csv,md}`` (Table 3),
``results/amd_order[_tag].md`` (Table 4), ``results/amd_table5[_tag].md`` (Table 5) and the
per-fold errors ``results/amd_ranks_folds[_t45][_authors][_tag].csv`` (``_quick`` with
``--quick``); ``--from-csv`` rebuilds the reports from every per-fold file of the tag, so runs of
different tables, discretizers or data sets can be made separately and reported together.
"""
from __future__ import annotations

import glob
import itertools
import os
import re
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, cross_rows, markdown, report_head

SCRIPT = Script("amd_ranks", __doc__)  # caps the thread pools before NumPy / torch start them

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, TransformerMixin

import tensorprob as tp
from tensorprob.evaluation import make_classifier, significance_ranks

warnings.simplefilter("ignore")  # LinearSVC convergence warnings, small classes in stratified folds

CLFS = ("SVM", "KNN")  # classifier labels of the tables
CLASSIFIERS = {"linear_svm": "SVM", "3nn": "KNN"}
DISTS = ["FID", "GMD", "AMD"]
# Table 3 comparison label -> (framework, k1, k2)
GROUPS = {"J^{1,0}": ("mi", 1, 0), "J^{1,1}": ("mi", 1, 1), "J~^1 (VI)": ("vi", 1, 1)}
ORDERS = ["J^{0,0}", "J^{1,0}", "J^{1,1}", "J^{2,1}"]  # Table 4 columns
T5_METHODS = ["AMD J~^1 (VI)", "AMD J^{2,1}", "MRI", "SPEC_CMI", "CMIM", "Trace", "SPEC"]
T5_LABELS = ["AMD~^1", "AMD^{2,1}", "MRI", "SPEC_CMI", "CMIM", "Trace", "SPEC"]
# Paper 004, Table 3 (average ranks over its 29 data sets): FID, GMD, AMD.
PAPER_T3 = {("J^{1,0}", "SVM"): (2.52, 1.79, 1.31), ("J^{1,0}", "KNN"): (2.62, 1.59, 1.44),
            ("J^{1,1}", "SVM"): (2.27, 1.90, 1.24), ("J^{1,1}", "KNN"): (2.69, 1.69, 1.24),
            ("J~^1 (VI)", "SVM"): (2.17, 1.83, 1.38), ("J~^1 (VI)", "KNN"): (2.28, 1.93, 1.38)}
# Table 4: J^{0,0}, J^{1,0}, J^{1,1}, J^{2,1} per distribution and classifier.
PAPER_T4 = {("GMD", "SVM"): (3.34, 1.59, 2.41, 1.48), ("GMD", "KNN"): (3.41, 2.03, 2.20, 1.55),
            ("AMD", "SVM"): (3.31, 1.83, 2.38, 1.79), ("AMD", "KNN"): (3.18, 2.14, 2.20, 1.82)}
# Table 5, in the order of T5_METHODS.
PAPER_T5 = {"SVM": (2.58, 2.34, 2.86, 4.24, 2.72, 4.82, 6.52), "KNN": (2.41, 2.65, 3.00, 4.17, 3.03, 4.62, 6.31)}
# Paper's Table 2 names we ship -> our names, with the paper's (M, N, C).
PAPER_SETS = {"breast_cancer": ("Breast", 30, 569, 2), "housevotes": ("Congress", 16, 435, 2),
              "heart": ("Heart", 13, 270, 2), "ionosphere": ("Ionosphere", 34, 351, 2),
              "chess": ("Krvskp", 36, 3196, 2), "satimage": ("Landsat", 36, 6435, 6),
              "sonar": ("Sonar", 60, 208, 2), "splice": ("Splice", 60, 3175, 3), "wine": ("Wine", 13, 178, 3)}
# The paper's high-dimensional sets as scikit-feature .mat files (cheapest first: a run cut short
# still covers many sets). lung_small is not the paper's Lung (3312 x 203 x 5): see the report.
HD_SETS = {"lung_small": ("Lung", 3312, 203, 5), "colon": ("Colon", 2000, 62, 2),
           "glioma": ("Glioma", 4434, 50, 4), "warpar10p": ("WarpAR10P", 2400, 130, 10),
           "allaml": ("Allaml", 7129, 72, 2), "lymphoma": ("Lymphoma", 4026, 96, 9),
           "warppie10p": ("WarpPIE10P", 2420, 210, 10), "orl": ("ORL", 1024, 400, 40),
           "tox171": ("TOX_171", 5748, 171, 4), "nci9": ("NCI9", 9712, 60, 9),
           "isolet": ("Isolet", 617, 1560, 26), "coil20": ("Coil20", 1024, 1440, 20),
           "leukemia": ("Leuk", 7070, 72, 2)}
ALL_PAPER = {**PAPER_SETS, **HD_SETS}
PAPER_MISSING = ["Carcinom", "Lung (3312 features; we have lung_small)", "Lungcancer", "Parkinsons", "Semeion",
                 "Soybeanssmall", "Spect", "Waveform"]
# Extra UCI/KEEL sets we ship (not in the paper): mid-size, continuous, several classes.
EXTRA_SETS = ["vehicle", "segment", "movement_libras", "digits"]
INFO_COLS = ["dataset", "paper name", "paper M/N/C", "ours M/N/C", "codes", "k grid", "splits", "minutes"]
ALT_UNIT = {"repeat": "fold", "fold": "repeat"}
DISC_LABEL = {"mdl": "MDL (paper's text)", "authors": "authors' binning"}
MARGIN = 0.3  # rank units: the paper reports no spread for its average ranks
# the script's own command-line options: name -> (default, help[, choices])
OPTIONS = {"folds": (10, None), "k-step": (10, "step of the k grid 10..min(100, N)"), "alpha": (0.05, None),
           "n-bins": (5, "most MDL intervals / authors' bins (paper: 5)"), "device": ("cpu", None),
           "datasets": ("paper,extra", "comma-separated names; 'paper' = the paper's sets we ship, 'extra' = "
                        + ",".join(EXTRA_SETS) + ", 'hd' = " + ",".join(HD_SETS)),
           "data-home": ("", "folder of the scikit-feature .mat files (default $TENSORPROB_DATA or "
                         "../shared/data/skfeature)"),
           "tables": ("3", "comma-separated tables to run: 3, 4, 5 (the methods of all of them, each once)"),
           "discretizer": ("mdl", "comma-separated: mdl (paper's text), authors (the authors' code)"),
           "spec-cmi-max-features": (1000, "run SPEC_CMI (quadratic in the features) only up to this width"),
           "dtype": ("float32", "torch dtype of the per-sample estimators", ("float32", "float64")),
           "test-unit": ("auto", "Wilcoxon samples: per-repeat mean errors, per-fold errors, or auto (repeats "
                         "when there are at least 5, else folds)", ("auto", "repeat", "fold"))}


class AuthorsBinning(TransformerMixin, BaseEstimator):
    """The authors' PDA code binning: min-max scale each column, ``digitize`` against ``n_bins`` equal-spaced edges.

    ``np.digitize(scaled, linspace(0, 1, n_bins)) - 1`` gives ``n_bins - 1`` half-open bins of
    width ``1 / (n_bins - 1)`` plus bin ``n_bins - 1`` holding only the column maximum. A constant
    column gets code 0; values outside the fitted range go to the end bins.
    """

    def __init__(self, n_bins=5):
        self.n_bins = n_bins

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=np.float64)
        self.min_, self.max_ = np.nanmin(X, 0), np.nanmax(X, 0)
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=np.float64)
        span = self.max_ - self.min_
        scaled = np.divide(X - self.min_, span, out=np.zeros_like(X), where=span > 0)
        codes = np.digitize(scaled, np.linspace(0.0, 1.0, self.n_bins)) - 1
        return np.clip(codes, 0, self.n_bins - 1)


def method_name(group, dist):
    return f"{dist} {group}"


def _pda(dist, fw, k1, k2, args):
    return tp.PDA(distribution=dist.lower(), framework=fw, k1=k1, k2=k2, device=args.device,
                  dtype=getattr(torch, args.dtype))


def method_factories(args):
    """Method name -> (table numbers using it, factory of the unfitted selector, 'codes' or 'real')."""
    cls = {("FID", "J^{1,0}"): lambda: tp.MIFS(beta=1.0), ("FID", "J^{1,1}"): tp.CIFE,
           ("GMD", "J^{1,0}"): tp.MRMR, ("GMD", "J^{1,1}"): tp.JMI, ("GMD", "J^{2,1}"): tp.RMRMR}
    out = {}
    for group, (fw, k1, k2) in GROUPS.items():
        for dist in DISTS:
            tabs = {3} | ({4} if dist != "FID" and fw == "mi" else set()) | ({5} if dist == "AMD" and fw == "vi" else set())
            fac = cls.get((dist, group)) or (lambda d=dist, f=fw, a=k1, b=k2: _pda(d, f, a, b, args))
            out[method_name(group, dist)] = (tabs, fac, "codes")
    out["MIM J^{0,0}"] = ({4}, tp.MIM, "codes")  # = GMD^{0,0} = AMD^{0,0}
    # GMD^{2,1} = RMRMR: its per-sample form selects the same and runs faster than the triple-sum closed form here
    out["GMD J^{2,1}"] = ({4}, lambda: _pda("gmd", "mi", 2, 1, args), "codes")
    out["AMD J^{2,1}"] = ({4, 5}, lambda: _pda("amd", "mi", 2, 1, args), "codes")
    for name, fac in {"MRI": tp.MRI, "SPEC_CMI": tp.SPECCMI, "CMIM": tp.CMIM}.items():
        out[name] = ({5}, fac, "codes")
    out["Trace"] = ({5}, tp.TraceRatio, "real")
    out["SPEC"] = ({5}, tp.SPEC, "real")
    return out


def data_home(args):
    if args.data_home:
        return args.data_home
    if os.environ.get("TENSORPROB_DATA"):
        return os.environ["TENSORPROB_DATA"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for up in ("..", os.path.join("..", "..")):  # the project checkout, or a worktree one level deeper
        cand = os.path.normpath(os.path.join(root, up, "shared", "data", "skfeature"))
        if os.path.isdir(cand):
            return cand
    return os.path.normpath(os.path.join(root, "..", "shared", "data", "skfeature"))


def load(name, args):
    """``(X, y, meta)`` or None (with a message) when a scikit-feature file is absent."""
    if name in HD_SETS:
        home = data_home(args)
        try:
            return tp.datasets.load_dataset(name, data_home=home)
        except (FileNotFoundError, OSError) as exc:
            print(f"skipping {name}: no scikit-feature file under {home} ({exc})", flush=True)
            return None
    return tp.datasets.load_dataset(name)


def _numeric(X) -> bool:
    """Whether every column of ``X`` (a DataFrame or an array) holds numbers."""
    if hasattr(X, "dtypes"):
        return all(pd.api.types.is_numeric_dtype(t) for t in X.dtypes)
    return np.asarray(X).dtype.kind in "biuf"


def make_splits(y, folds, repeats, seed):
    from sklearn.model_selection import RepeatedKFold, RepeatedStratifiedKFold

    counts = np.unique(y, return_counts=True)[1]
    stratified = counts.max() >= folds  # sklearn refuses stratification only when no class has `folds` rows
    cv = (RepeatedStratifiedKFold if stratified else RepeatedKFold)(n_splits=folds, n_repeats=repeats, random_state=seed)
    return list(cv.split(np.zeros(len(y)), y)), stratified


def selections(methods, X, y, splits, kmax, disc, discrete, args):
    """Method -> (list of per-split feature orders, selection seconds per split)."""
    Xf = X if discrete else np.asarray(X, dtype=np.float64)
    masks = np.zeros((len(y), len(splits)))
    for i, (tr, _) in enumerate(splits):
        masks[tr, i] = 1.0
    global_codes = None
    if discrete or disc == "authors":  # one encoding for all folds (codes as given, or unsupervised bins): batched
        enc = tp.Encoder(discretizer=None if discrete else AuthorsBinning(args.n_bins), n_bins=args.n_bins)
        global_codes = tp.Encoded(enc.fit_transform(Xf), enc.cardinalities_.copy())
    fold_codes = {}
    out = {}
    for name, (_, fac, kind) in methods.items():
        t0 = time.perf_counter()
        if kind == "real":
            orders = [np.asarray(fac().set_params(k=kmax).fit(Xf[tr], y[tr]).selected_) for tr, _ in splits]
        elif global_codes is not None:
            sel = fac().set_params(k=kmax).fit(global_codes, y, resamples=masks)
            orders = [np.asarray(s)[np.asarray(s) >= 0] for s in sel.selected_]
        else:  # MDL learns its cut points from the training labels: one encoding per fold, shared by the methods
            orders = []
            for i, (tr, _) in enumerate(splits):
                if i not in fold_codes:
                    enc = tp.Encoder(discretizer="mdl", n_bins=args.n_bins)
                    fold_codes[i] = tp.Encoded(enc.fit_transform(Xf[tr], y[tr]), enc.cardinalities_.copy())
                orders.append(np.asarray(fac().set_params(k=kmax).fit(fold_codes[i], y[tr]).selected_))
        out[name] = (orders, (time.perf_counter() - t0) / len(splits))
    return out


def fold_errors(sel, X, y, splits, ks):
    """Per-split error (mean over ks) of every method and classifier; identical feature prefixes scored once."""
    Xn = np.asarray(X, dtype=np.float64)
    rows, cache = [], {}
    for name, (orders, secs) in sel.items():
        for i, (tr, te) in enumerate(splits):
            for clf in CLASSIFIERS:
                errs = []
                for k in ks:
                    cols = tuple(int(c) for c in orders[i][:k])
                    key = (i, clf, cols)
                    if key not in cache:
                        model = make_classifier(clf).fit(Xn[np.ix_(tr, cols)], y[tr])
                        cache[key] = float((model.predict(Xn[np.ix_(te, cols)]) != y[te]).mean())
                    errs.append(cache[key])
                rows.append({"method": name, "classifier": clf, "split": i, "error": float(np.mean(errs)),
                             "select_seconds": secs})
    return rows


def part_suffix(tables, discs):
    t = "" if tables == [3] else "_t" + "".join(map(str, tables))
    d = "" if discs == ["mdl"] else "_" + "_".join(discs)
    return t + d


def run(args, names, tables, discs):
    facs = method_factories(args)
    # a run without Table 3 adds only the methods Tables 4/5 do not share with it (report it with a Table 3 run)
    methods = {m: v for m, v in facs.items() if v[0] & set(tables) and (3 in tables or 3 not in v[0])}
    folds, info = [], []
    suffix = part_suffix(tables, discs)
    for name in names:
        loaded = load(name, args)
        if loaded is None:
            continue
        X, y, meta = loaded
        n_feat = meta["n_features"]
        kmax = min(100, n_feat)
        ks = list(range(10, kmax + 1, args.k_step))
        discrete = bool(meta.get("discrete", False))
        if not _numeric(X):  # categorical columns (housevotes' y/n): ordinal codes for selectors and classifiers
            X, discrete = tp.encode(X).codes, True
        splits, stratified = make_splits(y, args.folds, args.repeats, args.seed)
        t_set = time.perf_counter()
        here = dict(methods)
        if n_feat > args.spec_cmi_max_features and here.pop("SPEC_CMI", None):
            print(f"{name}: SPEC_CMI skipped ({n_feat} features > --spec-cmi-max-features)", flush=True)
        for disc in (["codes"] if discrete else discs):
            t0 = time.perf_counter()
            sel = selections(here, X, y, splits, kmax, disc, discrete, args)
            per = pd.DataFrame(fold_errors(sel, X, y, splits, ks))
            per.insert(0, "discretizer", disc)
            per.insert(0, "dataset", name)
            per["repeat"] = per["split"] // args.folds
            folds.append(per)
            print(f"{name} [{disc}]: {time.perf_counter() - t0:.1f} s (selection " + ", ".join(
                f"{m} {s:.2f}" for m, (_, s) in sel.items()) + " s per split)", flush=True)
            SCRIPT.write_csv("folds" + suffix, pd.concat(folds))  # checkpoint after every data set
        paper = ALL_PAPER.get(name)
        info.append({"dataset": name, "paper name": paper[0] if paper else "(extra)",
                     "paper M/N/C": f"{paper[1]}/{paper[2]}/{paper[3]}" if paper else "",
                     "ours M/N/C": f"{n_feat}/{meta['n_samples']}/{meta['n_classes']}",
                     "codes": "as given" if discrete else "binned", "k grid": " ".join(map(str, ks)),
                     "splits": f"{len(splits)}{'' if stratified else ' (unstratified)'}",
                     "minutes": (time.perf_counter() - t_set) / 60})
        SCRIPT.write_meta(info, 0.0, part="data" + suffix)
    return (pd.concat(folds, ignore_index=True) if folds else pd.DataFrame()), info


_PART = re.compile(r"(_t[345]+)?(_mdl|_authors|_mdl_authors)?")


def read_parts(kind):
    """Every ``amd_ranks_<kind>*`` CSV of this tag and quick setting (see :func:`part_suffix`)."""
    ref = SCRIPT.path(kind)
    base, tail = ref.split(f"_{kind}", 1)  # tail: '[_quick][_tag].csv'
    head = f"{base}_{kind}"
    frames = []
    for path in sorted(glob.glob(head + "*" + tail)):
        middle = path[len(head): len(path) - len(tail)]
        part = _PART.fullmatch(middle)
        if part:
            label = f"Tables {'-'.join(part.group(1)[2:])}" if part.group(1) else "Table 3"
            label += " (authors' binning)" if "authors" in (part.group(2) or "") else ""
            frames.append(pd.read_csv(path, keep_default_na=False).assign(part=label))
    if not frames:
        raise SystemExit(f"--from-csv: no file like {ref}")
    return pd.concat(frames, ignore_index=True)


def rank_rows(per_fold, groups, unit, alpha):
    """Test-based and plain mean-error ranks of every method within each group, per data set and classifier."""
    sub = per_fold
    if unit == "repeat":  # the Wilcoxon samples: per-repeat mean errors (the paper repeats CV 50 times)
        sub = per_fold.groupby(["dataset", "classifier", "method", "repeat"], as_index=False)["error"].mean()
        sub = sub.rename(columns={"repeat": "split"})
    sig = significance_ranks(sub, groups, alpha=alpha)
    from scipy.stats import rankdata

    plain = []
    for label, methods in groups.items():
        # rounded: equal errors summed in another order (a rebuild from CSV) must stay ties
        means = per_fold[per_fold["method"].isin(methods)].groupby(["dataset", "classifier", "method"])["error"].mean()
        means = means.round(12)
        for (ds, clf), row in means.unstack("method")[list(methods)].iterrows():
            for m, r in zip(methods, rankdata(row.to_numpy())):
                plain.append({"dataset": ds, "classifier": clf, "group": label, "method": m, "plain_rank": float(r)})
    out = sig.merge(pd.DataFrame(plain), on=["dataset", "classifier", "group", "method"])
    out["classifier"] = out["classifier"].map(CLASSIFIERS)
    out["error_pct"] = (100 * out["mean"]).round(10)
    return out.drop(columns=["mean"])


def complete_sets(per_fold, methods):
    """Data sets with per-fold errors of every one of ``methods``."""
    have = per_fold.groupby("dataset")["method"].agg(set)
    return [d for d in dict.fromkeys(per_fold["dataset"]) if set(methods) <= have[d]]


def by_disc(per_fold, disc):
    """Per-fold rows of one discretizer column: its own rows plus the sets used as given (codes)."""
    return per_fold[per_fold["discretizer"].isin([disc, "codes"])]


def avg(ranks, col="rank"):
    return ranks.groupby(["group", "classifier", "method"])[col].mean()


def fmt(vals):
    return " / ".join(f"{v:.2f}" for v in vals)


def _order(values, labels):
    """'AMD < GMD = FID': the labels by increasing value, '=' for equal values."""
    pairs = sorted(zip(values, labels), key=lambda t: t[0])
    out = pairs[0][1]
    for (a, _), (b, d) in itertools.pairwise(pairs):
        out += (" = " if abs(a - b) < 1e-9 else " < ") + d
    return out


def table_ranks(per_fold, groups, discs, unit, alpha):
    """disc -> (rank rows, data sets) for the methods of ``groups``."""
    methods = list(dict.fromkeys(m for ms in groups.values() for m in ms))
    out = {}
    for disc in discs:
        pf = by_disc(per_fold, disc)
        sets = complete_sets(pf, methods)
        own = set(pf.loc[pf["discretizer"] == disc, "dataset"])  # the variant column needs a set binned its way
        if sets and (disc == "mdl" or own & set(sets)):
            out[disc] = (rank_rows(pf[pf["dataset"].isin(sets) & pf["method"].isin(methods)], groups, unit, alpha),
                         sets)
    return out


def protocol_text(args, unit_desc, n_sets):
    return [
        "**Protocol.** FID and GMD in the MI framework as their closed forms (`tp.MIM`, `MIFS(beta=1)`, `CIFE`, "
        "`MRMR`, `JMI`, `RMRMR`: the selections of `tp.PDA(distribution=fid|gmd)`, checked in "
        "tests/test_selectors.py), AMD and the VI framework as `tp.PDA(distribution=..., framework=mi|vi, k1, k2, "
        f"dtype=torch.{args.dtype})`; Table 5 also `tp.MRI`, `tp.SPECCMI`, `tp.CMIM`, `tp.TraceRatio`, `tp.SPEC` "
        "(the last two on the continuous values). Codes for selection: **MDL** = at most "
        f"{args.n_bins} MDL intervals (Fayyad-Irani) fitted on each training fold and shared by the methods; "
        f"**authors' binning** = min-max scaling and `digitize` against {args.n_bins} equal-spaced edges "
        "(the authors' public code: 4 bins plus one holding only the column maximum), unsupervised and fitted "
        "once on all rows, the folds then selected batched (`fit(..., resamples=training masks)`); integer-coded "
        "sets are used as they are in both columns (never re-binned) and also run batched. Classifiers on the "
        "min-max scaled continuous values: 3-NN and LinearSVC(C=1). "
        f"{args.repeats} x {args.folds}-fold CV (stratified; shuffled plain K-fold where no class has {args.folds} "
        f"rows), seed {args.seed}; error = mean over the folds and k = 10..min(100, N) in steps of {args.k_step}. "
        "Rank of a method on a data set and classifier = 1 + the number of methods of its comparison whose error "
        f"is significantly lower: two-sided Wilcoxon rank-sum on the {unit_desc}, Holm-corrected, alpha "
        f"{args.alpha} (`significance_ranks`), averaged over the {n_sets} sets. The paper ranks \"using "
        "statistical tests\" without the rule; ours is inferred from its numbers (its ranks sum to less than "
        "1 + 2 + ... + n, so methods that do not differ significantly share the better rank). Plain mean-error "
        "ranks (ties only when equal) are given too.", ""]


def t3_report(args, per_fold, info, total, discs, unit, unit_desc):
    groups = {g: [method_name(g, d) for d in DISTS] for g in GROUPS}
    res = table_ranks(per_fold, groups, discs, unit, args.alpha)
    names = list(dict.fromkeys(per_fold["dataset"]))
    out = [f"# Paper 004 (FID / GMD / AMD), Table 3: average ranks, ours vs paper"
           f"{' (QUICK SMOKE RUN)' if args.quick else ''}", "",
           f"{SCRIPT.header(getattr(args, 'run_commit', None))}; selection and scoring took {total / 60:.1f} min "
           "of one shared core in all (timings indicative only). Interpretation: `benchmarks/REPRODUCTIONS.md`.", ""]
    out += protocol_text(args, unit_desc, len(names))
    out += reduced_text(args, names)
    out += report_head(args.quick, info, INFO_COLS)
    rows = []
    for g in GROUPS:
        for clf in CLFS:
            row = {"methods": g, "classifier": clf}
            for disc, (r, sets) in res.items():
                a = avg(r)
                row[f"{DISC_LABEL[disc]}, {len(sets)} sets"] = fmt(a[(g, clf, method_name(g, d))] for d in DISTS)
            row["paper (29 sets)"] = fmt(PAPER_T3[(g, clf)])
            rows.append(row)
    cols = list(rows[0]) if rows else []
    out += ["## Average test-based ranks FID / GMD / AMD", "", markdown(rows, cols), ""]
    rows = []
    for g in GROUPS:
        for clf in CLFS:
            row = {"methods": g, "classifier": clf}
            for disc, (r, sets) in res.items():
                a = avg(r, "plain_rank")
                row[f"{DISC_LABEL[disc]}, {len(sets)} sets"] = fmt(a[(g, clf, method_name(g, d))] for d in DISTS)
            rows.append(row)
    out += ["Plain mean-error ranks FID / GMD / AMD (no tests):", "", markdown(rows, cols[:-1]), ""]
    out += ["## Does AMD rank best?", ""]
    for disc, (r, sets) in res.items():
        a = avg(r)
        for g in GROUPS:
            for clf in CLFS:
                ours = [a[(g, clf, method_name(g, d))] for d in DISTS]
                sub = r[(r["group"] == g) & (r["classifier"] == clf)]
                err = sub.pivot(index="dataset", columns="method", values="error_pct")
                amd, gmd, fid = (err[method_name(g, d)] for d in ("AMD", "GMD", "FID"))
                n_sig = int((sub.groupby("dataset")["rank"].max() > 1).sum())
                out.append(f"- {DISC_LABEL[disc]}, **{g}, {clf}**: ours {_order(ours, DISTS)}, paper "
                           f"{_order(PAPER_T3[(g, clf)], DISTS)}; a significant difference on {n_sig} of {len(sets)} "
                           f"sets; by mean error AMD beats GMD on {int((amd < gmd).sum())} (ties {int((amd == gmd).sum())})"
                           f" and FID on {int((amd < fid).sum())}.")
    out.append("")
    out += own_sets_report(res)

    def cell(ds, clf, g, disc):
        r = res[disc][0]
        s = r[(r["dataset"] == ds) & (r["classifier"] == clf) & (r["group"] == g)]
        return "  ".join(f"{m.split()[0]} {e:.1f} ({k})" for m, e, k in zip(s["method"], s["error_pct"], s["rank"]))

    for disc, (_, sets) in res.items():
        det = cross_rows(("dataset", sets), ("classifier", CLFS), GROUPS, lambda d, c, g, disc=disc: cell(d, c, g, disc))
        out += [f"## Per data set, {DISC_LABEL[disc]}: error % (test-based rank)", "",
                markdown(det, ["dataset", "classifier"] + list(GROUPS)), ""]
    return "\n".join(out), res


# Sets that are not the paper's: the extra UCI/KEEL sets and lung_small (a stand-in for a different Lung).
ADDED_SETS = set(EXTRA_SETS) | {"lung_small"}
PAIRS = [("GMD", "AMD"), ("AMD", "GMD"), ("AMD", "FID"), ("FID", "AMD"), ("GMD", "FID"), ("FID", "GMD")]


def pairwise_wins(r):
    """Rows (disc-free) of every significant pairwise win within a Table 3 comparison: data set, classifier,
    comparison, winner and loser distributions (from ``better_than`` of ``significance_ranks``)."""
    out = []
    for _, row in r.iterrows():
        for other in row["better_than"] if isinstance(row["better_than"], tuple) else ():
            out.append({"dataset": row["dataset"], "classifier": row["classifier"], "group": row["group"],
                        "winner": row["method"].split()[0], "loser": other.split()[0]})
    return pd.DataFrame(out, columns=["dataset", "classifier", "group", "winner", "loser"])


def own_sets_report(res):
    """Table 3 on the paper's own sets apart from the added ones: average test-based ranks with the order they
    give, and the cells (set x classifier x comparison) where one distribution is significantly better than
    another, GMD over AMD listed."""
    by_block, counts, listed = {}, [], []
    for disc, (r, sets) in res.items():
        parts = [("paper's sets", [d for d in sets if d not in ADDED_SETS]),
                 ("added sets", [d for d in sets if d in ADDED_SETS])]
        parts = [(lab, ds) for lab, ds in parts if ds]
        if len(parts) < 2:
            continue
        for g in GROUPS:
            for clf in CLFS:
                row = by_block.setdefault((g, clf), {"methods": g, "classifier": clf})
                for lab, ds in parts:
                    a = avg(r[r["dataset"].isin(ds)])
                    vals = [a[(g, clf, method_name(g, d))] for d in DISTS]
                    row[f"{DISC_LABEL[disc]}, {lab} ({len(ds)})"] = f"{fmt(vals)}: {_order(vals, DISTS)}"
        wins = pairwise_wins(r)
        for lab, ds in parts:
            w = wins[wins["dataset"].isin(ds)]
            n_cells = len(ds) * len(CLFS) * len(GROUPS)
            c = {"codes": DISC_LABEL[disc], "sets": f"{lab} ({len(ds)})", "cells": n_cells}
            for a_, b_ in PAIRS:
                c[f"{a_} < {b_}"] = int(((w["winner"] == a_) & (w["loser"] == b_)).sum())
            counts.append(c)
        gm = wins[(wins["winner"] == "GMD") & (wins["loser"] == "AMD")]
        listed += [f"{d} ({'added' if d in ADDED_SETS else 'paper'}) {clf} {g} [{DISC_LABEL[disc]}]"
                   for d, clf, g in zip(gm["dataset"], gm["classifier"], gm["group"])]
    rows = list(by_block.values())
    if not rows:
        return []
    for (g, clf), row in by_block.items():
        row["paper (29 sets)"] = f"{fmt(PAPER_T3[(g, clf)])}: {_order(PAPER_T3[(g, clf)], DISTS)}"
    strict = {}
    for row in rows:
        for col, v in row.items():
            if col.endswith(")") and ":" in str(v) and not col.startswith("paper"):
                strict.setdefault(col, []).append(v.split(": ")[1] == "AMD < GMD < FID")
    out = ["## The paper's own sets apart from the added ones", "",
           "Average test-based ranks FID / GMD / AMD and the order they give, over the paper's sets and over the "
           "sets it does not have (the extra sets; lung_small, which stands in for a different Lung). '=' is a tie "
           "of average ranks.", "", markdown(rows, list(rows[0])), "",
           "The strict order AMD < GMD < FID holds in: " + "; ".join(
               f"{col}: {sum(v)} of {len(v)} blocks" for col, v in strict.items()) + ".", "",
           "Cells (data set x classifier x comparison) where one distribution's error is significantly lower than "
           "another's (the Wilcoxon/Holm tests of the ranks):", "", markdown(counts, list(counts[0])), ""]
    if listed:
        out += ["GMD significantly better than AMD: " + "; ".join(listed) + ".", ""]
    return out


def reduced_text(args, names):
    hd = [n for n in names if n in HD_SETS]
    return ["**Reduced against the paper.** "
            + (f"{args.repeats} repeat(s) of {args.folds}-fold CV instead of 50 (run-time budget: see the "
               "reproduction notes); " if args.repeats < 50 else "")
            + f"{len([n for n in names if n in ALL_PAPER])} of the paper's 29 data sets; paper sets we do not have: "
            + ", ".join(PAPER_MISSING) + (" (and the scikit-feature sets not run here)" if hd else "")
            + ". lung_small (325 features x 73 rows, 7 classes, already coded) stands in for the paper's Lung "
            "(3312 x 203 x 5), which is a different set. The paper's k grid is not stated; we use steps of "
            f"{args.k_step}.", ""]


def t4_report(args, per_fold, info, total, discs, unit, unit_desc):
    cols = {"GMD": ["MIM J^{0,0}", "GMD J^{1,0}", "GMD J^{1,1}", "GMD J^{2,1}"],
            "AMD": ["MIM J^{0,0}", "AMD J^{1,0}", "AMD J^{1,1}", "AMD J^{2,1}"]}
    res = table_ranks(per_fold, cols, discs, unit, args.alpha)
    out = [f"# Paper 004, Table 4: order k of GMD and AMD, ours vs paper{' (QUICK SMOKE RUN)' if args.quick else ''}",
           "", f"{SCRIPT.header(getattr(args, 'run_commit', None))}; timings indicative only.", "",
           "Within each distribution the four orders J^{0,0} (= MIM for both), J^{1,0}, J^{1,1}, J^{2,1} are ranked "
           "against each other (GMD: MIM / MRMR / JMI / RMRMR).", ""]
    sets_all = sorted({s for _, (_, ss) in res.items() for s in ss})
    out += protocol_text(args, unit_desc, len(sets_all)) + reduced_text(args, sets_all)
    rows = []
    for dist in cols:
        for clf in CLFS:
            row = {"distribution": dist, "classifier": clf}
            for disc, (r, sets) in res.items():
                for kind, col in (("test", "rank"), ("plain", "plain_rank")):
                    a = avg(r, col)
                    row[f"{DISC_LABEL[disc]} {kind}, {len(sets)} sets"] = fmt(a[(dist, clf, m)] for m in cols[dist])
            row["paper (29 sets)"] = fmt(PAPER_T4[(dist, clf)])
            rows.append(row)
    out += ["## Average ranks J^{0,0} / J^{1,0} / J^{1,1} / J^{2,1}", "", markdown(rows, list(rows[0]) if rows else []),
            "", "## Do higher orders help?", ""]
    for disc, (r, sets) in res.items():
        a = avg(r)
        for dist in cols:
            for clf in CLFS:
                ours = [a[(dist, clf, m)] for m in cols[dist]]
                err = r[(r["group"] == dist) & (r["classifier"] == clf)].pivot(index="dataset", columns="method",
                                                                                values="error_pct")
                better = int((err[cols[dist][3]] < err[cols[dist][2]]).sum())
                out.append(f"- {DISC_LABEL[disc]}, **{dist}, {clf}**: ours {_order(ours, ORDERS)}, paper "
                           f"{_order(PAPER_T4[(dist, clf)], ORDERS)}; J^{{2,1}} has a lower mean error than J^{{1,1}} on "
                           f"{better} of {len(sets)} sets, than J^{{0,0}} on "
                           f"{int((err[cols[dist][3]] < err[cols[dist][0]]).sum())}.")
    out.append("")
    for disc, (r, sets) in res.items():
        det = []
        for ds in sets:
            for clf in CLFS:
                row = {"dataset": ds, "classifier": clf}
                for dist in cols:
                    s = r[(r["dataset"] == ds) & (r["classifier"] == clf) & (r["group"] == dist)].set_index("method")
                    row[dist] = "  ".join(f"{o} {s.loc[m, 'error_pct']:.1f} ({s.loc[m, 'rank']})"
                                          for o, m in zip(("00", "10", "11", "21"), cols[dist]))
                det.append(row)
        out += [f"## Per data set, {DISC_LABEL[disc]}: error % (test-based rank) of orders 00 / 10 / 11 / 21", "",
                markdown(det, ["dataset", "classifier", "GMD", "AMD"]), ""]
    return "\n".join(out), res


def t5_report(args, per_fold, info, total, discs, unit, unit_desc):
    others = [m for m in T5_METHODS if m != "SPEC_CMI"]
    with_sc = set(complete_sets(per_fold, T5_METHODS))
    methods = T5_METHODS if set(complete_sets(per_fold, others)) <= with_sc else others
    labels = [lab for lab, m in zip(T5_LABELS, T5_METHODS) if m in methods]
    paper = {clf: [v for v, m in zip(PAPER_T5[clf], T5_METHODS) if m in methods] for clf in CLFS}
    groups = {"all": methods}
    res = table_ranks(per_fold, groups, discs, unit, args.alpha)
    out = [f"# Paper 004, Table 5: AMD against other methods, ours vs paper{' (QUICK SMOKE RUN)' if args.quick else ''}",
           "", f"{SCRIPT.header(getattr(args, 'run_commit', None))}; timings indicative only.", ""]
    sets_all = sorted({s for _, (_, ss) in res.items() for s in ss})
    out += protocol_text(args, unit_desc, len(sets_all)) + reduced_text(args, sets_all)
    if "SPEC_CMI" not in methods:
        out += ["**SPEC_CMI** (a quadratic program over all feature pairs: about 2 min per fold on colon's 2000 "
                f"features here) ran only on sets of at most {args.spec_cmi_max_features} features"
                + (f" ({', '.join(sorted(with_sc))})" if with_sc else "") + "; it is left out of the ranking "
                "below, which ranks six methods (the paper ranks seven: its SPEC_CMI column is dropped from the "
                "paper row too, the paper's other ranks are kept as printed).", ""]
    rows = []
    for disc, (r, sets) in res.items():
        for kind, col in (("test", "rank"), ("plain", "plain_rank")):
            a = avg(r, col)
            for clf in CLFS:
                rows.append({"ranks": f"ours, {DISC_LABEL[disc]}, {kind}, {len(sets)} sets", "classifier": clf,
                             **{lab: f"{a[('all', clf, m)]:.2f}" for lab, m in zip(labels, methods)}})
    for clf in CLFS:
        rows.append({"ranks": "paper (29 sets)", "classifier": clf,
                     **{lab: f"{v:.2f}" for lab, v in zip(labels, paper[clf])}})
    out += ["## Average ranks", "", markdown(rows, ["ranks", "classifier"] + labels), "",
            "## Do the AMD methods beat the others?", ""]
    for disc, (r, sets) in res.items():
        a = avg(r)
        for clf in CLFS:
            ours = [a[("all", clf, m)] for m in methods]
            err = r[r["classifier"] == clf].pivot(index="dataset", columns="method", values="error_pct")
            best_amd = err[methods[:2]].min(axis=1)
            out.append(f"- {DISC_LABEL[disc]}, **{clf}**: ours {_order(ours, labels)}; paper "
                       f"{_order(paper[clf], labels)}. The better AMD method has a lower mean error than "
                       f"Trace on {int((best_amd < err['Trace']).sum())} and than SPEC on "
                       f"{int((best_amd < err['SPEC']).sum())} of {len(sets)} sets.")
    out.append("")
    for disc, (r, sets) in res.items():
        det = []
        for ds in sets:
            for clf in CLFS:
                s = r[(r["dataset"] == ds) & (r["classifier"] == clf)].set_index("method")
                det.append({"dataset": ds, "classifier": clf,
                            **{lab: f"{s.loc[m, 'error_pct']:.1f} ({s.loc[m, 'rank']})"
                               for lab, m in zip(labels, methods)}})
        out += [f"## Per data set, {DISC_LABEL[disc]}: error % (test-based rank)", "",
                markdown(det, ["dataset", "classifier"] + labels), ""]
    return "\n".join(out), res


def main(argv=None):
    args = SCRIPT.cli(argv, quick="smoke test: wine and lung_small (when present), 1 x 3-fold CV",
                      from_csv=True, repeats=1, repeats_help="repeats of the 10-fold CV (paper: 50)", options=OPTIONS)
    names = []
    for tok in args.datasets.split(","):
        names += (list(PAPER_SETS) if tok == "paper" else EXTRA_SETS if tok == "extra" else list(HD_SETS)
                  if tok == "hd" else [tok])
    tables = sorted({int(t) for t in args.tables.split(",")})
    discs = [d for d in args.discretizer.split(",") if d]
    if args.quick:
        names, args.repeats, args.folds = ["wine", "lung_small"], 1, 3
    started = time.perf_counter()
    if args.from_csv:
        per_fold = read_parts("folds")
        if "discretizer" not in per_fold:  # files written before the discretizer column
            per_fold["discretizer"] = "mdl"
        per_fold = per_fold[per_fold["dataset"].isin(names)]
        meta = read_parts("data")
        args.run_commit = None
        meta = meta[meta["dataset"].isin(names)]
        if "commit" in meta and len(meta):  # one commit, or each commit with the data sets of each table it ran
            by = {c: {p: sorted(set(h["dataset"])) for p, h in g.groupby("part", sort=True)}
                  for c, g in meta.groupby("commit", sort=True)}
            args.run_commit = (next(iter(by)) if len(by) == 1 else "; ".join(
                f"{c} ({'; '.join(f'{p}: ' + ', '.join(ds) for p, ds in parts.items())})" for c, parts in by.items()))
        # one row per data set; its minutes are those of every run on it (all tables)
        minutes = pd.to_numeric(meta.get("minutes", pd.Series(dtype=float)), errors="coerce").groupby(
            meta["dataset"]).sum()
        meta = meta.drop(columns=[c for c in ("commit", "total_minutes", "part") if c in meta]).drop_duplicates(
            "dataset", keep="first")
        info = [dict(r, minutes=float(minutes.get(r["dataset"], 0.0))) if "minutes" in r else r
                for r in meta.to_dict("records")]
        args.repeats = int(per_fold["repeat"].max()) + 1
        discs = [d for d in ("mdl", "authors") if d in set(per_fold["discretizer"])] or discs
        total = float(pd.to_numeric(pd.Series([r.get("minutes", 0) for r in info]), errors="coerce").sum()) * 60
    else:
        per_fold, info = run(args, names, tables, discs)
        total = time.perf_counter() - started
        if per_fold.empty:
            raise SystemExit("no data set could be loaded")
    unit = args.test_unit if args.test_unit != "auto" else ("repeat" if args.repeats >= 5 else "fold")
    per_test = per_fold.groupby(["discretizer", "dataset", "method", "classifier"]).size().max()
    unit_desc = (f"per-repeat mean errors ({args.repeats} per method)" if unit == "repeat"
                 else f"per-fold errors ({per_test} per method and set)")
    if args.from_csv:
        tables = [t for t, ms in ((3, [method_name("J^{1,0}", "FID")]), (4, ["MIM J^{0,0}"]), (5, ["Trace"]))
                  if set(ms) <= set(per_fold["method"])]
    for t, (fn, base) in {3: (t3_report, None), 4: (t4_report, "amd_order"), 5: (t5_report, "amd_table5")}.items():
        if t not in tables:
            continue
        text, res = fn(args, per_fold, info, total, discs, unit, unit_desc)
        if not res:
            print(f"Table {t}: no data set has every method of the table")
            continue
        ranks = pd.concat([r.assign(discretizer=d) for d, (r, _) in res.items()], ignore_index=True)
        if base is None:
            SCRIPT.write_csv("", ranks)
            SCRIPT.publish(text)
        else:
            suffix = ("_quick" if args.quick else "")
            ranks.to_csv(SCRIPT.out(base + suffix, "csv"), index=False)
            with open(SCRIPT.out(base + suffix, "md"), "w") as fh:
                fh.write(text)
            print(text)


if __name__ == "__main__":
    main()
