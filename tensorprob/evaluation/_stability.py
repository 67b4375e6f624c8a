"""Stability of feature selection over repeated runs: Nogueira's Φ with its confidence interval, Kuncheva's index.

A run of a selector on one resampling of the data gives a feature set S_i; M runs give M sets
over the same d features. They are passed either as an (M, d) binary matrix Z (``Z[i, f] = 1``
when run i selected feature f) or as M lists of feature indices with ``n_features=d`` (the
``selected_`` arrays of fitted selectors, stacked into an (M, k) array or kept as ragged lists).

References
----------
.. [Nog18] S. Nogueira, K. Sechidis, G. Brown, "On the stability of feature selection algorithms",
   JMLR 18(174), 2018.
.. [Kun07] L. I. Kuncheva, "A stability index for feature selection", Proc. 25th IASTED
   International Multi-Conference on Artificial Intelligence and Applications, 2007.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np


class Stability(NamedTuple):
    """Result of :func:`stability_index`.

    Parameters
    ----------
    estimate : float
        The estimate Φ̂ of the stability (1: identical selections; about 0: selections no more alike
        than random ones of the same sizes; negative values are possible).
    variance : float
        The estimate of the variance of Φ̂ (0 when every selection contributes alike, e.g.
        identical selections).
    lower : float
        Lower end of the (1 - alpha) confidence interval ``estimate ± z_(1-alpha/2) sqrt(variance)``.
    upper : float
        Upper end of that interval (neither end is clipped to [-1, 1]).
    """

    estimate: float
    variance: float
    lower: float
    upper: float


def _as_numpy(x: Any) -> Any:
    """A torch tensor (on any device) as a NumPy array; anything else unchanged."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        return x.detach().cpu().numpy()
    return x


def _integral(values: np.ndarray, what: str) -> np.ndarray:
    """``values`` as int64 when they are whole numbers (integer, or float with integral values)."""
    if values.size == 0:
        return values.astype(np.int64)
    if np.issubdtype(values.dtype, np.integer):
        return values.astype(np.int64)
    if np.issubdtype(values.dtype, np.floating) and np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        return values.astype(np.int64)
    raise ValueError(f"{what} must be integer feature indices, got values of dtype {values.dtype}")


def _selection_matrix(selections: Any, n_features: int | None) -> np.ndarray:
    """The (M, d) 0/1 float64 matrix of ``selections`` (binary matrix, or index lists with ``n_features``)."""
    selections = _as_numpy(selections)
    if n_features is None:
        try:
            Z = np.asarray(selections)
        except ValueError as exc:  # ragged nested lists
            raise ValueError("selections of different sizes must be given as index lists with n_features=d; "
                             "without n_features a rectangular (M, d) binary matrix is expected") from exc
        if Z.ndim != 2:
            raise ValueError(f"the binary selection matrix must be 2-D of shape (M, d), got shape {Z.shape}; "
                             "pass n_features=d for index lists")
        if Z.dtype == bool:
            return Z.astype(np.float64)
        if not (np.issubdtype(Z.dtype, np.number) and np.all((Z == 0) | (Z == 1))):
            raise ValueError("the selection matrix must be binary (entries 0/1 or bool); for lists of selected "
                             "feature indices pass n_features=d")
        return Z.astype(np.float64)

    try:
        d = operator.index(n_features)
    except TypeError as exc:
        raise ValueError(f"n_features must be an int, got {n_features!r}") from exc
    if d < 1:
        raise ValueError(f"n_features must be at least 1, got {d}")
    if isinstance(selections, np.ndarray) and selections.ndim == 2:  # a stacked (M, k) array: no per-row work
        M, k = selections.shape
        cols = _integral(selections.reshape(-1), "selections")
        lengths = np.full(M, k, dtype=np.int64)
    else:
        rows = [np.asarray(_as_numpy(s)).reshape(-1) for s in selections]
        M = len(rows)
        lengths = np.array([r.size for r in rows], dtype=np.int64)
        cols = _integral(np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64), "selections")
    bad = (cols < 0) | (cols >= d)
    if bad.any():
        raise ValueError(f"feature indices must be in [0, {d}) (n_features={d}), got {cols[bad][0]}")
    counts = np.zeros((M, d), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(M), lengths), cols), 1)
    dup = counts > 1
    if dup.any():
        i, f = np.argwhere(dup)[0]
        raise ValueError(f"selection {i} contains feature {f} more than once (duplicate indices)")
    return counts.astype(np.float64)


