"""Count-based selectors against deliberately plain references written here (numpy loops)."""
import math

import numpy as np
import pytest
from _helpers import CI, H, I, amd_score, classic_score, greedy, random_data, tols

import tensorprob as tp

CLASSIC = ("mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr")


@pytest.mark.parametrize("method", CLASSIC)
@pytest.mark.parametrize("seed", [0, 1])
def test_classic_criteria_match_plain_reference(method, seed):
    X, y = random_data(seed)
    for k in (1, 3, 6):
        got = tp.select_features(X, y, k, method=method)
        S, scores = greedy(X, y, k, lambda m, S: classic_score(X, y, m, S, method))
        assert got.selected_.tolist() == S
        np.testing.assert_allclose(got.scores_, scores, atol=1e-10)


@pytest.mark.parametrize("dist", ["amd", "gmd"])
@pytest.mark.parametrize("orders", [(0, 0), (1, 0), (1, 1), (2, 1)])
@pytest.mark.parametrize("blocks", ["default", "small"])
def test_sample_mean_estimators_match_plain_reference(dist, orders, blocks, monkeypatch, dtype):
    from tensorprob.counting import _tables
    from tensorprob.selection import _pda

    if blocks != "default":  # tables, lookups and scores in blocks of a few candidates
        for mod in (_pda, _tables):
            monkeypatch.setattr(mod, "block_budget", lambda device: 3000)
    X, y = random_data(3)
    k1, k2 = orders
    got = tp.select_features(X, y, 5, method="pda", distribution=dist, framework="mi", k1=k1, k2=k2)
    S, scores = greedy(X, y, 5, lambda m, S: amd_score(X, y, m, S, k1, k2, dist))
    assert got.selected_.tolist() == S
    # per-sample log-probabilities are held in the lane's dtype
    np.testing.assert_allclose(got.scores_, scores, **tols(dtype))


def test_gmd_and_fid_closed_forms_equal_the_classic_methods(dtype):
    X, y = random_data(4, N=10)
    pairs = {(0, 0): "mim", (1, 0): "mrmr", (1, 1): "jmi", (2, 1): "rmrmr"}
    for (k1, k2), classic in pairs.items():
        gmd = tp.select_features(X, y, 6, method="pda", distribution="gmd", k1=k1, k2=k2)
        ref = tp.select_features(X, y, 6, method=classic)
        assert gmd.selected_.tolist() == ref.selected_.tolist()
        if classic != "jmi":  # JMI's own score is |S| x the GMD form plus a term constant in m
            np.testing.assert_allclose(gmd.scores_, ref.scores_, **tols(dtype))
    for (k1, k2), classic in {(0, 0): "mim", (1, 0): "mifs", (1, 1): "cife"}.items():
        fid = tp.select_features(X, y, 6, method="pda", distribution="fid", k1=k1, k2=k2)
        ref = tp.select_features(X, y, 6, method=classic)
        assert fid.selected_.tolist() == ref.selected_.tolist()
    # the per-sample mean of log p(x|y)/p(x) is the plug-in mutual information
    amd00 = tp.select_features(X, y, 1, method="pda", distribution="amd", k1=0, k2=0)
    assert abs(amd00.scores_[0] - max(I(X[:, m], y) for m in range(X.shape[1]))) < tols(dtype, atol=1e-12)["atol"]


def _fid21_eq6(X, y, m, S):
    """Eq. 6 of Sun et al. (2020) with k1 = 2, k2 = 1, read literally: T = S + [X_m], T_2 = (X_m, X_s1), T_1 = (X_m)."""
    xm, s1 = X[:, m], X[:, S[0]]
    first = H(xm) + (H(s1, xm) - H(xm))  # H(X_m) + H(X_s1 | X_m)
    first += sum(H(X[:, i], xm, s1) - H(xm, s1) for i in S[1:])  # H(X_i | X_m, X_s1)
    second = (H(xm, y) - H(y)) + sum(H(X[:, i], xm, y) - H(xm, y) for i in S)  # H(X_m|C) + H(X_i | X_m, C)
    return first - second


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fid21_is_eq6(seed, dtype):
    """FID^{2,1}: the greedy picks of eq. 6 computed from joint entropies, and the closed-form scores."""
    X, y = random_data(seed, N=9)
    got = tp.PDA(k=6, distribution="fid", k1=2, k2=1).fit(X, y)
    S, _ = greedy(X, y, 6, lambda m, S: _fid21_eq6(X, y, m, S))
    assert got.selected_.tolist() == S

    def closed(m, S):
        return (I(X[:, m], y) - I(X[:, m], X[:, S[0]]) - sum(CI(X[:, m], X[:, j], X[:, S[0]]) for j in S[1:])
                + sum(CI(X[:, m], X[:, j], y) for j in S))
    scores = [I(X[:, S[0]], y)] + [closed(S[t], S[:t]) for t in range(1, 6)]
    np.testing.assert_allclose(got.scores_, scores, **tols(dtype))
    # eq. 6 differs from the closed form by a constant over the candidates of a step
    for t in (2, 4):
        diffs = [_fid21_eq6(X, y, m, S[:t]) - closed(m, S[:t]) for m in range(9) if m not in S[:t]]
        assert np.ptp(diffs) < 1e-12
    # the second step is RMRMR's, I(X_m; C | X_s1)
    assert got.selected_[1] == tp.RMRMR(k=2).fit(X, y).selected_[1]


