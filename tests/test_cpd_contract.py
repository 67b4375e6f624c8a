"""Issue 12 contract of CPD models: raw data in, scale-free weights, faithful and safe persistence."""
import numpy as np
import pytest

import tensorprob as tp
from tensorprob.datasets import make_latent_class


# ---------------------------------------------------------------- weights are relative frequencies
def test_sample_weight_scale_invariant(dtype):
    # the absolute scale entered through the pseudo-count alpha and the k-means++ smoothing:
    # w * 1e-12 gave a mean log-likelihood of -14.25 against -10.90
    s = make_latent_class(300, [3, 4, 2, 3], 2, random_state=0)
    w = np.random.default_rng(0).uniform(0.1, 2.0, 300)
    fits = [tp.fit_cpd(s.X, rank=2, random_state=0, alpha=0.5, sample_weight=ww, n_iter_max=30, tol=0)
            for ww in (w, w * 1e-12, w / w.sum())]
    tol = 1e-9 if dtype.itemsize == 8 else 1e-4
    for m in fits[1:]:
        np.testing.assert_allclose(m.loglik_history_, fits[0].loglik_history_, rtol=0, atol=tol)
        np.testing.assert_allclose(m.log_weights.cpu().numpy(), fits[0].log_weights.cpu().numpy(), atol=tol)
        for a, b in zip(m.log_factors, fits[0].log_factors):
            np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), atol=tol)


def test_unit_weights_are_unchanged_by_rescaling():
    s = make_latent_class(200, [3, 2, 2], 2, random_state=1)
    a = tp.fit_cpd(s.X, rank=2, random_state=0, alpha=1.0, n_iter_max=10, tol=0)
    b = tp.fit_cpd(s.X, rank=2, random_state=0, alpha=1.0, n_iter_max=10, tol=0, sample_weight=np.ones(200))
    np.testing.assert_array_equal(a.loglik_history_, b.loglik_history_)


@pytest.mark.parametrize("bad, match", [
    (np.zeros(50), "sums to zero"),
    (-np.ones(50), "negative"),
    (np.r_[np.nan, np.ones(49)], "NaN or infinite"),
    (np.r_[np.inf, np.ones(49)], "NaN or infinite"),
    (np.full(50, 1e308), "overflows"),
])
def test_bad_sample_weight_is_a_clear_error(bad, match):
    X = make_latent_class(50, [2, 2], 1, random_state=0).X
    with pytest.raises(ValueError, match=match):
        tp.fit_cpd(X, rank=1, sample_weight=bad)


def test_zero_cardinality_is_a_fit_error():
    # used to fit, then fail with an IndexError in log_prob
    X = np.zeros((20, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="cardinalities must be >= 1"):
        tp.fit_cpd(X, rank=1, cardinalities=[1, 0])
