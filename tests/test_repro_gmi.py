"""Paper 003 (GMI): the synthetic model and the exact bound used by ``benchmarks/repro_gmi.py``.

The script compares tensorprob's GMI estimate with the exact conditional GMI lower bound
D_1/2(f_st, pi_st) = 1 - 2 * integral f pi / (f + pi) of a mixture of 2-D Gaussians, computed by a
Riemann sum on a grid. Here that number is checked against a Monte Carlo average over draws of f
and against the same sum on a grid twice as coarse, the generator's class means and covariance
against their definitions, the estimator against the exact bound on a large sample, and the
one-shot order of Table 1 against a ranking written out by hand.
"""
from __future__ import annotations

import numpy as np
import pytest
from _helpers import load_benchmark_script

import tensorprob as tp


@pytest.fixture(scope="module")
def script():
    """The benchmark script as a module."""
    return load_benchmark_script("repro_gmi")


@pytest.mark.slow
@pytest.mark.parametrize("m", [2, 5])
def test_exact_bound_matches_monte_carlo(script, m):
    exact = script.oracle_bound(m, 0.8)
    mc, se = script.mc_bound(m, 0.8, 200_000, np.random.default_rng(m))
    assert 0.05 < exact < 1.0
    assert abs(exact - mc) < 4 * se + 1e-4, (exact, mc, se)
    # the Riemann sum of a smooth, Gaussian-tailed integrand has converged at sigma / 40
    coarse = script.oracle_bound(m, 0.8, step=np.sqrt(script.SIGMA2) / 20)
    assert abs(exact - coarse) < 1e-8


def test_exact_bound_is_zero_without_within_class_correlation(script):
    # f = pi when the features are independent given the class: the bound vanishes for every m
    assert script.oracle_bound(5, 0.0) == 0.0
    mc, _ = script.mc_bound(5, 0.0, 1000, np.random.default_rng(0))
    assert abs(mc) < 1e-12


def test_generator_moments(script):
    rng = np.random.default_rng(1)
    X, y = script.sample_model(100_000, 5, 0.5, rng)
    assert np.array_equal(np.bincount(y), np.full(5, 20_000))
    mu = script.class_means(5)
    assert np.allclose(mu[:, 0], 0.5 * np.arange(5)) and np.allclose(mu[:, 0], mu[:, 1])
    for c in range(5):
        Xc = X[y == c]
        assert np.allclose(Xc.mean(0), mu[c], atol=0.01)
        assert np.allclose(np.cov(Xc.T), [[0.1, 0.05], [0.05, 0.1]], atol=0.005)


@pytest.mark.slow
def test_estimator_near_exact_bound(script, dtype):
    """The global FR estimate on 2,000 points: within a few of its standard deviations (about 0.02) of the bound."""
    exact = script.oracle_bound(2, 0.8)
    X, y = script.sample_model(2000, 2, 0.8, np.random.default_rng(3))
    est = np.mean([tp.GMI(k=2, random_state=s, dtype=dtype).fit(X, y).dependency_[0, 1] for s in range(3)])
    assert abs(est - exact) < 0.06, (est, exact)


def test_one_shot_order(script):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(120, 6)), rng.integers(0, 3, 120)
    X[:, 1] = X[:, 0] + 0.1 * rng.normal(size=120)  # a redundant pair: both get large totals
    sel = script.OneShotGMI(k=4, random_state=0).fit(X, y)
    D = tp.GMI(k=1, random_state=0, device="cpu", dtype="float64").fit(X, y).dependency_
    totals = D.sum(1)
    expected = sorted(range(6), key=lambda j: (totals[j], j))
    assert list(sel.ranking_) == expected
    assert list(sel.selected_) == expected[:4]


def test_dp_estimate_counts_the_class_pair_trees(script):
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial.distance import cdist

    X, y = script.sample_model(60, 3, 0.8, np.random.default_rng(7))
    Z = (X - X.mean(0)) / X.std(0, ddof=1)
    cross = 0
    for i, j in ((0, 1), (0, 2), (1, 2)):
        idx = np.flatnonzero((y == i) | (y == j))
        tree = minimum_spanning_tree(cdist(Z[idx], Z[idx])).tocoo()
        cross += int(np.sum(y[idx][tree.row] != y[idx][tree.col]))
    assert script.dp_estimate(X, y, 3) == pytest.approx(cross / 60, abs=1e-15)


@pytest.mark.parametrize("n", [3, 40, 300])
def test_delaunay_mst_is_the_euclidean_mst(script, n):
    # the O(n log n) builder of the Fig. 2 timing against SciPy's MST of the complete graph
    from scipy.sparse.csgraph import minimum_spanning_tree
    from scipy.spatial.distance import cdist

    P = np.random.default_rng(n).normal(size=(n, 2))
    e = script.delaunay_mst(P)
    assert e.shape == (n - 1, 2)
    full = minimum_spanning_tree(cdist(P, P)).sum()
    assert np.isclose(np.linalg.norm(P[e[:, 0]] - P[e[:, 1]], axis=1).sum(), full)


def test_delaunay_pair_counts_equal_the_batched_prim(script):
    import torch

    from tensorprob.information._mst import class_pair_cross_edges

    X, y = script.sample_model(300, 5, 0.0, np.random.default_rng(3))
    c = script.delaunay_pair_cross_edges(X, y, 5)
    pi, pj = np.triu_indices(5, 1)
    prim = class_pair_cross_edges(torch.as_tensor(X), torch.as_tensor(y), 5).numpy()
    assert np.array_equal(c[pi, pj], prim) and c[pj, pi].sum() == 0


def test_trees_reading_counts_the_sample_sizes(script):
    import pandas as pd

    assert script.claim_holds([(2, 1.0), (5, 4.0), (10, 9.0)])
    assert not script.claim_holds([(2, 1.0), (5, 4.0), (10, 3.0)])  # no longer growing with m
    assert not script.claim_holds([(2, 0.5), (5, 0.8), (10, 0.9)])  # Dp faster
    s = pd.DataFrame({"N": [100] * 3 + [200] * 3, "m": [2, 5, 10] * 2,
                      "Dp / GMI, Delaunay": [1.0, 4.0, 9.0, 1.0, 3.0, 2.0],
                      "Dp / GMI, dense Prim": [1.0, 0.5, 0.3, 1.0, 0.6, 0.4]})
    assert script.claim_counts(s) == {"Delaunay": (1, 2), "dense Prim": (0, 2)}
    assert "at 1 of 2 sample sizes with the Delaunay builder and at 0 of 2" in script._trees_reading(s)
