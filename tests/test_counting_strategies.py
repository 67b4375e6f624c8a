"""Every counting strategy equals the plain reference, the planner records what ran, and the kernels count right.

The strategies are forced by name (``config_context(counting=name)``) and compared with
``counting="reference"`` (the plain bincount of every table): dense tables are the same
integers, quantities agree within 1e-12 (float64 sums in another order), and selections pick
the same features. A strategy forced where it does not apply raises, naming why.
"""
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from _helpers import skip_unless_counts_on, tols

import tensorprob as tp
from tensorprob.counting import CountingPlan, SelectionData, _planner, joint_table, strategies
from tensorprob.counting._bitsets import bitset_pair_tables
from tensorprob.counting._dense import keyed_entropy_sums, pair_products
from tensorprob.counting._grouped import grouped_counts, weighted_grouped_counts
from tensorprob.counting._sorted import run_sums, sorted_entropy_sums
from tensorprob.selection import get_selector

_CLASSIC = ["mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr"]
_PAIR_Q = ("mi_x_a", "mi_x_b", "cmi_x_a_given_b", "cmi_x_b_given_a", "mi_xa_b", "h_xa", "h_xab")
_FREE_Q = ("mi_x_a", "h_xa")
#: Data variants: (missing entries, weights)
_VARIANTS = {"complete": (False, None), "missing": (True, None), "integral": (False, "integral"),
             "fractional": (False, "fractional"), "missing-integral": (True, "integral")}


def _codes(variant: str, seed: int = 0, M: int = 240, N: int = 9):
    """Codes with per-feature alphabets (2 to 6 values), a constant column and an exact duplicate."""
    missing, weights = _VARIANTS[variant]
    rng = np.random.default_rng(seed)
    cards = np.array([2, 3, 6, 4, 5, 3, 2, 6, 4][:N])
    X = rng.integers(0, cards, (M, N))
    X[:, 5] = X[:, 2]  # a duplicate: ties
    X[:, 6] = 0  # a constant
    y = (X[:, 0] + X[:, 3] * X[:, 7] + rng.integers(0, 2, M)) % 3
    if missing:
        X[rng.random(X.shape) < 0.1] = -1
    w = None
    if weights == "integral":
        w = torch.as_tensor(rng.poisson(1.0, M).astype(np.float64))
    elif weights == "fractional":
        w = torch.as_tensor(rng.gamma(1.0, 1.0, M))
    return torch.as_tensor(X.astype(np.int8)), cards, torch.as_tensor(y), 3, w


def _applies(name: str, kind: str, variant: str, device: str = "cpu") -> bool:
    """Whether the strategy ``name`` counts ``kind`` on this variant of the data."""
    missing, weights = _VARIANTS[variant]
    if name == "sparse-class":  # sparse codes only (tests/test_selection_sparse.py)
        return False
    if device != "cpu" and name in ("sorted", "keyed", "baseline", "bitsets", "grouped", "class-table"):
        return False
    if name in ("sorted", "keyed", "baseline"):
        return not missing and weights is None
    if name == "bitsets":
        return not missing and weights is None
    if name == "grouped":
        return weights != "fractional"
    return True


def _request(d: SelectionData, kind: str):
    """What one request of ``kind`` gives, as a list of tensors."""
    if kind == "class":
        return [d.class_table]
    if kind == "relevance":
        m = d.marginal_entropies()
        return [m["h_x"], m["h_b"], m["h_xb"], d.relevance]
    if kind == "pair":
        return [getattr(d.pair_information(j, _PAIR_Q), q) for j in (0, 4, 8) for q in _PAIR_Q]
    if kind == "pair_free":
        return [getattr(d.pair_information(j, _FREE_Q), q) for j in (0, 3) for q in _FREE_Q]
    if kind == "pairs":
        cand, sel = np.array([1, 4, 8, 2, 2]), np.array([0, 0, 3, 5, 7])
        q = d.pairs_information(cand, sel, ("cmi_x_b_given_a", "mi_xa_b"))
        return [q.cmi_x_b_given_a, q.mi_xa_b]
    if kind == "triple":
        q = d.triple_information(1, 7, ("cmi_x_a_given_b", "cmi_x_b_given_a"))
        return [q.cmi_x_a_given_b, q.cmi_x_b_given_a]
    if kind == "pair_table":
        return [d.pair_table(4)]
    return [d.triple_table(1, 7)]


