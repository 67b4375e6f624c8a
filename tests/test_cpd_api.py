"""CPD models without surprises: labels from predict, -inf for probability 0, estimates that name their method.

Issue 42 item 5 (a row of probability 0 has log-probability -inf, the EM's floors stay inside the fit)
and issue 43 item 5 (predict in the label space, Estimate.method, the label's name kept by save/load).
"""
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import tensorprob as tp
from tensorprob.datasets import make_latent_class


def _unseen_value_model(dtype):
    # codes 0..1 in the data, cardinalities 3: value 2 has probability exactly 0 in every component
    X = make_latent_class(400, [2, 2, 2, 2], 2, random_state=0).X
    return tp.fit_cpd(X, rank=2, cardinalities=[3, 3, 3, 3], random_state=0, n_iter_max=30, tol=0, dtype=dtype)


# ---------------------------------------------------------------- issue 42 item 5: -inf, never a floor
def test_log_prob_of_a_row_of_probability_0_is_minus_inf(dtype):
    m = _unseen_value_model(dtype)
    lp = m.log_prob([[2, 0, 1, 0], [0, 0, 1, 0], [2, 2, 2, 2]])
    assert lp.dtype == dtype
    assert torch.isneginf(lp[0]) and torch.isneginf(lp[2])  # was about -1e306 / -1e37 (N times the EM's floor)
    assert torch.isfinite(lp[1]) and float(lp[1]) > -20
    for A in m.log_factors:  # log 0 is -inf in the model's parameters; every other entry is a real log-probability
        assert torch.isneginf(A[2]).all()
        assert bool((A[:2] > -1e4).all())
    # marginals and missing entries: leaving the impossible value out gives a finite probability
    assert torch.isfinite(m.log_prob([[-1, 0, 1, 0]]))[0]
    assert torch.isneginf(m.log_prob([[2]], variables=[0]))[0]


def test_predictions_for_a_row_of_probability_0_are_the_limit_of_smoothing(dtype):
    # hand-built: two components over three binary variables; row (1, 1, 1) is ruled out by two
    # values in component 0 and by one in component 1, so its posterior is all on component 1
    t = lambda a: torch.tensor(a, dtype=dtype)  # noqa: E731
    A = [t([[1.0, 0.0], [0.0, 1.0]]), t([[1.0, 0.5], [0.0, 0.5]]), t([[0.5, 1.0], [0.5, 0.0]])]
    m = tp.CPDModel(t([0.4, 0.6]), A)
    rows = [[1, 1, 1], [1, 0, 1], [0, 0, 0]]
    assert torch.isneginf(m.log_prob(rows)[:2]).all()
    post = m.posterior(rows)
    assert torch.isfinite(post).all()
    torch.testing.assert_close(post[0], t([0.0, 1.0]))
    # (1, 0, 1): one zero in each component; given the other values, 0.4 * 1 * 0.5 against 0.6 * 0.5 * 1
    torch.testing.assert_close(post[1], t([0.4, 0.6]))
    # independent check: the posterior of the model whose zeros are eps, as eps -> 0
    eps = 1e-30 if dtype == torch.float64 else 1e-12
    smooth = tp.CPDModel(t([0.4, 0.6]), [a + eps for a in A], normalize=True)
    torch.testing.assert_close(post, smooth.posterior(rows), atol=1e-6, rtol=0)
    proba = m.predict_proba(rows, target=0)
    torch.testing.assert_close(proba, smooth.predict_proba(rows, target=0), atol=1e-6, rtol=0)
    assert m.predict(rows, target=0).tolist() == [1, 0, 1]


def test_score_of_rows_of_probability_0_is_minus_inf_with_their_count(dtype):
    X = make_latent_class(400, [2, 2, 2], 2, random_state=1).X
    est = tp.CPD(rank=2, cardinalities=[3, 3, 3], random_state=0, n_iter_max=20, tol=0,
                 dtype=dtype).fit(X)
    test = np.array([[0, 1, 0], [2, 0, 0], [0, 0, 2], [1, 1, 1]])
    assert np.isneginf(est.score_samples(test)).sum() == 2
    with pytest.warns(UserWarning, match="2 of 4 rows have probability 0"):
        assert est.score(test) == -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isfinite(est.score(test[[0, 3]]))