def selection_frequencies(selections: Any, n_features: int | None = None) -> np.ndarray:
    """Fraction of the selections that contain each feature.

    Parameters
    ----------
    selections : array-like of shape (M, d) or sequence of M sequences of int
        Binary selection matrix (``selections[i, f] = 1`` when selection i contains feature f), or,
        with ``n_features``, the selected feature indices of each selection (sizes may differ).
    n_features : int, optional
        The number d of features; required for index lists, left out for a binary matrix.

    Returns
    -------
    numpy.ndarray of shape (d,)
        ``p_f = c_f / M`` (float64), with ``c_f`` the number of selections containing feature f.

    Raises
    ------
    ValueError
        When there is no selection, the matrix is not binary, or an index is out of range or
        repeated within a selection.

    Examples
    --------
    >>> from tensorprob.evaluation import selection_frequencies
    >>> selection_frequencies([[0, 1], [0, 2], [0, 1]], n_features=4).round(4).tolist()
    [1.0, 0.6667, 0.3333, 0.0]
    """
    Z = _selection_matrix(selections, n_features)
    if Z.shape[0] == 0:
        raise ValueError("at least one selection is needed")
    return Z.mean(axis=0)


def stability_index(selections: Any, n_features: int | None = None, *, alpha: float = 0.05) -> Stability:
    """Nogueira-Sechidis-Brown stability Φ̂ of M feature selections, its variance and confidence interval.

    Parameters
    ----------
    selections : array-like of shape (M, d) or sequence of M sequences of int
        Binary selection matrix Z (``Z[i, f] = 1`` when selection i contains feature f), or, with
        ``n_features``, the selected feature indices of each selection (e.g. the ``selected_``
        arrays of M fitted selectors; sizes may differ, order is ignored).
    n_features : int, optional
        The number d of features; required for index lists, left out for a binary matrix.
    alpha : float, default=0.05
        The confidence interval has level 1 - alpha (two-sided, normal quantile).

    Returns
    -------
    Stability
        ``estimate`` Φ̂, ``variance`` (its estimated variance), and ``lower``, ``upper``: the
        approximate (1 - alpha) confidence interval for the population stability.

    Raises
    ------
    ValueError
        For fewer than 2 selections; when every selection is empty or every selection holds all d
        features (Φ is undefined: its denominator is 0); for a non-binary matrix; for an index out
        of ``[0, n_features)`` or repeated within a selection; for alpha outside (0, 1).

    See Also
    --------
    kuncheva_index : The average pairwise index that Φ̂ equals when all selections have one size.

    Notes
    -----
    With M selections of d features, ``k_i`` the size of selection i, ``k̄ = mean_i k_i``,
    ``p̂_f`` the fraction of selections containing feature f, and
    ``s_f² = M / (M - 1) · p̂_f (1 - p̂_f)`` the unbiased sample variance of column f of Z,
    the estimator of [1]_ is::

        Φ̂ = 1 - mean_f s_f² / ( k̄/d · (1 - k̄/d) )

    The numerator is the mean variance of the per-feature selection indicators; the denominator
    is its expected value when every feature enters every selection independently with
    probability k̄/d (selections drawn at random, of average size k̄), so Φ̂ is about 0 for random
    selections and 1 for identical ones. It is defined whenever ``0 < k̄ < d``. When every k_i equals k it is exactly the average over all
    pairs of Kuncheva's index (:func:`kuncheva_index`).

    Variance and interval ([1]_, the asymptotic normality of Φ̂ as M grows and its Corollary 9):
    with ``D = k̄/d · (1 - k̄/d)``, each selection contributes::

        φ_i = ( (1/d) Σ_f Z[i, f] p̂_f - k_i k̄ / d² + Φ̂/2 · (2 k_i k̄ / d² - k_i/d - k̄/d + 1) ) / D

    and ``variance = 4 / M² · Σ_i (φ_i - mean_j φ_j)²``; the interval is
    ``Φ̂ ± z_(1-alpha/2) · sqrt(variance)``. Up to terms that do not depend on i, ``2 φ_i`` is the
    delta-method influence of selection i on Φ̂ (Φ̂ is a smooth function of the U-statistic
    mean_f s_f² and of the mean k̄), so the variance is that of a sample mean of the influences;
    it is a large-M approximation, and the interval is too narrow for small M (in a simulation with
    d = 20, a nominal 95% interval covered the population Φ 87% of the time at M = 10, 93% at
    M = 30, 94% at M = 100).

    References
    ----------
    .. [1] S. Nogueira, K. Sechidis, G. Brown, "On the stability of feature selection algorithms",
       JMLR 18(174), 2018.

    Examples
    --------
    Three selections of 2 out of 4 features; feature 0 is always selected:

    >>> from tensorprob.evaluation import stability_index
    >>> res = stability_index([[0, 1], [0, 2], [1, 0]], n_features=4)
    >>> round(res.estimate, 4), round(res.variance, 4)  # 1/3 and 8/243
    (0.3333, 0.0329)
    >>> Z = [[1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 0]]  # the same selections as a binary matrix
    >>> stability_index(Z) == res
    True
    """
    a = float(alpha)
    if not 0.0 < a < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    Z = _selection_matrix(selections, n_features)
    M, d = Z.shape
    if M < 2:
        raise ValueError(f"the stability needs at least 2 selections, got {M}")
    k = Z.sum(axis=1)
    kbar = float(k.mean())
    if kbar == 0.0 or kbar == d:
        which = "empty" if kbar == 0.0 else f"full (all {d} features)"
        raise ValueError(f"every selection is {which}: the stability is undefined (k̄/d · (1 - k̄/d) = 0)")
    p = Z.mean(axis=0)
    q = kbar / d
    denom = q * (1.0 - q)
    mean_s2 = M / (M - 1) * float(np.mean(p * (1.0 - p)))
    phi_hat = 1.0 - mean_s2 / denom
    phi = ((Z @ p) / d - k * kbar / d**2 + phi_hat / 2 * (2 * k * kbar / d**2 - k / d - q + 1.0)) / denom
    variance = 4.0 / M**2 * float(np.sum((phi - phi.mean()) ** 2))
    from scipy.stats import norm

    half = float(norm.ppf(1.0 - a / 2)) * np.sqrt(variance)
    return Stability(phi_hat, variance, float(phi_hat - half), float(phi_hat + half))


