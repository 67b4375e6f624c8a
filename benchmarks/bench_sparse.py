"""Selection on sparse corpora: tensorprob from the stored entries against scikit-learn, one thread, time and peak memory.

    nice -n 10 python benchmarks/bench_sparse.py [--quick] [--sizes 200000x50000,1000000x100000]

For every size (rows x vocabulary, ``--nnz`` tokens per row, 2 classes, 20 planted informative
terms) a Zipf corpus from :func:`tensorprob.datasets.make_sparse_corpus` (its CSR matrix,
int32 counts) is drawn once and saved; each measurement loads it in a fresh child process (not
timed) and times one call, ``fit`` of the selector on the CSR matrix as a user passes it
(encoding included), median of ``--repeats`` warm calls after a first one (or the first alone
when it takes longer than ``--repeat-under`` seconds). Peak memory is the resident set's
high-water mark during the call above the resident set before it (Linux ``VmHWM`` after
resetting it), next to the size of the CSR matrix. Rows: MIM (k = 50; its scores are the
relevances, so k does not change its time), MRMR, JMI and CMIM at k = 50, and ``fit_cpd``
(rank 10 with the label, one start, 20 EM iterations); scikit-learn's
``chi2`` and ``mutual_info_classif(discrete_features=True)`` on the same matrix. The latter
loops over the columns in Python, so it is timed on the first ``--mi-columns`` columns and
scaled to the vocabulary (marked "extrapolated"). "planted" is how many of the planted terms
the k picks hold (for scikit-learn: its top k scores). A last part (``--accuracy``) compares
the selections downstream: on a 5-class corpus with weakly planted terms, each method selects
on 70 % of the rows and two text classifiers are scored on the rest at k = 10, 20, 50.
A ``--distributed`` part times JMI with ``distributed=True`` on 1 and 2 Gloo processes, with the
default counting and with ``counting="reference"``.
Writes ``sparse.csv``, ``sparse_accuracy.csv``, ``sparse_distributed.csv`` and ``sparse.md`` with the
machine, date and commit.
"""
from __future__ import annotations

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, markdown, measure_in_child, warm_median

SCRIPT = Script("sparse", __doc__, default_threads=1)

import numpy as np

METHODS = ("MIM", "MRMR", "JMI", "CMIM")


def _corpus_path(cache: str, M: int, N: int, nnz: float, seed: int) -> str:
    return os.path.join(cache, f"corpus_{M}x{N}_nnz{nnz:g}_seed{seed}")


def make_corpus(cache: str, M: int, N: int, nnz: float, seed: int) -> str:
    """Draw the corpus once (CSR ``.npz`` plus labels and planted terms), kept in ``cache``."""
    import scipy.sparse as sp

    import tensorprob as tp

    base = _corpus_path(cache, M, N, nnz, seed)
    if not os.path.exists(base + "_X.npz"):
        os.makedirs(cache, exist_ok=True)
        d = tp.datasets.make_sparse_corpus(M, N, nnz_per_row=nnz, random_state=seed)
        sp.save_npz(base + "_X.npz", d.X, compressed=False)
        np.savez(base + "_meta.npz", y=d.y, informative=d.metadata["informative"])
    return base


def _rss() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process in bytes."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out["VmRSS"], out["VmHWM"]


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current resident set
        return True
    except OSError:
        return False


