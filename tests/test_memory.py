"""``memory_budget`` bounds the peak extra memory of ``fit_cpd`` (issue 12 item 9)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorprob as tp

# child: build data, warm torch up, reset the RSS high-water mark, and report its rise over a batched fit
_CHILD = """
import sys
import numpy as np, torch, tensorprob

def kib(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

X = np.random.default_rng(0).integers(0, 4, size=(20000, 10))
torch.zeros(1).exp()
with open("/proc/self/clear_refs", "w") as f:  # reset the high-water mark (VmHWM) to the current RSS
    f.write("5")
r0 = kib("VmRSS")
with tensorprob.config_context(memory_budget=int(sys.argv[1])):
    ms = tensorprob.fit_cpds(X, ranks=[20], n_restarts=16, device="cpu", dtype="float64", n_iter_max=2,
                             random_state=0)
print((kib("VmHWM") - r0) / 1024, repr(float(ms[0].loglik_history_[-1])))
"""


def _peak_mib(budget: int) -> tuple[float, float]:
    env_run = subprocess.run([sys.executable, "-W", "ignore", "-c", _CHILD, str(budget)], capture_output=True,
                             text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    peak, ll = env_run.stdout.split()
    return float(peak), float(ll)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc (VmHWM reset)")
def test_fit_cpd_peak_memory_follows_the_budget():
    # 16 models of rank 20 on 20000 distinct rows: a (rows, models, components) float64 tensor
    # is 49 MiB, and the E-step / initialization make several of them when the budget allows
    small, ll_small = _peak_mib(2**20)
    large, ll_large = _peak_mib(512 * 2**20)
    assert ll_small == ll_large  # chunking changes no number
    assert small < 100, small  # measured ~57 MiB (the incidence matrix, parameters, chunks)
    assert small < 0.5 * large, (small, large)  # measured ~295 MiB at 512 MiB


@pytest.mark.parametrize("init", ["kmeans++", "random"])
def test_tiny_budget_gives_the_same_fit(init):
    X = np.random.default_rng(1).integers(0, 4, (3000, 8))
    kw = dict(ranks=[3, 2], n_restarts=3, device="cpu", dtype="float64", n_iter_max=15, init=init, random_state=0)
    ref = tp.fit_cpds(X, **kw)
    with tp.config_context(memory_budget=2**16):  # one row chunk of a few dozen rows
        tiny = tp.fit_cpds(X, **kw)
    for a, b in zip(ref, tiny):
        np.testing.assert_allclose(a.loglik_history_, b.loglik_history_, rtol=1e-12, atol=0)
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-10, atol=1e-14)


def test_absurd_rank_is_refused_before_any_work():
    # refused from the sizes alone (milliseconds), not after minutes of allocation
    X = np.random.default_rng(0).integers(0, 5, (400, 50))
    with pytest.warns(UserWarning, match="distinct rows"):
        with pytest.raises(ValueError, match=r"rank 1000000 .* on 400 distinct rows.*memory_budget"):
            tp.fit_cpd(X, rank=10**6, device="cpu")
