"""Global configuration (tensorprob._config): memory budget and its validation."""
import numpy as np
import pytest
import torch

import tensorprob as tp


def test_memory_budget_chunks_rows_without_changing_results():
    s = tp.datasets.make_latent_class(3000, [3, 4, 5, 2] * 3, 4, random_state=0)
    a = tp.fit_cpd(s.X, rank=4, random_state=1, n_iter_max=6, tol=0)
    with tp.config_context(memory_budget=2**16):
        b = tp.fit_cpd(s.X, rank=4, random_state=1, n_iter_max=6, tol=0)
    np.testing.assert_allclose(a.loglik_history_, b.loglik_history_, atol=1e-10)
    with pytest.raises(ValueError, match="memory_budget"):
        tp.set_config(memory_budget=10)
    assert tp.get_config()["memory_budget"] == 512 * 2**20


# ---------------------------------------------------------------- issue 12, item 10: configuration and threads
def _in_thread(fn):
    import threading

    out = {}
    t = threading.Thread(target=lambda: out.setdefault("v", fn()))
    t.start()
    t.join()
    return out["v"]


def test_set_config_reaches_other_threads():
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        pool.submit(tp.get_config).result()  # the worker thread exists before the change
        old = tp.get_config()["max_categories"]
        try:
            # outside any config_context (the test lanes run inside one): the process-wide values
            import contextvars

            ctx = contextvars.Context()  # an empty context: no lane override
            ctx.run(tp.set_config, max_categories=17)
            assert pool.submit(lambda: tp.get_config()["max_categories"]).result() == 17
            assert _in_thread(lambda: tp.get_config()["max_categories"]) == 17
        finally:
            contextvars.Context().run(tp.set_config, max_categories=old)


def test_config_context_is_local_and_copy_context_carries_it():
    import contextvars

    with tp.config_context(memory_budget=2**20):
        assert _in_thread(lambda: tp.get_config()["memory_budget"]) == 512 * 2**20  # not leaked
        ctx = contextvars.copy_context()
        assert _in_thread(lambda: ctx.run(lambda: tp.get_config()["memory_budget"])) == 2**20
        tp.set_config(max_categories=9)  # inside a block: undone when the block ends
        assert tp.get_config()["max_categories"] == 9
    assert tp.get_config()["memory_budget"] != 2**20 and tp.get_config()["max_categories"] == 64
    # a block in another thread never changes this thread's values
    _in_thread(lambda: tp.config_context(max_categories=5).__enter__())
    assert tp.get_config()["max_categories"] == 64


def test_error_hints_name_existing_options():
    """Every option an error message suggests exists on the object it names."""
    import inspect

    from tensorprob.information._cpd import _too_many

    msg = str(_too_many(10**9, 10, "x"))
    assert "method='mc'" in msg and "estimator=" in msg and "memory_budget" in msg
    assert "method" in inspect.signature(tp.CPDModel.entropy).parameters
    assert "method" in inspect.signature(tp.CPDModel.mutual_information).parameters
    assert "estimator" in inspect.signature(tp.GSMCPD).parameters
    assert "memory_budget" in inspect.signature(tp.set_config).parameters
    assert "discretizer" in inspect.signature(tp.JMI).parameters
    assert "distribution" in inspect.signature(tp.PDA).parameters
    assert {"n_iter_max", "tol"} <= set(inspect.signature(tp.fit_cpd).parameters)
    assert "ranks" in inspect.signature(tp.fit_cpds).parameters


def test_selectors_fit_at_the_configured_cpu_threads_and_restore_torch():
    # a two-core machine with one busy core slows two torch threads 3.7x, one thread 1.3x
    # (README): selectors fit on one thread by default and give torch its setting back
    import torch

    from tensorprob.counting import SelectionData

    seen = []
    relevance = SelectionData.relevance

    def spy(self):
        seen.append(torch.get_num_threads())
        return relevance.fget(self)

    X = np.random.default_rng(0).integers(0, 3, (200, 6))
    y = (X[:, 0] + X[:, 1]) % 3
    prev = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert tp.get_config()["cpu_threads"] == 1
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(SelectionData, "relevance", property(spy))
            ref = tp.JMI(k=3, device="cpu").fit(X, y)
            assert seen[-1] == 1 and torch.get_num_threads() == 2
            with tp.config_context(cpu_threads=None):  # torch's own setting
                got = tp.JMI(k=3, device="cpu").fit(X, y)
            assert seen[-1] == 2
            with tp.config_context(cpu_threads=2):
                tp.JMI(k=3, device="cpu").fit(X, y)
            assert seen[-1] == 2
            np.testing.assert_array_equal(ref.selected_, got.selected_)
            with pytest.raises(ValueError, match="single class"):  # restored on errors too
                tp.JMI(k=3, device="cpu").fit(X, np.zeros(200))
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(prev)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="cpu_threads"):
            tp.set_config(cpu_threads=bad)
    assert tp.get_config()["cpu_threads"] == 1


