"""Unique rows with weights, and the one-hot incidence matrix of coded data.

The incidence matrix S (M x D, D = sum of cardinalities) has a 1 in row m at column
``offset[n] + x_mn`` for every observed entry. It is the sparse empirical tensor, one row
per sample: ``S @ V`` sums the rows of ``V`` picked by a sample's values (a sparse MTTKRP
in the CPD E-step) and ``S.T @ R`` scatters per-sample quantities back to (variable, value)
pairs (the M-step numerators).
"""
from __future__ import annotations

import warnings

import numpy as np
import torch

from .._config import get_config
from .._device import chunk_rows
from ..ops._incidence import incidence_matmul, incidence_matmul_reference, incidence_matmul_t, scatter_plan


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


def _row_keys(codes: torch.Tensor) -> torch.Tensor:
    """Rows packed into as few nonnegative int64 words as their values allow, order-preserving.

    Each column takes ``bit_length(max + 1)`` bits holding ``code + 1`` (-1 becomes 0), the
    first column in the most significant bits of the first word and at most 63 bits per word,
    so comparing the words lexicographically compares the rows lexicographically.

    Returns
    -------
    int64 tensor of shape (M, W)
        W words per row (W is about ``N * bits / 63``, for N columns of ``bits`` bits).
    """
    M, N = codes.shape
    top = (codes.amax(0).to(torch.int64) + 1).clamp_min(1).tolist() if M else [1] * N
    bits = [max(1, int(t).bit_length()) for t in top]
    words, used = [], 63
    for n, b in enumerate(bits):
        if used + b > 63:
            words.append(torch.zeros(M, dtype=torch.int64, device=codes.device))
            used = 0
        # shift the word left to make room, then put the column in its low bits
        words[-1].mul_(1 << b).add_(codes[:, n].to(torch.int64) + 1)
        used += b
    return torch.stack(words, 1)


