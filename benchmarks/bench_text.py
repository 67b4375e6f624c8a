"""Real text sets through the sparse path: the same picks as dense, and the selected vocabulary downstream.

    nice -n 10 python benchmarks/bench_text.py [--data-dir DIR] [--quick]

The term-count sets of the scikit-feature repository (BASEHOCK, PCMAC, RELATHE: newsgroup
documents x vocabulary, two classes), read from ``--data-dir`` (default
``../shared/data/skfeature``; a set absent there is skipped with a message). Each set's ``X``
(term counts) is passed to tensorprob as a CSR matrix, the way a text pipeline holds it.

Part 1, "sparse = dense": MIM, MRMR, JMI and CMIM at k = ``--k`` on all the rows, from the
CSR matrix and from its dense copy: the picks must be identical and the scores equal (the
largest score difference is reported); ``sparse_s`` / ``dense_s`` time one ``fit`` each
(encoding included; median of ``--repeats`` warm calls, one thread).

Part 2, downstream accuracy at equal k: ``--folds``-fold stratified cross-validation
(``--seed``). In every fold each method selects on the training rows only (tensorprob's
MIM, MRMR, JMI, CMIM from the CSR matrix of counts under the default encoding, and from the
terms' presence, count > 0, marked "presence"; scikit-learn's ``chi2`` and
``mutual_info_classif(discrete_features=True)`` scores, top k), and a multinomial naive Bayes
and a linear SVM (C = 0.1) fitted on the selected columns of the training rows are scored on
the held-out rows; the table gives the mean accuracy over the folds (and its standard
deviation) at each k, and ``select_s`` the mean selection time per fold.
Writes ``text.csv``, ``text_accuracy.csv`` and ``text.md`` with the machine, date and commit.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, markdown

SCRIPT = Script("text", __doc__, default_threads=1)

import numpy as np

SETS = ("BASEHOCK", "PCMAC", "RELATHE")
METHODS = ("MIM", "MRMR", "JMI", "CMIM")
PEERS = ("chi2", "mutual_info_classif")
DEFAULT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "skfeature")


def load(data_dir: str, name: str):
    """(CSR term counts, labels) of one set, or None when its file is absent."""
    import scipy.io as sio
    import scipy.sparse as sp

    path = os.path.join(data_dir, f"{name}.mat")
    if not os.path.exists(path):
        return None
    d = sio.loadmat(path)
    return sp.csr_matrix(d["X"]), np.asarray(d["Y"]).ravel()


def _median_time(fn, repeats: int) -> tuple[float, object]:
    out = fn()  # warm
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def same_picks_rows(name: str, X, y, k: int, repeats: int) -> list[dict]:
    import tensorprob as tp

    rows = []
    dense = X.toarray()
    for method in METHODS:
        cls = getattr(tp, method)
        t_sparse, s = _median_time(lambda: cls(k=k).fit(X, y), repeats)
        t_dense, d = _median_time(lambda: cls(k=k).fit(dense, y), repeats)
        diff = float(np.max(np.abs(np.asarray(s.scores_) - np.asarray(d.scores_))))
        rows.append(dict(part="same", data=name, shape=f"{X.shape[0]:,} x {X.shape[1]:,}", nnz=X.nnz,
                         largest_alphabet=int(s.encoder_.cardinalities_.max()), method=method, k=k,
                         same_picks=bool(np.array_equal(s.selected_, d.selected_)), max_score_diff=f"{diff:.1e}",
                         sparse_s=round(t_sparse, 3), dense_s=round(t_dense, 3)))
        print(rows[-1], flush=True)
    return rows


def accuracy_rows(name: str, X, y, k_list: list[int], folds: int, seed: int) -> list[dict]:
    from sklearn.feature_selection import chi2, mutual_info_classif
    from sklearn.model_selection import StratifiedKFold
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.svm import LinearSVC

    import tensorprob as tp

    kmax = max(k_list)
    presence = [f"{m} presence" for m in METHODS]
    methods = [*METHODS, *presence, "chi2", "mutual_info_classif"]
    acc = {(m, k, c): [] for m in methods for k in k_list for c in ("naive_bayes", "linear_svm")}
    seconds = {m: [] for m in methods}
    split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for f, (tr, te) in enumerate(split.split(np.zeros(len(y)), y)):
        Xtr, Xte = X[tr], X[te]
        for m in methods:
            t = time.perf_counter()
            if m in METHODS:
                picks = getattr(tp, m)(k=kmax).fit(Xtr, y[tr]).selected_
            elif m in presence:  # the terms' presence (count > 0), the usual binary text features
                picks = getattr(tp, m.split()[0])(k=kmax).fit((Xtr > 0).astype(np.int8), y[tr]).selected_
            else:
                if m == "chi2":
                    scores = chi2(Xtr, y[tr])[0]
                else:
                    scores = mutual_info_classif(Xtr, y[tr], discrete_features=True, random_state=seed)
                picks = np.argsort(-np.nan_to_num(scores, nan=-1.0), kind="stable")[:kmax]
            seconds[m].append(time.perf_counter() - t)
            for k in k_list:
                cols = np.asarray(picks[:k])
                for cname, clf in (("naive_bayes", MultinomialNB()),
                                   ("linear_svm", LinearSVC(C=0.1, random_state=seed))):
                    clf.fit(Xtr[:, cols], y[tr])
                    acc[(m, k, cname)].append(float((clf.predict(Xte[:, cols]) == y[te]).mean()))
        print(f"{name}: fold {f + 1}/{folds} done", flush=True)
    rows = []
    for m in methods:
        for k in k_list:
            row = dict(part="accuracy", data=name, method=m, k=k, select_s=round(float(np.mean(seconds[m])), 3))
            for cname in ("naive_bayes", "linear_svm"):
                a = np.asarray(acc[(m, k, cname)])
                row[cname] = round(float(a.mean()), 4)
                row[f"{cname}_sd"] = round(float(a.std(ddof=1)) if a.size > 1 else 0.0, 4)
            rows.append(row)
    return rows


def best_by_k(acc: list[dict], classifier: str) -> list[dict]:
    """Per set and k: the best tensorprob selector's accuracy beside chi2's and mutual_info_classif's."""
    out = []
    for data in dict.fromkeys(r["data"] for r in acc):
        for k in dict.fromkeys(r["k"] for r in acc):
            rows = [r for r in acc if r["data"] == data and r["k"] == k]
            peer = {r["method"]: r[classifier] for r in rows if r["method"] in PEERS}
            row = dict(data=data, k=k)
            for label, names in (("counts", METHODS), ("presence", [f"{m} presence" for m in METHODS])):
                best = max((r for r in rows if r["method"] in names), key=lambda r: r[classifier])
                row[f"best_tensorprob_{label}"] = f"{best['method'].split()[0]} {best[classifier]:.4f}"
            out.append(dict(row, chi2=peer.get("chi2", ""), mutual_info_classif=peer.get("mutual_info_classif", "")))
    return out


