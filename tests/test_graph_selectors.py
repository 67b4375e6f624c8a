"""Trace ratio and SPEC (paper 004's Table 5 baselines) against explicit Laplacians, traces and eigenvectors."""
import itertools
import warnings

import numpy as np
import pytest

import tensorprob as tp
from tensorprob.selection import RealSelector, get_selector


# ------------------------------------------------------------------ brute-force references (the slow obvious way)
def _graphs(y):
    """Within-class graph A_w (1/n_c), between-class graph A_b = 1/n - A_w and their Laplacians."""
    n = len(y)
    A_w = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if y[i] == y[j]:
                A_w[i, j] = 1.0 / np.sum(y == y[i])
    A_b = np.full((n, n), 1.0 / n) - A_w
    L_w = np.diag(A_w.sum(1)) - A_w
    L_b = np.diag(A_b.sum(1)) - A_b
    return A_w, L_w, L_b


def _trace_ratio_brute(X, y, subset):
    _, L_w, L_b = _graphs(y)
    Wsel = np.zeros((X.shape[1], len(subset)))
    Wsel[list(subset), range(len(subset))] = 1.0
    return np.trace(Wsel.T @ X.T @ L_b @ X @ Wsel) / np.trace(Wsel.T @ X.T @ L_w @ X @ Wsel)


def _spec_brute(X, y, mode, kappa=None):
    """phi_1, phi_2, phi_3 from the explicit normalized Laplacian (phi_3 over whole eigenspaces, see SPEC)."""
    n = len(y)
    W, _, _ = _graphs(y)  # the paper's supervised similarity is the within-class graph
    d = W.sum(1)
    L = np.eye(n) - np.diag(d ** -0.5) @ W @ np.diag(d ** -0.5)
    xi1 = np.sqrt(d) / np.linalg.norm(np.sqrt(d))
    # eigenvectors with xi_1 pinned: move xi_1 to the top of the spectrum, the others are orthogonal to it
    _, U = np.linalg.eigh(L + 3.0 * np.outer(xi1, xi1))
    out = []
    for f in X.T:
        fh = np.sqrt(d) * f / np.linalg.norm(np.sqrt(d) * f)
        phi1 = fh @ L @ fh
        if mode == "phi1":
            out.append(phi1)
        elif mode == "phi2":
            out.append(phi1 / (1 - (fh @ xi1) ** 2))
        else:
            kappa = len(np.unique(y)) if kappa is None else kappa
            alpha2 = (U.T @ fh) ** 2
            lam_L = np.einsum("ij,ik,kj->j", U, L, U)  # eigenvalues of L itself
            terms = (2 - lam_L[: kappa - 1]) * alpha2[: kappa - 1]
            out.append(terms.sum())
    return np.asarray(out)


def _data(seed, n=(4, 5, 3), d=7, offset=2.0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(len(n)), n)
    X = rng.normal(size=(len(y), d)) + np.outer(y, rng.normal(size=d)) + offset
    return X, y


# ------------------------------------------------------------------ hand-worked example
# y = (0, 0, 1, 1, 1), f = (1, 3, 2, 2, 5): class means 2 and 3, overall mean 2.6.
# within scatter w = 1 + 1 + 1 + 1 + 4 = 8; between b = 2 (2 - 2.6)^2 + 3 (3 - 2.6)^2 = 1.2;
# total t = 9.2; uncentered ||f||^2 = 43.  Hence phi_1 = 8/43, phi_2 = 8/9.2,
# phi_3 (kappa = c = 2) = 2 b / ||f||^2 = 2.4/43, and the Fisher ratio b/w = 0.15.
HAND_Y = np.array([0, 0, 1, 1, 1])
HAND_F = np.array([1.0, 3.0, 2.0, 2.0, 5.0])


