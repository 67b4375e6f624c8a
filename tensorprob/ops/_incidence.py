"""The incidence products of the EM: ``S @ log_A`` (E-step) and ``S^T @ Y`` (M-step) for coded rows.

For coded rows x_m (one value per variable, -1 missing) and flat column offsets, S[m, d] = 1
where d = offset_n + x_mn, so ``(S @ log_A)[m, p] = sum_n log_A[offset_n + x_mn, p]`` over the
observed entries: the log-likelihood of row m under every packed CPD component p before the
mixing weights. The reference multiplies the CSR matrix S; the kernel gathers rows of
``log_A`` straight from the codes (1 to 4 bytes per entry instead of a 12 to 16 byte CSR
entry), with ``log_A`` held in the GPU's cache. ``S^T @ Y`` sums the rows of Y at each
(variable, value): its kernel multiplies one-hot tiles of the codes into tiles of Y, so on a GPU
neither product needs S at all (the EM's chunks then hold the int32 codes alone).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from .._docstrings import fill_doc
from ._dispatch import kernel_mode, use_triton

_SPMM_BLOCK = 256  # dense columns per sparse product on the CPU: wider operands fall out of cache

# The gather kernel's launch: 32 rows per program, the variables in 8 slices added by one reduction,
# the fastest of the launches ``bench_gpu.py --sections kernels`` times (docs/benchmarks.md).
# The slices' partial sums take GATHER_SPLIT (rows x P) buffers: the EM's chunking counts them.
GATHER_BLOCK_M = 32
GATHER_SPLIT = 8

# The scatter kernel (S^T @ Y) pads each variable's values to a power of two and multiplies a
# (rows x values) one-hot tile into Y: wider variables than this keep the CSR product.
SCATTER_MAX_CARD = 128
# ... and data with fewer rows than this: the kernel beats cuSPARSE on tens of thousands of rows and
# loses on a few thousand (``bench_gpu.py --sections kernels``; where between the two it starts to
# pay is not measured). ``TENSORPROB_KERNELS=triton`` uses the kernel whatever the rows.
SCATTER_MIN_ROWS = 1 << 14


class ScatterPlan(NamedTuple):
    """What the scatter kernel needs besides the codes: made once per data set by :func:`scatter_plan`.

    Parameters
    ----------
    offsets : int32 tensor of shape (N,)
        First flat column of each variable.
    cards : int32 tensor of shape (N,)
        Cardinality of each variable.
    n_cols : int
        D, the sum of the cardinalities (rows of ``S^T @ Y``).
    buckets : list of tuple
        The kernel's groups of variables: (padded cardinality, variables per program, int32
        tensor of the variables).
    """

    offsets: torch.Tensor
    cards: torch.Tensor
    n_cols: int
    buckets: list


def scatter_plan(cards: list[int], offsets: torch.Tensor, n_rows: int | None = None) -> ScatterPlan | None:
    """The :class:`ScatterPlan` for these variables, or None where the CSR product is to run.

    Parameters
    ----------
    cards : list of int
        Cardinality of each variable (host values).
    offsets : int tensor of shape (N,)
        First flat column of each variable, on the device the products run on.
    n_rows : int, optional
        Rows of the data: below :data:`SCATTER_MIN_ROWS` the CSR product runs, unless
        ``TENSORPROB_KERNELS=triton`` forces the kernel. None: not considered.

    Returns
    -------
    ScatterPlan or None
        The plan on ``offsets``' device; None when a cardinality exceeds
        :data:`SCATTER_MAX_CARD` or the rows are too few (then the CSR product runs).
    """
    if any(int(c) > SCATTER_MAX_CARD for c in cards):
        return None
    if n_rows is not None and n_rows < SCATTER_MIN_ROWS and kernel_mode() != "triton":
        return None
    from tensorprob_kernels.incidence import scatter_plan as buckets

    dev = offsets.device
    return ScatterPlan(offsets.to(torch.int32), torch.tensor(cards, dtype=torch.int32, device=dev), int(sum(cards)),
                       buckets(cards, dev))


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
def incidence_matmul(S: torch.Tensor | None, log_A: torch.Tensor, flat_t: torch.Tensor | None = None) -> torch.Tensor:
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
    if S is None:
        raise ValueError("incidence_matmul: no S for the reference product (the kernel cannot run here)")
    return incidence_matmul_reference(S, log_A)


def incidence_matmul_t(ST: torch.Tensor | None, Y: torch.Tensor, flat_t: torch.Tensor | None = None,
                       plan: ScatterPlan | None = None) -> torch.Tensor:
    """``S^T @ Y``, by the Triton scatter kernel when :func:`~tensorprob.ops.use_triton` allows.

    Parameters
    ----------
    ST : sparse CSR tensor of shape (D, M), or None
        The transposed incidence matrix, for the reference (None: the kernel must run).
    Y : tensor of shape (M, K)
        Dense float32 or float64 operand (the EM's weighted responsibilities).
    flat_t : int32 tensor of shape (N, M), optional
        The rows as variable-major flat column indices (-1 missing), as for :func:`incidence_matmul`.
    plan : ScatterPlan, optional
        From :func:`scatter_plan`; the kernel runs only with both ``flat_t`` and ``plan``.

    Returns
    -------
    tensor of shape (D, K)
        ``S^T @ Y`` in Y's dtype; each column depends only on the same column of Y.
    """
    if flat_t is not None and plan is not None and use_triton(flat_t, Y):
        from tensorprob_kernels.incidence import incidence_scatter_sum

        return incidence_scatter_sum(flat_t, Y, plan.offsets, plan.cards, plan.n_cols, plan.buckets)
    if ST is None:
        raise ValueError("incidence_matmul_t: no S^T for the reference product (the kernel cannot run here)")
    return incidence_matmul_reference(ST, Y)
