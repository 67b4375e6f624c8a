"""Stability of feature selection: Nogueira et al.'s Φ̂ with its variance, Kuncheva's index, frequencies."""
import itertools
import math

import numpy as np
import pytest
from scipy.stats import norm

from tensorprob.evaluation import Stability, kuncheva_index, selection_frequencies, stability_index

# Worked example used below: d = 4 features, M = 3 selections of k = 2,
#   S1 = {0, 1}, S2 = {0, 2}, S3 = {0, 1}.
# Column counts c = (3, 2, 1, 0), so p̂ = (1, 2/3, 1/3, 0) and
#   s_f² = M/(M-1) p̂(1-p̂) = 3/2 · (0, 2/9, 2/9, 0) = (0, 1/3, 1/3, 0), mean_f s_f² = 1/6.
# k̄ = 2, k̄/d = 1/2, denominator (1/2)(1/2) = 1/4, so Φ̂ = 1 - (1/6)/(1/4) = 1/3.
# Kuncheva: pair overlaps r = 1 (S1,S2), 2 (S1,S3), 1 (S2,S3); KI = (4r - 4)/(2·2) = r - 1 = 0, 1, 0;
# average 1/3 (= Φ̂, as the sizes are equal).
# Variance: with k_i = k̄ = 2, d = 4 the paper's
#   φ_i = [ (1/d) Σ_f z_if p̂_f - k_i k̄/d² + Φ̂/2 (2 k_i k̄/d² - k_i/d - k̄/d + 1) ] / (1/4)
#       = Σ_f z_if p̂_f - 1 + Φ̂   (since k_i k̄/d² = 1/4 and the bracket is 1/2);
# Σ_f z_if p̂_f = 5/3, 4/3, 5/3, deviations from their mean 14/9: 1/9, -2/9, 1/9, squares sum 6/81 = 2/27;
# variance = 4/M² · 2/27 = 4/9 · 2/27 = 8/243.
WORKED = [[0, 1], [0, 2], [0, 1]]
WORKED_Z = [[1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 0]]


def _brute_stability(Z):
    """Φ̂ and its variance written from the formulas of Nogueira, Sechidis & Brown (2018), with loops."""
    M, d = len(Z), len(Z[0])
    p = [sum(Z[i][f] for i in range(M)) / M for f in range(d)]
    s2 = [sum((Z[i][f] - p[f]) ** 2 for i in range(M)) / (M - 1) for f in range(d)]  # unbiased sample variance
    k = [sum(Z[i]) for i in range(M)]
    kbar = sum(k) / M
    D = (kbar / d) * (1 - kbar / d)
    phi_hat = 1 - (sum(s2) / d) / D
    phi = []
    for i in range(M):
        t = sum(Z[i][f] * p[f] for f in range(d)) / d - k[i] * kbar / d**2
        t += phi_hat / 2 * (2 * k[i] * kbar / d**2 - k[i] / d - kbar / d + 1)
        phi.append(t / D)
    mean_phi = sum(phi) / M
    return phi_hat, 4 / M**2 * sum((x - mean_phi) ** 2 for x in phi)


def _delta_method_variance(Z):
    """Independent derivation of the variance: Φ̂ = 1 - A/B with A = mean_f s_f² (a U-statistic with kernel
    h(i, j) = (k_i + k_j - 2|S_i ∩ S_j|) / (2d)) and B = g(k̄), g(x) = x/d (1 - x/d). Linearizing,
    Φ̂ - Φ ≈ mean_i ψ_i with ψ_i = (-2 h1(i) + (1 - Φ) g'(k̄) k_i) / B, h1(i) = mean_j h(i, j);
    Var ≈ (1/M²) Σ_i (ψ_i - ψ̄)²."""
    Z = np.asarray(Z, dtype=float)
    M, d = Z.shape
    p, k = Z.mean(0), Z.sum(1)
    kbar = k.mean()
    B = kbar / d * (1 - kbar / d)
    A = M / (M - 1) * np.mean(p * (1 - p))
    phi_hat = 1 - A / B
    h1 = (k + kbar - 2 * Z @ p) / (2 * d)
    psi = (-2 * h1 + (1 - phi_hat) * (1 / d - 2 * kbar / d**2) * k) / B
    return float(np.sum((psi - psi.mean()) ** 2) / M**2)


def _brute_kuncheva(sets, d):
    k = len(sets[0])
    vals = [(len(set(a) & set(b)) * d - k * k) / (k * (d - k)) for a, b in itertools.combinations(sets, 2)]
    return sum(vals) / len(vals)


