"""CPD engine benchmark: tensorprob's batched incidence-matrix EM vs a NumPy EM and pyttb's cp_apr.

    python benchmarks/bench_cpd.py            # full run (about 10 minutes on 2 CPU cores)
    python benchmarks/bench_cpd.py --quick    # smaller settings
    python benchmarks/bench_cpd.py --devices cuda --no-peers --tag cuda   # GPU rows only -> cpd_cuda.csv

tensorprob runs on every device of --devices (CPU float64 / float32, CUDA float32 / float64);
the NumPy EM and pyttb cp_apr peers run on the CPU (skipped with --no-peers or when not
installed). Prints markdown tables and writes benchmarks/results/cpd[_quick][_TAG].csv.
Timings, not tests.
"""
from __future__ import annotations

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (
    Script,
    add_cp_apr_ref_args,
    device_table,
    guarded,
    have,
    is_cuda,
    markdown,
    separate_fits,
    sync,
    timed,
)

SCRIPT = Script("cpd", __doc__, default_threads=0)  # torch's default threads unless --threads

import numpy as np
import torch

import tensorprob as tp
from tensorprob.cpd._fit import prepare_data

warnings.simplefilter("ignore")


# ------------------------------------------------------------------ baselines
def numpy_em(X: np.ndarray, cards: np.ndarray, F: int, n_iter: int, seed: int = 0):
    """Straightforward vectorized NumPy EM (log-space E-step by per-variable gathers, np.add.at M-step)."""
    rng = np.random.default_rng(seed)
    M, N = X.shape
    lam = np.full(F, 1.0 / F)
    A = [rng.dirichlet(np.ones(int(card)), size=F).T for card in cards]
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

    np.random.seed(seed)  # noqa: NPY002 - cp_apr's random start uses NumPy's global generator
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


