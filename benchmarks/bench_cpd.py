"""CPD engine benchmark: tensorprob's batched incidence-matrix EM vs a NumPy EM and pyttb's cp_apr.

    python benchmarks/bench_cpd.py            # full run (about 10 minutes on 2 CPU cores)
    python benchmarks/bench_cpd.py --quick    # smaller settings

Prints markdown tables and writes benchmarks/results/cpd.csv. Timings, not tests.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Timer, machine, markdown, sync, write_csv  # noqa: E402

import tensorprob as tp  # noqa: E402
from tensorprob.cpd._fit import prepare_data  # noqa: E402

warnings.simplefilter("ignore")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


# ------------------------------------------------------------------ baselines
def numpy_em(X: np.ndarray, cards: np.ndarray, F: int, n_iter: int, seed: int = 0):
    """Straightforward vectorized NumPy EM (log-space E-step by per-variable gathers, np.add.at M-step)."""
    rng = np.random.default_rng(seed)
    M, N = X.shape
    lam = np.full(F, 1.0 / F)
    A = [rng.dirichlet(np.ones(int(I)), size=F).T for I in cards]
    hist, times = [], []
    for _ in range(n_iter):
        t0 = time.perf_counter()
        L = np.log(lam)[None, :].repeat(M, 0)
        for n in range(N):
            L += np.log(np.maximum(A[n][X[:, n]], 1e-300))
        mx = L.max(1, keepdims=True)
        R = np.exp(L - mx)
        s = R.sum(1, keepdims=True)
        hist.append(float(np.mean(mx[:, 0] + np.log(s[:, 0]))))
        R /= s
        lam = R.mean(0)
        for n in range(N):
            num = np.zeros((int(cards[n]), F))
            np.add.at(num, X[:, n], R)
            A[n] = num / np.maximum(num.sum(0, keepdims=True), 1e-300)
        times.append(time.perf_counter() - t0)
    return hist, times


def cp_apr_fit(rows: np.ndarray, counts: np.ndarray, cards: np.ndarray, F: int, maxiters: int, seed: int = 0):
    """pyttb cp_apr on the sparse count tensor; returns (loglik per sample or nan, seconds, iterations, note)."""
    import pyttb

    np.random.seed(seed)  # cp_apr's random start uses NumPy's global generator
    X = pyttb.sptensor(rows.astype(np.int64), counts.astype(np.float64)[:, None], tuple(int(c) for c in cards))
    t0 = time.perf_counter()
    M, _, out = pyttb.cp_apr(X, F, maxiters=maxiters, printitn=0)
    secs = time.perf_counter() - t0
    weights = np.asarray(M.weights, dtype=np.float64)
    factors = [np.asarray(A, dtype=np.float64) for A in M.factor_matrices]
    n_it = len(out["times"])  # outer iterations (each runs up to maxinneriters inner updates per mode)
    if not np.isfinite(weights).all() or weights.sum() <= 0 or any(not np.isfinite(A).all() for A in factors):
        return float("nan"), secs, n_it, "factors not finite / all zero (underflow)"
    try:
        model = tp.CPDModel.from_tensorly((torch.tensor(weights), [torch.tensor(A) for A in factors]))
    except ValueError as exc:
        return float("nan"), secs, n_it, f"no PMF: {exc}"
    lp = model.log_prob(rows).numpy()
    ll = float((counts * lp).sum() / counts.sum())
    note = "" if np.isfinite(ll) else "zero probability on training rows"
    return ll, secs, n_it, note


# ------------------------------------------------------------------ tensorprob runs
def tp_run(codes, cards, rank, device, dtype, n_iter_max, tol):
    """Fit with per-iteration timestamps: (model, total seconds, per-iteration seconds, times, logliks)."""
    stamps = []
    sync(device)
    t0 = time.perf_counter()

    def cb(it, ll):
        sync(device)
        stamps.append((time.perf_counter() - t0, float(ll[0])))

    m = tp.fit_cpd(codes, rank=rank, device=device, dtype=dtype, n_iter_max=n_iter_max, tol=tol,
                   cardinalities=cards, random_state=0, callback=cb)
    sync(device)
    total = time.perf_counter() - t0
    t = np.array([s[0] for s in stamps])
    per_iter = float(np.median(np.diff(t))) if len(t) > 2 else float("nan")
    return m, total, per_iter, t, np.array([s[1] for s in stamps])


def devices():
    out = [("cpu", "float64"), ("cpu", "float32")]
    if torch.cuda.is_available():
        out += [("cuda", "float32"), ("cuda", "float64")]
    return out


def engine_table(name, codes, cards, rank, iters_np, n_iter_max, rows, with_cp_apr_iters=0):
    base = None
    for dev, dt in devices():
        m, total, per_iter, _, _ = tp_run(codes, cards, rank, dev, dt, n_iter_max, 1e-6)
        rows.append({"section": "engine", "data": name, "method": f"tensorprob {dev} {dt}", "s_per_iter": per_iter,
                     "s_total": total, "iterations": m.n_iter_, "converged": m.converged_,
                     "loglik": float(m.loglik_history_[-1])})
        if dev == "cpu" and dt == "float64":
            base = per_iter
    hist, times = numpy_em(codes, cards, rank, iters_np)
    np_per = float(np.median(times))
    rows.append({"section": "engine", "data": name, "method": f"NumPy EM ({iters_np} it.)", "s_per_iter": np_per,
                 "s_total": float(np.sum(times)), "iterations": iters_np, "loglik": hist[-1],
                 "speedup_vs_this": np_per / base})
    if with_cp_apr_iters:
        r, cnt = np.unique(codes, axis=0, return_counts=True)
        ll, secs, n_it, note = cp_apr_fit(r, cnt, cards, rank, with_cp_apr_iters)
        rows.append({"section": "engine", "data": name, "method": f"pyttb cp_apr ({with_cp_apr_iters} outer it.)",
                     "s_per_iter": secs / max(n_it, 1), "s_total": secs, "iterations": n_it, "loglik": ll,
                     "note": note})


def chess_vs_cp_apr(rank, rows, maxiters):
    X, y = tp.datasets.load_keel("chess")
    prep = prepare_data(X, y)
    codes, cards = prep.codes, prep.cards
    r, cnt = np.unique(codes, axis=0, return_counts=True)
    ll_cp, secs_cp, it_cp, note = cp_apr_fit(r, cnt, cards, rank, maxiters)
    m, total, per_iter, t, lls = tp_run(codes, cards, rank, "cpu", "float64", 1000, 1e-8)
    reach = np.flatnonzero(lls >= ll_cp - 1e-9)
    t_reach = float(t[reach[0]]) if reach.size else float("nan")
    rows.append({"section": "chess", "data": "chess (3196 x 37)", "method": f"pyttb cp_apr rank {rank}",
                 "s_total": secs_cp, "iterations": it_cp, "loglik": ll_cp, "s_per_iter": secs_cp / max(it_cp, 1),
                 "note": note})
    rows.append({"section": "chess", "data": "chess (3196 x 37)", "method": f"tensorprob cpu float64 rank {rank}",
                 "s_total": total, "iterations": m.n_iter_, "loglik": float(m.loglik_history_[-1]),
                 "s_per_iter": per_iter, "s_to_cp_apr_loglik": t_reach,
                 "speedup_vs_this": secs_cp / t_reach if reach.size else float("nan")})


def rank_search(name, X, y, rows, n_iter_max, ranks=(5, 10, 15, 20, 30), cv=5):
    from sklearn.model_selection import StratifiedKFold

    prep = prepare_data(X, y)
    feats, yc, cards = prep.codes[:, :-1], prep.codes[:, -1], prep.cards
    with Timer() as tb:
        res = tp.select_rank(feats, yc, ranks=ranks, cv=cv, random_state=0, n_iter_max=n_iter_max, device="cpu",
                             cardinalities=cards[:-1])
    folds = list(StratifiedKFold(cv, shuffle=True, random_state=0).split(feats, yc))
    with Timer() as ts:
        for rk in ranks:
            for tr, _ in folds:
                w = np.zeros(len(yc))
                w[tr] = 1.0
                tp.fit_cpd(prep.codes, rank=rk, sample_weight=w, random_state=0, n_iter_max=n_iter_max,
                           device="cpu", cardinalities=cards)
    rows.append({"section": "rank search", "data": name, "method": f"{len(ranks)} ranks x {cv} folds batched",
                 "s_total": tb.seconds, "note": f"best rank {res.best_rank}"})
    rows.append({"section": "rank search", "data": name, "method": f"{len(ranks) * cv} separate fits",
                 "s_total": ts.seconds, "speedup_vs_this": ts.seconds / tb.seconds})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small settings (a minute or two)")
    args = ap.parse_args(argv)
    q = args.quick
    rows: list[dict] = []
    print(f"machine: {machine()}\n")

    Xm, ym = tp.datasets.load_mnist_subset()
    prep = prepare_data(Xm, ym)
    engine_table("MNIST-5k (5000 x 785)", prep.codes, prep.cards, 20, 2 if q else 5, 60 if q else 500, rows,
                 with_cp_apr_iters=1 if q else 3)
    n70 = 20000 if q else 70000
    planted = tp.datasets.make_latent_class(n70, [5] * 784 + [10], 20, random_state=0)
    engine_table(f"planted {n70 // 1000}k x 785", planted.X, np.array([5] * 784 + [10]), 20, 1,
                 20 if q else 100, rows)
    chess_vs_cp_apr(10, rows, 200 if q else 1000)
    Xc, yc = tp.datasets.load_keel("chess")
    rank_search("chess", Xc, yc, rows, 100)
    if not q:
        rank_search("MNIST-5k", Xm, ym, rows, 30)

    cols = ["section", "data", "method", "s_per_iter", "s_total", "iterations", "loglik", "s_to_cp_apr_loglik",
            "speedup_vs_this", "note"]
    print(markdown(rows, cols))
    write_csv(os.path.join(RESULTS, "cpd_quick.csv" if q else "cpd.csv"), rows)


if __name__ == "__main__":
    main()
