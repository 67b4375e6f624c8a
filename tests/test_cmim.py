"""CMIM: both variants against a plain reference, the lazy evaluation against the eager one, the parameters.

``variant="brown"``: ``J = min_j I(X_m;C|X_j)``; ``variant="fleuret"``: ``J = min(I(X_m;C), min_j I(X_m;C|X_j))``.
The reference below is plain NumPy (entropies of ``np.unique`` counts), independent of tensorprob's counting.
"""
import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

import tensorprob as tp
from tensorprob.counting import SelectionData
from tensorprob.selection import _classic, get_selector
from tensorprob.selection._classic import LAZY_MIN_WORK, CMIMCriterion, pair_cmi
from tensorprob.selection._greedy import greedy_forward

VARIANTS = ("brown", "fleuret")


# ------------------------------------------------------------------ plain reference
def _h(*cols):
    """Plug-in entropy (nats) of the joint of the given integer columns."""
    _, n = np.unique(np.stack(cols, axis=1), axis=0, return_counts=True)
    p = n / n.sum()
    return float(-(p * np.log(p)).sum())


def _cmi(x, c, z):
    """I(x; c | z) = H(x,z) + H(c,z) - H(x,c,z) - H(z)."""
    return _h(x, z) + _h(c, z) - _h(x, c, z) - _h(z)


def reference_cmim(X, y, k, variant):
    """Greedy CMIM by brute force: every score recomputed over the whole selected set at every step."""
    N = X.shape[1]
    rel = [_h(X[:, m]) + _h(y) - _h(X[:, m], y) for m in range(N)]
    S, scores = [], []
    while len(S) < k:
        cands = [m for m in range(N) if m not in S]
        if not S:
            vals = [rel[m] for m in cands]
        else:
            vals = []
            for m in cands:
                v = min(_cmi(X[:, m], y, X[:, j]) for j in S)
                vals.append(min(v, rel[m]) if variant == "fleuret" else v)
        best = max(vals)
        i = next(i for i, v in enumerate(vals) if v >= best - 1e-12 * max(abs(best), 1.0))  # ties: lowest index
        S.append(cands[i])
        scores.append(vals[i])
    return S, scores