def unique_rows(codes: torch.Tensor, weights: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Merge identical rows.

    The rows are compared through their bit-packed keys (a few int64 words per row instead
    of N), so the sort moves O(M) words, not O(M N), and no int64 copy of the codes is made.

    Parameters
    ----------
    codes : int tensor of shape (M, N)
        Rows of codes (``-1`` = missing is a value like any other here).
    weights : tensor of shape (M,) or (M, B), optional
        Per-row weights (B weight vectors at once); default one per row.

    Returns
    -------
    rows : tensor of shape (M', N)
        The distinct rows, sorted lexicographically, in the dtype of ``codes``.
    merged : tensor of shape (M', B), or (M',) if ``weights`` was 1-D or None
        Summed weights of each distinct row.
    inverse : int64 tensor of shape (M,)
        Index of each original row in ``rows``.
    """
    M = codes.shape[0]
    dev = codes.device
    keys = _row_keys(codes)
    # lexicographic order of the words: stable sorts from the last word to the first
    # (torch.unique(dim=0) keeps tens of MiB of workspace resident after it returns)
    order = torch.argsort(keys[:, -1], stable=True)
    for w in range(keys.shape[1] - 2, -1, -1):
        order = order[torch.argsort(keys[order, w], stable=True)]
    sk = keys[order]
    del keys
    new_row = torch.ones(M, dtype=torch.bool, device=dev)
    if M > 1:
        new_row[1:] = (sk[1:] != sk[:-1]).any(1)
    del sk
    group = torch.cumsum(new_row, 0) - 1  # group of each sorted row
    inverse = torch.empty(M, dtype=torch.int64, device=dev)
    inverse[order] = group
    rows = codes[order[new_row]]  # the first row (in sorted order) of each group
    if weights is None:
        merged = torch.zeros(rows.shape[0], dtype=torch.float64, device=dev)
        merged.index_add_(0, inverse, torch.ones(M, dtype=torch.float64, device=dev))
    else:
        merged = torch.zeros((rows.shape[0],) + tuple(weights.shape[1:]), dtype=weights.dtype, device=weights.device)
        merged.index_add_(0, inverse, weights)
    return rows, merged, inverse


class Incidence:
    """Row-chunked incidence matrix of coded data, in CSR form for both S and S^T.

    The chunks are cached when all of them together take at most half the memory budget (the
    usual case: two column indices per entry, plus the kernels' int32 copy when they run; the
    chunks are then sized to the rest) and otherwise rebuilt from the codes at every pass, so
    the extra memory of a pass stays within the budget at the price of building each chunk
    again (a few elementwise passes over its codes, cheaper than the products it feeds).
    Indices are int32 whenever the sizes allow.

    Parameters
    ----------
    codes : int tensor of shape (M, N)
        Codes of the rows (any integer dtype; kept, not copied); -1 marks a missing entry
        (no 1 in its row of S).
    cardinalities : int tensor of shape (N,)
        Alphabet size of each variable (D = their sum columns).
    dtype : torch.dtype
        Value type of S.
    bytes_per_row : int, optional
        Size of the dense temporaries one row creates in the caller (for the EM: a few
        B x F float arrays); with the cost of building a chunk it sets the chunk length.
        None: one chunk.
    dtype_t : torch.dtype, optional
        Value type of S^T (default ``dtype``).
    device : torch.device, optional
        Where the chunks are built (default that of ``codes``). Codes kept on the CPU, for
        instance memory-mapped from a file, are moved there one chunk at a time.
    max_rows : int, optional
        Upper bound on the rows of a chunk (on top of the budget's).
    cache : bool, optional
        False: never keep the chunks, build each at every pass (codes read from a file).
        Default: keep them when they take at most half the budget.
    kernel : bool, default=False
        Whether the Triton kernels of :mod:`tensorprob.ops` run the products (the caller's
        :func:`~tensorprob.ops.use_triton`): they read :meth:`flat_t`, an int32 copy of the
        codes kept with the cached chunks (4 bytes per entry, counted towards the budget).
        Without a baseline, with every cardinality up to
        :data:`~tensorprob.ops._incidence.SCATTER_MAX_CARD` and enough rows
        (:data:`~tensorprob.ops._incidence.SCATTER_MIN_ROWS`), both products run on the codes and
        no CSR matrix is built at all (:attr:`matrix_free`: the chunks hold None for S and S^T).
    baseline : bool, default=False
        Store S relative to a baseline value per variable, its most frequent one (see
        :meth:`matmul`): the baseline's entries are left out of the chunks (most entries of
        typical codes), and each variable gets one more
        column for its missing entries. The chunks then hold ``S'``, of shape
        (rows, D + N); use :meth:`matmul` and :meth:`matmul_t` for products with S.
    """

    def __init__(self, codes: torch.Tensor, cardinalities: torch.Tensor, dtype: torch.dtype,
                 bytes_per_row: int | None = None, dtype_t: torch.dtype | None = None,
                 device: torch.device | None = None, max_rows: int | None = None, cache: bool | None = None,
                 kernel: bool = False, baseline: bool = False) -> None:
        self.codes = codes
        self.device = codes.device if device is None else torch.device(device)
        self.offsets = offsets_of(cardinalities.to(self.device))
        self.n_cols = int(cardinalities.sum())
        self.dtype, self.dtype_t = dtype, dtype_t or dtype
        M, N = codes.shape
        self.base = None  # (N,) baseline code of each variable, when S is stored relative to it
        if baseline and M > 0 and N > 0:
            self._set_baseline(cardinalities.to(self.device))
        self.kernel = bool(kernel)
        # both products by the kernels, on the codes alone (cardinalities are read once, here)
        self._scatter = scatter_plan(cardinalities.tolist(), self.offsets, n_rows=M) if (
            self.kernel and self.base is None and N > 0) else None
        self.itype = torch.int32 if max(M, self.n_cols + N) * max(N, 1) < 2**31 else torch.int64
        isz = torch.tensor([], dtype=self.itype).element_size()
        vsz = torch.tensor([], dtype=dtype).element_size() + torch.tensor([], dtype=self.dtype_t).element_size()
        # one stored entry of S and of S^T: their column indices. The values are all ones, a
        # prefix of one vector per dtype shared by every chunk (``_ones``), counted once below
        self._entry_bytes = 0 if self.matrix_free else 2 * isz
        self._ones: dict = {}
        budget = get_config()["memory_budget"]
        # building a chunk makes a few (rows x N) int64 temporaries on top of what it stores
        # (matrix-free: the codes moved, their int32 transpose and its missing-entry mask; flat_t)
        build = N * (4 + 1 + codes.element_size() if self.matrix_free else self._entry_bytes + vsz + 3 * 8)
        # the cache: the CSR indices (and the kernels' int32 copy), alive through every pass; kept
        # only when it leaves half the budget or more to the chunks, which are then sized to the
        # rest (with the shared vectors of ones, as long as the largest chunk), so the two never
        # add up past the budget
        kept = M * N * (self._entry_bytes + (4 if kernel else 0))
        cached = cache is not False and (bytes_per_row is None or kept <= budget // 2)
        if bytes_per_row is None:
            step = M
        elif cached:
            ones = 0 if self.matrix_free else N * vsz
            step = chunk_rows(int(bytes_per_row) + build + ones, M, memory_budget=budget - kept)
        else:
            step = chunk_rows(int(bytes_per_row) + build, M)
        if max_rows is not None:
            step = max(1, min(step, int(max_rows)))
        self.ranges = [(s, min(M, s + step)) for s in range(0, M, step)] or [(0, 0)]
        if cache is False:  # each chunk is its own CSR matrix: its indices address one chunk only
            self.itype = torch.int32 if max(step, self.n_cols) * max(N, 1) < 2**31 else torch.int64
        self._cached = [(s, e, *self._build(s, e)) for s, e in self.ranges] if cached else None
        self._flat_t: dict = {}

    @property
    def matrix_free(self) -> bool:
        """Whether both products run as kernels on :meth:`flat_t` (no CSR matrix is built)."""
        return self._scatter is not None

    def _set_baseline(self, cards: torch.Tensor) -> None:
        """The most frequent code of each variable (lowest on ties), from one counting pass over the rows."""
        M, N = self.codes.shape
        D = self.n_cols
        counts = torch.zeros(D, dtype=torch.int64, device=self.device)
        # a block's flat codes (int64), their mask and the kept entries: about four int64 copies
        # of it alive at once, kept at a small fraction of the budget beside what the fit holds
        step = max(1, (get_config()["memory_budget"] // 128) // max(N, 1))
        for s in range(0, M, step):
            f = self.flat(s, min(M, s + step))
            counts += torch.bincount(f[f >= 0], minlength=D)
        N_, width = cards.numel(), int(cards.max())
        var = torch.repeat_interleave(torch.arange(N_, device=self.device), cards)
        pos = torch.arange(D, device=self.device) - self.offsets[var]
        table = torch.full((N_, width), -1, dtype=torch.int64, device=self.device)
        table[var, pos] = counts
        self._use_baseline(cards, table.argmax(1))  # (N,): first maximum = lowest code among ties

    def _use_baseline(self, cards: torch.Tensor, base: torch.Tensor) -> None:
        """Store S relative to the code ``base`` (N,) of each variable: the extended layout of :meth:`matmul`."""
        N_, D = cards.numel(), self.n_cols
        var = torch.repeat_interleave(torch.arange(N_, device=self.device), cards)
        pos = torch.arange(D, device=self.device) - self.offsets[var]
        self.base = base
        # the extended layout: variable n's columns offsets_n + n + (0 .. card_n - 1), then its missing column
        self.ext_offsets = self.offsets + torch.arange(N_, device=self.device)
        self.ext_cols = D + N_
        self._var = var
        self._reg_pos = self.ext_offsets[var] + pos  # (D,): extended column of each value
        self._miss_pos = self.ext_offsets + cards  # (N,): extended column of each variable's missing entries
        self._base_cols = self.offsets + self.base  # (N,): flat column of each baseline
        self._cards = cards

    def matmul(self, S: torch.Tensor | None, X: torch.Tensor, floor: float | None = None, start: int = 0,
               stop: int | None = None) -> torch.Tensor:
        """``S @ X`` for a chunk S of :meth:`chunks` and a dense X of shape (D, K).

        With a baseline b_n per variable, every row holds each variable once, at a value or
        missing, so ``S @ X = c + S' @ X'``: ``c = sum_n X[b_n]``, ``X'`` holds ``X[v] - X[b_n]``
        at each value v and ``-X[b_n]`` at the missing column. Sums of integers (one-hot
        seeds) are exact. ``floor``: entries of X at or below it stand for log 0 (the EM's
        E-step); they are counted apart, ``H = S @ [X <= floor]`` exactly as above, and the
        result is ``(S @ X0) + H floor`` with X0 = X where above the floor and 0 elsewhere: no
        finite value is ever added to and taken back from a floor, so no precision is lost.

        Parameters
        ----------
        S : sparse CSR tensor
            A chunk's S from :meth:`chunks` (S', of shape (rows, D + N), with a baseline).
        X : tensor of shape (D, K)
            Dense operand in S's dtype.
        floor : float, optional
            The value standing for log 0 (entries at or below it), for the E-step.
        start, stop : int, optional
            The chunk's rows: what the gather kernel reads (:attr:`kernel`) instead of S (None
            when :attr:`matrix_free`). The kernel sums every entry, ``floor`` included.

        Returns
        -------
        tensor of shape (rows, K)
            ``S @ X`` in X's dtype; each column depends only on the same column of X.
        """
        if self.kernel:  # the codes hold every entry: S is not read (a relative S' would be wrong for the kernel)
            return incidence_matmul(S if self.base is None else None, X,
                                    self.flat_t(start, self.codes.shape[0] if stop is None else stop))
        if self.base is None:
            return incidence_matmul_reference(S, X)
        K = X.shape[1]
        if floor is None:
            ext, c = self._relative(X)
            return incidence_matmul_reference(S, ext) + c[None, :]
        floored = X <= floor
        Xs = torch.cat([torch.where(floored, torch.zeros((), dtype=X.dtype, device=X.device), X),
                        floored.to(X.dtype)], 1)
        ext, c = self._relative(Xs)
        out = incidence_matmul_reference(S, ext) + c[None, :]
        return out[:, :K] + out[:, K:].round() * floor  # H floors added to the finite part (H = 0: unchanged)

    def _relative(self, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(X', c)`` of :meth:`matmul` for X of shape (D, K)."""
        base_rows = X[self._base_cols]  # (N, K)
        ext = torch.empty((self.ext_cols, X.shape[1]), dtype=X.dtype, device=X.device)
        ext[self._reg_pos] = X - base_rows[self._var]
        ext[self._miss_pos] = -base_rows
        return ext, _column_sums(base_rows)

    def matmul_t(self, ST: torch.Tensor, Y: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        """``S^T @ Y`` (D, K) for the chunk of rows ``start:stop`` (its S^T from :meth:`chunks`), Y (rows, K) >= 0.

        With a baseline, ``S'^T @ Y`` gives the sum of every other value; a baseline's sum is
        the column sum of Y less those of the variable's other values and missing entries.
        The subtraction loses what lies below its rounding, about ``(card + 1) eps`` of the
        column sum: where a baseline's sum is below ``2**20`` times that (``1e-9`` of the
        column sum in float64), it is summed directly over the rows at the baseline instead,
        for the variables where that happens, so small and zero sums stay exact (EM never
        revives an entry it has set to zero, so rounding must not make one).

        Parameters
        ----------
        ST : sparse CSR tensor, or None
            The chunk's S^T from :meth:`chunks` (None when :attr:`matrix_free`).
        Y : tensor of shape (stop - start, K)
            Nonnegative dense operand in S^T's dtype (the EM's weighted responsibilities).
        start, stop : int
            The chunk's rows (read for the direct sums).

        Returns
        -------
        tensor of shape (D, K)
            ``S^T @ Y``; each column depends only on the same column of Y.
        """
        if self.matrix_free:
            return incidence_matmul_t(None, Y, self.flat_t(start, stop), self._scatter)
        if self.base is None:
            return incidence_matmul_reference(ST, Y)
        part = incidence_matmul_reference(ST, Y)  # (D + N, K)
        out = part[self._reg_pos]  # (D, K); the baseline rows are 0 here (no entries)
        others = torch.zeros((self.base.numel(), Y.shape[1]), dtype=out.dtype, device=out.device)
        others.index_add_(0, self._var, out)
        total = _column_sums(Y)
        base_sum = total[None, :] - others - part[self._miss_pos]  # (N, K)
        # a column of Y without mass (a component that lost it) has every sum exactly 0: nothing to redo
        unsure = (base_sum <= 2.0**20 * torch.finfo(out.dtype).eps * (self._cards.to(out.dtype)[:, None] + 1) *
                  total.abs()[None, :]) & (total != 0)[None, :]
        redo = torch.nonzero(unsure.any(1)).flatten()
        if redo.numel():
            at_base = self._at_base(start, stop, redo)
            direct = at_base.to(Y.dtype).T @ Y  # (variables, K): sums over the rows at each baseline
            base_sum[redo] = torch.where(unsure[redo], direct, base_sum[redo])
        out[self._base_cols] = base_sum
        return out

    def _at_base(self, start: int, stop: int, redo: torch.Tensor) -> torch.Tensor:
        """(rows, len(redo)) bool: the rows of ``start:stop`` at the baseline of the variables ``redo``."""
        return self.codes[start:stop][:, redo.to(self.codes.device)].to(self.device) == self.base[redo][None, :]

    @property
    def cached(self) -> bool:
        """Whether the CSR chunks are kept between passes (they fit the memory budget)."""
        return self._cached is not None

    def flat(self, start: int = 0, stop: int | None = None, index: torch.Tensor | None = None) -> torch.Tensor:
        """Flat column indices ``offset[n] + x_mn`` (-1 where missing) of rows ``start:stop`` or ``index``.

        Parameters
        ----------
        start, stop : int
            The row range (default all rows).
        index : int64 tensor, optional
            Rows to take instead of a range.

        Returns
        -------
        int64 tensor of shape (rows, N)
            A new tensor.
        """
        c = self.codes[start:stop] if index is None else self.codes[index.to(self.codes.device)]
        c = c.to(self.device, torch.int64)
        return torch.where(c >= 0, c + self.offsets[None, :], -1)

    def flat_t(self, start: int, stop: int) -> torch.Tensor:
        """Rows ``start:stop`` of :meth:`flat` as variable-major int32 (kept when the chunks are cached).

        The layout the gather kernel of :func:`tensorprob.ops.incidence_matmul` reads.

        Parameters
        ----------
        start, stop : int
            The row range (a chunk's bounds).

        Returns
        -------
        int32 tensor of shape (N, stop - start)
            ``flat(start, stop).T``, contiguous.
        """
        key = (start, stop)
        if key in self._flat_t:
            return self._flat_t[key]
        # transposed in the codes' own (narrow) dtype, widened once to int32 and offset in place:
        # about 4 + 1 + the codes' bytes per entry at the peak (the int64 flat indices, their
        # offsets and a where took some 29)
        out = self.codes[start:stop].to(self.device).T.to(torch.int32, memory_format=torch.contiguous_format)
        missing = out < 0
        out.add_(self.offsets.to(torch.int32)[:, None]).masked_fill_(missing, -1)
        if self.cached:
            self._flat_t[key] = out
        return out

    def chunks(self, transpose: bool = True):
        """Iterate over ``(start, stop, S_chunk, S_chunk_T)``, from the cache or built now.

        Parameters
        ----------
        transpose : bool, default=True
            Whether the caller needs S^T (None is yielded in its place otherwise, when the
            chunks are built on the fly).

        Yields
        ------
        tuple
            ``(start, stop, S[start:stop], S[start:stop].T or None)``.
        """
        if self._cached is not None:
            yield from self._cached
            return
        for s, e in self.ranges:
            yield (s, e, *self._build(s, e, transpose))

    def _build(self, start: int, stop: int, transpose: bool = True
               ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        if self.matrix_free:  # the products read flat_t, made (and cached with the chunks) on first use
            return None, None
        if self.base is not None:  # S': baseline entries left out, missing entries in their own column
            c = self.codes[start:stop].to(self.device, torch.int64)
            block = torch.where(c >= 0, c + self.ext_offsets[None, :], self._miss_pos[None, :])
            block = block.masked_fill_(c == self.base[None, :], -1)
            return _csr_pair(block, self.ext_cols, self.dtype, self.dtype_t, self.itype, transpose, ones=self._ones)
        return _csr_pair(self.flat(start, stop), self.n_cols, self.dtype, self.dtype_t, self.itype, transpose,
                         codes=self.codes[start:stop], ones=self._ones)


def _column_sums(Z: torch.Tensor) -> torch.Tensor:
    """Sums over the rows of Z (R, K), each column added in row order whatever K is.

    ``Z.sum(0)`` may block the rows differently for different widths, so a column's sum would
    depend on the columns beside it; the E- and M-steps of B models fitted together must equal
    those of each model alone, bit for bit, as the sparse products are.
    """
    if Z.shape[0] == 0:
        return Z.new_zeros(Z.shape[1])
    return Z.cumsum(0)[-1]


def _csr_pair(block: torch.Tensor, n_cols: int, dtype: torch.dtype, dtype_t: torch.dtype,
              itype: torch.dtype = torch.int64, transpose: bool = True, codes: torch.Tensor | None = None,
              ones: dict | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """CSR forms of S (rows x D) and S^T for a block of flat indices (-1 = missing).

    Within a row the flat indices increase with the variable, so the row-major order of the
    observed entries is already a valid CSR column order; S^T is a stable sort by column.
    On the CPU, with the block's ``codes`` (rows x N, -1 = missing) given, that sort is one
    stable radix sort of each variable's codes (8- or 16-bit keys): the columns of a variable
    are contiguous and ordered like its codes, so the sorted row numbers of variable after
    variable, missing rows dropped, are S^T's column indices. About six times faster than
    one sort of all the flat indices, which matters where chunks are built again at every
    pass (data above the cache budget, spilled rows). ``ones`` (a dict kept by the caller)
    makes the values of every matrix built with it prefixes of one shared vector of ones.
    """
    device = block.device
    n, N = block.shape
    obs = block >= 0
    complete = bool(obs.all())
    if complete:
        col = block.reshape(-1)
        crow = torch.arange(0, n * N + 1, max(N, 1), dtype=itype, device=device)[: n + 1]
    else:
        col = block[obs]
        crow = torch.zeros(n + 1, dtype=itype, device=device)
        crow[1:] = torch.cumsum(obs.sum(1), 0)
    del obs
    val = _ones_values(ones, col.numel(), dtype, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
        s = torch.sparse_csr_tensor(crow, col.to(itype), val, (n, n_cols), check_invariants=False)
        if not transpose:
            return s, None
        row_id = None
        top = int(codes.amax()) if codes is not None and codes.device.type == "cpu" and n * N > 0 else None
        if device.type == "cpu" and top is not None and top < (1 << 16) - 1:
            row_id = _rows_by_variable(codes, top, obs_count=None if complete else (block >= 0).sum(0))
        elif device.type == "cpu" and n_cols <= 1 << 16:
            # NumPy sorts 16-bit keys stably by radix, in linear time: about 20 times torch.sort
            # here, which matters where the chunks are built again at every pass (spilled rows)
            order = torch.from_numpy(np.argsort(col.numpy().astype(np.uint16), kind="stable"))
        else:
            order = torch.sort(col, stable=True).indices
        if row_id is None:
            row_id = torch.div(order, N, rounding_mode="floor") if complete else \
                torch.repeat_interleave(torch.arange(n, device=device), crow.diff().to(torch.int64))[order]
        crow_t = torch.zeros(n_cols + 1, dtype=itype, device=device)
        crow_t[1:] = torch.cumsum(torch.bincount(col, minlength=n_cols), 0)
        val_t = val if dtype_t == dtype else _ones_values(ones, col.numel(), dtype_t, device)
        st = torch.sparse_csr_tensor(crow_t, row_id.to(itype), val_t, (n_cols, n), check_invariants=False)
    return s, st


def _csr_pair_entries(crow: np.ndarray, col: np.ndarray, n: int, n_cols: int, dtype: torch.dtype,
                      dtype_t: torch.dtype, itype: torch.dtype, transpose: bool = True,
                      ones: dict | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
    """CSR forms of S (n x n_cols) and S^T from row pointers ``crow`` (n + 1,) and the entries' columns, increasing within a row."""
    col_t = torch.from_numpy(np.ascontiguousarray(col, dtype=np.int64))
    val = _ones_values(ones, col_t.numel(), dtype, torch.device("cpu"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
        s = torch.sparse_csr_tensor(torch.from_numpy(crow.astype(np.int64)).to(itype), col_t.to(itype), val,
                                    (n, n_cols), check_invariants=False)
        if not transpose:
            return s, None
        order = np.argsort(col, kind="stable")  # by column, rows increasing within each
        row_id = np.repeat(np.arange(n, dtype=np.int64), np.diff(crow))[order]
        crow_t = np.zeros(n_cols + 1, dtype=np.int64)
        np.cumsum(np.bincount(col, minlength=n_cols), out=crow_t[1:])
        val_t = val if dtype_t == dtype else _ones_values(ones, col_t.numel(), dtype_t, torch.device("cpu"))
        st = torch.sparse_csr_tensor(torch.from_numpy(crow_t).to(itype), torch.from_numpy(row_id).to(itype), val_t,
                                     (n_cols, n), check_invariants=False)
    return s, st


def _ones_values(store: dict | None, n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``n`` ones: a contiguous prefix of one vector per (dtype, device) kept in ``store`` (new when None).

    Incidence matrices only read their values, so every chunk's S and S^T can share them.
    """
    if store is None:
        return torch.ones(n, dtype=dtype, device=device)
    key = (dtype, device)
    v = store.get(key)
    if v is None or v.numel() < n:
        v = store[key] = torch.ones(n, dtype=dtype, device=device)
    return v[:n]


def _rows_by_variable(codes: torch.Tensor, top: int, obs_count: torch.Tensor | None) -> torch.Tensor:
    """Row numbers sorted by code within each variable, variable after variable (missing rows left out).

    ``codes`` is (rows x N) with -1 for missing and codes up to ``top`` < 65535; ``obs_count`` the
    observed rows of each variable (None: none missing). NumPy sorts 8- and 16-bit keys
    stably by radix; a missing entry becomes the largest key, so it sorts last in its variable
    and is cut off there.
    """
    keys = codes.T.numpy()
    key_dtype = np.uint8 if top < 255 else np.uint16
    keys = np.ascontiguousarray(keys.astype(key_dtype))  # -1 wraps to the largest key
    order = torch.from_numpy(np.argsort(keys, axis=1, kind="stable"))
    if obs_count is None:
        return order.reshape(-1)
    keep = torch.arange(order.shape[1])[None, :] < obs_count.to(torch.int64)[:, None]
    return order[keep]
