"""Batched KL-EM for nonnegative CPD (latent class) models through the incidence matrix.

For B models at once (restarts, ranks padded to the largest with zero-weight components,
and per-model sample weights such as CV folds), with S the (rows x D) one-hot incidence
matrix of the distinct data rows and ``log A`` the (D x B F) stacked log-factors:

    E-step   L = S @ log A + log lambda             (rows x B x F)
             r = softmax_F(L),  loglik = logsumexp_F(L)
    M-step   lambda[b]  = sum_m w[m,b] r[m,b,:] / sum_m w[m,b]
             A[:, b, :] = S^T @ (w[:, b] r[:, b, :]), normalised per variable block

Both products are sparse-dense (torch CSR) with nnz(S) <= rows x N, so an iteration costs
O(rows N B F). Rows are processed in chunks sized to the memory budget. From about a million
entries S is stored relative to each variable's most frequent value (``Incidence(baseline=True)``:
its entries are left out, which on image-like data is most of them) and the products go through
``Incidence.matmul`` / ``matmul_t``, which give the same results (see there for how floors and
small sums stay exact).

Precision. The working dtype (float32 on CUDA) is that of ``log A`` and of the E-step
product ``S @ log A``, the bulk of the work. Everything after it (log-sum-exp,
responsibilities, the M-step product ``S^T @ (w r)``, the updates) runs in float64: in
float32, responsibilities below ~1e-45 underflow to zero, the expected counts they feed
vanish, and since a zero factor entry can never grow again under EM, such a fit measured
on MNIST-5k (rank 20) ended 0.13 nats per sample below the float64 fit after 100
iterations; with float64 statistics the float32 fit tracks the float64 one within 1e-4.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import _distributed
from .._config import config_context, progress_bar
from .._device import to_numpy
from ..counting import Incidence
from ..counting._sparse_rows import SparseCodeRows, SparseIncidence
from ..ops import use_triton

# S relative to each variable's most frequent value (Incidence(baseline=True)) pays from about a
# million entries; below that the extra small operations of an iteration outweigh the sparse
# entries saved (the measurements: docs/development_log.md, "the incidence matrix relative to
# each variable's most frequent value"). CPU only for now: on
# CUDA the E-step runs the gather kernel over all entries anyway, and the M-step's direct sums
# choose their variables on the host (a synchronization per chunk and iteration)
_BASELINE_MIN_ENTRIES = 1 << 20


@dataclass
class EMData:
    """Rows of coded data with per-model weights, and the incidence matrix the passes read.

    The rows are either held in memory (the distinct rows of the data, the usual case) or
    spilled to temporary files by an out-of-core fit (:mod:`._stream`): ``rows`` and
    ``weights`` are then CPU tensors mapped from those files, ``incidence`` builds each block
    of rows on ``device`` at every pass and keeps none, and ``spill`` holds the files (and
    makes the per-row arrays of the k-means++ seeding there). Every pass reads the rows one
    block at a time through :meth:`blocks`, the same way for both.
    """

    rows: torch.Tensor  # (M', N) integer codes (compact dtype), -1 missing
    cards: torch.Tensor  # (N,) int64, on device
    weights: torch.Tensor  # (M', K) float64: K weight sets
    incidence: Incidence
    var_of_col: torch.Tensor  # (D,) int64: variable of each flat column
    totals: torch.Tensor  # (K,) float64: total weight of each weight set (over all ranks when distributed)
    distributed: bool = False  # rows are this rank's share: row sums are all-reduced
    spill: object | None = None  # the files of spilled rows (``_stream.Spill``), None when in memory

    @classmethod
    def build(cls, rows: torch.Tensor, cards: torch.Tensor, weights: torch.Tensor, dtype: torch.dtype,
              bytes_per_row: int, distributed: bool = False, device: torch.device | None = None,
              spill: object | None = None, kernel: bool | None = None, memory_budget: int | None = None) -> EMData:
        """The data of a fit; ``memory_budget``: what the incidence sizes its cache and chunks to (default the budget)."""
        device = rows.device if device is None else torch.device(device)
        if kernel is None:  # the caller's decision when it sized bytes_per_row for it (see _fit)
            kernel = use_triton(torch.empty(0, device=device))
        max_rows = None if spill is None else spill.block_rows
        share = contextlib.nullcontext() if memory_budget is None else config_context(memory_budget=memory_budget)
        if isinstance(rows, SparseCodeRows):  # sparse input: the incidence of the stored entries (CPU, in memory)
            if device.type != "cpu" or spill is not None:
                raise NotImplementedError("sparse rows are fitted on the CPU, in memory")
            with share:
                inc = SparseIncidence(rows, cards, dtype, bytes_per_row=bytes_per_row, dtype_t=torch.float64)
            var = torch.repeat_interleave(torch.arange(cards.numel()), cards.cpu())
            totals = weights.sum(0).cpu()
            if distributed:
                totals = _distributed.all_reduce_sum(totals)
            return cls(rows, cards.cpu(), weights, inc, var, totals, distributed, None)
        with share:  # the incidence reads the budget when it is built (its cache, its chunks, its baseline pass)
            inc = Incidence(rows, cards, dtype, bytes_per_row=bytes_per_row, dtype_t=torch.float64, device=device,
                            max_rows=max_rows, cache=None if spill is None else False, kernel=kernel,
                            baseline=spill is None and device.type == "cpu" and rows.numel() >= _BASELINE_MIN_ENTRIES)
        var = torch.repeat_interleave(torch.arange(cards.numel(), device=device), cards.to(device))
        totals = weights.sum(0).to(device)
        if distributed:
            totals = _distributed.all_reduce_sum(totals)
        return cls(rows, cards.to(device), weights, inc, var, totals, distributed, spill)

    @property
    def device(self) -> torch.device:
        return self.incidence.device

    def blocks(self, weight_set: torch.Tensor, transpose: bool = True, matrices: bool = True):
        """One pass over the rows: ``(start, stop, S, S^T or None, w)`` per block of rows.

        ``w`` (rows, B) float64 on ``device`` holds the block's weights of each model
        (``weight_set`` picks the weight column of each). ``matrices=False``: the same blocks
        without building S (None in its place), for passes that read only codes and weights.
        """
        on_device = self.weights.device == self.device
        ws = weight_set if on_device else weight_set.to(self.weights.device)
        if matrices:
            chunks = self.incidence.chunks(transpose)
        else:
            chunks = ((s, e, None, None) for s, e in self.incidence.ranges)
        for start, stop, S, ST in chunks:
            w = self.weights[start:stop][:, ws]
            yield start, stop, S, ST, (w if on_device else w.to(self.device))

    def block_codes(self, start: int, stop: int) -> torch.Tensor:
        """Codes of rows ``start:stop`` on ``device``."""
        return self.rows[start:stop].to(self.device)

    def observed(self, start: int, stop: int, var_weights: torch.Tensor | None = None) -> torch.Tensor:
        """Observed variables of rows ``start:stop``: (rows,) float64, or (rows, B) weighted by ``var_weights`` (N, B)."""
        if isinstance(self.rows, SparseCodeRows):
            N = self.rows.shape[1]
            miss = self.rows.missing_counts(start, stop, var_weights)
            total = float(N) if var_weights is None else var_weights.to(torch.float64).sum(0)[None, :]
            return (total - miss).to(self.device)
        obs = (self.block_codes(start, stop) >= 0).to(torch.float64)
        return obs.sum(1) if var_weights is None else obs @ var_weights


def rank_runs(ranks: list[int]) -> list[tuple[int, int, int, int, int]]:
    """Runs of consecutive models of equal rank in a packed batch: ``(b0, b1, rank, c0, c1)`` each.

    Models ``b0:b1`` have that rank and own the packed columns ``c0:c1`` (models side by side,
    ``rank`` columns each), which view as a (rows, b1 - b0, rank) block without padding.
    """
    runs: list[tuple[int, int, int, int, int]] = []
    col = 0
    for b, r in enumerate(ranks):
        if runs and runs[-1][2] == r:
            b0, _, _, c0, _ = runs[-1]
            runs[-1] = (b0, b + 1, r, c0, col + r)
        else:
            runs.append((b, b + 1, r, col, col + r))
        col += r
    return runs


@dataclass
class EMState:
    """Parameters and history of B models fitted together.

    The factors of all models are packed side by side without padding, one column per
    (model, component): ``log_A`` is (D, P) with P = sum of the ranks, so the sparse
    products cost exactly the sum of the ranks. The mixing weights are padded, ``log_lam``
    (B, Fmax) with -inf beyond a model's rank; ``packed_pos`` gives the padded position of each
    packed column, and ``runs`` the stretches of consecutive models of equal rank, which the
    E-step handles as one (rows, models, rank) block each (no padding).
    """

    log_lam: torch.Tensor  # (B, Fmax) float64
    log_A: torch.Tensor  # (D, P) working dtype
    weight_set: torch.Tensor  # (B,) index into EMData.weights columns
    ranks: torch.Tensor  # (B,) rank of each model
    history: list = field(default_factory=list)  # per iteration: (B,) float64 mean log-likelihood
    n_iter: np.ndarray | None = None
    converged: np.ndarray | None = None
    col_keep: torch.Tensor | None = None  # (D, P) bool: the model of a column models that variable

    def __post_init__(self) -> None:
        ranks = self.ranks.tolist()
        Fmax = int(self.log_lam.shape[1])
        dev = self.log_lam.device
        self.packed_pos = torch.tensor([b * Fmax + f for b, r in enumerate(ranks) for f in range(r)], device=dev)
        self.col_model = torch.tensor([b for b, r in enumerate(ranks) for _ in range(r)], device=dev)
        starts = np.concatenate([[0], np.cumsum(ranks)])
        self.model_cols = [slice(int(starts[b]), int(starts[b + 1])) for b in range(len(ranks))]
        self.runs = rank_runs(ranks)

    @staticmethod
    def pack(log_A_padded: torch.Tensor, ranks: list[int]) -> torch.Tensor:
        """(D, B, Fmax) padded factors -> (D, P) packed columns."""
        D, B, Fmax = log_A_padded.shape
        pos = torch.tensor([b * Fmax + f for b, r in enumerate(ranks) for f in range(r)], device=log_A_padded.device)
        return log_A_padded.reshape(D, B * Fmax)[:, pos].contiguous()


def _log_floor(dtype: torch.dtype, n_vars: int) -> float:
    """Finite stand-in for log 0, small enough to act as -inf yet safe to sum over all variables."""
    return float(torch.finfo(dtype).min) / (n_vars + 2)


def unfloor(log_A: torch.Tensor, n_vars: int) -> torch.Tensor:
    """``log_A`` with the EM's floors (:func:`_log_floor`) back to ``-inf``: the floors stay inside the fit.

    No log-probability reaches a floor (about -1e306 in float64): every entry at or below it
    stands for a probability of exactly 0.
    """
    floor = float(torch.tensor(_log_floor(log_A.dtype, n_vars), dtype=log_A.dtype))  # as stored in the dtype
    return log_A.masked_fill(log_A <= floor, -torch.inf)


def e_step(data: EMData, state: EMState, *, need_stats: bool):
    """One pass over the rows: mean log-likelihood per model and, if asked, M-step statistics.

    Returns
    -------
    loglik : (B,) float64 tensor
        Weighted mean log-likelihood of each model under its own weight set.
    lam_num : (B, Fmax) float64 tensor or None
    num : (D, P) float64 tensor or None
        ``S^T @ (w r)``: expected counts of every (variable, value) per packed component.
    """
    B, Fmax = state.log_lam.shape
    D, P = state.log_A.shape
    f64 = torch.float64
    dev = state.log_A.device
    ll_sum = torch.zeros(B, dtype=f64, device=dev)
    lam_num = torch.zeros(B, Fmax, dtype=f64, device=dev) if need_stats else None
    num = torch.zeros(D, P, dtype=f64, device=dev) if need_stats else None
    if not data.distributed:
        _e_step_rows(data, state, ll_sum, lam_num, num)
        return ll_sum / data.totals[state.weight_set], lam_num, num
    # this rank's rows, then one float64 all-reduce of every statistic of the iteration (and
    # of a per-rank failure flag, so that an error on one rank stops all of them together)
    err = None
    try:
        _e_step_rows(data, state, ll_sum, lam_num, num)
    except Exception as exc:  # noqa: BLE001 - reported to every rank through the reduced flags
        err = exc
    parts = [ll_sum] + ([lam_num.view(-1), num.view(-1)] if need_stats else [])
    flags = torch.zeros(_distributed.world_size(), dtype=f64, device=dev)
    flags[_distributed.rank()] = float(err is not None)
    buf = _distributed.all_reduce_sum(torch.cat(parts + [flags]))
    _distributed.raise_failed(buf[-flags.numel():], err)
    ll_sum = buf[:B]
    if need_stats:
        lam_num = buf[B:B + B * Fmax].view(B, Fmax)
        num = buf[B + B * Fmax:B + B * Fmax + D * P].view(D, P)
    return ll_sum / data.totals[state.weight_set], lam_num, num


def _e_step_rows(data: EMData, state: EMState, ll_sum: torch.Tensor, lam_num: torch.Tensor | None,
                 num: torch.Tensor | None) -> None:
    """Accumulate the log-likelihood sums and, when given buffers, the M-step statistics of the local rows.

    The rows come one block at a time from :meth:`EMData.blocks`: chunks of the rows in
    memory, or blocks read from the spill files of an out-of-core fit; the sums are the
    same either way, only their blocking differs.
    """
    f64 = torch.float64
    need_stats = lam_num is not None
    inc = data.incidence  # its kernel decision was made once, when the chunks were sized
    floor = float(torch.tensor(_log_floor(state.log_A.dtype, data.cards.numel()), dtype=state.log_A.dtype))
    for start, stop, S, ST, w in data.blocks(state.weight_set, need_stats):
        m = stop - start
        Lp = inc.matmul(S, state.log_A, floor=floor, start=start, stop=stop)  # (m, P)
        # models of equal rank side by side (runs of the batch) share one (m, models, rank) layout:
        # no padding to the largest rank, and their weighted responsibilities are written straight
        # into the packed columns the M-step product reads
        Y = torch.empty(m, Lp.shape[1], dtype=f64, device=Lp.device) if need_stats else None
        for b0, b1, r, c0, c1 in state.runs:
            L = Lp[:, c0:c1].view(m, b1 - b0, r).to(f64) + state.log_lam[None, b0:b1, :r]
            mx = L.amax(dim=2, keepdim=True)  # finite: every model has a component of positive weight
            E = torch.exp(L.sub_(mx))  # (m, models, r), in place of L
            tot = E.sum(dim=2)
            wb = w[:, b0:b1]
            ll_sum[b0:b1] += (wb * (mx[..., 0] + torch.log(tot))).sum(0)
            if need_stats:
                wR = E.mul_((wb / tot)[..., None])  # weighted responsibilities, in place of E
                lam_num[b0:b1, :r] += wR.sum(0)
                Y[:, c0:c1] = wR.view(m, (b1 - b0) * r)
        if need_stats:
            num += inc.matmul_t(ST, Y, start, stop)


def m_step(data: EMData, state: EMState, lam_num: torch.Tensor, num: torch.Tensor, alpha: float,
           active: torch.Tensor) -> None:
    """Update the parameters of the active models in place (inactive ones stay frozen)."""
    D, P = num.shape
    dtype = state.log_A.dtype
    N = data.cards.numel()
    total = data.totals[state.weight_set]  # (B,)
    lam = lam_num / total[:, None]
    comp_alive = lam_num > 0  # (B, Fmax)
    alive_col = comp_alive.view(-1)[state.packed_pos]  # (P,)
    denom = torch.zeros(N, P, dtype=torch.float64, device=num.device).index_add_(0, data.var_of_col, num)
    denom_c = denom[data.var_of_col]  # (D, P)
    if alpha > 0:
        card_c = data.cards[data.var_of_col].to(torch.float64)[:, None]
        A = (num + alpha) / (denom_c + alpha * card_c)
        keep_old = ~alive_col[None, :].expand(D, P)
    else:
        A = num / denom_c.clamp_min(torch.finfo(torch.float64).tiny)
        # a component with no mass, or a variable never observed where the component has
        # mass, keeps its previous column instead of becoming 0/0
        keep_old = denom_c <= 0
    with torch.no_grad():
        logA_new = torch.log(A).clamp_min(_log_floor(dtype, N)).to(dtype)
        logA_new = torch.where(keep_old, state.log_A, logA_new)
        if state.col_keep is not None:  # variables a model leaves out stay marginalized (log 1 = 0)
            logA_new = logA_new.masked_fill(~state.col_keep, 0.0)
        log_lam_new = torch.where(comp_alive, torch.log(lam), torch.full_like(lam, -torch.inf))
        padded = torch.arange(lam.shape[1], device=num.device)[None, :] >= state.ranks[:, None]
        log_lam_new = log_lam_new.masked_fill(padded, -torch.inf)
        act = active.to(num.device)
        state.log_A = torch.where(act[state.col_model][None, :], logA_new, state.log_A)
        state.log_lam = torch.where(act[:, None], log_lam_new, state.log_lam)


def _subset(state: EMState, keep: list[int]) -> EMState:
    """A state holding only the models at positions ``keep`` (padding trimmed to their largest rank)."""
    ranks = state.ranks[keep]
    Fmax = int(ranks.max())
    cols = torch.cat([torch.arange(state.model_cols[b].start, state.model_cols[b].stop) for b in keep])
    cols = cols.to(state.log_A.device)
    return EMState(state.log_lam[keep, :Fmax].clone(), state.log_A[:, cols].clone(), state.weight_set[keep], ranks,
                   col_keep=None if state.col_keep is None else state.col_keep[:, cols])


def _write_back(full: EMState, work: EMState, idx: list[int]) -> None:
    """Copy the parameters of ``work``'s models (full ids ``idx``) into ``full``."""
    for i, b in enumerate(idx):
        full.log_A[:, full.model_cols[b]] = work.log_A[:, work.model_cols[i]]
        full.log_lam[b, : work.log_lam.shape[1]] = work.log_lam[i]