_SINGLE_KINDS = [k for k in _planner.KINDS if k != "members"]
_CASES = [(name, kind) for kind in _SINGLE_KINDS for name in strategies(kind)]


@pytest.mark.parametrize("variant", list(_VARIANTS))
@pytest.mark.parametrize("name, kind", _CASES, ids=[f"{n}-{k}" for n, k in _CASES])
def test_every_strategy_equals_the_reference(name, kind, variant, device, dtype):
    """Forced by name, a strategy counts what the reference counts, and the plan says it ran."""
    if kind == "relevance" and _VARIANTS[variant] != (False, None):
        pytest.skip("the class entropies are asked for on complete, unweighted rows only")
    codes, cards, y, C, w = _codes(variant)
    codes, y, w = codes.to(device), y.to(device), None if w is None else w.to(device)
    with tp.config_context(counting="reference"):
        ref = _request(SelectionData(codes, cards, y, C, dtype=dtype, weights=w), kind)
    d = SelectionData(codes, cards, y, C, dtype=dtype, weights=w)
    with tp.config_context(counting=name):
        if not _applies(name, kind, variant, device):
            with pytest.raises(ValueError, match=f"counting='{name}' was asked for"):
                _request(d, kind)
            return
        got = _request(d, kind)
    assert name in d.counting_plan[kind]
    t = tols(dtype, rtol=1e-12, atol=1e-12)
    for a, b in zip(got, ref):
        if kind in ("class", "pair_table", "triple_table") and _VARIANTS[variant][1] != "fractional":
            assert a.dtype == b.dtype and torch.equal(a, b)  # the same integers
        else:
            torch.testing.assert_close(a.to(torch.float64), b.to(torch.float64), **t)


@pytest.mark.parametrize("variant", ["complete", pytest.param("missing", marks=pytest.mark.slow),
                                     pytest.param("integral", marks=pytest.mark.slow),
                                     pytest.param("fractional", marks=pytest.mark.slow)])
@pytest.mark.parametrize("method", _CLASSIC)
def test_selections_equal_the_reference_with_every_strategy(method, variant, device, dtype):
    """Every classic selector picks the same features, with scores within 1e-12, whatever counts its tables."""
    codes, _cards, y, _, w = _codes(variant, seed=3)
    X = codes.numpy().astype(float)
    X[X < 0] = np.nan
    kw = dict(k=7, discretizer=None, device=device, dtype=dtype)
    fit = {} if w is None else {"sample_weight": w.numpy()}
    with tp.config_context(counting="reference"):
        ref = get_selector(method)(**kw).fit(X, y.numpy(), **fit)
    assert set(ref.counting_plan_) <= {"class", "relevance", "pair", "pair_free", "pairs", "triple"}
    assert all(set(per) == {"bincount"} for per in ref.counting_plan_.values())
    t = tols(dtype, rtol=1e-12, atol=1e-12)
    names = ["auto"] + sorted({n for kind in ("relevance", "pair", "pair_free", "pairs") for n in strategies(kind)})
    for name in names:
        with tp.config_context(counting=name):
            try:
                got = get_selector(method)(**kw).fit(X, y.numpy(), **fit)
            except ValueError as exc:
                assert name != "auto" and "was asked for" in str(exc)
                assert not _applies(name, "pair", variant, device), exc
                continue
        np.testing.assert_array_equal(got.selected_, ref.selected_, err_msg=name)
        np.testing.assert_allclose(got.scores_, ref.scores_, err_msg=name, **t)
        served = [k for k in got.counting_plan_ if k in _planner._REGISTRY.get(name, type).__dict__.get("kinds", ())]
        for kind in served:  # the forced strategy counted every table of the kinds it serves
            assert dict(got.counting_plan_[kind]).keys() == {name}, (name, got.counting_plan_)


