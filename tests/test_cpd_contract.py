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


# ---------------------------------------------------------------- a model takes the data it was fitted on
def _raw_model():
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(1, 5, 400), "b": rng.integers(1, 5, 400), "c": rng.integers(1, 5, 400)})
    y = np.where(df["a"] > 2, "hi", "lo")
    return tp.fit_cpd(df, rank=2, y=y, random_state=0, n_iter_max=30), df, y


def test_log_prob_encodes_raw_data():
    import torch

    m, df, y = _raw_model()
    assert m.encoder_ is not None
    # raw values 1..4 used to be read as codes 1, 2, 3 without a word
    raw = m.log_prob([[1, 2, 3]], variables=[0, 1, 2])
    assert torch.allclose(raw, m.log_prob([[0, 1, 2]], variables=[0, 1, 2], codes=True))
    enc = tp.encode(df)
    assert torch.allclose(m.log_prob(df, variables=[0, 1, 2]), m.log_prob(enc.codes, variables=[0, 1, 2], codes=True))
    assert torch.allclose(m.log_prob(enc, variables=[0, 1, 2]), m.log_prob(df, variables=[0, 1, 2]))
    full = df.assign(y=y)  # all N columns, the label's values included
    lp = m.log_prob(full)
    codes = np.column_stack([enc.codes, (y == "lo").astype(int)])
    assert torch.allclose(lp, m.log_prob(codes, codes=True))
    assert torch.allclose(m.log_prob(full.to_numpy()), lp)
    assert torch.allclose(m.log_prob(torch.as_tensor(full[["a", "b", "c"]].to_numpy()), variables=[0, 1, 2]),
                          m.log_prob(df, variables=[0, 1, 2]))
    # a subset of raw columns: the others are marginalised
    assert torch.allclose(m.log_prob(df[["b"]], variables=[1]), m.log_prob(enc.codes[:, [1]], [1], codes=True))
    assert torch.allclose(m.posterior(df, [0, 1, 2]), m.posterior(enc.codes, [0, 1, 2], codes=True))
    with pytest.raises(ValueError, match="not seen"):
        m.log_prob([[7, 1, 1]], variables=[0, 1, 2])
    with pytest.raises(ValueError, match="not seen"):
        m.log_prob([[1, 1, 1, "mid"]])


def test_predict_takes_lists_and_dataframes_with_all_columns():
    import torch

    m, df, y = _raw_model()
    full = df.assign(y=y)
    p = m.predict_proba(df)
    assert torch.equal(m.predict_proba(full), p)  # the label's column is ignored
    assert torch.equal(m.predict_proba(full.to_numpy().tolist()), p)
    assert torch.equal(m.predict_proba(df.to_numpy().tolist()), p)
    assert torch.equal(m.predict_codes(full), p.argmax(1))
    np.testing.assert_array_equal(m.predict(full), m.classes[p.argmax(1).cpu().numpy()])  # the labels
    est = tp.CPD(rank=2, random_state=0, n_iter_max=30).fit(df, y)
    assert list(np.unique(est.predict(df))) == ["hi", "lo"]
    assert np.isfinite(est.score(df, y)) and np.isfinite(est.score(df))


def test_entropy_samples_raw_or_codes():
    m, df, _ = _raw_model()
    enc = tp.encode(df)
    a = m.entropy([0, 1], method="mc", samples=df.assign(y="lo"))
    b = m.entropy([0, 1], method="mc", samples=np.column_stack([enc.codes, np.ones(len(df), int)]), codes=True)
    assert a == b
    s = m.sample(50, random_state=0)
    assert m.mutual_information([0], method="mc", samples=s, codes=True).value >= 0


def test_model_without_encoder_takes_codes_and_checks_their_range():
    import torch

    m = tp.CPDModel(torch.tensor([0.5, 0.5], dtype=torch.float64),
                    [torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64)] * 2)
    assert m.log_prob([[0, 1]]).shape == (1,)
    with pytest.raises(ValueError, match="code out of range"):
        m.log_prob([[1, 2]])
    with pytest.raises(ValueError, match="has no encoder"):
        m.log_prob([["a", "b"]], codes=False)
