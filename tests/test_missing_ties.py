"""Missing data cannot win by small-sample bias; degenerate columns follow the tie rule (issue 12)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorprob as tp
from tensorprob.counting import SelectionData, joint_table, table_information


def _noise_vs_informative(seed: int, n: int = 300):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    informative = np.where(rng.random(n) < 0.7, y, 1 - y).astype(float)
    noise = rng.integers(0, 4, n).astype(float)
    noise[rng.random(n) < 0.98] = np.nan  # 98% missing, the rest noise
    return np.column_stack([noise, informative]), y


@pytest.mark.parametrize("method", ["mrmr", "jmi", "mim"])
def test_mostly_missing_noise_never_beats_complete_informative(method):
    # pairwise deletion alone picked the 98%-missing noise column first in most seeds
    for seed in range(20):
        X, y = _noise_vs_informative(seed)
        assert tp.select_features(X, y, 1, method=method).selected_[0] == 1, seed


@pytest.mark.parametrize("method", ["mrmr", "jmi", "mim", "cmim", "disr", "icap", "rmrmr", "mifs", "spec_cmi"])
def test_all_missing_column_scores_zero_and_comes_last(method):
    rng = np.random.default_rng(1)
    n = 200
    y = rng.integers(0, 2, n)
    x = np.where(rng.random(n) < 0.8, y, 1 - y).astype(float)
    # a duplicate scores 0 under MRMR after its twin: the all-missing column must not win that tie
    X = np.column_stack([np.full(n, np.nan), x, x.copy(), rng.integers(0, 3, n).astype(float)])
    sel = tp.select_features(X, y, 4, method=method)
    assert sel.selected_[-1] == 0


def test_observed_fraction_weighting():
    codes = torch.tensor([[0], [1], [0], [1], [-1], [-1], [-1], [-1]])
    y = torch.tensor([0, 1, 0, 1, 0, 1, 0, 1])
    T = joint_table(codes, 2, None, 1, y, 2)
    full = float(table_information(T).mi_x_b[0])
    half = float(table_information(T, n_rows=8).mi_x_b[0])
    assert full == pytest.approx(np.log(2))
    assert half == pytest.approx(np.log(2) / 2)  # I_obs * n_obs / n
    empty = joint_table(torch.full((8, 1), -1), 2, None, 1, y, 2)
    assert float(table_information(empty, n_rows=8).mi_x_b[0]) == 0.0
    d = SelectionData(torch.full((8, 1), -1), 2, y, 2)
    assert d.relevance.tolist() == [0.0]
    assert d.unobserved.tolist() == [True]


def test_complete_data_not_weighted():
    x = torch.tensor([[0, 1], [1, 1], [0, 0], [1, 0]])
    d = SelectionData(x, 2, x[:, 0], 2)
    assert d.n_rows is None and d.unobserved is None
    T = d.class_table
    assert torch.equal(table_information(T, n_rows=4).mi_x_b, table_information(T).mi_x_b)


@pytest.mark.parametrize("make", ["identical", "constant"])
def test_spec_cmi_degenerate_columns_lowest_index(make):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    x = np.where(rng.random(200) < 0.8, y, 1 - y)
    X = np.column_stack([x, x, x]) if make == "identical" else np.zeros((200, 3))
    assert tp.SPECCMI(k=3).fit(X, y).selected_.tolist() == [0, 1, 2]
    # interchangeable columns get equal eigenvector entries
    sel = tp.SPECCMI(k=3).fit(X, y)
    assert np.ptp(sel.scores_) < 1e-9
