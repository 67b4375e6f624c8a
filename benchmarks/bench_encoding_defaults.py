"""Old and new encoding defaults of the selectors: accuracy after selection and selection time on the papers' sets.

    nice -n 10 python benchmarks/bench_encoding_defaults.py [--quick] [--datasets madelon,warpAR10P]

The new default (issue 41) keeps the values of an integral numeric column as categories only
while a table of two such columns and the class holds ``min_cell_count`` (5) rows per cell on
average, ``I <= max(n_bins, floor(sqrt(M / (C * 5))))``, and bins the other columns into
``n_bins`` (5) equal-width bins; the old default kept up to ``max_categories`` (64) values
(``config_context(min_cell_count=0)``). For every scikit-feature ``.mat`` set in
``--data-dir`` (default ``../shared/data/skfeature``), read as stored (``scipy.io.loadmat``: its
uint8 / int16 / float64 values, as a user gets them), JMI and MRMR select inside each fold of a
stratified 5-fold cross-validation (``--folds``) on the training rows, and a 3-NN and a linear
SVM (C = 1) on the standardized raw values of the selected columns are scored on the held-out
rows, at k = 10, 20, 50 (the prefixes of one k = 50 selection: greedy picks are nested, which
the script checks on the first fold). Reported: mean held-out accuracy, the selection time at
k = 50 (median over the folds, one thread) and at k = 10 and 20 (first fold), the folds whose
selection warned that its scores saturate, and the largest alphabet of each encoding. Where
the two defaults encode every fold alike, the old default's selection is the new one's and is
not run again (``same encoding``). Writes ``encoding_defaults.csv`` and ``.md`` with the
machine, date and commit.
"""
from __future__ import annotations

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, markdown

SCRIPT = Script("encoding_defaults", __doc__, default_threads=1)

import numpy as np

import tensorprob as tp

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data",
                        "skfeature")
METHODS = ("jmi", "mrmr")
KS = (10, 20, 50)
DEFAULTS = {"new": 5, "old": 0}  # min_cell_count of each default


def read_set(path: str) -> tuple[np.ndarray, np.ndarray]:
    """X as stored in the file (its own dtype) and y."""
    import scipy.io
    import scipy.sparse as sp

    d = scipy.io.loadmat(path)
    X = d["X"].toarray() if sp.issparse(d["X"]) else np.asarray(d["X"])
    return X, np.asarray(d["Y"]).ravel()


def accuracies(X: np.ndarray, y: np.ndarray, tr: np.ndarray, te: np.ndarray, cols: list[int]) -> dict:
    """Held-out accuracy of 3-NN and a linear SVM (C=1) on the standardized raw values of ``cols``."""
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    Xs = X[:, cols].astype(np.float64)
    out = {}
    for name, clf in (("3nn", KNeighborsClassifier(3)), ("svm", LinearSVC(C=1.0, max_iter=5000))):
        model = make_pipeline(StandardScaler(), clf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # LinearSVC convergence on a few hundred rows
            model.fit(Xs[tr], y[tr])
        out[name] = float(np.mean(model.predict(Xs[te]) == y[te]))
    return out


def encoding_of(X: np.ndarray, y: np.ndarray, min_cell_count: float) -> tuple[list, int]:
    """(cardinalities, largest alphabet) of the selectors' encoding of (X, y) under a default."""
    with tp.config_context(min_cell_count=min_cell_count), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = tp.Encoder(discretizer="uniform", max_categories="auto").fit(X, y)
    return enc.cardinalities_.tolist(), int(enc.cardinalities_.max())


def select(method: str, X: np.ndarray, y: np.ndarray, k: int, min_cell_count: float) -> tuple[list[int], float, bool]:
    """(picks, seconds, saturated) of one selection under a default."""
    with tp.config_context(min_cell_count=min_cell_count), warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        sel = tp.select_features(X, y, k, method=method, device="cpu", dtype="float64")
        seconds = time.perf_counter() - t0
    saturated = any("saturate" in str(w.message) for w in rec)
    return [int(j) for j in sel.selected_], seconds, saturated


def run_set(name: str, X: np.ndarray, y: np.ndarray, folds: int, seed: int, quick: bool) -> list[dict]:
    from sklearn.model_selection import StratifiedKFold

    kmax = min(max(KS), X.shape[1])
    ks = [k for k in KS if k <= kmax] or [kmax]
    splits = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(X, y))
    if quick:
        splits = splits[:1]
    # the encodings of every fold under both defaults (the training rows decide them)
    enc = {d: [encoding_of(X[tr], y[tr], m) for tr, _ in splits] for d, m in DEFAULTS.items()}
    same = all(a[0] == b[0] for a, b in zip(enc["new"], enc["old"]))
    rows = []
    for method in METHODS:
        result = {}
        for d, m in DEFAULTS.items():
            if d == "old" and same:
                result["old"] = result["new"]
                continue
            acc = {k: {"3nn": [], "svm": []} for k in ks}
            times, saturated = [], 0
            small = {}
            for f, (tr, te) in enumerate(splits):
                picks, seconds, sat = select(method, X[tr], y[tr], kmax, m)
                times.append(seconds)
                saturated += sat
                for k in ks:
                    for c, v in accuracies(X, y, tr, te, picks[:k]).items():
                        acc[k][c].append(v)
                if f == 0:  # the smaller k's on their own: their time, and that they are the prefixes
                    for k in ks[:-1]:
                        p, s, _ = select(method, X[tr], y[tr], k, m)
                        assert p == picks[:k], (name, method, d, k)  # greedy picks are nested
                        small[k] = s
            result[d] = dict(acc=acc, time=float(np.median(times)), small=small, saturated=saturated,
                             alphabet=max(e[1] for e in enc[d]))
        for k in ks:
            row = {"dataset": name, "rows": X.shape[0], "features": X.shape[1], "classes": len(np.unique(y)),
                   "dtype": str(X.dtype), "method": method.upper(), "k": k, "same encoding": same,
                   "folds": len(splits)}
            for d in DEFAULTS:
                r = result[d]
                row[f"{d} 3nn"] = float(np.mean(r["acc"][k]["3nn"]))
                row[f"{d} svm"] = float(np.mean(r["acc"][k]["svm"]))
                row[f"{d} s"] = r["time"] if k == ks[-1] else r["small"].get(k, float("nan"))
                row[f"{d} saturated folds"] = r["saturated"]
                row[f"{d} largest alphabet"] = r["alphabet"]
            rows.append(row)
        print(f"{name} {method}: new 3-NN@{ks[-1]} {rows[-1]['new 3nn']:.3f} ({rows[-1]['new s']:.2f} s), "
              f"old {rows[-1]['old 3nn']:.3f} ({rows[-1]['old s']:.2f} s){' (same encoding)' if same else ''}",
              flush=True)
    return rows


