"""GPU profile of the hot paths: issue-16 targets, bandwidth bounds, syncs, kernels, precision.

    python benchmarks/bench_gpu.py [--quick] [--sections em,select,gsm,profile,vmi,memory]
                                   [--out-dir benchmarks/results] [--tag cuda]
                                   (sections: em,kernels,select,gsm,profile,vmi,memory,syncs)

Needs a CUDA device. For each hot path it reports the median seconds of the timed runs, the
bytes the step must move through device memory in today's representation and as compact
codes, the time those bytes take at the measured copy bandwidth (the floor), the distance
to that floor, and the device-to-host synchronizations per call (counted with
``torch.cuda.set_sync_debug_mode("warn")``). It also compares float32 with float64 (fit
log-likelihoods, picks), the peak memory against the memory budget, and writes
``torch.profiler`` kernel tables. Timings, not tests.
"""
from __future__ import annotations

import collections
import json
import os
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common
from _common import Script, machine, markdown, write_csv

SCRIPT = Script("gpu", __doc__, default_threads=0)  # torch's default threads unless --threads

import numpy as np
import torch

import tensorprob as tp

DEV = "cuda"


def sync():
    _common.sync(DEV)


def timed(fn, repeats=3):
    """Median seconds of ``repeats`` synchronized runs of ``fn`` on the GPU, and the last result."""
    seconds, out, _ = _common.timed(fn, DEV, repeats)
    return seconds, out