def run_em(data: EMData, state: EMState, *, alpha: float, n_iter_max: int, tol: float,
           callback=None) -> EMState:
    """Iterate EM on all models until each converges or ``n_iter_max`` M-steps are done.

    A model has converged when the relative increase of its mean log-likelihood falls to
    ``tol`` or below; it then leaves the batch (the remaining models are compacted), so a
    batched fit equals the fits run one by one and never costs more than they do.
    ``state.history[t]`` holds the mean log-likelihoods after ``t`` M-steps (a finished
    model's last value is repeated).
    """
    B = state.log_lam.shape[0]
    n_iter = np.zeros(B, dtype=np.int64)
    converged = np.zeros(B, dtype=bool)
    idx = list(range(B))  # full ids of the models in `work`
    work = state
    ll, lam_num, num = e_step(data, work, need_stats=True)
    state.history.append(to_numpy(ll))
    bar = progress_bar(n_iter_max, f"EM ({B} model{'s' if B > 1 else ''})")
    try:
        for it in range(1, n_iter_max + 1):
            bar.update()
            m_step(data, work, lam_num, num, alpha, torch.ones(len(idx), dtype=torch.bool, device=work.log_A.device))
            n_iter[idx] += 1
            ll, lam_num, num = e_step(data, work, need_stats=True)
            prev = state.history[-1]
            ll_np = prev.copy()
            ll_np[idx] = to_numpy(ll)
            state.history.append(ll_np)
            done = np.abs(ll_np[idx] - prev[idx]) <= tol * np.maximum(np.abs(prev[idx]), 1e-12)
            if callback is not None:
                callback(it, ll_np)
            bar.set_postfix_str(f"loglik/sample {float(np.max(ll_np)):.4f}, active {len(idx)}")
            if done.any():
                converged[np.asarray(idx)[done]] = True
                if work is not state:
                    _write_back(state, work, idx)
                keep = [i for i, d in enumerate(done) if not d]
                if not keep:
                    idx = []
                    break
                # statistics already computed for the kept models carry over to the compacted batch
                cols = torch.cat([torch.arange(work.model_cols[i].start, work.model_cols[i].stop) for i in keep])
                work = _subset(work, keep)
                lam_num = lam_num[keep, : work.log_lam.shape[1]]
                num = num[:, cols.to(num.device)]
                idx = [idx[i] for i in keep]
    finally:  # also when interrupted: a bar left on the terminal would share its line with the next output
        _finish(bar)
    if idx and work is not state:
        _write_back(state, work, idx)
    state.n_iter = n_iter
    state.converged = converged
    return state