def test_spec_cmi_matches_plain_reference():
    X, y = random_data(5)
    N = X.shape[1]
    Q = np.empty((N, N))
    for i in range(N):
        for j in range(N):
            Q[i, j] = I(X[:, i], y) if i == j else 0.5 * (CI(X[:, i], y, X[:, j]) + CI(X[:, j], y, X[:, i]))
    _w, v = np.linalg.eigh(Q)
    vec = v[:, -1] * np.sign(v[:, -1].sum())
    order = np.argsort(-vec, kind="stable")
    got = tp.select_features(X, y, 4, method="spec_cmi")
    assert got.selected_.tolist() == order[:4].tolist()
    np.testing.assert_allclose(got.scores_, vec[order[:4]], atol=1e-10)
    np.testing.assert_allclose(got.Q_, Q, atol=1e-12)


def xor_data():
    """Full factorial design: x0 and x3 jointly determine y (XOR), x1, x2 are noise; every
    single feature is exactly independent of y (paper 002, section 3.2)."""
    grid = np.array(np.meshgrid(*[[0, 1]] * 4, indexing="ij")).reshape(4, -1).T
    X = np.repeat(grid, 25, axis=0)
    return X, X[:, 0] ^ X[:, 3]


def test_xor_pair_found_by_the_criteria_that_see_interactions():
    X, y = xor_data()
    found = {m: sorted(tp.select_features(X, y, 2, method=m).selected_.tolist()) == [0, 3]
             for m in CLASSIC + ("vmi", "pda")}
    finders = {m for m, ok in found.items() if ok}
    assert finders == {"cife", "jmi", "cmim", "jmim", "disr", "mri", "rmrmr", "vmi", "pda"}
    # relevance-only and redundancy-only criteria cannot see the pair: they take the next index
    assert tp.select_features(X, y, 2, method="mim").selected_.tolist() == [0, 1]


def test_scores_in_bits_and_constant_columns():
    X, y = random_data(6)
    X[:, 2] = 1  # constant column: kept, scored 0
    nats = tp.select_features(X, y, 8, method="jmi")
    bits = tp.select_features(X, y, 8, method="jmi", base=2)
    assert nats.selected_.tolist() == bits.selected_.tolist()
    np.testing.assert_allclose(bits.scores_, nats.scores_ / math.log(2), atol=1e-12)
    assert np.all(np.isfinite(nats.scores_))
    mim = tp.select_features(X, y, 8, method="mim")
    assert mim.scores_[mim.selected_.tolist().index(2)] == 0.0


def test_raw_continuous_input_is_discretized_and_names_kept():
    import pandas as pd
    from sklearn.datasets import load_wine

    d = load_wine()
    df = pd.DataFrame(d.data, columns=d.feature_names)
    sel = tp.JMI(k=3).fit(df, d.target)
    assert list(sel.feature_names_in_) == d.feature_names
    assert sel.get_feature_names_out().tolist() == [d.feature_names[i] for i in sorted(sel.selected_)]
    with pytest.raises(ValueError, match="discretizer=None"):
        tp.JMI(k=3, discretizer=None).fit(d.data, d.target)


def test_bad_input():
    X, y = random_data(7)
    for method in ("jmi", "pda", "vmi", "spec_cmi"):
        with pytest.raises(ValueError, match="'k' parameter"):
            tp.select_features(X, y, 0, method=method)
        with pytest.raises(ValueError, match="larger than the number of features"):
            tp.select_features(X, y, 9, method=method)
        with pytest.raises(ValueError, match="missing label"):
            tp.select_features(X, np.where(np.arange(len(y)) == 2, np.nan, y), 2, method=method)
        with pytest.raises(ValueError, match="single class"):
            tp.select_features(X, np.ones(len(y)), 2, method=method)
        with pytest.raises(ValueError, match="samples but y has"):
            tp.select_features(X, y[:-1], 2, method=method)
    with pytest.raises(ValueError, match="unknown method"):
        tp.select_features(X, y, 2, method="magic")
    with pytest.raises(ValueError, match="categories, above max_categories"):
        tp.select_features(np.array([[f"w{i}"] for i in range(100)], dtype=object), np.arange(100) % 2, 1)
    with pytest.raises(ValueError, match="'beta' parameter"):
        tp.MIFS(k=2, beta=-1).fit(X, y)
    with pytest.raises(ValueError, match="\\(k1, k2\\)"):
        tp.PDA(k=2, k1=3, k2=0).fit(X, y)
    with pytest.raises(ValueError, match="'q' parameter"):
        tp.VMI(k=2, q="triple").fit(X, y)
    # a raw -1 is a value (issue 12); missing_values=-1 names it missing
    Xm = X.copy()
    Xm[0, 0] = -1
    tp.VMI(k=2).fit(Xm, y)
    with pytest.raises(ValueError, match="complete data"):
        tp.VMI(k=2, missing_values=-1).fit(Xm, y)
    with pytest.raises(ValueError, match="complete data"):
        tp.VMI(k=2).fit(np.where(Xm == -1, np.nan, Xm), y)
    tp.JMI(k=2, missing_values=-1).fit(Xm, y)  # count estimators drop missing entries pairwise
