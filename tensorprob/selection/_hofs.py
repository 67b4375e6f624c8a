"""HOFS: higher-order feature selection through incremental ICA (Wu, Gupta and Bajaj, "paper 002").

ICA is independent component analysis.

Criterion
---------
Forward search by eq. 25: with the selected features split into subsets (groups)
``Omega^1 .. Omega^K``,

    f_t = argmax_i  I(x_i; y) + sum_j I(X_{Omega^j}; y | x_i),
    I(X_g; y | x_i) = H(y | x_i) - H(y | X_g, x_i).

``I(x_i; y)`` is the plug-in estimate (natural log) on the features min-max scaled to
[0, 1] and cut into bins ``bin_width`` wide (0.2: five bins, as the authors' R package;
the last bin is the narrower remainder when ``1 / bin_width`` is not an integer), from the
contingency tables of :func:`tensorprob.counting.joint_table`.
``H(y | x_i) = H(x_i, y) - H(x_i)`` is, by default (``conditional="ica"``), estimated with
the same incremental ICA as the other term (the ICA of ``(x_i, y)``), so that the
difference of the two conditional entropies is "balanced" (section 4.5) and the estimator
biases of the linear ICA model cancel; ``conditional="plugin"`` uses the plug-in
``H^(x_i, y) - H^(x_i)`` on the bins, as the authors' R package. With the plug-in, every
conditional term carries ``-I^(x_i; y)`` plus the (larger) linear-model entropy, and on the
tree model of section 6.1 it takes the weakest features (x8, x9) right after x1, x2, so the third
subset is opened by a child instead of x3, while the default gives the paper's order on the same
draws (evidence: ``tests/test_hofs_tree.py::test_plugin_conditional_loses_the_tree``). ``H(y | X_g, x_i)`` comes from the incremental ICA of eq. 24:
the unmixing matrix of ``(X_g, x_i, y)`` is lower triangular and only its last row, the
one of y, is learned (infomax likelihood with the logistic CDF, eq. 10-11; see
:mod:`tensorprob.information._ica`), for every candidate i at once. With ``s_y`` the new
source and ``W_yy`` its diagonal weight,

    H(y | X_g, x_i) = H(s_y) - log W_yy = h(r),  r = s_y / W_yy  (the innovation of y).

Sign. Paper eq. 24 writes ``-H(X_g u x_i) + H(X_g u x_i u y)`` in its first line where the
definition of conditional entropy gives ``+H(X_g u x_i) - H(X_g u x_i u y)``; its final
expression ``+ H(s_y) + log a`` therefore has the opposite sign of the correct
``- H(s_y) - log a = - H(s_y) + log W_yy``. tensorprob uses the correct sign (the paper's
would reward candidates that leave y *less* predictable). Evidence: the algebra above (the
paper's own eq. 20 defines the term as ``H(X | x_i) - H(X | x_i, y)``, which is >= 0), and with the
corrected sign the tree model of section 6.1 gives the paper's subsets and order
(``tests/test_hofs_tree.py``).

Discrete labels. y enters the ICA as the number ``y' = (c + U) / C`` for class code c of C
classes, ``U ~ Uniform(0, 1)`` drawn once (seeded): a dithered embedding with density, for
which ``h(y' | .) = H(y | .) - log C`` exactly. So ``H(y | X_g, x_i) = h^(r) + log C`` where
h^ is the corrected m-spacing estimator (consistent), and ``h(r) + log C >= H(y | X_g, x_i)``
for every row (the estimate is an upper bound on the conditional entropy, so each term is a
lower bound of the linear-ICA kind). The ordering of the classes in this embedding is their
sorted order, as in the authors' code, which treats y as a numeric column. Why not y as it is:
``H(s_y)`` and ``log |W|`` in eq. 24 are differential quantities, and the conditional differential
entropy of a label with C values is ``-inf`` (it has no density), so without an embedding with a
density they bear no fixed relation to the Shannon ``H(y | .)`` of eq. 20; the dither gives one,
with the exact offset ``log C``.

Subsets (section 4.7, eq. 26-27). A newly selected feature joins the subset with the
largest mean signed Pearson correlation between it and the subset's members if that
maximum exceeds ``threshold`` (default 0.2, the R package's value); otherwise it starts a
new subset. Eq. 26 prints the covariance; a fixed threshold on it would depend on the features'
units, so tensorprob uses the correlation, as the authors' R package does.

Only the subset that changed at a step needs new ICA rows; the terms of the other subsets
are kept from earlier steps.

Constant features (zero range) carry no information. They are only picked once every
non-constant feature is selected (the R package drops near-constant columns).
"""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from .._device import chunk_rows, make_generator
from .._docstrings import fill_doc
from ..counting import joint_table, table_information
from ..information._ica import fit_last_rows, spacing_entropy
from ._base import RealSelector
from ._docs import SELECTOR_FRAGMENTS
from ._greedy import lowest_argmax

__all__ = ["HOFS", "hofs_select"]


