"""Paper 000, Claim 1, checked exactly on small CPD models by brute-force enumeration.

For a CPD (latent class) model of (X_V, Y) with latent Z, Y and X_V are independent given Z,
so for every subset S of the features

    f(S) = I(X_S; Y) = g(S) - I(X_S; Z | Y),    g(S) = I(X_S; Z),

and the claim g(S) - I(X_V; Z | Y) <= f(S) <= g(S) follows. The test enumerates the joint
P(x_V, y, z) of random models with numpy alone, computes the three quantities for every
subset and compares them with the library's exact ``CPDModel.mutual_information`` (the way
GSM-CPD and ``benchmarks/repro_gsm_claim1.py`` compute them), then checks the identity and
both bounds.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from _helpers import tols

import tensorprob as tp


def _entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def _brute_force(weights: np.ndarray, factors: list[np.ndarray], S: tuple[int, ...], y: int):
    """(I(X_S; Y), I(X_S; Z), I(X_S; Z | Y)) from the enumerated joint of (X_S, Y, Z), float64."""
    F = weights.size
    # P(x_S, y, z) as an array with one axis per variable of S, then y, then z
    letters = "abcdefghijklmnop"
    ins = [f"{letters[i]}z" for i in range(len(S))] + ["Yz", "z"]
    out = "".join(letters[i] for i in range(len(S))) + "Yz"
    P = np.einsum(",".join(ins) + "->" + out, *[factors[s] for s in S], factors[y], weights)
    nS = len(S)
    pxs_y = P.sum(axis=nS + 1)
    pxs_z = P.sum(axis=nS)
    pxs = pxs_y.sum(axis=nS)
    py = P.sum(axis=tuple(range(nS)) + (nS + 1,))
    pz = weights
    pyz = P.sum(axis=tuple(range(nS)))
    h_xs = _entropy(pxs)
    f = h_xs + _entropy(py) - _entropy(pxs_y)
    g = h_xs + _entropy(pz) - _entropy(pxs_z)
    cond = _entropy(pxs_y) + _entropy(pyz) - _entropy(P) - _entropy(py)  # I(X_S; Z | Y)
    assert P.shape[-1] == F
    return f, g, cond


def _random_model(cards, F, dtype, seed):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(F, 2.0))
    A = [rng.dirichlet(np.full(c, 0.7), size=F).T for c in cards]  # (c, F), columns sum to 1
    model = tp.CPDModel(torch.tensor(w, dtype=dtype), [torch.tensor(a, dtype=dtype) for a in A], normalize=True,
                        target=len(cards) - 1)
    # the probabilities the model holds (after its dtype's rounding), renormalized in float64 so
    # that the enumerated joint sums to 1 and the identity below holds to float64 precision
    w64 = model.weights.double().numpy()
    A64 = [a.double().numpy() for a in model.factors]
    return model, w64 / w64.sum(), [a / a.sum(0, keepdims=True) for a in A64]


@pytest.mark.parametrize("seed, cards, F", [(0, [2, 3, 2, 3, 2, 3], 3), (1, [3, 2, 4, 2, 2], 4),
                                            (2, [2, 2, 2, 2, 2, 2, 2], 2)])
def test_claim1_exact_on_random_cpds(seed, cards, F, dtype):
    model, w, A = _random_model(cards, F, dtype, seed)
    y = len(cards) - 1
    V = list(range(y))
    tol = tols(dtype, rtol=1e-10, atol=1e-12)
    const = model.mutual_information(V + [y]).value - model.mutual_information([y]).value  # I(X_V; Z | Y)
    const_bf = _brute_force(w, A, tuple(V), y)[2]
    np.testing.assert_allclose(const, const_bf, **tol)
    assert const_bf > 0
    for r in range(1, len(V) + 1):
        for S in itertools.combinations(V, r):
            f_bf, g_bf, cond_bf = _brute_force(w, A, S, y)
            f = model.mutual_information(list(S), target=y).value
            g = model.mutual_information(list(S)).value
            np.testing.assert_allclose([f, g], [f_bf, g_bf], **tol)
            # the identity behind the claim (Y independent of X_S given Z) and the two bounds
            np.testing.assert_allclose(f_bf, g_bf - cond_bf, rtol=0, atol=1e-12)
            assert cond_bf <= const_bf + 1e-12  # I(X_S; Z | Y) grows with S
            slack = tol["atol"] + tol["rtol"] * g_bf
            assert g - const - slack <= f <= g + slack


def test_claim1_bounds_tight_at_the_full_set_and_empty_set():
    # S = V: the lower bound is attained; the gap of the upper bound is the whole I(X_V; Z | Y)
    model, w, A = _random_model([3, 2, 3, 3], 3, torch.float64, 5)
    V, y = [0, 1, 2], 3
    f, g, cond = _brute_force(w, A, tuple(V), y)
    const = model.mutual_information(V + [y]).value - model.mutual_information([y]).value
    assert abs(f - (g - const)) < 1e-12
    assert g - f == pytest.approx(cond, abs=1e-12) and cond > 1e-3


def test_a_joint_that_is_not_a_cpd_of_y_can_break_the_upper_bound():
    # the claim needs Y independent of X_S given Z: with Y a copy of X_0 and Z independent
    # of both, g(S) = I(X_0; Z) = 0 while f = I(X_0; Y) = log 2, so the enumeration used above
    # does detect a violated bound (the test above could fail)
    p = np.zeros((2, 2, 2))  # (x0, y, z)
    p[0, 0, :] = p[1, 1, :] = 0.25
    f = _entropy(p.sum((1, 2))) + _entropy(p.sum((0, 2))) - _entropy(p.sum(2))
    g = _entropy(p.sum((1, 2))) + _entropy(p.sum((0, 1))) - _entropy(p.sum(1))
    assert f == pytest.approx(np.log(2)) and g == pytest.approx(0.0, abs=1e-15)
    assert f > g