def prepare(base: str, method: str, k: int, mi_columns: int, threads: int, device: str = "cpu"):
    """Load the corpus (untimed) and return the timed call; its result gives planted hits and peak memory."""
    import scipy.sparse as sp
    import torch

    torch.set_num_threads(threads)
    import tensorprob as tp

    X = sp.load_npz(base + "_X.npz").tocsr()
    meta = np.load(base + "_meta.npz")
    y, planted = meta["y"], set(meta["informative"].tolist())

    def run():
        import gc

        gc.collect()
        ok = _reset_peak()
        before = _rss()[0]
        if device != "cpu":  # on a GPU the peak is the device's allocation, not the host's resident set
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        if method == "chi2":
            from sklearn.feature_selection import chi2

            scores = chi2(X, y)[0]
            picks = np.argsort(-np.nan_to_num(scores, nan=-1.0), kind="stable")[:k]
            cols = X.shape[1]
        elif method == "mutual_info_classif":
            from sklearn.feature_selection import mutual_info_classif

            cols = min(mi_columns, X.shape[1])
            scores = mutual_info_classif(X[:, :cols], y, discrete_features=True, random_state=0)
            picks = np.argsort(-scores, kind="stable")[:k]
        elif method == "fit_cpd":
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # not converged in 20 iterations: a fixed amount of work
                tp.fit_cpd(X, rank=10, y=y, n_restarts=1, n_iter_max=20, tol=0, random_state=0, device="cpu")
            picks, cols = [], X.shape[1]
        else:
            picks = getattr(tp, method)(k=k, device=device).fit(X, y).selected_
            if device != "cpu":
                torch.cuda.synchronize()
            cols = X.shape[1]
        if device != "cpu":
            peak = torch.cuda.max_memory_allocated() - before
        else:
            peak = _rss()[1] - before if ok else float("nan")
        return {"finish": lambda: dict(planted=len(planted & set(np.asarray(picks).tolist())) if len(picks) else "",
                                       peak=peak, cols=cols)}

    return run


def accuracy_rows(M: int, N: int, k_list: list[int], seed: int) -> list[dict]:
    """Downstream accuracy of each selector's top k terms on a held-out 30 % (the selection on the other 70 %)."""
    import scipy.sparse as sp
    from sklearn.feature_selection import chi2, mutual_info_classif
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import MultinomialNB
    from sklearn.svm import LinearSVC

    import tensorprob as tp

    d = tp.datasets.make_sparse_corpus(M, N, nnz_per_row=50, n_classes=5, n_informative=100, effect=6.0,
                                       random_state=seed)
    X, y = sp.csr_matrix(d.X), d.y
    tr, te = train_test_split(np.arange(M), test_size=0.3, stratify=y, random_state=seed)
    kmax = max(k_list)
    picks, seconds = {}, {}
    for name in ("MIM", "MRMR", "JMI", "CMIM"):
        t = time.perf_counter()
        picks[name] = getattr(tp, name)(k=kmax).fit(X[tr], y[tr]).selected_
        seconds[name] = time.perf_counter() - t
    for name, fn in (("chi2", lambda A, b: chi2(A, b)[0]),
                     ("mutual_info_classif", lambda A, b: mutual_info_classif(A, b, discrete_features=True,
                                                                              random_state=seed))):
        t = time.perf_counter()
        scores = np.nan_to_num(fn(X[tr], y[tr]), nan=-1.0)
        picks[name] = np.argsort(-scores, kind="stable")[:kmax]
        seconds[name] = time.perf_counter() - t
    rows = []
    for name, p in picks.items():
        for k in k_list:
            cols = np.asarray(p[:k])
            row = dict(part="accuracy", size=f"{M:,} x {N:,}", method=name, k=k, select_s=round(seconds[name], 2),
                       planted=len(set(cols.tolist()) & set(d.metadata["informative"].tolist())))
            for cname, clf in (("naive_bayes", MultinomialNB()), ("linear_svm", LinearSVC(C=0.1, random_state=seed))):
                clf.fit(X[tr][:, cols], y[tr])
                row[cname] = round(float((clf.predict(X[te][:, cols]) == y[te]).mean()), 4)
            rows.append(row)
    return rows


def _dist_worker(rank: int, world: int, port: int, base: str, k: int, counting: str, queue) -> None:
    """One rank of a distributed selection: its share of the corpus's rows, JMI with distributed=True, timed."""
    import datetime

    import scipy.sparse as sp
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    import tensorprob as tp

    X = sp.load_npz(base + "_X.npz").tocsr()
    y = np.load(base + "_meta.npz")["y"]
    cuts = np.linspace(0, X.shape[0], world + 1).astype(int)
    Xr, yr = X[cuts[rank]:cuts[rank + 1]], y[cuts[rank]:cuts[rank + 1]]
    del X
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=3600))
    try:
        with tp.config_context(counting=counting):
            dist.barrier()
            t = time.perf_counter()
            sel = tp.JMI(k=k, distributed=True).fit(Xr, yr)
            seconds = time.perf_counter() - t
        queue.put((rank, seconds, sel.selected_.tolist(), str(sel.counting_plan_)))
    finally:
        dist.destroy_process_group()


