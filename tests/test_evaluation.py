"""Evaluation protocols: no leakage, shapes, statistics against hand-computed values."""
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine

import tensorprob as tp
from tensorprob.evaluation import average_ranks, cv_protocol, holdout_protocol, holm, pairwise_wilcoxon
from tensorprob.selection import CodedSelector


class RecordingSelector(CodedSelector):
    """Picks features by variance rank and records the rows it was fitted on."""

    seen: ClassVar[list] = []

    def __init__(self, k=3, offset=0, discretizer="uniform", n_bins=5, device="auto", dtype=None):
        self.k, self.offset, self.discretizer, self.n_bins, self.device, self.dtype = k, offset, discretizer, n_bins, \
            device, dtype

    def fit(self, X, y):
        RecordingSelector.seen.append(np.asarray(X)[:, -1].copy())  # last column holds the row id
        return super().fit(X[:, :-1], y)

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        order = (np.argsort(-codes.var(0), kind="stable") + self.offset) % codes.shape[1]
        return order[:k], np.zeros(k)


def data():
    d = load_wine()
    return np.column_stack([d.data, np.arange(len(d.target))]), d.target


def test_holdout_selects_on_training_rows_only():
    X, y = data()
    RecordingSelector.seen = []
    res = holdout_protocol({"var": RecordingSelector()}, X, y, ks=[1, 2, 3], n_repeats=3, progress=False,
                           dataset="wine")
    assert len(RecordingSelector.seen) == 3
    assert set(res.columns) >= {"dataset", "method", "split", "classifier", "k", "accuracy", "error"}
    assert len(res) == 3 * 3 and (res["accuracy"].between(0, 1)).all()
    from sklearn.model_selection import StratifiedShuffleSplit

    for seen, (tr, te) in zip(RecordingSelector.seen, StratifiedShuffleSplit(3, test_size=0.3, random_state=0)
                              .split(X, y)):
        assert set(seen.astype(int)) == set(tr) and not set(seen.astype(int)) & set(te)


def test_cv_protocol_and_leave_one_out():
    X, y = data()
    res = cv_protocol({"var": RecordingSelector(), "shift": RecordingSelector(offset=1)}, X, y, ks=[2, 4],
                      n_splits=5, classifiers=("3nn", "linear_svm"), progress=False, dataset="wine")
    assert len(res) == 2 * 5 * 2 * 2
    sub = np.random.default_rng(0).permutation(len(y))[:60]
    small = cv_protocol({"var": RecordingSelector()}, X[sub], y[sub], ks=[2], classifiers=("1nn",), progress=False)
    assert res["split"].nunique() == 5 and small["split"].nunique() == 60  # leave-one-out below 100 samples
    summ = tp.evaluation.summarize(res)
    assert set(summ["method"]) == {"var", "shift"}


def test_holm_matches_hand_computation():
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(holm([0.5, 0.001]), [0.5, 0.002])


def test_wilcoxon_and_average_ranks():
    rows = []
    for ds, errs in (("a", {"m1": 0.1, "m2": 0.3, "m3": 0.2}), ("b", {"m1": 0.2, "m2": 0.4, "m3": 0.4})):
        for m, e in errs.items():
            for split in range(10):
                rows.append({"dataset": ds, "classifier": "3nn", "method": m, "split": split, "k": 10,
                             "error": e + 0.001 * split})
    res = pd.DataFrame(rows)
    ranks = average_ranks(res)
    assert ranks.loc["m1", "3nn"] == 1.0 and ranks.loc["m2", "3nn"] == 2.75 and ranks.loc["m3", "3nn"] == 2.25
    w = pairwise_wilcoxon(res, "m1")
    assert set(w["outcome"]) == {"win"} and (w["p_holm"] < 0.05).all()
    with pytest.raises(ValueError, match="reference method"):
        pairwise_wilcoxon(res, "nope")


def test_bad_k_is_reported():
    X, y = data()
    with pytest.raises(ValueError, match="features"):
        tp.evaluation.evaluate_splits({"var": RecordingSelector()}, X[:, :-1], y, [(np.arange(100), np.arange(100, 178))],
                                      [50], progress=False)


# --- evaluation science moved out of the benchmark scripts -------------------------------------------------