def hofs_select(
    X: torch.Tensor,
    y: torch.Tensor,
    k: int,
    *,
    n_classes: int,
    generator: torch.Generator,
    bin_width: float = 0.2,
    threshold: float = 0.2,
    solver: str = "newton",
    max_iter: int = 50,
    conditional: str = "ica",
    dither: float = 1.0,
    memory_budget: int | None = None,
):
    """HOFS forward search on a real matrix; returns (selected, scores, subsets, relevance).

    Parameters
    ----------
    X : torch.Tensor of shape (N, M), floating
    y : torch.Tensor of shape (N,), int64 class codes ``0 .. n_classes - 1``
    k : int
    n_classes : int
    generator : torch.Generator
        Dither of the label embedding and random starts of the ICA rows.
    bin_width, threshold, solver, max_iter, conditional, memory_budget
        See :class:`HOFS`.
    dither : float
        Width, in class spacings, of the uniform dither of the label embedding (1: the
        full spacing, which gives the tightest bound in our tests; ``log C`` becomes
        ``log C - log dither``).
    """
    N, M = X.shape
    dev, dt = X.device, X.dtype
    lo, hi = X.min(0).values, X.max(0).values
    rng = hi - lo
    constant = rng <= 0
    Xs = torch.where(constant, torch.zeros_like(X), (X - lo) / torch.where(constant, torch.ones_like(rng), rng))
    # Bins ``bin_width`` wide on the scaled columns, the last one the narrower remainder when
    # 1 / bin_width is not an integer. Not encoding.Discretizer: KBinsDiscretizer's edges
    # (linspace in the raw units) round differently from this floor on values that lie on an
    # edge, which changes relevance_ on data with repeated values.
    n_bins = max(1, math.ceil(1.0 / bin_width - 1e-12))
    bins = torch.clamp((Xs / bin_width).floor().long(), 0, n_bins - 1)
    # plug-in terms from the table of (bin of x_i, class) of every feature (float64)
    info = table_information(joint_table(bins, n_bins, None, 1, y, n_classes))
    relevance, h_y_given_x = info.mi_x_b.to(dt), (info.h_xb - info.h_x).to(dt)
    # dithered label embedding in [0, 1) and centred data
    y_num = (y.to(dt) + dither * torch.rand(N, generator=generator, device=dev, dtype=dt)) / n_classes
    Xc = Xs - Xs.mean(0)
    yc = (y_num - y_num.mean()).unsqueeze(1)
    log_c = math.log(n_classes) - math.log(dither)
    std = Xc.std(0)
    Xn = torch.where(std > 0, Xc / torch.where(std > 0, std, torch.ones_like(std)), torch.zeros_like(Xc))

    selected: list[int] = []
    scores: list[float] = []
    subsets: list[list[int]] = []
    group_terms: list[torch.Tensor] = []  # (M,) cached I(X_g; y | x_i) per subset
    available = torch.ones(M, dtype=torch.bool, device=dev)

    def h_lin(members: list[int], cand: torch.Tensor) -> torch.Tensor:
        """ICA estimate of H(y | X_members, x_i) for the candidates ``cand``."""
        out = torch.zeros(cand.numel(), dtype=dt, device=dev)
        p = len(members) + 2
        per = chunk_rows(N * p * 6 * X.element_size(), max(1, cand.numel()), memory_budget)
        base = Xc[:, members]
        for s in range(0, cand.numel(), per):
            c = cand[s:s + per]
            b = c.numel()
            if b == 0:
                continue
            Z = torch.cat([
                base.unsqueeze(0).expand(b, N, len(members)),
                Xc[:, c].T.unsqueeze(2),
                yc.unsqueeze(0).expand(b, N, 1),
            ], dim=2)
            w, _ = fit_last_rows(Z, generator=generator, solver=solver, max_iter=max_iter)
            r = torch.einsum("bnp,bp->bn", Z, w) / w[:, -1:].clamp_min(torch.finfo(w.dtype).tiny)
            out[s:s + b] = spacing_entropy(r) + log_c
        return out

    if conditional == "ica":  # H(y | x_i) from the same ICA family: balanced difference
        h_y_given_x = h_lin([], torch.arange(M, device=dev))

    def group_term(members: list[int]) -> torch.Tensor:
        cand = torch.nonzero(available, as_tuple=False).flatten()
        out = torch.zeros(M, dtype=dt, device=dev)
        out[cand] = h_y_given_x[cand] - h_lin(members, cand)
        return out

    def assign(f: int) -> int:
        """Subset of a new feature by the mean signed correlation (eq. 26-27); -1: a new one."""
        best_g, best_c = -1, -float("inf")
        for gi, members in enumerate(subsets):
            corr = float((Xn[:, members] * Xn[:, f:f + 1]).sum(0).mean() / max(N - 1, 1))
            if corr > best_c:
                best_g, best_c = gi, corr
        return best_g if best_c > threshold else -1

    for t in range(k):
        score = relevance.clone()
        for term in group_terms:
            score = score + term
        eligible = available & ~constant
        if not bool(eligible.any()):
            eligible = available
        f = lowest_argmax(score, eligible)  # the shared tie rule: the lowest index
        selected.append(f)
        scores.append(float(score[f]))
        available[f] = False
        g = assign(f)
        if g >= 0:
            subsets[g].append(f)
        else:
            subsets.append([f])
        if t < k - 1:  # the last pick's ICA terms are never used
            if g >= 0:
                group_terms[g] = group_term(subsets[g])
            else:
                group_terms.append(group_term([f]))
    return selected, scores, subsets, relevance


