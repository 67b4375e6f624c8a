"""Cost constants of the counting strategies: the one place the planner's estimates read.

Each constant is a rough single-core cost of one elementary operation of a strategy, in
seconds; only their ratios decide a plan, and every strategy's count is the same exact
integers (or float64 sums of the same weights), so a constant that is off changes the speed,
never a value. ``benchmarks/bench_counting_costs.py`` measures each operation on the machine
it runs on and prints the fitted values in this module's names; the values below are its
output on the 2-core x86-64 (AVX-512) machine of ``docs/benchmarks.md`` (2026-11-28).
"""
from __future__ import annotations

import bisect
import math

# ---------------------------------------------------------------- histograms (bincount, scatter-add)
#: One scattered histogram update whose bins stay in cache (a cache-sized block of tables).
SCATTER_S = 1.1e-9
#: One histogram update whose bins spill out of cache (one table of the whole data, large).
SCATTER_COLD_S = 28e-9
#: One histogram update into a table the size of the last-level cache (``CACHE_L3_BYTES``).
SCATTER_L3_S = 3.8e-9
#: One entry of an index built from the codes (a widening multiply and adds, NumPy).
KEY_S = 0.18e-9
#: One entry of a blocked transposed copy of the codes (a run that holds them row-major, read feature-major).
TRANSPOSE_S = 0.8e-9
#: One cell of a count table read back: its ``m log m`` looked up and summed into an entropy.
CELL_S = 1.4e-9
#: Fixed cost of one block of a blocked count (allocation, a few NumPy / torch calls).
BLOCK_CALL_S = 28e-6
#: Fixed cost of the ~30 small tensor operations that turn one table into its quantities.
QUANTITIES_CALL_S = 0.21e-3

# ---------------------------------------------------------------- grouped comparisons
#: One (value, entry) comparison with its byte sum (SIMD; the grouped counts).
GROUPED_COMPARE_S = 0.084e-9
#: One NumPy call of the grouped counts' inner loop (with its gather of a block of rows).
GROUPED_CALL_S = 0.89e-6
#: One row of the grouped counts put in key order (its key's sort, its gather).
GROUPED_ROW_S = 53e-9
#: One (group, value, column) count written by the grouped counts.
GROUPED_OUT_S = 0.85e-9
#: One output cell of a grouped count (levels combined, transposed into a table).
GROUPED_CELL_S = 0.98e-9

# ---------------------------------------------------------------- sorted runs
#: One entry of a row sort of small integer keys, rows of at most ``SORT_SHORT_ROWS`` entries
#: (sorting networks: about a nanosecond an entry whatever the row).
SORT_SHORT_S = 0.83e-9
#: Longest row sorted at the short-row rate.
SORT_SHORT_ROWS = 512
#: One entry of a longer row (a quicksort), plus ``SORT_LOG_S`` per doubling of the row past ``SORT_SHORT_ROWS``.
SORT_LONG_S = 3.3e-9
SORT_LOG_S = 2.6e-9
#: One entry of the sums over the runs of sorted keys, by the fraction of entries that start a run
#: (``RUN_FRACTIONS``, interpolated between them): the passes are branchy, so rows of a few long
#: runs or of mostly distinct keys are cheap and everything between costs several times more.
RUN_FRACTIONS = (0.0, 0.01, 0.1, 0.3, 0.62, 0.85, 0.95, 1.0)
RUN_ENTRY_S = (0.56e-9, 0.72e-9, 1.8e-9, 1.4e-9, 2.9e-9, 1.8e-9, 1.3e-9, 0.2e-9)

# ---------------------------------------------------------------- off-baseline entries
#: One entry of the codes sorted into the entries off each feature's most frequent value (once per run).
OFF_BASELINE_BUILD_S = 8.1e-9
#: One off-baseline entry of a table's count (its group gathered, its keys, two histogram passes).
OFF_ENTRY_S = 7e-9

# ---------------------------------------------------------------- bitsets
#: One 64-bit word ANDed with another and population-counted (NumPy's bitwise_count).
BITSET_WORD_S = 1.8e-9

# ---------------------------------------------------------------- one-hot products
#: One multiply-add of one-hot Gram products on the CPU, float32.
PRODUCT_MADD_S = 0.024e-9
#: The same in int8 with int32 sums (``torch._int_mm``; AVX-512 VNNI).
PRODUCT_MADD_INT8_S = 0.0059e-9
#: One multiply-add on a GPU (float32 tensor cores are far faster; this is a bound).
PRODUCT_MADD_GPU_S = 0.0025e-9
#: One product call (per class).
PRODUCT_CALL_S = 1.9e-6
#: One entry of the float32 one-hot codes built for the products (once per fit).
ONEHOT_S = 3.1e-9
#: One entry of int8 one-hot codes (built by comparisons).
ONEHOT_INT8_S = 1e-9

