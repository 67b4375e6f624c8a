"""SPEC_CMI (spectral conditional mutual information, Nguyen et al. 2014): not greedy."""
from __future__ import annotations

import numpy as np
import torch

from .._docstrings import fill_doc
from ._base import CodedSelector
from ._classic import _ClassicSelector
from ._docs import SELECTOR_FRAGMENTS


@fill_doc(**SELECTOR_FRAGMENTS)
class SPECCMI(CodedSelector):
    """SPEC_CMI (spectral relaxation of the conditional mutual information criterion) feature selection.

    ``Q[i, i] = I(X_i; C)``, ``Q[i, j] = (I(X_i; C | X_j) + I(X_j; C | X_i)) / 2``; the k
    features with the largest entries of the dominant eigenvector of Q (sign chosen so that
    its entries sum to a nonnegative value) are selected, in decreasing order.

    Parameters
    ----------
    %(k)s
    %(coded_params)s

    Attributes
    ----------
    selected_ : ndarray of int
        Selected features, largest eigenvector entry first.
    scores_ : ndarray of float
        The eigenvector entries of the selected features.
    Q_ : ndarray of shape (n_features, n_features)
        The matrix of the relaxed quadratic program.
    %(coded_attributes)s

    See Also
    --------
    CMIM : The greedy criterion with the same conditional informations.

    Notes
    -----
    Q costs one (candidate, x_j, class) table per feature j: O(N) bincounts over M x N codes.
    Ties break to the lowest feature index.

    References
    ----------
    .. [1] Nguyen, X. V., Chan, J., Romano, S. and Bailey, J. (2014). Effective global approaches for
       mutual information based feature selection. KDD 2014, 512-521.

    Examples
    --------
    >>> from tensorprob import SPECCMI
    %(example_xy)s
    >>> SPECCMI(k=2).fit(X, y).selected_.tolist()
    [4, 1]
    """

    method_name = "spec_cmi"

    __init__ = _ClassicSelector.__init__  # the same parameters as the classic selectors

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        data = self._selection_data(codes, cards, y, n_classes, device, dtype)
        N = data.n_features
        Q = torch.empty(N, N, dtype=dtype, device=device)
        for j in range(N):  # one table of all candidates against (x_j, class) per feature j
            Q[:, j] = data.pair_information(j).cmi_x_b_given_a  # I(X_i; C | X_j)
        Q = 0.5 * (Q + Q.T)
        Q.diagonal().copy_(data.relevance)
        _, evecs = torch.linalg.eigh(Q.to(torch.float64))
        v = evecs[:, -1]
        if float(v.sum()) < 0:
            v = -v
        v = v.cpu().numpy()
        order = np.argsort(-v, kind="stable")
        k = N if k is None else k
        self.Q_ = Q.cpu().numpy()
        return order[:k], v[order[:k]]
