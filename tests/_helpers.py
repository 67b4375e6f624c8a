import numpy as np
import pytest
import torch

def tols(dtype, rtol=1e-7, atol=1e-10):
    """Tolerances for results computed in ``dtype``: ``dict(rtol=..., atol=...)``.

    ``rtol`` and ``atol`` are what a float64 result is held to (each call site keeps its own);
    a coarser dtype gets ``2**8`` of its machine epsilon instead (float32: 3.1e-5), i.e. a few
    hundred roundings of accumulated error. For float64, ``2**8 * eps`` (5.7e-14) is below
    every nonzero floor used, so the float64 lane checks what it checked before (sites with no
    float64 rtol read only ``["atol"]``; monotone checks use ``tols(dtype, rtol=0)["rtol"]`` as
    a slack relative to |loglik|).
    """
    eps = torch.finfo(dtype).eps
    return dict(rtol=max(rtol, 2**8 * eps), atol=max(atol, 2**8 * eps))


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
