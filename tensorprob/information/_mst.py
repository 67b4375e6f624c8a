"""Batched Euclidean minimum spanning trees and the global Friedman-Rafsky GMI estimator.

Maths
-----
*Dense Prim.* For a point set ``P`` (n points in R^d) Prim's algorithm grows a tree from
vertex 0; ``key[v]`` is the squared distance from ``v`` to the tree and ``parent[v]`` the
tree vertex achieving it. Each of the n - 1 steps adds ``u = argmin key`` over the vertices
outside the tree, then relaxes ``key[v] = min(key[v], |P_v - P_u|^2)``. Only the distances
from the newly added vertex are needed, so a step costs O(n d) and memory stays O(n d):
the n x n distance matrix is never formed. Here a batch of B point sets of the same size
is processed at once: every step is one (B x n) tensor operation, the loop runs over the
n - 1 Prim steps only. Squared distances give the same tree as distances (a monotone map of
the weights does not change which spanning tree is minimum) and are exact for integer
coordinates, so ties are detected exactly.

*Ties* are broken deterministically: the next vertex is the lowest-index vertex of minimum
key (``torch.argmin`` returns the first minimum), and a vertex's parent changes only when a
strictly shorter edge appears, so it keeps the earliest-added tree vertex among equally
near ones. With distinct weights the minimum spanning tree is unique and equals SciPy's;
with ties any minimum spanning tree has the same total weight.

*Global Friedman-Rafsky estimator of the conditional GMI lower bound* (Sekeh and Hero,
Alg. 1). For features (s, t) and labels Y with m classes: split the 2n samples into two
halves Z' (n'_j samples of class z_j) and Z'' (n_i samples of class y_i); within each
class of Z'' permute the values of every feature independently (this keeps the class-
conditional marginals and makes X^(s), X^(t) conditionally independent given Y); build one
Euclidean MST over Z' united with the permuted Z''; ``R_{z_j, y_i}`` counts the MST edges
joining an original point of class z_j to a permuted point of class y_i. Then

    delta^_{y_i z_j} = n / (2 n'_j n_i) R_{z_j, y_i},
    I^ = 1 - 2 sum_{y, z} p_y p_z delta^_{yz}

estimates the Henze-Penrose divergence D_{1/2}(f_st, pi_st) between the joint density and
the product of class-conditional marginals, a lower bound of the conditional geometric MI
(theorem 1). The priors ``p`` are the class frequencies of the whole sample. When they are
replaced by the class frequencies of the halves the estimate reduces to ``1 - R / n`` with R
the total number of original-permuted edges (the classical two-sample FR estimate).

*Pairwise Friedman-Rafsky bound on the Bayes error* (the D_p baseline of Sekeh and Hero,
after Berisha et al. 2016). For classes i != j with priors p and densities f write
``delta_ij = int p_i f_i p_j f_j / (p_i f_i + p_j f_j)``. At every x the Bayes error's
integrand ``sum_c p_c f_c - max_c p_c f_c`` is at most ``sum_{i<j} min(p_i f_i, p_j f_j)``
(each non-maximal term is the minimum of its pair with the maximal one), and a minimum is at
most twice the harmonic-mean term, so ``err_Bayes <= 2 sum_{i<j} delta_ij``. In terms of the
Henze-Penrose divergence of the pair, ``delta_ij = (p_i + p_j) q_i q_j (1 - D_q(f_i, f_j))``
with ``q`` the priors within the pair, and the FR estimate
``1 - D^_q = C_ij (n_i + n_j) / (2 n_i n_j)`` (C_ij: edges joining the two classes in the MST of
their n_i + n_j points, ``p_c = n_c / n``) gives ``delta^_ij = C_ij / (2 n)``. The estimated
bound is therefore ``sum_{i<j} C_ij / n``: cross-class edges of the pairwise trees per sample.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from .._device import chunk_rows

__all__ = ["GMIPairs", "batched_mst", "class_pair_cross_edges", "gmi_lower_bound", "mst_cross_counts", "pairwise_gmi",
           "split_and_permute"]


def batched_mst(points: torch.Tensor, *, memory_budget: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Euclidean minimum spanning trees of a batch of point sets by dense Prim.

    Parameters
    ----------
    points : torch.Tensor of shape (B, n, d) or (n, d)
        B point sets of n points each, floating dtype, on any device.
    memory_budget : int, optional
        Bytes one chunk of point sets may use; defaults to ``get_config()["memory_budget"]``.

    Returns
    -------
    edges : torch.Tensor of shape (B, n - 1, 2), int64
        Edge ``k`` of tree ``b`` joins ``edges[b, k, 0]`` (the tree vertex, the parent) to
        ``edges[b, k, 1]`` (the vertex added at step ``k + 1``), in the order Prim adds them.
    weights : torch.Tensor of shape (B, n - 1)
        Euclidean lengths of the edges.

    Notes
    -----
    Ties: the next vertex is the lowest-index vertex at minimum distance from the tree and a
    parent is replaced only by a strictly nearer tree vertex; the result is therefore a
    deterministic function of the input. Points at distance 0 (duplicates) are joined by an
    edge of weight 0.
    """
    squeeze = points.dim() == 2
    if squeeze:
        points = points.unsqueeze(0)
    if points.dim() != 3:
        raise ValueError(f"points must have shape (B, n, d) or (n, d), got {tuple(points.shape)}")
    if not torch.is_floating_point(points):
        points = points.to(torch.float64)
    B, n, d = points.shape
    if n < 1:
        raise ValueError("each point set needs at least one point")
    edges = torch.empty((B, max(n - 1, 0), 2), dtype=torch.long, device=points.device)
    weights = torch.empty((B, max(n - 1, 0)), dtype=points.dtype, device=points.device)
    if n == 1 or B == 0:
        return (edges[0], weights[0]) if squeeze else (edges, weights)
    # temporaries per point set: points, key, diff (n x d), parent, in-tree mask
    bytes_per_set = n * (2 * d + 4) * points.element_size() + n * 9
    step = chunk_rows(bytes_per_set, B, memory_budget)
    for start in range(0, B, step):
        stop = min(B, start + step)
        e, w = _prim_chunk(points[start:stop])
        edges[start:stop] = e
        weights[start:stop] = w
    return (edges[0], weights[0]) if squeeze else (edges, weights)


