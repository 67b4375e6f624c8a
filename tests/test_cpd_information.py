"""Incremental CPD information estimators (the GSM-CPD objective), against enumeration."""
import itertools
import math

import numpy as np
import pytest
import torch

import tensorprob as tp
from tensorprob.information._cpd import CPDInformation


def random_model(seed, cards, rank, conc=0.6):
    s = tp.datasets.make_latent_class(10, list(cards), rank, concentration=conc, random_state=seed)
    return tp.CPDModel(torch.tensor(s.weights), [torch.tensor(A) for A in s.factors])


def g_exact(model, S, target=None):
    if not S:
        return 0.0
    return model.mutual_information(list(S), target="latent" if target is None else target).value


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_latent_objective_is_monotone_and_submodular(seed):
    model = random_model(seed, (3, 2, 4, 3, 2, 3), 4)
    V = range(model.n_variables)
    g = {S: g_exact(model, S) for r in range(len(V) + 1) for S in itertools.combinations(V, r)}
    for A in g:
        for x in V:
            if x in A:
                continue
            gain_A = g[tuple(sorted(A + (x,)))] - g[A]
            assert gain_A >= -1e-12  # monotone
            for y in V:  # submodular: the gain of x shrinks when A grows by y
                if y in A or y == x:
                    continue
                B = tuple(sorted(A + (y,)))
                assert g[tuple(sorted(B + (x,)))] - g[B] <= gain_A + 1e-12


def test_incremental_state_equals_direct_values():
    model = random_model(3, (3, 4, 2, 3, 2), 3)
    lw, lf = (t[0] for t in model.stack([model]))
    samples = model.sample(4000, random_state=0)
    for target in (None, 4):
        for est in ("exact", "mc", "rao_blackwell"):
            info = CPDInformation(lw, lf, target=target, estimator=est, samples=samples)
            info.add(1)
            info.add(3)
            vals, se = info.evaluate([0, 2])
            for c, v, e in zip([0, 2], vals.tolist(), se.tolist()):
                S = [1, 3, c]
                if est == "exact":
                    assert abs(v - g_exact(model, S, target)) < 1e-10
                else:
                    t = "latent" if target is None else target
                    direct = model.mutual_information(S, target=t, method="mc", samples=samples,
                                                      estimator="paper" if est == "mc" and target is None
                                                      else "rao_blackwell")
                    if not (est == "mc" and target is not None):
                        assert abs(v - direct.value) < 1e-9 and abs(e - direct.stderr) < 1e-9
                    assert abs(v - g_exact(model, S, target)) < 4 * e


def test_candidate_blocks_change_nothing(monkeypatch):
    from tensorprob.information import _cpd

    model = random_model(4, (3, 4, 2, 3, 2, 4, 3), 3)
    lw, lf = (t[0] for t in model.stack([model]))
    samples = model.sample(3000, random_state=1)
    for target in (None, 6):
        for est in ("mc", "rao_blackwell"):
            info = CPDInformation(lw, lf, target=target, estimator=est, samples=samples)
            info.add(2)
            whole = info.evaluate([0, 1, 3, 4, 5])
            with monkeypatch.context() as mp:  # one candidate per (T, block, F) temporary
                mp.setattr(_cpd, "block_budget", lambda device: 1000)
                blocked = info.evaluate([0, 1, 3, 4, 5])
            for a, b in zip(whole, blocked):
                torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_greedy_reaches_one_minus_one_over_e_of_optimum():
    for seed in range(4):
        model = random_model(10 + seed, (3, 2, 4, 3, 2, 3, 4), 4, conc=0.4)
        lw, lf = (t[0] for t in model.stack([model]))
        k = 3
        best = max(g_exact(model, S) for S in itertools.combinations(range(model.n_variables), k))
        info = CPDInformation(lw, lf, estimator="exact")
        rest = list(range(model.n_variables))
        for _ in range(k):
            vals, _ = info.evaluate(rest)
            j = rest[int(torch.argmax(vals))]
            info.add(j)
            rest.remove(j)
        assert info.value >= (1 - 1 / math.e) * best - 1e-12
        assert abs(info.value - g_exact(model, info.selected)) < 1e-10


def test_monte_carlo_objective_is_unbiased_within_its_standard_error():
    model = random_model(4, (4, 3, 5, 3, 4, 3), 4)
    lw, lf = (t[0] for t in model.stack([model]))
    S = [0, 2, 5]
    exact = g_exact(model, S)
    vals, ses = [], []
    for seed in range(20):
        info = CPDInformation(lw, lf, estimator="mc", samples=model.sample(1000, random_state=seed))
        for j in S[:-1]:
            info.add(j)
        v, se = info.evaluate([S[-1]])
        vals.append(float(v[0]))
        ses.append(float(se[0]))
    # the mean of 20 independent estimates is within 4 of its standard errors of the exact value
    assert abs(np.mean(vals) - exact) < 4 * np.mean(ses) / math.sqrt(20)
    # and the reported standard error matches the spread across repeats
    assert 0.5 < np.std(vals) / np.mean(ses) < 2.0


