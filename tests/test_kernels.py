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
from tensorprob.ops import incidence_matmul_reference, incidence_matmul_t, kernel_mode, scatter_plan, use_triton
from tensorprob.ops._incidence import SCATTER_MAX_CARD, SCATTER_MIN_ROWS

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


SCATTER_CARDS = [[2], [1, 2, 3, 5, 5, 9, 17, 2, 4, 100], [5] * 9 + [10], [3] * 40, [128, 1]]


def _scatter_case(M, cards, P, missing, seed, dev, dtype):
    """Random codes of the given cardinalities, their flat_t, nonnegative Y and the CSR product S^T @ Y."""
    g = torch.Generator().manual_seed(seed)
    N = len(cards)
    codes = torch.stack([torch.randint(0, c, (M,), generator=g) for c in cards], 1)
    codes[torch.rand(M, N, generator=g) < missing] = -1
    inc = Incidence(codes.to(dev), torch.tensor(cards).to(dev), dtype)
    (start, stop, _, ST), = inc.chunks()
    Y = torch.rand(M, P, generator=g, dtype=torch.float64).to(dtype).to(dev)
    return inc, inc.flat_t(start, stop), Y, incidence_matmul_reference(ST.to(dtype), Y)


def _scatter(inc, flat_t, Y, min_j=None, **kw):
    ends = torch.cat([inc.offsets, torch.tensor([inc.n_cols], device=inc.offsets.device)])
    plan = scatter_plan([int(c) for c in torch.diff(ends).tolist()], inc.offsets)
    buckets = plan.buckets if min_j is None else kernels.scatter_plan(plan.cards.tolist(), flat_t.device, min_j=min_j)
    return kernels.incidence_scatter_sum(flat_t, Y, plan.offsets, plan.cards, plan.n_cols, buckets, **kw)


@pytest.mark.parametrize("cards", SCATTER_CARDS, ids=lambda c: f"{len(c)}vars-max{max(c)}")
@pytest.mark.parametrize("M,P", [(1, 1), (63, 5), (200, 33), (300, 80)])
@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_incidence_scatter_sum_matches_csr_reference(cards, M, P, missing, device, dtype):
    inc, flat_t, Y, ref = _scatter_case(M, cards, P, missing, M * 7 + P + len(cards), _target_device(device), dtype)
    got = _scatter(inc, flat_t, Y)
    assert got.dtype == dtype and got.shape == (sum(cards), P)
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(got.cpu(), ref.cpu(), rtol=64 * eps, atol=64 * eps * (float(ref.abs().max()) + 1))


@pytest.mark.parametrize("block_m, n_split, num_warps, min_j", [(16, 1, None, 16), (32, 3, 2, 64), (64, 7, None, 32),
                                                                (16, 40, 4, 128)])
def test_scatter_launch_choices_and_columns_alone(block_m, n_split, num_warps, min_j, device, dtype):
    """Every launch gives the same sums; a column's sum is bit for bit that of the column alone
    (the EM's batched fits must equal the fits one by one), and a rerun gives the same bits."""
    inc, flat_t, Y, ref = _scatter_case(250, [1, 2, 3, 5, 9, 17, 2], 70, 0.1, 3, _target_device(device), dtype)
    launch = {"block_m": block_m, "n_split": n_split, "num_warps": num_warps, "min_j": min_j}
    got = _scatter(inc, flat_t, Y, **launch)
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(got.cpu(), ref.cpu(), rtol=64 * eps, atol=64 * eps * (float(ref.abs().max()) + 1))
    for j in (0, 31, 32, 69):
        alone = _scatter(inc, flat_t, Y[:, j:j + 1], **launch)
        assert torch.equal(alone[:, 0], got[:, j])
    assert torch.equal(_scatter(inc, flat_t, Y, **launch), got)