def tp_timed(codes, cards, rank, device, dtype, n_iter_max, tol, repeats=None):
    """:func:`tp_run` repeated (``repeats``; default 1 on CPU, 3 on CUDA when a fit is under 2 s); returns the
    run with the median total time and a label such as "median of 3"."""
    runs = [tp_run(codes, cards, rank, device, dtype, n_iter_max, tol)]
    n = repeats if repeats is not None else (3 if is_cuda(device) and runs[0][1] < 2.0 else 1)
    while len(runs) < max(1, n):
        runs.append(tp_run(codes, cards, rank, device, dtype, n_iter_max, tol))
    runs.sort(key=lambda r: r[1])
    return runs[(len(runs) - 1) // 2], ("1 run" if len(runs) == 1 else f"median of {len(runs)}")


def device_dtypes(devices):
    out = []
    for dev in devices:
        out += [(dev, "float64"), (dev, "float32")] if dev == "cpu" else [(dev, "float32"), (dev, "float64")]
    return out


def warm(device):
    """Tiny fits on ``device`` so that CUDA context creation and kernel loading stay out of the timings."""
    cards = np.array([3] * 8 + [2])
    s = tp.datasets.make_latent_class(300, list(cards), 2, random_state=0)
    for dt in ("float32", "float64"):
        tp.fit_cpd(s.X, rank=3, device=device, dtype=dt, n_iter_max=5, cardinalities=cards, random_state=0,
                   callback=lambda it, ll: float(ll[0]))
    tp.fit_cpd(s.X, rank=3, sample_weight=np.ones(len(s.X)), device=device, n_iter_max=5, cardinalities=cards,
               random_state=0)
    tp.select_rank(s.X[:, :-1], s.X[:, -1], ranks=(2, 3), cv=2, random_state=0, n_iter_max=5, device=device,
                   cardinalities=cards[:-1])


def engine_table(name, codes, cards, rank, iters_np, n_iter_max, rows, with_cp_apr_iters=0, devices=("cpu",),
                 peers=True, repeats=None):
    base = float("nan")
    for dev, dt in device_dtypes(devices):
        (m, total, per_iter, _, _), label = tp_timed(codes, cards, rank, dev, dt, n_iter_max, 1e-6, repeats)
        rows.append({"section": "engine", "data": name, "method": f"tensorprob {dev} {dt}", "device": dev,
                     "dtype": dt, "s_per_iter": per_iter, "s_total": total, "iterations": m.n_iter_,
                     "converged": m.converged_, "loglik": float(m.loglik_history_[-1]), "timing": label})
        if dev == "cpu" and dt == "float64":
            base = per_iter
    if not peers:
        return
    hist, times = numpy_em(codes, cards, rank, iters_np)
    np_per = float(np.median(times))
    rows.append({"section": "engine", "data": name, "method": f"NumPy EM ({iters_np} it.)", "device": "cpu",
                 "dtype": "float64", "s_per_iter": np_per, "s_total": float(np.sum(times)), "iterations": iters_np,
                 "loglik": hist[-1], "speedup_vs_this": np_per / base})
    if with_cp_apr_iters:
        method = f"pyttb cp_apr ({with_cp_apr_iters} outer it.)"
        if not have("pyttb"):
            rows.append({"section": "engine", "data": name, "method": method, "device": "cpu",
                         "note": "skipped: pyttb not installed"})
            return
        r, cnt = np.unique(codes, axis=0, return_counts=True)
        ll, secs, n_it, note = cp_apr_fit(r, cnt, cards, rank, with_cp_apr_iters)
        rows.append({"section": "engine", "data": name, "method": method, "device": "cpu", "dtype": "float64",
                     "s_per_iter": secs / max(n_it, 1), "s_total": secs, "iterations": n_it, "loglik": ll,
                     "note": note})


def chess_vs_cp_apr(rank, rows, maxiters, devices=("cpu",), peers=True, repeats=None, cp_apr_ref=(None, None)):
    """pyttb cp_apr on chess against tensorprob (float64 on every device, float32 too on CUDA).

    Without the peer (``peers=False`` or pyttb missing), ``cp_apr_ref`` = (loglik, seconds) of an earlier
    CPU run of cp_apr, when given, still yields ``s_to_cp_apr_loglik`` and the speedup.
    """
    X, y = tp.datasets.load_keel("chess")
    prep = prepare_data(X, y)
    codes, cards = prep.codes, prep.cards
    data = "chess (3196 x 37)"
    ll_cp, secs_cp = (float("nan") if v is None else float(v) for v in cp_apr_ref)
    ran = peers and have("pyttb")
    if peers:
        if ran:
            r, cnt = np.unique(codes, axis=0, return_counts=True)
            ll_cp, secs_cp, it_cp, note = cp_apr_fit(r, cnt, cards, rank, maxiters)
            rows.append({"section": "chess", "data": data, "method": f"pyttb cp_apr rank {rank}", "device": "cpu",
                         "dtype": "float64", "s_total": secs_cp, "iterations": it_cp, "loglik": ll_cp,
                         "s_per_iter": secs_cp / max(it_cp, 1), "note": note})
        else:
            rows.append({"section": "chess", "data": data, "method": f"pyttb cp_apr rank {rank}", "device": "cpu",
                         "note": "skipped: pyttb not installed"})
    ref_note = "" if ran or cp_apr_ref[0] is None else "cp_apr reference from --cp-apr-loglik/--cp-apr-seconds"
    for dev in devices:
        for dt in ("float64",) if dev == "cpu" else ("float64", "float32"):
            (m, total, per_iter, t, lls), label = tp_timed(codes, cards, rank, dev, dt, 1000, 1e-8, repeats)
            reach = np.flatnonzero(lls >= ll_cp - 1e-9) if np.isfinite(ll_cp) else np.array([], dtype=int)
            t_reach = float(t[reach[0]]) if reach.size else float("nan")
            rows.append({"section": "chess", "data": data, "method": f"tensorprob {dev} {dt} rank {rank}",
                         "device": dev, "dtype": dt, "s_total": total, "iterations": m.n_iter_,
                         "loglik": float(m.loglik_history_[-1]), "s_per_iter": per_iter, "s_to_cp_apr_loglik": t_reach,
                         "speedup_vs_this": secs_cp / t_reach if reach.size else float("nan"), "timing": label,
                         "note": ref_note})


def rank_search(name, X, y, rows, n_iter_max, ranks=(5, 10, 15, 20, 30), cv=5, devices=("cpu",), repeats=None):
    """select_rank's batched (ranks x folds) fit against the same fits one by one, on every device."""
    from sklearn.model_selection import StratifiedKFold

    prep = prepare_data(X, y)
    feats, yc, cards = prep.codes[:, :-1], prep.codes[:, -1], prep.cards
    folds = list(StratifiedKFold(cv, shuffle=True, random_state=0).split(feats, yc))
    for dev in devices:
        def batched(dev=dev):
            return tp.select_rank(feats, yc, ranks=ranks, cv=cv, random_state=0, n_iter_max=n_iter_max, device=dev,
                                  cardinalities=cards[:-1])

        def separate(dev=dev):
            separate_fits(prep.codes, ranks, folds, n_iter_max=n_iter_max, device=dev, cardinalities=cards)

        tb, res, lb = timed(batched, dev, repeats)
        ts, _, ls = timed(separate, dev, repeats)
        dt = "float64" if dev == "cpu" else "float32"
        rows.append({"section": "rank search", "data": name, "method": f"{len(ranks)} ranks x {cv} folds batched",
                     "device": dev, "dtype": dt, "s_total": tb, "timing": lb, "note": f"best rank {res.best_rank}"})
        rows.append({"section": "rank search", "data": name, "method": f"{len(ranks) * cv} separate fits",
                     "device": dev, "dtype": dt, "s_total": ts, "timing": ls, "speedup_vs_this": ts / tb})


def main(argv=None):
    ap = SCRIPT.bench_parser("small settings (a minute or two)")
    add_cp_apr_ref_args(ap)
    args = SCRIPT.start(ap, argv, warm, lambda a: f"; peers: {not a.no_peers}")
    devices = args.device_list
    q, peers, reps = args.quick, not args.no_peers, args.repeats
    rows: list[dict] = []
    failed: list[str] = []

    def mnist_engine():
        Xm, ym = tp.datasets.load_mnist_subset()
        prep = prepare_data(Xm, ym)
        engine_table("MNIST-5k (5000 x 785)", prep.codes, prep.cards, 20, 2 if q else 5, 60 if q else 500, rows,
                     with_cp_apr_iters=1 if q else 3, devices=devices, peers=peers, repeats=reps)

    def planted_engine():
        n70 = 20000 if q else 70000
        planted = tp.datasets.make_latent_class(n70, [5] * 784 + [10], 20, random_state=0)
        engine_table(f"planted {n70 // 1000}k x 785", planted.X, np.array([5] * 784 + [10]), 20, 1,
                     20 if q else 100, rows, devices=devices, peers=peers, repeats=reps)

    def chess():
        chess_vs_cp_apr(10, rows, 200 if q else 1000, devices=devices, peers=peers, repeats=reps,
                        cp_apr_ref=(args.cp_apr_loglik, args.cp_apr_seconds))

    def rank_chess():
        Xc, yc = tp.datasets.load_keel("chess")
        rank_search("chess", Xc, yc, rows, 100, devices=devices, repeats=reps)

    def rank_mnist():
        Xm, ym = tp.datasets.load_mnist_subset()
        rank_search("MNIST-5k", Xm, ym, rows, 30, devices=devices, repeats=reps)

    sections = [("engine", mnist_engine), ("engine", planted_engine), ("chess", chess), ("rank search", rank_chess)]
    if not q:
        sections.append(("rank search", rank_mnist))
    for name, fn in sections:
        guarded(name, fn, rows, failed)
        SCRIPT.save(rows)

    cols = ["section", "data", "method", "device", "s_per_iter", "s_total", "iterations", "loglik",
            "s_to_cp_apr_loglik", "speedup_vs_this", "timing", "note"]
    print(markdown(rows, cols))
    if len(devices) > 1:
        ours = [dict(r, method=r["method"].replace(f"tensorprob {r['device']} ", "tensorprob ")) for r in rows
                if str(r.get("method", "")).startswith("tensorprob")
                or (r["section"] == "rank search" and "method" in r)]
        print(device_table(ours, ["section", "data", "method"], "s_total", devices))
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