def sync_sites(fn) -> collections.Counter:
    """Device-to-host synchronizations during ``fn()``, by the innermost three tensorprob frames that caused them."""
    cnt: collections.Counter = collections.Counter()

    def hook(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" not in str(message).lower():
            return
        st = [f for f in traceback.extract_stack()[:-1] if "tensorprob" in f.filename]
        key = " <- ".join(f"{f.filename.split('tensorprob/')[-1]}:{f.lineno}" for f in st[::-1][:3])
        cnt[key or f"{filename}:{lineno}"] += 1

    sync()
    old = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = hook
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
            warnings.showwarning = old
    return cnt


def count_syncs(fn) -> int:
    """Device-to-host synchronizations during ``fn()``."""
    return sum(sync_sites(fn).values())


def copy_bandwidth() -> float:
    """Measured device-to-device copy bandwidth, bytes read + written per second."""
    n = 2**28  # 1 GiB of float32
    x = torch.empty(n, dtype=torch.float32, device=DEV).uniform_()
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(10):
        start.record()
        y.copy_(x)
        stop.record()
        sync()
        ts.append(start.elapsed_time(stop) / 1e3)
    del x, y
    torch.cuda.empty_cache()
    return 2 * n * 4 / float(np.median(ts))


def mnist():
    X, y = tp.datasets.load_mnist_subset()
    enc = tp.encode(X)
    return enc.codes.astype(np.int64), np.asarray(y).astype(np.int64), enc.cardinalities


_PLANTED: dict = {}


def planted(n=70000):
    if n in _PLANTED:
        return _PLANTED[n]
    s = tp.datasets.make_latent_class(n, [5] * 784 + [10], 10, random_state=0, device=DEV)
    X = s.X.cpu().numpy() if torch.is_tensor(s.X) else np.asarray(s.X)
    _PLANTED[n] = X[:, :784].astype(np.int64), X[:, 784].astype(np.int64)
    return _PLANTED[n]


def data_sets(args):
    """MNIST-5k (plus the planted 70k set unless --quick) and k (10 with --quick, else 50)."""
    sets = [("MNIST-5k", *mnist()[:2])]
    if not args.quick:
        sets.append(("planted 70k x 784", *planted()))
    return sets, 10 if args.quick else 50


# ------------------------------------------------------------------ sections
def sec_em(args, bw, rows, extra):
    sets = [("MNIST-5k + label", *mnist()[:2])]
    if not args.quick:
        sets.append(("planted 70k x 785", *planted()))
    for name, Xc, yc in sets:
        codes = np.column_stack([Xc, yc])
        M, N = codes.shape
        lls = {}
        # (dtype, starts, memory budget): the default budget (512 MiB) cuts 70k rows into chunks
        runs = [("float32", 1, None), ("float64", 1, None), ("float32", 4, None), ("float64", 4, None),
                ("float32", 1, 8 * 2**30), ("float32", 4, 8 * 2**30)]
        for dt, restarts, budget in runs:
            stamps = []

            def cb(it, ll, stamps=stamps):
                sync()
                stamps.append((time.perf_counter(), float(ll[0])))

            sync()
            t0 = time.perf_counter()
            n_it = 30 if args.quick else 100
            with tp.config_context(**({} if budget is None else {"memory_budget": budget})):
                m = tp.fit_cpd(codes, rank=20, device=DEV, dtype=dt, n_iter_max=n_it, tol=0.0, random_state=0,
                               n_restarts=restarts, callback=cb)
            sync()
            total = time.perf_counter() - t0
            t = np.array([s[0] for s in stamps])
            per = float(np.median(np.diff(t)))
            if restarts == 4 and budget is None:
                lls[dt] = float(m.loglik_history_[-1])
            # bytes per iteration: S (values in dt, int64 columns) for the E-step, S^T (float64
            # values, int64 rows) for the M-step, plus the dense (rows x models x rank) intermediates
            nnz = M * N
            esz = 4 if dt == "float32" else 8
            dense = M * 20 * restarts * (esz + 8 * 6)
            b_now = nnz * (esz + 8) + nnz * (8 + 8) + dense
            b_min = 2 * M * N * 1 + dense  # uint8 codes read twice
            n_sync = count_syncs(lambda: tp.fit_cpd(codes, rank=20, device=DEV, dtype=dt, n_iter_max=10, tol=0.0,
                                                    random_state=0, n_restarts=restarts))
            label = f"rank 20 x {restarts} start(s), {dt}" + ("" if budget is None else f", budget {budget >> 30} GiB")
            rows.append({"section": "EM iteration", "data": name, "variant": label,
                         "seconds": per,
                         "bytes_now": b_now, "floor_now_s": b_now / bw, "x_floor_now": per / (b_now / bw),
                         "bytes_codes": b_min, "x_floor_codes": per / (b_min / bw),
                         "syncs_per_call": n_sync, "note": f"10-iteration fit; total {total:.3f} s for {n_it} it., "
                                                           f"loglik {float(m.loglik_history_[-1]):.4f}"})
        extra.setdefault("em_loglik_f32_minus_f64", {})[name] = lls["float32"] - lls["float64"]
    # rank search, 5 ranks x 5 folds, batched vs separate (MNIST-5k)
    Xc, yc, _ = mnist()
    ranks, cv = (5, 10, 15, 20, 30), 5
    from sklearn.model_selection import StratifiedKFold

    folds = list(StratifiedKFold(cv, shuffle=True, random_state=0).split(Xc, yc))
    codes = np.column_stack([Xc, yc])

    def batched():
        return tp.select_rank(Xc, yc, ranks=ranks, cv=cv, random_state=0, n_iter_max=30, device=DEV)

    def separate():
        _common.separate_fits(codes, ranks, folds, n_iter_max=30, device=DEV)

    tb, res = timed(batched, 1)
    ts, _ = timed(separate, 1)
    rows.append({"section": "rank search", "data": "MNIST-5k", "variant": "5 ranks x 5 folds batched", "seconds": tb,
                 "note": f"best rank {res.best_rank}"})
    rows.append({"section": "rank search", "data": "MNIST-5k", "variant": "25 separate fits", "seconds": ts,
                 "note": f"batched {ts / tb:.2f}x faster"})


def sec_select(args, bw, rows, extra):
    sets, k = data_sets(args)
    picks = {}
    for name, Xc, yc in sets:
        M, N = Xc.shape
        for method in ("mim", "mrmr", "jmi", "cmim"):
            for dt in ("float32", "float64"):
                sec, sel = timed(lambda: tp.select_features(Xc, yc, k, method=method, device=DEV, dtype=dt))
                n_sync = count_syncs(lambda: tp.select_features(Xc, yc, k, method=method, device=DEV, dtype=dt))
                picks[(name, method, dt)] = sel.selected_.tolist()
                steps = 1 if method == "mim" else k
                b_now = steps * M * N * (8 + 4 + 4)  # int64 codes read, int32 index written + read
                b_min = steps * M * N * 1  # uint8 codes read once per step
                rows.append({"section": "selector", "data": name, "variant": f"{method.upper()} k={k}, {dt}",
                             "seconds": sec, "bytes_now": b_now, "floor_now_s": b_now / bw,
                             "x_floor_now": sec / (b_now / bw), "bytes_codes": b_min,
                             "x_floor_codes": sec / (b_min / bw), "syncs_per_call": n_sync,
                             "note": " ".join(map(str, sel.selected_[:5]))})
            same = picks[(name, method, "float32")] == picks[(name, method, "float64")]
            extra.setdefault("selector_f32_equals_f64", {})[f"{name} {method}"] = same


def sec_gsm(args, bw, rows, extra):
    Xc, yc, _ = mnist()
    k = 10 if args.quick else 50
    out = {}
    for dt in ("float32", "float64"):
        sec, sel = timed(lambda: tp.GSMCPD(k=k, rank=20, n_samples=5000, lazy=True, device=DEV, dtype=dt,
                                           random_state=0).fit(Xc, yc), 2)
        fit_s, _ = timed(lambda: tp.fit_cpd(np.column_stack([Xc]), rank=20, device=DEV, dtype=dt, random_state=0), 1)
        n_sync = count_syncs(lambda: tp.GSMCPD(k=k, rank=20, n_samples=5000, lazy=True, device=DEV, dtype=dt,
                                               random_state=0).fit(Xc, yc))
        out[dt] = sel.selected_.tolist()
        rows.append({"section": "GSM-CPD", "data": "MNIST-5k", "variant": f"k={k} rank 20 T=5000 lazy, {dt}",
                     "seconds": sec, "syncs_per_call": n_sync,
                     "note": f"CPD fit alone {fit_s:.3f} s; g_k {sel.scores_[-1]:.4f}; "
                             + " ".join(map(str, sel.selected_[:5]))})
    extra["gsm_f32_equals_f64"] = out["float32"] == out["float64"]
    # the lazy re-evaluation batch (8 candidates, chosen on the CPU): on a GPU each evaluation is
    # launch-bound, so larger batches may cost the same per call and need fewer calls per step
    import functools

    from tensorprob.selection import _gsm

    plain = _gsm.greedy_information
    for lazy_batch in (32, 128):
        _gsm.greedy_information = functools.partial(plain, lazy_batch=lazy_batch)
        try:
            sec, sel = timed(lambda: tp.GSMCPD(k=k, rank=20, n_samples=5000, lazy=True, device=DEV, dtype="float32",
                                               random_state=0).fit(Xc, yc), 2)
        finally:
            _gsm.greedy_information = plain
        rows.append({"section": "GSM-CPD", "data": "MNIST-5k",
                     "variant": f"k={k} rank 20 T=5000 lazy, lazy_batch {lazy_batch}, float32", "seconds": sec,
                     "note": f"g_k {sel.scores_[-1]:.4f}; " + " ".join(map(str, sel.selected_[:5]))})


def sec_vmi(args, bw, rows, extra):
    sets, k = data_sets(args)
    for name, Xc, yc in sets:
        M, N = Xc.shape
        for q in ("naive", "pairwise"):
            picks = {}
            for dt in ("float32", "float64"):
                reps = 3 if name == "MNIST-5k" else 1
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                sec, sel = timed(lambda: tp.VMI(k=k, q=q, device=DEV, dtype=dt).fit(Xc, yc), reps)
                peak = torch.cuda.max_memory_allocated() - base
                n_sync = ""
                if name == "MNIST-5k":
                    n_sync = count_syncs(lambda: tp.VMI(k=k, q=q, device=DEV, dtype=dt).fit(Xc, yc))
                picks[dt] = sel.selected_.tolist()
                C = int(yc.max()) + 1
                esz = 4 if dt == "float32" else 8
                # per step: the (C, candidates, M) log-q terms written and read once
                b_now = k * C * N * M * esz * (2 if q == "pairwise" else 1)
                rows.append({"section": "VMI", "data": name, "variant": f"VMI-{q} k={k}, {dt}", "seconds": sec,
                             "bytes_now": b_now, "floor_now_s": b_now / bw, "x_floor_now": sec / (b_now / bw),
                             "syncs_per_call": n_sync, "peak_gib": peak / 2**30,
                             "note": f"bound {sel.scores_[-1]:.4f}; restarts {sel.n_restarts_}; "
                                     + " ".join(map(str, sel.selected_[:5]))})
            extra.setdefault("vmi_f32_equals_f64", {})[f"{name} {q}"] = picks["float32"] == picks["float64"]


def live_at_peak(trace: list[dict], top: int = 6) -> tuple[int, list[tuple[str, int]]]:
    """The peak of allocated bytes in a CUDA allocator trace, and the bytes alive then by allocating line.

    ``trace``: the events of ``torch.cuda.memory._snapshot()["device_traces"][device]``
    (``action`` "alloc" / "free_completed", ``addr``, ``size``, ``frames``). Allocations made
    before the recording started are not in it (the peak is above them). Each live block is
    charged to its innermost frame in tensorprob (else its innermost frame).
    """
    cur = peak = 0
    at = -1
    sizes: dict[int, int] = {}
    for i, ev in enumerate(trace):  # first pass: where the peak is
        if ev["action"] == "alloc":
            sizes[ev["addr"]] = ev["size"]
            cur += ev["size"]
        elif ev["action"] == "free_completed":
            cur -= sizes.pop(ev["addr"], 0)
        if cur > peak:
            peak, at = cur, i
    live: dict[int, dict] = {}
    for ev in trace[:at + 1]:  # second pass: what is alive there
        if ev["action"] == "alloc":
            live[ev["addr"]] = ev
        elif ev["action"] == "free_completed":
            live.pop(ev["addr"], None)
    sites: collections.Counter = collections.Counter()
    for ev in live.values():
        frames = ev.get("frames") or []
        fr = next((f for f in frames if "tensorprob" in f.get("filename", "")), frames[0] if frames else None)
        key = "?" if fr is None else f"{fr['filename'].rsplit('tensorprob/', 1)[-1]}:{fr['line']} {fr.get('name', '')}"
        sites[key] += ev["size"]
    return peak, sites.most_common(top)


def traced_peak(fn) -> tuple[int, list[tuple[str, int]]]:
    """:func:`live_at_peak` of one call of ``fn`` recorded by the CUDA caching allocator."""
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
    try:
        fn()
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    dev = torch.cuda.current_device()
    traces = snap.get("device_traces") or [[]]
    return live_at_peak(traces[dev] if dev < len(traces) else [])


def sec_memory(args, bw, rows, extra):
    """Peak device memory of VMI-pairwise and JMI under several memory budgets.

    Each row also names the lines whose blocks were alive at the peak (``extra["memory_at_peak"]``:
    the allocator's trace of a second run), to show what exceeds the budget.
    """
    Xc, yc = planted(20000 if args.quick else 70000)
    for budget_mib in (64, 256, 1024):
        for label, fn in (("VMI-pairwise k=5", lambda: tp.VMI(k=5, q="pairwise", device=DEV).fit(Xc, yc)),
                          ("JMI k=5", lambda: tp.select_features(Xc, yc, 5, method="jmi", device=DEV)),
                          ("CPD fit rank 20, 3 it.", lambda: tp.fit_cpd(np.column_stack([Xc, yc]), rank=20, device=DEV,
                                                                         n_iter_max=3, tol=0.0, random_state=0))):
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            with tp.config_context(memory_budget=budget_mib * 2**20):
                sec, _ = timed(fn, 1)
            peak = torch.cuda.max_memory_allocated() - base
            rows.append({"section": "memory", "data": f"planted {Xc.shape[0] // 1000}k x 784",
                         "variant": f"{label}, budget {budget_mib} MiB", "seconds": sec, "peak_gib": peak / 2**30,
                         "note": f"peak / budget = {peak / (budget_mib * 2**20):.2f}"})
            at_peak = extra.setdefault("memory_at_peak", {})
            try:
                with tp.config_context(memory_budget=budget_mib * 2**20):
                    traced, sites = traced_peak(fn)
                at_peak[rows[-1]["variant"]] = {"traced_peak_mib": round(traced / 2**20, 1),
                                                "sites_mib": {k: round(v / 2**20, 1) for k, v in sites}}
            except Exception as exc:  # noqa: BLE001 - the breakdown is a diagnosis, not a figure
                at_peak[rows[-1]["variant"]] = f"{type(exc).__name__}: {exc}"[:200]


def sec_kernels(args, bw, rows, extra):
    """The EM's products, ``S @ log_A`` (gather kernel) and ``S^T @ Y`` (scatter kernel), against cuSPARSE.

    The decision of issue 16 item 3: the kernel stays only where it beats cuSPARSE clearly.
    """
    from tensorprob.counting import Incidence
    from tensorprob.ops import incidence_matmul_reference
    from tensorprob_kernels.incidence import incidence_gather_sum, incidence_scatter_sum, scatter_plan

    sets = [("MNIST-5k + label", np.column_stack(mnist()[:2]))] if "mnist" in args.kernel_sets else []
    if not args.quick and "planted" in args.kernel_sets:
        sets.append(("planted 70k x 785", np.column_stack(planted())))
    # gather (E-step), (block_m, num_warps, num_stages, n_split): the default launch is (32, default, default, 8);
    # the 2026-11-26 runs timed ten launches, these are the two best and the single-slice one
    choices = [(32, None, None, 1), (32, None, None, 8), (128, None, None, 16)]
    # scatter (M-step), (block_m, min_j, num_warps, n_split): defaults (64, 16, default, auto)
    s_choices = [(64, 16, None, None), (32, 16, None, None), (128, 16, None, None), (64, 32, None, None),
                 (64, 64, None, None), (64, 16, 8, None), (64, 16, None, 1), (128, 32, 8, None)]
    def add(name, variant, sec, b_hbm, note=""):
        rows.append({"section": "kernel", "data": name, "variant": variant, "seconds": sec, "bytes_now": b_hbm,
                     "floor_now_s": b_hbm / bw, "x_floor_now": sec / (b_hbm / bw), "note": note})

    def add_kernel(name, variant, fn, ref, ref_s, b_hbm):  # a kernel launch timed against its reference
        sec, got = timed(fn, 10)
        err = float((got - ref).abs().max() / (ref.abs().max() + 1))
        add(name, variant, sec, b_hbm, f"{ref_s / sec:.2f}x the reference; max rel. diff {err:.1e}")

    for name, codes in sets:
        cards = torch.as_tensor(codes.max(0) + 1)
        for dt in (torch.float32, torch.float64):
            with tp.config_context(memory_budget=2**36):  # one chunk: the whole E-step in one product
                inc = Incidence(torch.as_tensor(codes, device=DEV), cards.to(DEV), dt)
                (start, stop, S, ST), = inc.chunks()
            flat_t = inc.flat_t(start, stop)
            M, N = codes.shape
            for P in (20, 80):
                g = torch.Generator(device=DEV).manual_seed(0)
                log_A = torch.log(torch.rand(S.shape[1], P, generator=g, device=DEV, dtype=torch.float64)).to(dt)
                ref_s, ref = timed(lambda: incidence_matmul_reference(S, log_A), 10)
                esz = torch.finfo(dt).bits // 8
                b_l2 = M * N * P * esz  # the gathered log_A rows (from L2)
                b_hbm = M * N * 4 + M * P * esz  # int32 codes in, the product out (the M-step: codes and Y in)
                add(name, f"CSR reference (cuSPARSE), P={P}, {dt}", ref_s, b_hbm, f"L2 gathers {b_l2 / 1e9:.2f} GB")
                for bm, nw, ns, sp in choices:
                    add_kernel(name, f"Triton block_m={bm} warps={nw or 'def'} stages={ns or 'def'} split={sp}, "
                                     f"P={P}, {dt}",
                               lambda: incidence_gather_sum(flat_t, log_A, block_m=bm, num_warps=nw, num_stages=ns,
                                                            n_split=sp), ref, ref_s, b_hbm)
                # the M-step's S^T @ Y (Y: the weighted responsibilities, float64 in the EM)
                Y = torch.rand(M, P, generator=g, device=DEV, dtype=torch.float64).to(dt)
                STd = ST.to(dt)
                ref_s, ref = timed(lambda: incidence_matmul_reference(STd, Y), 10)
                add(name, f"S^T CSR reference (cuSPARSE), P={P}, {dt}", ref_s, b_hbm)
                for bm, mj, nw, sp in s_choices:
                    plan = scatter_plan(cards.tolist(), DEV, min_j=mj)
                    add_kernel(name, f"S^T Triton scatter block_m={bm} min_j={mj} warps={nw or 'def'} "
                                     f"split={sp or 'auto'}, P={P}, {dt}",
                               lambda: incidence_scatter_sum(flat_t, Y, inc.offsets, cards.to(DEV), inc.n_cols, plan,
                                                             block_m=bm, n_split=sp, num_warps=nw), ref, ref_s, b_hbm)


def sec_syncs(args):
    """Where each job synchronizes: call sites, for 2 and for 12 greedy steps (2 and 22 EM iterations)."""
    s = tp.datasets.make_latent_class(2000, [4] * 40 + [3], 3, random_state=0)
    X, y = s.X[:, :40], s.X[:, 40]
    jobs = {m: (lambda k, m=m: tp.select_features(X, y, k, method=m, device=DEV,
                                                   **({"q": "pairwise"} if m == "vmi" else {})))
            for m in ("mim", "mrmr", "jmi", "cmim", "mifs", "disr", "vmi", "pda")}
    jobs["em"] = lambda k: tp.fit_cpd(np.column_stack([X, y]), rank=4, n_iter_max=2 * k - 2, tol=0.0, random_state=0,
                                      device=DEV)
    with open(SCRIPT.out("syncs", "txt"), "w") as fh:
        for name, job in jobs.items():
            job(2)  # warm
            few, many = sync_sites(lambda job=job: job(2)), sync_sites(lambda job=job: job(12))
            fh.write(f"===== {name}: {sum(few.values())} syncs (k=2), {sum(many.values())} (k=12)\n")
            for key in sorted(set(few) | set(many), key=lambda key: -(many[key] - few[key])):
                fh.write(f"  {few[key]:5d} {many[key]:5d}  {key}\n")
            print(f"syncs {name}: {sum(few.values())} (k=2), {sum(many.values())} (k=12)")


def sec_profile(args):
    from torch.profiler import ProfilerActivity, profile

    Xc, yc, _ = mnist()
    jobs = {
        "jmi_mnist_k20": lambda: tp.select_features(Xc, yc, 20, method="jmi", device=DEV),
        "em_mnist_20it": lambda: tp.fit_cpd(np.column_stack([Xc, yc]), rank=20, device=DEV, n_iter_max=20, tol=0.0,
                                            random_state=0),
        "vmi_pairwise_mnist_k10": lambda: tp.VMI(k=10, q="pairwise", device=DEV).fit(Xc, yc),
        "gsm_lazy_mnist_k10": lambda: tp.GSMCPD(k=10, rank=20, n_samples=5000, lazy=True, device=DEV,
                                                random_state=0).fit(Xc, yc),
    }
    # issue 17: 100 bootstrap members of the per-sample criteria, one batched fit
    Wb = np.random.default_rng(0).multinomial(len(yc), np.full(len(yc), 1.0 / len(yc)), size=100).T.astype(float)
    jobs["vmi_naive_batched100_mnist_k10"] = lambda: tp.VMI(k=10, q="naive", device=DEV).fit(Xc, yc, resamples=Wb)
    jobs["amd11_batched100_mnist_k10"] = lambda: tp.PDA(k=10, distribution="amd", device=DEV).fit(Xc, yc, resamples=Wb)
    # the rank search of the em section (5 ranks x 5 folds, 30 iterations), whose batch is 1.7x 25 fits
    jobs["rank_search_mnist"] = lambda: tp.select_rank(Xc, yc, ranks=(5, 10, 15, 20, 30), cv=5, random_state=0,
                                                       n_iter_max=30, device=DEV)
    if not args.quick:
        big = planted  # made (and kept) only when a job that reads it runs: it takes a while
        jobs["em_planted70k_10it"] = lambda: tp.fit_cpd(np.column_stack(big()), rank=20, device=DEV, n_iter_max=10,
                                                        tol=0.0, random_state=0)
        # the issue-16 EM target's configuration (one start, the default budget); 30 iterations so the
        # per-iteration kernels outweigh the set-up
        jobs["em_planted70k_1start_30it"] = lambda: tp.fit_cpd(np.column_stack(big()), rank=20, device=DEV,
                                                               n_iter_max=30, tol=0.0, random_state=0, n_restarts=1)
        jobs["jmi_planted70k_k10"] = lambda: tp.select_features(*big(), 10, method="jmi", device=DEV)
    if args.profile_jobs:
        jobs = {k: v for k, v in jobs.items() if k in args.profile_jobs.split(",")}
    with open(SCRIPT.out("profile", "txt"), "w") as fh:
        for name, fn in jobs.items():
            fn()  # warm
            sync()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                fn()
                sync()
            table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60)
            fh.write(f"\n===== {name}\n{table}\n")
            # the host side (dispatch, Python, synchronizations), where a batch of small kernels spends its time
            host = prof.key_averages(group_by_stack_n=0).table(sort_by="self_cpu_time_total", row_limit=25,
                                                               max_name_column_width=60)
            fh.write(f"\n===== {name} (by self CPU time)\n{host}\n")
            print(f"\n===== {name}\n" + "\n".join(table.splitlines()[:12]))


