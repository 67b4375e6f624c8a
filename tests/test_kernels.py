"""Triton kernels against their torch references in tensorprob.ops.

On a machine without CUDA the kernels run in Triton's interpreter (``TRITON_INTERPRET=1``,
set by ``conftest.py`` before triton is imported), on CPU tensors; with CUDA they run natively
in the cuda lanes. Random shapes include awkward ones (one row, one column, sizes off the
block grid, missing entries, float32 and float64).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorprob as tp
from tensorprob.counting import Incidence
from tensorprob.ops import incidence_matmul_reference, kernel_mode, use_triton

triton = pytest.importorskip("triton", reason="triton is not installed (the 'triton' extra)")
kernels = pytest.importorskip("tensorprob_kernels.incidence")


def _target_device(device: str) -> torch.device:
    if device == "cpu" and __import__("os").environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("Triton on CPU tensors needs TRITON_INTERPRET=1")
    return torch.device(device)


SHAPES = [(1, 1, 2, 1), (7, 3, 4, 5), (64, 10, 3, 64), (65, 9, 5, 65), (130, 17, 2, 3), (200, 4, 6, 130)]


def _gather_case(M, N, card, P, missing, seed, dev, dtype):
    """Random codes (a fraction ``missing`` left out), their incidence and log factors: (flat_t, log_A, CSR reference)."""
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, card, (M, N), generator=g)
    codes[torch.rand(M, N, generator=g) < missing] = -1
    inc = Incidence(codes.to(dev), torch.full((N,), card).to(dev), dtype)
    (start, stop, S, _), = inc.chunks()
    log_A = torch.log(torch.rand(N * card, P, generator=g, dtype=torch.float64)).to(dtype).to(dev)
    return inc.flat_t(start, stop), log_A, incidence_matmul_reference(S, log_A)


def _assert_same_sums(got, ref, M, P, dtype):
    assert got.dtype == dtype and got.shape == (M, P)
    assert torch.isfinite(got).all()
    eps = torch.finfo(dtype).eps
    scale = float(ref.abs().max()) + 1.0
    torch.testing.assert_close(got.cpu(), ref.cpu(), rtol=64 * eps, atol=64 * eps * scale)


@pytest.mark.parametrize("M,N,card,P", SHAPES)
@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_incidence_gather_sum_matches_csr_reference(M, N, card, P, missing, device, dtype):
    flat_t, log_A, ref = _gather_case(M, N, card, P, missing, M * 1000 + N * 10 + P, _target_device(device), dtype)
    _assert_same_sums(kernels.incidence_gather_sum(flat_t, log_A), ref, M, P, dtype)


@pytest.mark.parametrize("block_m, num_warps, num_stages, n_split", [(16, 2, None, 1), (128, None, 2, 1),
                                                                      (32, None, None, 3), (64, None, None, 7),
                                                                      (16, None, None, 50)])
def test_launch_choices_give_the_same_sums(block_m, num_warps, num_stages, n_split, device, dtype):
    # the launch choices that bench_gpu.py times: the same sums, rows off every block grid
    flat_t, log_A, ref = _gather_case(150, 7, 4, 20, 0.1, 5, _target_device(device), dtype)
    got = kernels.incidence_gather_sum(flat_t, log_A, block_m=block_m, num_warps=num_warps, num_stages=num_stages,
                                       n_split=n_split)
    _assert_same_sums(got, ref, 150, 20, dtype)


def test_kernel_rejects_bad_dtypes(device):
    dev = _target_device(device)
    with pytest.raises(ValueError, match="n_split"):
        kernels.incidence_gather_sum(torch.zeros(2, 3, dtype=torch.int32, device=dev), torch.zeros(4, 2, device=dev),
                                     n_split=0)
    with pytest.raises(TypeError, match="int32"):
        kernels.incidence_gather_sum(torch.zeros(2, 3, dtype=torch.int64, device=dev), torch.zeros(4, 2, device=dev))
    with pytest.raises(TypeError, match="float32 or float64"):
        kernels.incidence_gather_sum(torch.zeros(2, 3, dtype=torch.int32, device=dev),
                                     torch.zeros(4, 2, dtype=torch.float16, device=dev))


def test_dispatcher_modes(monkeypatch):
    cpu = torch.zeros(2)
    monkeypatch.setenv("TENSORPROB_KERNELS", "reference")
    assert kernel_mode() == "reference" and not use_triton(cpu)
    monkeypatch.setenv("TENSORPROB_KERNELS", "auto")
    assert use_triton(cpu) is False  # the reference always runs on CPU tensors in auto mode
    monkeypatch.setenv("TENSORPROB_KERNELS", "bogus")
    with pytest.raises(ValueError, match="TENSORPROB_KERNELS"):
        kernel_mode()
    monkeypatch.setenv("TENSORPROB_KERNELS", "triton")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET"):
        use_triton(cpu)


def test_em_with_forced_kernel_equals_reference(monkeypatch, device, dtype):
    """A whole fit through the kernel (interpreted on CPU) equals the fit through the CSR product."""
    _target_device(device)
    s = tp.datasets.make_latent_class(300, [3, 4, 2, 5, 3], 3, random_state=4)
    X = np.asarray(s.X)
    X[::7, 2] = -1
    monkeypatch.setenv("TENSORPROB_KERNELS", "reference")
    a = tp.fit_cpd(X, rank=3, n_iter_max=8, tol=0.0, random_state=0)
    monkeypatch.setenv("TENSORPROB_KERNELS", "triton")
    b = tp.fit_cpd(X, rank=3, n_iter_max=8, tol=0.0, random_state=0)
    eps = torch.finfo(dtype).eps
    np.testing.assert_allclose(b.loglik_history_, a.loglik_history_, rtol=256 * eps, atol=0)


def test_cache_decision_counts_the_kernels_copy(device, dtype):
    """The gather kernel's int32 copy of the codes (4 bytes per entry) counts towards the cache budget."""
    _target_device(device)
    M, N = 2000, 10  # sizes above the smallest budget allowed (64 KiB)
    codes = torch.randint(0, 3, (M, N), device=device)
    cards = torch.full((N,), 3, device=device)
    isz = 4 if Incidence(codes, cards, dtype).itype == torch.int32 else 8
    vsz = torch.tensor([], dtype=dtype).element_size() * 2
    fits_csr = M * N * 2 * isz + N * vsz  # the CSR indices, and the values of one chunk of one row

    def cached(budget, kernel):
        with tp.config_context(memory_budget=budget):
            return Incidence(codes, cards, dtype, bytes_per_row=64, max_rows=1, kernel=kernel).cached

    short = fits_csr + M * N * 2  # short of the kernel's 4 bytes per entry
    assert cached(short, kernel=False) and not cached(short, kernel=True)
    assert cached(fits_csr + M * N * 4, kernel=True) and not cached(fits_csr - 1, kernel=False)
