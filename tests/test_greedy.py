"""The one tie rule (lowest_argmax) and the greedy driver."""
import numpy as np
import pytest
import torch

from tensorprob.selection._greedy import lowest_argmax, tie_tolerance


@pytest.mark.parametrize("dt", [torch.float32, torch.float64])
def test_lowest_argmax_ties_go_to_the_lowest_index(dt):
    all_ = torch.ones(5, dtype=torch.bool)
    assert lowest_argmax(torch.tensor([0.1, 0.7, 0.3, 0.7, 0.7], dtype=dt), all_) == 1
    # unavailable entries never win, even when they are larger
    mask = torch.tensor([True, False, True, True, True])
    assert lowest_argmax(torch.tensor([0.1, 0.9, 0.3, 0.7, 0.7], dtype=dt), mask) == 3
    # NaN never wins
    assert lowest_argmax(torch.tensor([float("nan"), 0.2, 0.1, 0.0, 0.2], dtype=dt), all_) == 1
    # a gap within the tolerance is a tie; a gap well above it is not
    tol = tie_tolerance(dt)
    v = 3.0
    near = torch.tensor([0.0, v, v * (1 + tol / 4), 0.0, 0.0], dtype=torch.float64).to(dt)
    assert lowest_argmax(near, all_) == 1
    far = torch.tensor([0.0, v, v * (1 + 100 * tol), 0.0, 0.0], dtype=torch.float64).to(dt)
    assert lowest_argmax(far, all_) == 2
    # all equal (e.g. all zero): the first available
    assert lowest_argmax(torch.zeros(5, dtype=dt), mask) == 0
    assert lowest_argmax(torch.full((5,), -float("inf"), dtype=dt).index_fill_(0, torch.tensor([4]), 1.0), all_) == 4


def test_tolerance_is_relative_to_the_dtype():
    assert tie_tolerance(torch.float64) == 1e-12
    assert tie_tolerance(torch.float32) == 256 * torch.finfo(torch.float32).eps


def test_cpu_pick_equals_the_device_rule(dtype):
    """The greedy step's pick on the CPU (NumPy) follows lowest_argmax_device exactly: ties, NaN, unavailable."""

    from tensorprob.selection._greedy import _pick, lowest_argmax_device, tie_tolerance

    rng = np.random.default_rng(0)
    tol = tie_tolerance(dtype)
    for trial in range(300):
        n = int(rng.integers(1, 12))
        s = torch.as_tensor(rng.choice([0.0, 1.0, -2.5, 3.0, 1e-3], n) * (1 + tol * rng.integers(-2, 3, n) / 2),
                            dtype=dtype)
        s[torch.as_tensor(rng.random(n) < 0.2)] = float("nan")
        a = torch.as_tensor(rng.random(n) < 0.7)
        a[int(rng.integers(0, n))] = True
        j, v = lowest_argmax_device(s, a)
        got = _pick(s, a)
        assert got[0] == int(j), trial
        assert got[1] == float(v) or (np.isnan(got[1]) and np.isnan(float(v)))
        assert got[2] is False  # no pending check given
        flagged = _pick(s, a, torch.tensor(bool(trial % 2), device=s.device))
        assert flagged[:1] == got[:1] and flagged[2] is bool(trial % 2)


def _stepped(s: torch.Tensor, available: torch.Tensor, k: int) -> list[int]:
    """The first k picks of the greedy driver's _pick on fixed scores, one step at a time."""
    from tensorprob.selection._greedy import _pick

    picks, avail = [], available.clone()
    for _ in range(k):
        j, _v, _ = _pick(s, avail)
        picks.append(j)
        avail[j] = False
    return picks