def report(rows: list[dict], seconds: float) -> str:
    cols = ["dataset", "rows", "features", "classes", "dtype", "method", "k", "new 3nn", "old 3nn", "new svm",
            "old svm", "new s", "old s", "new saturated folds", "old saturated folds", "new largest alphabet",
            "old largest alphabet", "same encoding"]
    changed = sorted({r["dataset"] for r in rows if not r["same encoding"]})
    lines = ["# Selectors' encoding defaults: old (up to 64 values by value) against new (the rows' limit)", "",
             SCRIPT.header(), "", f"Total {seconds / 60:.1f} min. Mean held-out accuracy of {rows[0]['folds']}-fold "
             "stratified cross-validation (selection inside the folds, on the training rows; 3-NN and a linear "
             "SVM on the standardized raw values of the picks); `new s`/`old s`: selection seconds (k = 50: "
             "median over the folds; k = 10, 20: first fold; one thread); saturated folds: selections that "
             "warned that their scores saturate; `same encoding`: both defaults encode every fold alike (the old "
             "default's selection is then the new one's, not run again).", "",
             f"Sets whose encoding changes: {', '.join(changed) if changed else 'none'}.", "",
             markdown(rows, cols)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = SCRIPT.parser(quick="one fold, the sets given by --datasets (default: the three whose encoding changes)",
                       seed=True)
    ap.add_argument("--data-dir", default=DATA_DIR, help="folder of the scikit-feature .mat files")
    ap.add_argument("--datasets", help="comma-separated set names (file stems); default every .mat file")
    ap.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    args = SCRIPT.parse(ap, argv)
    print(f"commit: {SCRIPT.commit}", flush=True)
    if not os.path.isdir(args.data_dir):
        raise SystemExit(f"no data folder {args.data_dir}: pass --data-dir")
    names = sorted(f[:-4] for f in os.listdir(args.data_dir) if f.endswith(".mat"))
    if args.datasets:
        names = [n for n in names if n in set(args.datasets.split(","))]
    elif SCRIPT.quick:
        names = [n for n in names if n in ("madelon", "warpAR10P", "warpPIE10P")]
    t0 = time.perf_counter()
    rows: list[dict] = []
    for name in names:
        X, y = read_set(os.path.join(args.data_dir, name + ".mat"))
        rows += run_set(name, X, y, args.folds, args.seed, SCRIPT.quick)
        SCRIPT.write_csv("", [dict(r, commit=SCRIPT.commit) for r in rows])  # a checkpoint after every set
    SCRIPT.publish(report(rows, time.perf_counter() - t0))


if __name__ == "__main__":
    main()
