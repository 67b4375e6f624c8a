"""The CPD engine: EM correctness, recovery, batching, information quantities, bad input."""
import math
import warnings

import numpy as np
import pytest
import torch
from _helpers import dense_pmf, entropy_of, tols
from scipy.optimize import linear_sum_assignment

import tensorprob as tp
from tensorprob.datasets import make_latent_class


def small_model(seed=0, cards=(3, 2, 4, 3), rank=3):
    s = make_latent_class(10, list(cards), rank, concentration=0.8, random_state=seed)
    return tp.CPDModel(torch.tensor(s.weights), [torch.tensor(A) for A in s.factors])


# ---------------------------------------------------------------- EM correctness
def dense_em(X, cards, lam, factors, n_iter):
    """Alg. 1 of paper 000 on the full empirical tensor: multiplicative MTTKRP updates (numpy)."""
    emp = np.zeros(cards)
    np.add.at(emp, tuple(X.T), 1.0)
    emp /= emp.sum()
    lam, factors = lam.copy(), [A.copy() for A in factors]
    hist = []
    for _ in range(n_iter + 1):
        P = dense_pmf(lam, factors)
        hist.append(float((emp[emp > 0] * np.log(P[emp > 0])).sum()))
        if len(hist) == n_iter + 1:
            break
        Y = np.where(emp > 0, emp / np.where(P > 0, P, 1), 0.0)
        new_f = []
        letters = "abcdefgh"[: len(cards)]
        for n in range(len(cards)):
            others = [factors[j] for j in range(len(cards)) if j != n]
            spec = letters + "," + ",".join(letters[j] + "z" for j in range(len(cards)) if j != n) + "->" + letters[n] + "z"
            mttkrp = np.einsum(spec, Y, *others) * lam[None, :]
            new_f.append(factors[n] * mttkrp)
        lam = np.array([np.sum(new_f[0][:, f]) for f in range(len(lam))])
        factors = [A / A.sum(0, keepdims=True) for A in new_f]
    return lam, factors, np.array(hist)


def test_sparse_em_equals_dense_bruteforce_em(dtype):
    s = make_latent_class(3000, [3, 2, 4, 3], 3, random_state=1)
    # one start: with several, which start wins may differ between 0 and 15 iterations
    m0 = tp.fit_cpd(s.X, rank=3, n_iter_max=0, random_state=7, n_restarts=1)
    lam0 = m0.weights.cpu().numpy()
    fac0 = [A.cpu().numpy() for A in m0.factors]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = tp.fit_cpd(s.X, rank=3, n_iter_max=15, tol=0.0, random_state=7, n_restarts=1)
    lam, fac, hist = dense_em(s.X, [3, 2, 4, 3], lam0, fac0, 15)
    # the sparse EM keeps log-factors in the lane's dtype (rounded after every M-step)
    np.testing.assert_allclose(m.loglik_history_, hist, rtol=0, atol=tols(dtype, atol=1e-10)["atol"])
    np.testing.assert_allclose(m.weights.cpu().numpy(), lam, **tols(dtype, atol=1e-10))
    for A, B in zip(m.factors, fac):
        np.testing.assert_allclose(A.cpu().numpy(), B, **tols(dtype, atol=1e-10))


def test_loglik_never_decreases_and_history_is_data(dtype):
    s = make_latent_class(4000, [4] * 12, 5, random_state=2)
    m = tp.fit_cpd(s.X, rank=5, random_state=0, n_iter_max=200, tol=1e-9)
    h = m.loglik_history_
    assert len(h) == m.n_iter_ + 1 and m.n_iter_ > 3
    # monotone up to the rounding of the log-factors to the working dtype after each M-step
    assert np.all(np.diff(h) >= -tols(dtype, rtol=0)["rtol"] * np.abs(h[:-1]))
    assert m.converged_ is bool(abs(h[-1] - h[-2]) <= 1e-9 * abs(h[-2]))  # stopped by tol, not by n_iter_max
    # the last history entry is the training log-likelihood of the returned model
    assert abs(h[-1] - float(m.log_prob(s.X).mean())) < tols(dtype, atol=1e-9)["atol"]


