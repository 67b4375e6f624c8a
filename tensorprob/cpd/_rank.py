"""Rank selection by the CPD classifier's cross-validated error (paper 000, section V)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .. import _distributed
from .._config import device_budget
from .._device import RandomStateLike, resolve_device, resolve_dtype, seed_from_random_state, to_numpy
from .._docstrings import fill_doc
from .._io import is_streamed
from ..counting import Incidence
from ._em import EMState, _log_floor, rank_runs
from ._fit import fit_batched
from ._model import CPDModel
from ._validation import PreparedData, _check_int, prepare_data


@dataclass
class RankSelection:
    """Result of :func:`select_rank`.

    The fields are the constructor's parameters.

    Parameters
    ----------
    best_rank : int
        Rank with the lowest mean validation error (ties: the smallest rank).
    ranks : ndarray of int, shape (n_ranks,)
        The candidate ranks, in the order given.
    errors : ndarray of shape (n_ranks, cv)
        Misclassification rate of the CPD classifier ``argmax_y P(y | x)`` on each held-out fold.
    mean_errors : ndarray of shape (n_ranks,)
        Mean of ``errors`` over the folds.
    train_loglik : ndarray of shape (n_ranks, cv)
        Mean training log-likelihood of each fold's model.
    """

    best_rank: int
    ranks: np.ndarray
    errors: np.ndarray
    mean_errors: np.ndarray
    train_loglik: np.ndarray


@fill_doc
def select_rank(X: Any, y: Any, ranks: Sequence[int] = (5, 10, 15, 20, 30), cv: int = 5, *, device: Any = "auto",
                dtype: Any = None, n_restarts: int = 1, n_iter_max: int = 200, tol: float = 1e-6, alpha: float = 0.0,
                random_state: RandomStateLike = None, cardinalities: Sequence[int] | None = None,
                discretizer: Any = "uniform", n_bins: int = 5, distributed: bool = False) -> RankSelection:
    """Choose the CPD rank by the K-fold validation error of the CPD classifier, in one batched fit.

    For every rank and fold a CPD of (X, y) is fitted on the training part (all rank x fold
    x restart models in one batched EM, folds as per-model sample weights); the held-out
    rows are classified by ``argmax_y P(y | x)`` under the model, also in one batched pass.

    Parameters
    ----------
    %(X_cpd)s
    %(y_labels)s
    ranks : sequence of int, default=(5, 10, 15, 20, 30)
        Candidate ranks (numbers of components).
    cv : int, default=5
        Number of stratified folds (shuffled with ``random_state``).
    %(device)s
    %(dtype)s
    %(n_restarts_rank)s
    n_iter_max : int, default=200
        Largest number of expectation-maximization (EM) iterations (M-steps) per model.
    %(tol)s
    %(alpha)s
    %(cpd_random_state)s
    %(cardinalities)s
    %(discretizer)s
    %(n_bins)s
    %(distributed)s
        The folds are those of the single-process call on the rows concatenated in rank
        order: the label codes (one integer per row) are all-gathered for the split.

    Returns
    -------
    RankSelection
        The best rank and the per-fold errors and training log-likelihoods of every rank.

    Raises
    ------
    ValueError
        Empty ``ranks``, ``cv < 2``, no labels, or a class with fewer than ``cv`` samples.
    TypeError
        ``X`` is streamed input (RowChunks, a callable, a Parquet path): the folds need every
        row's label in memory.
    """
    ranks = [_check_int("ranks entry", r, 1) for r in ranks]
    if not ranks:
        raise ValueError("ranks must not be empty")
    cv = _check_int("cv", cv, 2)
    if is_streamed(X):
        raise TypeError("select_rank takes data in memory, not streamed row chunks (RowChunks, a callable or a "
                        "Parquet path): its stratified folds need the label of every row. Out of core, fit the "
                        "candidate ranks with tensorprob.fit_cpds on training chunks and compare them on held-out "
                        "chunks (CPDModel.predict), or run select_rank on a sample of the rows")
    if y is None:
        raise ValueError("select_rank needs the class labels y")
    dist_on = _distributed.active(distributed)
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    with device_budget(dev, dist_on):  # a CUDA device's own budget under memory_budget="auto"
        prep = prepare_data(X, y, cardinalities=cardinalities, discretizer=discretizer, n_bins=n_bins,
                            distributed=dist_on)
        seed = seed_from_random_state(random_state)
        if dist_on:
            seed = _distributed.broadcast(seed)
        return _select_rank_prepared(prep, ranks, cv, device=dev, dtype=dt,
                                     n_restarts=_check_int("n_restarts", n_restarts, 1),
                                     n_iter_max=_check_int("n_iter_max", n_iter_max, 0), tol=float(tol), alpha=float(alpha),
                                     seed=seed, distributed=dist_on)


def _select_rank_prepared(prep: PreparedData, ranks: list[int], cv: int, *, device: torch.device, dtype: torch.dtype,
                          n_restarts: int, n_iter_max: int, tol: float, alpha: float, seed: int,
                          distributed: bool = False) -> RankSelection:
    """:func:`select_rank` on validated data whose label is variable ``prep.target`` (distinct rows reused)."""
    from sklearn.model_selection import StratifiedKFold

    t = prep.target
    ycodes = prep.codes[:, t]
    lo = 0
    if distributed:  # the split of all the rows (rank order), then this rank's part of it
        every = _distributed.all_gather(np.asarray(ycodes))
        lo = sum(e.size for e in every[:_distributed.rank()])
        ycodes = np.concatenate(every)
    counts = np.bincount(ycodes)
    if counts.min() < cv:
        raise ValueError(f"cv={cv} folds need at least {cv} samples of every class; the smallest class has "
                         f"{int(counts.min())}")
    folds = StratifiedKFold(n_splits=cv, shuffle=True, random_state=seed % 2**32)
    M = ycodes.shape[0]
    train = np.zeros((M, cv))
    for k, (tr, _) in enumerate(folds.split(np.zeros(M), ycodes)):
        train[tr, k] = 1.0
    train = train[lo:lo + prep.codes.shape[0]]
    rows, merged = prep.merge(np.concatenate([train, 1.0 - train], axis=1), device)
    W_train, W_val = merged[:, :cv].contiguous(), merged[:, cv:]
    cards = torch.as_tensor(prep.cards)
    models = fit_batched(rows, cards, W_train, ranks, n_restarts=n_restarts, n_iter_max=n_iter_max, tol=tol,
                         alpha=alpha, init="kmeans++", seed=seed, dtype=dtype, distributed=distributed)
    errors = _batched_validation_error(rows, cards, t, models, W_val, len(ranks), cv, dtype, distributed)
    mean = errors.mean(1)
    best = int(np.flatnonzero(mean == mean.min())[0])
    ll = np.array([m.loglik_history_[-1] for m in models]).reshape(len(ranks), cv)
    return RankSelection(ranks[best], np.asarray(ranks), errors, mean, ll)


def _batched_validation_error(rows: torch.Tensor, cards: torch.Tensor, target: int, models: list[CPDModel],
                              W_val: torch.Tensor, n_ranks: int, cv: int, dtype: torch.dtype,
                              distributed: bool = False) -> np.ndarray:
    """Weighted misclassification rate of every (rank, fold) model on its held-out rows, in one pass."""
    device = rows.device
    B = len(models)
    log_w, log_f = CPDModel.stack(models)  # (B, Fmax), (B, N, Imax, Fmax): straight from the EM, no re-logging
    # (D, B, Fmax) in the incidence's column order; log 0 of a model built by hand becomes the finite floor
    log_A = torch.cat([log_f[:, n, : int(c)] for n, c in enumerate(cards.tolist())], 1).permute(1, 0, 2)
    log_A = log_A.clamp_min(_log_floor(dtype, len(cards))).contiguous()
    log_lam = log_w.to(torch.float64)
    features = rows.clone()
    features[:, target] = -1  # the label is what is predicted: leave it out of the posterior
    off = int(cards[:target].sum())
    A_y = torch.exp(log_A[off:off + int(cards[target])].to(torch.float64))  # (C, B, F)
    fold = torch.arange(B, device=device) % cv
    Wv = W_val[:, fold]  # (M', B)
    wrong = torch.zeros(B, dtype=torch.float64, device=device)
    # the components of every model side by side without padding (P = sum of the ranks columns),
    # and the runs of consecutive models of equal rank, each one (rows, models, rank) block
    ranks_b = [m.rank for m in models]
    log_A = EMState.pack(log_A, ranks_b)  # (D, P)
    inc = Incidence(features, cards, dtype, bytes_per_row=log_A.shape[1] * 8 * 4 + B * int(cards[target]) * 8)
    for start, stop, S, _ in inc.chunks(False):
        Lp = S @ log_A  # (rows, P)
        for b0, b1, r, c0, c1 in rank_runs(ranks_b):
            L = Lp[:, c0:c1].reshape(stop - start, b1 - b0, r).to(torch.float64) + log_lam[None, b0:b1, :r]
            post = torch.softmax(L, dim=2)
            proba = torch.einsum("mbf,cbf->mbc", post, A_y[:, b0:b1, :r])
            pred = proba.argmax(2)
            wrong[b0:b1] += (Wv[start:stop, b0:b1] * (pred != rows[start:stop, target][:, None])).sum(0)
    total = Wv.sum(0)
    if distributed:  # one float64 all-reduce of the errors and held-out weights of every model
        both = _distributed.all_reduce_sum(torch.cat([wrong, total]))
        wrong, total = both[:B], both[B:]
    err = to_numpy(wrong / total)
    return err.reshape(n_ranks, cv)