def test_scatter_rejects_bad_input(device):
    dev = _target_device(device)
    plan = scatter_plan([2, 2], torch.tensor([0, 2], device=dev))
    args = (plan.offsets, plan.cards, plan.n_cols, plan.buckets)
    with pytest.raises(TypeError, match="int32"):
        kernels.incidence_scatter_sum(torch.zeros(2, 3, dtype=torch.int64, device=dev), torch.zeros(3, 2, device=dev),
                                      *args)
    with pytest.raises(TypeError, match="float32 or float64"):
        kernels.incidence_scatter_sum(torch.zeros(2, 3, dtype=torch.int32, device=dev),
                                      torch.zeros(3, 2, dtype=torch.float16, device=dev), *args)
    with pytest.raises(ValueError, match="rows"):
        kernels.incidence_scatter_sum(torch.zeros(2, 3, dtype=torch.int32, device=dev), torch.zeros(4, 2, device=dev),
                                      *args)
    assert scatter_plan([SCATTER_MAX_CARD + 1], torch.tensor([0], device=dev)) is None  # the CSR product then


def test_matmul_t_dispatch(monkeypatch, device, dtype):
    """ops.incidence_matmul_t: the kernel with codes and a plan, the CSR reference otherwise, a clear error without S^T."""
    inc, flat_t, Y, ref = _scatter_case(40, [3, 4], 6, 0.0, 1, _target_device(device), dtype)
    plan = scatter_plan([3, 4], inc.offsets)
    (_, _, _, ST), = inc.chunks()
    monkeypatch.setenv("TENSORPROB_KERNELS", "reference")
    assert torch.equal(incidence_matmul_t(ST.to(dtype), Y, flat_t, plan), ref)
    with pytest.raises(ValueError, match="no S\\^T"):
        incidence_matmul_t(None, Y, flat_t, plan)
    monkeypatch.setenv("TENSORPROB_KERNELS", "triton")
    torch.testing.assert_close(incidence_matmul_t(None, Y, flat_t, plan).cpu(), ref.cpu())


@pytest.mark.parametrize("wide", [False, True], ids=["matrix-free", "wide-variable"])
def test_em_with_forced_kernels_and_kmeanspp_equals_reference(monkeypatch, device, dtype, wide):
    """k-means++ seeding and EM through the kernels equal the CSR path: matrix-free with small
    alphabets, the gather kernel beside the CSR S^T when one variable is too wide for the scatter."""
    _target_device(device)
    cards = [3, 4, 2, 5, 3] + ([SCATTER_MAX_CARD + 2] if wide else [])
    s = tp.datasets.make_latent_class(240, cards, 3, random_state=5)
    X = np.asarray(s.X)
    X[::5, 1] = -1
    monkeypatch.setenv("TENSORPROB_KERNELS", "reference")
    a = tp.fit_cpd(X, rank=3, n_iter_max=6, tol=0.0, random_state=1, init="kmeans++", n_restarts=2)
    monkeypatch.setenv("TENSORPROB_KERNELS", "triton")
    b = tp.fit_cpd(X, rank=3, n_iter_max=6, tol=0.0, random_state=1, init="kmeans++", n_restarts=2)
    eps = torch.finfo(dtype).eps
    np.testing.assert_allclose(b.loglik_history_, a.loglik_history_, rtol=256 * eps, atol=0)


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


def test_cache_decision_counts_the_kernels_copy(monkeypatch, device, dtype):
    """The kernels' int32 copy of the codes (4 bytes per entry) counts towards the cache's half of the budget.

    The chunks are cached when their kept indices take at most half the budget (the chunks'
    own work gets the rest). With small alphabets both products run on the int32 copy alone (no
    CSR matrix: matrix-free); a variable wider than the scatter kernel takes keeps the CSR
    matrices beside it.
    """
    _target_device(device)
    monkeypatch.setenv("TENSORPROB_KERNELS", "triton")  # matrix-free on 2,000 rows (auto: SCATTER_MIN_ROWS)
    M, N = 2000, 10  # sizes above the smallest budget allowed (64 KiB)
    for wide in (False, True):
        codes = torch.randint(0, 3, (M, N), device=device)
        cards = torch.full((N,), 3, device=device)
        cards[0] = SCATTER_MAX_CARD + 1 if wide else 3
        isz = 4 if Incidence(codes, cards, dtype).itype == torch.int32 else 8

        def cached(budget, kernel, codes=codes, cards=cards, wide=wide):
            with tp.config_context(memory_budget=budget):
                inc = Incidence(codes, cards, dtype, bytes_per_row=64, max_rows=1, kernel=kernel)
                assert inc.matrix_free == (kernel and not wide)
                return inc.cached

        if wide:
            kept = M * N * 2 * isz  # the CSR indices; the kernel adds its int32 copy of the codes
            assert cached(2 * kept, kernel=False) and not cached(2 * kept, kernel=True)
            assert cached(2 * (kept + M * N * 4), kernel=True) and not cached(2 * kept - 2, kernel=False)
        else:
            assert cached(2 * M * N * 4, kernel=True) and not cached(2 * M * N * 4 - 2, kernel=True)
            assert not cached(2 * M * N * 4, kernel=False)  # the CSR form needs more