def test_static_order_equals_stepping_the_pick(dtype):
    """MIM's one-sort order (static_order) is the sequence of _pick steps: ties, NaN, -inf, unavailable."""
    from tensorprob.selection._greedy import static_order

    rng = np.random.default_rng(1)
    tol = tie_tolerance(dtype)
    for trial in range(300):
        n = int(rng.integers(1, 40))
        base = rng.choice([0.0, 1.0, -2.5, 3.0, 1e-3, -np.inf], n)
        s = torch.as_tensor(base * (1 + tol * rng.integers(-3, 4, n) / 2), dtype=dtype)
        s[torch.as_tensor(rng.random(n) < 0.15)] = float("nan")
        a = torch.as_tensor(rng.random(n) < 0.8)
        a[int(rng.integers(0, n))] = True
        k = int(rng.integers(1, int(a.sum()) + 1))
        got = static_order(s.numpy().astype(np.float64), a.numpy(), k, tol)
        assert got == _stepped(s, a, k), trial
    # distinct values (the sort is the order, no stepping), now and then two within the tie window
    # or a NaN / -inf: the steps decide
    for trial in range(300):
        n = int(rng.integers(1, 40))
        s = torch.as_tensor(rng.normal(size=n), dtype=dtype)
        if trial % 3 == 0 and n > 2:
            i, j = rng.choice(n, 2, replace=False)
            s[j] = s[i] * (1 + tol / 2 * (trial % 2))
        if trial % 7 == 0:
            s[int(rng.integers(0, n))] = float(rng.choice([np.nan, -np.inf]))
        a = torch.as_tensor(rng.random(n) < 0.9)
        a[int(rng.integers(0, n))] = True
        k = int(rng.integers(1, int(a.sum()) + 1))
        assert static_order(s.numpy().astype(np.float64), a.numpy(), k, tol) == _stepped(s, a, k), trial
    # many candidates and a few picks (only those near the top are sorted): clusters of values
    # within the tie window of one another around the k-th largest, NaN and -inf among them
    for trial in range(200):
        n = int(rng.integers(40, 400))
        k = int(rng.integers(1, n // 8))
        base = rng.choice(rng.normal(size=int(rng.integers(2, 12))), n)
        s = torch.as_tensor(base * (1 + tol * rng.integers(-3, 4, n) / 2), dtype=dtype)
        s[torch.as_tensor(rng.random(n) < 0.05)] = float(rng.choice([np.nan, -np.inf]))
        a = torch.as_tensor(rng.random(n) < 0.9)
        a[:k] = True
        assert static_order(s.numpy().astype(np.float64), a.numpy(), k, tol) == _stepped(s, a, k), trial


def test_mim_takes_the_static_order_with_held_columns(dtype):
    """MIM's sorted path picks as the stepping driver, including all-missing columns held to the end."""
    import tensorprob as tp
    from tensorprob.selection import _greedy

    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, (200, 12)).astype(float)
    X[:, 4] = np.nan  # unobserved: held back
    X[:, 7] = X[:, 2]  # an exact tie
    y = (X[:, 2] + rng.integers(0, 2, 200)) % 3
    got = tp.MIM(12, dtype=dtype, device="cpu").fit(X, y)
    orig = _greedy.Criterion.static
    try:
        _greedy.Criterion.static = lambda self: False
        from tensorprob.selection._classic import LinearCriterion
        lin = LinearCriterion.static
        LinearCriterion.static = lambda self: False
        want = tp.MIM(12, dtype=dtype, device="cpu").fit(X, y)
    finally:
        _greedy.Criterion.static = orig
        LinearCriterion.static = lin
    assert list(got.selected_) == list(want.selected_)
    assert list(got.selected_)[-1] == 4 and list(got.selected_).index(2) < list(got.selected_).index(7)
    np.testing.assert_array_equal(got.scores_, want.scores_)


def test_driver_repicks_from_exact_scores_when_the_pending_check_is_set():
    import torch

    from tensorprob.selection._greedy import Criterion, greedy_forward

    class Flaky(Criterion):
        """Fast scores favour feature 0 wrongly at step 1; the pending check says so."""

        def start(self, data):
            super().start(data)
            self.calls = []

        def first_scores(self):
            return self.scores()

        def scores(self):
            s = torch.arange(data.n_features, dtype=torch.float64, device=data.codes.device)
            if len(self.selected) == 1:
                s = s.clone()
                s[0] = 99.0
            return s

        def pending(self):
            return torch.tensor(len(self.selected) == 1, device=data.codes.device)

        def exact_scores(self, first):
            self.calls.append(len(self.selected))
            return torch.arange(data.n_features, dtype=torch.float64, device=data.codes.device)

    from tensorprob.counting import SelectionData

    rng = np.random.default_rng(0)
    data = SelectionData(torch.as_tensor(rng.integers(0, 3, (50, 5))), 3, torch.as_tensor(rng.integers(0, 2, 50)), 2)
    crit = Flaky()
    selected, scores = greedy_forward(crit, data, 3)
    assert selected == [4, 3, 2] and scores == [4.0, 3.0, 2.0]  # never the flagged 99
    assert crit.calls == [1]  # exact scores asked for once: at the flagged step only
