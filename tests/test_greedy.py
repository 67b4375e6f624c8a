"""The one tie rule (lowest_argmax) and the greedy driver."""
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