def test_the_planner_picks_the_cheapest_that_applies_and_says_why_not(caplog):
    """A strategy registered for a test: the planner takes it when it is cheapest, records it, logs the others."""

    class Free(_planner.Strategy):
        name, kinds = "test-free", frozenset({"pair_free"})

        def seconds(self, req):
            return 0.0

        def count(self, req):
            return self.data.planner.strategy("bincount").count(req)

    class Never(_planner.Strategy):
        name, kinds = "test-never", frozenset({"pair_free"})

        def applies(self, req):
            return "never applies"

        def seconds(self, req):  # a strategy that does not apply is never costed
            raise AssertionError("costed a strategy that does not apply")

        def count(self, req):
            raise AssertionError("counted with a strategy that does not apply")

    _planner.register(Free)
    _planner.register(Never)
    try:
        codes, cards, y, C, _ = _codes("complete")
        d = SelectionData(codes, cards, y, C)
        with caplog.at_level(logging.DEBUG, logger="tensorprob.counting"):
            q = d.pair_information(2, _FREE_Q)
        assert d.counting_plan["pair_free"] == {"test-free": 1}
        assert any("pair_free table(s) by test-free" in r.getMessage() and "test-never: never applies" in r.getMessage()
                   for r in caplog.records)
        report = str(d.counting_plan)
        assert "pair_free: test-free x1" in report and "test-never: not applicable: never applies" in report
        with tp.config_context(counting="reference"):
            ref = SelectionData(codes, cards, y, C).pair_information(2, _FREE_Q)
        assert torch.equal(q.mi_x_a, ref.mi_x_a)
        with tp.config_context(counting="test-never"), pytest.raises(ValueError, match="never applies"):
            SelectionData(codes, cards, y, C).pair_information(2, _FREE_Q)
        # the estimate a caller weighs: the cheapest that applies, under a setting the forced one; nothing recorded
        e = SelectionData(codes, cards, y, C)
        assert e.estimate_seconds(2, _FREE_Q) == 0.0
        with tp.config_context(counting="reference"):
            ref_s = e.planner.strategy("bincount").seconds(_planner.Request("pair_free", j=2, needed=_FREE_Q))
            assert e.estimate_seconds(2, _FREE_Q) == ref_s > 0
        with tp.config_context(counting="test-never"):
            assert e.estimate_seconds(2, _FREE_Q) == np.inf
        cand = np.array([0, 1, 3])
        listed = [e.planner.strategy(n) for n in strategies("pairs")]
        req = _planner.Request("pairs", cand=cand, sel=np.full(3, 2), needed=_FREE_Q)
        assert e.estimate_seconds(2, _FREE_Q, cand) == min(s.seconds(req) for s in listed if s.applies(req) is None)
        # one strategy's estimate alone (what CMIM asks of the strategy that counted its earlier pairs)
        for s in listed:
            want = s.seconds(req) if s.applies(req) is None else np.inf
            assert e.estimate_seconds(2, _FREE_Q, cand, strategy=s.name) == want
        assert e.estimate_seconds(2, _FREE_Q, strategy="test-never") == np.inf
        assert e.estimate_seconds(2, _FREE_Q, strategy="test-free") == 0.0
        assert not {"pair_free", "pairs"} & set(e.counting_plan)  # (the class tables the estimates read are counted)
    finally:
        del _planner._REGISTRY["test-free"], _planner._REGISTRY["test-never"]


@pytest.mark.slow
def test_counting_setting_and_environment_variable():
    with pytest.raises(ValueError, match="counting must be 'auto', 'reference' or one of"):
        tp.set_config(counting="fastest")
    with tp.config_context(counting="Reference"):
        assert tp.get_config()["counting"] == "reference"
    assert tp.get_config()["counting"] == "auto"
    code = textwrap.dedent("""
        import numpy as np, tensorprob as tp
        rng = np.random.default_rng(0)
        X, y = rng.integers(0, 3, (100, 5)), rng.integers(0, 2, 100)
        plan = tp.JMI(k=3).fit(X, y).counting_plan_
        print(tp.get_config()["counting"], sorted({n for per in plan.values() for n in per}))
    """)
    env = dict(os.environ, TENSORPROB_COUNTING="reference")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["reference", "['bincount']"]
    env["TENSORPROB_COUNTING"] = "nonsense"
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "counting must be 'auto', 'reference' or one of" in bad.stderr


