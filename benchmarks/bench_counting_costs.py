"""Refit the counting planner's cost constants on this machine (``tensorprob/counting/_costs.py``).

    python benchmarks/bench_counting_costs.py            # prints the fitted values, one thread
    python benchmarks/bench_counting_costs.py --quick    # fewer repeats

Each constant of ``_costs.py`` is the single-core cost of one elementary operation of a counting
strategy. This script times each operation the way the strategy runs it (the same NumPy / torch
calls on arrays of the sizes the strategies use), divides by the number of operations, and
prints the values under the constants' names with the machine, so that they can be pasted into
``_costs.py``. Median of the repeats; run it on a quiet machine (another process on the cores
changes every figure).
"""
from __future__ import annotations

import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import Script, machine

SCRIPT = Script("counting_costs", __doc__, default_threads=1)

import numpy as np
import torch

from tensorprob.counting import _costs
from tensorprob.counting._bitsets import bitset_pair_tables
from tensorprob.counting._dense import _block_quantities
from tensorprob.counting._grouped import grouped_counts, grouped_work
from tensorprob.counting._sorted import run_sums
from tensorprob.counting._tables import _blocked_transpose, _xlogx, joint_table, one_hot


def _cells_for_fraction(frac: float, M: int) -> int:
    """Values to draw uniform keys from so that about ``frac`` of a row of M sorted keys start a run."""
    if frac * M <= 1:
        return 1
    if frac >= 1:
        return 1 << 30
    lo, hi = 1.0, float(1 << 30)  # distinct keys K (1 - exp(-M / K)) grow with K: bisect on log K
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        if mid * -math.expm1(-M / mid) / M < frac:
            lo = mid
        else:
            hi = mid
    return max(1, round(hi))

