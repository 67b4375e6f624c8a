"""The selection protocols and the Madelon diagnostics of ``benchmarks/repro_vmi_table3.py``: the all-rows
wrapper gives every split the one selection made on all rows, results of the two protocols are merged
without replacing each other, and Madelon's relevant columns are found as its correlated cluster."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from _helpers import load_benchmark_script

import tensorprob as tp


@pytest.fixture(scope="module")
def script():
    """The benchmark script as a module."""
    return load_benchmark_script("repro_vmi_table3")


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = np.c_[y + 0.3 * rng.normal(size=n), rng.normal(size=(n, 5)), y + 0.8 * rng.normal(size=n)]
    return X, y


def test_all_rows_wrapper_repeats_the_selection_on_all_rows(script):
    X, y = _data()
    inner = tp.MIM(discretizer="uniform", n_bins=4, device="cpu")
    masks = np.ones((len(y), 3))
    masks[:40, 0] = 0  # the training masks are ignored: the rows left out of a fold still select
    w = script.OnAllRows(inner).set_params(k=3).fit(X, y, resamples=masks)
    direct = tp.MIM(k=3, discretizer="uniform", n_bins=4, device="cpu").fit(X, y).selected_
    assert len(w.selected_) == 3 and all(np.array_equal(s, direct) for s in w.selected_)
    assert np.array_equal(script.OnAllRows(inner, k=2).fit(X, y).selected_, direct[:2])


def test_all_rows_protocol_scores_one_selection_per_set(script):
    X, y = _data()
    args = SimpleNamespace(n_bins=4, device="cpu", folds=3, repeats=1, seed=0)
    res, _, picks = script.run_variant("ionosphere", X, y, [1, 2], args, "uniform:continuous", spec_cmi=False,
                                       protocol="all-rows")
    assert set(res["split"]) == {0, 1, 2} and not (res["method"] == "SPEC_CMI").any()
    firsts = {(p["method"], p["first20"]) for p in picks}
    assert len(firsts) == 5 and all(p["protocol"] == "all-rows" for p in picks)  # one order per method


def test_merge_keeps_the_other_protocol(script, tmp_path, monkeypatch):
    old = pd.DataFrame([{"dataset": "colon", "method": "JMI", "x": 1},  # before the protocol column: in-fold
                        {"dataset": "lung", "method": "JMI", "x": 2, "protocol": "in-fold"},
                        {"dataset": "lung", "method": "JMI", "x": 3, "protocol": "all-rows"}])
    monkeypatch.setattr(script.SCRIPT, "args", SimpleNamespace(out_dir=str(tmp_path), tag="", quick=False))
    old.to_csv(script.SCRIPT.path("part"), index=False)
    new = [{"dataset": "colon", "method": "JMI", "x": 4, "protocol": "all-rows"}]
    out = script.merge_runs("part", new, {("colon", "all-rows")})
    assert sorted((r["dataset"], r["protocol"], r["x"]) for r in out) == [
        ("colon", "all-rows", 4), ("colon", "in-fold", 1), ("lung", "all-rows", 3), ("lung", "in-fold", 2)]
    assert [r["x"] for r in script.merge_runs("part", [], {("lung", "in-fold")})] == [1, 3]


def test_madelon_relevant_is_the_correlated_cluster(script):
    rng = np.random.default_rng(1)
    base = rng.normal(size=(500, 3))
    combos = base @ rng.normal(size=(3, 4))
    X = np.c_[rng.normal(size=(500, 6)), base, rng.normal(size=(500, 2)), combos]
    assert list(script.madelon_relevant(X)) == list(range(6, 9)) + list(range(11, 15))
