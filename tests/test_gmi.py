"""GMI estimator convergence and the GMI selector."""
import numpy as np
import pytest
import torch

from tensorprob import GMI
from tensorprob.datasets import gaussian_mixture_gmi_bound, make_gaussian_mixture
from tensorprob.information._mst import pairwise_gmi


@pytest.mark.slow
@pytest.mark.parametrize("m", [2, 5, 10])
def test_estimate_converges_to_closed_form_bound(m):
    truth = gaussian_mixture_gmi_bound(m, rho=0.8)
    assert 0.1 < truth < 1
    mse = []
    for n in (100, 400, 1600):
        est = []
        for rep in range(8):
            X, y = make_gaussian_mixture(n, m, rho=0.8, random_state=100 * rep + n)
            g = torch.Generator().manual_seed(rep)
            est.append(pairwise_gmi(torch.tensor(X), torch.tensor(y), generator=g).values.item())
        mse.append(float(np.mean((np.array(est) - truth) ** 2)))
    assert mse[2] < mse[0]
    assert mse[2] < 0.01


def test_conditionally_independent_bound_is_zero():
    assert abs(gaussian_mixture_gmi_bound(5, rho=0.0)) < 1e-9


def test_selector_eliminates_redundant_feature_first():
    rng = np.random.default_rng(0)
    n = 400
    y = rng.integers(0, 3, n)
    a = rng.normal(size=n) + y
    X = np.column_stack([a, a + 0.05 * rng.normal(size=n), rng.normal(size=n) + y, rng.normal(size=n)])
    sel = GMI(k=3, random_state=0).fit(X, y)
    # features 0 and 1 are strongly dependent given y: one of them is eliminated first
    assert sel.ranking_[-1] in (0, 1)
    assert set(sel.selected_) >= {2, 3}
    assert sel.dependency_[0, 1] > 0.5
    again = GMI(k=3, random_state=0).fit(X, y)
    assert np.array_equal(again.selected_, sel.selected_)


def test_pca_goes_in_front_in_a_pipeline():
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 12))
    y = rng.integers(0, 2, 120)
    pipe = make_pipeline(StandardScaler(), PCA(n_components=6), GMI(k=4, random_state=0)).fit(X, y)
    gmi = pipe[-1]
    assert gmi.n_features_in_ == 6 and gmi.dependency_.shape == (6, 6)
    assert pipe.transform(X).shape == (120, 4)
    # the names of the kept components, in column order
    assert pipe.get_feature_names_out().tolist() == [f"pca{j}" for j in sorted(gmi.selected_)]
    assert gmi.inverse_transform(pipe.transform(X)).shape == (120, 6)
    with pytest.raises(TypeError, match="n_components"):
        GMI(k=3, n_components=5)


@pytest.mark.parametrize("k, match", [(0, "The 'k' parameter of GMI must be"),
                                      (6, "k=6 is larger than the number of features")])
def test_rejects_bad_k(k, match):
    X = np.random.default_rng(0).normal(size=(20, 5))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        GMI(k=k).fit(X, y)


def test_needs_two_samples_per_class():
    X = np.random.default_rng(0).normal(size=(20, 5))
    with pytest.raises(ValueError, match="at least 2 samples of every class"):
        GMI(k=2).fit(X, np.where(np.arange(20) == 0, 1, 0))


def test_elimination_rule_and_ties():
    from tensorprob.selection._gmi import eliminate_by_total_dependency

    D = torch.tensor([[0.0, 0.9, 0.1], [0.9, 0.0, 0.2], [0.1, 0.2, 0.0]], dtype=torch.float64)
    ranking, totals = eliminate_by_total_dependency(D)
    # totals 1.0, 1.1, 0.3: feature 1 goes first; then 0 (0.1) and 2 (0.1) tie: 2 goes, 0 is kept
    assert ranking == [0, 2, 1]
    assert totals == pytest.approx([0.0, 0.1, 1.1])