def kuncheva_index(selections: Any, n_features: int | None = None) -> float:
    """Kuncheva's consistency index averaged over all pairs of M selections of one size k.

    Parameters
    ----------
    selections : array-like of shape (M, d) or sequence of M sequences of int
        Binary selection matrix (``selections[i, f] = 1`` when selection i contains feature f), or,
        with ``n_features``, the selected feature indices of each selection (e.g. an (M, k) array
        of ``selected_``; order is ignored).
    n_features : int, optional
        The number d of features; required for index lists, left out for a binary matrix.

    Returns
    -------
    float
        ``2 / (M (M - 1)) Σ_{i<j} (r_ij d - k²) / (k (d - k))``, with ``r_ij = |S_i ∩ S_j|``: 1
        for identical selections, 0 on average for selections drawn at random, in [-1, 1].

    Raises
    ------
    ValueError
        For fewer than 2 selections, selections of different sizes, k = 0 or k = d (the index is
        undefined), and the input errors of :func:`stability_index`.

    See Also
    --------
    stability_index : Equal to this average for selections of one size, and defined for any sizes.

    Notes
    -----
    The pairwise index of [1]_ is ``(r d - k²) / (k (d - k))``: the overlap r corrected for the
    overlap k²/d expected by chance, divided by its largest value. It is linear in r, so the
    average over pairs only needs the mean overlap; with ``c_f`` the number of selections that
    contain feature f, ``Σ_{i<j} r_ij = (Σ_f c_f² - Σ_f c_f) / 2`` (each feature counted once per
    pair of selections that share it), which needs no loop over pairs.

    References
    ----------
    .. [1] L. I. Kuncheva, "A stability index for feature selection", Proc. 25th IASTED International
       Multi-Conference on Artificial Intelligence and Applications, 2007.

    Examples
    --------
    Pairwise overlaps 1, 2, 1 give indices 0, 1, 0 (d = 4, k = 2):

    >>> from tensorprob.evaluation import kuncheva_index
    >>> round(kuncheva_index([[0, 1], [0, 2], [1, 0]], n_features=4), 4)
    0.3333
    """
    Z = _selection_matrix(selections, n_features)
    M, d = Z.shape
    if M < 2:
        raise ValueError(f"Kuncheva's index needs at least 2 selections, got {M}")
    sizes = Z.sum(axis=1)
    if np.any(sizes != sizes[0]):
        raise ValueError(f"Kuncheva's index needs selections of one size; got sizes from {int(sizes.min())} "
                         f"to {int(sizes.max())} (stability_index accepts different sizes)")
    k = float(sizes[0])
    if k == 0.0 or k == d:
        raise ValueError(f"Kuncheva's index is undefined for k = {int(k)} selected out of d = {d} features "
                         "(needs 0 < k < d)")
    c = Z.sum(axis=0)
    pairs = M * (M - 1) / 2
    mean_overlap = float(np.sum(c * c) - np.sum(c)) / 2 / pairs
    return (mean_overlap * d - k * k) / (k * (d - k))