def test_counting_plan_is_a_mapping_that_merges():
    a, b = CountingPlan(), CountingPlan()
    a.record("pair", "sorted", [("sorted", 1e-3, None), ("bitsets", None, "missing entries")])
    a.record("pair", "sorted", [])
    b.record("pair", "bincount", [])
    b.record("class", "grouped", [])
    a.merge(b)
    assert dict(a) == {"pair": {"sorted": 2, "bincount": 1}, "class": {"grouped": 1}}
    assert len(a) == 2 and "CountingPlan(" in repr(a)
    assert str(CountingPlan()) == "(no tables counted)"
    assert strategies() and set(strategies("pair")) >= {"bincount", "keyed", "sorted", "all-pairs", "grouped"}
    with pytest.raises(ValueError, match="unknown kind"):
        strategies("quadruple")


def test_large_alphabets_few_rows_are_counted_by_sorting(device):
    """Tables of many more cells than rows (100 rows, 40 values, 10 classes): the planner sorts."""
    skip_unless_counts_on("sorted", device)
    rng = np.random.default_rng(0)
    X, y = rng.integers(0, 40, (100, 300)), rng.integers(0, 10, 100)
    sel = tp.JMI(k=4, discretizer=None).fit(X, y)
    assert sel.counting_plan_["pair"] == {"sorted": 3}
    with tp.config_context(counting="reference"):
        ref = tp.JMI(k=4, discretizer=None).fit(X, y)
    np.testing.assert_array_equal(sel.selected_, ref.selected_)
    np.testing.assert_allclose(sel.scores_, ref.scores_, rtol=1e-12)


def test_baseline_is_left_out_where_most_entries_are_off_the_baseline(device):
    """Uniform codes of 64 values: almost every entry is off its feature's top value, so the
    planner never estimates the baseline strategy below the others; forced by name it still counts."""
    skip_unless_counts_on("baseline", device)
    rng = np.random.default_rng(2)
    X, y = rng.integers(0, 64, (400, 60)), rng.integers(0, 2, 400)
    enc = tp.Encoded(X, np.full(60, 64))
    sel = tp.JMI(k=4).fit(enc, y)
    assert "baseline" not in sel.counting_plan_["pair"]
    assert "baseline: not chosen here, only when forced" in str(sel.counting_plan_) and "inf" not in str(sel.counting_plan_)
    data = SelectionData(torch.as_tensor(X.astype(np.int8)), np.full(60, 64), torch.as_tensor(y), 2)
    _ = data.relevance  # the class table first: the request below reads it
    req = _planner.Request("pair", j=0, needed=("mi_xa_b",))
    assert data.planner.strategy("baseline").seconds(req) == np.inf
    with tp.config_context(counting="baseline"):
        forced = tp.JMI(k=4).fit(enc, y)
    assert forced.counting_plan_["pair"] == {"baseline": 3}
    np.testing.assert_array_equal(forced.selected_, sel.selected_)
    np.testing.assert_allclose(forced.scores_, sel.scores_, rtol=1e-12)


def test_few_features_read_mostly_are_counted_all_at_once():
    rng = np.random.default_rng(1)
    X, y = rng.integers(0, 3, (400, 12)), rng.integers(0, 2, 400)
    assert tp.JMI(k=12).fit(X, y).counting_plan_["pair"] == {"all-pairs": 11}


# ---------------------------------------------------------------- memory
_MEMORY_CHILD = textwrap.dedent("""
    import resource, sys
    import numpy as np, torch
    import tensorprob as tp
    M, N, V, C, budget = (int(a) for a in sys.argv[1:6])
    rng = np.random.default_rng(0)
    codes = rng.integers(0, V, (M, N)).astype(np.int8)
    y = rng.integers(0, C, M)
    enc = tp.Encoded(codes, np.full(N, V))
    def peak():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) * 1024
    tp.JMI(k=2).fit(tp.Encoded(codes[:50, :20], np.full(20, V)), y[:50])  # warm up the libraries
    start = peak()
    for name in sys.argv[6:]:
        with tp.config_context(memory_budget=budget, counting=name):
            tp.JMI(k=3).fit(enc, y)
    print(peak() - start)
""")