@fill_doc(**SELECTOR_FRAGMENTS)
class HOFS(RealSelector):
    """HOFS (higher-order feature selection) by incremental ICA (independent component analysis).

    Parameters
    ----------
    %(k)s
    bin_width : float, default=0.2
        Width of the plug-in entropy bins on features min-max scaled to [0, 1].
    threshold : float, default=0.2
        Subset rule C of eq. 26-27: a feature joins the subset with the largest mean signed
        correlation when that exceeds ``threshold``, else starts a new subset.
    solver : {"newton", "gradient"}, default="newton"
        Optimizer of the ICA rows (same maximizer; "gradient" is eq. 11's ascent).
    max_iter : int, default=50
        Newton iterations of the ICA rows.
    conditional : {"ica", "plugin"}, default="ica"
        Estimator of ``H(y | x_i)`` in eq. 24 (see Notes).
    %(device_dtype_random_state)s
        Here it draws the label dither and the ICA starts.
    distributed : bool, default=False
        Not supported: ``distributed=True`` raises a ``ValueError``, because its incremental ICA
        is fitted by Newton or gradient iterations over all samples at once, with a label dither
        drawn per sample; these are not sums of per-rank statistics that one all-reduce could
        combine, so the result would depend on how the rows are split.

    Attributes
    ----------
    selected_ : ndarray of shape (k,)
        Selected feature indices in the order picked.
    scores_ : ndarray of shape (k,)
        Eq. 25 criterion (nats) of each feature when it was picked (the first: I(x; y)).
    subsets_ : list of lists of int
        The feature subsets (section 4.7), in order of creation, members in order of selection.
    relevance_ : ndarray of shape (n_features,)
        Plug-in I(x_i; y) in nats.
    n_iter_ : int
        Number of forward-search steps (= k).
    %(real_attributes)s

    See Also
    --------
    GMI : The other selector on real values.
    JMI : Pairwise plug-in criterion on discretized data.

    Notes
    -----
    See the module docstring of ``tensorprob.selection._hofs`` for the estimator of every
    term, the sign correction of eq. 24 and the handling of the discrete label. Ties break
    to the lowest feature index.

    References
    ----------
    .. [1] Wu, J., Gupta, S. and Bajaj, C. Higher order mutual information approximation for feature
       selection. arXiv preprint.

    Examples
    --------
    The label follows feature 2; HOFS picks it first (the other four are noise, and which of
    them comes next depends on the rounding of the ICA fits: dtype, device):

    >>> import numpy as np
    >>> from tensorprob import HOFS
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 5))
    >>> y = (X[:, 2] + 0.1 * rng.normal(size=300) > 0).astype(int)
    >>> int(HOFS(k=2, random_state=0).fit(X, y).selected_[0])
    2
    """

    method_name = "hofs"
    _no_distributed = (
        "its incremental ICA is fitted by Newton or gradient iterations over all samples at once, with a "
        "label dither drawn per sample; these are not sums of per-rank statistics that one all-reduce could "
        "combine, so the result would depend on how the rows are split."
    )
    _parameter_constraints: ClassVar[dict] = {
        **RealSelector._parameter_constraints,
        "bin_width": [Interval(Real, 0, 1, closed="right")],
        "threshold": [Interval(Real, None, None, closed="neither")],
        "solver": [StrOptions({"newton", "gradient"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "conditional": [StrOptions({"ica", "plugin"})],
    }

    def __init__(self, k: int | str = 10, *, bin_width: float = 0.2, threshold: float = 0.2, solver: str = "newton",
                 max_iter: int = 50, conditional: str = "ica", device: Any = "auto", dtype: Any = None,
                 random_state: Any = None, distributed: bool = False) -> None:
        self.k = k
        self.bin_width = bin_width
        self.threshold = threshold
        self.solver = solver
        self.max_iter = max_iter
        self.conditional = conditional
        self.device = device
        self.dtype = dtype
        self.random_state = random_state
        self.distributed = distributed

    def _select_real(self, X, y, n_classes, k, device, dtype):
        gen = make_generator(self.random_state, device)
        sel, scores, subsets, rel = hofs_select(
            torch.tensor(X, dtype=dtype, device=device), torch.as_tensor(y, device=device), k, n_classes=n_classes,
            generator=gen, bin_width=float(self.bin_width), threshold=float(self.threshold), solver=self.solver,
            max_iter=int(self.max_iter), conditional=self.conditional,
        )
        self.subsets_ = [list(map(int, s)) for s in subsets]
        self.n_iter_ = len(sel)
        self.relevance_ = rel.detach().cpu().numpy().astype(np.float64)
        return sel, scores
