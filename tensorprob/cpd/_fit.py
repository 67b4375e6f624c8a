"""``fit_cpd`` / ``fit_cpds``: batched KL-EM fits of CPD joint-PMF models, and the ``CPD`` estimator."""
from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .. import _distributed
from .._config import device_budget, get_config
from .._device import (
    RandomStateLike,
    cpu_thread_cap,
    make_generator,
    resolve_device,
    resolve_dtype,
    seed_from_random_state,
    to_numpy,
)
from .._docstrings import fill_doc
from .._io._passes import SparseChunkError
from ..counting import unique_rows
from ..counting._sparse_rows import SparseCodeRows, unique_sparse_rows
from ..ops import use_triton
from ..ops._incidence import GATHER_SPLIT
from ._em import EMData, EMState, init_kmeanspp, init_random, run_em, unfloor
from ._model import CPDModel
from ._stream import as_chunks, prepare_sparse_stream, prepare_stream
from ._validation import PreparedData, _check_int, _check_weights, _global_weight_scale, prepare_data

_INITS = ("kmeans++", "random")



def _check_options(n_restarts: Any, n_iter_max: Any, tol: Any, alpha: Any, init: Any) -> tuple[int, int, float, float]:
    n_restarts = _check_int("n_restarts", n_restarts, 1)
    n_iter_max = _check_int("n_iter_max", n_iter_max, 0)
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if not (isinstance(alpha, (int, float)) and np.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    if init not in _INITS:
        raise ValueError(f"init must be one of {_INITS}, got {init!r}")
    return n_restarts, n_iter_max, float(tol), float(alpha)


def _fit_prepared(prep: PreparedData, ranks: list[int], W_np: np.ndarray, *, device: torch.device,
                  dtype: torch.dtype, n_restarts: int, n_iter_max: int, tol: float, alpha: float, init: str,
                  random_state: RandomStateLike, callback: Any = None, stacklevel: int = 3,
                  distributed: bool = False, merged: tuple[torch.Tensor, torch.Tensor] | None = None,
                  spill: Any = None) -> list[CPDModel]:
    """Fit every (rank, weight column) of validated data as one batched EM, warning about weak fits.

    ``merged``: the distinct rows and their merged weights when they are known already
    (out-of-core input, :mod:`._stream`); ``W_np`` is then ignored. ``spill``: those rows
    are the spilled ones, mapped from its files (they stay on the CPU; the EM moves one
    block at a time to ``device``).
    """
    rows, W = prep.merge(W_np, device) if merged is None else merged
    seed = seed_from_random_state(random_state)
    n_distinct = rows.shape[0]
    if distributed:
        seed = _distributed.broadcast(seed)  # one start for all ranks, whatever random_state is
        # an upper bound (rows held by several ranks count once per rank): exact only when gathered
        n_distinct = int(_distributed.all_reduce_sum(torch.tensor([float(n_distinct)]))[0])
    if max(ranks) > n_distinct:
        warnings.warn(f"rank {max(ranks)} exceeds the {n_distinct} distinct rows of the data; "
                      "the extra components cannot be identified", UserWarning, stacklevel=stacklevel)
    models = fit_batched(rows, torch.as_tensor(prep.cards), W, ranks, n_restarts=n_restarts, n_iter_max=n_iter_max,
                         tol=tol, alpha=alpha, init=init, seed=seed, dtype=dtype,
                         callback=callback, variable_names=prep.names, target=prep.target, classes=prep.classes,
                         encoder=prep.encoder, distributed=distributed, device=device, spill=spill)
    for model in models:
        dead = int((model.weights <= 0).sum())
        if dead:
            warnings.warn(f"rank-{model.rank} fit: {dead} component(s) lost all their mass and were kept "
                          "with weight 0", UserWarning, stacklevel=stacklevel)
        if not model.converged_ and n_iter_max > 0 and tol > 0:
            hist = model.loglik_history_
            warnings.warn(f"rank-{model.rank} fit did not converge in {n_iter_max} iterations (last relative change "
                          f"{abs(hist[-1] - hist[-2]) / max(abs(hist[-2]), 1e-12):.2e} > tol={tol:g}); "
                          "raise n_iter_max or tol", UserWarning, stacklevel=stacklevel)
    return models


@fill_doc
def fit_cpd(X: Any, rank: int = 20, *, y: Any = None, device: Any = "auto", dtype: Any = None, n_restarts: int = 4,
            n_iter_max: int = 500, tol: float = 1e-6, alpha: float = 0.0, sample_weight: Any = None,
            init: str = "kmeans++", random_state: RandomStateLike = None, cardinalities: Sequence[int] | None = None,
            discretizer: Any = "uniform", n_bins: int = 5, missing_values: Any = None,
            callback: Any = None, distributed: bool = False) -> CPDModel:
    """Fit a nonnegative canonical polyadic decomposition (CPD) model of the joint PMF of categorical data.

    The fit maximizes the (weighted) log-likelihood, i.e. minimizes the Kullback-Leibler (KL)
    divergence from the empirical probability mass function (PMF), by expectation-maximization
    (EM): the updates of Yeredor & Haardt [1]_ and Amiridi et al. [2]_ (Alg. 1), written as
    sparse-dense products with the one-hot incidence matrix of the distinct rows (duplicates
    merged into weights). Missing entries (-1) are marginalized exactly. The restarts run as
    one batched EM.

    Parameters
    ----------
    %(X_stream)s
    rank : int, default=20
        Number of components F. Several ranks: :func:`fit_cpds`.
    %(cpd_y)s
    %(device)s
    %(dtype)s
    %(cpd_em)s
    sample_weight : array-like of shape (n_samples,), optional
        Nonnegative finite row weights (default all 1), relative frequencies: they are rescaled
        to sum to the number of rows of positive weight, so only their ratios matter.
    %(cpd_fit_tail)s
    %(distributed)s

    Returns
    -------
    CPDModel
        One model: with ``n_restarts > 1`` the restart with the best final log-likelihood (the
        first of those equal to it up to rounding).

    Raises
    ------
    TypeError
        ``rank`` is a sequence (use :func:`fit_cpds`) or not an integer.
    ValueError
        Empty data, rank < 1, negative / non-finite weights, a one-class label, mismatched
        lengths, an alphabet above ``max_categories``, CUDA asked for but absent.

    See Also
    --------
    fit_cpds : Several ranks, restarts and weight sets in one batched EM.
    CPD : The scikit-learn estimator around this function.
    CPDModel : The returned model.

    Notes
    -----
    On the CPU the fit runs on ``get_config()["cpu_threads"]`` torch threads (1 by default, as
    the selectors): a fit on all cores waits for a core that another process holds at every
    parallel step; ``config_context(cpu_threads=None)`` keeps torch's own setting. Beyond its
    codes, a fit allocates about ``get_config()["memory_budget"]``.

    %(cpd_references)s

    Examples
    --------
    >>> import tensorprob
    >>> data = tensorprob.datasets.make_latent_class(2000, [3, 4, 2, 5], 3, random_state=0)
    >>> model = tensorprob.fit_cpd(data.X, rank=3, device="cpu", random_state=0)
    >>> model.rank, model.converged_
    (3, True)
    """
    if not isinstance(rank, (int, np.integer)) or isinstance(rank, bool):
        if isinstance(rank, (list, tuple, np.ndarray, range)):
            raise TypeError(f"fit_cpd fits one rank and returns one model; for several ranks {list(rank)!r} use "
                            "tensorprob.fit_cpds(X, ranks=...)")
        raise TypeError(f"rank must be an integer, got {rank!r}")
    if sample_weight is not None and np.ndim(sample_weight) != 1:
        raise ValueError("fit_cpd takes one weight per row (1-D sample_weight); for several weight sets use "
                         "tensorprob.fit_cpds")
    return _fit_cpds(X, [rank], y=y, device=device, dtype=dtype, n_restarts=n_restarts, n_iter_max=n_iter_max,
                     tol=tol, alpha=alpha, sample_weight=sample_weight, init=init, random_state=random_state,
                     cardinalities=cardinalities, discretizer=discretizer, n_bins=n_bins, callback=callback,
                     missing_values=missing_values, distributed=distributed)[0]


@fill_doc
def fit_cpds(X: Any, ranks: Sequence[int] = (20,), *, y: Any = None, device: Any = "auto", dtype: Any = None,
             n_restarts: int = 4, n_iter_max: int = 500, tol: float = 1e-6, alpha: float = 0.0,
             sample_weight: Any = None, init: str = "kmeans++", random_state: RandomStateLike = None,
             cardinalities: Sequence[int] | None = None, discretizer: Any = "uniform", n_bins: int = 5,
             missing_values: Any = None, callback: Any = None, distributed: bool = False) -> list[CPDModel]:
    """Fit several CPD models of the same data (ranks x weight sets, each with restarts) in one batched EM.

    Parameters
    ----------
    %(X_stream)s
    ranks : sequence of int, default=(20,)
        Number of components of each model.
    %(cpd_y)s
    %(device)s
    %(dtype)s
    %(cpd_em)s
    sample_weight : array-like of shape (n_samples,) or (n_samples, K), optional
        Nonnegative finite weights; K columns fit K models per rank (one per weight set, e.g. the
        training folds of a cross-validation). Each column is rescaled to sum to its number of
        positive entries (only the ratios matter; 0/1 weights are kept as they are).
    %(cpd_fit_tail)s
    %(distributed)s

    Returns
    -------
    list of CPDModel
        Ordered rank-major, ``[(r, k) for r in ranks for k in weight sets]``; each the best of
        its ``n_restarts`` starts.

    Raises
    ------
    TypeError, ValueError
        As :func:`fit_cpd`; also an empty ``ranks``.

    See Also
    --------
    fit_cpd : One model.
    select_rank : Chooses the rank by cross-validated classification error.

    Examples
    --------
    >>> import tensorprob
    >>> data = tensorprob.datasets.make_latent_class(2000, [3, 4, 2, 5], 3, random_state=0)
    >>> models = tensorprob.fit_cpds(data.X, ranks=[2, 3], device="cpu", random_state=0)
    >>> [m.rank for m in models]
    [2, 3]
    """
    if isinstance(ranks, (int, np.integer)) or not isinstance(ranks, (list, tuple, np.ndarray, range)):
        raise TypeError(f"ranks must be a sequence of integers, got {ranks!r}")
    return _fit_cpds(X, ranks, y=y, device=device, dtype=dtype, n_restarts=n_restarts, n_iter_max=n_iter_max,
                     tol=tol, alpha=alpha, sample_weight=sample_weight, init=init, random_state=random_state,
                     cardinalities=cardinalities, discretizer=discretizer, n_bins=n_bins, callback=callback,
                     missing_values=missing_values, distributed=distributed)


def _fit_cpds(X: Any, ranks: Sequence[int], *, y: Any, device: Any, dtype: Any, n_restarts: Any, n_iter_max: Any,
              tol: Any, alpha: Any, sample_weight: Any, init: Any, random_state: RandomStateLike,
              cardinalities: Sequence[int] | None, discretizer: Any, n_bins: Any, callback: Any,
              missing_values: Any = None, distributed: bool = False) -> list[CPDModel]:
    """:func:`fit_cpds` after its type check of ``ranks``; warnings point at the caller of the public function."""
    dist_on = _distributed.active(distributed)
    ranks = [_check_int("rank", r, 1) for r in ranks]
    if not ranks:
        raise ValueError("ranks must be a non-empty sequence of ints")
    n_restarts, n_iter_max, tol, alpha = _check_options(n_restarts, n_iter_max, tol, alpha, init)
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    # on the CPU, get_config()["cpu_threads"] torch threads (1 by default), as the selectors: a busy core slows
    # a fit on all cores many-fold; a CUDA device's own budget under memory_budget="auto"
    with cpu_thread_cap(dev), device_budget(dev, dist_on):
        chunks = as_chunks(X)
        if chunks is not None:
            if y is not None or sample_weight is not None:
                raise ValueError("with streamed X (RowChunks, a callable or a Parquet path) the labels and weights come "
                                 "with the chunks, (X, y) or (X, y, sample_weight), or from RowChunks.from_parquet("
                                 "target=...); y and sample_weight must be None")
            try:
                prep, rows, W, spill = prepare_stream(chunks, cardinalities=cardinalities, discretizer=discretizer,
                                                      n_bins=n_bins, missing_values=missing_values, device=dev,
                                                      distributed=dist_on)
            except SparseChunkError:  # their codes stacked in memory, fitted as one sparse X
                prep, sample_weight = prepare_sparse_stream(chunks, cardinalities=cardinalities,
                                                            discretizer=discretizer, n_bins=n_bins,
                                                            missing_values=missing_values, distributed=dist_on)
            else:
                try:
                    return _fit_prepared(prep, ranks, None, device=dev, dtype=dt, n_restarts=n_restarts,
                                         n_iter_max=n_iter_max, tol=tol, alpha=alpha, init=init,
                                         random_state=random_state, callback=callback, stacklevel=4,
                                         distributed=dist_on, merged=(rows, W), spill=spill)
                finally:
                    del rows, W
                    if spill is not None:
                        spill.close()
        else:
            prep = prepare_data(X, y, cardinalities=cardinalities, discretizer=discretizer, n_bins=n_bins,
                                missing_values=missing_values, distributed=dist_on)
            _name_label(prep, y)
        if isinstance(prep.codes, SparseCodeRows) and dev.type != "cpu":
            if device not in ("auto", None):  # the products of the stored entries run on the CPU
                raise ValueError(f"sparse X is fitted on the CPU; device={device!r} was asked for: pass "
                                 "device='cpu' (or 'auto'), or X.toarray() for a CUDA fit")
            dev = torch.device("cpu")
        if dist_on:
            W_np = _distributed.agree(lambda: _check_weights(sample_weight, prep.codes.shape[0], local=True))
            W_np = _global_weight_scale(W_np)
        else:
            W_np = _check_weights(sample_weight, prep.codes.shape[0])
        models = _fit_prepared(prep, ranks, W_np, device=dev, dtype=dt, n_restarts=n_restarts,
                               n_iter_max=n_iter_max, tol=tol, alpha=alpha, init=init, random_state=random_state,
                               callback=callback, stacklevel=4, distributed=dist_on)
        if chunks is not None:
            chunks.n_rows_ = int(prep.codes.shape[0])  # of this process's chunks, as for dense chunks
            chunks.n_distinct_ = int(prep.distinct(torch.device("cpu"))[0].shape[0])
            chunks.spilled_ = False
        return models


def _name_label(prep: PreparedData, y: Any) -> None:
    """Name the label variable after ``y`` when it has a name (a pandas Series), else it stays ``"y"``."""
    name = getattr(y, "name", None)
    if prep.target is None or name is None or isinstance(y, np.ndarray):
        return
    name = str(name)
    if name not in prep.names[: prep.target]:  # a feature of that name keeps it; the label stays "y"
        prep.names[prep.target] = name


def _bytes_per_row(B: int, F: int, itemsize: int, kernel: bool = False) -> int:
    # per row: S @ log A (packed, at most B F) in the working dtype, then the padded L, its
    # exponent and w*r (B F each) in float64, and the packed copy for S^T; the gather kernel
    # adds its slices' partial sums (GATHER_SPLIT more copies of S @ log A)
    return B * F * (itemsize * (1 + (GATHER_SPLIT if kernel else 0)) + 4 * 8) + 64


def _check_request(n_rows: int, D: int, ranks_b: list[int], Fmax: int, itemsize: int) -> None:
    """Refuse, before any work, a batch whose parameters alone exceed the memory budget.

    Row-sized work is chunked to the budget, but the factors of the B models, (D, sum of
    ranks) in the working dtype with about six float64 copies of that size in the
    initialization and the M-step, cannot be; such a request (say rank 10**6 on 400 rows)
    would otherwise allocate for minutes before failing.
    """
    budget = get_config()["memory_budget"]
    need = D * (sum(ranks_b) * (itemsize + 6 * 8) + len(ranks_b) * Fmax * 8)
    if need > budget:
        raise ValueError(f"rank {max(ranks_b)} ({len(ranks_b)} model(s)) on {n_rows} distinct rows and {D} "
                         f"(variable, value) columns: the parameters alone need about {need / 2**20:.0f} MiB, "
                         f"above memory_budget={budget / 2**20:.0f} MiB; a rank above the number of distinct rows "
                         "cannot be identified anyway: lower the rank (or raise memory_budget with "
                         "tensorprob.config_context)")


def _incidence_budget(n_rows: int, D: int, ranks_b: list[int], Fmax: int, itemsize: int, kmeans: bool) -> int:
    """The part of ``memory_budget`` that the EM's incidence sizes its cache and row chunks to.

    The budget bounds what a fit allocates beyond its codes. The parameters and M-step statistics
    (as in :func:`_check_request`) and the k-means++ seeding's per-row state (about three float64
    values per distinct row and model) come off it first; the incidence gets half of the rest, since
    its baseline counting pass and the temporaries of building a chunk take up to about twice what
    it sizes for. Never below a quarter of the budget: where the parameters and the seeding's state
    alone exceed the budget, smaller chunks would only slow the fit down.
    """
    budget = get_config()["memory_budget"]
    B = len(ranks_b)
    fixed = D * (sum(ranks_b) * (itemsize + 6 * 8) + B * Fmax * 8) + (n_rows * B * 24 if kmeans else 0)
    return max(2**16, budget // 4, (budget - fixed) // 2)


def _global_rows(rows: torch.Tensor, W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The distinct rows of all ranks with their summed weights, on every rank (one object all-gather).

    Each rank sends its own distinct rows and merged weights; the union is merged again, so
    the result is, row for row, what the single-process merge of all the data gives (rows
    sorted the same way, weights summed), and the k-means++ start drawn from it is the
    single-process start. It costs every rank the memory of the global distinct rows as
    compact codes (init="random" needs none of it).
    """
    if isinstance(rows, SparseCodeRows):  # the stored entries travel, merged as the single process merges them
        parts = _distributed.all_gather((rows.indptr, rows.cols, rows.codes, to_numpy(W)))
        every = SparseCodeRows.concat([SparseCodeRows(p[0], p[1], p[2], rows.base) for p in parts])
        g_rows, g_W, _ = unique_sparse_rows(every, np.concatenate([p[3] for p in parts]))
        return g_rows, torch.from_numpy(g_W.reshape(g_rows.shape[0], -1))
    parts = _distributed.all_gather((to_numpy(rows), to_numpy(W)))
    codes = torch.as_tensor(np.concatenate([p[0] for p in parts]), device=rows.device)
    weights = torch.as_tensor(np.concatenate([p[1] for p in parts]), dtype=torch.float64, device=rows.device)
    g_rows, g_W, _ = unique_rows(codes, weights)
    return g_rows, g_W.reshape(g_rows.shape[0], -1)


def best_restart(final: np.ndarray, dtype: Any = None) -> int:
    """Index of the start to keep among final mean log-likelihoods ``final`` of one model.

    Starts that end within a relative margin of the best count as equal and the first of them is
    kept: two starts that reach the same optimum differ only by rounding, which must not decide
    the pick (a chunked or distributed fit would keep another start than the in-memory one). The
    margin is ``eps ** (2/3)`` of the working dtype (3.7e-11 in float64, 2.5e-5 in float32): far
    above summation rounding, far below gaps between distinct optima. (Not the fit's ``tol``:
    starts that stop within ``tol`` of each other can be different optima.) ``dtype``: the fit's
    working dtype (a torch or NumPy dtype), whose rounding the log-likelihoods carry even when
    they are summed in float64; default ``final``'s own.
    """
    final = np.asarray(final)
    finite = np.isfinite(final)
    if not finite.any():
        return 0
    eps = torch.finfo(dtype).eps if isinstance(dtype, torch.dtype) else np.finfo(dtype or final.dtype).eps
    margin = float(eps) ** (2 / 3)
    top = final[finite].max()
    return int(np.flatnonzero(finite & (final >= top - margin * abs(top)))[0])


def _on_capped_threads(fit: Any) -> Any:
    """Run ``fit(rows, ..., device=...)`` on ``get_config()["cpu_threads"]`` torch threads when it runs on the CPU.

    For the callers that reach the EM directly (``select_rank``, GSM-CPD's refits); a nested cap changes nothing.
    """
    @functools.wraps(fit)
    def run(rows: torch.Tensor, *args: Any, device: Any = None, **kwargs: Any) -> Any:
        with cpu_thread_cap(rows.device if device is None else torch.device(device)):
            return fit(rows, *args, device=device, **kwargs)

    return run


@_on_capped_threads
def fit_batched(rows: torch.Tensor, cards: torch.Tensor, W: torch.Tensor, ranks: list[int], *, n_restarts: int,
                n_iter_max: int, tol: float, alpha: float, init: str, seed: int, dtype: torch.dtype,
                callback: Any = None, var_mask: torch.Tensor | None = None, distributed: bool = False,
                device: Any = None, spill: Any = None, **model_kwargs: Any) -> list[CPDModel]:
    """Fit every (rank, weight set, restart) as one batched EM; keep the best restart of each.

    Parameters
    ----------
    rows : (M', N) int64 tensor of distinct codes; W : (M', K) float64 weights.
    var_mask : (N, K) bool tensor, optional
        Variables described by the models of each weight set (default all): a left-out
        variable is marginalized (its factor fixed at 1, ``log 1 = 0``), so models over
        different variable subsets of the same data share one batch (GSM-CPD's ``remodel``
        variant; take the described variables with :meth:`CPDModel.marginal`).
    distributed : bool, default=False
        ``rows`` and ``W`` are this rank's share of the data (an initialized default process
        group): the E-step sums are all-reduced once per iteration, and the k-means++ seeds are
        drawn from the global distinct rows (:func:`_global_rows`), so every rank fits the
        models the single-process call on all the rows fits. ``seed`` must be the same on
        every rank. When any rank's rows are spilled, the seeds are drawn by passes over the
        rows of all ranks instead (:func:`~._em.init_kmeanspp` with ``by_passes=True``).
    device : torch.device, optional
        Where the EM runs (default that of ``rows``).
    spill : _stream.Spill, optional
        ``rows`` and ``W`` are mapped from the files of this spill (CPU tensors): the EM reads
        them a block at a time (at most ``spill.block_rows`` rows, or what the memory budget
        allows) at every pass, and the k-means++ seeding keeps its per-row state in files there.
    **model_kwargs
        ``variable_names``, ``target``, ``classes``, ``encoder`` of the models.

    Returns
    -------
    list of CPDModel
        Per (rank, weight set), rank-major, built from the EM's log parameters with their fit
        diagnostics (``n_iter_``, ``loglik_history_``, ``converged_``).
    """
    device = rows.device if device is None else torch.device(device)
    K = W.shape[1]
    Fmax = max(ranks)
    spilled = spill is not None
    if distributed and init != "random":
        spilled = bool(_distributed.all_reduce_sum(torch.tensor([float(spilled)]))[0] > 0)
        if not spilled:  # k-means++ seeds on the global distinct rows (see _global_rows)
            g_rows, g_W = _global_rows(rows, W)
    spec = [(r, k, j) for r in ranks for k in range(K) for j in range(n_restarts)]
    B = len(spec)
    itemsize = torch.finfo(dtype).bits // 8
    _check_request(int(rows.shape[0]), int(cards.sum()), [r for (r, _, _) in spec], Fmax, itemsize)
    kernel = use_triton(torch.empty(0, device=device))
    per_row = _bytes_per_row(B, Fmax, itemsize, kernel=kernel)
    share = _incidence_budget(int(rows.shape[0]), int(cards.sum()), [r for (r, _, _) in spec], Fmax, itemsize,
                              kmeans=init != "random")
    if distributed and init != "random" and not spilled:
        share = max(2**16, share // 2)  # two incidences at once: the rank's rows and the global rows of the seeding
    data = EMData.build(rows, cards, W, dtype, per_row, distributed=distributed, device=device, spill=spill,
                        kernel=kernel, memory_budget=share)
    D = int(cards.sum())
    gens = [make_generator(int(np.random.SeedSequence([seed, j]).generate_state(1)[0]), device) for (_, _, j) in spec]
    ranks_b = [r for (r, _, _) in spec]
    wset = [k for (_, k, _) in spec]
    vm = None if var_mask is None else var_mask.to(device)[:, wset]  # (N, B)
    if init == "random":
        log_lam, log_A = init_random(D, data.cards, data.var_of_col, ranks_b, Fmax, gens, dtype, device)
    else:
        seed_data = data
        if distributed and not spilled:
            seed_data = EMData.build(g_rows, cards, g_W, dtype, per_row, kernel=kernel, memory_budget=share)
        log_lam, log_A = init_kmeanspp(seed_data, ranks_b, wset, Fmax, gens, dtype, var_mask=vm,
                                       by_passes=spilled)
        del seed_data
    col_keep = None
    if vm is not None:
        col_keep = EMState.pack(vm[data.var_of_col][:, :, None].expand(D, B, Fmax), ranks_b)
    log_A = EMState.pack(log_A, ranks_b)
    if col_keep is not None:
        log_A = log_A.masked_fill(~col_keep, 0.0)
    state = EMState(log_lam, log_A, torch.tensor(wset, device=device), torch.tensor(ranks_b, device=device),
                    col_keep=col_keep)
    run_em(data, state, alpha=alpha, n_iter_max=n_iter_max, tol=tol, callback=callback)
    hist = np.stack(state.history, 0)  # (T+1, B)
    final = hist[-1]
    offs = np.concatenate([[0], np.cumsum(to_numpy(cards))])
    models = []
    for r in ranks:
        for k in range(K):
            idx = [b for b, s in enumerate(spec) if s[0] == r and s[1] == k]
            best = idx[best_restart(final[idx], dtype)]
            n_it = int(state.n_iter[best])
            log_A = unfloor(state.log_A[:, state.model_cols[best]], len(offs) - 1)  # (D, r): log 0 is -inf again
            models.append(CPDModel.from_log_params(
                state.log_lam[best, :r].to(dtype), [log_A[offs[n]:offs[n + 1]].clone() for n in range(len(offs) - 1)],
                n_iter=n_it, loglik_history=hist[: n_it + 1, best].copy(), converged=bool(state.converged[best]),
                **model_kwargs))
    return models
