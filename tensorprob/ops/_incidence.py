"""The incidence product of the E-step: ``S @ log_A`` for the one-hot incidence S of coded rows.

For coded rows x_m (one value per variable, -1 missing) and flat column offsets, S[m, d] = 1
where d = offset_n + x_mn, so ``(S @ log_A)[m, p] = sum_n log_A[offset_n + x_mn, p]`` over the
observed entries: the log-likelihood of row m under every packed CPD component p before the
mixing weights. The reference multiplies the CSR matrix S; the kernel gathers rows of
``log_A`` straight from the codes (1 to 4 bytes per entry instead of a 12 to 16 byte CSR
entry), with ``log_A`` held in the GPU's cache.
"""
from __future__ import annotations

import torch

from .._docstrings import fill_doc
from ._dispatch import use_triton

_SPMM_BLOCK = 256  # dense columns per sparse product on the CPU: wider operands fall out of cache (measured)

# The gather kernel's launch: 32 rows per program, the variables in 8 slices added by one reduction.
# Of the ten launches timed by ``bench_gpu.py --sections kernels`` on an H200 (2026-11-26: MNIST-5k
# and 70k x 785, P = 20 and 80, float32 and float64), it was the fastest in 6 of the 8 cases and
# within 16% of the fastest in the other two: 0.94-1.18x cuSPARSE's speed at 5,000 rows, 1.65-2.08x
# at 70,000. One slice of 64 rows (the launch before) was 0.16-0.30x cuSPARSE's speed at 5,000 rows.
# The slices' partial sums take GATHER_SPLIT (rows x P) buffers: the EM's chunking counts them.
GATHER_BLOCK_M = 32
GATHER_SPLIT = 8


_FRAGMENTS = {
    "S": """\
S : sparse CSR tensor of shape (M, D)
    The one-hot incidence matrix of M coded rows.""",
    "log_A": """\
log_A : tensor of shape (D, P)
    Dense float32 or float64 operand: the packed log factors of P components.""",
    "product": """\
tensor of shape (M, P)
    ``S @ log_A``, in ``log_A``'s dtype.""",
}


@fill_doc(**_FRAGMENTS)
def incidence_matmul_reference(S: torch.Tensor, log_A: torch.Tensor) -> torch.Tensor:
    """Compute ``S @ log_A`` with a sparse CSR S, in column blocks of 256 (cache-sized on the CPU).

    Any CSR matrix works (the EM also multiplies S^T by the responsibilities with it).

    Parameters
    ----------
    %(S)s
    %(log_A)s

    Returns
    -------
    %(product)s
    """
    if log_A.shape[1] <= _SPMM_BLOCK:
        return S @ log_A
    return torch.cat([S @ log_A[:, j:j + _SPMM_BLOCK].contiguous() for j in range(0, log_A.shape[1], _SPMM_BLOCK)],
                     1)


@fill_doc(**_FRAGMENTS)
def incidence_matmul(S: torch.Tensor, log_A: torch.Tensor, flat_t: torch.Tensor | None = None) -> torch.Tensor:
    """``S @ log_A``, by the Triton gather kernel when :func:`~tensorprob.ops.use_triton` allows.

    Parameters
    ----------
    %(S)s
    %(log_A)s
    flat_t : int32 tensor of shape (N, M), optional
        The same rows as flat column indices ``offset_n + x_mn`` (-1 missing), variable-major.
        The kernel reads these; without them the reference runs.

    Returns
    -------
    %(product)s
    """
    if flat_t is not None and use_triton(flat_t, log_A):
        from tensorprob_kernels.incidence import incidence_gather_sum

        return incidence_gather_sum(flat_t, log_A, block_m=GATHER_BLOCK_M, n_split=GATHER_SPLIT)
    return incidence_matmul_reference(S, log_A)
