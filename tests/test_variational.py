"""VI-framework selectors (VMI, PDA framework="vi") against plain references and known answers."""
import itertools

import numpy as np
import pytest
from _helpers import I, random_data, tols

import tensorprob as tp


def cond_class(target, given, y, c):
    """p^(target | given, y = c) at every sample (0 where (given, c) never occurs)."""
    mask = y == c
    g = [np.asarray(v) for v in given]
    out = np.zeros(len(target))
    for idx in range(len(target)):
        sel = mask.copy()
        for v in g:
            sel &= v == v[idx]
        den = sel.sum()
        if den:
            out[idx] = (sel & (target == target[idx])).sum() / den
    return out


@np.errstate(divide="ignore")  # log 0 = -inf: a class the sample cannot come from
def bound(X, y, chain, q):
    """L(C) with plain loops; for q="fid" the chain's last element is the root candidate."""
    classes = np.unique(y)
    prior = np.array([(y == c).mean() for c in classes])
    logq = np.zeros((len(y), len(classes)))
    for ci, c in enumerate(classes):
        if q == "fid":
            root = chain[-1]
            logq[:, ci] = np.log(cond_class(X[:, root], [], y, c))
            for s in chain[:-1]:
                logq[:, ci] += np.log(cond_class(X[:, s], [X[:, root]], y, c))
            continue
        for t, s in enumerate(chain):
            if t == 0 or q == "naive":
                logq[:, ci] += np.log(cond_class(X[:, s], [], y, c))
            else:
                ps = [cond_class(X[:, s], [X[:, r]], y, c) for r in chain[:t]]
                logq[:, ci] += np.mean(np.log(ps), 0) if q == "gmd" else np.log(np.mean(ps, 0))
    a = logq + np.log(prior)
    lse = np.logaddexp.reduce(a, axis=1)
    own = a[np.arange(len(y)), np.searchsorted(classes, y)]
    Hy = -(prior * np.log(prior)).sum()
    return float(Hy + np.mean(own - lse))


def greedy_vi(X, y, k, q, threshold=0.01):
    selected, chain, prev, scores = [], [], 0.0, []
    while len(selected) < k:
        best, bj = -np.inf, None
        for m in range(X.shape[1]):
            if m not in selected:
                b = bound(X, y, chain + [m], q)
                if b > best + 1e-12:
                    best, bj = b, m
        if chain and best - prev < threshold:
            chain, prev = [], 0.0
            continue
        chain.append(bj)
        selected.append(bj)
        scores.append(best)
        prev = best
    return selected, scores


@pytest.mark.parametrize("q", ["naive", "gmd", "amd", "fid"])
@pytest.mark.parametrize("blocks", ["default", "one candidate per block"])
def test_vi_bounds_and_selection_match_plain_reference(q, blocks, monkeypatch, dtype):
    from tensorprob.counting import _tables
    from tensorprob.information import _variational

    if blocks != "default":  # every blocked pass (tables, lookups, bounds) in many small blocks
        for mod in (_variational, _tables):
            monkeypatch.setattr(mod, "block_budget", lambda device: 1000)
    X, y = random_data(8, M=150, N=7)
    want, scores = greedy_vi(X, y, 4, q)
    got = tp.PDA(k=4, distribution="gmd" if q == "naive" else q, framework="vi", k1=0 if q == "naive" else 1).fit(X, y)
    assert got.selected_.tolist() == want
    # the bounds are computed in the lane's dtype
    np.testing.assert_allclose(got.scores_, scores, **tols(dtype))


def test_vmi_is_the_vi_framework_with_naive_and_pairwise_q(dtype):
    X, y = random_data(9, M=200, N=7)
    for q, dist, k1 in (("naive", "gmd", 0), ("pairwise", "gmd", 1)):
        a = tp.VMI(k=5, q=q).fit(X, y)
        b = tp.PDA(k=5, distribution=dist, framework="vi", k1=k1).fit(X, y)
        assert a.selected_.tolist() == b.selected_.tolist()
        np.testing.assert_allclose(a.scores_, b.scores_)
    # the naive-q machinery is shared: every q gives the same first bound, I^(x; y)
    first = max(I(X[:, m], y) for m in range(X.shape[1]))
    for q in ("naive", "pairwise"):
        assert abs(tp.VMI(k=1, q=q).fit(X, y).scores_[0] - first) < tols(dtype, atol=1e-12)["atol"]


def test_restart_rule_drops_the_chain(dtype):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    X = np.column_stack([(y + (rng.random(400) < 0.1)) % 2] + [rng.integers(0, 2, 400) for _ in range(5)])
    sel = tp.VMI(k=4, q="naive").fit(X, y)
    assert sel.n_restarts_ >= 1 and len(sel.selected_) == 4 and sel.selected_[0] == 0
    want, scores = greedy_vi(X, y, 4, "naive")
    assert sel.selected_.tolist() == want
    np.testing.assert_allclose(sel.scores_, scores, **tols(dtype))
    none = tp.VMI(k=4, q="naive", restart_threshold=0.0).fit(X, y)
    assert none.n_restarts_ == 0


