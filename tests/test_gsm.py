"""GSM-CPD: selection on the CPD model, against plain references and planted answers."""

import numpy as np
import pytest
from _helpers import tols

import tensorprob as tp


def planted(n=4000, seed=1):
    """Features 4..7 follow a latent class model whose class is the label; 0..3 and 8..11 are noise."""
    rng = np.random.default_rng(seed)
    s = tp.datasets.make_latent_class(n, [4] * 4, 3, random_state=seed)
    noise = rng.integers(0, 4, (n, 8))
    return np.concatenate([noise[:, :4], s.X, noise[:, 4:]], 1), s.z


@pytest.mark.parametrize("target", ["latent", "label"])
@pytest.mark.parametrize("estimator", ["rao_blackwell", "mc", "exact"])
def test_picks_planted_relevant_features(target, estimator):
    X, y = planted()
    # the plain Monte Carlo estimate's standard error at 3000 samples (about 0.02) is as large as the
    # gap between the fourth planted feature and the best noise one; 20000 samples resolve it
    sel = tp.GSMCPD(k=4, rank=3, target=target, estimator=estimator, n_samples=20000 if estimator == "mc" else 3000,
                    n_restarts=2, random_state=0).fit(X, y)
    assert sorted(sel.selected_.tolist()) == [4, 5, 6, 7]
    assert sel.scores_.shape == (4,) and sel.scores_stderr_.shape == (4,)
    assert np.all(np.diff(sel.scores_) > 0)  # g is monotone
    assert sel.get_support().sum() == 4 and sel.transform(X).shape == (len(X), 4)
    if estimator == "exact":
        assert np.all(sel.scores_stderr_ == 0)


def test_exact_greedy_equals_plain_reference_loop(dtype):
    X, y = planted(2000, seed=3)
    sel = tp.GSMCPD(k=5, rank=3, estimator="exact", random_state=0).fit(X, y)
    model = sel.model_
    S, values = [], []
    for _ in range(5):  # plain per-candidate loop over exact mutual informations
        best, best_j = -np.inf, None
        for j in range(12):
            if j in S:
                continue
            v = model.mutual_information(S + [j]).value
            if v > best + 1e-12:
                best, best_j = v, j
        S.append(best_j)
        values.append(best)
    assert sel.selected_.tolist() == S
    # two computations of the same exact MI from a model fitted in the lane's dtype: its rounding
    np.testing.assert_allclose(sel.scores_, values, rtol=0, atol=tols(dtype)["atol"])
    lazy = tp.GSMCPD(k=5, rank=3, estimator="exact", lazy=True, random_state=0).fit(X, y)
    assert lazy.selected_.tolist() == S


def test_auto_k_stops_at_the_intrinsic_dimension():
    X, y = planted(6000, seed=5)
    sel = tp.GSMCPD(k="auto", rank=3, estimator="exact", auto_tol=0.01, random_state=0).fit(X, y)
    assert sorted(sel.selected_.tolist()[:4]) == [4, 5, 6, 7]
    assert len(sel.selected_) <= 5


def test_rank_chosen_by_cross_validation():
    X, y = planted(1500, seed=7)
    sel = tp.GSMCPD(k=3, rank=None, ranks=(1, 3), cv=3, n_samples=1000, random_state=0).fit(X, y)
    assert sel.rank_ == 3 and sel.rank_errors_.shape == (2,)
    assert set(sel.selected_.tolist()) <= {4, 5, 6, 7}


def test_remodel_variant_picks_relevant_features_for_the_label():
    X, y = planted(2000, seed=9)
    sel = tp.GSMCPD(k=3, rank=3, target="label", remodel=True, estimator="exact", n_iter_max=100,
                    random_state=0).fit(X, y)
    assert set(sel.selected_.tolist()) <= {4, 5, 6, 7}
    assert sel.model_ is None and len(sel.scores_) == 3