@dataclass(frozen=True)
class StabilitySelection:
    """Result of :func:`stability_selection`.

    Parameters
    ----------
    frequencies : numpy.ndarray of shape (n_features,)
        Fraction of the resamples whose selection of k features contains each feature.
    selections : numpy.ndarray of shape (n_resamples, k)
        The ordered selection on each resample.
    scores : numpy.ndarray of shape (n_resamples, k)
        The criterion value of each pick.
    resamples : numpy.ndarray of shape (n_samples, n_resamples)
        The weight of every row in every resample (0/1 for subsamples, counts for bootstrap).
    stability : Stability
        Nogueira's Φ̂ of the selections, with its variance and confidence interval.
    """

    frequencies: np.ndarray
    selections: np.ndarray
    scores: np.ndarray
    resamples: np.ndarray
    stability: Stability

    def stable_features(self, threshold: float = 0.6) -> np.ndarray:
        """Features selected in at least ``threshold`` of the resamples, most frequent first (ties: lowest index).

        Parameters
        ----------
        threshold : float, default=0.6
            Frequency cut-off in (0, 1] (Meinshausen and Bühlmann use 0.6 to 0.9).

        Returns
        -------
        numpy.ndarray of int
            The indices of those features.
        """
        if not 0.0 < float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        order = np.lexsort((np.arange(self.frequencies.size), -self.frequencies))
        return order[self.frequencies[order] >= threshold]