def test_planted_parameter_recovery():
    cards = [3, 4, 2, 5] * 4
    train = make_latent_class(20000, cards, 4, random_state=11)
    gen = torch.Generator().manual_seed(99)
    true = tp.CPDModel(torch.tensor(train.weights), [torch.tensor(A) for A in train.factors])
    held = true.sample(20000, random_state=gen)  # fresh rows from the same model
    m = tp.fit_cpd(train.X, rank=4, n_restarts=5, random_state=0)
    # match components by total variation distance of their conditional distributions
    tv = np.zeros((4, 4))
    for A_hat, A in zip(m.factors, train.factors):
        tv += 0.5 * np.abs(A_hat.cpu().numpy()[:, :, None] - A[:, None, :]).sum(0)
    tv /= len(cards)
    r, c = linear_sum_assignment(tv)
    assert tv[r, c].max() < 0.03
    np.testing.assert_allclose(m.weights.cpu().numpy()[r], train.weights[c], atol=0.02)
    ll_hat = float(m.log_prob(held).mean())
    ll_true = float(true.log_prob(held).mean())
    assert ll_hat > ll_true - 0.01


@pytest.mark.slow  # two EM runs to tol 1e-12 (seconds): full suite only
def test_duplicate_rows_are_merged_into_weights():
    # weights are relative frequencies (rescaled to sum to the rows of positive weight), so a
    # duplicated row and a larger weight agree up to the scale of the initialization's
    # smoothing: the converged fits are the same
    s = make_latent_class(500, [3, 3, 2], 2, random_state=3)
    tripled = np.concatenate([s.X, s.X[:250], s.X[:250]])
    w = np.r_[np.full(250, 3.0), np.ones(250)]
    a = tp.fit_cpd(tripled, rank=2, random_state=4, tol=1e-12, n_iter_max=2000)
    b = tp.fit_cpd(s.X, rank=2, random_state=4, tol=1e-12, n_iter_max=2000, sample_weight=w)
    assert a.loglik_history_[-1] == pytest.approx(b.loglik_history_[-1], abs=1e-8)


def test_missing_entries_marginalized_exactly(dtype):
    model = small_model(1)
    X = model.sample(50, random_state=0).cpu().numpy()
    Xm = X.copy()
    Xm[::3, 1] = -1
    Xm[1::4, 3] = -1
    lp = model.log_prob(Xm).cpu().numpy()
    P = model.to_dense().cpu().numpy()
    for m in range(len(X)):
        idx = tuple(slice(None) if v < 0 else int(v) for v in Xm[m])
        assert abs(lp[m] - math.log(P[idx].sum())) < 1e-12
    # and EM with missing data maximizes the marginal likelihood monotonically
    s = make_latent_class(3000, [3, 4, 2, 3, 3], 3, random_state=5)
    Xs = s.X.copy()
    Xs[np.random.default_rng(0).random(Xs.shape) < 0.2] = -1
    fit = tp.fit_cpd(Xs, rank=3, random_state=0, cardinalities=[3, 4, 2, 3, 3])
    h = fit.loglik_history_
    assert np.all(np.diff(h) >= -tols(dtype, rtol=0)["rtol"] * np.abs(h[:-1]))
    assert abs(h[-1] - float(fit.log_prob(Xs).mean())) < tols(dtype, atol=1e-9)["atol"]


