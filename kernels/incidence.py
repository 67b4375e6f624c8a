"""Triton kernel for :func:`tensorprob.ops.incidence_matmul`: a gather-sum over the codes.

``out[m, p] = sum_n log_A[flat_t[n, m], p]`` over entries with ``flat_t[n, m] >= 0``. One
program owns a (BLOCK_M rows x BLOCK_P columns) tile of the output and walks the N
variables: per variable it reads BLOCK_M contiguous int32 codes (the codes are stored
variable-major, so the read is coalesced) and gathers BLOCK_M rows of ``log_A`` (D x P, a
few MB at most: it stays in L2). Accumulation is in ``log_A``'s dtype, like the reference
product. A launch may split the variables into slices (a third grid axis) whose partial sums a
reduction adds: more programs when there are few rows.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _gather_sum_kernel(flat_ptr, a_ptr, out_ptr, M, N, P, stride_fn, stride_ad, stride_om, n_per_split, stride_os,
                       BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_p = tl.program_id(1)
    pid_s = tl.program_id(2)  # which slice of the variables (one slice unless the launch splits them)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    m_ok = offs_m < M
    p_ok = offs_p < P
    acc = tl.zeros((BLOCK_M, BLOCK_P), dtype=a_ptr.dtype.element_ty)
    n0 = pid_s * n_per_split
    n1 = tl.minimum(n0 + n_per_split, N)
    for n in range(n0, n1):
        idx = tl.load(flat_ptr + n * stride_fn + offs_m, mask=m_ok, other=-1)
        ok = idx >= 0
        rows = tl.where(ok, idx, 0).to(tl.int64)
        vals = tl.load(a_ptr + rows[:, None] * stride_ad + offs_p[None, :], mask=ok[:, None] & p_ok[None, :],
                       other=0.0)
        acc += vals
    tl.store(out_ptr + pid_s * stride_os + offs_m[:, None] * stride_om + offs_p[None, :], acc,
             mask=m_ok[:, None] & p_ok[None, :])


def incidence_gather_sum(flat_t: torch.Tensor, log_A: torch.Tensor, block_m: int = 32, num_warps: int | None = None,
                         num_stages: int | None = None, n_split: int = 8) -> torch.Tensor:
    """``out[m, p] = sum over observed n of log_A[flat_t[n, m], p]``: (M, P) in ``log_A``'s dtype.

    ``block_m`` rows per program; ``num_warps`` and ``num_stages`` go to the launch when given
    (Triton's defaults otherwise). ``n_split > 1`` splits the variables into that many slices,
    each summed by its own programs into a partial (n_split, M, P) buffer that one reduction
    adds up: more programs for few rows (every program walks its variables in sequence), and
    the same order of additions on every run (no atomics). ``benchmarks/bench_gpu.py
    --sections kernels`` times the choices against the CSR reference; the defaults are the
    launch that measured best (``tensorprob.ops._incidence.GATHER_SPLIT``).
    """
    if flat_t.dtype != torch.int32:
        raise TypeError(f"flat_t must be int32 (variable-major flat codes), got {flat_t.dtype}")
    if log_A.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"log_A must be float32 or float64, got {log_A.dtype}")
    flat_t = flat_t.contiguous()
    log_A = log_A.contiguous()
    if n_split < 1:
        raise ValueError(f"n_split must be >= 1, got {n_split}")
    N, M = flat_t.shape
    P = log_A.shape[1]
    n_split = max(1, min(int(n_split), N))
    out = torch.empty(n_split, M, P, dtype=log_A.dtype, device=log_A.device)
    if M == 0 or P == 0:
        return out[0] if n_split == 1 else out.sum(0)
    block_p = min(64, triton.next_power_of_2(P))
    n_per_split = triton.cdiv(N, n_split)
    grid = (triton.cdiv(M, block_m), triton.cdiv(P, block_p), n_split)
    launch = {k: v for k, v in (("num_warps", num_warps), ("num_stages", num_stages)) if v is not None}
    _gather_sum_kernel[grid](flat_t, log_A, out, M, N, P, flat_t.stride(0), log_A.stride(0), out.stride(1),
                             n_per_split, out.stride(0), BLOCK_M=block_m, BLOCK_P=block_p, **launch)
    return out[0] if n_split == 1 else out.sum(0)