def test_hand_worked_scores(dtype):
    y, f = HAND_Y, HAND_F
    _, L_w, L_b = _graphs(y)
    assert f @ L_w @ f == pytest.approx(8.0) and f @ L_b @ f == pytest.approx(1.2)
    X = np.column_stack([f, np.full(5, 4.0), np.array([0.0, 0.0, 1.0, 1.0, 1.0])])
    expected = {"phi1": 8 / 43, "phi2": 8 / 9.2, "phi3": 2.4 / 43}
    for mode, value in expected.items():
        assert _spec_brute(X[:, :1], y, mode)[0] == pytest.approx(value)
        got = tp.SPEC(k="all", mode=mode, dtype=dtype).fit(X, y).feature_scores_
        assert got[0] == pytest.approx(value, rel=1e-5)
    # the class indicator column: no within-class scatter, phi_1 = phi_2 = 0, the best
    sel = tp.SPEC(k=3, dtype=dtype).fit(X, y)
    assert sel.selected_.tolist() == [2, 0, 1] and sel.scores_.tolist() == pytest.approx([0.0, 8 / 9.2, 1.0])
    tr = tp.TraceRatio(k=1, dtype=dtype).fit(X[:, :2], y)  # f against a constant
    assert tr.selected_.tolist() == [0] and tr.lambda_ == pytest.approx(0.15, rel=1e-5)
    assert tr.between_scatter_.tolist() == pytest.approx([1.2, 0.0]) and tr.within_scatter_[1] == 0.0


# ------------------------------------------------------------------ vectorized = brute force on random data
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", ["phi1", "phi2", "phi3"])
def test_spec_matches_explicit_laplacian(seed, mode, dtype):
    X, y = _data(seed)
    ref = _spec_brute(X, y, mode)
    sel = tp.SPEC(k=4, mode=mode, dtype=dtype).fit(X, y)
    rtol = 1e-4 if dtype.itemsize == 4 else 1e-10
    np.testing.assert_allclose(sel.feature_scores_, ref, rtol=rtol, atol=rtol)
    order = np.argsort(-ref if mode == "phi3" else ref, kind="stable")
    assert sel.selected_.tolist() == order[:4].tolist()
    np.testing.assert_allclose(sel.scores_, ref[order[:4]], rtol=rtol, atol=rtol)


def test_spec_phi3_whole_spectrum_and_partial_eigenspaces(dtype):
    X, y = _data(3)
    n, c = len(y), 3
    rtol = 1e-4 if dtype.itemsize == 4 else 1e-10
    # kappa = n: every eigenpair but the trivial one, a basis-free sum
    full = tp.SPEC(k="all", mode="phi3", n_eigenvectors=n, dtype=dtype).fit(X, y).feature_scores_
    np.testing.assert_allclose(full, _spec_brute(X, y, "phi3", kappa=n), rtol=rtol)
    big = tp.SPEC(k="all", mode="phi3", n_eigenvectors=10 * n, dtype=dtype).fit(X, y).feature_scores_
    np.testing.assert_allclose(big, full, rtol=rtol)
    # kappa cutting an eigenspace: each eigenspace counted by its fraction of its whole sum
    W, _, _ = _graphs(y)
    P0 = W - np.full((n, n), 1.0 / n)  # projector on the eigenvalue-0 space without xi_1 (dimension c - 1)
    P1 = np.eye(n) - W  # projector on the eigenvalue-1 space (dimension n - c)
    for kappa in (2, c + 3):
        ref = []
        for f in X.T:
            fh = f / np.linalg.norm(f)
            ref.append(2 * min(kappa - 1, c - 1) / (c - 1) * fh @ P0 @ fh + max(0, kappa - c) / (n - c) * fh @ P1 @ fh)
        got = tp.SPEC(k="all", mode="phi3", n_eigenvectors=kappa, dtype=dtype).fit(X, y).feature_scores_
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_trace_ratio_finds_the_best_subset(seed, k, dtype):
    X, y = _data(seed, d=7)
    X[:, 1] *= 10.0  # unequal scales make the subset optimum differ from the Fisher top-k
    sel = tp.TraceRatio(k=k, dtype=dtype).fit(X, y)
    ratios = {s: _trace_ratio_brute(X, y, s) for s in itertools.combinations(range(7), k)}
    best = max(ratios.values())
    rtol = 1e-4 if dtype.itemsize == 4 else 1e-10
    assert sel.lambda_ == pytest.approx(best, rel=rtol)
    assert _trace_ratio_brute(X, y, tuple(sel.selected_)) == pytest.approx(best, rel=rtol)
    # scores: b - lambda w of the picks, decreasing, summing to 0
    _, L_w, L_b = _graphs(y)
    b = np.einsum("ij,ik,kj->j", X, L_b, X)
    w = np.einsum("ij,ik,kj->j", X, L_w, X)
    np.testing.assert_allclose(sel.between_scatter_, b, rtol=rtol)
    np.testing.assert_allclose(sel.within_scatter_, w, rtol=rtol)
    np.testing.assert_allclose(sel.scores_, (b - sel.lambda_ * w)[sel.selected_], rtol=rtol, atol=rtol * b.max())
    assert np.all(np.diff(sel.scores_) <= 1e-9) and abs(sel.scores_.sum()) <= rtol * b.max() * k


