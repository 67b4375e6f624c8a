"""The incidence matrix stored relative to each variable's most frequent value (``Incidence(baseline=True)``).

References: the plain one-hot incidence (dense products), and whole EM fits through the plain
incidence. The relative form must give the same products, keep exact zeros exact, keep every
column independent of its neighbours (batched models equal separate ones bit for bit), and
treat log-0 floors as the plain E-step does.
"""
import numpy as np
import pytest
import torch

import tensorprob as tp
from tensorprob.counting import Incidence
from tensorprob.cpd import _em


def _codes(seed, M=300, cards=(3, 1, 4, 2, 5, 3), missing=0.15, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    cards = torch.tensor(cards)
    # skewed values: the most frequent one holds about half of each column
    p = [torch.softmax(torch.linspace(2.0, 0.0, int(c)), 0) for c in cards]
    codes = torch.stack([torch.multinomial(pc, M, replacement=True, generator=g) for pc in p], 1)
    codes[torch.rand(M, len(cards), generator=g) < missing] = -1
    return codes.to(device), cards.to(device)


def _pair(codes, cards, dtype, **kw):
    plain = Incidence(codes, cards, dtype, dtype_t=torch.float64, **kw)
    rel = Incidence(codes, cards, dtype, dtype_t=torch.float64, baseline=True, **kw)
    return plain, rel


def test_relative_products_equal_the_plain_ones(device, dtype):
    for seed in range(4):
        codes, cards = _codes(seed, device=device)
        plain, rel = _pair(codes, cards, dtype)
        (_, _, S, ST), = list(plain.chunks())
        (_, _, S1, ST1), = list(rel.chunks())
        assert S1._nnz() < 0.75 * S._nnz()  # the baseline entries are left out
        D = int(cards.sum())
        g = torch.Generator().manual_seed(seed)
        X = torch.randn(D, 5, generator=g, dtype=torch.float64).to(device, dtype)
        atol = 64 * torch.finfo(dtype).eps * 10
        torch.testing.assert_close(rel.matmul(S1, X), S.to_dense() @ X, rtol=0, atol=atol)
        onehot = (torch.rand(D, 4, generator=g) < 0.3).to(device, dtype)  # integer sums: exact
        assert torch.equal(rel.matmul(S1, onehot), S.to_dense() @ onehot)
        Y = torch.rand(len(codes), 6, generator=g, dtype=torch.float64).to(device)
        Y[:, 0] = torch.where(codes[:, 0] == rel.base[0], 0.0, Y[:, 0])  # nothing at variable 0's baseline
        Y[:, 1] = torch.where(codes[:, 2] == rel.base[2], 1e-300, Y[:, 1])  # almost nothing at variable 2's
        Y[:, 1] = torch.where(codes[:, 2] == rel.base[2], Y[:, 1], 1.0)
        want = ST.to_dense() @ Y
        got = rel.matmul_t(ST1, Y, 0, len(codes))
        torch.testing.assert_close(got, want, rtol=1e-12, atol=0)
        b0, b2 = int(rel.offsets[0] + rel.base[0]), int(rel.offsets[2] + rel.base[2])
        assert got[b0, 0] == 0  # an exact zero stays exact
        assert float(got[b2, 1]) == pytest.approx(float(want[b2, 1]), rel=1e-12) and float(got[b2, 1]) > 0


def test_floors_act_as_in_the_plain_product(device, dtype):
    codes, cards = _codes(7, device=device)
    plain, rel = _pair(codes, cards, dtype)
    (_, _, S, _), = list(plain.chunks())
    (_, _, S1, _), = list(rel.chunks())
    floor = float(torch.tensor(_em._log_floor(dtype, len(cards)), dtype=dtype))
    g = torch.Generator().manual_seed(1)
    X = torch.log_softmax(torch.randn(int(cards.sum()), 4, generator=g, dtype=torch.float64), 0).to(device, dtype)
    X[torch.rand(X.shape, generator=g).to(device) < 0.2] = floor
    X[rel.offsets + rel.base, 0] = floor  # baselines at the floor too: no value is added to a floor and taken back
    want, got = S.to_dense() @ X, rel.matmul(S1, X, floor=floor)
    hit = want < floor / 2  # rows that meet a floor: the floors dominate, the same count of them
    assert torch.equal(hit, got < floor / 2)
    torch.testing.assert_close(got[hit], want[hit], rtol=64 * torch.finfo(dtype).eps, atol=0)
    torch.testing.assert_close(got[~hit], want[~hit], rtol=0, atol=640 * torch.finfo(dtype).eps)


def test_each_column_is_independent_of_its_neighbours(device, dtype):
    codes, cards = _codes(3, M=500, device=device)
    _, rel = _pair(codes, cards, dtype)
    (_, _, S1, ST1), = list(rel.chunks())
    g = torch.Generator().manual_seed(2)
    X = torch.randn(int(cards.sum()), 12, generator=g, dtype=torch.float64).to(device, dtype)
    Y = torch.rand(len(codes), 12, generator=g, dtype=torch.float64).to(device)
    floor = float(torch.finfo(dtype).min) / 8
    X[0, 3] = floor
    for f in (None, floor):
        assert torch.equal(rel.matmul(S1, X, floor=f)[:, 2:6], rel.matmul(S1, X[:, 2:6].contiguous(), floor=f))
    wide, narrow = rel.matmul_t(ST1, Y, 0, 500)[:, 2:6], rel.matmul_t(ST1, Y[:, 2:6].contiguous(), 0, 500)
    if Y.is_cuda:  # cuSPARSE picks its summation order by the number of columns: equal to rounding only
        torch.testing.assert_close(wide, narrow, rtol=64 * torch.finfo(Y.dtype).eps, atol=0)
    else:
        assert torch.equal(wide, narrow)


@pytest.mark.parametrize("budget", [None, 1 << 16])
def test_fits_through_the_relative_incidence_equal_plain_fits(monkeypatch, device, dtype, budget):
    s = tp.datasets.make_latent_class(3000, [3, 4, 2, 5, 3, 3], 3, random_state=4)
    X = np.asarray(s.X).copy()
    X[np.random.default_rng(0).random(X.shape) < 0.1] = -1
    w = np.random.default_rng(1).integers(0, 3, len(X)).astype(float)
    kw = dict(ranks=[2, 3], sample_weight=w, random_state=0, n_iter_max=30, tol=0.0, device=device, dtype=dtype)
    fits = {}
    for name, threshold in (("plain", 1 << 62), ("relative", 0)):
        monkeypatch.setattr(_em, "_BASELINE_MIN_ENTRIES", threshold)
        with tp.config_context(**({} if budget is None else {"memory_budget": budget})):
            fits[name] = tp.fit_cpds(X, **kw)
    eps = torch.finfo(dtype).eps
    for a, b in zip(fits["plain"], fits["relative"]):
        n = min(len(a.loglik_history_), len(b.loglik_history_))
        np.testing.assert_allclose(b.loglik_history_[:n], a.loglik_history_[:n], rtol=256 * eps, atol=0)
        np.testing.assert_allclose(b.weights.cpu().numpy(), a.weights.cpu().numpy(), rtol=0, atol=1e4 * eps)
