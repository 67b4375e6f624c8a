"""Fast paths equal the general ones: all-pairs counting on small data, feature-major counting."""
import numpy as np
import pytest
import torch
from _helpers import force_grouped

import tensorprob as tp
from tensorprob.counting import SelectionData, joint_table
from tensorprob.selection import get_selector

_CLASSIC = ["mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr"]


def _data(missing: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (400, 14))
    X[:, 5] = X[:, 2]  # an exact duplicate: ties
    y = (X[:, 0] + X[:, 3] * X[:, 7] + rng.integers(0, 2, 400)) % 3
    if missing:
        X = X.astype(float)
        X[rng.random(X.shape) < missing] = np.nan
    return X, y


@pytest.mark.parametrize("method", _CLASSIC)
@pytest.mark.parametrize("missing, weights", [(0.0, None), (0.1, None), (0.0, "integral"), (0.1, "integral"),
                                              (0.0, "fractional")])
def test_all_pairs_path_equals_the_per_step_path(method, missing, weights, monkeypatch, device, dtype):
    # k = N: the run plans the all-pairs pass (one-hot products per class; bincounts for fractional
    # weights); with plan() disabled every step counts its own tables
    X, y = _data(missing)
    kw = dict(k=14, device=device, dtype=dtype)
    if missing:
        kw["discretizer"] = None  # integral floats with NaN: categories
    rng = np.random.default_rng(1)
    fit = {} if weights is None else {"sample_weight": rng.poisson(1.0, len(y)).astype(float) if weights == "integral"
                                      else rng.gamma(1.0, 1.0, len(y))}
    fast = get_selector(method)(**kw).fit(X, y, **fit)
    monkeypatch.setattr(SelectionData, "plan", lambda self, k, classes=True: None)
    slow = get_selector(method)(**kw).fit(X, y, **fit)
    np.testing.assert_array_equal(fast.selected_, slow.selected_)
    if device == "cuda" and weights == "fractional":
        # CUDA adds fractional weights into the tables with atomics, in no fixed order: the last bits move
        np.testing.assert_allclose(fast.scores_, slow.scores_, rtol=1e-12, atol=64 * np.finfo(np.float64).eps)
    else:
        np.testing.assert_array_equal(fast.scores_, slow.scores_)  # the same float64 operations per table


@pytest.mark.parametrize("missing", [False, True])
def test_class_free_all_pairs_equal_the_class_tables_summed(missing):
    # a run that never reads the class (MRMR, MIFS) plans class-free tables of every pair: the
    # class tables summed over the class, rows without a class left out, the same quantities
    rng = np.random.default_rng(4)
    codes = torch.as_tensor(rng.integers(-1 if missing else 0, 3, (300, 9)))
    y = torch.as_tensor(rng.integers(-1 if missing else 0, 4, 300))
    free, full = SelectionData(codes, 3, y, 4), SelectionData(codes, 3, y, 4)
    free.plan(9, classes=False)
    full.plan(9)
    assert free._all_pairs and full._all_pairs
    for j in (0, 4, 8):
        a, b = free.pair_information(j, classes=False), full.pair_information(j, classes=False)
        assert a.T.shape[-1] == 1 and b.T.shape[-1] == 4
        torch.testing.assert_close(a.T[..., 0], b.T.sum(-1), rtol=0, atol=0)
        for q in ("h_x", "h_a", "h_xa", "mi_x_a"):
            assert torch.equal(getattr(a, q), getattr(b, q)), q
    # a read with the class after a class-free plan counts its own step's tables
    assert torch.equal(free.pair_information(2).cmi_x_a_given_b, full.pair_information(2).cmi_x_a_given_b)

    codes = torch.randint(0, 3, (50, 20))
    d = SelectionData(codes, 3, codes[:, 0], 3)
    d.plan(5)  # 4 pair reads of 20 features: per step
    assert not d._all_pairs
    d.plan(15)
    assert d._all_pairs
    with tp.config_context(memory_budget=2**16):  # 50 x 20 x 20 x 8 bytes > 64 KiB
        d.plan(15)
    assert not d._all_pairs
    # optdigits' shape (64 features of 17 values, 10 classes): the Gram matrices would cost more
    # than the steps they save (measured 610 ms against 85 for JMI)
    codes = torch.randint(0, 17, (5620, 64), dtype=torch.int8)
    d = SelectionData(codes, 17, torch.randint(0, 10, (5620,)), 10)
    d.plan(50)
    assert not d._all_pairs
    assert d._bitsets() is None  # 17 values: the AND-and-count makes more work than the histogram
    small = SelectionData(codes % 8, 8, torch.randint(0, 10, (5620,)), 10)
    assert small._bitsets() is not None or not hasattr(np, "bitwise_count")


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


