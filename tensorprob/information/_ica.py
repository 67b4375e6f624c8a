"""Incremental (lower-triangular) infomax ICA rows, batched, and one-dimensional entropies.

Maths
-----
Infomax ICA with the logistic CDF g(s) = 1 / (1 + e^-s) as the sources' CDF (Wu, Gupta and
Bajaj, eq. 10) maximizes over the unmixing matrix W

    L(W) = (1/N) sum_n sum_k log g'(w_k^T z_n) + log |det W|.

With W lower triangular, ``log |det W| = sum_k log |W_kk|`` and L splits into one term per
row: row k only sees ``z_1 .. z_k``. Appending a variable to a set whose unmixing rows are
already known (the incremental ICA of section 4.5, eq. 24) therefore learns only the new
last row ``w`` by maximizing

    l(w) = (1/N) sum_n log g'(w^T z_n) + log w_p,        w_p = W_pp > 0,

and the earlier rows are neither needed nor changed. ``log g'(s) = -softplus(s) - softplus(-s)``
is concave in s, so l is concave in w: it has one maximum, which batched Newton steps with
backtracking reach in a few iterations (``solver="newton"``, default). ``solver="gradient"``
runs the full-batch gradient ascent of eq. 11 restricted to the last row,
``w += lr ((1 - 2 g(s)) z^T / N + e_p / w_p)``. Both run for a whole batch of candidate
rows at once as one tensor optimization.

The new source is ``s = w^T z`` and ``r = s / w_p`` is the innovation of the last variable in
its own units (``z_p = r - sum_{k<p} (w_k / w_p) z_k``), so ``h(z_p | z_<p) = h(s) - log w_p =
h(r)`` under the ICA model.

One-dimensional differential entropies use the m-spacing estimator (Vasicek 1976) with
m = round(sqrt(N)), spacings shortened at the ends (Ebrahimi et al. 1994) and the
digamma bias correction that makes it exact in expectation for a uniform sample:

    h^ = (1/N) sum_i [ log(x_(j+) - x_(j-)) - psi(j+ - j-) + psi(N + 1) ],
    j- = max(i - m, 1), j+ = min(i + m, N).

It is consistent (m -> inf, m / N -> 0) for densities with finite entropy.
"""
from __future__ import annotations

import math

import torch

__all__ = ["fit_last_rows", "spacing_entropy"]


def _objective(w: torch.Tensor, Z: torch.Tensor, ridge: float) -> torch.Tensor:
    s = torch.einsum("bnp,bp->bn", Z, w)
    ll = -(torch.nn.functional.softplus(s) + torch.nn.functional.softplus(-s)).mean(1)
    return ll + torch.log(w[:, -1]) - 0.5 * ridge * (w[:, :-1] ** 2).sum(1)