def test_exact_enumeration_limit():
    model = random_model(5, (5,) * 8, 3)
    lw, lf = (t[0] for t in model.stack([model]))
    info = CPDInformation(lw, lf, estimator="exact", max_states=100)
    info.add(0)
    info.add(1)
    with pytest.raises(ValueError, match="exact enumeration"):
        info.evaluate([2, 3])
    with pytest.raises(ValueError, match="estimator must be"):
        CPDInformation(lw, lf, estimator="magic")
    with pytest.raises(ValueError, match="needs model samples"):
        CPDInformation(lw, lf, estimator="mc")


def test_zero_probabilities_do_not_produce_nan():
    w = torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64)  # a dead component
    A = [torch.tensor([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]], dtype=torch.float64),
         torch.tensor([[0.5, 0.0, 0.2], [0.5, 0.25, 0.3], [0.0, 0.75, 0.5]], dtype=torch.float64)]
    model = tp.CPDModel(w, A)
    lw, lf = (t[0] for t in model.stack([model]))
    for est in ("rao_blackwell", "mc", "exact"):
        info = CPDInformation(lw, lf, estimator=est, samples=model.sample(3000, random_state=0))
        vals, se = info.evaluate([0, 1])
        assert torch.isfinite(vals).all() and torch.isfinite(se).all()
        for c, v in zip([0, 1], vals.tolist()):
            exact = model.mutual_information([c]).value
            assert abs(v - exact) < 1e-10 if est == "exact" else abs(v - exact) < 0.05


def test_stacked_draws_land_on_values_of_positive_mass(monkeypatch, device, dtype):
    """Inverse-CDF draws of the stacked (GSM remodel) estimator at the extremes of ``torch.rand``:
    u = 0 (1 in 2**24 float32 draws) must not pick a leading value of mass 0 (log 0 in every
    component: an infinite or NaN term), nor u near 1 a padding value beyond the alphabet."""
    from tensorprob.information._cpd import stacked_information

    G, V, Imax, F = 2, 3, 4, 3
    gen = torch.Generator().manual_seed(0)
    log_f = torch.full((G, V, Imax, F), -math.inf, dtype=torch.float64)
    for v, card in enumerate([3, 4, 2]):
        A = torch.rand(G, card, F, generator=gen, dtype=torch.float64) + 0.1
        if v < 2:
            A[:, 0, :] = 0.0  # value 0 never occurs
        log_f[:, v, :card] = torch.log(A / A.sum(1, keepdim=True))
    log_w = torch.full((G, F), -math.log(F), dtype=torch.float64)
    log_w, log_f = log_w.to(device, dtype), log_f.to(device, dtype)
    real_rand = torch.rand
    for u in (0.0, 1.0 - torch.finfo(dtype).eps / 2):
        monkeypatch.setattr(torch, "rand", lambda *a, u=u, **k: torch.full(a, u, dtype=k["dtype"], device=k["device"]))
        for est in ("mc", "rao_blackwell"):
            for target, lf in ((None, log_f[:, :2]), (2, log_f)):
                vals, se = stacked_information(log_w, lf, target=target, estimator=est, n_samples=50,
                                               gen=torch.Generator(device=device).manual_seed(0))
                assert torch.isfinite(vals).all() and torch.isfinite(se).all(), (u, est, target)
        monkeypatch.setattr(torch, "rand", real_rand)


# ---------------------------------------------------------------- issue 12, item 11: honest estimators
def _constant_first_model(dtype):
    w = torch.tensor([0.3, 0.3, 0.4], dtype=dtype)
    A = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]], dtype=dtype)  # X_0 is always 0
    B = torch.tensor([[0.2, 0.5, 0.9], [0.8, 0.5, 0.1]], dtype=dtype)
    return tp.CPDModel(w, [A, B])


def test_entropy_of_a_constant_is_exactly_zero(dtype):
    m = _constant_first_model(dtype)
    for est in (m.entropy([0]), m.entropy([0], method="mc", n_samples=200, random_state=0),
                m.mutual_information([0]),
                m.mutual_information([0], method="mc", estimator="paper", n_samples=200, random_state=0)):
        assert est.value == 0.0 and math.copysign(1.0, est.value) == 1.0 and est.stderr == 0.0, est
    # the plug-in path: a constant column, in the lane's dtype
    from tensorprob.counting import entropy_of_counts, joint_table, table_information

    T = joint_table(torch.zeros(7, 1, dtype=torch.long), 3, dtype=dtype)
    h = entropy_of_counts(T, (1,))
    assert h.tolist() == [0.0] and math.copysign(1.0, float(h[0])) == 1.0
    assert table_information(T).h_x.tolist() == [0.0]


def test_plugin_mc_information_is_reported_unclipped_with_its_stderr():
    # X independent of Z: I(X; Z) = 0, and the paper's plug-in H^(X) - H(X | Z) falls below 0
    # in about half of the seeds; it is reported as estimated, with its standard error
    w = torch.tensor([0.5, 0.5], dtype=torch.float64)
    A = torch.tensor([[0.3, 0.3], [0.7, 0.7]], dtype=torch.float64)
    m = tp.CPDModel(w, [A, A])
    vals = [m.mutual_information([0, 1], method="mc", estimator="paper", n_samples=400, random_state=s)
            for s in range(20)]
    assert any(v.value < 0 for v in vals)
    for v in vals:
        assert v.stderr > 0 and abs(v.value) < 5 * v.stderr
