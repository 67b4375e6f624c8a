"""Batched Prim MST against SciPy's minimum_spanning_tree."""
import numpy as np
import pytest
import torch
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree
from scipy.spatial.distance import cdist

from tensorprob.information._mst import batched_mst, gmi_lower_bound, mst_cross_counts


def _scipy_mst(P):
    # scipy drops zero entries (duplicate points): shift every weight by 1, which keeps the MST
    D = cdist(P, P) + 1.0
    np.fill_diagonal(D, 0.0)
    T = minimum_spanning_tree(D).tocoo()
    edges = {tuple(sorted((int(a), int(b)))) for a, b in zip(T.row, T.col)}
    return edges, float(T.data.sum() - (len(P) - 1))


@pytest.mark.parametrize("n,d", [(7, 2), (33, 3), (50, 2)])
def test_distinct_weights_same_edges(n, d):
    rng = np.random.default_rng(n)
    P = rng.normal(size=(5, n, d))
    edges, w = batched_mst(torch.tensor(P))
    for b in range(5):
        ref_edges, ref_total = _scipy_mst(P[b])
        mine = {tuple(sorted(map(int, e))) for e in edges[b].tolist()}
        assert mine == ref_edges
        assert w[b].sum().item() == pytest.approx(ref_total, abs=1e-9)


def test_ties_same_weight_and_spanning_tree():
    rng = np.random.default_rng(0)
    P = rng.integers(0, 4, size=(12, 41, 2)).astype(float)  # many ties and duplicates
    edges, w = batched_mst(torch.tensor(P))
    for b in range(12):
        _, ref_total = _scipy_mst(P[b])
        assert w[b].sum().item() == pytest.approx(ref_total, abs=1e-9)
        e = edges[b].numpy()
        A = np.zeros((41, 41))
        A[e[:, 0], e[:, 1]] = 1
        assert len({tuple(sorted(x)) for x in e.tolist()}) == 40
        assert connected_components(A, directed=False)[0] == 1
        # weights are the Euclidean lengths of the returned edges
        assert np.allclose(w[b].numpy(), np.linalg.norm(P[b][e[:, 0]] - P[b][e[:, 1]], axis=1))


def test_deterministic_and_chunking_invariant():
    rng = np.random.default_rng(3)
    P = torch.tensor(rng.integers(0, 3, size=(9, 20, 2)).astype(float))
    e1, w1 = batched_mst(P)
    e2, w2 = batched_mst(P, memory_budget=1)  # one point set per chunk
    assert torch.equal(e1, e2) and torch.equal(w1, w2)
    e3, _ = batched_mst(P[4])
    assert torch.equal(e3, e1[4])


def test_cross_counts_and_bound():
    # path 0-1-2-3 with groups [0, 0, 1, 1]: one cross edge
    edges = torch.tensor([[[0, 1], [1, 2], [2, 3]]])
    c = mst_cross_counts(edges, torch.tensor([0, 0, 1, 1]), 2)
    assert c[0].tolist() == [[1, 1], [1, 1]]
    # m = 1 class, n' = n = 2, R = 1: I^ = 1 - R / n = 0.5
    val = gmi_lower_bound(c[:, :1, 1:].double(), torch.tensor([2.0]), torch.tensor([2.0]), torch.tensor([1.0]))
    assert val.item() == pytest.approx(0.5)
