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
