"""SPEC_CMI (spectral conditional mutual information, Nguyen et al. 2014): not greedy."""
from __future__ import annotations

import numpy as np
import torch

from .._docstrings import fill_doc
from ._base import CodedSelector
from ._classic import _ClassicSelector
from ._docs import SELECTOR_FRAGMENTS
from ._greedy import lowest_argmax


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
    Ties break to the lowest feature index (entries within the greedy tie tolerance are
    tied). When the top eigenvalue of Q is repeated (identical or constant columns), the
    eigenvector is made unique by projecting the all-ones vector onto the dominant
    eigenspace, so that interchangeable columns get equal entries.

    References
    ----------
    .. [1] Nguyen, X. V., Chan, J., Romano, S. and Bailey, J. (2014). Effective global approaches for
       mutual information based feature selection. KDD 2014, 512-521.

    Examples
    --------
    >>> from tensorprob import SPECCMI
    %(example_xy)s
    >>> sel = SPECCMI(k=2).fit(X, y)
    >>> sel.selected_.tolist(), int(sel.get_support().sum())
    ([4, 1], 2)
    """

    method_name = "spec_cmi"

    __init__ = _ClassicSelector.__init__  # the same parameters as the classic selectors

    _reads_sparse = True  # its tables are the classic selectors' pair tables

    def _select(self, codes, cards, y, n_classes, k, device, dtype):
        return self._spectral(self._selection_data(codes, cards, y, n_classes, device, dtype), k, device, dtype)

    def _select_sparse(self, codes, cards, y, w, n_classes, k, device, dtype):
        data = self._sparse_selection_data(codes, cards, y, w, n_classes, device, dtype)
        try:
            return self._spectral(data, k, device, dtype)
        finally:
            data.stream.close()

    def _spectral(self, data, k, device, dtype):
        N = data.n_features
        Q = torch.empty(N, N, dtype=dtype, device=device)
        for j in range(N):  # one table of all candidates against (x_j, class) per feature j
            Q[:, j] = data.pair_information(j, ("cmi_x_b_given_a",)).cmi_x_b_given_a  # I(X_i; C | X_j)
        Q = 0.5 * (Q + Q.T)
        Q.diagonal().copy_(data.relevance)
        v = _dominant_vector(Q.to(torch.float64))
        k = N if k is None else k
        order = _ordered(v, k)
        self.Q_ = Q.cpu().numpy()
        v = v.cpu().numpy()
        return order, v[order]


def _dominant_vector(Q: torch.Tensor) -> torch.Tensor:
    """The dominant eigenvector of the symmetric Q, made unique (float64).

    With a simple top eigenvalue: its unit eigenvector, signed so that its entries sum to a
    nonnegative value. With a repeated one (within 1e-9 of the spectrum's scale: identical
    or constant columns make Q diagonal or zero) the eigenvector is not unique and ``eigh``
    returns an arbitrary basis vector; then the projection of the all-ones vector onto the
    dominant eigenspace is used (basis-independent: symmetric columns get equal entries,
    which the tie rule breaks to the lowest index).
    """
    evals, evecs = torch.linalg.eigh(Q)
    top = evals[-1]
    scale = float(evals.abs().max()) if evals.numel() else 0.0
    tol = 1e-9 * scale  # relative; a zero spectrum (scale 0) puts every eigenvalue in the top space
    in_top = evals >= top - tol
    v = evecs[:, -1]
    if int(in_top.sum()) > 1 or scale == 0.0:
        U = evecs[:, in_top]
        p = U @ (U.T @ torch.ones(Q.shape[0], dtype=Q.dtype, device=Q.device))
        norm = float(p.norm())
        if norm > 1e-8:
            return p / norm
    return -v if float(v.sum()) < 0 else v


def _ordered(v: torch.Tensor, k: int) -> np.ndarray:
    """The k largest entries of v in decreasing order, ties (the package's rule) to the lowest index."""
    available = torch.ones(v.numel(), dtype=torch.bool, device=v.device)
    order = []
    for _ in range(k):
        j = lowest_argmax(v, available)
        available[j] = False
        order.append(j)
    return np.asarray(order, dtype=np.int64)
