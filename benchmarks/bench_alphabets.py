"""Counting at every alphabet: tensorprob against FEAST on the same codes, from 2 to 128 values per feature.

    python benchmarks/bench_alphabets.py                 # the full table (about an hour on 2 cores)
    python benchmarks/bench_alphabets.py --quick         # a few small rows: a smoke test
    python benchmarks/bench_alphabets.py --part planted  # or --part skfeature (the other part's table is kept)
    python benchmarks/bench_alphabets.py --from-csv      # the report again from the two parts' CSV files

**Data.** Planted latent class samples (``tensorprob.datasets.make_planted``, rank 10,
concentration 0.3) of rows x features (100 x 10,000, 1,000 x 1,000, 10,000 x 1,000,
100,000 x 100) at alphabets 2, 5, 16, 45, 64 and 128, with 2 and 10 classes (and 40 on
1,000 x 1,000); and the papers' sets in ``../shared/data/skfeature/`` twice: binned (5
equal-width bins) and by value (every distinct value of a column one category, as many as
the column has: the codes the issue on large alphabets measured). Every data set is coded
once and the same integer codes go to both libraries: tensorprob as ``tp.Encoded`` (no
re-encoding), FEAST as a Fortran-ordered uint32 array.

**Runs.** MIM, MRMR, JMI, CMIM (Fleuret's, as FEAST's), DISR and ICAP at k = 10, one thread
each, every run in a child process of one forkserver (``measure_in_child``): the first call,
then warm calls until they fill 0.5 s (at least ``--repeats``); the figure is the median of the
warm calls. The tensorprob child also records its peak resident memory above the start of the
call (VmHWM) and the counting strategies that ran (``counting_plan_``).

**Agreement.** ``same`` is the length of the common ordered prefix of the two selections over
k; where they part, the two picks' scores under the criterion at that step are computed
independently in NumPy (plug-in entropies of ``np.unique`` counts): ``tie`` when they are
equal within 1e-9 relative (an exact tie broken another way: tensorprob takes the lowest
index), ``differ`` otherwise.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, forkserver, machine, markdown, measure_in_child, warm_median

SCRIPT = Script("alphabets", __doc__, default_threads=1)

import numpy as np

import tensorprob as tp

MAT_DIR = os.environ.get("TENSORPROB_SKFEATURE_DATA", "/work/shared/data/skfeature")
SIZES = [(100, 10000), (1000, 1000), (10000, 1000), (100000, 100)]
ALPHABETS = [2, 5, 16, 45, 64, 128]
CLASSES = [2, 10]
EXTRA = [(1000, 1000, a, 40) for a in ALPHABETS]  # 40 classes
QUICK = [(100, 2000, 45, 10), (1000, 300, 5, 10), (2000, 200, 128, 2)]
METHODS = ["mim", "mrmr", "jmi", "cmim", "disr", "icap"]
FEAST = {"mim": "MIM", "mrmr": "mRMR_D", "jmi": "JMI", "cmim": "CMIM", "disr": "DISR", "icap": "ICAP"}
K = 10


def planted(rows: int, features: int, values: int, classes: int, seed: int = 0):
    d = tp.datasets.make_planted((rows, features, values, classes), random_state=seed)
    codes = np.asarray(d.X, dtype=np.int64)
    return codes, np.asarray(d.y, dtype=np.int64)


def skfeature(name: str, by_value: bool):
    from scipy.io import loadmat

    mat = loadmat(os.path.join(MAT_DIR, name))
    X, y = np.asarray(mat["X"], dtype=np.float64), np.asarray(mat["Y"]).ravel()
    if by_value:  # every distinct value of a column one category
        codes = np.empty(X.shape, dtype=np.int64)
        for j in range(X.shape[1]):
            codes[:, j] = np.unique(X[:, j], return_inverse=True)[1].ravel()
    else:
        codes = tp.encode(X, discretizer="uniform", n_bins=5).codes.astype(np.int64)
    return codes, tp.encode_labels(y)[0].astype(np.int64)


def _peak() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) * 1024


def prepare(library: str, method: str, stem: str, k: int):
    """The untimed set-up of one selection in the child; returns the timed call."""
    import torch

    torch.set_num_threads(1)
    X, y = np.load(stem + "_X.npy"), np.load(stem + "_y.npy")
    if library == "FEAST":
        import logging
        import types

        logging.getLogger().setLevel(logging.ERROR)
        import fstoolbox
        import fstoolbox.fstoolbox as wrapper

        # fstoolbox finds its C function through inspect.stack(); read the caller's name cheaply
        wrapper.inspect = types.SimpleNamespace(stack=lambda: [None, (None, None, None, sys._getframe(2).f_code.co_name)])
        fn = getattr(fstoolbox, FEAST[method])
        Xf, yf = np.asfortranarray(X, dtype=np.uint32), y.astype(np.uint32)

        def run():
            sel = [int(i) for i in fn(Xf, yf, k)[0]]
            return [s for s in sel if s != 2**32 - 1]
        return run
    cards = X.max(0) + 1
    dt = np.int8 if cards.max() <= 127 else np.int16
    enc = tp.Encoded(X.astype(dt), cards.astype(np.int64))
    kw = {"variant": "fleuret"} if method == "cmim" else {}

    def run():
        start = _peak()
        sel = tp.select_features(enc, y, k, method=method, **kw)

        def finish():
            plan = {kind: dict(per) for kind, per in sel.counting_plan_.items()}
            return [int(i) for i in sel.selected_], _peak() - start, plan
        return {"finish": finish}
    return run


# ------------------------------------------------------------------ independent scores at a parting
def _h(*cols) -> float:
    key = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:
        key = key * (int(c.max()) + 1) + c
    _, n = np.unique(key, return_counts=True)
    p = n / n.sum()
    return float(-(p * np.log(p)).sum())


def _score(method: str, X: np.ndarray, y: np.ndarray, S: list[int], m: int) -> float:
    """The criterion of candidate m given the selected S, from plug-in entropies (NumPy)."""
    x = X[:, m]
    rel = _h(x) + _h(y) - _h(x, y)
    if method == "mim" or not S:
        return rel
    if method == "mrmr":
        return rel - np.mean([_h(x) + _h(X[:, j]) - _h(x, X[:, j]) for j in S])
    if method == "jmi":
        return sum(_h(x, X[:, j]) + _h(y) - _h(x, X[:, j], y) for j in S)
    if method == "disr":
        return sum((_h(x, X[:, j]) + _h(y) - _h(x, X[:, j], y)) / _h(x, X[:, j], y) for j in S)
    if method == "cmim":  # Fleuret's: min(I(x;y), min_j I(x;y|x_j))
        return min([rel] + [_h(x, X[:, j]) + _h(y, X[:, j]) - _h(x, X[:, j], y) - _h(X[:, j]) for j in S])
    if method == "icap":
        return rel - sum(max(0.0, (_h(x) + _h(X[:, j]) - _h(x, X[:, j]))
                             - (_h(x, y) + _h(X[:, j], y) - _h(x, X[:, j], y) - _h(y))) for j in S)
    raise ValueError(method)


def agreement(method: str, X, y, ours: list[int], theirs: list[int]) -> tuple[int, str]:
    """(common ordered prefix, "same" / "tie" / "differ") of two selections."""
    n = 0
    while n < min(len(ours), len(theirs)) and ours[n] == theirs[n]:
        n += 1
    if n == min(len(ours), len(theirs)):
        return n, "same"
    a, b = _score(method, X, y, ours[:n], ours[n]), _score(method, X, y, ours[:n], theirs[n])
    return n, "tie" if abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0) else "differ"


def _group(row: dict) -> str:
    """The summary's group of a row: planted by alphabet size, the papers' sets by coding."""
    data = str(row["data"])
    if data.startswith("planted"):
        a = int(row["alphabet"])
        return "planted, 2-5 values" if a <= 5 else "planted, 16-45 values" if a <= 45 else "planted, 64-128 values"
    return "skfeature, 5 bins" if data.endswith("5 bins") else "skfeature, by value"


def _summary(rows: list[dict]) -> str:
    """Per group and method: rows, rows behind FEAST, the smallest and the geometric mean ratio."""
    groups = sorted({_group(r) for r in rows}, key=lambda g: (not g.startswith("planted"), g))
    out = []
    for g in groups:
        for m in METHODS:
            rs = [r for r in rows if _group(r) == g and r["method"] == m]
            ratios = [float(r["FEAST / tensorprob"]) for r in rs if np.isfinite(float(r["FEAST / tensorprob"]))]
            if not ratios:
                continue
            behind = [r for r in rs if float(r["FEAST / tensorprob"]) < 1]
            worst = min(rs, key=lambda r: float(r["FEAST / tensorprob"]))
            out.append({"group": g, "method": m, "rows": len(rs), "behind FEAST": len(behind),
                        "FEAST / tensorprob, smallest": f"{float(worst['FEAST / tensorprob']):.2f} ({worst['data']})",
                        "geometric mean": float(np.exp(np.mean(np.log(ratios)))),
                        "agreement same / tie / differ": "/".join(
                            str(sum(r["agreement"] == v for r in rs)) for v in ("same", "tie", "differ")),
                        "peak MiB, largest": max(float(r["peak MiB"]) for r in rs)})
    return markdown(out, list(out[0]) if out else ["group"])


def report(parts: dict[str, list[dict]]) -> str:
    """The markdown report of the part tables (``planted``, ``skfeature``) that exist."""
    rows = [r for part in ("planted", "skfeature") for r in parts.get(part, [])]
    commits = ", ".join(f"{part} {' + '.join(sorted({str(r.get('commit', '?')) for r in rs}))}"
                        for part, rs in parts.items() if rs)  # a part resumed at another commit names both
    cols = ["data", "alphabet", "classes", "method", "tensorprob s", "FEAST s", "FEAST / tensorprob", "peak MiB",
            "strategy", "agreement"]
    n_behind = sum(float(r["FEAST / tensorprob"]) < 1 for r in rows)
    return (f"# tensorprob against FEAST at every alphabet (k = {K}, one thread each)\n\n"
            f"machine: {machine()}; commits: {commits}; FEAST / tensorprob > 1: tensorprob faster. "
            f"{len(rows)} rows, {n_behind} behind FEAST; peak MiB: resident memory above the start of the "
            f"call (VmHWM); agreement: the two selections pick for pick (`same`), parting at an exact tie "
            f"(`tie`) or not (`differ`).\n\n## Summary\n\n{_summary(rows)}\n\n## Every row\n\n"
            f"{markdown(rows, cols)}\n")


def _read_parts() -> dict[str, list[dict]]:
    parts = {}
    for part in ("planted", "skfeature"):
        df = SCRIPT.read_csv(part, keep_default_na=False)
        if df is not None:
            parts[part] = df.to_dict("records")
    return parts


def main(argv=None) -> None:
    ap = SCRIPT.parser(quick="a few small shapes, one warm call", seed=False, repeats=3, from_csv=True,
                       repeats_help="warm calls at least (they go on until they fill 0.5 s)",
                       options={"part": ("all", "which table", ["all", "planted", "skfeature"]),
                                "timeout": (300.0, "seconds per call"),
                                "methods": (",".join(METHODS), "methods to run, comma-separated; the other "
                                            "methods' rows are kept from the part's CSV file"),
                                "data": ("", "run only the data sets whose label contains one of these "
                                         "comma-separated strings; the other sets' rows are kept")})
    args = SCRIPT.parse(ap, argv)
    if args.from_csv:
        SCRIPT.write_text(report(_read_parts()))
        return
    print(f"commit: {SCRIPT.commit}", flush=True)
    ctx = forkserver(("numpy", "torch", "tensorprob"))
    import tempfile

    tmp = tempfile.mkdtemp(prefix="tp_alphabets_")
    sets = []
    if args.part in ("all", "planted"):
        shapes = QUICK if SCRIPT.quick else [(r, f, a, c) for r, f in SIZES for a in ALPHABETS for c in CLASSES] + EXTRA
        sets += [("planted", f"planted {r}x{f} a{a} c{c}", lambda r=r, f=f, a=a, c=c: planted(r, f, a, c))
                 for r, f, a, c in shapes]
    if args.part in ("all", "skfeature") and not SCRIPT.quick:
        names = sorted(n for n in os.listdir(MAT_DIR) if n.endswith(".mat")) if os.path.isdir(MAT_DIR) else []
        for n in names:
            sets += [("skfeature", f"{n[:-4]} 5 bins", lambda n=n: skfeature(n, False)),
                     ("skfeature", f"{n[:-4]} by value", lambda n=n: skfeature(n, True))]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"unknown methods {unknown}; choose from {METHODS}")
    wanted = [w.strip() for w in args.data.split(",") if w.strip()]
    run = [(p, label, load) for p, label, load in sets if not wanted or any(w in label for w in wanted)]
    parts = {} if SCRIPT.quick else _read_parts()  # a run of one part keeps the other's table
    kept = {}  # (part, data, method) -> row of an earlier run, for the methods and sets not run now
    ran = {label for _, label, _ in run}
    for part in {p for p, _, _ in sets}:
        kept.update({(part, r["data"], r["method"]): r for r in parts.get(part, [])
                     if r["method"] not in methods or r["data"] not in ran})
        parts[part] = []
    for part, label, load in sets:
        if label not in ran:  # its earlier rows, in the table's order
            parts[part] += [kept[(part, label, m)] for m in METHODS if (part, label, m) in kept]
            SCRIPT.write_csv(part, parts[part])
            continue
        X, y = load()
        stem = os.path.join(tmp, label.replace(" ", "_"))
        np.save(stem + "_X.npy", X)
        np.save(stem + "_y.npy", y)
        for method in METHODS:
            if method not in methods:
                if (part, label, method) in kept:
                    parts[part].append(kept[(part, label, method)])
                continue
            k = min(K, X.shape[1])
            res = {lib: measure_in_child(prepare, (lib, method, stem, k), 1 if SCRIPT.quick else args.repeats,
                                         args.timeout, ctx=ctx, min_seconds=0 if SCRIPT.quick else 0.5)
                   for lib in ("tensorprob", "FEAST")}
            t_tp, _ = warm_median(res["tensorprob"])
            t_fe, _ = warm_median(res["FEAST"])
            ok = res["tensorprob"]["status"] == "ok" and res["FEAST"]["status"] == "ok"
            ours, peak, plan = res["tensorprob"]["value"] if res["tensorprob"]["status"] == "ok" else ([], 0, {})
            theirs = res["FEAST"]["value"] if res["FEAST"]["status"] == "ok" else []
            prefix, verdict = agreement(method, X, y, ours, theirs) if ok else (0, "error")
            pair = plan.get("pair") or plan.get("pair_free") or plan.get("pairs") or plan.get("relevance") or {}
            row = {"data": label, "rows": X.shape[0], "features": X.shape[1], "alphabet": int(X.max()) + 1,
                   "classes": int(y.max()) + 1, "method": method, "tensorprob s": t_tp, "FEAST s": t_fe,
                   "FEAST / tensorprob": t_fe / t_tp if ok else float("nan"),
                   "peak MiB": peak / 2**20, "strategy": "+".join(sorted(pair)), "same prefix": prefix,
                   "agreement": verdict, "note": res["tensorprob"]["note"] or res["FEAST"]["note"],
                   "commit": SCRIPT.commit}
            parts[part].append(row)
            print(" | ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in row.values()), flush=True)
            SCRIPT.write_csv(part, parts[part])
        SCRIPT.write_csv(part, parts[part])  # with the kept rows after the last measured one
    SCRIPT.write_text(report(parts))


if __name__ == "__main__":
    main()
