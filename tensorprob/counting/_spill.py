"""Coded rows spilled to temporary files and read back in blocks of rows (streamed selection).

A streamed selection codes every chunk once and writes its codes feature-major (one file of
N x M compact integers, laid out as :class:`~tensorprob.counting.SelectionData` wants them),
its class codes and its weights to ``numpy.memmap`` files in a fresh temporary directory.
Every count of the selection then reads them back in blocks of at most ``block_rows`` rows
(:meth:`SpilledRows.blocks`), so memory holds one block, never all the rows. The directory
is made by :func:`tempfile.mkdtemp`, hence under ``$TMPDIR`` (or ``$TEMP``, ``$TMP``, then
the system default) unless ``directory`` is given, and removed by :meth:`SpilledRows.close`.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import numpy as np
import torch

from .._config import get_config


class TempFiles:
    """A fresh temporary directory whose files are mapped as arrays; :meth:`close` removes it all.

    The one place where spilled rows (the streamed CPD fits and the streamed selections) get
    their files: the directory is made by :func:`tempfile.mkdtemp` under ``directory``
    (default: ``$TMPDIR``, ``$TEMP``, ``$TMP``, then the system default).

    Parameters
    ----------
    prefix : str
        Start of the directory's name.
    directory : str or path, optional
        Where the directory is made.
    """

    def __init__(self, prefix: str, directory: str | os.PathLike | None = None) -> None:
        self.path = tempfile.mkdtemp(prefix=prefix, dir=directory)
        self._maps: list[np.memmap] = []

    def file(self, name: str) -> str:
        """Path of the file ``name`` in the directory."""
        return os.path.join(self.path, name)

    def memmap(self, name: str, dtype: np.dtype, shape: tuple[int, ...], mode: str = "w+") -> np.ndarray:
        """The file ``name`` mapped as an array (``w+`` creates it, ``r+`` maps what was written).

        An array without elements is an ordinary empty array (an empty file cannot be mapped).
        """
        if int(np.prod(shape)) == 0:
            return np.zeros(shape, dtype)
        arr = np.memmap(self.file(name), dtype=dtype, mode=mode, shape=shape)
        self._maps.append(arr)
        return arr

    def close(self) -> None:
        """Unmap the arrays and remove the directory (idempotent)."""
        for arr in self._maps:
            mm = getattr(arr, "_mmap", None)
            if mm is not None:
                try:
                    mm.close()
                except (BufferError, ValueError):  # still referenced (a tensor view): the OS frees it later
                    pass
        self._maps = []
        shutil.rmtree(self.path, ignore_errors=True)


def default_block_rows(n_features: int) -> int:
    """Rows of one block of a streamed selection: the codes of a block in an eighth of ``memory_budget``.

    A block's int64 per-row temporaries (the combined index of one candidate, the class and
    weight columns) then stay far below the budget too, and the counting of a block chunks
    its candidates to the budget as it does for data in memory.
    """
    return max(1, get_config()["memory_budget"] // (8 * max(1, n_features)))


class SpilledRows:
    """The coded rows of one process, in temporary files, read back block by block.

    Parameters
    ----------
    n_rows : int
        Rows that will be written (:meth:`append` refuses more).
    n_features : int
        Feature columns.
    codes_dtype, y_dtype : numpy dtype
        Integer types of the feature codes (-1 missing) and of the class codes.
    weighted : bool
        Rows carry a weight (float64).
    block_rows : int
        Most rows of one block of :meth:`blocks`.
    directory : str, optional
        Where the temporary directory is made (default: :func:`tempfile.gettempdir`).

    Attributes
    ----------
    n_rows : int
        Rows written so far.
    weight_total : float
        Sum of the weights written (the rows when unweighted).
    complete : bool
        No feature code written is missing (-1).
    """

    def __init__(self, n_rows: int, n_features: int, codes_dtype: np.dtype, y_dtype: np.dtype, weighted: bool,
                 block_rows: int, directory: str | None = None) -> None:
        self.capacity, self.n_features, self.weighted = int(n_rows), int(n_features), bool(weighted)
        self.block_rows = max(1, int(block_rows))
        self.n_rows, self.weight_total, self.complete = 0, 0.0, True
        self._files = TempFiles("tensorprob-select-", directory)
        self.path = self._files.path
        try:
            size = max(1, self.capacity)  # numpy cannot map an empty file
            self._codes = self._files.memmap("codes.bin", codes_dtype, (self.n_features, size))
            self._y = self._files.memmap("y.bin", y_dtype, (size,))
            self._w = self._files.memmap("w.bin", np.float64, (size,)) if self.weighted else None
        except BaseException:
            self.close()
            raise

    def append(self, codes: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        """Write the next rows: codes (m, N), class codes (m,), weights (m,) when weighted."""
        m = int(codes.shape[0])
        start = self.n_rows
        if start + m > self.capacity:
            raise ValueError(f"the chunks hold more rows than in the first pass ({self.capacity}): they changed "
                             "between the passes")
        self._codes[:, start:start + m] = codes.T
        self._y[start:start + m] = y
        if self.complete and codes.size and int(codes.min()) < 0:
            self.complete = False
        if self._w is not None:
            self._w[start:start + m] = w
            self.weight_total += float(np.sum(w, dtype=np.float64))
        else:
            self.weight_total += m
        self.n_rows = start + m

    def blocks(self, device: torch.device) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]]:
        """Blocks of rows on ``device``: (codes (b, N) feature-major, class codes (b,), weights (b,) or None).

        At least one block is given, empty when no row was written (so that a count always has
        a table of the right shape, which a distributed rank without rows needs).
        """
        for s in range(0, max(1, self.n_rows), self.block_rows):
            e = min(self.n_rows, s + self.block_rows)
            codes = torch.from_numpy(np.ascontiguousarray(self._codes[:, s:e])).to(device).T
            y = torch.from_numpy(np.ascontiguousarray(self._y[s:e])).to(device)
            w = None if self._w is None else torch.from_numpy(np.ascontiguousarray(self._w[s:e])).to(device)
            yield codes, y, w

    def close(self) -> None:
        """Drop the files and their directory (idempotent)."""
        self._codes = self._y = self._w = None
        self._files.close()

    def __enter__(self) -> SpilledRows:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
