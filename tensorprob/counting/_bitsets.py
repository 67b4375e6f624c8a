"""Class-free pair tables from bitsets: one AND and population count per pair of values.

Each (feature, value) is a bitset over the rows; the count of (x_c = v, x_j = u) is the
population count of the AND of two bitsets. A step reads ``N I M / 8`` bytes that stay in cache,
and makes ``N (I - 1)^2 M / 64`` word operations: the fastest class-free count of complete rows
of small alphabets (the last value's counts come from the margins).
"""
from __future__ import annotations

import numpy as np
import torch

from .._config import setting
from .._device import CPU_BLOCK_BYTES
from . import _costs
from ._planner import Request, Strategy, register
from ._tables import _axis_sum


@register
class Bitsets(Strategy):
    """Class-free (x_c, x_j) tables of complete, unweighted codes on the CPU by ANDs of bitsets (:func:`bitset_pair_tables`)."""

    name = "bitsets"
    devices = frozenset({"cpu"})
    kinds = frozenset({"pair_free"})

    def __init__(self, data) -> None:
        super().__init__(data)
        self._bits: np.ndarray | None = None
        self._totals: np.ndarray | None = None

    def applies(self, req: Request) -> str | None:
        d = self.data
        if d.stream is not None:
            return "the rows are streamed"
        if not d.complete or d.weighted:
            return "missing entries or weights"
        if not hasattr(np, "bitwise_count"):
            return "this NumPy has no bitwise_count (NumPy 2.0 or later)"
        M = int(d.codes.shape[0])
        if M == 0:
            return "no rows"
        if d.n_features * d.max_card * ((M + 63) // 64) * 8 > setting("memory_budget") // 4:
            return "the bitsets would exceed a quarter of memory_budget"
        return None

    def seconds(self, req: Request) -> float:
        d = self.data
        N = d.n_features if req.cols is None else len(req.cols)
        I, M = d.max_card, int(d.codes.shape[0])
        words = (M + 63) // 64
        step = N * max(I - 1, 1) ** 2 * words * _costs.BITSET_WORD_S + N * I * I * 3 * _costs.CELL_S + _costs.QUANTITIES_CALL_S
        build = 0.0 if self._bits is not None else d.n_features * I * M * 1e-9 + d.transpose_seconds()
        return step + build / max(1, d.planner.expected.get(req.kind, 1))

    def _bitsets(self) -> np.ndarray:
        """The (candidate, value) bitsets over the rows, (N, I, ceil(M / 64)) uint64, built once."""
        if self._bits is None:
            d = self.data
            N, I = d.n_features, d.max_card
            M = int(d.codes.shape[0])
            words = (M + 63) // 64
            fm = d.feature_major_codes()
            bits = np.zeros((N, I, words * 8), dtype=np.uint8)
            step = max(1, CPU_BLOCK_BYTES // max(1, M))
            for s in range(0, N, step):
                block = fm[s:s + step]
                for v in range(I):
                    bits[s:s + step, v, :(M + 7) // 8] = np.packbits(block == v, axis=1, bitorder="little")
            self._bits = bits.view(np.uint64)
            self._totals = np.bitwise_count(self._bits).sum(-1, dtype=np.int64)  # (N, I)
        return self._bits

    def count(self, req: Request):
        d = self.data
        bits, j, cols = self._bitsets(), req.j, req.cols
        tot = self._totals
        T = bitset_pair_tables(bits if cols is None else bits[cols], bits[j], tot if cols is None else tot[cols], tot[j])
        T = torch.from_numpy(T).to(d.dtype).view(T.shape[0], d.max_card, d.max_card, 1)
        return d.finish(req, d.reduce(T))


def bitset_pair_tables(bits: np.ndarray, bj: np.ndarray, totals: np.ndarray, tj: np.ndarray) -> np.ndarray:
    """Counts (N, I, I) of (x_c = v, x_j = u) of complete rows from the bitsets ``bits`` (N, I, W) and ``bj`` (I, W), x_j's.

    Only the cells with ``v`` and ``u`` below ``I - 1`` are population counts of ANDs; the last
    row and column are the margins (``totals`` (N, I) and ``tj`` (I,), the rows of every
    (feature, value) and of x_j's values) minus the counted cells: the same integers, with 5
    values 16 AND-and-count passes instead of 25.
    """
    N, I, W = bits.shape
    out = np.empty((N, I, I), dtype=np.int64)
    J = I - 1
    step = max(1, CPU_BLOCK_BYTES // (8 * W * max(J, 1)))  # the AND of a block stays in cache
    for s in range(0, N, step):
        block = bits[s:s + step, :J]  # (b, J, W)
        for u in range(J):
            # few words per bitset (few rows): adds of columns; NumPy reduces a short axis slowly
            out[s:s + step, :J, u] = _axis_sum(np.bitwise_count(block & bj[u]), 2, np.int64)
    inner = out[:, :J, :J]
    out[:, :J, J] = totals[:, :J] - inner.sum(2)
    out[:, J, :J] = tj[:J] - inner.sum(1)
    out[:, J, J] = totals[:, J] - out[:, J, :J].sum(1)
    return out