def against_peers(acc: list[dict]) -> list[dict]:
    """Per tensorprob method and classifier: in how many (set, k) cells it is at or above the better peer."""
    out = []
    for m in [*METHODS, *[f"{x} presence" for x in METHODS]]:
        for clf in ("linear_svm", "naive_bayes"):
            diffs = []
            for r in acc:
                if r["method"] != m:
                    continue
                peers = [p[clf] for p in acc if p["data"] == r["data"] and p["k"] == r["k"] and p["method"] in PEERS]
                diffs.append(r[clf] - max(peers))
            if diffs:
                d = np.asarray(diffs)
                out.append(dict(method=m, classifier=clf, at_or_above=f"{int((d >= 0).sum())} of {d.size}",
                                mean_points=round(100 * float(d.mean()), 2), worst_points=round(100 * float(d.min()), 2),
                                best_points=round(100 * float(d.max()), 2)))
    return out


BEST_COLUMNS = ["data", "k", "best_tensorprob_counts", "best_tensorprob_presence", "chi2", "mutual_info_classif"]


def main() -> None:
    ap = SCRIPT.parser(quick="one set, k = 10, 3 folds (a check of the script)", repeats=3, devices=True,
                       repeats_help="warm timed runs of part 1, median reported (default 3)")
    ap.add_argument("--data-dir", default=DEFAULT_DIR,
                    help="folder of BASEHOCK.mat, PCMAC.mat, RELATHE.mat (default ../shared/data/skfeature)")
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma-separated sets (default {','.join(SETS)})")
    ap.add_argument("--k", type=int, default=50, help="features selected in part 1 (default 50)")
    ap.add_argument("--ks", default="10,20,50,100", help="k of part 2 (default 10,20,50,100)")
    ap.add_argument("--folds", type=int, default=10, help="cross-validation folds of part 2 (default 10)")
    args = SCRIPT.start(ap)
    sets, k, ks, folds = args.sets.split(","), args.k, [int(v) for v in args.ks.split(",")], args.folds
    if SCRIPT.quick:
        sets, k, ks, folds = sets[:1], 10, [10], 3
    t_start = time.perf_counter()
    same, acc, absent = [], [], []
    for name in sets:
        data = load(args.data_dir, name)
        if data is None:
            print(f"{name}.mat is not in {args.data_dir}: skipped", flush=True)
            absent.append(name)
            continue
        X, y = data
        same += same_picks_rows(name, X, y, k, args.repeats)
        SCRIPT.save(same)
        acc += accuracy_rows(name, X, y, ks, folds, args.seed)
        SCRIPT.write_csv("accuracy", acc)
    if not same:
        raise SystemExit(f"none of {sets} found in {args.data_dir}: nothing to run")
    minutes = (time.perf_counter() - t_start) / 60
    text = "\n".join([
        "# Real text sets through the sparse path (issue 46 item 5)", "",
        SCRIPT.header() + f"; {minutes:.1f} min; data: `{os.path.abspath(args.data_dir)}`"
        + (f" ({', '.join(absent)} absent)" if absent else ""), "",
        "## Sparse = dense", "",
        f"Each method at k = {k} on all the rows, from the CSR matrix and from its dense copy (`largest_alphabet`: the "
        "largest number of codes of a column under the default encoding).", "",
        markdown(same, ["data", "shape", "nnz", "largest_alphabet", "method", "same_picks", "max_score_diff",
                        "sparse_s", "dense_s"]), "",
        "## Downstream accuracy at equal k", "",
        f"{folds}-fold stratified cross-validation (seed {args.seed}); each method selects on the training rows of "
        "every fold (tensorprob from the counts under the default encoding, or from the terms' presence, count > 0); mean accuracy on the held-out rows (`_sd`: standard deviation over the folds); `select_s`: mean "
        "selection time per fold, one thread.", "",
        "Best tensorprob selector beside scikit-learn's, linear SVM:", "",
        markdown(best_by_k(acc, "linear_svm"), BEST_COLUMNS), "",
        "Best tensorprob selector beside scikit-learn's, multinomial naive Bayes:", "",
        markdown(best_by_k(acc, "naive_bayes"), BEST_COLUMNS), "",
        "Each tensorprob selector against the better of `chi2` and `mutual_info_classif` in every (set, k) cell "
        "(accuracy points):", "",
        markdown(against_peers(acc), ["method", "classifier", "at_or_above", "mean_points", "worst_points",
                                      "best_points"]), "",
        "All rows:", "",
        markdown(acc, ["data", "method", "k", "select_s", "naive_bayes", "naive_bayes_sd", "linear_svm",
                       "linear_svm_sd"]), ""])
    SCRIPT.publish(text)
    SCRIPT.done([])


if __name__ == "__main__":
    main()