def test_win_tie_loss_matches_hand_paired_t():
    from scipy.stats import t as student_t

    from tensorprob.evaluation import win_tie_loss

    a = np.array([0.10, 0.12, 0.11, 0.15, 0.09])
    b = np.array([0.14, 0.15, 0.13, 0.18, 0.12])
    d = a - b  # hand paired t statistic: mean(d) / (sd(d) / sqrt(n)), two-sided p from Student's t(n - 1)
    t = d.mean() / (d.std(ddof=1) / np.sqrt(d.size))
    p = 2 * student_t.sf(abs(t), d.size - 1)
    out = win_tie_loss(a, b)
    assert out.outcome == "W" and out.p_value == pytest.approx(p, rel=1e-10)
    assert win_tie_loss(b, a).outcome == "L"
    noisy = np.array([0.13, 0.12, 0.16, 0.11, 0.14])  # differences of both signs: not significant
    assert win_tie_loss(a, noisy).outcome == "T"
    assert win_tie_loss(a, a) == ("T", pytest.approx(float("nan"), nan_ok=True))
    assert win_tie_loss([0.1], [0.2]).outcome == "T"
    with pytest.raises(ValueError, match="same length"):
        win_tie_loss([0.1, 0.2], [0.1, 0.2, 0.3])


def _wilcoxon_p(a, b):
    """Two-sided rank-sum p-value by hand: normal approximation of the rank sum (no ties in the data below)."""
    from scipy.stats import norm

    allv = np.concatenate([a, b])
    ranks = np.argsort(np.argsort(allv)) + 1.0
    n1, n2 = len(a), len(b)
    s = ranks[:n1].sum()
    z = (s - n1 * (n1 + n2 + 1) / 2) / np.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    return 2 * norm.sf(abs(z))


def test_significance_ranks_against_hand_holm_wilcoxon():
    from tensorprob.evaluation import significance_ranks

    rng = np.random.default_rng(3)
    errs = {"a": 0.10 + 0.01 * rng.standard_normal(8), "b": 0.105 + 0.01 * rng.standard_normal(8),
            "c": 0.30 + 0.01 * rng.standard_normal(8)}
    rows = [{"dataset": "d", "classifier": "svm", "method": m, "split": i, "k": 10, "error": float(e)}
            for m, v in errs.items() for i, e in enumerate(v)]
    res = pd.DataFrame(rows)
    out = significance_ranks(res, {"g": ["a", "b", "c"]}).set_index("method")
    # independent: for each method, Holm over its two comparisons (hand Holm for m = 2), count significant losses
    for m, e in errs.items():
        others = [o for o in errs if o != m]
        p = np.array([_wilcoxon_p(e, errs[o]) for o in others])
        order = np.argsort(p)
        adj = np.empty(2)
        adj[order[0]] = min(1.0, 2 * p[order[0]])
        adj[order[1]] = min(1.0, max(adj[order[0]], p[order[1]]))
        losses = sum(adj[j] < 0.05 and e.mean() > errs[o].mean() for j, o in enumerate(others))
        assert out.loc[m, "rank"] == 1 + losses
        assert out.loc[m, "mean"] == pytest.approx(e.mean())
    assert out.loc["c", "rank"] == 3  # both others are far lower
    assert out.loc["a", "better_than"] == ("c",) and out.loc["c", "better_than"] == ()
    # default group: every method; two groups rank within themselves only
    assert set(significance_ranks(res)["group"]) == {"all"}
    two = significance_ranks(res, {"x": ["a", "c"], "y": ["b"]}).set_index(["group", "method"])
    assert two.loc[("y", "b"), "rank"] == 1 and two.loc[("x", "c"), "rank"] == 2


def test_accuracy_curves_mean_std_per_k():
    from tensorprob.evaluation import accuracy_curves

    res = pd.DataFrame({"dataset": "d", "classifier": "1nn", "method": ["m"] * 6, "split": [0, 1, 2] * 2,
                        "k": [1, 1, 1, 2, 2, 2], "accuracy": [0.5, 0.6, 0.7, 0.8, 0.8, 0.9]})
    cur = accuracy_curves(res, scale=100).set_index("k")
    np.testing.assert_allclose(cur["mean"], [60.0, 100 * 2.5 / 3])
    np.testing.assert_allclose(cur["std"], [100 * np.std([0.5, 0.6, 0.7], ddof=1), 100 * np.std([0.8, 0.8, 0.9],
                                                                                                  ddof=1)])
    assert (cur["count"] == 3).all() and list(cur.columns[:3]) == ["dataset", "classifier", "method"]


def test_selection_agreement():
    from tensorprob.evaluation import selection_agreement

    assert selection_agreement([1, 2, 3], [1, 2, 3]) == (3, 1.0)
    assert selection_agreement([1, 2, 3, 4], [1, 3, 2, 9]) == (1, 0.75)
    assert selection_agreement([5], [6]) == (0, 0.0)
    assert selection_agreement([], []) == (0, 0.0)
    assert selection_agreement(np.array([0, 7]), [0, 7, 8]).overlap == pytest.approx(2 / 3)


