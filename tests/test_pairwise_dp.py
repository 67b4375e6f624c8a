"""The pairwise Friedman-Rafsky Bayes-error bound (paper 003's "Dp" baseline) and its selector.

References: SciPy's minimum spanning tree on each class pair's samples (independent of the
batched Prim), hand-counted trees on the line, the bound's integral by quadrature, and a
brute-force greedy search built on SciPy.
"""
import itertools

import numpy as np
import pytest
import torch
from scipy import integrate, stats
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import cdist

import tensorprob as tp
from tensorprob.information._mst import class_pair_cross_edges


def _scipy_cross(X, y, n_classes):
    """C_ij of every class pair i < j from SciPy's MST of the pair's samples."""
    out = []
    for i, j in itertools.combinations(range(n_classes), 2):
        idx = np.flatnonzero((y == i) | (y == j))
        if len(idx) < 2:
            out.append(0)
            continue
        tree = minimum_spanning_tree(cdist(X[idx], X[idx])).tocoo()  # distinct points: no 0-weight edge lost
        out.append(int(np.sum(y[idx][tree.row] != y[idx][tree.col])))
    return out


def test_cross_edges_equal_scipy_trees_for_every_pair(device, dtype):
    rng = np.random.default_rng(1)
    for _ in range(12):
        n, d, m = int(rng.integers(2, 40)), int(rng.integers(1, 4)), int(rng.integers(2, 5))
        X = rng.normal(size=(3, n, d)) * rng.choice([1e-2, 1.0, 1e3])
        y = rng.integers(0, m, n)  # some classes may be empty or single
        got = class_pair_cross_edges(torch.tensor(X, dtype=dtype, device=device), torch.tensor(y), m).cpu().numpy()
        assert got.shape == (3, m * (m - 1) // 2)
        for b in range(3):
            assert got[b].tolist() == _scipy_cross(X[b], y, m)


def test_cross_edges_chunked_and_single_set_agree():
    rng = np.random.default_rng(2)
    X = torch.tensor(rng.normal(size=(5, 30, 2)))
    y = torch.tensor(rng.integers(0, 3, 30))
    whole = class_pair_cross_edges(X, y, 3)
    assert torch.equal(class_pair_cross_edges(X, y, 3, memory_budget=1), whole)  # one set per chunk
    assert torch.equal(class_pair_cross_edges(X[2], y, 3), whole[2])


def test_bound_on_the_line_by_hand(dtype):
    # classes apart: the chain joins them once; alternating: every edge crosses
    x = np.array([0.0, 1.0, 2.0, 10.0, 11.0])
    sel = tp.PairwiseDp(k=1, dtype=dtype).fit(x[:, None], [0, 0, 0, 1, 1])
    assert sel.cross_edges_.tolist() == [[1]] and sel.scores_[0] == pytest.approx(1 / 5)
    sel = tp.PairwiseDp(k=1, dtype=dtype).fit(np.arange(4.0)[:, None], [0, 1, 0, 1])
    assert sel.cross_edges_.tolist() == [[3]] and sel.scores_[0] == pytest.approx(3 / 4)
    # three classes on the line, a a b b c c . a (each pair's tree is the chain of its points)
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0])
    y = np.array([0, 0, 1, 1, 2, 2, 0])
    # (a, b): points 0 1 2 3 7 -> chain 0-1-2-3-7: edges 1-2 and 3-7 cross
    # (a, c): points 0 1 4 5 7 -> chain 0-1-4-5-7: edges 1-4 and 5-7 cross
    # (b, c): points 2 3 4 5 -> chain: edge 3-4 crosses
    sel = tp.PairwiseDp(k=1, dtype=dtype).fit(x[:, None], y)
    assert sel.cross_edges_.tolist() == [[2, 2, 1]] and sel.scores_[0] == pytest.approx(5 / 7)


@pytest.mark.slow
def test_bound_estimates_the_pairwise_integral(device, dtype):
    # two unit-variance Gaussians 2 apart, equal priors: 2 delta = int f g / (f + g) (quadrature);
    # the Bayes error Phi(-1) lies below it
    f, g = stats.norm(0, 1).pdf, stats.norm(2, 1).pdf
    two_delta = integrate.quad(lambda t: f(t) * g(t) / (f(t) + g(t)), -12, 14)[0]
    bayes = stats.norm.cdf(-1.0)
    assert bayes < two_delta < 0.25
    rng = np.random.default_rng(3)
    est = []
    for _ in range(4):
        y = np.repeat([0, 1], 1500)
        x = rng.normal(size=3000) + 2.0 * y
        est.append(tp.PairwiseDp(k=1, device=device, dtype=dtype).fit(x[:, None], y).scores_[0])
    assert np.mean(est) == pytest.approx(two_delta, abs=0.01)


def _greedy_reference(X, y, k):
    """Forward search on SciPy trees of standardized columns: smallest sum C_ij / n, lowest index on ties."""
    Z = (X - X.mean(0)) / X.std(0, ddof=1)
    m = int(y.max()) + 1
    chosen, bounds = [], []
    for _ in range(k):
        best = None
        for j in range(X.shape[1]):
            if j in chosen:
                continue
            u = sum(_scipy_cross(Z[:, chosen + [j]], y, m)) / len(y)
            if best is None or u < best[0]:
                best = (u, j)
        chosen.append(best[1])
        bounds.append(best[0])
    return chosen, bounds


def test_selector_equals_brute_force_greedy_search(device, dtype):
    rng = np.random.default_rng(4)
    for seed in range(3):
        n, d, m = 45, 6, 3
        y = rng.integers(0, m, n)
        X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3, d)
        X[:, seed] += 1.5 * y  # one informative column, a different one per seed
        ref, ref_bounds = _greedy_reference(X, y, 4)
        sel = tp.PairwiseDp(k=4, device=device, dtype=dtype).fit(X, y)
        assert sel.selected_.tolist() == ref
        np.testing.assert_allclose(sel.scores_, ref_bounds, rtol=0, atol=1e-12)
        assert sel.selected_[0] == seed


def test_separated_classes_reach_the_floor_and_frequency_weights_repeat_rows(dtype):
    rng = np.random.default_rng(5)
    y = np.repeat([0, 1, 2], 20)
    X = np.column_stack([rng.normal(size=60), 10.0 * y + rng.uniform(0, 1, 60), rng.normal(size=60)])
    sel = tp.PairwiseDp(k=2, dtype=dtype).fit(X, y)
    # every pair's tree joins its two classes by one edge: the bound's floor, 3 pairs / 60 samples
    assert sel.selected_[0] == 1 and sel.scores_[0] == pytest.approx(3 / 60)
    w = rng.integers(0, 3, 60)
    batched = tp.PairwiseDp(k=2, dtype=dtype).fit(X, y, sample_weight=w)
    rows = np.repeat(np.arange(60), w)
    alone = tp.PairwiseDp(k=2, dtype=dtype).fit(X[rows], y[rows])
    assert batched.selected_.tolist() == alone.selected_.tolist()
    np.testing.assert_allclose(batched.scores_, alone.scores_, rtol=0, atol=1e-12)