def planted(seed, M=300, N=10, card=3):
    """Relevant, redundant, synergistic, duplicated and constant columns (exact ties)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, card, (M, N))
    y = (X[:, 1] + (X[:, 4] > 0) + rng.integers(0, 2, M)) % 3
    X[:, 6] = (X[:, 1] + rng.integers(0, 2, M)) % card  # a noisy copy of a relevant feature
    X[:, 7] = X[:, 4]  # an exact copy: tied with feature 4 at every step
    X[:, 3] = (y + X[:, 0]) % card  # informative only together with feature 0
    X[:, 9] = 1  # constant
    return X, y


def _fit(X, y, k, variant, lazy, **kw):
    return tp.CMIM(k=k, variant=variant, lazy=lazy, **kw).fit(X, y)


# ------------------------------------------------------------------ both variants, plain reference
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_variants_match_the_plain_reference(variant, lazy, seed):
    X, y = planted(seed)
    for k in (1, 3, X.shape[1]):
        got = _fit(X, y, k, variant, lazy)
        S, scores = reference_cmim(X, y, k, variant)
        assert got.selected_.tolist() == S
        np.testing.assert_allclose(got.scores_, scores, rtol=1e-9, atol=1e-12)


def test_the_variants_differ_where_a_feature_is_informative_only_jointly():
    X, y = planted(0)
    brown, fleuret = _fit(X, y, 4, "brown", False), _fit(X, y, 4, "fleuret", False)
    assert brown.selected_.tolist() != fleuret.selected_.tolist()
    # Fleuret's score never exceeds the candidate's own relevance
    rel = tp.MIM(k="all").fit(X, y)
    relevance = dict(zip(rel.selected_.tolist(), rel.scores_))
    assert all(s <= relevance[m] + 1e-12 for m, s in zip(fleuret.selected_, fleuret.scores_))
    assert any(s > relevance[m] + 1e-3 for m, s in zip(brown.selected_, brown.scores_))


def test_xor_pair_found_by_brown_only():
    grid = np.array(np.meshgrid(*[[0, 1]] * 4, indexing="ij")).reshape(4, -1).T
    X = np.repeat(grid, 25, axis=0)
    y = X[:, 0] ^ X[:, 3]  # every single feature independent of y
    assert sorted(_fit(X, y, 2, "brown", True).selected_.tolist()) == [0, 3]
    fleuret = _fit(X, y, 2, "fleuret", True)  # capped at I(X_m;C) = 0: the next index
    assert fleuret.selected_.tolist() == [0, 1]
    np.testing.assert_allclose(fleuret.scores_, 0.0, atol=1e-12)


# ------------------------------------------------------------------ lazy == eager
def with_missing(seed, M=400, N=24, card=4, frac=0.1):
    """Planted codes with ties, -1 entries, an all-missing and a constant column."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, card, (M, N))
    y = (X[:, 2] + X[:, 5] // 2 + (rng.random(M) < 0.3)) % 3
    for j in range(N // 3, N, 3):  # noisy copies of the relevant features
        X[:, j] = np.where(rng.random(M) < 0.15 * (1 + j % 4), rng.integers(0, card, M), X[:, 2 + 3 * (j % 2)])
    X[:, 13] = 2  # constant
    X = np.where(rng.random((M, N)) < frac, -1, X)
    X[:, 11] = X[:, 2]  # exact duplicates, missing entries included: ties at every step
    X[:, 12] = X[:, 5]
    X[:, 7] = -1  # never observed: held back until the observed columns run out
    return X, y


def assert_same_scores(got, want, device):
    """Bit for bit on the CPU, where a table's quantities do not depend on the batch it is computed in.

    On CUDA the reduction kernels may split a table's sum differently for another number of
    tables: values may differ in the last bits (the picks may not).
    """
    if device == "cpu":
        np.testing.assert_array_equal(got, want)
    else:
        # a CMI of 0 may come back as a few ulps of the entropies (about 5 nats here) it is a difference of
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=64 * np.finfo(np.float64).eps)


def _criterion_run(X, y, k, variant, lazy, dtype, device="cpu", **kw):
    data = SelectionData(torch.as_tensor(X, device=device), int(X.max()) + 1, torch.as_tensor(y, device=device),
                         int(y.max()) + 1, dtype=dtype)
    crit = CMIMCriterion(variant, lazy, **kw)
    return greedy_forward(crit, data, k), crit


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lazy_equals_eager_with_ties_and_missing_entries(variant, seed, dtype, device):
    X, y = with_missing(seed)
    eager = _fit(X, y, "all", variant, False, missing_values=-1, dtype=dtype)
    lazy = _fit(X, y, "all", variant, True, missing_values=-1, dtype=dtype)
    assert lazy.selected_.tolist() == eager.selected_.tolist()
    assert_same_scores(lazy.scores_, eager.scores_, device)
    assert lazy.selected_[-1] == 7  # the unobserved column comes last


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed_size,depth", [(1, 1), (3, 4), (64, 2)])
def test_lazy_equals_eager_for_any_seed_and_depth(variant, seed_size, depth, dtype, device):
    X, y = with_missing(3, M=500, N=40, frac=0.05)
    k = 25
    (S0, v0), _ = _criterion_run(X, y, k, variant, False, dtype, device)
    (S1, v1), _ = _criterion_run(X, y, k, variant, True, dtype, device, seed=seed_size, depth=depth)
    assert S1 == S0
    assert_same_scores(v1, v0, device)


def tied(seed, M=200, base=5, copies=4):
    """Every column ``copies`` times (shuffled): exact ties at every step, down to the all-zero tail."""
    rng = np.random.default_rng(seed)
    B = rng.integers(0, 3, (M, base))
    y = (B[:, 0] + (B[:, 1] > 0) + (rng.random(M) < 0.3)) % 3
    return np.tile(B, copies)[:, rng.permutation(base * copies)], y


@pytest.mark.slow  # four seeds of tied copies (seconds); the fast lane keeps the tie tests above
@pytest.mark.parametrize("variant", VARIANTS)
def test_lazy_equals_eager_on_exact_ties(variant, dtype, device):
    # a candidate whose bound equals the best exact score may still win the tie by a lower index:
    # the lazy evaluation must bring it up to date (a strict bound test fails here)
    for seed in range(4):
        X, y = tied(seed)
        (S0, v0), _ = _criterion_run(X, y, X.shape[1], variant, False, dtype, device)
        for seed_size, depth in [(1, 1), (2, 1), (8, 2)]:
            (S1, v1), _ = _criterion_run(X, y, X.shape[1], variant, True, dtype, device, seed=seed_size, depth=depth)
            assert S1 == S0
            assert_same_scores(v1, v0, device)


def test_lazy_counts_fewer_tables(monkeypatch):
    X, y = with_missing(4, M=600, N=60, frac=0.0)
    n = []
    real = _classic.pair_cmi
    monkeypatch.setattr(_classic, "pair_cmi", lambda *a: n.append(a[2].numel()) or real(*a))
    k = 20
    _criterion_run(X, y, k, "fleuret", True, torch.float64)
    assert sum(n) < 60 * (k - 1) / 2  # the eager evaluation counts all 60 candidates at each of 19 steps


@pytest.mark.parametrize("complete", [False, True])
def test_pair_tables_are_those_of_the_eager_step(complete, dtype, device, monkeypatch):
    X, y = with_missing(5)
    if complete:  # the CPU counts these in NumPy (_pair_class_counts, information_of_counts)
        X = np.where(X < 0, 1, X)
    plain = []
    real = _classic._pair_class_counts
    monkeypatch.setattr(_classic, "_pair_class_counts", lambda *a: plain.append(1) or real(*a))
    data = SelectionData(torch.as_tensor(X, device=device), int(X.max()) + 1, torch.as_tensor(y, device=device), 3,
                         dtype=dtype)
    codes_t = data.codes.T.to(torch.int32, memory_format=torch.contiguous_format)
    rng = np.random.default_rng(0)
    for size in (1, 2, 7, 200):
        cand = torch.as_tensor(rng.integers(0, X.shape[1], size), device=device)
        sel = torch.as_tensor(rng.integers(0, X.shape[1], size), device=device)
        got = pair_cmi(data, codes_t, cand, sel)
        want = torch.stack([data.pair_information(int(j)).cmi_x_b_given_a[int(m)] for m, j in zip(cand, sel)])
        assert_same_scores(got.cpu().numpy(), want.cpu().numpy(), device)
    assert bool(plain) == (complete and device == "cpu")


@pytest.mark.parametrize("variant", VARIANTS)
def test_lazy_equals_eager_on_complete_data(variant, dtype, device):
    # complete rows in memory: the lazy rounds count their pairs in NumPy on the CPU
    X, y = with_missing(6, M=700, N=50, card=5, frac=0.0)
    X = np.where(X < 0, 3, X)
    (S0, v0), _ = _criterion_run(X, y, 30, variant, False, dtype, device)
    (S1, v1), _ = _criterion_run(X, y, 30, variant, True, dtype, device)
    assert S1 == S0
    assert_same_scores(v1, v0, device)


def test_pair_tables_of_one_wide_table_on_two_threads(device):
    # a table of >= 32768 cells alone in its batch: a threaded sum would split its row (a
    # single-output reduction) and round differently from the eager step's batch of tables
    rng = np.random.default_rng(0)
    X = rng.integers(0, 20, (1000, 4))
    y = (X[:, 0] * 5 + rng.integers(0, 90, 1000)) % 90  # 20 * 20 * 90 = 36,000 cells per table
    data = SelectionData(torch.as_tensor(X, device=device), 20, torch.as_tensor(y, device=device), 90)
    codes_t = data.codes.T.to(torch.int16, memory_format=torch.contiguous_format)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for m, j in [(0, 1), (3, 3)]:
            got = pair_cmi(data, codes_t, torch.tensor([m], device=device), torch.tensor([j], device=device))
            want = data.pair_information(j).cmi_x_b_given_a[m:m + 1]
            assert_same_scores(got.cpu().numpy(), want.cpu().numpy(), device)
    finally:
        torch.set_num_threads(threads)


def test_auto_is_lazy_on_large_data_on_the_cpu():
    def data(M, N, device="cpu"):
        codes = torch.zeros((M, N), dtype=torch.int64, device=device)
        return SelectionData(codes, 5, torch.zeros(M, dtype=torch.int64, device=device), 10)

    auto = CMIMCriterion("brown", "auto")
    assert not auto._use_lazy(data(3196, 36))  # chess: eager
    assert auto._use_lazy(data(1440, 1024))  # COIL-20: lazy
    assert auto._use_lazy(data(LAZY_MIN_WORK // 8 - 250, 8))
    assert not auto._use_lazy(data(LAZY_MIN_WORK // 8 - 251, 8))
    assert CMIMCriterion("brown", True)._use_lazy(data(10, 2))
    assert not CMIMCriterion("brown", False)._use_lazy(data(1440, 1024))
    if torch.cuda.is_available():
        assert not auto._use_lazy(data(1440, 1024, "cuda"))  # eager on CUDA (one sync per step)


# ------------------------------------------------------------------ parameters
def test_variant_and_lazy_are_validated_parameters():
    X, y = planted(0)
    with pytest.raises(InvalidParameterError, match="'variant' parameter"):
        tp.CMIM(k=2, variant="fleuret2004").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'lazy' parameter"):
        tp.CMIM(k=2, lazy="sometimes").fit(X, y)
    with pytest.raises(ValueError, match="variant must be one of"):
        CMIMCriterion("bogus")
    sel = tp.CMIM(k=3, variant="fleuret", lazy=True)
    assert sel.get_params()["variant"] == "fleuret" and sel.get_params()["lazy"] is True
    assert tp.CMIM().get_params()["variant"] == "brown" and tp.CMIM().get_params()["lazy"] == "auto"
    copy = clone(sel).set_params(variant="brown")
    assert copy.variant == "brown" and sel.variant == "fleuret"
    by_name = get_selector("cmim")(k=3, variant="fleuret").fit(X, y)
    assert by_name.selected_.tolist() == sel.fit(X, y).selected_.tolist()
    assert tp.select_features(X, y, 3, method="cmim", variant="fleuret").selected_.tolist() == by_name.selected_.tolist()
    with pytest.raises(InvalidParameterError):
        get_selector("cmim")(k=3, variant="Fleuret").fit(X, y)