def test_worked_example_by_hand():
    res = stability_index(WORKED, n_features=4)
    assert isinstance(res, Stability)
    assert res.estimate == pytest.approx(1 / 3, abs=1e-12)
    assert res.variance == pytest.approx(8 / 243, abs=1e-12)
    z = norm.ppf(0.975)
    assert res.lower == pytest.approx(1 / 3 - z * math.sqrt(8 / 243), abs=1e-12)
    assert res.upper == pytest.approx(1 / 3 + z * math.sqrt(8 / 243), abs=1e-12)
    assert kuncheva_index(WORKED, n_features=4) == pytest.approx(1 / 3, abs=1e-12)
    np.testing.assert_allclose(selection_frequencies(WORKED, 4), [1, 2 / 3, 1 / 3, 0])
    # the binary matrix gives the same numbers
    assert stability_index(WORKED_Z) == res
    assert kuncheva_index(WORKED_Z) == kuncheva_index(WORKED, 4)
    np.testing.assert_array_equal(selection_frequencies(WORKED_Z), selection_frequencies(WORKED, 4))


def test_identical_selections():
    # every column is constant: s_f² = 0, Φ̂ = 1, every φ_i is equal so the variance is 0;
    # every pair overlaps fully: r = k, KI = (k d - k²)/(k (d - k)) = 1
    sets = [[4, 1, 2]] * 5
    res = stability_index(sets, n_features=7)
    assert res == (1.0, 0.0, 1.0, 1.0)
    assert kuncheva_index(sets, 7) == pytest.approx(1.0)


def test_alpha_sets_the_interval_width():
    Z = np.random.default_rng(1).random((12, 9)) < 0.4
    a, b = stability_index(Z, alpha=0.05), stability_index(Z, alpha=0.5)
    assert a.estimate == b.estimate and a.variance == b.variance
    half = lambda r: (r.upper - r.lower) / 2  # noqa: E731
    assert half(a) / half(b) == pytest.approx(norm.ppf(0.975) / norm.ppf(0.75))
    assert (a.lower + a.upper) / 2 == pytest.approx(a.estimate)


@pytest.mark.parametrize("seed", range(5))
def test_estimate_and_variance_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    M, d = rng.integers(2, 12), rng.integers(2, 10)
    Z = (rng.random((M, d)) < rng.uniform(0.1, 0.9, size=d)).astype(int)
    Z[0, 0], Z[1, 0] = 1, 0  # some spread, so 0 < k̄ < d
    res = stability_index(Z)
    phi_hat, var = _brute_stability(Z.tolist())
    assert res.estimate == pytest.approx(phi_hat, abs=1e-12)
    assert res.variance == pytest.approx(var, rel=1e-10, abs=1e-15)
    assert res.variance == pytest.approx(_delta_method_variance(Z), rel=1e-10, abs=1e-15)


def test_index_lists_and_matrix_agree():
    rng = np.random.default_rng(3)
    d = 11
    sizes = [3, 0, 5, 3, 11, 2]  # ragged; an empty and a full selection are allowed among others
    lists = [rng.permutation(d)[:s].tolist() for s in sizes]
    Z = np.zeros((len(lists), d), dtype=bool)
    for i, s in enumerate(lists):
        Z[i, s] = True
    assert stability_index(lists, n_features=d) == stability_index(Z)
    assert stability_index(lists, n_features=d) == stability_index(Z.astype(float))
    # an (M, k) integer array (stacked selected_), numpy or torch
    torch = pytest.importorskip("torch")
    stacked = np.stack([rng.permutation(d)[:4] for _ in range(6)])
    Zs = np.zeros((6, d), dtype=int)
    np.put_along_axis(Zs, stacked, 1, axis=1)
    assert stability_index(stacked, n_features=d) == stability_index(Zs)
    assert stability_index(torch.as_tensor(stacked), n_features=d) == stability_index(Zs)
    assert kuncheva_index(stacked, d) == kuncheva_index(Zs)
    assert kuncheva_index(list(map(list, stacked)), d) == kuncheva_index(Zs)