def seconds(fn, repeats: int) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls after one warm-up call."""
    fn()
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return float(np.median(out))


def fit(repeats: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    got: dict[str, float] = {}
    # histograms: bins in a cache block, in the last-level cache, in memory
    n = 4_000_000
    for name, bins in (("SCATTER_S", 1 << 16), ("SCATTER_L3_S", _costs.CACHE_L3_BYTES // 8), ("SCATTER_COLD_S", 1 << 24)):
        keys = torch.from_numpy(rng.integers(0, bins, n).astype(np.int32))
        got[name] = seconds(lambda k=keys, b=bins: torch.bincount(k, minlength=b), repeats) / n
    # keys are built a cache-sized block at a time, in place (as the blocked histograms do)
    x = rng.integers(0, 5, (16, 4000)).astype(np.int8)
    g = rng.integers(0, 50, 4000).astype(np.int32)
    k = np.empty(x.shape, dtype=np.int32)

    def keys() -> None:
        np.multiply(x, 50, dtype=np.int32, out=k)
        k.__iadd__(g)
    got["KEY_S"] = seconds(keys, repeats * 50) / x.size / 2
    # the feature-major copy a row-major (MIM) run makes for the strategies that read columns
    rows_major = rng.integers(0, 128, (10000, 1000)).astype(np.int16)
    got["TRANSPOSE_S"] = seconds(lambda: _blocked_transpose(rows_major), repeats) / rows_major.size
    counts = torch.from_numpy(rng.integers(0, 100, (1000, 4000)))
    L = _xlogx(200, torch.device("cpu"))
    got["CELL_S"] = seconds(lambda: L.index_select(0, counts.view(-1)).view(1000, -1).sum(1), repeats) / counts.numel()
    one = torch.zeros(1, dtype=torch.int32)
    got["BLOCK_CALL_S"] = seconds(lambda: L.index_select(0, torch.bincount(one, minlength=8)).sum(), repeats * 20) * 4
    T = torch.from_numpy(rng.integers(0, 5, (4, 3, 3, 2)).astype(np.float64))

    class D:
        log_base, n_rows = 1.0, None
    got["QUANTITIES_CALL_S"] = seconds(lambda: _block_quantities(T, D, ("mi_xa_b", "cmi_x_b_given_a")), repeats * 20)
    # grouped comparisons: M N V compares, calls per group, a cost per row put in key order and
    # per count written, by least squares over shapes of the three ways grouped_counts takes (runs,
    # folded narrow rows, blocks); the four-term model is within about 2.5x of every shape (wide
    # binary blocks and many groups of 16 values are underestimated most)
    A, b = [], []
    # the shapes of the papers' 5-bin sets weigh in (coil20, MNIST-5k, madelon, chess: groups of the
    # pick's values and of (pick, class)), so the fit is closest where the planner decides most;
    # and 100,000-row sets, where the rows' gather dominates
    for M, N, V, G in ((20000, 500, 5, 2), (4000, 8, 2, 2000), (3200, 60, 5, 15), (6400, 36, 7, 42),
                       (60000, 600, 2, 100), (1440, 1024, 5, 5), (1440, 1024, 5, 100), (5000, 784, 5, 5),
                       (5000, 784, 5, 50), (2600, 500, 5, 5), (2600, 500, 5, 10), (3196, 36, 3, 6),
                       (100, 10000, 5, 10), (1000, 1000, 16, 160), (100000, 100, 2, 20), (100000, 100, 5, 50),
                       (100000, 100, 2, 2), (10000, 100, 16, 160), (10000, 1000, 5, 50), (1000, 1000, 5, 200),
                       (1000, 1000, 2, 80), (100, 10000, 2, 20), (1000, 1000, 5, 50)):
        codes = np.ascontiguousarray(rng.integers(0, V, (M, N)).astype(np.int8))
        key = rng.integers(0, G, M)
        b.append(seconds(lambda c=codes, k=key, G=G, V=V: grouped_counts(c, k, G, V, True), repeats))
        A.append(list(grouped_work(M, N, V, G, True)))
    A, b = np.asarray(A, dtype=np.float64), np.asarray(b)
    coef = np.linalg.lstsq(A / b[:, None], np.ones_like(b), rcond=None)[0]  # relative errors weigh alike
    got["GROUPED_COMPARE_S"], got["GROUPED_CALL_S"] = max(coef[0], 1e-12), max(coef[1], 1e-8)
    got["GROUPED_ROW_S"], got["GROUPED_OUT_S"] = max(coef[2], 0.0), max(coef[3], 0.0)
    out = np.empty((200, 5, 784), dtype=np.int64)
    dst = torch.empty(784, 5, 200, dtype=torch.float64)
    got["GROUPED_CELL_S"] = seconds(lambda: np.copyto(dst.numpy(), out.transpose(2, 1, 0), casting="same_kind"),
                                    repeats) / out.size
    # sorted runs: short rows (sorting networks), long rows (quicksort, log growth)
    short = rng.integers(0, 20000, (4000, 256)).astype(np.int32)
    got["SORT_SHORT_S"] = seconds(lambda: np.sort(short, axis=1), repeats) / short.size
    per = {}
    for length in (1024, 16384):
        rows = rng.integers(0, 20000, (max(1, 2_000_000 // length), length)).astype(np.int32)
        per[length] = seconds(lambda r=rows: np.sort(r, axis=1), repeats) / rows.size
    log_s = (per[16384] - per[1024]) / math.log2(16384 / 1024)
    got["SORT_LOG_S"] = max(log_s, 0.0)
    got["SORT_LONG_S"] = max(per[1024] - got["SORT_LOG_S"] * math.log2(1024 / _costs.SORT_SHORT_ROWS), 0.0)
    # the sums over runs, at each fraction of run starts: rows of 1,000 keys from as many values as
    # give that fraction (uniform keys), the median over 100 to 10,000-key rows
    per_fraction = []
    for frac in _costs.RUN_FRACTIONS:
        t = []
        for M in (100, 1000, 10000):
            L = _xlogx(M, torch.device("cpu")).numpy()
            K = _cells_for_fraction(frac, M)
            keys = np.sort(rng.integers(0, K, (1_000_000 // M, M)).astype(np.int32), axis=1)
            t.append(seconds(lambda k=keys, L=L: run_sums(k, L), repeats) / keys.size)
        per_fraction.append(float(np.median(t)))
    got["RUN_ENTRY_S"] = tuple(per_fraction)
    # the off-baseline entries, made once per run
    from tensorprob.counting._baseline import OffBaseline, baseline_entropy_sums

    skew = rng.choice(5, size=(784, 5000), p=[0.84, 0.04, 0.04, 0.04, 0.04]).astype(np.int8)
    got["OFF_BASELINE_BUILD_S"] = seconds(lambda: OffBaseline(skew, 5), repeats) / skew.size
    # one table's count from those entries (pick x class groups; few cells per entry: the histogram way)
    off = OffBaseline(skew, 5)
    grp = (skew[0].astype(np.int64) * 10 + rng.integers(0, 10, skew.shape[1]))
    t = seconds(lambda: baseline_entropy_sums(off, None, grp, 50, 10, 5, skew.shape[1], True), repeats)
    got["OFF_ENTRY_S"] = max(t - skew.shape[0] * 5 * 50 * 2 * got["CELL_S"], 0.0) / off.nnz
    # bitsets: one AND and population count per word
    N, I, W = 500, 5, 80
    bits = rng.integers(0, 2**63, (N, I, W), dtype=np.int64).view(np.uint64)
    tot = rng.integers(0, 100, (N, I))
    got["BITSET_WORD_S"] = seconds(lambda: bitset_pair_tables(bits, bits[0], tot, tot[0]), repeats) / (N * (I - 1) ** 2 * W)
    # one-hot products, their call and their one-hot codes
    a, e = torch.rand(500, 400), torch.rand(500, 4000)
    got["PRODUCT_MADD_S"] = seconds(lambda: a.T @ e, repeats) / (500 * 400 * 4000)
    try:
        a8, e8 = torch.randint(0, 3, (512, 512), dtype=torch.int8), torch.randint(0, 2, (512, 4096), dtype=torch.int8)
        got["PRODUCT_MADD_INT8_S"] = seconds(lambda: torch._int_mm(a8.T.contiguous(), e8), repeats) / (512 * 512 * 4096)
    except (AttributeError, RuntimeError, NotImplementedError):
        got["PRODUCT_MADD_INT8_S"] = _costs.PRODUCT_MADD_INT8_S
    small = torch.rand(8, 8)
    got["PRODUCT_CALL_S"] = seconds(lambda: torch.mm(small, small), repeats * 20)
    codes = torch.from_numpy(rng.integers(0, 5, (5000, 784)).astype(np.int8))
    got["ONEHOT_S"] = seconds(lambda: one_hot(codes, 5, torch.float32), repeats) / (codes.numel() * 5)
    got["ONEHOT_INT8_S"] = seconds(lambda: one_hot(codes, 5, torch.int8), repeats) / (codes.numel() * 5)
    # a member's weighted bincount pass, and the weight patterns' sums
    fm = codes.T.contiguous().T
    w = torch.from_numpy(rng.poisson(1.0, 5000).astype(np.float64))
    y = torch.from_numpy(rng.integers(0, 10, 5000))
    got["MEMBER_PASS_S"] = seconds(lambda: joint_table(fm, 5, fm[:, 0], 5, y, 10, weights=w, complete=True),
                                   repeats) / fm.numel()
    p, t = torch.rand(10, 16, dtype=torch.float64), torch.rand(16, 200000, dtype=torch.float64)
    got["PATTERN_MADD_S"] = seconds(lambda: p @ t, repeats) / (10 * 16 * 200000)
    got["LAZY_ROUND_S"] = _lazy_round_seconds(rng, repeats)
    return got


def _lazy_round_seconds(rng, repeats: int) -> float:
    """One round of CMIM's lazy evaluation on few rows: four contenders brought up to date on two picks."""
    from tensorprob.counting import SelectionData
    from tensorprob.selection._classic import CMIMCriterion

    X, y = rng.integers(0, 5, (72, 2000)), rng.integers(0, 2, 72)
    data = SelectionData(torch.from_numpy(X.astype(np.int8)), 5, torch.from_numpy(y), 2)  # the library's codes
    crit = CMIMCriterion("fleuret", lazy=True)
    crit.start(data)
    for j in (0, 1):  # two picks (update appends them)
        crit.update(j)
    idx = np.arange(2, 6)

    def round_() -> None:
        crit.seen[idx] = 0
        crit._catch_up(idx, 2)
    return seconds(round_, repeats * 50)


def main(argv=None) -> None:
    ap = SCRIPT.parser(quick="fewer repeats", seed=False)
    SCRIPT.parse(ap, argv)
    torch.set_num_threads(1)
    got = fit(3 if SCRIPT.quick else 9)
    print(f"# {machine()}, torch {torch.__version__}, numpy {np.__version__}, one thread; commit {SCRIPT.commit}")
    for name, value in got.items():
        old = getattr(_costs, name)
        if isinstance(value, tuple):  # a constant per point of a grid
            print(f"{name} = ({', '.join(f'{v:.2g}' for v in value)})  # _costs.py: "
                  f"({', '.join(f'{v:.2g}' for v in old)})")
        else:
            print(f"{name} = {value:.3g}  # _costs.py: {old:.3g} ({value / old:.2f}x)")



if __name__ == "__main__":
    main()