def test_batched_fits_equal_one_by_one():
    s = make_latent_class(3000, [3, 4, 2, 5, 3, 3], 4, random_state=6)
    kw = dict(random_state=3, n_iter_max=60)
    batch = tp.fit_cpds(s.X, ranks=[2, 3, 5], **kw)
    for r, mb in zip([2, 3, 5], batch):
        single = tp.fit_cpd(s.X, rank=r, **kw)
        assert mb.n_iter_ == single.n_iter_
        np.testing.assert_allclose(mb.loglik_history_, single.loglik_history_, atol=1e-10)
        np.testing.assert_allclose(mb.weights.cpu().numpy(), single.weights.cpu().numpy(), atol=1e-9)
    # weight sets (e.g. CV folds) as one batch
    folds = np.random.default_rng(0).integers(0, 3, len(s.X))
    W = np.stack([(folds != k).astype(float) for k in range(3)], 1)
    batch = tp.fit_cpds(s.X, ranks=[3], sample_weight=W, **kw)
    for k in range(3):
        single = tp.fit_cpd(s.X, rank=3, sample_weight=W[:, k], **kw)
        np.testing.assert_allclose(batch[k].loglik_history_, single.loglik_history_, atol=1e-10)
    # restarts: the best of n_restarts equals the best of the separate starts
    best = tp.fit_cpd(s.X, rank=4, n_restarts=3, **kw)
    assert best.loglik_history_[-1] >= tp.fit_cpd(s.X, rank=4, n_restarts=1, **kw).loglik_history_[-1] - 1e-12


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_default_fit_keeps_the_best_of_four_starts(dtype):
    s = make_latent_class(2000, [3, 4, 2, 5, 3], 4, random_state=6)
    finals = []
    m = tp.fit_cpd(s.X, rank=4, random_state=3, n_iter_max=60, dtype=dtype,
                   callback=lambda it, ll: finals.append(np.asarray(ll).copy()))
    assert finals[-1].shape == (4,)  # four starts in one batch by default
    rtol = torch.finfo(dtype).eps ** (2 / 3)  # best_restart's margin: the working dtype's
    assert m.loglik_history_[-1] == finals[-1].max() or np.isclose(m.loglik_history_[-1], finals[-1].max(), rtol=rtol)
    one = tp.fit_cpd(s.X, rank=4, random_state=3, n_iter_max=60, dtype=dtype, n_restarts=1)
    # start 0 of the four is the single fit (on CUDA its batched sums may round differently)
    final = m.loglik_history_[-1]
    assert final >= one.loglik_history_[-1] or np.isclose(final, one.loglik_history_[-1], rtol=rtol)
    assert tp.CPD().n_restarts == 4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_best_restart_ignores_rounding_ties(dtype):
    from tensorprob.cpd._fit import best_restart

    eps = np.finfo(dtype).eps
    tie = np.array([-10.0, -10.0 * (1 - 4 * eps), -12.0], dtype=dtype)  # starts 0 and 1: one optimum
    assert best_restart(tie) == 0
    assert best_restart(tie[::-1].copy()) == 1
    close = np.array([-10.0, -10.0 * (1 - 1e-4), -10.0], dtype=dtype)  # apart beyond rounding
    assert best_restart(close) == 1
    assert best_restart(np.array([np.nan, -3.0, -np.inf], dtype=dtype)) == 1
    assert best_restart(np.array([np.nan, np.nan], dtype=dtype)) == 0
    # float32 fits keep float64 histories: the margin is the working dtype's, not the history's
    tie32 = np.array([-5.26778783, -5.26778781, -5.26778782])  # one optimum, float32 rounding apart
    assert best_restart(tie32, torch.float32) == 0 and best_restart(tie32, np.float32) == 0
    assert best_restart(tie32) == 1  # float64's margin sees three different optima


def test_same_seed_same_model():
    s = make_latent_class(2000, [3, 3, 4, 2], 3, random_state=8)
    a = tp.fit_cpd(s.X, rank=3, random_state=42, n_restarts=2)
    b = tp.fit_cpd(s.X, rank=3, random_state=42, n_restarts=2)
    assert torch.equal(a.weights, b.weights) and all(torch.equal(x, y) for x, y in zip(a.factors, b.factors))
    c = tp.fit_cpd(s.X, rank=3, random_state=43, init="kmeans++", n_iter_max=0)
    d = tp.fit_cpd(s.X, rank=3, random_state=43, init="kmeans++", n_iter_max=0)
    assert torch.equal(c.weights, d.weights)
    assert np.array_equal(a.sample(100, random_state=1).cpu().numpy(), a.sample(100, random_state=1).cpu().numpy())


