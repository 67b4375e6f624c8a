"""Properties of selected feature sets: agreement of two selections, plug-in I(X_S; Y) from codes."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np


class Agreement(NamedTuple):
    """Result of :func:`selection_agreement`.

    Parameters
    ----------
    common_prefix : int
        How many first picks are identical, in order.
    overlap : float
        ``|A & B| / max(|A|, |B|)``: the shared fraction of the two sets.
    """

    common_prefix: int
    overlap: float


def selection_agreement(a: Sequence[int], b: Sequence[int]) -> Agreement:
    """Agreement of two ordered selections: their common ordered prefix and the overlap of the sets.

    Parameters
    ----------
    a, b : sequence of int
        Selected feature indices, in the order of selection.

    Returns
    -------
    Agreement
        ``common_prefix``: the number of leading positions where both pick the same feature;
        ``overlap``: ``|set(a) & set(b)| / max(len(a), len(b))`` (0 when both are empty).

    Examples
    --------
    >>> from tensorprob.evaluation import selection_agreement
    >>> selection_agreement([3, 1, 4, 5], [3, 1, 5, 9])
    Agreement(common_prefix=2, overlap=0.75)
    """
    a, b = [int(i) for i in a], [int(i) for i in b]
    prefix = 0
    for u, v in zip(a, b):
        if u != v:
            break
        prefix += 1
    return Agreement(prefix, len(set(a) & set(b)) / max(len(a), len(b), 1))


def _row_entropy(codes) -> float:
    """Plug-in entropy (nats) of the empirical law of the rows of a (M, d) integer tensor."""
    import torch

    from ..counting import entropy_of_counts, unique_rows

    if codes.shape[1] == 0:
        return 0.0
    _, counts, _ = unique_rows(codes)  # counts of the distinct rows (the occupied cells only)
    return float(entropy_of_counts(counts.to(torch.float64)[None, :], (1,))[0])


def plugin_mutual_information(codes: Any, y: Any, features: Sequence[int]) -> float:
    """Plug-in estimate of I(X_S; Y) in nats from integer codes.

    I(X_S; Y) = H(X_S) + H(Y) - H(X_S, Y), each entropy computed from the counts of the
    distinct rows (only occupied cells are counted, so the cost does not grow with the number
    of possible cells). With many features nearly every row is its own cell and the estimate
    tends to H(Y): the plug-in estimator's known upward bias.

    Parameters
    ----------
    codes : array-like of int, shape (n_samples, n_features)
        Discrete codes (e.g. ``tensorprob.encode(X).codes``).
    y : array-like of int, shape (n_samples,)
        Class codes.
    features : sequence of int
        The set S (column indices of ``codes``). An empty set gives 0.

    Returns
    -------
    float
        I(X_S; Y) in nats, in ``[0, H(Y)]``.

    References
    ----------
    .. [1] T. M. Cover, J. A. Thomas, *Elements of Information Theory*, 2nd ed., Wiley, 2006, ch. 2.

    Examples
    --------
    >>> import numpy as np
    >>> from tensorprob.evaluation import plugin_mutual_information
    >>> C = np.array([[0, 1], [0, 0], [1, 1], [1, 0]])
    >>> round(plugin_mutual_information(C, [0, 0, 1, 1], [0]) / float(np.log(2)), 6)  # one bit
    1.0
    """
    import torch

    C = torch.as_tensor(np.asarray(codes), dtype=torch.int64)
    yt = torch.as_tensor(np.asarray(y), dtype=torch.int64).reshape(-1, 1)
    if C.ndim != 2 or C.shape[0] != yt.shape[0]:
        raise ValueError(f"codes must be (n_samples, n_features) with n_samples = len(y); got {tuple(C.shape)} "
                         f"and {yt.shape[0]} labels")
    S = [int(s) for s in features]
    if any(s < 0 or s >= C.shape[1] for s in S):
        raise ValueError(f"feature indices must be in [0, {C.shape[1]}), got {S}")
    if not S:
        return 0.0
    XS = C[:, S]
    mi = _row_entropy(XS) + _row_entropy(yt) - _row_entropy(torch.cat([XS, yt], dim=1))
    return max(mi, 0.0)  # rounding can give -1e-16 for independent variables
