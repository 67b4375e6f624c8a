"""HOFS on the tree model of the HOFS paper, section 6.1 (Fig. 3).

The generating model as we read it: y is a fair binary label; the first layer x1, x2, x3 is
Gaussian with unit variance and mean ``w_j * y``; x4, x5 have mean x1, x6, x7 mean x2 and x8, x9
mean x3 (unit variance). The text gives no edge weights, only thicker and thinner edges;
``w = (1, 1/1.5, 1/2.25)`` is our reading, the one whose exact I(x_i; y) match Table 5 (unit
weights would give x1, x2, x3 the same information). Columns: x1, x2, x3, then x4..x9, so the
paper's subsets {x1, x4, x5}, {x2, x6, x7}, {x3, x8, x9} are columns [0, 3, 4], [1, 5, 6], [2, 7, 8].
Every test runs in the float64 and float32 lanes of ``conftest.py`` (HOFS takes the lane's dtype).
"""
import numpy as np
import pytest

from tensorprob import HOFS, MIM
from tensorprob.datasets import make_tree_model

WEIGHTS = (1.0, 1 / 1.5, 1 / 2.25)
GROUPS = [[0, 3, 4], [1, 5, 6], [2, 7, 8]]
N = 8000


def _groups(subsets):
    return sorted(sorted(int(f) for f in s) for s in subsets)


@pytest.fixture(scope="module")
def tree():
    X, y, groups = make_tree_model(N, weights=WEIGHTS, random_state=0)
    assert _groups(groups) == GROUPS  # the generator's columns are the paper's numbering
    return X, y


@pytest.mark.parametrize("seed", [0, 1])
def test_hofs_finds_the_three_subsets_of_the_tree(tree, seed):
    X, y = tree
    sel = HOFS(k=9, random_state=seed).fit(X, y)
    assert _groups(sel.subsets_) == GROUPS
    # each subset is opened by its first-layer feature: x1 first (largest I(x; y)), then x2 before x4, x5
    assert [s[0] for s in sel.subsets_] == [0, 1, 2]
    assert list(sel.selected_[:2]) == [0, 1]


def test_mim_ranks_a_child_of_x1_second(tree):
    """Relevance alone (MIM) takes x4 or x5 right after x1 (their I(x; y) exceeds x2's); HOFS takes x2, the head of
    the next subset."""
    X, y = tree
    mim = MIM(k=2, discretizer="uniform", n_bins=10).fit(X, y)
    assert mim.selected_[0] == 0 and mim.selected_[1] in (3, 4)
    assert list(HOFS(k=2, random_state=0).fit(X, y).selected_) == [0, 1]


def test_subsets_follow_the_data_not_the_column_order(tree):
    X, y = tree
    perm = np.random.default_rng(5).permutation(9)  # new column j holds old column perm[j]
    sel = HOFS(k=9, random_state=0).fit(X[:, perm], y)
    assert _groups([[perm[f] for f in s] for s in sel.subsets_]) == GROUPS


def test_shuffled_children_break_the_subsets(tree):
    """Shuffling the rows of x4..x9 (each column on its own) cuts them from their parents: no subsets remain."""
    X, y = tree
    rng = np.random.default_rng(7)
    Xs = X.copy()
    for j in range(3, 9):
        Xs[:, j] = rng.permutation(Xs[:, j])
    sel = HOFS(k=9, random_state=0).fit(Xs, y)
    assert _groups(sel.subsets_) != GROUPS
    assert all(len(s) == 1 for s in sel.subsets_ if s[0] in (3, 4, 5, 6, 7, 8))


def test_plugin_conditional_loses_the_tree(tree):
    """The R package's plug-in H(y | x_i) in the conditional terms (``conditional="plugin"``) takes the weakest
    features x8, x9 third and fourth, before x3 and x4, x5, so its third subset is opened by a child, not by x3;
    the default (``"ica"``) gets the paper's order on the same draws: the evidence for that deviation."""
    X, y = tree
    plug = HOFS(k=9, conditional="plugin", random_state=0).fit(X, y)
    assert sorted(plug.selected_[2:4].tolist()) == [7, 8]
    assert [s[0] for s in plug.subsets_] != [0, 1, 2]
    ica = HOFS(k=9, random_state=0).fit(X, y)
    assert sorted(ica.selected_[2:4].tolist()) == [3, 4]
    assert [s[0] for s in ica.subsets_] == [0, 1, 2]