@pytest.mark.parametrize("shape", [(1000, 3), (700, 600), (5, 1), (3000, 40)])
def test_feature_major_copy_is_the_transpose(shape):
    """The blocked feature-major copy of the codes equals ``codes.T.contiguous().T``, as a transposed view."""
    from tensorprob.counting._selection import feature_major
    codes = torch.randint(-1, 7, shape, dtype=torch.int8)
    fm = feature_major(codes)
    assert fm.stride(0) == 1 and fm.shape == codes.shape
    assert torch.equal(fm, codes)


@pytest.mark.parametrize("M", [1, 63, 64, 65, 1000, 1100])  # 1 to 18 words per bitset
def test_class_free_bitset_tables_equal_the_full_tables(M, dtype):
    """MRMR's I(X_m; X_j) from the (candidate, value) bitsets equals the full (x, x_j, class) tables' value."""
    rng = np.random.default_rng(M)
    N, I = 9, 4
    X = torch.as_tensor(rng.integers(0, I, (M, N)))
    X[:, 2] %= 2  # a smaller alphabet
    y = torch.as_tensor(rng.integers(0, 3, M))
    d = SelectionData(X, I, y, 3, dtype=dtype)
    for j in (0, 2, 8):
        free, full = d.pair_information(j, classes=False), d.pair_information(j)
        assert free.T.shape == (N, I, I, 1)
        # the counted cells and the ones read from the margins (last value of x and of x_j)
        assert torch.equal(free.T[..., 0].to(torch.float64), full.T.sum(3).to(torch.float64))
        for name in ("mi_x_a", "h_xa", "h_x", "h_a"):
            assert torch.equal(getattr(free, name), getattr(full, name)), name
    assert d._bits is not False
    # weighted or missing: the full tables
    w = SelectionData(X, I, y, 3, dtype=dtype, weights=torch.ones(M, dtype=torch.float64))
    assert w.pair_information(0, classes=False).T.shape[3] == 3
    Xm = X.clone()
    Xm[0, 1] = -1
    assert SelectionData(Xm, I, y, 3, dtype=dtype).pair_information(0, classes=False).T.shape[3] == 3
    # bitsets beyond a quarter of the budget: class-free bincounts, the same values
    Xb, yb = torch.as_tensor(rng.integers(0, I, (20000, N))), torch.as_tensor(rng.integers(0, 3, 20000))
    ref = SelectionData(Xb, I, yb, 3, dtype=dtype).pair_information(4).mi_x_a
    with tp.config_context(memory_budget=2**16):
        small = SelectionData(Xb, I, yb, 3, dtype=dtype)
        got = small.pair_information(4, classes=False)
        assert small._bits is False and got.T.shape == (N, I, I, 1)
        assert torch.equal(got.mi_x_a, ref)


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
    """The grouped comparison counts are the bincount's: runs longer than 255 rows, blocks of a few
    rows (5,000 columns), empty groups, rows left out by their key, missing codes."""
    from tensorprob.counting._tables import grouped_counts
    rng = np.random.default_rng(shape[0] + G)
    card = 5
    codes = rng.integers(0 if complete else -1, card, shape).astype(itype)
    key = rng.integers(-1, G, shape[0])
    key[key == 1] = 2  # group 1 empty
    got = grouped_counts(np.ascontiguousarray(codes), key, G, card, complete)
    assert got.dtype == np.int64 and got.shape == (G, card, shape[1])
    np.testing.assert_array_equal(got, _grouped_reference(codes, key, G, card))


