"""CUDA-only checks: host-device synchronizations per step, and the memory budget on the GPU.

Every other test runs on CUDA through the device lanes of ``conftest.py``; the checks here
need CUDA's own instruments (``torch.cuda.set_sync_debug_mode``, ``max_memory_allocated``).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tensorprob as tp
from tensorprob.selection import get_selector

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


@pytest.fixture(autouse=True)
def _cuda_lanes_only(device):
    if device != "cuda":
        pytest.skip("CUDA lanes only")


def syncs(fn) -> int:
    """Device-to-host synchronizations while ``fn()`` runs."""
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum(1 for w in rec if "synchroniz" in str(w.message).lower())


def data(M=2000, N=40, seed=0):
    s = tp.datasets.make_latent_class(M, [4] * N + [3], 3, random_state=seed)
    X = np.asarray(s.X)
    return X[:, :N], X[:, N]


GREEDY = ("mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr")


@pytest.mark.parametrize("method", GREEDY + ("pda", "vmi"))
def test_greedy_selection_syncs_at_most_once_per_step(method):
    """Each extra greedy step costs at most one device-to-host transfer (the pick).

    Both runs are long enough for the same counting plan (a short run may count its few steps one
    way and a longer one build the tables of all pairs once, a cost per run, not per step).
    """
    X, y = data()
    kw = {"q": "pairwise"} if method == "vmi" else {}
    tp.select_features(X, y, 12, method=method, **kw)  # warm caches and kernels
    few = syncs(lambda: tp.select_features(X, y, 12, method=method, **kw))
    many = syncs(lambda: tp.select_features(X, y, 22, method=method, **kw))
    if method not in ("pda", "vmi"):
        plans = [{(kind, name) for kind, names in get_selector(method)(k=k).fit(X, y).counting_plan_.items()
                  for name in names} for k in (12, 22)]
        assert plans[0] == plans[1], f"{method}: the runs counted differently: {plans}"
    # VMI restarts a step when its bound refuses a pick: each attempt is one more pick, one more sync
    restarts = (tp.VMI(k=22, **kw).fit(X, y).n_restarts_ - tp.VMI(k=12, **kw).fit(X, y).n_restarts_
                if method == "vmi" else 0)
    assert many - few <= 10 + restarts, f"{method}: {many - few} synchronizations for 10 extra steps"


def test_em_syncs_at_most_once_per_iteration():
    X, y = data()
    codes = np.column_stack([X, y])
    tp.fit_cpd(codes, rank=4, n_iter_max=2, tol=0.0, random_state=0)
    few = syncs(lambda: tp.fit_cpd(codes, rank=4, n_iter_max=2, tol=0.0, random_state=0))
    many = syncs(lambda: tp.fit_cpd(codes, rank=4, n_iter_max=22, tol=0.0, random_state=0))
    assert many - few <= 20, f"{many - few} synchronizations for 20 extra EM iterations"


@pytest.mark.parametrize("method", ["jmi", "vmi", "pda"])
def test_memory_budget_bounds_peak_device_memory(method, dtype):
    """Peak allocation beyond the inputs stays within a small multiple of the memory budget."""
    X, y = data(M=60000, N=200)
    budget = 8 * 2**20
    tp.select_features(X[:100], y[:100], 2, method=method)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    with tp.config_context(memory_budget=budget):
        tp.select_features(X, y, 3, method=method)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    inputs = X.size * 8 + y.size * 8  # the codes as int64 on the device
    # per-sample state (VMI / PDA keep (samples x candidates) log-probabilities) is data, not a temporary
    state = 4 * X.size * torch.finfo(dtype).bits // 8
    assert extra <= inputs + state + 6 * budget, f"{method}: peak {extra / 2**20:.1f} MiB"


def test_auto_budget_inside_a_cuda_fit():
    """Under the default memory_budget="auto" a CUDA fit works to 1/16 of the device's memory."""
    from tensorprob._config import auto_budget

    want = auto_budget(torch.device("cuda"))
    assert want >= 512 * 2**20
    seen = []
    X, y = data(M=500, N=6)
    tp.fit_cpd(np.column_stack([X, y]), rank=2, n_iter_max=2, random_state=0, device="cuda",
               callback=lambda *a, **k: seen.append(tp.get_config()["memory_budget"]))
    assert seen and set(seen) == {want}
    assert tp.get_config()["memory_budget"] == 512 * 2**20  # outside the fit: the CPU's
    with tp.config_context(memory_budget=2**24):
        seen.clear()
        tp.fit_cpd(np.column_stack([X, y]), rank=2, n_iter_max=2, random_state=0, device="cuda",
                   callback=lambda *a, **k: seen.append(tp.get_config()["memory_budget"]))
        assert set(seen) == {2**24}