@pytest.mark.parametrize("seed", range(4))
def test_equal_sizes_phi_is_the_average_kuncheva_index(seed):
    # Nogueira et al. (2018): for selections of one size k, Φ̂ equals the average pairwise
    # Kuncheva index. (With equal sizes (1/d) Σ_f s_f² = (k - r̄)/d, r̄ the mean pair overlap, so
    # Φ̂ = (r̄ d - k²)/(k (d - k)), which is KI averaged over pairs because KI is linear in r.)
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 15))
    k = int(rng.integers(1, d))
    sets = [rng.choice(d, size=k, replace=False).tolist() for _ in range(int(rng.integers(2, 9)))]
    ki = kuncheva_index(sets, d)
    assert ki == pytest.approx(_brute_kuncheva(sets, d), abs=1e-12)
    assert stability_index(sets, n_features=d).estimate == pytest.approx(ki, abs=1e-12)


def test_random_independent_selections_give_phi_near_zero():
    # Uniform random k-subsets: E[KI] = 0 for every pair, so E[Φ̂] = 0; with M = 200, d = 50, k = 10 the
    # standard deviation of Φ̂ is about 0.14 · sqrt(2 / (M (M - 1))) ≈ 0.001, so 0.01 is a wide margin.
    rng = np.random.default_rng(0)
    sets = np.argsort(rng.random((200, 50)), axis=1)[:, :10]
    res = stability_index(sets, n_features=50)
    assert abs(res.estimate) < 0.01
    assert res.lower < 0 < res.upper
    # independent Bernoulli(0.3) indicators (sizes vary): population Φ = 1 - q(1-q)/(q(1-q)) = 0
    Z = rng.random((300, 40)) < 0.3
    res = stability_index(Z)
    assert abs(res.estimate) < 0.01
    assert res.lower < 0 < res.upper


def test_variance_estimate_tracks_the_spread_of_phi():
    # Independent rows with per-feature probabilities p_f: population Φ = 1 - mean_f p_f(1-p_f) / (q(1-q)),
    # q = mean_f p_f. Over 400 replicates of M = 60 the mean variance estimate matches the empirical variance
    # of Φ̂ within 20%, and the 95% intervals cover Φ in 90-99% of the replicates (binomial sd ≈ 1.1%).
    rng = np.random.default_rng(7)
    d, M = 15, 60
    pf = np.linspace(0.05, 0.9, d)
    q = pf.mean()
    phi = 1 - np.mean(pf * (1 - pf)) / (q * (1 - q))
    res = [stability_index(rng.random((M, d)) < pf) for _ in range(400)]
    est = np.array([r.estimate for r in res])
    var = np.array([r.variance for r in res])
    assert var.mean() == pytest.approx(est.var(), rel=0.2)
    cover = np.mean([r.lower <= phi <= r.upper for r in res])
    assert 0.90 <= cover <= 0.99


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    (([[0, 1]],), {"n_features": 4}, "at least 2 selections"),
    (([[], []],), {"n_features": 4}, "every selection is empty"),
    (([[1, 1, 1], [1, 1, 1]],), {}, "every selection is full"),
    (([[0, 2, 1], [1, 0, 0]],), {}, "binary"),
    (([[0.5, 1], [1, 0]],), {}, "binary"),
    (([[0, 1], [0, 4]],), {"n_features": 4}, r"in \[0, 4\)"),
    (([[0, -1], [0, 2]],), {"n_features": 4}, r"in \[0, 4\)"),
    (([[0, 1], [2, 2]],), {"n_features": 4}, "selection 1 contains feature 2 more than once"),
    (([[0.5, 1], [2, 3]],), {"n_features": 4}, "integer feature indices"),
    (([[0, 1], [0]],), {}, "n_features"),
    (([0, 1, 1],), {}, "2-D"),
    (([[0, 1], [0, 2]],), {"n_features": 0}, "at least 1"),
    (([[0, 1], [0, 2]],), {"n_features": 4, "alpha": 1.0}, "alpha"),
])
def test_stability_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        stability_index(*args, **kwargs)


@pytest.mark.parametrize(("sets", "d", "match"), [
    ([[0, 1]], 4, "at least 2 selections"),
    ([[0, 1], [2]], 4, "one size"),
    ([[], []], 4, "undefined for k = 0"),
    ([[0, 1, 2], [2, 1, 0]], 3, "undefined for k = 3"),
    ([[0, 1], [1, 1]], 4, "more than once"),
])
def test_kuncheva_errors(sets, d, match):
    with pytest.raises(ValueError, match=match):
        kuncheva_index(sets, d)


def test_selection_frequencies_needs_a_selection():
    with pytest.raises(ValueError, match="at least one selection"):
        selection_frequencies([], 3)