# ---------------------------------------------------------------- batches of weighted members
#: One code of one bincount pass over a member's rows (weighted; members' own tables).
MEMBER_PASS_S = 2.6e-9
#: One multiply-add of the weight-pattern sums (member x pattern x cell, float64).
PATTERN_MADD_S = 0.22e-9

# ---------------------------------------------------------------- decisions that are not costs
#: Members share each pick's count when at most this fraction of their weights differ from 1
#: (10-fold training masks: 0.1; bootstrap counts: about 0.63).
SHARE_MAX_DIFFERING = 0.25
#: Weight patterns (rows whose weights agree across members) counted as one key digit, at most.
PATTERNS_MAX = 16
#: Distinct nonzero weights that the grouped counts take as levels of their key, at most.
GROUPED_MAX_LEVELS = 16
#: A step counts only the open candidates once at most this fraction of them is open.
OPEN_FRACTION = 0.75
#: Fixed seconds of one step of CMIM's lazy rounds (about 1.5 listed-pair requests and their
#: NumPy bookkeeping), against which ``lazy="auto"`` weighs an eager step.
LAZY_STEP_S = 0.2e-3
#: Fixed seconds of one round of CMIM's lazy evaluation (one listed-pair request of a few pairs and
#: its bookkeeping): a round brings its contenders all the way up to date when their pairs cost less.
LAZY_ROUND_S = 0.12e-3


def lazy_pairs_per_step(n_features: int, k: int, seed: int) -> int:
    """Listed pairs a typical step of CMIM's lazy rounds counts, selecting k of N features.

    The seed, about sqrt(N) contenders near the best, and k / 2 pairs for the picks the leaders
    have not seen: steps near ties count more, steps with a clear leader fewer (the pairs counted
    by the CMIM rows of ``benchmarks/bench_alphabets.py``: 10-250 a step at k = 10 and 50, on 36
    to 2,000 features).
    """
    return int(seed + max(k, 0) / 2 + math.sqrt(max(n_features, 0)))
#: The planner chooses the baseline strategy only while at most this share of the entries is off
#: each feature's most frequent value: above it, gathering the entries costs more than the rows saved.
BASELINE_MAX_OFF = 0.6
#: Bytes of a block of count tables kept in cache (the blocked histograms).
CACHE_BLOCK_BYTES = 2**20
#: Bytes of a table that still updates at about ``SCATTER_L3_S`` (the last-level cache).
CACHE_L3_BYTES = 2**24


def scatter_seconds(table_bytes: float) -> float:
    """Seconds of one histogram update into tables of ``table_bytes`` in all.

    ``SCATTER_S`` within a cache block, rising log-linearly to ``SCATTER_L3_S`` at the
    last-level cache and to ``SCATTER_COLD_S`` at eight times that (memory).
    """
    if table_bytes <= CACHE_BLOCK_BYTES:
        return SCATTER_S
    if table_bytes <= CACHE_L3_BYTES:
        t = math.log2(table_bytes / CACHE_BLOCK_BYTES) / math.log2(CACHE_L3_BYTES / CACHE_BLOCK_BYTES)
        return SCATTER_S + t * (SCATTER_L3_S - SCATTER_S)
    t = min(1.0, math.log2(table_bytes / CACHE_L3_BYTES) / 3)
    return SCATTER_L3_S + t * (SCATTER_COLD_S - SCATTER_L3_S)


def run_seconds(rows: int, length: int, cells: float) -> float:
    """Seconds of the sums over runs of ``rows`` sorted rows of ``length`` keys spread over ``cells`` values.

    A row holds about ``cells (1 - exp(-length / cells))`` distinct keys (the uniform case, an
    upper bound for skewed codes); their share of the row picks the cost per entry.
    """
    if rows <= 0 or length <= 0:
        return 0.0
    cells = max(float(cells), 1.0)
    p = min(1.0, cells * -math.expm1(-length / cells) / length)
    i = min(max(bisect.bisect_right(RUN_FRACTIONS, p), 1), len(RUN_FRACTIONS) - 1)
    f0, f1 = RUN_FRACTIONS[i - 1], RUN_FRACTIONS[i]
    t = (p - f0) / (f1 - f0)
    return rows * length * (RUN_ENTRY_S[i - 1] * (1 - t) + RUN_ENTRY_S[i] * t)


def sort_seconds(rows: int, length: int) -> float:
    """Seconds to sort ``rows`` rows of ``length`` small integer keys each (one sort per row)."""
    per = SORT_SHORT_S if length <= SORT_SHORT_ROWS else SORT_LONG_S + SORT_LOG_S * math.log2(length / SORT_SHORT_ROWS)
    return rows * length * per
