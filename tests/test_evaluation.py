"""Evaluation protocols: no leakage, shapes, statistics against hand-computed values."""
import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_wine

import tensorprob as tp
from tensorprob.evaluation import average_ranks, cv_protocol, holdout_protocol, holm, pairwise_wilcoxon
from tensorprob.selection import BaseSelector


class RecordingSelector(BaseSelector):
    """Picks features by variance rank and records the rows it was fitted on."""

    seen: list = []

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