@pytest.mark.slow
@pytest.mark.parametrize("M, N, V, C", [(100, 6000, 86, 10), (3000, 300, 5, 10), (2000, 500, 40, 2)])
def test_peak_memory_stays_within_the_budget(M, N, V, C, dtype):
    """JMI's peak memory above the start stays within memory_budget plus the codes (100 rows x 6,000 features
    of 86 values, 10 classes: dense pair tables of every candidate would take 3.5 GB)."""
    if dtype == "float32":
        pytest.skip("one lane is enough: the child process runs the default dtype")
    budget = 64 * 2**20
    out = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(M), str(N), str(V), str(C), str(budget), "auto"],
                         capture_output=True, text=True, check=True)
    extra = int(out.stdout.split()[-1])
    assert extra <= budget + M * N * 8, f"peak {extra / 2**20:.0f} MiB above the start at a {budget / 2**20:.0f} MiB budget"


# ---------------------------------------------------------------- kernels
def _grouped_reference(codes: np.ndarray, key: np.ndarray, G: int, card: int) -> np.ndarray:
    """(G, card, N) counts by one bincount over (group, value, column), rows with a negative key or code left out."""
    N = codes.shape[1]
    keep = (key[:, None] >= 0) & (codes >= 0)
    idx = (key[:, None] * card + codes) * N + np.arange(N)[None, :]
    return np.bincount(idx[keep], minlength=G * card * N).reshape(G, card, N)


@pytest.mark.parametrize("complete", [True, False])
@pytest.mark.parametrize("itype", [np.int8, np.int16, np.int64])
@pytest.mark.parametrize("shape, G", [((700, 9), 3), ((60, 5000), 4), ((1, 3), 2), ((300, 1), 7)])
def test_grouped_counts_equal_a_bincount(complete, itype, shape, G):
    """Runs longer than 255 rows, blocks of a few rows (5,000 columns), empty groups, rows left out, missing codes."""
    rng = np.random.default_rng(shape[0] + G)
    card = 5
    codes = rng.integers(0 if complete else -1, card, shape).astype(itype)
    key = rng.integers(-1, G, shape[0])
    key[key == 1] = 2  # group 1 empty
    got = grouped_counts(np.ascontiguousarray(codes), key, G, card, complete)
    assert got.dtype == np.int64 and got.shape == (G, card, shape[1])
    np.testing.assert_array_equal(got, _grouped_reference(codes, key, G, card))