@pytest.mark.slow
def test_float32_tracks_float64_on_mnist():
    X, y = tp.datasets.load_mnist_subset()
    kw = dict(rank=20, y=y, random_state=0, n_iter_max=40, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m64 = tp.fit_cpd(X, dtype="float64", **kw)
        m32 = tp.fit_cpd(X, dtype="float32", **kw)
    assert m32.dtype == torch.float32 and m64.dtype == torch.float64
    assert m32.loglik_history_[-1] > m64.loglik_history_[-1] - 0.01


def test_fit_with_label_and_raw_input(dtype):
    from sklearn.datasets import load_wine

    d = load_wine()
    m = tp.fit_cpd(d.data, rank=3, y=d.target, random_state=0, n_restarts=2)
    assert m.target == 13 and m.n_variables == 14 and list(m.classes) == [0, 1, 2]
    codes = m.encoder_.transform(d.data)
    proba = m.predict_proba(d.data)  # the model takes the raw data it was fitted on
    assert proba.shape == (len(d.target), 3)
    np.testing.assert_allclose(proba.sum(1).cpu().numpy(), 1.0, **tols(dtype, atol=1e-12))
    assert torch.equal(m.predict_proba(codes, codes=True), proba)
    assert (m.predict(d.data) == d.target).mean() > 0.8  # labels, as NumPy values of classes


def test_predict_proba_equals_bruteforce_conditional():
    model = small_model(2)
    P = model.to_dense().cpu().numpy()
    X = model.sample(30, random_state=3).cpu().numpy()
    proba = model.predict_proba(X, target=2).cpu().numpy()
    for m in range(len(X)):
        idx = list(X[m])
        idx[2] = slice(None)
        cond = P[tuple(idx)]
        np.testing.assert_allclose(proba[m], cond / cond.sum(), atol=1e-12)


def test_sample_matches_model_marginals():
    model = small_model(3)
    X = model.sample(200000, random_state=0).cpu().numpy()
    P = model.to_dense().cpu().numpy()
    for n in range(model.n_variables):
        emp = np.bincount(X[:, n], minlength=P.shape[n]) / len(X)
        marg = P.sum(axis=tuple(j for j in range(P.ndim) if j != n))
        np.testing.assert_allclose(emp, marg, atol=0.005)


# ---------------------------------------------------------------- information quantities
def test_exact_entropy_and_mi_equal_enumeration():
    model = small_model(4)
    P = model.to_dense().cpu().numpy()
    w = model.weights.cpu().numpy()
    A = [a.cpu().numpy() for a in model.factors]
    np.testing.assert_allclose(P.sum(), 1.0, atol=1e-12)
    for S in ([0], [1, 3], [0, 2, 3], [0, 1, 2, 3]):
        marg = P.sum(axis=tuple(j for j in range(P.ndim) if j not in S))
        h = entropy_of(marg)
        assert abs(model.entropy(S).value - h) < 1e-10
        hz = sum(w[f] * entropy_of(A[n][:, f]) for n in S for f in range(len(w)))
        assert abs(model.conditional_entropy_given_latent(S) - hz) < 1e-10
        # I(X_S; Z) by enumeration of the joint of (X_S, Z)
        joint = dense_pmf(w, [A[n] for n in S] + [np.eye(len(w))])
        mi = entropy_of(marg) + entropy_of(w) - entropy_of(joint)
        assert abs(model.mutual_information(S).value - mi) < 1e-10
    # I(X_S; X_t) by enumeration
    marg = P.sum(axis=(1,))  # over variable 1 -> (0, 2, 3)
    h02 = entropy_of(marg.sum(axis=2))
    mi = h02 + entropy_of(marg.sum(axis=(0, 1))) - entropy_of(marg)
    assert abs(model.mutual_information([0, 2], target=3).value - mi) < 1e-10


def test_monte_carlo_estimates_within_four_standard_errors():
    model = small_model(5, cards=(4, 3, 5, 3, 4), rank=4)
    S = [0, 2, 3, 4]
    exact_h = model.entropy(S).value
    exact_i = model.mutual_information(S).value
    exact_t = model.mutual_information([0, 2], target=4).value
    samples = model.sample(20000, random_state=0)
    h = model.entropy(S, method="mc", samples=samples)
    i_p = model.mutual_information(S, method="mc", estimator="paper", samples=samples)
    i_rb = model.mutual_information(S, method="mc", estimator="rao_blackwell", samples=samples)
    i_t = model.mutual_information([0, 2], target=4, method="mc", samples=samples)
    for est, exact in ((h, exact_h), (i_p, exact_i), (i_rb, exact_i), (i_t, exact_t)):
        assert 0 < est.stderr < 0.05
        assert abs(est.value - exact) < 4 * est.stderr
    assert i_rb.stderr < i_p.stderr


def test_rao_blackwell_has_lower_variance_over_repeats():
    model = small_model(6, cards=(3, 4, 3, 5, 2, 3), rank=4)
    S = [0, 1, 3, 5]
    paper, rb = [], []
    for seed in range(30):
        smp = model.sample(2000, random_state=seed)
        paper.append(model.mutual_information(S, method="mc", estimator="paper", samples=smp).value)
        rb.append(model.mutual_information(S, method="mc", estimator="rao_blackwell", samples=smp).value)
    exact = model.mutual_information(S).value
    assert np.var(rb) < np.var(paper)
    assert abs(np.mean(rb) - exact) < 4 * np.std(rb) / math.sqrt(30)


def test_enumeration_budget_is_enforced():
    model = tp.CPDModel(torch.full((2,), 0.5, dtype=torch.float64), [torch.full((5, 2), 0.2, dtype=torch.float64)] * 30)
    with pytest.raises(ValueError, match="method='mc'"):
        model.entropy(method="exact")
    est = model.entropy(method="mc", n_samples=500, random_state=0)
    assert abs(est.value - 30 * math.log(5)) < 1e-9


# ---------------------------------------------------------------- conversion and persistence
def test_tensorly_round_trip_and_dense_tensor():
    pytest.importorskip("tensorly")
    model = small_model(7)
    cp = model.to_tensorly()
    back = tp.CPDModel.from_tensorly(cp)
    assert torch.allclose(back.weights, model.weights)
    np.testing.assert_allclose(dense_pmf(model.weights.cpu().numpy(), [A.cpu().numpy() for A in model.factors]),
                               model.to_dense().cpu().numpy(), atol=1e-14)
    # an unnormalised nonnegative CP tensor becomes the PMF proportional to it
    scaled = tp.CPDModel.from_tensorly((np.array([2.0, 6.0]), [np.array([[1.0, 3.0], [1.0, 1.0]]),
                                                               np.array([[2.0, 0.0], [2.0, 5.0]])]))
    dense = scaled.to_dense().cpu().numpy()
    raw = dense_pmf([2.0, 6.0], [np.array([[1.0, 3.0], [1.0, 1.0]]), np.array([[2.0, 0.0], [2.0, 5.0]])])
    np.testing.assert_allclose(dense, raw / raw.sum(), atol=1e-14)
    with pytest.raises(ValueError, match="nonnegative"):
        tp.CPDModel.from_tensorly((None, [np.array([[-1.0], [2.0]])]))


def test_save_load_and_to(tmp_path, device):
    s = make_latent_class(1000, [3, 3, 2], 2, random_state=9)
    m = tp.fit_cpd(s.X, rank=2, y=s.z, random_state=0)
    path = tmp_path / "model.pt"
    m.save(path)
    back = tp.CPDModel.load(path)  # onto the CPU unless a device is named
    assert back.weights.device.type == "cpu"
    assert torch.equal(back.weights, m.weights.cpu()) and back.target == m.target
    there = tp.CPDModel.load(path, device=device)
    assert there.weights.device.type == device and torch.equal(there.weights, m.weights)
    np.testing.assert_array_equal(back.loglik_history_, m.loglik_history_)
    assert back.n_iter_ == m.n_iter_ and back.converged_ == m.converged_
    assert list(back.classes) == list(m.classes)
    m32 = m.to("cpu", dtype="float32")
    assert m32.dtype == torch.float32 and m32.n_iter_ == m.n_iter_
    (tmp_path / "junk.pt").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="not a saved tensorprob CPDModel"):
        tp.CPDModel.load(tmp_path / "junk.pt")


