"""Shared test helpers: dtype tolerances, the CUDA skip mark, and plain numpy references.

The references are deliberately plain (loops over numpy arrays) and independent of the
package: selectors and estimators are tested against them.
"""
import numpy as np
import pytest
import torch


def tols(dtype, rtol=1e-7, atol=1e-10):
    """Tolerances for results computed in ``dtype``: ``dict(rtol=..., atol=...)``.

    ``rtol`` and ``atol`` are what a float64 result is held to (each call site keeps its own);
    a coarser dtype gets ``2**8`` of its machine epsilon instead (float32: 3.1e-5), i.e. a few
    hundred roundings of accumulated error. For float64, ``2**8 * eps`` (5.7e-14) is below
    every nonzero floor used, so the float64 lane checks what it checked before (sites with no
    float64 rtol read only ``["atol"]``; monotone checks use ``tols(dtype, rtol=0)["rtol"]`` as
    a slack relative to |loglik|).
    """
    eps = torch.finfo(dtype).eps
    return dict(rtol=max(rtol, 2**8 * eps), atol=max(atol, 2**8 * eps))


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def skip_unless_counts_on(strategy: str, device: str) -> None:
    """Skip a test of ``strategy`` in a lane whose device it does not count on (the NumPy strategies: the CPU)."""
    from tensorprob.counting import strategies

    if strategy not in ("reference", "auto") and strategy not in strategies(device=device):
        pytest.skip(f"the {strategy!r} strategy does not count codes on {device}")


def dense_pmf(weights, factors):
    """Full probability tensor of a CPD via tensorly's cp_to_tensor (numpy backend)."""
    import tensorly as tl
    from tensorly.cp_tensor import cp_to_tensor

    with tl.backend_context("numpy"):
        return cp_to_tensor((np.asarray(weights, dtype=np.float64), [np.asarray(A, dtype=np.float64) for A in factors]))


def entropy_of(p):
    p = np.asarray(p, dtype=np.float64).ravel()
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


# ------------------------------------------------------------------ plain references
def key(*cols):
    k = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:
        k = k * (int(np.max(c)) + 1) + np.asarray(c, dtype=np.int64)
    return k


def H(*cols):
    _, n = np.unique(key(*cols), return_counts=True)
    p = n / n.sum()
    return float(-(p * np.log(p)).sum())


def I(a, b):
    return H(a) + H(b) - H(a, b)


def CI(a, b, c):
    return H(a, c) + H(b, c) - H(a, b, c) - H(c)


def cond(target, *given):
    """p^(target | given) at every sample."""
    kg = key(*given) if given else np.zeros(len(target), dtype=np.int64)
    kt = key(target, kg)
    _, it, nt = np.unique(kt, return_inverse=True, return_counts=True)
    _, ig, ng = np.unique(kg, return_inverse=True, return_counts=True)
    return nt[it.ravel()] / ng[ig.ravel()]


def classic_score(X, y, m, S, method):
    x = X[:, m]
    n = len(S)
    rel = I(x, y)
    if method == "mim":
        return rel
    if method == "mifs":
        return rel - sum(I(x, X[:, j]) for j in S)
    if method == "mrmr":
        return rel - np.mean([I(x, X[:, j]) for j in S])
    if method == "cife":
        return rel - sum(I(x, X[:, j]) - CI(x, X[:, j], y) for j in S)
    if method == "jmi":
        return sum(H(x, X[:, j]) + H(y) - H(x, X[:, j], y) for j in S)
    if method == "cmim":
        return min(CI(x, y, X[:, j]) for j in S)
    if method == "jmim":
        return min(H(x, X[:, j]) + H(y) - H(x, X[:, j], y) for j in S)
    if method == "disr":
        return sum((H(x, X[:, j]) + H(y) - H(x, X[:, j], y)) / H(x, X[:, j], y) for j in S)
    if method == "icap":
        return rel - sum(max(0.0, I(x, X[:, j]) - CI(x, X[:, j], y)) for j in S)
    if method == "mri":
        return rel - 2 / (n + 1) * sum(I(x, X[:, j]) - CI(x, X[:, j], y) for j in S)
    if method == "rmrmr":
        if n == 1:
            return CI(x, y, X[:, S[0]])
        pairs = sum(CI(x, X[:, r], X[:, s]) for s in S for r in S if r != s)
        return rel - np.mean([I(x, X[:, j]) - CI(x, X[:, j], y) for j in S]) - pairs / (n * (n - 1))
    raise ValueError(method)


def amd_score(X, y, m, S, k1, k2, mean):
    x = X[:, m]
    agg = (lambda ps: np.log(np.mean(ps, 0))) if mean == "amd" else (lambda ps: np.mean(np.log(ps), 0))
    num = np.log(cond(x, y)) if k2 == 0 else agg([cond(x, X[:, s], y) for s in S])
    if k1 == 0:
        den = np.log(cond(x))
    elif k1 == 1 or len(S) == 1:
        den = agg([cond(x, X[:, s]) for s in (S if k1 == 1 else S[:1])])
    else:
        den = agg([cond(x, X[:, s], X[:, r]) for i, s in enumerate(S) for r in S[i + 1:]])
    return float(np.mean(num - den))


def greedy(X, y, k, score):
    S, scores = [], []
    rel = [I(X[:, m], y) for m in range(X.shape[1])]
    S.append(int(np.argmax(rel)))
    scores.append(max(rel))
    while len(S) < k:
        best, bj = -np.inf, None
        for m in range(X.shape[1]):
            if m not in S:
                v = score(m, S)
                if v > best + 1e-12:
                    best, bj = v, m
        S.append(bj)
        scores.append(best)
    return S, scores


def random_data(seed, M=300, N=8, card=3, C=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, card, (M, N))
    y = (X[:, 1] + (X[:, 4] > 0) + rng.integers(0, 2, M)) % C
    X[:, 6] = (X[:, 1] + rng.integers(0, 2, M)) % card  # a redundant copy of a relevant feature
    return X, y


def load_benchmark_script(name: str):
    """``benchmarks/<name>.py`` as a module; its import sets thread variables, which are restored."""
    import importlib.util
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    saved = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    path = os.path.join(root, "benchmarks", f"{name}.py")
    sys.path.insert(0, os.path.dirname(path))
    argv, sys.argv = sys.argv, [path]
    try:
        spec = importlib.util.spec_from_file_location(f"{name}_under_test", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.argv = argv
        sys.path.remove(os.path.dirname(path))
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return mod