def _prim_chunk(P: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    B, n, d = P.shape
    dev = P.device
    rows = torch.arange(B, device=dev)
    Pt = P.transpose(1, 2).contiguous()  # (B, d, n): one contiguous row per coordinate
    inf = torch.tensor(float("inf"), dtype=P.dtype, device=dev)

    def sq_dist_to(u: torch.Tensor) -> torch.Tensor:
        pu = Pt[rows, :, u]  # (B, d)
        out = (Pt[:, 0, :] - pu[:, :1]) ** 2
        for j in range(1, d):  # loop over the (few) coordinates, exact differences
            out += (Pt[:, j, :] - pu[:, j:j + 1]) ** 2
        return out

    key = sq_dist_to(torch.zeros(B, dtype=torch.long, device=dev))  # squared distances to vertex 0
    parent = torch.zeros((B, n), dtype=torch.long, device=dev)
    in_tree = torch.zeros((B, n), dtype=torch.bool, device=dev)
    in_tree[:, 0] = True
    key[:, 0] = inf
    edges = torch.empty((B, n - 1, 2), dtype=torch.long, device=dev)
    sq = torch.empty((B, n - 1), dtype=P.dtype, device=dev)
    for k in range(n - 1):
        u = torch.argmin(key, dim=1)  # first minimum = lowest index among ties
        sq[:, k] = key[rows, u]
        edges[:, k, 0] = parent[rows, u]
        edges[:, k, 1] = u
        in_tree[rows, u] = True
        dist_u = sq_dist_to(u)
        closer = (dist_u < key) & ~in_tree  # strict: keep the earlier parent on ties
        key = torch.where(closer, dist_u, key)
        key[rows, u] = inf  # in-tree vertices never decrease again: only u needs masking
        parent = torch.where(closer, u.unsqueeze(1), parent)
    return edges, sq.clamp_min(0).sqrt()


def mst_cross_counts(edges: torch.Tensor, groups: torch.Tensor, n_groups: int) -> torch.Tensor:
    """Count MST edges between every pair of vertex groups.

    Parameters
    ----------
    edges : torch.Tensor of shape (B, E, 2), int64
    groups : torch.Tensor of shape (n,) or (B, n), int64
        Group of every vertex, in ``0 .. n_groups - 1``.
    n_groups : int

    Returns
    -------
    torch.Tensor of shape (B, n_groups, n_groups)
        Symmetric counts; entry (a, b), a != b, is the number of edges joining group a to
        group b, the diagonal counts edges inside a group.
    """
    B = edges.shape[0]
    if groups.dim() == 1:
        ga, gb = groups[edges[..., 0]], groups[edges[..., 1]]
    else:
        ga, gb = torch.gather(groups, 1, edges[..., 0]), torch.gather(groups, 1, edges[..., 1])
    offs = torch.arange(B, device=edges.device).unsqueeze(1) * (n_groups * n_groups)
    flat = (offs + ga * n_groups + gb).reshape(-1)
    counts = torch.bincount(flat, minlength=B * n_groups * n_groups).reshape(B, n_groups, n_groups)
    out = counts + counts.transpose(1, 2)
    idx = torch.arange(n_groups, device=edges.device)
    out[:, idx, idx] = counts[:, idx, idx]
    return out


def class_pair_cross_edges(points: torch.Tensor, y: torch.Tensor, n_classes: int, *,
                           memory_budget: int | None = None) -> torch.Tensor:
    """Friedman-Rafsky counts of every class pair: edges joining the two classes in the MST of their points.

    Parameters
    ----------
    points : torch.Tensor of shape (B, n, d) or (n, d)
        B point sets over the same n samples (for example the same rows under B feature
        subsets), floating dtype.
    y : torch.Tensor of shape (n,)
        Class codes in ``0 .. n_classes - 1``.
    n_classes : int
        Number of classes (a class without samples counts no edge).
    memory_budget : int, optional
        Bytes one chunk of point sets may use; defaults to ``get_config()["memory_budget"]``.

    Returns
    -------
    torch.Tensor of shape (B, P) or (P,), int64
        ``P = n_classes (n_classes - 1) / 2`` counts, pairs (i, j), i < j, in the order of
        ``torch.triu_indices(n_classes, n_classes, 1)``. A pair with an empty class counts 0.

    Notes
    -----
    All pairs of all point sets go through one batched Prim (:func:`batched_mst`). A pair's
    points are padded to the largest pair's size with copies of one point placed beyond the
    diameter of the set (every coordinate above the maximum by the sum of the coordinate
    ranges, plus 1): each pad-to-sample edge is then longer than any sample-to-sample edge,
    so the tree restricted to the samples is their own minimum spanning tree and exactly one
    edge joins it to the pads; pad edges are not counted.
    """
    squeeze = points.dim() == 2
    if squeeze:
        points = points.unsqueeze(0)
    if not torch.is_floating_point(points):
        points = points.to(torch.float64)
    B, n, d = points.shape
    dev = points.device
    y = y.to(device=dev, dtype=torch.long)
    pi, pj = torch.triu_indices(n_classes, n_classes, offset=1, device=dev)
    P = pi.numel()
    out = torch.zeros((B, P), dtype=torch.long, device=dev)
    if P == 0 or B == 0:
        return out[0] if squeeze else out
    sizes = torch.bincount(y, minlength=n_classes)
    starts = torch.cumsum(sizes, 0) - sizes
    by_class = torch.argsort(y, stable=True)  # rows grouped by class, in row order within a class
    ni, nj = sizes[pi, None], sizes[pj, None]  # (P, 1)
    n_max = int((sizes[pi] + sizes[pj]).max())
    pos = torch.arange(n_max, device=dev)[None, :]  # (1, n_max)
    in_i, in_j = pos < ni, (pos >= ni) & (pos < ni + nj)
    slot = torch.where(in_i, starts[pi, None] + pos, starts[pj, None] + pos - ni).clamp_(0, max(n - 1, 0))
    rows = torch.where(in_i | in_j, by_class[slot], torch.full_like(slot, n))  # n: the pad point
    group = torch.where(in_i, 0, torch.where(in_j, 1, 2))  # (P, n_max): class i, class j, pad
    # per chunk of point sets: the gathered pairs (P n_max d) and Prim's temporaries
    step = chunk_rows(P * n_max * (3 * d + 6) * points.element_size(), B, memory_budget)
    for start in range(0, B, step):
        pts = points[start:start + step]
        hi, lo = pts.amax(1), pts.amin(1)  # (b, d)
        pad = hi + ((hi - lo).sum(1, keepdim=True) + 1)
        ext = torch.cat([pts, pad[:, None, :]], 1)  # (b, n + 1, d)
        sets = ext[:, rows].reshape(-1, n_max, d)  # (b P, n_max, d)
        edges, _ = batched_mst(sets, memory_budget=memory_budget)
        counts = mst_cross_counts(edges, group.repeat(pts.shape[0], 1), 3)  # (b P, 3, 3)
        out[start:start + step] = counts[:, 0, 1].view(-1, P)  # one end in class i, the other in j
    return out[0] if squeeze else out


def gmi_lower_bound(cross: torch.Tensor, n_orig: torch.Tensor, n_perm: torch.Tensor, priors: torch.Tensor) -> torch.Tensor:
    """GMI lower bound ``1 - 2 sum_{y,z} p_y p_z delta^_{yz}`` from cross-edge counts.

    Parameters
    ----------
    cross : torch.Tensor of shape (B, m, m)
        ``cross[b, j, i] = R_{z_j, y_i}``: edges between original class j and permuted class i.
    n_orig, n_perm : torch.Tensor of shape (m,)
        Class sizes n'_j of the original half and n_i of the permuted half.
    priors : torch.Tensor of shape (m,)
        Class probabilities p.

    Returns
    -------
    torch.Tensor of shape (B,)
    """
    n = n_perm.sum()
    denom = 2.0 * n_orig.unsqueeze(1) * n_perm.unsqueeze(0)  # (m, m): 2 n'_j n_i
    ok = denom > 0
    delta = torch.where(ok, n * cross / torch.where(ok, denom, torch.ones_like(denom)), torch.zeros_like(cross))
    w = priors.unsqueeze(1) * priors.unsqueeze(0)
    return 1.0 - 2.0 * (w * delta).sum(dim=(1, 2))


class GMIPairs(NamedTuple):
    """Result of :func:`pairwise_gmi`."""

    pairs: torch.Tensor  # (P, 2) feature index pairs s < t
    values: torch.Tensor  # (P,) estimated lower bounds
    matrix: torch.Tensor  # (d, d) symmetric, zero diagonal


def split_and_permute(X: torch.Tensor, y: torch.Tensor, gen: torch.Generator):
    """Stratified half split, and a within-class permutation of every feature of the second half.

    The second half keeps each class's marginal of every feature but breaks the dependence
    between features within a class: the "independent" sample that the GMI (geometric mutual
    information) bound compares the original rows against.

    Parameters
    ----------
    X : torch.Tensor of shape (n_samples, n_features)
        Real-valued data.
    y : torch.Tensor of shape (n_samples,)
        Class labels (any integer values).
    gen : torch.Generator
        Source of the split and the permutations (on ``X``'s device).

    Returns
    -------
    Xo : torch.Tensor of shape (n_orig, n_features)
        The first half of every class, rows unchanged.
    Xp : torch.Tensor of shape (n_perm, n_features)
        The second half, every column permuted independently within its class.
    groups : torch.Tensor of shape (n_orig + n_perm,)
        Group of every row of ``cat([Xo, Xp])``: class position c for original rows, c + m for
        permuted ones.
    n_orig, n_perm : torch.Tensor of shape (m,)
        Rows per class in each half (``X``'s dtype).
    priors : torch.Tensor of shape (m,)
        Class frequencies in ``y``.
    m : int
        Number of classes.
    """
    n_total = X.shape[0]
    dev = X.device
    classes = torch.unique(y)
    orig_idx, perm_rows, orig_lab, perm_lab = [], [], [], []
    for c_pos, c in enumerate(classes.tolist()):
        idx = torch.nonzero(y == c, as_tuple=False).flatten()
        idx = idx[torch.randperm(idx.numel(), generator=gen, device=dev)]
        n_first = idx.numel() // 2
        first, second = idx[:n_first], idx[n_first:]
        orig_idx.append(first)
        orig_lab.append(torch.full((first.numel(),), c_pos, dtype=torch.long, device=dev))
        # independent within-class permutation of every feature (column) of the second half
        keys = torch.rand((second.numel(), X.shape[1]), generator=gen, device=dev, dtype=X.dtype)
        order = torch.argsort(keys, dim=0)  # (n_c, d): a random permutation per column
        perm_rows.append(second[order])
        perm_lab.append(torch.full((second.numel(),), c_pos, dtype=torch.long, device=dev))
    orig_idx = torch.cat(orig_idx)
    perm_rows = torch.cat(perm_rows)  # (n'', d) row index used for each (row, column)
    cols = torch.arange(X.shape[1], device=dev).unsqueeze(0).expand_as(perm_rows)
    Xo = X[orig_idx]
    Xp = X[perm_rows, cols]
    m = classes.numel()
    n_orig = torch.bincount(torch.cat(orig_lab), minlength=m).to(X.dtype)
    n_perm = torch.bincount(torch.cat(perm_lab), minlength=m).to(X.dtype)
    priors = torch.bincount(torch.searchsorted(classes, y), minlength=m).to(X.dtype) / n_total
    groups = torch.cat([torch.cat(orig_lab), torch.cat(perm_lab) + m])
    return Xo, Xp, groups, n_orig, n_perm, priors, m


def pairwise_gmi(
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    generator: torch.Generator,
    pairs: torch.Tensor | None = None,
    memory_budget: int | None = None,
) -> GMIPairs:
    """Global FR estimates of the conditional GMI lower bound for feature pairs.

    Parameters
    ----------
    X : torch.Tensor of shape (N, d)
        Real features (standardize them first; the estimator uses Euclidean distances).
    y : torch.Tensor of shape (N,)
        Integer class labels.
    generator : torch.Generator
        Source of the half split and of the within-class permutations (one split and one
        permutation per feature serve every pair).
    pairs : torch.Tensor of shape (P, 2), optional
        Feature pairs; default all ``d (d - 1) / 2`` pairs s < t.
    memory_budget : int, optional
        Bytes per chunk of pairs.

    Returns
    -------
    GMIPairs
    """
    d = X.shape[1]
    dev = X.device
    if pairs is None:
        pairs = torch.triu_indices(d, d, offset=1, device=dev).T
    Xo, Xp, groups, n_orig, n_perm, priors, m = split_and_permute(X, y, generator)
    values = torch.empty(pairs.shape[0], dtype=X.dtype, device=dev)
    n_pts = Xo.shape[0] + Xp.shape[0]
    # one chunk holds (P_chunk, n_pts, 2) points plus Prim's temporaries
    step = chunk_rows(n_pts * 8 * X.element_size(), max(1, pairs.shape[0]), memory_budget)
    for start in range(0, pairs.shape[0], step):
        pr = pairs[start:start + step]
        pts = torch.cat([Xo[:, pr].permute(1, 0, 2), Xp[:, pr].permute(1, 0, 2)], dim=1)
        edges, _ = batched_mst(pts, memory_budget=memory_budget)
        counts = mst_cross_counts(edges, groups, 2 * m)
        cross = counts[:, :m, m:]  # original class j (rows) to permuted class i (columns)
        values[start:start + step] = gmi_lower_bound(cross, n_orig, n_perm, priors)
    matrix = torch.zeros((d, d), dtype=X.dtype, device=dev)
    matrix[pairs[:, 0], pairs[:, 1]] = values
    matrix[pairs[:, 1], pairs[:, 0]] = values
    return GMIPairs(pairs=pairs, values=values, matrix=matrix)