def _finish(bar) -> None:
    """Close a progress bar at the iteration reached (a converged fit's bar ends full, not at n / n_iter_max)."""
    if getattr(bar, "total", None) is not None and getattr(bar, "n", None) is not None:
        bar.total = bar.n
        bar.refresh()
    bar.close()


def init_random(D: int, cards: torch.Tensor, var_of_col: torch.Tensor, ranks: list[int], F: int,
                gens: list[torch.Generator], dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Random start: factor columns uniform on the simplex (Dirichlet(1)), uniform weights.

    Model b draws from its own generator ``gens[b]``, so a model's start does not depend on
    which other models share the batch.
    """
    B = len(ranks)
    N = int(cards.numel())
    log_A = torch.empty(D, B, F, dtype=dtype, device=device)
    log_lam = torch.full((B, F), -torch.inf, dtype=torch.float64, device=device)
    uniform = -torch.log(cards.to(device, torch.float64))[var_of_col]
    for b, (r, g) in enumerate(zip(ranks, gens)):
        # exponential draws normalised per variable block = Dirichlet(1) columns; only the
        # model's own r columns are drawn, padding columns are uniform (and have weight 0)
        u = torch.rand(D, r, generator=g, dtype=torch.float64, device=device)
        e = -torch.log(u.clamp_min(torch.finfo(torch.float64).tiny))
        s = torch.zeros(N, r, dtype=torch.float64, device=device).index_add_(0, var_of_col, e)
        log_A[:, b, :r] = torch.log(e / s[var_of_col]).to(dtype)
        log_A[:, b, r:] = uniform[:, None].to(dtype)
        log_lam[b, :r] = -float(np.log(r))
    return log_lam, log_A


def init_kmeanspp(data: EMData, ranks: list[int], weight_set: list[int], F: int, gens: list[torch.Generator],
                  dtype: torch.dtype, smoothing: float = 1.0, var_mask: torch.Tensor | None = None,
                  by_passes: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """k-means++-style seeding on the one-hot rows (Hamming distance), then one M-step.

    Seeds are drawn one per step for all models at once: the first with probability
    proportional to the row weights, each next one among ``2 + log F`` candidates drawn
    proportionally to weight x squared Hamming distance to the nearest seed so far, keeping
    the candidate that lowers the total weighted squared distance most (greedy k-means++). Rows are then assigned to their nearest
    seed and the factors are the smoothed (``smoothing`` pseudo-counts) value frequencies
    of each group, so every start is a distinct, data-driven partition.

    Every pass reads the rows block by block (:meth:`EMData.blocks`). The per-row state (the
    best match with a seed so far and the nearest seed) is held in memory, or, for spilled
    rows, in files beside the spill. ``by_passes`` chooses how a seed is drawn: False draws
    with ``torch.multinomial`` from the vector of all the rows' probabilities (rows in
    memory); True draws by inverse transform in passes over the blocks (:func:`_draw_by_passes`),
    with memory bounded by a block, over the rows of all ranks in rank order when the data
    is distributed. Default: True for spilled or distributed rows. Both draw from the same
    distribution but consume the random stream differently, so their seeds differ.
    """
    device = data.device
    f64 = torch.float64
    D = int(data.cards.sum())
    B = len(ranks)
    N = data.cards.numel()
    n_rows = data.rows.shape[0]
    ws = torch.tensor(weight_set, device=device)
    if by_passes is None:
        by_passes = data.spill is not None or data.distributed
    if data.distributed and not by_passes:
        raise ValueError("k-means++ on distributed rows draws its seeds by passes (by_passes=True)")
    # var_mask (N, B): the variables each model describes (default all); distances count only those
    vm = torch.ones(N, B, dtype=torch.bool, device=device) if var_mask is None else var_mask
    vm_f = vm.to(f64)

    def count_obs(start: int, stop: int) -> torch.Tensor:  # (rows, B): observed variables of each model
        return data.observed(start, stop, vm_f)

    if by_passes:
        n_obs_all = W_all = None
        obs_of = count_obs
    else:  # (M', B) each; broadcast views of one column where every model has the same one (no copies)
        if var_mask is None:
            n_obs_all = torch.cat([data.observed(s, e) for s, e in data.incidence.ranges], 0)[:, None].expand(n_rows, B)
        else:
            n_obs_all = torch.cat([count_obs(s, e) for s, e in data.incidence.ranges], 0)
        if len(set(weight_set)) == 1:
            W_all = data.weights[:, weight_set[0]:weight_set[0] + 1].to(device).expand(n_rows, B)
        else:
            W_all = data.weights[:, ws.to(data.weights.device)].to(device)

        def obs_of(start: int, stop: int) -> torch.Tensor:
            return n_obs_all[start:stop]

    best_match = _row_array(data, (n_rows, B), f64, -1.0)  # matches with the nearest seed so far
    nearest = _row_array(data, (n_rows, B), torch.int64, 0)
    trials = [2 + int(np.log(r)) for r in ranks]  # per model, so a start ignores its batch
    cols = torch.arange(B, device=device)
    for f in range(F):
        L = 1 if f == 0 else max(trials)
        live = torch.tensor([f < r for r in ranks], device=device)
        if by_passes:
            def prob(start: int, stop: int, w: torch.Tensor, f: int = f) -> torch.Tensor:
                if f == 0:
                    return w
                return w * (obs_of(start, stop) - _rows_of(best_match, start, stop, device)).clamp_min(0) ** 2

            n_draw = [1 if f == 0 else t for t in trials]
            sf = _draw_by_passes(data, ws, prob, live, n_draw, L, gens)  # (B L, N)
        else:
            p = W_all.clone() if f == 0 else (n_obs_all - best_match).clamp_min_(0).pow_(2).mul_(W_all)
            cand = torch.empty(B, L, dtype=torch.int64, device=device)
            for b in range(B):  # draws per model from its own stream (B is small)
                pb = p[:, b] if f < ranks[b] and float(p[:, b].sum()) > 0 else W_all[:, b]
                n_b = 1 if f == 0 else trials[b]
                cand[b, :n_b] = torch.multinomial(pb / pb.sum(), n_b, replacement=True, generator=gens[b])
                cand[b, n_b:] = cand[b, 0]  # padding repeats a candidate: the argmin is unchanged
            sf = data.incidence.flat(index=cand.reshape(-1))  # (B L, N)
        # matches of every row with every candidate seed: S @ one-hot(candidates), (M', B, L)
        use = (sf >= 0) & vm.T.repeat_interleave(L, 0)  # observed and described by the model
        onehot = torch.zeros(D, B * L, dtype=dtype, device=device)
        onehot[sf.clamp_min(0), torch.arange(B * L, device=device)[:, None].expand_as(sf)] = use.to(dtype)
        # (rows, B, L) only one block at a time: the budget bounds it
        if L > 1:  # greedy k-means++: keep the candidate that lowers the potential most
            potential = torch.zeros(B, L, dtype=f64, device=device)
            for start, stop, S, _, w in data.blocks(ws, False):
                match = data.incidence.matmul(S, onehot, start=start, stop=stop).to(f64).view(stop - start, B, L)
                near = _rows_of(best_match, start, stop, device)
                dist = (obs_of(start, stop)[:, :, None] - torch.maximum(match, near[:, :, None])).clamp_min(0)
                potential += (w[:, :, None] * dist**2).sum(0)  # (B, L)
            if data.distributed:
                potential = _distributed.all_reduce_sum(potential.view(-1)).view(B, L)
            pick = potential.argmin(1)
        else:
            pick = torch.zeros(B, dtype=torch.int64, device=device)
        picked = onehot.view(D, B, L)[:, cols, pick]  # (D, B): the chosen seeds
        for start, stop, S, _, _ in data.blocks(ws, False):
            m_new = data.incidence.matmul(S, picked, start=start, stop=stop).to(f64)  # (rows, B)
            old = _rows_of(best_match, start, stop, device)
            better = (m_new > old) & live[None, :]
            near = torch.where(better, torch.full_like(m_new, f, dtype=torch.int64),
                               _rows_of(nearest, start, stop, device))
            _set_rows(nearest, start, stop, near)
            _set_rows(best_match, start, stop, torch.where(better, m_new, old))
    # responsibilities: hard assignment to nearest seed, one block at a time
    num = torch.zeros(D, B * F, dtype=f64, device=device)
    lam = torch.zeros(B, F, dtype=f64, device=device)
    for start, stop, _, ST, w in data.blocks(ws):
        wR = torch.zeros(stop - start, B, F, dtype=f64, device=device)
        wR.scatter_(2, _rows_of(nearest, start, stop, device)[:, :, None], w[:, :, None])
        lam += wR.sum(0)
        num += data.incidence.matmul_t(ST, wR.view(stop - start, B * F), start, stop)
    if data.distributed:
        buf = _distributed.all_reduce_sum(torch.cat([lam.view(-1), num.view(-1)]))
        lam, num = buf[:B * F].view(B, F), buf[B * F:].view(D, B * F)
    num = num.view(D, B, F) + smoothing
    denom = torch.zeros(N, B, F, dtype=f64, device=device).index_add_(0, data.var_of_col, num)
    log_A = torch.log(num / denom[data.var_of_col]).to(dtype)
    lam = lam + 1e-3
    ranks_t = torch.tensor(ranks, device=device)
    lam = lam.masked_fill(torch.arange(F, device=device)[None, :] >= ranks_t[:, None], 0.0)
    lam = lam / lam.sum(1, keepdim=True)
    return torch.log(lam), log_A


def _row_array(data: EMData, shape: tuple[int, int], dtype: torch.dtype, fill: float) -> torch.Tensor:
    """A per-row array: in memory on the data's device, or a file of the spill for spilled rows."""
    if data.spill is not None:
        return data.spill.array(shape, dtype, fill)
    return torch.full(shape, fill, dtype=dtype, device=data.device)


