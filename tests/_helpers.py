import numpy as np
import pytest
import torch

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def dense_pmf(weights, factors):
    """Full probability tensor of a CPD via tensorly's cp_to_tensor (numpy backend)."""
    import tensorly as tl
    from tensorly.cp_tensor import cp_to_tensor

    with tl.backend_context("numpy"):
        return cp_to_tensor((np.asarray(weights, dtype=np.float64), [np.asarray(A, dtype=np.float64) for A in factors]))


def entropy_of(p):
    p = np.asarray(p, dtype=np.float64).ravel()
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())