def resample_weights(n_samples: int, n_resamples: int, *, sample_fraction: float = 0.5, replace: bool = False,
                     random_state: Any = None) -> np.ndarray:
    """Row weights of ``n_resamples`` random resamples, one column each.

    Parameters
    ----------
    n_samples : int
        Rows of the data.
    n_resamples : int
        Number of resamples B.
    sample_fraction : float, default=0.5
        Size of each resample as a fraction of ``n_samples`` (rounded down, at least 1).
    replace : bool, default=False
        False: subsamples without replacement (0/1 weights, Meinshausen and Bühlmann's stability
        selection); True: bootstrap draws with replacement (counts).
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the draws.

    Returns
    -------
    numpy.ndarray of shape (n_samples, n_resamples), float64
        ``W[m, b]``: how many times row m is in resample b.
    """
    if not 0.0 < float(sample_fraction) <= 1.0:
        raise ValueError(f"sample_fraction must be in (0, 1], got {sample_fraction!r}")
    if int(n_resamples) < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples!r}")
    from .._device import seed_from_random_state

    rng = np.random.default_rng(seed_from_random_state(random_state))
    size = max(1, int(np.floor(sample_fraction * n_samples)))
    W = np.zeros((n_samples, int(n_resamples)))
    for b in range(int(n_resamples)):  # B draws (not a hot path: one vectorized draw each)
        if replace:
            W[:, b] = rng.multinomial(size, np.full(n_samples, 1.0 / n_samples))
        else:
            W[rng.choice(n_samples, size, replace=False), b] = 1.0
    return W


def stability_selection(X: Any, y: Any, *, method: str = "jmi", k: int = 50, n_resamples: int = 100,
                        sample_fraction: float = 0.5, replace: bool = False, alpha: float = 0.05,
                        random_state: Any = None, **params: Any) -> StabilitySelection:
    """Select ``k`` features on each of ``n_resamples`` random resamples; frequencies and stability.

    The resamples are one batch (``fit(X, y, resamples=W)``): the count-based criteria, PDA and
    VMI advance all selections together and count their tables in shared passes; other methods
    run one selection per resample. The encoding (bin edges, categories) is learned once from all rows.

    Parameters
    ----------
    X : array-like, tensor or DataFrame of shape (n_samples, n_features)
        Raw or coded data (as for the selectors).
    y : array-like of shape (n_samples,)
        Class labels.
    method : str, default="jmi"
        A method of :func:`tensorprob.available_methods`.
    k : int, default=50
        Features selected per resample.
    n_resamples : int, default=100
        Number of resamples B.
    sample_fraction : float, default=0.5
        Resample size as a fraction of the rows.
    replace : bool, default=False
        Subsample without replacement (False) or bootstrap (True).
    alpha : float, default=0.05
        Level of the stability index's confidence interval.
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the resamples (and of the method, when it takes ``random_state`` and none is
        given in ``params``).
    **params
        Parameters of the method's selector class.

    Returns
    -------
    StabilitySelection
        ``frequencies``, ``selections``, ``scores``, ``resamples`` and ``stability`` (Nogueira's
        index with its interval); ``stable_features(threshold)`` lists the frequent ones.

    References
    ----------
    .. [1] N. Meinshausen, P. Bühlmann, "Stability selection", JRSS B 72(4), 417-473, 2010.
    .. [2] S. Nogueira, K. Sechidis, G. Brown, "On the stability of feature selection
       algorithms", JMLR 18(174), 2018.

    Examples
    --------
    >>> import numpy as np, tensorprob as tp
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 300)
    >>> X = np.c_[y ^ (rng.random(300) < 0.1), rng.integers(0, 2, (300, 5))]
    >>> res = tp.stability_selection(X, y, method="mim", k=1, n_resamples=20, random_state=0)
    >>> res.frequencies[0], res.selections.shape
    (np.float64(1.0), (20, 1))
    """
    from ..selection import get_selector

    cls = get_selector(method)
    if "random_state" in cls._get_param_names() and "random_state" not in params:
        params["random_state"] = random_state
    selector = cls(k=k, **params)
    n_samples = len(y)
    W = resample_weights(n_samples, n_resamples, sample_fraction=sample_fraction, replace=replace,
                         random_state=random_state)
    selector.fit(X, y, resamples=W)
    selections = np.asarray(selector.selected_)
    n_features = int(selector.n_features_in_)
    ragged = [row[row >= 0] for row in selections]  # k="auto" methods may stop at different sizes
    freq = selection_frequencies(ragged, n_features)
    stab = stability_index(ragged, n_features, alpha=alpha) if n_resamples >= 2 else Stability(
        float("nan"), float("nan"), float("nan"), float("nan"))
    return StabilitySelection(freq, selections, np.asarray(selector.scores_), W, stab)