@pytest.mark.parametrize("kernel", [False, True])
def test_cached_chunks_are_sized_to_what_the_cache_leaves(monkeypatch, device, dtype, kernel):
    """With the chunks cached, a chunk's own work (the caller's bytes per row) fits the budget less the cache.

    Before, the chunks were sized to the whole budget beside a cache of up to the budget (a CPD
    fit peaked at 1.5-1.9x its budget on an H200).
    """
    if kernel:
        _target_device(device)
        monkeypatch.setenv("TENSORPROB_KERNELS", "triton")
    M, N, bpr = 3000, 12, 4096
    codes = torch.randint(0, 4, (M, N), device=device)
    cards = torch.full((N,), 4, device=device)
    isz = 4 if Incidence(codes, cards, dtype).itype == torch.int32 else 8
    kept = M * N * (0 if kernel else 2 * isz) + (M * N * 4 if kernel else 0)
    for budget in (2 * kept, 3 * kept, 8 * kept):
        with tp.config_context(memory_budget=budget):
            inc = Incidence(codes, cards, dtype, bytes_per_row=bpr, kernel=kernel)
        assert inc.cached and inc.matrix_free == kernel
        step = max(e - s for s, e in inc.ranges)
        assert kept + step * bpr <= budget
        assert step * bpr > (budget - kept) // 4  # and not needlessly small


def test_matrix_free_needs_enough_rows_unless_forced(monkeypatch, device, dtype):
    """Auto mode keeps cuSPARSE's S^T below SCATTER_MIN_ROWS rows (the kernel lost there); forced, the kernel runs."""
    _target_device(device)
    cards = torch.tensor([3, 5], device=device)
    few = torch.zeros(SCATTER_MIN_ROWS - 1, 2, dtype=torch.int8, device=device)
    many = torch.zeros(SCATTER_MIN_ROWS, 2, dtype=torch.int8, device=device)
    monkeypatch.setenv("TENSORPROB_KERNELS", "auto")
    assert not Incidence(few, cards, dtype, kernel=True).matrix_free
    assert Incidence(many, cards, dtype, kernel=True).matrix_free
    assert not Incidence(many, torch.tensor([3, SCATTER_MAX_CARD + 1], device=device), dtype, kernel=True).matrix_free
    monkeypatch.setenv("TENSORPROB_KERNELS", "triton")
    assert Incidence(few, cards, dtype, kernel=True).matrix_free


@pytest.mark.parametrize("code_dtype", [torch.int8, torch.int16, torch.int64])
def test_flat_t_is_the_flat_index_transposed(code_dtype, device):
    """The kernels' int32 codes (built in the codes' own dtype, offset in place) equal :meth:`Incidence.flat`
    transposed, missing entries -1, for every chunk of the rows."""
    g = torch.Generator().manual_seed(3)
    cards = torch.tensor([1, 3, 7, 2, 5])
    codes = torch.stack([torch.randint(0, int(c), (90,), generator=g) for c in cards], 1)
    codes[torch.rand(codes.shape, generator=g) < 0.2] = -1
    inc = Incidence(codes.to(code_dtype).to(device), cards.to(device), torch.float64, bytes_per_row=64, max_rows=31)
    assert len(inc.ranges) == 3
    for start, stop in inc.ranges:
        got = inc.flat_t(start, stop)
        assert got.dtype == torch.int32 and got.is_contiguous() and got.shape == (5, stop - start)
        assert torch.equal(got.cpu(), inc.flat(start, stop).T.to(torch.int32).cpu())