def test_trace_ratio_beats_the_fisher_top_k():
    X, y = _data(11, d=7)
    X[:, 1] *= 10.0
    sel = tp.TraceRatio(k=3, dtype="float64").fit(X, y)
    fisher = sel.between_scatter_ / sel.within_scatter_
    top = tuple(np.argsort(-fisher)[:3])
    assert sel.lambda_ >= _trace_ratio_brute(X, y, top) - 1e-12


# ------------------------------------------------------------------ constant and degenerate features
def test_constant_features(dtype):
    X, y = _data(4, d=4)
    X = np.column_stack([np.zeros(len(y)), X, np.full(len(y), 7.5)])  # all-zero and nonzero constants
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division warnings
        for mode, worst in (("phi1", 1.0), ("phi2", 1.0), ("phi3", 0.0)):
            sel = tp.SPEC(k="all", mode=mode, dtype=dtype).fit(X, y)
            assert np.isfinite(sel.feature_scores_).all()
            assert sel.feature_scores_[[0, 5]].tolist() == [worst, worst]
            assert sel.selected_[-2:].tolist() == [0, 5]  # last, ties to the lowest index
        tr = tp.TraceRatio(k="all", dtype=dtype).fit(X, y)
    assert np.isfinite(tr.scores_).all() and np.isfinite(tr.lambda_)
    assert tr.scores_[tr.selected_.tolist().index(0)] == 0.0
    # a feature constant inside each class: w = 0, infinite ratio, taken first
    Xc = np.column_stack([X[:, 1], y.astype(float) * 2.0, X[:, 2]])
    tr = tp.TraceRatio(k=1, dtype=dtype).fit(Xc, y)
    assert tr.selected_.tolist() == [1] and tr.lambda_ == np.inf and np.isfinite(tr.scores_).all()
    assert tp.TraceRatio(k=2, dtype=dtype).fit(Xc, y).selected_[0] == 1


def test_registered_and_exported():
    X, y = _data(5)
    assert get_selector("spec") is tp.SPEC and get_selector("trace-ratio") is tp.TraceRatio
    assert issubclass(tp.SPEC, RealSelector) and issubclass(tp.TraceRatio, RealSelector)
    assert "SPEC" in tp.__all__ and "TraceRatio" in tp.__all__
    a = tp.select_features(X, y, 3, method="spec", mode="phi1")
    assert a.selected_.tolist() == tp.SPEC(k=3, mode="phi1").fit(X, y).selected_.tolist()
    b = tp.select_features(X, y, 3, method="trace_ratio")
    assert b.transform(X).shape == (len(y), 3)


# ------------------------------------------------------------------ scikit-feature (optional)
def test_against_scikit_feature():
    """scikit-feature, when installed: SPEC's phi_1/phi_2 agree given the paper's kernel; our trace ratio is at least as good.

    Its own supervised SPEC kernel weighs by the class proportion n_c/n instead of the paper's
    1/n_c, its phi_3 depends on the eigenvectors that ``eigh`` picks within the repeated
    eigenvalues, and its trace ratio only reorders the Fisher top k: none is compared.
    """
    pytest.importorskip("skfeature")
    from skfeature.function.similarity_based import SPEC as sk_spec
    from skfeature.function.similarity_based import trace_ratio as sk_tr

    X, y = _data(6)
    n_c = np.bincount(y)
    W = np.where(y[:, None] == y[None, :], 1.0 / n_c[y][:, None], 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for style, mode in ((-1, "phi1"), (0, "phi2")):
            ref = sk_spec.spec(X, y, mode="raw", style=style, W=W)
            got = tp.SPEC(k="all", mode=mode, dtype="float64").fit(X, y).feature_scores_
            np.testing.assert_allclose(got, ref, rtol=1e-8)
        for k in (2, 3, 5):
            theirs = sk_tr.trace_ratio(X, y, k, mode="index")[:k]
            assert tp.TraceRatio(k=k, dtype="float64").fit(X, y).lambda_ >= _trace_ratio_brute(X, y, tuple(theirs)) - 1e-9