def fit_last_rows(
    Z: torch.Tensor,
    *,
    generator: torch.Generator,
    solver: str = "newton",
    max_iter: int = 50,
    tol: float = 1e-9,
    learning_rate: float = 0.1,
    ridge: float = 1e-6,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Learn the last row of a lower-triangular infomax unmixing matrix for a batch of inputs.

    Parameters
    ----------
    Z : torch.Tensor of shape (B, N, p)
        B data sets of N samples of p variables (centre them first); the last variable is
        the one being appended.
    generator : torch.Generator
        Random start of the rows (small Gaussian off-diagonal weights).
    solver : {"newton", "gradient"}
        Batched Newton with backtracking (default) or eq. 11's gradient ascent.
    max_iter : int
        Newton iterations (gradient solver: 50 times as many steps).
    tol : float
        Stop when no row's objective improves by more than ``tol``.
    learning_rate : float
        Step size of the gradient solver.
    ridge : float
        Weight of ``ridge / 2 * ||w_<p||^2``; keeps rows finite when a variable is constant
        or collinear with others.

    Returns
    -------
    w : torch.Tensor of shape (B, p)
        Last rows, ``w[:, -1] > 0``.
    loglik : torch.Tensor of shape (B,)
        Objective value at ``w``.
    """
    if solver not in ("newton", "gradient"):
        raise ValueError(f"solver must be 'newton' or 'gradient', got {solver!r}")
    B, N, p = Z.shape
    dev, dt = Z.device, Z.dtype
    scale = Z[:, :, -1].std(dim=1).clamp_min(1e-12)
    w = 0.01 * torch.randn((B, p), generator=generator, device=dev, dtype=dt)
    w[:, -1] = 1.0 / scale
    w[:, :-1] = w[:, :-1] / scale.unsqueeze(1)
    obj = _objective(w, Z, ridge)
    eye = torch.eye(p, device=dev, dtype=dt)
    reg = ridge * eye
    reg[-1, -1] = 0.0
    if solver == "gradient":
        for _ in range(max_iter * 50):
            s = torch.einsum("bnp,bp->bn", Z, w)
            grad = torch.einsum("bn,bnp->bp", 1.0 - 2.0 * torch.sigmoid(s), Z) / N
            grad[:, -1] += 1.0 / w[:, -1]
            grad[:, :-1] -= ridge * w[:, :-1]
            new = w + learning_rate * grad
            new[:, -1] = torch.maximum(new[:, -1], 0.5 * w[:, -1])  # stay in w_p > 0
            w = new
        return w, _objective(w, Z, ridge)
    for _ in range(max_iter):
        s = torch.einsum("bnp,bp->bn", Z, w)
        sg = torch.sigmoid(s)
        grad = torch.einsum("bn,bnp->bp", 1.0 - 2.0 * sg, Z) / N
        grad[:, -1] += 1.0 / w[:, -1]
        grad[:, :-1] -= ridge * w[:, :-1]
        curv = 2.0 * sg * (1.0 - sg)
        H = torch.einsum("bnp,bn,bnq->bpq", Z, curv, Z) / N + reg
        H[:, -1, -1] += 1.0 / w[:, -1] ** 2
        H = H + 1e-12 * eye  # negative Hessian, positive definite
        step = torch.linalg.solve(H, grad.unsqueeze(-1)).squeeze(-1)
        t = torch.ones(B, device=dev, dtype=dt)
        accepted = torch.zeros(B, dtype=torch.bool, device=dev)
        new_w, new_obj = w.clone(), obj.clone()
        for _ls in range(30):
            cand = w + t.unsqueeze(1) * step
            valid = cand[:, -1] > 0
            cand_safe = torch.where(valid.unsqueeze(1), cand, w)
            cobj = _objective(cand_safe, Z, ridge)
            good = valid & (cobj >= obj) & ~accepted
            new_w = torch.where(good.unsqueeze(1), cand_safe, new_w)
            new_obj = torch.where(good, cobj, new_obj)
            accepted |= good
            if bool(accepted.all()):
                break
            t = torch.where(accepted, t, 0.5 * t)
        gain = (new_obj - obj).abs().max()
        w, obj = new_w, new_obj
        if float(gain) <= tol:
            break
    return w, obj


def spacing_entropy(x: torch.Tensor, m: int | None = None) -> torch.Tensor:
    """Differential entropy (nats) of each row of ``x`` by the corrected m-spacing estimator.

    Parameters
    ----------
    x : torch.Tensor of shape (B, N)
    m : int, optional
        Spacing; default ``round(sqrt(N))``.

    Returns
    -------
    torch.Tensor of shape (B,)

    Notes
    -----
    Spacings of zero length (tied values) are floored at ``1e-12`` times the row's range
    (or 1e-12 for a constant row), so the result is always finite.
    """
    B, N = x.shape
    if N < 2:
        return torch.zeros(B, dtype=x.dtype, device=x.device)
    if m is None:
        m = max(1, round(math.sqrt(N)))
    m = min(m, N - 1)
    xs, _ = torch.sort(x, dim=1)
    i = torch.arange(N, device=x.device)
    hi = torch.clamp(i + m, max=N - 1)
    lo = torch.clamp(i - m, min=0)
    span = (hi - lo).to(x.dtype)
    D = xs[:, hi] - xs[:, lo]
    rng = (xs[:, -1] - xs[:, 0]).unsqueeze(1)
    floor = 1e-12 * torch.where(rng > 0, rng, torch.ones_like(rng))
    D = torch.maximum(D, floor)
    corr = torch.special.digamma(torch.tensor(N + 1.0, dtype=x.dtype, device=x.device)) - torch.special.digamma(span)
    return (torch.log(D) + corr).mean(1)