@pytest.mark.cuda
def test_cuda_fit_matches_cpu():
    s = make_latent_class(3000, [3, 4, 2, 5] * 3, 4, random_state=10)
    cpu = tp.fit_cpd(s.X, rank=4, device="cpu", random_state=0, n_iter_max=30, tol=0)
    gpu = tp.fit_cpd(s.X, rank=4, device="cuda", dtype="float64", random_state=0, n_iter_max=30, tol=0)
    assert gpu.weights.device.type == "cuda"
    assert abs(cpu.loglik_history_[-1] - gpu.loglik_history_[-1]) < 1e-3


# ---------------------------------------------------------------- rank selection
def test_select_rank_matches_separate_fold_fits():
    s = make_latent_class(1500, [3, 4, 3, 3, 4, 3], 3, random_state=12)
    y = s.z  # the label is the latent class: rank >= 3 classifies well
    res = tp.select_rank(s.X, y, ranks=(1, 3), cv=3, random_state=0, n_iter_max=50)
    assert res.errors.shape == (2, 3) and res.best_rank == 3
    assert res.mean_errors[1] < res.mean_errors[0]
    # recompute one (rank, fold) cell with a plain fit and predict
    from sklearn.model_selection import StratifiedKFold

    seed = 0
    tr, va = list(StratifiedKFold(3, shuffle=True, random_state=seed).split(s.X, y))[1]
    w = np.zeros(len(y))
    w[tr] = 1.0
    Xv = np.concatenate([s.X[va], np.full((len(va), 1), -1)], axis=1)
    for i, rank in enumerate((1, 3)):  # the smaller rank too: the validation pass packs models of both ranks
        m = tp.fit_cpd(s.X, rank=rank, y=y, sample_weight=w, random_state=0, n_iter_max=50, n_restarts=1)
        err = float((m.predict(Xv) != y[va]).mean())
        assert abs(res.errors[i, 1] - err) < 1e-12, (rank, res.errors[i, 1], err)