# ---------------------------------------------------------------- issue 43 item 5: predict in the label space
def test_predict_returns_labels_and_predict_codes_the_codes():
    rng = np.random.default_rng(0)
    y = rng.choice(np.array(["cat", "dog", "eel"]), 600)
    X = pd.DataFrame({"a": np.where(y == "dog", 7, 3) + (rng.random(600) < 0.1),
                      "b": np.where(y == "eel", 10, 20), "c": rng.integers(0, 3, 600)})
    m = tp.fit_cpd(X, rank=3, y=y, random_state=0, n_iter_max=50)
    pred = m.predict(X)
    assert isinstance(pred, np.ndarray) and pred.dtype == y.dtype and set(pred) <= {"cat", "dog", "eel"}
    assert (pred == y).mean() > 0.9  # compares with the labels directly
    codes = m.predict_codes(X)
    assert codes.dtype == torch.int64 and torch.equal(codes, m.predict_proba(X).argmax(1))
    np.testing.assert_array_equal(pred, m.classes[codes.cpu().numpy()])
    # a feature as the target (all N columns given, the target's ignored): its own values, 3, 4, 7 or 8
    full = X.assign(label=y)
    fa = m.predict(full, target=0)
    assert set(np.unique(fa)) <= {3, 4, 7, 8} and (fa == X["a"]).mean() > 0.8
    np.testing.assert_array_equal(fa, m.encoder_.categories_[0][m.predict_codes(full, target=0).cpu().numpy()])
    # the scikit-learn estimator agrees
    est = tp.CPD(rank=3, random_state=0, n_iter_max=50).fit(X, y)
    np.testing.assert_array_equal(est.predict(X), est.model_.predict(X))


def test_predict_of_a_model_without_labels_gives_codes():
    m = tp.CPDModel(torch.tensor([0.5, 0.5], dtype=torch.float64),
                    [torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64)] * 2)
    pred = m.predict([[0, -1], [1, -1]], target=1)
    assert isinstance(pred, np.ndarray) and pred.tolist() == [0, 1]


def test_estimates_name_their_method():
    m = tp.CPDModel(torch.tensor([0.3, 0.7], dtype=torch.float64),
                    [torch.tensor([[0.9, 0.2], [0.1, 0.8]], dtype=torch.float64)] * 3)
    for est in (m.entropy([0, 1]), m.mutual_information([0]), m.mutual_information([0], target=2)):
        assert est.method == "exact" and est.stderr == 0.0
    kw = dict(method="mc", n_samples=300, random_state=0)
    assert m.entropy([0, 1], **kw).method == "mc"
    assert m.mutual_information([0], **kw).method == "rao_blackwell"
    assert m.mutual_information([0], estimator="paper", **kw).method == "mc"
    assert m.mutual_information([0], target=2, **kw).method == "rao_blackwell"
    est = m.mutual_information([0], **kw)
    assert est.stderr > 0 and est._fields == ("value", "stderr", "method")
    value, stderr, method = est
    assert (value, stderr, method) == (est.value, est.stderr, "rao_blackwell")


def test_label_name_is_kept_by_fit_save_and_load(tmp_path):
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"p": rng.integers(0, 3, 120), "q": rng.integers(0, 3, 120)})
    y = pd.Series(rng.choice(["u", "v"], 120), name="species")
    m = tp.fit_cpd(X, rank=2, y=y, random_state=0, n_iter_max=10, tol=0)
    assert m.variable_names == ["p", "q", "species"]  # was ["p", "q", "y"]
    m.save(tmp_path / "m.pt")
    back = tp.CPDModel.load(tmp_path / "m.pt")
    assert back.variable_names == ["p", "q", "species"] and back.target == 2
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    # a label named like a feature, or without a name, stays "y"
    assert tp.fit_cpd(X, rank=2, y=y.rename("p"), random_state=0, n_iter_max=5, tol=0).variable_names[-1] == "y"
    assert tp.fit_cpd(X, rank=2, y=y.to_numpy(), random_state=0, n_iter_max=5, tol=0).variable_names[-1] == "y"