def main(argv=None):
    ap = SCRIPT.parser(quick="small sizes (MNIST-5k only, k=10)", seed=False, tag="cuda")
    ap.add_argument("--sections", default="em,kernels,select,gsm,profile,vmi,memory,syncs")
    ap.add_argument("--kernel-sets", default="mnist,planted", help="data sets of the kernels section")
    ap.add_argument("--profile-jobs", default="", help="comma-separated subset of the profile section's jobs")
    args = SCRIPT.parse(ap, argv)
    if not torch.cuda.is_available():
        raise SystemExit("bench_gpu.py needs a CUDA device (torch.cuda.is_available() is False)")
    os.makedirs(args.out_dir, exist_ok=True)
    secs = args.sections.split(",")
    warnings.simplefilter("ignore")
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    info = {"machine": machine(), "gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "sm_count": props.multi_processor_count, "torch": torch.__version__, "cuda": torch.version.cuda,
            "commit": SCRIPT.commit}
    tp.select_features(np.zeros((10, 3), dtype=np.int64) + np.arange(3), np.arange(10) % 2, 1, device=DEV)  # warm
    bw = copy_bandwidth()
    info["copy_bandwidth_gbs"] = round(bw / 1e9, 1)
    print(json.dumps(info, indent=1))
    rows: list[dict] = []
    extra: dict = {}
    funcs = {"em": sec_em, "select": sec_select, "gsm": sec_gsm, "vmi": sec_vmi, "memory": sec_memory,
             "kernels": sec_kernels, "syncs": lambda a, b, r, e: sec_syncs(a),
             "profile": lambda a, b, r, e: sec_profile(a)}
    for name in secs:
        fn = funcs.get(name)
        if fn is not None:
            t0 = time.perf_counter()
            try:
                fn(args, bw, rows, extra)
            except Exception as exc:  # noqa: BLE001 - report and go on: device time is scarce
                rows.append({"section": name, "variant": "FAILED", "note": f"{type(exc).__name__}: {exc}"[:300]})
                import traceback

                traceback.print_exc()
            print(f"[{name}: {time.perf_counter() - t0:.1f} s]", flush=True)
            write_csv(SCRIPT.out("gpu"), [dict(r, **info) for r in rows])
    cols = ["section", "data", "variant", "seconds", "bytes_now", "floor_now_s", "x_floor_now", "bytes_codes",
            "x_floor_codes", "syncs_per_call", "peak_gib", "note"]
    print(markdown(rows, cols))
    print(json.dumps(extra, indent=1))
    with open(SCRIPT.out("gpu", "json"), "w") as fh:
        json.dump({"info": info, "extra": extra}, fh, indent=1)


if __name__ == "__main__":
    main()