def test_naive_bayes_bound_is_tight():
    """Theorem 3.1 of paper 001: with data from a naive Bayes model, VMI-naive's bound is I(X_S; Y)."""
    rng = np.random.default_rng(1)
    M, C, N, card = 60000, 3, 4, 3
    prior = np.array([0.5, 0.3, 0.2])
    cpts = rng.dirichlet(np.ones(card) * 0.7, size=(N, C))  # p(x_n | y)
    y = rng.choice(C, M, p=prior)
    X = np.stack([(rng.random(M)[:, None] > np.cumsum(cpts[n, y], 1)).sum(1) for n in range(N)], 1)
    sel = tp.VMI(k=3, q="naive", restart_threshold=0.0).fit(X, y)
    for t in range(1, 4):
        S = sel.selected_[:t]
        # exact I(X_S; Y) of the generating model by enumeration
        mi = 0.0
        for xs in itertools.product(range(card), repeat=t):
            pxy = prior * np.prod([cpts[n, :, v] for n, v in zip(S, xs)], axis=0)
            px = pxy.sum()
            mi += float(np.sum(np.where(pxy > 0, pxy * np.log(pxy / (px * prior)), 0.0)))
        assert abs(sel.scores_[t - 1] - mi) < 0.01


def tree_data(n, seed):
    """Paper 001, Fig. 3: binary root; first-layer children x_i ~ N(y, 1); each has two children
    ~ N(x_i, 1); discretized into 5 equal-width bins. Columns 0..2 first layer, 3..8 second."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    first = y[:, None] + rng.normal(size=(n, 3))
    second = np.repeat(first, 2, axis=1) + rng.normal(size=(n, 6))
    return np.column_stack([first, second]), y


@pytest.mark.parametrize("q", ["naive", "pairwise"])
def test_vmi_selects_first_layer_of_the_tree_model_first(q):
    X, y = tree_data(20000, 2)
    sel = tp.VMI(k=3, q=q).fit(X, y)
    assert sorted(sel.selected_.tolist()) == [0, 1, 2]


def test_naive_bounds_by_matrix_product_equal_direct_log_sum_exp_even_on_underflow(monkeypatch, device):
    import torch

    from tensorprob.counting import SelectionData
    from tensorprob.information import _variational
    from tensorprob.information._variational import VariationalState

    X, y = random_data(10, M=120, N=7)
    X[:, 0] = y  # p(x_0 = v | c) = 0 for v != c: with a dominant wrong class the product underflows
    data = SelectionData(torch.tensor(X, device=device), 3, torch.tensor(y, device=device), 3)  # float64
    st = VariationalState(data, "naive")
    idx0 = torch.arange(7, device=device)[None, :] * 3 + data.codes  # (M, N): row of (i, x_mi) in log_p_class
    g = torch.Generator().manual_seed(0)
    for scale in (1.0, 2000.0):  # 2000: exp(b - max) underflows for most classes
        st.base = (torch.randn(120, 3, generator=g, dtype=torch.float64) * scale).to(device)
        lq = st.base[:, None, :] + st.log_p_class[idx0] + st.log_prior  # (M, N, C), plain
        own = torch.gather(lq, 2, data.y[:, None, None].expand(-1, 7, 1))[..., 0] - st.log_prior[data.y][:, None]
        direct = (own - torch.logsumexp(lq, 2)).mean(0)
        torch.testing.assert_close(st.bounds(), direct, rtol=0, atol=1e-9)
        # the check left on the device: set exactly when the fast product underflowed somewhere
        fast = st.bounds(defer=True)
        flag = st.take_unchecked()
        assert flag is not None and flag.device == data.codes.device and st.take_unchecked() is None
        assert bool(flag) == (scale > 1.0)
        if not bool(flag):
            torch.testing.assert_close(fast, st.bounds(), rtol=0, atol=0)
        with monkeypatch.context() as mp:  # blocks of 41 rows x 1 candidate
            mp.setattr(_variational, "block_budget", lambda device: 1000)
            torch.testing.assert_close(st.bounds(), direct, rtol=0, atol=1e-9)
    # the exact fallback was exercised: some products underflowed to zero
    b = st.base + st.log_prior
    G = torch.exp(b - b.amax(1, keepdim=True)) @ torch.exp(st.log_p_class).T
    assert bool((torch.gather(G, 1, idx0) == 0).any())


@pytest.mark.parametrize("q", ["naive", "pairwise"])
def test_deferred_underflow_check_equals_the_eager_check(q, monkeypatch, dtype):
    """The greedy driver reads the VI bounds' underflow check with the pick; the picks are the eager ones.

    With the exponent floor at 0 every class sum counts as underflowed: each step's fast bounds
    are flagged, the driver asks for the exact ones, and the run equals one that checks at once.
    """
    from tensorprob.information import _variational
    from tensorprob.selection._pda import VariationalCriterion

    X, y = random_data(11, M=200, N=8)
    normal = tp.VMI(k=5, q=q).fit(X, y)
    monkeypatch.setattr(_variational, "exp_floor", lambda dt: 0.0)
    exact_calls = []
    orig = VariationalCriterion.exact_scores
    monkeypatch.setattr(VariationalCriterion, "exact_scores",
                        lambda self, first: exact_calls.append(first) or orig(self, first))
    deferred = tp.VMI(k=5, q=q).fit(X, y)
    if q == "pairwise":  # the naive bounds do not use the floor: nothing to recheck there
        assert len(exact_calls) >= 4  # every step after the first
    monkeypatch.setattr(VariationalCriterion, "scores", lambda self: self.state.bounds() / self.data.log_base)
    eager = tp.VMI(k=5, q=q).fit(X, y)
    assert deferred.selected_.tolist() == eager.selected_.tolist() == normal.selected_.tolist()
    np.testing.assert_array_equal(deferred.scores_, eager.scores_)
    np.testing.assert_allclose(deferred.scores_, normal.scores_, **tols(dtype, atol=1e-12))
