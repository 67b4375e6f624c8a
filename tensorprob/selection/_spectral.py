"""SPEC_CMI (Nguyen et al. 2014): spectral relaxation of the conditional-MI criterion (not greedy)."""
from __future__ import annotations

import numpy as np
import torch

from ._base import BaseSelector
from ._greedy import SelectionData


class SPECCMI(BaseSelector):
    """SPEC_CMI feature selection.

    ``Q[i, i] = I(X_i; C)``, ``Q[i, j] = (I(X_i; C | X_j) + I(X_j; C | X_i)) / 2``; the k
    features with the largest entries of the dominant eigenvector of Q (sign chosen so that
    its entries sum to a nonnegative value) are selected, in decreasing order.

    Parameters
    ----------
    k : int or "all", default=10
    discretizer, n_bins, base, device, dtype
        As in :class:`tensorprob.MIM`.

    Attributes
    ----------
    selected_ : ndarray of int
    scores_ : ndarray
        The eigenvector entries of the selected features.
    Q_ : ndarray of shape (n_features, n_features)
    n_features_in_, feature_names_in_

    Notes
    -----
    Q costs one (candidate, x_j, class) table per feature j: O(N) bincounts over M x N codes.
    Ties break to the lowest feature index.
    """

    def __init__(self, k=10, *, discretizer="uniform", n_bins=5, base="e", device="auto", dtype=None):
        self.k = k
        self.discretizer = discretizer
        self.n_bins = n_bins
        self.base = base
        self.device = device
        self.dtype = dtype

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        lb = self._log_base()
        data = SelectionData(torch.as_tensor(codes, device=device), int(max(1, cards.max())),
                             torch.as_tensor(y, device=device), n_classes, dtype=dtype, log_base=lb)
        N = data.n_features
        Q = torch.empty(N, N, dtype=dtype, device=device)
        for j in range(N):  # one table of all candidates against (x_j, class) per feature j
            Q[:, j] = data.pair_information(j)["i_xb_a"]  # I(X_i; C | X_j)
        Q = 0.5 * (Q + Q.T)
        Q.diagonal().copy_(data.relevance)
        evals, evecs = torch.linalg.eigh(Q.to(torch.float64))
        v = evecs[:, -1]
        if float(v.sum()) < 0:
            v = -v
        v = v.cpu().numpy()
        order = np.argsort(-v, kind="stable")
        k = N if k is None else k
        self.Q_ = Q.cpu().numpy()
        return order[:k], v[order[:k]]
