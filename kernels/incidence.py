"""Triton kernels for the EM's two incidence products, read straight from the codes.

``incidence_gather_sum`` (:func:`tensorprob.ops.incidence_matmul`, the E-step's ``S @ log_A``):

``out[m, p] = sum_n log_A[flat_t[n, m], p]`` over entries with ``flat_t[n, m] >= 0``. One
program owns a (BLOCK_M rows x BLOCK_P columns) tile of the output and walks the N
variables: per variable it reads BLOCK_M contiguous int32 codes (the codes are stored
variable-major, so the read is coalesced) and gathers BLOCK_M rows of ``log_A`` (D x P, a
few MB at most: it stays in L2). Accumulation is in ``log_A``'s dtype, like the reference
product. A launch may split the variables into slices (a third grid axis) whose partial sums a
reduction adds: more programs when there are few rows.

``incidence_scatter_sum`` (:func:`tensorprob.ops.incidence_matmul_t`, the M-step's ``S^T @ Y``):
``out[offset_n + c, p] = sum over rows m with x_mn = c of Y[m, p]``. One program owns a few
variables of equal padded cardinality CMAX (a bucket, see :func:`scatter_plan`) and a tile of
columns, walks a slice of the rows, and per block of rows forms the (rows x variables*CMAX)
one-hot of the codes and multiplies it into the (rows x columns) tile of Y with ``tl.dot`` at
IEEE precision (the one-hot is exact, so the product is the plain sum of Y's rows). No atomics:
the row slices write partial sums that one reduction adds, in the same order on every run.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl


def _operands(flat_t: torch.Tensor, dense: torch.Tensor, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernels' operands checked (int32 codes, a float32 or float64 dense operand) and made contiguous."""
    if flat_t.dtype != torch.int32:
        raise TypeError(f"flat_t must be int32 (variable-major flat codes), got {flat_t.dtype}")
    if dense.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"{name} must be float32 or float64, got {dense.dtype}")
    return flat_t.contiguous(), dense.contiguous()


def _add_slices(out: torch.Tensor) -> torch.Tensor:
    """Sum of the partial results ``out[0] + out[1] + ...``, added one slice after the other.

    ``out.sum(0)`` may order the additions differently for different widths of ``out``, and
    a column's result must not depend on the columns beside it (batched EM fits equal fits one
    by one, bit for bit).
    """
    acc = out[0]
    for i in range(1, out.shape[0]):
        acc.add_(out[i])
    return acc


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
    flat_t, log_A = _operands(flat_t, log_A, "log_A")
    if n_split < 1:
        raise ValueError(f"n_split must be >= 1, got {n_split}")
    N, M = flat_t.shape
    P = log_A.shape[1]
    n_split = max(1, min(int(n_split), N))
    out = torch.empty(n_split, M, P, dtype=log_A.dtype, device=log_A.device)
    if M == 0 or P == 0:
        return _add_slices(out)
    block_p = min(64, triton.next_power_of_2(P))
    n_per_split = triton.cdiv(N, n_split)
    grid = (triton.cdiv(M, block_m), triton.cdiv(P, block_p), n_split)
    launch = {k: v for k, v in (("num_warps", num_warps), ("num_stages", num_stages)) if v is not None}
    _gather_sum_kernel[grid](flat_t, log_A, out, M, N, P, flat_t.stride(0), log_A.stride(0), out.stride(1),
                             n_per_split, out.stride(0), BLOCK_M=block_m, BLOCK_P=block_p, **launch)
    return _add_slices(out)


# one-hot columns per program in the scatter kernel: VB = SCATTER_MIN_J // CMAX variables (tl.dot needs
# 16 or more). On an H200 (2026-11-26, 70,000 x 785, float64 Y as in the EM) 64 was the fastest of
# 16, 32 and 64: 1.75 ms against 2.28 ms for 16 and 4.40 ms for cuSPARSE at 20 columns, 4.32 against
# 5.15 and 9.75 ms at 80. At 5,000 rows (float32 Y) 16 was 1.2x faster than 64, both slower than cuSPARSE.
SCATTER_MIN_J = 64
_SCATTER_BLOCK_P = 32  # fixed: a column's sum must not depend on how many columns are beside it


