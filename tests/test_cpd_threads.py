"""CPD fits run on ``get_config()["cpu_threads"]`` torch threads on the CPU, as the selectors (issue 42 item 6)."""
import numpy as np
import pytest
import torch

import tensorprob as tp
from tensorprob.counting import unique_rows
from tensorprob.cpd._fit import fit_batched
from tensorprob.datasets import make_latent_class


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _threads_seen(fit) -> set:
    seen = set()
    fit(lambda it, ll: seen.add(torch.get_num_threads()))
    return seen


@pytest.mark.parametrize("cpu_threads", [1, None])
def test_cpd_fits_run_on_the_configured_threads(two_threads, cpu_threads, device):
    if device != "cpu":
        pytest.skip("threads of the CPU")
    X = make_latent_class(300, [3, 2, 4], 2, random_state=0).X
    want = {1} if cpu_threads == 1 else {2}  # None: torch's own setting, here 2
    with tp.config_context(cpu_threads=cpu_threads):
        assert _threads_seen(lambda cb: tp.fit_cpd(X, rank=2, n_iter_max=3, tol=0, callback=cb)) == want
        assert _threads_seen(lambda cb: tp.fit_cpds(X, ranks=[1, 2], n_iter_max=3, tol=0, callback=cb)) == want
        # the EM reached directly (select_rank, GSM-CPD's refits)
        rows, W, _ = unique_rows(torch.as_tensor(X), torch.ones(len(X), 1, dtype=torch.float64))
        assert _threads_seen(lambda cb: fit_batched(rows, torch.tensor([3, 2, 4]), W, [2], n_restarts=1, n_iter_max=3,
                                                    tol=0.0, alpha=0.0, init="random", seed=0, dtype=torch.float64,
                                                    callback=cb)) == want
    assert torch.get_num_threads() == 2  # restored after the fit


def test_threads_are_restored_when_a_fit_fails(two_threads):
    with pytest.raises(ValueError, match="rank"):
        tp.fit_cpd(np.zeros((5, 2), dtype=int), rank=0, device="cpu")
    with pytest.raises(ValueError):
        tp.fit_cpd(np.zeros((5, 2), dtype=int), rank=2, device="cpu", tol=-1.0)

    def boom(it, ll):
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        tp.fit_cpd(make_latent_class(100, [2, 2], 2, random_state=0).X, rank=2, device="cpu", callback=boom)
    assert torch.get_num_threads() == 2
