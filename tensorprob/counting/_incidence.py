"""Unique rows with weights, and the one-hot incidence matrix of coded data.

The incidence matrix S (M x D, D = sum of cardinalities) has a 1 in row m at column
``offset[n] + x_mn`` for every observed entry. It is the sparse empirical tensor, one row
per sample: ``S @ V`` sums the rows of ``V`` picked by a sample's values (a sparse MTTKRP
in the CPD E-step) and ``S.T @ R`` scatters per-sample quantities back to (variable, value)
pairs (the M-step numerators).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import torch

from .._device import chunk_rows


def offsets_of(cardinalities: torch.Tensor) -> torch.Tensor:
    """Start column of each variable in the flat (variable, value) index.

    Parameters
    ----------
    cardinalities : int tensor of shape (N,)
        Alphabet size of each variable.

    Returns
    -------
    int64 tensor of shape (N,)
        ``offset[n] = sum_{k < n} cardinalities[k]``.
    """
    card = cardinalities.to(torch.int64)
    return torch.cumsum(card, 0) - card


def unique_rows(codes: torch.Tensor, weights: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Merge identical rows.

    Parameters
    ----------
    codes : int tensor of shape (M, N)
        Rows of codes (``-1`` = missing is a value like any other here).
    weights : tensor of shape (M,) or (M, B), optional
        Per-row weights (B weight vectors at once); default one per row.

    Returns
    -------
    rows : tensor of shape (M', N)
        The distinct rows, sorted.
    merged : tensor of shape (M', B), or (M',) if ``weights`` was 1-D or None
        Summed weights of each distinct row.
    inverse : int64 tensor of shape (M,)
        Index of each original row in ``rows``.
    """
    rows, inverse = torch.unique(codes, dim=0, return_inverse=True)
    if weights is None:
        merged = torch.zeros(rows.shape[0], dtype=torch.float64, device=codes.device)
        merged.index_add_(0, inverse, torch.ones(codes.shape[0], dtype=torch.float64, device=codes.device))
    else:
        merged = torch.zeros((rows.shape[0],) + tuple(weights.shape[1:]), dtype=weights.dtype, device=weights.device)
        merged.index_add_(0, inverse, weights)
    return rows, merged, inverse


@dataclass
class Incidence:
    """Row-chunked incidence matrix of coded data, in CSR form for both S and S^T.

    Built by :meth:`build`; the fields are the constructor's parameters.

    Parameters
    ----------
    chunks : list of (start, stop, S_chunk, S_chunk_T)
        Row ranges with their CSR blocks (``S[start:stop]`` and its transpose).
    flat : int64 tensor of shape (M, N)
        ``offset[n] + x_mn``, or -1 where missing.
    """

    chunks: list
    flat: torch.Tensor
    _flat_t: dict = field(default_factory=dict, init=False, repr=False)

    def flat_t(self, start: int, stop: int) -> torch.Tensor:
        """Rows ``start:stop`` of :attr:`flat` as variable-major int32, built once per range.

        The layout the gather kernel of :func:`tensorprob.ops.incidence_matmul` reads.

        Parameters
        ----------
        start, stop : int
            The row range (a chunk's bounds).

        Returns
        -------
        int32 tensor of shape (N, stop - start)
            ``flat[start:stop].T``, contiguous.
        """
        key = (start, stop)
        if key not in self._flat_t:
            self._flat_t[key] = self.flat[start:stop].T.to(torch.int32).contiguous()
        return self._flat_t[key]

    @classmethod
    def build(cls, codes: torch.Tensor, cardinalities: torch.Tensor, dtype: torch.dtype,
              bytes_per_row: int | None = None, dtype_t: torch.dtype | None = None) -> Incidence:
        """Build S for ``codes``, chunked so a chunk's dense work fits the memory budget.

        Parameters
        ----------
        codes : int tensor of shape (M, N)
            Codes of the rows; -1 marks a missing entry (no 1 in its row of S).
        cardinalities : int tensor of shape (N,)
            Alphabet size of each variable (D = their sum columns).
        dtype : torch.dtype
            Value type of S.
        bytes_per_row : int, optional
            Size of the dense temporaries one row creates in the caller (for the EM: a few
            B x F float arrays); it sets the chunk length. None: one chunk.
        dtype_t : torch.dtype, optional
            Value type of S^T (default ``dtype``).

        Returns
        -------
        Incidence
            The chunks and the flat indices.
        """
        device = codes.device
        M = codes.shape[0]
        off = offsets_of(cardinalities.to(device))
        c = codes.to(torch.int64)
        flat = torch.where(c >= 0, c + off[None, :], torch.full_like(c, -1))
        D = int(cardinalities.sum())
        step = M if bytes_per_row is None else chunk_rows(bytes_per_row, M)
        chunks = []
        for start in range(0, M, step):
            stop = min(M, start + step)
            s, st = _csr_pair(flat[start:stop], D, dtype, dtype_t or dtype)
            chunks.append((start, stop, s, st))
        return cls(chunks, flat)


def _csr_pair(block: torch.Tensor, n_cols: int, dtype: torch.dtype, dtype_t: torch.dtype
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """CSR forms of S (rows x D) and S^T for a block of flat indices (-1 = missing).

    Within a row the flat indices increase with the variable, so the row-major order of the
    observed entries is already a valid CSR column order; S^T is a stable sort by column.
    """
    device = block.device
    n = block.shape[0]
    obs = block >= 0
    per_row = obs.sum(1)
    col = block[obs]
    crow = torch.zeros(n + 1, dtype=torch.int64, device=device)
    crow[1:] = torch.cumsum(per_row, 0)
    val = torch.ones(col.numel(), dtype=dtype, device=device)
    row_id = torch.repeat_interleave(torch.arange(n, device=device), per_row)
    order = torch.sort(col, stable=True).indices
    crow_t = torch.zeros(n_cols + 1, dtype=torch.int64, device=device)
    crow_t[1:] = torch.cumsum(torch.bincount(col, minlength=n_cols), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
        s = torch.sparse_csr_tensor(crow, col, val, (n, n_cols), check_invariants=False)
        st = torch.sparse_csr_tensor(crow_t, row_id[order], val.to(dtype_t), (n_cols, n), check_invariants=False)
    return s, st