def _fake_cuda(monkeypatch, total):
    class Props:
        total_memory = total

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: Props())


def test_auto_budget_gives_a_cuda_device_its_share(monkeypatch):
    """Under memory_budget="auto" a CUDA block gets 1/16 of the device (at least the CPU's 512 MiB)."""
    from tensorprob._config import DEVICE_SHARE, auto_budget, device_budget

    cpu_default = 512 * 2**20
    _fake_cuda(monkeypatch, 140 * 2**30)
    want = int(140 * 2**30 * DEVICE_SHARE)
    assert want == 140 * 2**30 // 16 and auto_budget("cuda") == want and auto_budget("cpu") == cpu_default
    with device_budget(torch.device("cpu")):
        assert tp.get_config()["memory_budget"] == cpu_default
    with device_budget(torch.device("cuda:0")):
        assert tp.get_config()["memory_budget"] == want
        with device_budget(torch.device("cuda")):  # nested: the same value
            assert tp.get_config()["memory_budget"] == want
    assert tp.get_config()["memory_budget"] == cpu_default  # restored
    _fake_cuda(monkeypatch, 4 * 2**30)  # a small card: never below the CPU's default
    assert auto_budget("cuda") == cpu_default
    _fake_cuda(monkeypatch, 140 * 2**30)
    with tp.config_context(memory_budget=2**20):  # a budget the user set holds on every device
        with device_budget(torch.device("cuda")):
            assert tp.get_config()["memory_budget"] == 2**20
        with tp.config_context(memory_budget="auto"), device_budget(torch.device("cuda")):
            assert tp.get_config()["memory_budget"] == want
    assert "_memory_budget_auto" not in tp.get_config()  # the flag is private
    for bad in ("big", True, 10):
        with pytest.raises(ValueError, match="memory_budget"):
            tp.set_config(memory_budget=bad)


def test_fits_run_under_their_devices_budget(monkeypatch):
    """The estimators' fit and the CPD fits enter device_budget with their resolved device."""
    import tensorprob._config as cfg

    seen = []
    real = cfg.device_budget

    def spy(device, distributed=False):
        seen.append((torch.device(device).type, distributed))
        return real(device, distributed)

    for mod in ("tensorprob.selection._base", "tensorprob.cpd._fit", "tensorprob.cpd._rank"):
        monkeypatch.setattr(f"{mod}.device_budget", spy)
    X = np.random.default_rng(0).integers(0, 3, (60, 4))
    y = X[:, 0] % 2
    tp.JMI(k=2, device="cpu").fit(X, y)
    tp.fit_cpd(X, rank=2, device="cpu", n_iter_max=2, random_state=0)
    tp.select_rank(X, y, ranks=[1, 2], cv=2, device="cpu", n_iter_max=2, random_state=0)
    assert seen == [("cpu", False)] * 3


def _rank_budgets(rank, world):
    """Rank r sets its own budget; inside device_budget(distributed) every rank sees the smallest."""
    from tensorprob._config import device_budget

    X = np.random.default_rng(0).integers(0, 3, (400, 12))
    y = (X[:, 0] + X[:, 1]) % 3
    mine = slice(rank * 200, (rank + 1) * 200)
    with tp.config_context(memory_budget=2**16 if rank == 0 else 2**30):
        with device_budget(torch.device("cpu"), distributed=True):
            seen = tp.get_config()["memory_budget"]
        # a data-parallel fit whose ranks were given different budgets: the same chunks everywhere
        sel = tp.JMI(k=4, device="cpu", distributed=True).fit(X[mine], y[mine])
    return seen, sel.selected_.tolist()


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_distributed_fits_agree_on_the_smallest_budget():
    from _dist_helpers import run_ranks

    out = run_ranks(_rank_budgets, 2)
    assert all(status == "ok" for status, _ in out), out
    X = np.random.default_rng(0).integers(0, 3, (400, 12))
    ref = tp.JMI(k=4, device="cpu").fit(X, (X[:, 0] + X[:, 1]) % 3).selected_.tolist()
    assert [v for _, v in out] == [(2**16, ref)] * 2