# ---------------------------------------------------------------- bad input
def test_bad_input_errors():
    X = make_latent_class(200, [3, 3, 2], 2, random_state=0).X
    with pytest.raises(ValueError, match="empty"):
        tp.fit_cpd(np.zeros((0, 3), dtype=int), rank=2)
    with pytest.raises(ValueError, match="rank must be >= 1"):
        tp.fit_cpd(X, rank=0)
    with pytest.raises(TypeError, match="rank must be an integer"):
        tp.fit_cpd(X, rank=2.5)
    with pytest.raises(TypeError, match="rank must be an integer"):
        tp.fit_cpds(X, ranks=[2, 2.5])
    with pytest.raises(TypeError, match="fit_cpds"):
        tp.fit_cpd(X, rank=[2, 3])
    with pytest.raises(ValueError, match="negative"):
        tp.fit_cpd(X, rank=2, sample_weight=-np.ones(200))
    with pytest.raises(ValueError, match="NaN or infinite"):
        tp.fit_cpd(X, rank=2, sample_weight=np.full(200, np.nan))
    with pytest.raises(ValueError, match="shape"):
        tp.fit_cpd(X, rank=2, sample_weight=np.ones(10))
    with pytest.raises(ValueError, match="single class"):
        tp.fit_cpd(X, rank=2, y=np.zeros(200))
    with pytest.raises(ValueError, match="200 rows but y has 10"):
        tp.fit_cpd(X, rank=2, y=np.arange(10) % 2)
    with pytest.raises(ValueError, match="missing label"):
        tp.fit_cpd(X.astype(float), rank=2, y=np.where(np.arange(200) == 5, np.nan, 1.0))
    with pytest.raises(ValueError, match="max_categories"):
        tp.fit_cpd(np.random.default_rng(0).integers(0, 200, (300, 2)), rank=2)
    with tp.config_context(max_categories=300):
        tp.fit_cpd(np.random.default_rng(0).integers(0, 200, (300, 2)), rank=2, n_iter_max=2)
    with pytest.warns(UserWarning, match="distinct rows"):
        tp.fit_cpd(np.array([[0, 1], [1, 0], [0, 1]]), rank=3, n_iter_max=5)
    with pytest.raises(ValueError, match="init must be"):
        tp.fit_cpd(X, rank=2, init="magic")
    with pytest.raises(ValueError, match="codes must be >= 0"):  # declared codes (cardinalities=)
        tp.fit_cpd(X - 2, rank=2, cardinalities=np.full(X.shape[1], 64))
    m = tp.fit_cpd(X, rank=2, random_state=0)
    with pytest.raises(ValueError, match="code out of range in column 0"):
        m.log_prob(np.array([[5, 0, 0]]))
    with pytest.raises(ValueError, match="columns"):
        m.log_prob(np.zeros((2, 5), dtype=int))
    with pytest.raises(TypeError, match="integer codes"):
        m.log_prob(np.array([[0.5, 0, 0]]))
    with pytest.raises(ValueError, match="no label variable"):
        m.predict(X)
    with pytest.raises(ValueError, match="out of range"):
        m.entropy([7])
    with pytest.raises(ValueError, match="target must be"):
        m.mutual_information([0], target="label")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised when CUDA is absent")
def test_cuda_unavailable_is_a_clear_error():
    X = make_latent_class(50, [2, 2], 2, random_state=0).X
    with pytest.raises(ValueError, match="CUDA is not available"):
        tp.fit_cpd(X, rank=2, device="cuda")


