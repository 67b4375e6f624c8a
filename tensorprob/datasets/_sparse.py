"""A generator of sparse term-count corpora with planted informative terms (text-like data)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._device import RandomStateLike, seed_from_random_state
from ._dataset import _finish

#: Tokens drawn per block of rows: bounds the generator's temporaries (about 40 bytes a token).
_BLOCK_TOKENS = 1 << 22


def make_sparse_corpus(n_samples: int = 10_000, n_features: int = 20_000, *, nnz_per_row: float = 50.0,
                       n_classes: int = 2, n_informative: int = 20, effect: float = 4.0, zipf_exponent: float = 1.1,
                       binary: bool = False, random_state: RandomStateLike = 0) -> Any:
    """Draw a sparse document-term count matrix with planted informative terms.

    Term frequencies follow Zipf's law: term ``t`` (its rank is ``t + 1``) is drawn with
    probability proportional to ``(t + 1) ** -zipf_exponent``. Each document has a class
    (uniform) and a length (Poisson with mean ``nnz_per_row``, at least 1 token); its tokens
    are drawn independently from its class's term distribution, in which each informative term
    of that class has its weight multiplied by ``effect``. The informative terms are spread
    over the middle of the frequency ranking (between the 1st and the 30th percentile of the
    ranks), one class after another, so that they are neither the most frequent terms nor too
    rare to be seen. Every other term is independent of the class.

    Parameters
    ----------
    n_samples : int, default=10,000
        Documents (rows).
    n_features : int, default=20,000
        Vocabulary size (columns).
    nnz_per_row : float, default=50.0
        Mean number of tokens per document; the stored entries per row are a little fewer
        (repeated terms are summed into one count).
    n_classes : int, default=2
        Classes, with equal priors.
    n_informative : int, default=20
        Planted informative terms, assigned to the classes in turn.
    effect : float, default=4.0
        Factor on an informative term's weight in the documents of its class (> 1).
    zipf_exponent : float, default=1.1
        Exponent of the rank-frequency law (> 0).
    binary : bool, default=False
        Store presence (1) instead of counts.
    random_state : int, numpy.random.Generator or None, default=0
        Seed of the sample.

    Returns
    -------
    Dataset
        ``X`` a ``scipy.sparse.csr_matrix`` of shape (n_samples, n_features), int32 counts
        (or ones) with sorted column indices and no explicit zeros; ``y`` int64 labels;
        ``metadata`` also holds ``informative`` (the planted terms, int64), ``informative_class``
        (the class of each) and the generator's parameters.

    Examples
    --------
    >>> import tensorprob as tp
    >>> d = tp.datasets.make_sparse_corpus(1000, 5000, nnz_per_row=30, n_informative=4, random_state=0)
    >>> d.X.shape, d.X.format, d.metadata["informative"].shape
    ((1000, 5000), 'csr', (4,))
    """
    import scipy.sparse as sp

    n, V, C, K = int(n_samples), int(n_features), int(n_classes), int(n_informative)
    if n < 1 or V < 1:
        raise ValueError(f"n_samples and n_features must be >= 1, got {n_samples} and {n_features}")
    if C < 2:
        raise ValueError(f"a labelled corpus needs n_classes >= 2, got {n_classes}")
    if not 0 <= K <= V:
        raise ValueError(f"n_informative must be between 0 and n_features ({V}), got {n_informative}")
    if not (np.isfinite(nnz_per_row) and nnz_per_row > 0):
        raise ValueError(f"nnz_per_row must be a positive number, got {nnz_per_row!r}")
    if not (np.isfinite(effect) and effect > 1):
        raise ValueError(f"effect must be a number > 1, got {effect!r}")
    if not (np.isfinite(zipf_exponent) and zipf_exponent > 0):
        raise ValueError(f"zipf_exponent must be a positive number, got {zipf_exponent!r}")
    rng = np.random.default_rng(seed_from_random_state(random_state))
    base = np.arange(1, V + 1, dtype=np.float64) ** -float(zipf_exponent)
    # the planted terms: evenly spaced over the middle of the ranking, classes in turn
    lo, hi = min(V - 1, V // 100), max(min(V - 1, (3 * V) // 10), min(V - 1, V // 100))
    informative = np.unique(np.linspace(lo, hi, K).round().astype(np.int64)) if K else np.empty(0, np.int64)
    while informative.size < K:  # a vocabulary too small for distinct spacing: fill from the unused terms
        rest = np.setdiff1d(np.arange(V), informative)
        informative = np.sort(np.concatenate([informative, rest[:K - informative.size]]))
    informative_class = np.arange(K, dtype=np.int64) % C
    cdfs = []
    for c in range(C):
        w = base.copy()
        w[informative[informative_class == c]] *= float(effect)
        cdf = np.cumsum(w)
        cdfs.append(cdf / cdf[-1])
    y = rng.integers(0, C, n).astype(np.int64)
    lengths = np.maximum(rng.poisson(float(nnz_per_row), n), 1).astype(np.int64)
    indptr = np.zeros(n + 1, dtype=np.int64)
    indices, data = [], []
    start = 0
    while start < n:  # blocks of rows of about _BLOCK_TOKENS tokens
        ends = np.searchsorted(np.cumsum(lengths[start:]), _BLOCK_TOKENS, side="right")
        stop = min(n, start + max(1, int(ends)))
        L = lengths[start:stop]
        row = np.repeat(np.arange(stop - start, dtype=np.int64), L)
        cls = y[start:stop][row]
        u = rng.random(row.size)
        col = np.empty(row.size, dtype=np.int64)
        for c in range(C):
            hit = cls == c
            col[hit] = np.searchsorted(cdfs[c], u[hit], side="right")
        np.minimum(col, V - 1, out=col)  # a draw of exactly 1.0 after rounding
        key, counts = np.unique(row * V + col, return_counts=True)
        r = key // V
        indices.append((key - r * V).astype(np.int32))
        data.append(np.ones(counts.size, dtype=np.int32) if binary else counts.astype(np.int32))
        indptr[start + 1:stop + 1] = indptr[start] + np.cumsum(np.bincount(r, minlength=stop - start))
        start = stop
    X = sp.csr_matrix((np.concatenate(data), np.concatenate(indices), indptr), shape=(n, V))
    X.has_sorted_indices = True
    desc = (f"sparse Zipf corpus {n} x {V} (exponent {zipf_exponent}), about {nnz_per_row} tokens a row, "
            f"{C} classes, {K} planted terms (effect {effect})")
    meta = {"description": desc, "feature_names": [f"t{j}" for j in range(V)], "informative": informative,
            "informative_class": informative_class, "effect": float(effect), "zipf_exponent": float(zipf_exponent),
            "nnz_per_row": float(nnz_per_row), "binary": bool(binary)}
    return _finish(X, y, meta, name=f"sparse-corpus-{n}x{V}", source="planted", as_frame=False)