@triton.jit
def _scatter_sum_kernel(flat_ptr, var_ptr, offs_ptr, cards_ptr, y_ptr, out_ptr, M, P, n_bucket, stride_fn, stride_ym,
                        stride_od, stride_os, m_per_split, VB: tl.constexpr, CMAX: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr):
    pid_v = tl.program_id(0)
    pid_p = tl.program_id(1)
    pid_s = tl.program_id(2)  # which slice of the rows
    j = tl.arange(0, VB * CMAX)  # one-hot column: (variable slot, value)
    slot = pid_v * VB + j // CMAX
    c = j % CMAX
    v_ok = slot < n_bucket
    var = tl.load(var_ptr + slot, mask=v_ok, other=0)
    card = tl.load(cards_ptr + var, mask=v_ok, other=0)
    j_ok = v_ok & (c < card)
    # the flat column each one-hot column counts; -2 matches no code (codes are >= -1)
    target = tl.where(j_ok, tl.load(offs_ptr + var, mask=v_ok, other=0) + c, -2)
    var_row = var.to(tl.int64) * stride_fn
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    p_ok = offs_p < P
    acc = tl.zeros((VB * CMAX, BLOCK_P), dtype=y_ptr.dtype.element_ty)
    m0 = pid_s * m_per_split
    m1 = tl.minimum(m0 + m_per_split, M)
    for mb in range(m0, m1, BLOCK_M):
        offs_m = mb + tl.arange(0, BLOCK_M)
        m_ok = offs_m < m1
        codes = tl.load(flat_ptr + var_row[None, :] + offs_m[:, None], mask=m_ok[:, None] & v_ok[None, :], other=-1)
        hot = (codes == target[None, :]).to(y_ptr.dtype.element_ty)  # (BLOCK_M, VB * CMAX)
        y = tl.load(y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_p[None, :],
                    mask=m_ok[:, None] & p_ok[None, :], other=0.0)
        acc = tl.dot(tl.trans(hot), y, acc, input_precision="ieee", out_dtype=y_ptr.dtype.element_ty)
    tl.store(out_ptr + pid_s * stride_os + target[:, None].to(tl.int64) * stride_od + offs_p[None, :], acc,
             mask=j_ok[:, None] & p_ok[None, :])


def scatter_plan(cards: list[int], device: torch.device, min_j: int = SCATTER_MIN_J) -> list[tuple[int, int, torch.Tensor]]:
    """Buckets of variables for :func:`incidence_scatter_sum`: ``(CMAX, VB, variables)`` each.

    Variables are grouped by cardinality rounded up to a power of two (CMAX, at least 1), so
    no one-hot tile is more than half padding; each program takes VB = max(1, min_j // CMAX)
    variables of its bucket. Made once per data set (the cardinalities are host values). Wide
    variables make wide one-hot tiles: :data:`tensorprob.ops._incidence.SCATTER_MAX_CARD` bounds
    what the library sends here.
    """
    groups: dict[int, list[int]] = {}
    for n, c in enumerate(cards):
        groups.setdefault(triton.next_power_of_2(max(1, int(c))), []).append(n)
    return [(cmax, max(1, min_j // cmax), torch.tensor(vs, dtype=torch.int32, device=device))
            for cmax, vs in sorted(groups.items())]


def incidence_scatter_sum(flat_t: torch.Tensor, Y: torch.Tensor, offsets: torch.Tensor, cards: torch.Tensor,
                          n_cols: int, plan: list[tuple[int, int, torch.Tensor]], block_m: int = 64,
                          n_split: int | None = None, num_warps: int | None = None) -> torch.Tensor:
    """``out[offsets[n] + c, p] = sum over rows m with x_mn = c of Y[m, p]``: (n_cols, P) in Y's dtype.

    ``flat_t`` (N, M) int32 holds the flat columns ``offsets[n] + x_mn`` (-1 missing),
    variable-major, as for :func:`incidence_gather_sum`; ``offsets`` and ``cards`` (N,) int
    tensors on the same device; ``plan`` from :func:`scatter_plan`. ``n_split`` slices of the
    rows (default: enough programs to fill the GPU) write partial sums that one reduction adds.
    Each column of the result depends on the same column of Y only, summed in the same order
    whatever the number of columns.
    """
    flat_t, Y = _operands(flat_t, Y, "Y")
    M = flat_t.shape[1]
    P = Y.shape[1]
    if Y.shape[0] != M:
        raise ValueError(f"Y has {Y.shape[0]} rows, flat_t {M}")
    offsets = offsets.to(torch.int32)
    cards = cards.to(torch.int32)
    n_p = triton.cdiv(P, _SCATTER_BLOCK_P)
    programs = sum(triton.cdiv(vs.numel(), vb) for _, vb, vs in plan) * n_p
    if n_split is None:  # about four programs per streaming multiprocessor, each with 8 row blocks or more
        sms = torch.cuda.get_device_properties(Y.device).multi_processor_count if Y.is_cuda else 4
        n_split = max(1, min(triton.cdiv(4 * sms, max(1, programs)), M // (8 * block_m)))
    n_split = max(1, int(n_split))
    m_per_split = triton.cdiv(triton.cdiv(max(M, 1), n_split), block_m) * block_m
    n_split = max(1, triton.cdiv(max(M, 1), m_per_split))
    out = torch.empty(n_split, n_cols, P, dtype=Y.dtype, device=Y.device)
    if P == 0 or n_cols == 0:
        return out[0]
    launch = {} if num_warps is None else {"num_warps": num_warps}
    for cmax, vb, vs in plan:
        grid = (triton.cdiv(vs.numel(), vb), n_p, n_split)
        _scatter_sum_kernel[grid](flat_t, vs, offsets, cards, Y, out, M, P, vs.numel(), flat_t.stride(0),
                                  Y.stride(0), out.stride(1), out.stride(0), m_per_split, VB=vb, CMAX=cmax,
                                  BLOCK_M=block_m, BLOCK_P=_SCATTER_BLOCK_P, **launch)
    return _add_slices(out)