@pytest.mark.parametrize("complete", [True, False])
@pytest.mark.parametrize("N", [1, 7, 36, 100, 511])
def test_folded_grouped_counts_equal_a_bincount(complete, N):
    """Narrow rows read r at a time: groups shorter than one fold, of whole folds, with a tail, empty, very long."""
    from tensorprob.counting import _grouped

    rng = np.random.default_rng(N)
    r = 1 << ((_grouped._FOLD_WIDTH // N).bit_length() - 1)
    sizes = [3, 0, r, 2 * r + 5, 1, 255 * r + r + 2 if N == 1 else 400 * r + 1]
    key = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    key = np.concatenate([key, -np.ones(7, dtype=key.dtype)])  # rows left out
    codes = rng.integers(0 if complete else -1, 6, (key.size, N)).astype(np.int8)
    got = grouped_counts(codes, key, len(sizes), 6, complete)
    np.testing.assert_array_equal(got, _grouped_reference(codes, key, len(sizes), 6))


@pytest.mark.parametrize("complete", [True, False])
@pytest.mark.parametrize("N, sizes", [
    (1600, None),  # 3,000 rows in 100 random groups: short groups over several buffers
    (1600, [600, 0, 250, 100, 80, 60, 50, 40, 30, 20, 10, 5]),  # a group longer than a buffer
    (37, list(range(1, 80)) + [0, 0, 256, 255, 300] + [3] * 6),  # 1 to 300 rows in one buffer
    (5000, [300, 0, 300]),  # rows too wide for 255 in a buffer
    (784, [500] * 10),  # long groups
])
def test_grouped_runs_equal_a_bincount(complete, N, sizes):
    rng = np.random.default_rng(N + (0 if sizes is None else len(sizes)))
    card = 5
    if sizes is None:
        G = 100
        key = rng.integers(0, G, 3000)
    else:
        G = len(sizes)
        key = np.repeat(np.arange(G), sizes)
    key = np.concatenate([key, np.full(30, -1)])  # rows without a group
    rng.shuffle(key)
    codes = np.ascontiguousarray(rng.integers(0 if complete else -1, card, (key.size, N)).astype(np.int8))
    codes[:, 0] = 0  # a constant column: a byte sum of more than 255 rows would wrap
    got = grouped_counts(codes, key, G, card, complete)
    np.testing.assert_array_equal(got, _grouped_reference(codes.astype(np.int64), key, G, card))


@pytest.mark.parametrize("complete", [True, False])
def test_weighted_grouped_counts_equal_a_weighted_bincount(complete):
    rng = np.random.default_rng(5)
    M, N, G, card = 800, 30, 6, 4
    codes = rng.integers(0 if complete else -1, card, (M, N)).astype(np.int8)
    key = rng.integers(-1, G, M)
    w = rng.poisson(1.3, M).astype(np.float64)
    got = weighted_grouped_counts(codes, key, G, card, complete, w)
    keep = (key[:, None] >= 0) & (codes >= 0)
    idx = (key[:, None] * card + codes) * N + np.arange(N)[None, :]
    ref = np.bincount(idx[keep], weights=np.broadcast_to(w[:, None], (M, N))[keep],
                      minlength=G * card * N).reshape(G, card, N)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("I, C, N", [(2, 1, 9), (3, 2, 9), (6, 3, 9), (5, 7, 9), (5, 2, 40),
                                     pytest.param(3, 1, 300, marks=pytest.mark.slow)])
def test_pair_products_equal_a_bincount(I, C, N):
    """Gram matrices without every feature's last value (its cells from the margins), blocks on and above the
    diagonal: every pair's counts equal one bincount's (an empty class, a short and a constant feature)."""
    rng = np.random.default_rng(I * 10 + C + N)
    M = 300
    X = rng.integers(0, I, (M, N))
    X[:, 2] %= max(1, I - 1)  # never the last value
    X[:, 5] = I - 1  # always the last value
    y = rng.integers(0, C, M)
    if C > 2:
        y[y == 1] = 0  # class 1 empty
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    with tp.config_context(memory_budget=200_000):
        got = pair_products(Xt, I, yt, C, None, complete=True)
        full = pair_products(Xt, I, yt, C, None, complete=False)
    assert torch.equal(got, full)
    cell = (X[:, None, :] * I + X[:, :, None]) * C + y[:, None, None]  # (rows, j, c): (x_c, x_j, class)
    keys = cell.reshape(M, -1) + np.arange(N * N)[None, :] * (I * I * C)
    counts = np.bincount(keys.ravel(), minlength=N * N * I * I * C).reshape(N * N, -1)
    np.testing.assert_array_equal(got.reshape(N * N, -1).numpy(), counts)


@pytest.mark.parametrize("M", [1, 63, 64, 65, 1000])
def test_bitset_pair_tables_equal_a_bincount(M):
    rng = np.random.default_rng(M)
    N, I = 7, 4
    X = rng.integers(0, I, (M, N))
    X[:, 2] %= 2
    words = (M + 63) // 64
    bits = np.zeros((N, I, words * 8), dtype=np.uint8)
    for v in range(I):
        bits[:, v, :(M + 7) // 8] = np.packbits((X.T == v), axis=1, bitorder="little")
    bits = bits.view(np.uint64)
    totals = np.stack([(X == v).sum(0) for v in range(I)], 1)
    for j in (0, 2, 6):
        got = bitset_pair_tables(bits, bits[j], totals, totals[j])
        ref = np.stack([np.bincount(X[:, c] * I + X[:, j], minlength=I * I).reshape(I, I) for c in range(N)])
        np.testing.assert_array_equal(got, ref)


def _brute_xlogx(keys_row: np.ndarray) -> float:
    _, c = np.unique(keys_row, return_counts=True)
    return float((c * np.log(c)).sum())


@pytest.mark.parametrize("M, span", [(1, 5), (2, 1), (50, 3), (100, 20000), (700, 40), (3000, 7)])
def test_run_sums_equal_the_counts_of_sorted_rows(M, span):
    """Both ways of summing c log c over runs (many repeats, or almost none) equal a brute-force count."""
    rng = np.random.default_rng(M + span)
    from tensorprob.counting._tables import _xlogx

    s = np.sort(rng.integers(0, span, (23, M)).astype(np.int32), axis=1)
    got = run_sums(s, _xlogx(M, torch.device("cpu")).numpy())
    np.testing.assert_allclose(got, [_brute_xlogx(r) for r in s], rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("kernel", [sorted_entropy_sums, keyed_entropy_sums])
@pytest.mark.parametrize("M, I, A, C", [(100, 45, 45, 10), (333, 5, 3, 2), (64, 128, 128, 4), (2000, 3, 3, 1),
                                        (60, 3, 3, 9)])
def test_entropy_sum_kernels_equal_brute_force(kernel, M, I, A, C):
    """The sorted and the keyed kernels: sum c log c of the (x, a, class) tables and of their (x, a) margins.

    The keyed kernel's two ways are both here: one NumPy histogram of few keys and cells (333 x 5
    with 2 classes, its class margin by adds of slices; 60 x 3 with 9 classes, by one segmented
    sum) and cache-sized torch blocks (the others)."""
    rng = np.random.default_rng(M + I)
    x = rng.integers(0, I, (17, M))
    a = rng.integers(0, A, M)
    y = rng.integers(0, C, M)
    g = a * C + y
    full, margin = kernel(x, g, A * C, C, I, True)
    keys = x * (A * C) + g
    np.testing.assert_allclose(full, [_brute_xlogx(r) for r in keys], rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(margin, [_brute_xlogx(r // C) for r in keys], rtol=1e-13, atol=1e-12)
    # a transposed view of row-major codes (a MIM run's): the same sums
    strided = np.ascontiguousarray(x.T).T
    assert not strided.flags.c_contiguous
    for got, want in zip(kernel(strided, g, A * C, C, I, True), (full, margin)):
        np.testing.assert_array_equal(got, want)
    picks = rng.integers(0, A * C, (5, M))  # listed pairs: candidate i's groups are picks[which[i]]
    which = rng.integers(0, 5, 17)
    full, _ = kernel(x, (picks, which), A * C, C, I, False)
    np.testing.assert_allclose(full, [_brute_xlogx(r) for r in x * (A * C) + picks[which]], rtol=1e-13, atol=1e-12)


def test_keyed_sums_of_row_major_codes_beyond_the_cache_equal_feature_major_ones():
    """Row-major codes larger than the last-level cache: the keyed kernel copies each block's
    columns by blocks of rows into one buffer; the sums equal those of feature-major codes."""
    rng = np.random.default_rng(11)
    rows = rng.integers(0, 7, (4200, 4100)).astype(np.int8)  # beyond the last-level cache
    y = rng.integers(0, 3, 4200)
    got = keyed_entropy_sums(rows.T, y, 3, 3, 7, True)
    want = keyed_entropy_sums(np.ascontiguousarray(rows.T), y, 3, 3, 7, True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("weighted", [False, True])
def test_feature_major_codes_count_as_row_major_ones(weighted):
    g = torch.Generator().manual_seed(0)
    codes = torch.randint(-1, 4, (300, 17), generator=g)
    a, b = torch.randint(0, 3, (300,), generator=g), torch.randint(-1, 2, (300,), generator=g)
    w = torch.rand(300, generator=g, dtype=torch.float64) if weighted else None
    ref = joint_table(codes.contiguous(), 4, a, 3, b, 2, weights=w)
    fm = codes.T.contiguous().T
    assert fm.stride(0) == 1
    got = joint_table(fm, 4, a, 3, b, 2, weights=w)
    if weighted:  # the weights are summed in another order
        torch.testing.assert_close(got, ref, rtol=1e-13, atol=1e-13)
    else:
        assert torch.equal(got, ref)
    assert torch.equal(codes, fm)  # the caller's codes are untouched


def test_a_row_major_run_copies_its_codes_feature_major_once_and_costs_the_copy():
    """A run holding the caller's row-major codes (MIM) gives the strategies that read a feature's
    entries one transposed copy where the codes outgrow the last-level cache (estimated until made),
    else the codes in place; a feature-major run its memory."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (4200,), generator=g)
    rows = torch.randint(0, 3, (4200, 4100), dtype=torch.int8, generator=g)  # beyond the last-level cache
    d = SelectionData(rows, 3, y, 2, row_major=True)
    assert d.codes.stride(1) == 1 and d.transpose_seconds() > 0
    fm = d.feature_major_codes()
    assert fm.flags.c_contiguous and np.array_equal(fm, rows.numpy().T)
    assert d.transpose_seconds() == 0 and d.feature_major_codes() is fm
    small = SelectionData(rows[:300, :9].contiguous(), 3, y[:300], 2, row_major=True)  # read in place
    assert small.transpose_seconds() == 0
    assert np.shares_memory(small.feature_major_codes(), small.codes.numpy())
    held = SelectionData(rows[:300, :9].contiguous(), 3, y[:300], 2)
    assert held.transpose_seconds() == 0
    assert np.shares_memory(held.feature_major_codes(), held.codes.numpy())


@pytest.mark.parametrize("shape", [(1000, 3), (700, 600), (5, 1), (3000, 40)])
def test_feature_major_copy_is_the_transpose(shape):
    from tensorprob.counting._tables import feature_major

    codes = torch.randint(-1, 7, shape, dtype=torch.int8)
    fm = feature_major(codes)
    assert fm.stride(0) == 1 and fm.shape == codes.shape
    assert torch.equal(fm, codes)


def test_open_candidates_read_zero_and_the_rest_equal_every_column():
    """Once most features are retired a step counts the open candidates only: theirs equal a full count's."""
    codes, cards, y, C, _ = _codes("complete", M=300, N=9)
    full = SelectionData(codes, cards, y, C)
    part = SelectionData(codes, cards, y, C)
    for r in range(6):
        part.retire(r)
    a, b = full.pair_information(7, ("mi_xa_b",)).mi_xa_b, part.pair_information(7, ("mi_xa_b",)).mi_xa_b
    torch.testing.assert_close(b[6:], a[6:], rtol=1e-12, atol=1e-12)
    assert torch.equal(b[:6], torch.zeros(6, dtype=torch.float64))


def test_cards_must_match_the_columns():
    codes = torch.zeros(5, 3, dtype=torch.int8)
    with pytest.raises(ValueError, match="cards has 2 entries for 3 feature columns"):
        SelectionData(codes, np.array([2, 2]), torch.zeros(5, dtype=torch.int64), 2)
    assert SelectionData(codes, 4, torch.zeros(5, dtype=torch.int64), 2).cards.tolist() == [4, 4, 4]


@pytest.mark.parametrize("M, I, A, C, p0", [(300, 5, 5, 3, 0.8), (200, 40, 40, 10, 0.9), (150, 6, 3, 1, 0.0),
                                            (400, 30, 2, 2, 0.99), (1, 3, 3, 2, 0.5)])
@pytest.mark.parametrize("subset", [False, True])
def test_baseline_entropy_sums_equal_brute_force(M, I, A, C, p0, subset):
    """Counts from the entries off each feature's most frequent value, by histogram or by sorted rows, for
    every feature or a subset, with a shared group per row or one per candidate (listed pairs)."""
    from tensorprob.counting._baseline import OffBaseline, baseline_entropy_sums

    rng = np.random.default_rng(M + I + A)
    N = 23
    probs = np.r_[p0, np.full(I - 1, (1 - p0) / (I - 1))] if I > 1 else [1.0]
    fm = rng.choice(I, size=(N, M), p=probs).astype(np.int8)
    fm[4] = 2  # a constant feature: no entry off its baseline
    fm[7, : M // 2] = 1  # a baseline that is not value 0
    off = OffBaseline(fm, I)
    a, y = rng.integers(0, A, M), rng.integers(0, C, M)
    cols = np.array([0, 4, 7, 11, 22]) if subset else None
    x = fm if cols is None else fm[cols]
    picks, which = rng.integers(0, A, (4, M)) * C + y, rng.integers(0, 4, x.shape[0])
    for g, rows in ((a * C + y, a * C + y), ((picks, which), picks[which])):
        full, margin = baseline_entropy_sums(off, cols, g, A * C, C, I, M, True)
        keys = x.astype(np.int64) * (A * C) + rows
        np.testing.assert_allclose(full, [_brute_xlogx(r) for r in keys], rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(margin, [_brute_xlogx(r // C) for r in keys], rtol=1e-13, atol=1e-12)