@pytest.mark.parametrize("I, C, N", [(2, 1, 9), (3, 2, 9), (6, 3, 9), (5, 7, 9), (5, 2, 40), (3, 1, 300)])
def test_pair_products_without_last_values_equal_the_full_products(I, C, N, monkeypatch):
    """The one-hot Gram matrices of complete rows without every feature's last value, the last
    values' cells from the margins, and (128 columns and more) only the blocks on and above the
    diagonal multiplied: every pair's counts equal one bincount's, with an empty class, a feature
    of fewer values than I and a constant one, in blocks of rows (a small memory budget)."""
    from tensorprob.counting._selection import _pair_products

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
        got = _pair_products(Xt, I, yt, C, None, complete=True)
        full = _pair_products(Xt, I, yt, C, None, complete=False)
    assert torch.equal(got, full)
    cell = (X[:, None, :] * I + X[:, :, None]) * C + y[:, None, None]  # (rows, j, c): (x_c, x_j, class)
    keys = cell.reshape(M, -1) + np.arange(N * N)[None, :] * (I * I * C)
    counts = np.bincount(keys.ravel(), minlength=N * N * I * I * C).reshape(N * N, -1)
    np.testing.assert_array_equal(got.reshape(N * N, -1).numpy(), counts)


@pytest.mark.parametrize("complete", [True, False])
@pytest.mark.parametrize("N", [1, 7, 36, 100, 511])
def test_folded_grouped_counts_equal_a_bincount(complete, N):
    """Narrow rows read r at a time (_grouped_folded): groups shorter than one fold, of whole folds
    exactly, with a tail, empty, and longer than 255 folds, every column count equal to the
    bincount's."""
    from tensorprob.counting import _tables

    rng = np.random.default_rng(N)
    r = 1 << ((_tables._FOLD_WIDTH // N).bit_length() - 1)
    sizes = [3, 0, r, 2 * r + 5, 1, 255 * r + r + 2 if N == 1 else 400 * r + 1]
    key = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    key = np.concatenate([key, -np.ones(7, dtype=key.dtype)])  # rows left out
    codes = rng.integers(0 if complete else -1, 6, (key.size, N)).astype(np.int8)
    got = _tables.grouped_counts(codes, key, len(sizes), 6, complete)
    np.testing.assert_array_equal(got, _grouped_reference(codes, key, len(sizes), 6))


@pytest.mark.parametrize("row_major", [True, False])
def test_class_free_grouped_tables_equal_the_bitsets(row_major, monkeypatch, dtype):
    """Many features of few rows: the class-free tables by grouped comparisons (_free_grouped) equal
    the bitsets' and the full tables summed over the class, cell by cell and in their quantities,
    for every column and for the open candidates once features are retired."""
    from tensorprob.counting import _selection

    rng = np.random.default_rng(17)
    M, N, I = 700, 300, 4
    X = rng.integers(0, I, (M, N))
    X[:, 5] %= 2  # a smaller alphabet
    X = torch.as_tensor(X if row_major else np.asfortranarray(X))
    y = torch.as_tensor(rng.integers(0, 3, M))

    def run(grouped: bool) -> list:
        monkeypatch.setattr(_selection, "FREE_GROUPED_MIN_FEATURES", 256 if grouped else 10**9)
        d = SelectionData(X, I, y, 3, dtype=dtype)
        out = []
        for step, j in enumerate((0, 5, 299, 17)):
            if step == 3:  # retire most features: only the open candidates are counted
                assert (d._bits is None) == grouped  # the bitsets are never built when grouped counts
                for r in range(40, 300):
                    d.retire(r)
            free, full = d.pair_information(j, classes=False), d.pair_information(j)
            if step < 3:  # every column's tables (the open ones' quantities are read as (N,) vectors)
                assert free.T.shape[3] == 1
                assert torch.equal(free.T[..., 0].to(torch.float64), full.T.sum(3).to(torch.float64))
                out.append(free.T)
            out += [free.mi_x_a, free.h_xa]
        return out

    for a, b in zip(run(True), run(False)):
        assert a.dtype == b.dtype and torch.equal(a, b)


@pytest.mark.parametrize("complete", [True, False])
@pytest.mark.parametrize("itype", [np.int8, np.int16, np.int64])
@pytest.mark.parametrize("N, sizes, runs", [
    (1600, None, True),  # 3,000 rows in 100 random groups: short groups over several buffers
    (1600, [600, 0, 250, 100, 80, 60, 50, 40, 30, 20, 10, 5], True),  # a group longer than a buffer (262-327 rows)
    (37, list(range(1, 80)) + [0, 0, 256, 255, 300] + [3] * 6, True),  # 1 to 300 rows in one buffer
    (5000, [300, 0, 300], False),  # rows too wide for 255 in a buffer: the blocks
    (784, [500] * 10, False),  # long groups: the blocks
])
def test_grouped_runs_equal_a_bincount_and_the_blocks(complete, itype, N, sizes, runs, monkeypatch):
    """The runs of consecutive groups compared together (_grouped_in_runs) count as a bincount and as
    the block-by-block loop, and are taken for short groups of rows that fit 255 to a buffer:
    empty groups, rows left out by their key, missing codes."""
    from tensorprob.counting import _tables

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
    codes = np.ascontiguousarray(rng.integers(0 if complete else -1, card, (key.size, N)).astype(itype))
    codes[:, 0] = 0  # a constant column: a byte sum of more than 255 rows would wrap
    taken = []
    real = _tables._grouped_in_runs
    monkeypatch.setattr(_tables, "_grouped_in_runs", lambda *a: taken.append(1) or real(*a))
    got = _tables.grouped_counts(codes, key, G, card, complete)
    assert bool(taken) == runs
    np.testing.assert_array_equal(got, _grouped_reference(codes.astype(np.int64), key, G, card))
    monkeypatch.setattr(_tables, "_grouped_in_runs", lambda o, s, v, out: _tables._grouped_by_blocks(
        o, np.arange(o.shape[0]), 0, o, s, v, _tables._grouped_rows(o.shape[1], v.shape[0]), out))
    np.testing.assert_array_equal(_tables.grouped_counts(codes, key, G, card, complete), got)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("missing", [False, True])
def test_grouped_tables_equal_the_bincount_tables(missing, weighted, monkeypatch, dtype):
    """SelectionData's class table, pair tables and their quantities are the same with either way of counting,
    from row-major or feature-major codes, unweighted or with integral (frequency) weights."""
    rng = np.random.default_rng(11)
    M, N, I, C = 900, 12, 4, 3
    X = torch.as_tensor(rng.integers(-1 if missing else 0, I, (M, N)).astype(np.int8))
    y = torch.as_tensor(rng.integers(-1 if missing else 0, C, M))
    weights = torch.as_tensor(rng.poisson(1.0, M).astype(np.float64)) if weighted else None

    def run(grouped: bool, codes: torch.Tensor) -> list:
        force_grouped(monkeypatch, grouped)
        d = SelectionData(codes, I, y, C, dtype=dtype, weights=weights)
        out = [d.class_table, d.relevance, d.pair_table(3)]
        for j in (0, 7):
            info = d.pair_information(j)
            out += [info.T, info.mi_xa_b, info.cmi_x_b_given_a, info.mi_x_a]
        if grouped:  # row-major codes were used (the caller's, or one transposed copy)
            assert isinstance(d._rows, np.ndarray) and d._rows.flags.c_contiguous
        return out

    ref = run(False, X)
    for codes in (X, X.T.contiguous().T):  # the caller's rows, or a transposed copy of feature-major codes
        for a, b in zip(run(True, codes), ref):
            assert a.dtype == b.dtype
            assert torch.equal(a, b)


@pytest.mark.parametrize("method", _CLASSIC)
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_selections_equal_with_grouped_counts(method, missing, monkeypatch, dtype):
    """Every classic selector picks the same features with the same scores whichever way its tables are counted."""
    X, y = _data(missing, seed=3)
    kw = dict(k=8, device="cpu", dtype=dtype)
    if missing:
        kw["discretizer"] = None
    monkeypatch.setattr(SelectionData, "plan", lambda self, k, classes=True: None)  # every step counts
    fits = []
    for grouped in (True, False):
        force_grouped(monkeypatch, grouped)
        fits.append(get_selector(method)(**kw).fit(X, y))
    np.testing.assert_array_equal(fits[0].selected_, fits[1].selected_)
    np.testing.assert_array_equal(fits[0].scores_, fits[1].scores_)


def test_grouped_cost_model_prefers_small_alphabets():
    """The comparisons for 5 values over many rows, the bincount for 17 values (optdigits) or few rows per group."""
    from tensorprob.counting._tables import grouped_is_cheaper
    assert grouped_is_cheaper(5000, 784, 5, 50, True)  # MNIST-5k, a JMI step
    assert grouped_is_cheaper(100_000, 1000, 5, 10, True)
    assert not grouped_is_cheaper(5620, 64, 17, 170, True)  # optdigits
    assert not grouped_is_cheaper(200, 10, 5, 1000, True)  # a call per group dominates


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("missing", [False, True])
def test_row_major_data_count_the_class_table_alike(grouped, missing, monkeypatch, dtype):
    """MIM's data stay row-major (no feature-major copy): the same class table and relevance either way."""
    force_grouped(monkeypatch, grouped)
    rng = np.random.default_rng(5)
    X = torch.as_tensor(rng.integers(-1 if missing else 0, 6, (500, 70)).astype(np.int8))
    y = torch.as_tensor(rng.integers(0, 4, 500))
    rows, fm = SelectionData(X, 6, y, 4, dtype=dtype, row_major=True), SelectionData(X, 6, y, 4, dtype=dtype)
    assert rows.codes.stride(1) == 1 and fm.codes.stride(0) == 1
    assert torch.equal(rows.class_table, fm.class_table)
    assert torch.equal(rows.relevance, fm.relevance)
    assert torch.equal(rows.pair_table(3), fm.pair_table(3))  # any count reads either layout


@pytest.mark.parametrize("complete", [True, False])
def test_weighted_grouped_counts_equal_a_weighted_bincount(complete, monkeypatch):
    """Integral weights (0 leaves a row out, negative ones subtract) are levels of the group key: the weighted
    bincount's sums; fractional weights and too many levels are left to the bincount."""
    from tensorprob.counting._tables import _GROUPED_MAX_LEVELS, weighted_grouped_counts
    rng = np.random.default_rng(7)
    M, N, G, card = 800, 130, 3, 4
    codes = rng.integers(0 if complete else -1, card, (M, N)).astype(np.int8)
    key = rng.integers(-1, G, M)
    w = rng.integers(-1, 4, M).astype(np.float64)
    keep = (key[:, None] >= 0) & (codes >= 0)
    idx = (key[:, None] * card + codes) * N + np.arange(N)[None, :]
    ref = np.bincount(idx[keep], weights=np.broadcast_to(w[:, None], (M, N))[keep],
                      minlength=G * card * N).reshape(G, card, N)
    force_grouped(monkeypatch, True)
    got = weighted_grouped_counts(codes, key, G, card, complete, w)
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(weighted_grouped_counts(codes, key, G, card, complete, np.zeros(M)), 0 * ref)
    np.testing.assert_array_equal(weighted_grouped_counts(codes, key, G, card, complete, None),
                                  _grouped_reference(codes, key, G, card))
    assert weighted_grouped_counts(codes, key, G, card, complete, w + 0.5) is None
    many = np.arange(M, dtype=np.float64) % (_GROUPED_MAX_LEVELS + 1) + 1
    assert weighted_grouped_counts(codes, key, G, card, complete, many) is None


@pytest.mark.parametrize("classes", [True, False])
def test_seeded_marginal_entropies_equal_the_tables_own(classes, dtype):
    """pair_information's tables with h_x, h_a (h_b, h_xb, h_ab) taken from the class table: the same values."""
    from tensorprob.counting import table_information
    from tensorprob.counting._tables import _QUANTITIES

    rng = np.random.default_rng(7)
    M, N, I, C = 600, 14, 5, 4
    X = torch.as_tensor(rng.integers(0, I, (M, N)))
    X[:, 3] = 2  # a constant column
    X[:, 5] %= 2  # a smaller alphabet
    y = torch.as_tensor(rng.integers(0, C, M))
    d = SelectionData(X, I, y, C, dtype=dtype, log_base=float(np.log(2)))
    names = list(_QUANTITIES) + ["h_x", "h_a", "h_xa"] + (["h_b", "h_xb", "h_ab", "h_xab"] if classes else [])
    for j in (0, 3, 5, N - 1):
        q = d.pair_information(j, classes=classes)
        assert "h_x" in vars(q)  # seeded, not computed
        fresh = table_information(q.T, d.log_base, d.n_rows)
        for name in names:
            assert torch.equal(getattr(q, name), getattr(fresh, name)), (j, name)
    # the relevance, from the same NumPy entropies of the class table, is the tables' own too
    assert torch.equal(d.relevance, table_information(d.class_table).mi_x_b / d.log_base)
    # missing entries (observed fractions) or weights: nothing seeded
    Xm = X.clone()
    Xm[0, 1] = -1
    assert "h_x" not in vars(SelectionData(Xm, I, y, C, dtype=dtype).pair_information(2, classes=classes))
    w = torch.ones(M, dtype=torch.float64)
    assert "h_x" not in vars(SelectionData(X, I, y, C, dtype=dtype, weights=w).pair_information(2, classes=classes))


_PAIR_QUANTITIES = ("mi_x_a", "h_xa", "h_x", "h_a", "mi_xa_b", "cmi_x_b_given_a", "cmi_x_a_given_b", "h_xab")


@pytest.mark.parametrize("path", ["keyed", "keyed32", "grouped", "bincount", "bitsets", "missing", "weighted",
                                  "streamed"])
@pytest.mark.parametrize("classes", [True, False])
def test_open_candidates_tables_equal_every_columns(path, classes, monkeypatch, dtype):
    """Once a quarter of the features are retired, a step counts only the open ones: their quantities are
    the same floats as those of a count of every column (each branch of the count), the retired read 0."""
    rng = np.random.default_rng(21)
    M, N, I, C = 700, 16, 3 if path == "bitsets" else 6, 3 if path != "keyed32" else 400
    X = rng.integers(-1 if path == "missing" else 0, I, (M, N)).astype(np.int8)
    y = rng.integers(0, C, M)
    X[:, 4] = X[:, 1]  # a duplicate column
    weights = torch.as_tensor(rng.poisson(1.0, M).astype(np.float64)) if path == "weighted" else None
    force_grouped(monkeypatch, path == "grouped")
    if path not in ("keyed", "keyed32"):  # every other branch: the keys are not made
        monkeypatch.setattr(SelectionData, "_pair_base", lambda self, classes: None)
    if path != "bitsets":
        monkeypatch.setattr(SelectionData, "_bitsets", lambda self: None)

    def data():
        if path != "streamed":
            return SelectionData(torch.as_tensor(X), I, torch.as_tensor(y), C, dtype=dtype, weights=weights)
        from tensorprob.counting._spill import SpilledRows
        stream = SpilledRows(M, N, X.dtype, y.dtype, False, block_rows=128)
        stream.append(X, y, None)
        streams.append(stream)
        return SelectionData(torch.empty(0, N, dtype=torch.int8), I, torch.empty(0, dtype=torch.int64), C,
                             dtype=dtype, stream=stream)

    streams = []
    full, part = data(), data()
    retired = [3, 9, 1, 12, 0]
    for j in retired:
        part.retire(j)
    open_ = np.setdiff1d(np.arange(N), retired)
    assert part._open_columns() is not None and np.array_equal(part._open_columns(), open_)
    for j in (3, 7, 15):
        a, b = part.pair_information(j, classes=classes), full.pair_information(j, classes=classes)
        if path in ("keyed", "keyed32"):
            assert part._base[classes] is not None
        if path == "bitsets" and not classes:
            assert part._bits is not False
        for name in (_PAIR_QUANTITIES if classes else _PAIR_QUANTITIES[:4]):
            va, vb = getattr(a, name), getattr(b, name)
            assert va.shape == (N,) and va.dtype == vb.dtype, name
            assert torch.equal(va[open_], vb[open_]), name
            assert not va[retired].any(), name
    # few retired: every column is counted
    few = data()
    few.retire(2)
    assert few._open_columns() is None
    for stream in streams:
        stream.close()


def test_keyed_counts_equal_joint_table(dtype):
    """The per-run keys (int16 when every table's cells fit, int32 otherwise) count what joint_table counts."""
    rng = np.random.default_rng(5)
    for M, N, I, C in [(500, 10, 4, 3), (300, 30, 9, 15)]:  # 480 and 36,450 bins with the class: int16, int32
        X = torch.as_tensor(rng.integers(0, I, (M, N)).astype(np.int8))
        y = torch.as_tensor(rng.integers(0, C, M))
        d = SelectionData(X, I, y, C, dtype=dtype)
        for classes in (False, True):
            for j in (0, N - 1):
                got = d._keyed_counts(j, None, classes)
                ref = joint_table(X, I, X[:, j], I, y if classes else None, C if classes else 1, dtype=dtype)
                assert got.dtype == dtype and torch.equal(got, ref)
                cols = np.array([1, 4, N - 2])
                assert torch.equal(d._keyed_counts(j, cols, classes), ref[torch.from_numpy(cols)])
        assert d._base[False].dtype == np.int16
    assert d._base[True].dtype == np.int32
    # over a quarter of the memory budget: no keys, the caller counts by joint_table
    with tp.config_context(memory_budget=2**16):  # the int32 keys, 36,000 bytes, over a quarter
        assert SelectionData(X, I, y, C, dtype=dtype)._keyed_counts(0, None, True) is None


@pytest.mark.parametrize("method", _CLASSIC)
@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_selections_equal_counting_every_column(method, missing, monkeypatch, dtype):
    """Every classic selector picks the same features with the same scores whether a step counts only the
    open candidates or every column (k close to N, the all-pairs pass off)."""
    from tensorprob.counting import _selection
    X, y = _data(missing, seed=6)
    kw = dict(k=13, device="cpu", dtype=dtype)
    if missing:
        kw["discretizer"] = None
    monkeypatch.setattr(SelectionData, "plan", lambda self, k, classes=True: None)
    fits = []
    for fraction in (0.75, 0.0):  # 0: never restricted
        monkeypatch.setattr(_selection, "OPEN_FRACTION", fraction)
        fits.append(get_selector(method)(**kw).fit(X, y))
    np.testing.assert_array_equal(fits[0].selected_, fits[1].selected_)
    np.testing.assert_array_equal(fits[0].scores_, fits[1].scores_)