def _brute_mi(C, y, S):
    """I(X_S; Y) by an explicit joint table over every cell (numpy, independent of tensorprob.counting)."""
    XS = C[:, S]
    cards = XS.max(0) + 1
    cell = np.ravel_multi_index(XS.T, cards) if S else np.zeros(len(y), dtype=np.int64)
    n_cells, n_cls = int(np.prod(cards)) if S else 1, int(y.max()) + 1
    joint = np.zeros((n_cells, n_cls))
    np.add.at(joint, (cell, y), 1.0)
    p = joint / joint.sum()
    px, py = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / (px @ py)[nz])).sum())


def test_plugin_mutual_information_matches_brute_force():
    from tensorprob.evaluation import plugin_mutual_information

    rng = np.random.default_rng(0)
    C = rng.integers(0, 4, size=(500, 6))
    y = (C[:, 0] + C[:, 2] + rng.integers(0, 2, 500)) % 3
    for S in ([0], [1], [0, 2], [0, 2, 5], [1, 3, 4, 5]):
        assert plugin_mutual_information(C, y, S) == pytest.approx(_brute_mi(C, y, S), abs=1e-12)
    assert plugin_mutual_information(C, y, []) == 0.0
    h_y = -sum(c / 500 * np.log(c / 500) for c in np.bincount(y))
    assert plugin_mutual_information(C, y, range(6)) <= h_y + 1e-12
    with pytest.raises(ValueError, match="feature indices"):
        plugin_mutual_information(C, y, [6])


def test_codes_classifier_matches_kbins_1nn():
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import KBinsDiscretizer

    from tensorprob.evaluation import make_classifier

    X, y = data()
    X = X[:, :-1]
    tr, te = np.arange(0, 178, 2), np.arange(1, 178, 2)
    clf = make_classifier("1nn", inputs="codes").fit(X[tr], y[tr])
    kb = KBinsDiscretizer(n_bins=5, encode="ordinal", strategy="uniform", subsample=None).fit(X[tr])
    ref = KNeighborsClassifier(n_neighbors=1).fit(kb.transform(X[tr]), y[tr]).predict(kb.transform(X[te]))
    np.testing.assert_array_equal(clf.predict(X[te]), ref)
    assert make_classifier("linear_svm", inputs="codes").fit(X[tr], y[tr]).score(X[te], y[te]) > 0.5
    with pytest.raises(ValueError, match="inputs"):
        make_classifier("1nn", inputs="bits")


def test_evaluate_splits_return_fitted_and_labelled_classifiers():
    from tensorprob.evaluation import evaluate_splits, holdout_splits, make_classifier

    X, y = data()
    splits = holdout_splits(y, n_repeats=2, random_state=1)
    res, fitted = evaluate_splits({"var": RecordingSelector()}, X, y, splits, [1, 2],
                                  {"codes": make_classifier("1nn", inputs="codes"), "continuous": "1nn"},
                                  progress=False, return_fitted=True)
    assert set(fitted) == {("var", 0), ("var", 1)} and all(len(s.selected_) == 2 for s in fitted.values())
    assert set(res["classifier"]) == {"codes", "continuous"} and len(res) == 2 * 2 * 2
    res2, fitted2 = holdout_protocol({"var": RecordingSelector()}, X, y, ks=[1, 2], n_repeats=2, random_state=1,
                                     classifier="1nn", progress=False, return_fitted=True)
    cont = res[res["classifier"] == "continuous"].reset_index(drop=True)
    np.testing.assert_allclose(cont["accuracy"], res2["accuracy"])  # holdout_protocol uses holdout_splits
    assert len(fitted2) == 2


def test_to_numeric_orders_categories():
    from tensorprob.encoding import to_numeric

    df = pd.DataFrame({"x": [2.5, 1.0, 3.0], "c": ["b", "a", "b"], "flag": [True, False, True]})
    np.testing.assert_array_equal(to_numeric(df), [[2.5, 1, 1], [1.0, 0, 0], [3.0, 1, 1]])
    np.testing.assert_array_equal(to_numeric(np.array([[1, 2], [3, 4]])), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(to_numeric(np.array([["z", "a"], ["a", "a"]], dtype=object)), [[1, 0], [0, 0]])
    assert to_numeric(df).dtype == np.float64