def test_models_over_variable_subsets_share_one_batch():
    from tensorprob.counting import unique_rows
    from tensorprob.cpd._fit import fit_batched

    s = make_latent_class(3000, [3, 4, 2, 5, 3, 3], 3, random_state=0)
    X = torch.as_tensor(s.X)
    rows, W, _ = unique_rows(X, torch.ones(len(X), 1, dtype=torch.float64))
    subsets = [[0, 1, 2], [0, 3, 5], [4]]
    mask = torch.zeros(6, len(subsets), dtype=torch.bool)
    for k, cols in enumerate(subsets):
        mask[cols, k] = True
    res = fit_batched(rows, torch.tensor([3, 4, 2, 5, 3, 3]), W.repeat(1, len(subsets)), [3], n_restarts=1,
                      n_iter_max=40, tol=0.0, alpha=0.0, init="kmeans++", seed=5, dtype=torch.float64, var_mask=mask)
    for r, cols in zip(res, subsets):
        sub = r.marginal(cols)
        # the reported likelihood is the marginal likelihood of the subset's columns
        assert abs(float(sub.log_prob(X[:, cols]).mean()) - r.loglik_history_[-1]) < 1e-10
        assert np.all(np.diff(r.loglik_history_) >= -1e-12)
        for c in set(range(6)) - set(cols):  # left-out variables stay marginalized
            assert torch.all(r.log_factors[c] == 0.0)


# ---------------------------------------------------------------- log-space model, stacking, estimator
def test_from_log_params_round_trip_and_lists(tmp_path, dtype):
    model = small_model(8).to(dtype=dtype)
    back = tp.CPDModel.from_log_params(model.log_weights, model.log_factors, target=3, n_iter=4,
                                       loglik_history=[-2.0, -1.5], converged=True)
    assert back.log_weights is model.log_weights  # canonical: kept as given, no exp/log round trip
    torch.testing.assert_close(back.weights, model.weights)
    for a, b in zip(back.factors, model.factors):
        torch.testing.assert_close(a, b)
    assert back.n_iter_ == 4 and back.converged_ is True and back.loglik_history_.tolist() == [-2.0, -1.5]
    # lists are accepted wherever codes are
    X = model.sample(5, random_state=0).cpu().numpy()
    torch.testing.assert_close(back.predict_proba(X.tolist()), back.predict_proba(X))
    torch.testing.assert_close(back.log_prob(X.tolist()), back.log_prob(X))
    assert back.predict(X.tolist()).tolist() == back.predict(X).tolist()
    assert torch.equal(back.predict_codes(X.tolist()), back.predict_codes(X))
    with pytest.raises(ValueError, match="NaN"):
        tp.CPDModel.from_log_params(torch.tensor([math.nan]), [torch.zeros(2, 1)])


def test_save_load_keeps_encoder(tmp_path):
    from sklearn.datasets import load_wine

    d = load_wine()
    m = tp.fit_cpd(d.data, rank=2, y=d.target, random_state=0, n_iter_max=20)
    m.save(tmp_path / "m.pt")
    back = tp.CPDModel.load(tmp_path / "m.pt")
    np.testing.assert_array_equal(back.encoder_.transform(d.data), m.encoder_.transform(d.data))
    assert back.variable_names == m.variable_names


def test_stack_pads_ranks_and_alphabets():
    a = small_model(1, cards=(3, 2), rank=2)
    b = small_model(2, cards=(2, 4), rank=3)
    log_w, log_f = tp.CPDModel.stack([a, b])
    assert log_w.shape == (2, 3) and log_f.shape == (2, 2, 4, 3)
    assert log_w[0, 2] == -math.inf and torch.equal(log_w[1], b.log_weights)
    assert torch.equal(log_f[0, 0, :3, :2], a.log_factors[0]) and torch.all(log_f[0, 0, 3:] == -math.inf)
    assert torch.all(log_f[0, 0, :3, 2:] == 0.0)  # padded components: log 1, masked by their -inf weight
    assert torch.equal(log_f[1, 1], b.log_factors[1])
    with pytest.raises(ValueError, match="different numbers of variables"):
        tp.CPDModel.stack([a, small_model(3)])