def _rows_of(arr: torch.Tensor, start: int, stop: int, device: torch.device) -> torch.Tensor:
    return arr[start:stop].to(device)


def _set_rows(arr: torch.Tensor, start: int, stop: int, value: torch.Tensor) -> None:
    arr[start:stop] = value.to(arr.device)


def _draw_by_passes(data: EMData, ws: torch.Tensor, prob, live: torch.Tensor, n_draw: list[int], L: int,
                    gens: list[torch.Generator]) -> torch.Tensor:
    """Rows drawn with probability ``prob`` by inverse transform, in two passes over the blocks.

    Model b draws ``n_draw[b]`` rows from its own generator: ``u * total`` with ``u`` uniform
    in [0, 1) is located in the running sum of ``prob(start, stop, w)[:, b]`` over the rows
    (the rows of all ranks in rank order when the data is distributed), so only one block of
    probabilities is ever in memory. A model past its rank, or whose probabilities are all
    zero, draws by weight. The first pass sums the probabilities, the second locates the
    draws; columns ``n_draw[b]:L`` repeat the first draw.

    Returns
    -------
    int64 tensor of shape (B L, N)
        The flat column indices (-1 missing) of each drawn row, model-major.
    """
    device = data.device
    f64 = torch.float64
    B = len(n_draw)
    sums = torch.zeros(2, B, dtype=f64, device=device)  # this rank's totals of prob and of the weights
    for start, stop, _, _, w in data.blocks(ws, matrices=False):
        sums[0] += prob(start, stop, w).sum(0)
        sums[1] += w.sum(0)
    per_rank = _distributed.all_gather(sums.cpu()) if data.distributed else [sums.cpu()]
    per_rank = torch.stack(per_rank).to(device)  # (R, 2, B)
    me = _distributed.rank() if data.distributed else 0
    use_p = live & (per_rank[:, 0].sum(0) > 0)  # (B,)
    q_rank = torch.where(use_p[None, :], per_rank[:, 0], per_rank[:, 1])  # (R, B) mass of each rank
    offset = torch.cumsum(q_rank, 0) - q_rank  # (R, B) where each rank starts in the running sum
    total = q_rank.sum(0)
    t = torch.empty(B, L, dtype=f64, device=device)
    for b in range(B):
        g = gens[b]
        u = torch.rand(n_draw[b], generator=g, dtype=f64, device=g.device).to(device)
        t[b, :n_draw[b]] = u * total[b]
        t[b, n_draw[b]:] = t[b, 0]
    # the owner of a draw: the last rank of positive mass starting at or before it (the last
    # one also takes a draw that rounding puts at or past its end)
    R = q_rank.shape[0]
    starts_ok = (offset[:, :, None] <= t[None]) & (q_rank[:, :, None] > 0)  # (R, B, L)
    owner = torch.where(starts_ok, torch.arange(R, device=device)[:, None, None], -1).amax(0)  # (B, L)
    mine = owner == me
    found = torch.full((B, L), -1, dtype=torch.int64, device=device)
    last_pos = torch.full((B,), -1, dtype=torch.int64, device=device)  # last row of positive mass here
    if bool(mine.any()):
        c0 = offset[me].clone()
        for start, stop, _, _, w in data.blocks(ws, matrices=False):
            m = stop - start
            if m == 0:
                continue
            q = torch.where(use_p[None, :], prob(start, stop, w), w)  # (m, B)
            cs = c0[None, :] + torch.cumsum(q, 0)
            idx = torch.searchsorted(cs.T.contiguous(), t, right=True)  # (B, L): first row whose sum exceeds
            hit = mine & (found < 0) & (idx < m)
            found = torch.where(hit, start + idx, found)
            pos = q > 0
            has = pos.any(0)
            last = m - 1 - torch.flip(pos, [0]).to(torch.int8).argmax(0)
            last_pos = torch.where(has, start + last, last_pos)
            c0 = cs[-1]
            if not bool((mine & (found < 0)).any()):
                break
        found = torch.where(mine & (found < 0), last_pos[:, None].expand(B, L), found)
    flat = torch.zeros(B * L, data.cards.numel(), dtype=torch.int64, device=device)
    take = mine.reshape(-1)
    if bool(take.any()):
        flat[take] = data.incidence.flat(index=found.reshape(-1)[take]) + 1
    if data.distributed:  # each draw comes from exactly one rank
        flat = _distributed.all_reduce_sum(flat.view(-1).to(f64)).view(B * L, -1).round().to(torch.int64)
    return flat - 1
