"""Global configuration (tensorprob._config): memory budget and its validation."""
import numpy as np
import pytest

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