def test_init_kmeanspp_seeds_distinct_rows_and_is_a_stochastic_start():
    from tensorprob.counting import unique_rows
    from tensorprob.cpd._em import EMData, init_kmeanspp

    s = make_latent_class(800, [3, 4, 2, 3], 3, random_state=2)
    rows, W, _ = unique_rows(torch.as_tensor(s.X), torch.ones(len(s.X), 2, dtype=torch.float64))
    cards = torch.tensor([3, 4, 2, 3])
    data = EMData.build(rows, cards, W, torch.float64, 1024)
    gens = [torch.Generator().manual_seed(k) for k in range(2)]
    log_lam, log_A = init_kmeanspp(data, [2, 3], [0, 1], 3, gens, torch.float64)
    assert log_lam.shape == (2, 3) and log_A.shape == (int(cards.sum()), 2, 3)
    assert log_lam[0, 2] == -math.inf  # beyond the rank of model 0
    torch.testing.assert_close(torch.exp(log_lam).sum(1), torch.ones(2, dtype=torch.float64))
    # every variable block of every column is a distribution, smoothed away from 0
    A = torch.exp(log_A)
    for _n, (lo, hi) in enumerate(zip([0, 3, 7, 9], [3, 7, 9, 12])):
        torch.testing.assert_close(A[lo:hi].sum(0), torch.ones(2, 3, dtype=torch.float64))
    assert bool((A > 0).all())
    # the seeds are data-driven and differ: distinct columns
    assert not torch.allclose(A[:, 1, 0], A[:, 1, 1])
    # same generators, same start
    again = init_kmeanspp(data, [2, 3], [0, 1], 3, [torch.Generator().manual_seed(k) for k in range(2)], torch.float64)
    assert torch.equal(again[1], log_A)


def _brute_force_information(model, S, target):
    P = model.to_dense().cpu().double().numpy()
    marg = P.sum(axis=tuple(j for j in range(P.ndim) if j not in S))
    if target is None:
        w = model.weights.cpu().double().numpy()
        A = [model.factors[n].cpu().double().numpy() for n in S]
        return entropy_of(marg) + entropy_of(w) - entropy_of(dense_pmf(w, A + [np.eye(len(w))]))
    both = P.sum(axis=tuple(j for j in range(P.ndim) if j not in S + [target]))
    return entropy_of(marg) + entropy_of(P.sum(axis=tuple(j for j in range(P.ndim) if j != target))) - entropy_of(both)


@pytest.mark.parametrize("target", [None, 4])
def test_batched_core_matches_enumeration_for_every_method(target, dtype):
    from tensorprob.information._cpd import LatentClassBatch, information

    models = [small_model(20 + g, cards=(3, 4, 2, 3, 3), rank=3).to(dtype=dtype) for g in range(3)]
    batch = LatentClassBatch(*tp.CPDModel.stack(models))
    S = [0, 1, 3]
    truth = np.array([_brute_force_information(m, S, target) for m in models])
    exact, se0 = information(batch, S, target=target, estimator="exact")
    np.testing.assert_allclose(exact.cpu().double().numpy(), truth, **tols(dtype, atol=1e-10))
    assert torch.all(se0 == 0)
    samples = batch.sample(20000, torch.Generator().manual_seed(0))[0]
    for est in ("mc", "rao_blackwell"):
        v, se = information(batch, S, target=target, estimator=est, samples=samples)
        v, se = v.cpu().double().numpy(), se.cpu().double().numpy()
        assert np.all(se > 0) and np.all(np.abs(v - truth) < 4 * se), (est, v, truth, se)


def test_cpd_estimator_in_grid_search():
    from sklearn.base import clone
    from sklearn.model_selection import GridSearchCV

    s = make_latent_class(900, [3, 4, 3, 3], 3, random_state=4)
    search = GridSearchCV(tp.CPD(alpha=0.1, random_state=0), {"rank": [1, 3]}, cv=3).fit(s.X)
    assert search.best_params_ == {"rank": 3}
    est = search.best_estimator_
    assert isinstance(est.model_, tp.CPDModel) and est.model_.rank == 3
    assert est.score(s.X) == pytest.approx(float(est.model_.log_prob(s.X).mean()))
    assert est.sample(7, random_state=0).shape == (7, 4)
    with pytest.raises(AttributeError, match="fitted with labels"):
        est.predict_proba(s.X)
    clf = clone(est).fit(s.X, s.z)
    assert clf.predict_proba(s.X).shape == (900, 3) and (clf.predict(s.X) == s.z).mean() > 0.7
    with pytest.raises(ValueError, match="rank"):
        tp.CPD(rank=0).fit(s.X)