def distributed_rows(base: str, M: int, N: int, k: int, world: int, counting: str) -> dict:
    """JMI at k on ``world`` Gloo processes (rows split evenly, one thread each): the slowest rank's seconds."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s_:
        s_.bind(("127.0.0.1", 0))
        port = s_.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_dist_worker, args=(r, world, port, base, k, counting, queue)) for r in range(world)]
    for p_ in procs:
        p_.start()
    out = [queue.get(timeout=7200) for _ in procs]
    for p_ in procs:
        p_.join()
    picks = {tuple(o[2]) for o in out}
    plan = next(o[3] for o in out if o[0] == 0)
    return dict(part="distributed", size=f"{M:,} x {N:,}", method="JMI", k=k, processes=world, counting=counting,
                seconds=round(max(o[1] for o in out), 3), same_picks_on_ranks=len(picks) == 1,
                pair_strategy=(re.search(r"^pair: (\S+)", plan, re.M) or re.search("(.*)", plan)).group(1))


def main() -> None:
    ap = SCRIPT.bench_parser("two small corpora (seconds), for a check of the script", peers=True)
    ap.set_defaults(repeats=3)
    ap.add_argument("--sizes", default="200000x50000,1000000x100000",
                    help="comma-separated ROWSxVOCABULARY (default 200000x50000,1000000x100000)")
    ap.add_argument("--nnz", type=float, default=50.0, help="tokens per row (default 50)")
    ap.add_argument("--k", type=int, default=50, help="features selected (default 50)")
    ap.add_argument("--methods", default=",".join(METHODS) + ",fit_cpd",
                    help="tensorprob selectors, and fit_cpd (rank 10, one start, 20 EM iterations, the label "
                    "included) (default MIM,MRMR,JMI,CMIM,fit_cpd)")
    ap.add_argument("--big-methods", default="MIM,JMI,fit_cpd",
                    help="methods run on sizes of a million rows or more (default MIM,JMI,fit_cpd)")
    ap.add_argument("--mi-columns", type=int, default=200,
                    help="columns mutual_info_classif is timed on (scaled to the vocabulary; default 200)")
    ap.add_argument("--repeat-under", type=float, default=30.0,
                    help="warm repeats only for calls whose first run takes less (seconds; default 30)")
    ap.add_argument("--cache", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "tensorprob-sparse-bench"),
                    help="where the corpora are kept between runs")
    ap.add_argument("--accuracy", default="20000x20000",
                    help="ROWSxVOCABULARY of the downstream-accuracy part (5 classes, 100 planted terms; "
                    "'' skips it; default 20000x20000)")
    ap.add_argument("--distributed", default="50000x10000",
                    help="ROWSxVOCABULARY of the distributed part: JMI at k = 10 on 1 and 2 Gloo processes (rows "
                    "split evenly, one thread each), the default counting against counting='reference' ('' skips "
                    "it; default 50000x10000)")
    args = SCRIPT.start(ap)
    if SCRIPT.quick:
        args.sizes, args.k, args.accuracy, args.distributed = "20000x5000", 10, "3000x2000", "5000x2000"
    sizes = [tuple(int(v) for v in s.lower().split("x")) for s in args.sizes.split(",") if s]
    rows, failed = [], []
    t_start = time.perf_counter()
    for M, N in sizes:
        base = make_corpus(args.cache, M, N, args.nnz, 0)
        import scipy.sparse as sp

        X = sp.load_npz(base + "_X.npz")
        csr_mb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
        nnz = X.nnz
        del X
        methods = args.methods.split(",") if M < 1_000_000 else args.big_methods.split(",")
        if not args.no_peers:
            methods = methods + ["chi2", "mutual_info_classif"]
        # a CUDA column where a device is asked for: the selectors with device set (they count sparse input
        # on the host, so it measures what a GPU user gets); the CPD fits sparse input on the CPU alone
        runs = [(m, dev) for dev in args.device_list for m in methods if dev == "cpu" or m in METHODS]
        for method, device in runs:
            job = (base, method, args.k, args.mi_columns, args.threads, device)
            res = measure_in_child(prepare, job, repeats=0, timeout=3600.0)  # the first call alone
            if res["status"] == "ok" and res["first"] < args.repeat_under:  # quick enough for warm repeats
                res = measure_in_child(prepare, job, repeats=args.repeats, timeout=3600.0)
            first = res["first"]
            warm = res["warm"]
            t, how = warm_median(dict(warm=warm))
            if not warm:
                t, how = first, "one call"
            info = res["value"] if isinstance(res["value"], dict) else {}
            note = res["note"]
            if device != "cpu":  # the selectors' device setting: sparse input is still counted on the host
                note = (note + "; " if note else "") + "device set; the stored entries are counted on the CPU"
            if method == "mutual_info_classif" and info.get("cols"):
                scale = N / info["cols"]
                t *= scale
                note = (note + "; " if note else "") + f"extrapolated from {info['cols']} of {N} columns"
                info["planted"] = ""
            if res["status"] != "ok":
                failed.append(f"{method} {M}x{N}")
            lib = "scikit-learn" if method in ("chi2", "mutual_info_classif") else "tensorprob"
            rows.append(dict(size=f"{M:,} x {N:,}", rows=M, vocabulary=N, nnz=nnz, csr_mb=round(csr_mb, 1),
                             library=lib, device=device, method=method, k="" if method == "fit_cpd" else args.k,
                             seconds=round(t, 3), timing=how,
                             first_s=round(first, 3), peak_mb=round(info.get("peak", float("nan")) / 2**20, 1),
                             planted=info.get("planted", ""), status=res["status"], note=note))
            print({k: rows[-1][k] for k in ("size", "method", "seconds", "peak_mb", "planted", "note")}, flush=True)
            SCRIPT.save(rows)
    acc = []
    if args.accuracy:
        M, N = (int(v) for v in args.accuracy.lower().split("x"))
        acc = accuracy_rows(M, N, [10, 20, 50] if not SCRIPT.quick else [5, 10], 0)
        SCRIPT.write_csv("accuracy", acc)
    dist_rows = []
    if args.distributed:
        M, N = (int(v) for v in args.distributed.lower().split("x"))
        base = make_corpus(args.cache, M, N, args.nnz, 0)
        for world in (1, 2):
            for counting in ("auto", "reference"):
                dist_rows.append(distributed_rows(base, M, N, 10, world, counting))
                print(dist_rows[-1], flush=True)
                SCRIPT.write_csv("distributed", dist_rows)
    cols = ["size", "csr_mb", "library", "device", "method", "k", "seconds", "timing", "peak_mb", "planted", "note"]
    minutes = (time.perf_counter() - t_start) / 60
    text = "\n".join([
        "# Selection on sparse corpora (issue 46)", "",
        SCRIPT.header() + f"; {minutes:.1f} min", "",
        f"Zipf corpora of `make_sparse_corpus` ({args.nnz:g} tokens a row, 2 classes, 20 planted terms)"
        + ("; `seconds`: one `fit` on the CSR matrix (encoding included), median of warm calls or one call; "
           "`peak_mb`: resident-set high-water mark during the call above the resident set before it (on CUDA: "
           "the peak device allocation above the allocation before it); "
           "`csr_mb`: the CSR matrix (data, indices, pointers)." if rows else "."), "",
        *([markdown(rows, cols), ""] if rows else []),
        *(["## Downstream accuracy at equal k", "",
           f"A {acc[0]['size']} corpus (5 classes, 100 planted terms, effect 6), stratified 70/30 split: "
           "each method selects on the 70 % (`select_s`: its time, one thread), a multinomial naive Bayes and a "
           "linear SVM (C = 0.1) on the selected columns are scored on the 30 %; `planted`: planted terms among "
           "the k.", "",
           markdown(acc, ["method", "k", "select_s", "planted", "naive_bayes", "linear_svm"]), ""] if acc else []),
        *(["## Distributed selection", "",
           f"JMI at k = 10 with `distributed=True` on a {dist_rows[0]['size']} corpus, the rows split evenly over "
           "Gloo processes on this machine (one thread each; `seconds`: the slowest process, setup included), with "
           "the default counting (the pair tables' cells from each rank's stored entries, summed over the ranks) "
           "and with `counting='reference'` (dense blocks of each rank's rows); `same_picks_on_ranks`: every "
           "process returned the same picks.", "",
           markdown(dist_rows, ["size", "processes", "counting", "pair_strategy", "seconds", "same_picks_on_ranks"]),
           ""] if dist_rows else [])])
    SCRIPT.publish(text)
    SCRIPT.done(failed)


if __name__ == "__main__":
    main()