def test_mc_objective_reproducible_and_within_stderr_of_exact(device, dtype):
    X, y = planted(3000, seed=11)
    a = tp.GSMCPD(k=3, rank=3, n_samples=4000, random_state=0).fit(X, y)
    b = tp.GSMCPD(k=3, rank=3, n_samples=4000, random_state=0).fit(X, y)
    assert a.selected_.tolist() == b.selected_.tolist()
    if device == "cpu":
        np.testing.assert_array_equal(a.scores_, b.scores_)
    else:  # the same draws; CUDA's atomic float adds leave the order of some sums open
        np.testing.assert_allclose(a.scores_, b.scores_, rtol=tols(dtype, rtol=1e-12)["rtol"], atol=0)
    exact = [a.model_.mutual_information(a.selected_[: i + 1].tolist()).value for i in range(3)]
    assert np.all(np.abs(a.scores_ - exact) < 4 * a.scores_stderr_)


def test_raw_continuous_input_and_pipeline():
    from sklearn.datasets import load_wine
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline

    d = load_wine()
    pipe = make_pipeline(tp.GSMCPD(k=4, rank=3, n_samples=500, random_state=0), KNeighborsClassifier(3))
    pipe.fit(d.data, d.target)
    assert pipe.score(d.data, d.target) > 0.7


def test_bad_input():
    X, y = planted(300, seed=2)
    with pytest.raises(ValueError, match="rank=500 is too large"):
        tp.GSMCPD(k=2, rank=500).fit(X, y)
    with pytest.raises(ValueError, match="n_samples must be"):
        tp.GSMCPD(k=2, rank=2, n_samples=0).fit(X, y)
    with pytest.raises(ValueError, match="larger than the number of features"):
        tp.GSMCPD(k=13, rank=2).fit(X, y)
    with pytest.raises(ValueError, match="'k' parameter"):
        tp.GSMCPD(k=0, rank=2).fit(X, y)
    with pytest.raises(ValueError, match="single class"):
        tp.GSMCPD(k=2, rank=2).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="missing label"):
        tp.GSMCPD(k=2, rank=2).fit(X, np.where(np.arange(len(X)) == 3, np.nan, y.astype(float)))
    with pytest.raises(ValueError, match="300 samples but y has 10"):
        tp.GSMCPD(k=2, rank=2).fit(X, y[:10])
    with pytest.raises(ValueError, match="estimator must be"):
        tp.GSMCPD(k=2, rank=2, estimator="magic").fit(X, y)
    with pytest.raises(ValueError, match="target must be"):
        tp.GSMCPD(k=2, rank=2, target="class").fit(X, y)


def test_unconverged_cpd_is_reported():
    X, y = planted(1000, seed=4)
    with pytest.warns(UserWarning, match="did not converge in 2 iterations"):
        tp.GSMCPD(k=2, rank=3, n_iter_max=2, n_samples=200, random_state=0).fit(X, y)


class _Modular:
    """g(S) = sum of w over S: every gain is w_j, so equal weights are exact ties."""

    def __init__(self, w, dtype):
        self.w = np.asarray(w, dtype=np.float64)
        self.dtype = dtype
        self.value, self.stderr = 0.0, 0.0

    def evaluate(self, idx):
        import torch

        vals = torch.as_tensor(self.value + self.w[idx.numpy()], dtype=self.dtype)
        return vals, torch.zeros_like(vals)

    def add(self, j):
        self.value += self.w[j]


@pytest.mark.parametrize("lazy", [False, True])
def test_greedy_information_ties_go_to_the_lowest_index(lazy, dtype):
    """Plain and lazy greedy break exact ties alike: the lowest feature index (lazy_batch=2 splits the ties)."""
    from tensorprob.selection._gsm import greedy_information

    w = [1.0, 3.0, 3.0, 2.0, 3.0, 0.5]
    selected, values, _ = greedy_information(_Modular(w, dtype), list(range(6)), 6, lazy=lazy, lazy_batch=2)
    assert selected == [1, 2, 4, 3, 0, 5]
    np.testing.assert_allclose(values, np.cumsum([3, 3, 3, 2, 1, 0.5]))
