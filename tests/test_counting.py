"""Counting engine: contingency tables and plug-in information against plain counting and scipy."""
import math

import numpy as np
import pytest
import torch
from scipy.stats import entropy

import tensorprob as tp
from tensorprob.counting import entropy_of_counts, gather_conditional, joint_table, table_information, unique_rows


def data(seed=0, M=400, N=5):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, (M, N))
    y = rng.integers(0, 3, M)
    X[:, 2] = (X[:, 1] + y) % 4
    return X, y


def test_joint_table_equals_plain_counting_and_chunking_changes_nothing():
    X, y = data()
    T = joint_table(torch.tensor(X), 4, torch.tensor(X[:, 1]), 4, torch.tensor(y), 3)
    plain = np.zeros((5, 4, 4, 3))
    for m in range(len(y)):
        for c in range(5):
            plain[c, X[m, c], X[m, 1], y[m]] += 1
    np.testing.assert_array_equal(T.numpy(), plain)
    with tp.config_context(memory_budget=2**16):  # forces one candidate per chunk
        T2 = joint_table(torch.tensor(X), 4, torch.tensor(X[:, 1]), 4, torch.tensor(y), 3)
    assert torch.equal(T, T2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("code_dtype", [np.int8, np.int64])
def test_row_blocks_of_row_major_codes_equal_plain_counting(dtype, code_dtype):
    """Row-major codes whose blocks of columns would be narrow (a small budget here, many rows in use)
    are counted by blocks of whole rows: the same counts as plain loops and as feature-major codes."""
    rng = np.random.default_rng(5)
    X, y = rng.integers(0, 4, (400, 60)).astype(code_dtype), rng.integers(0, 3, 400)
    plain = np.zeros((60, 4, 3, 1))
    for c in range(60):
        np.add.at(plain[c], (X[:, c], y, 0), 1)
    rows, cols = torch.from_numpy(X), torch.from_numpy(np.ascontiguousarray(X.T)).T
    with tp.config_context(memory_budget=2**16):  # blocks of 40 columns: narrower than the 60
        for codes in (rows, cols):
            T = joint_table(codes, 4, torch.from_numpy(y), 3, dtype=dtype, complete=True)
            assert T.dtype == dtype
            np.testing.assert_array_equal(T.numpy(), plain)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("code_dtype", [np.int8, np.int16, np.int64])
def test_wide_tables_of_row_major_codes_equal_plain_counting(dtype, code_dtype, monkeypatch):
    """Row-major codes whose tables are wider than a cache block in all (here 400 of 16 x 8 x 3
    cells) are counted from one feature-major copy: the counts of plain loops, in the (x, a, b)
    layout, whatever the codes' integer type; the caller's codes untouched."""
    from tensorprob.counting import _tables

    rng = np.random.default_rng(6)
    X = rng.integers(0, 16, (300, 400)).astype(code_dtype)
    a, b = rng.integers(0, 8, 300), rng.integers(0, 3, 300)
    plain = np.zeros((400, 16, 8, 3))
    for c in range(400):
        np.add.at(plain[c], (X[:, c], a, b), 1)
    copies, copy = [], _tables.feature_major
    monkeypatch.setattr(_tables, "feature_major", lambda c: copies.append(tuple(c.shape)) or copy(c))
    codes = torch.from_numpy(X)
    kept = codes.clone()
    with tp.config_context(memory_budget=2**16):  # narrow blocks of columns: the row-major paths
        T = joint_table(codes, 16, torch.from_numpy(a), 8, torch.from_numpy(b), 3, dtype=dtype, complete=True)
    assert copies == [(300, 400)]
    assert T.dtype == dtype and T.shape == (400, 16, 8, 3)
    np.testing.assert_array_equal(T.numpy(), plain)
    assert torch.equal(codes, kept)


def test_missing_entries_are_dropped_pairwise():
    X, y = data(1)
    Xm = X.copy()
    Xm[:50, 0] = -1
    Xm[40:60, 1] = -1
    T = joint_table(torch.tensor(Xm), 4, torch.tensor(Xm[:, 1]), 4, torch.tensor(y), 3)
    assert T[0].sum() == len(y) - 60  # rows missing either column are dropped for candidate 0
    assert T[3].sum() == len(y) - 20
    w = np.random.default_rng(0).random(len(y))
    Tw = joint_table(torch.tensor(X), 4, None, 1, torch.tensor(y), 3, weights=torch.tensor(w))
    np.testing.assert_allclose(Tw.sum((1, 2, 3)).numpy(), w.sum())


def test_entropies_and_information_against_scipy_and_hand_values():
    X, y = data(2)
    T = joint_table(torch.tensor(X), 4, torch.tensor(X[:, 1]), 4, torch.tensor(y), 3)
    q = table_information(T)
    for c in range(5):
        _, n = np.unique(X[:, c], return_counts=True)
        assert abs(float(q.h_x[c]) - entropy(n)) < 1e-12
        _, n = np.unique(X[:, c] * 16 + X[:, 1] * 4 + y, return_counts=True)
        assert abs(float(q.h_xab[c]) - entropy(n)) < 1e-12
    # hand-computed: x = y exactly, uniform binary: I = log 2, H(x|y) = 0
    yy = np.array([0, 1] * 50)
    T = joint_table(torch.tensor(yy[:, None]), 2, None, 1, torch.tensor(yy), 2)
    info = table_information(T)
    assert abs(float(info.mi_x_b[0]) - math.log(2)) < 1e-15
    assert abs(float(entropy_of_counts(T, (1, 3))[0]) - math.log(2)) < 1e-15


def test_table_information_names_match_their_definitions():
    X, y = data(4)
    a = X[:, 1]
    q = table_information(joint_table(torch.tensor(X), 4, torch.tensor(a), 4, torch.tensor(y), 3))

    def H(*cols):
        k = np.zeros(len(y), dtype=np.int64)
        for col in cols:
            k = k * 4 + col
        return entropy(np.unique(k, return_counts=True)[1])

    for c in range(5):
        x = X[:, c]
        want = {"mi_x_a": H(x) + H(a) - H(x, a), "mi_x_b": H(x) + H(y) - H(x, y),
                "cmi_x_a_given_b": H(x, y) + H(a, y) - H(x, a, y) - H(y),
                "cmi_x_b_given_a": H(x, a) + H(a, y) - H(x, a, y) - H(a),
                "mi_xa_b": H(x, a) + H(y) - H(x, a, y)}
        for name, value in want.items():
            assert abs(float(getattr(q, name)[c]) - max(value, 0.0)) < 1e-12, name
    bits = table_information(q.T, math.log(2))
    torch.testing.assert_close(bits.mi_xa_b, q.mi_xa_b / math.log(2))
    with pytest.raises(AttributeError):
        q.i_xa_b  # noqa: B018 (the old string keys are gone)


def test_per_sample_conditionals():
    X, y = data(3)
    T = joint_table(torch.tensor(X), 4, torch.tensor(X[:, 0]), 4, torch.tensor(y), 3)
    p = gather_conditional(T, torch.tensor(X), torch.tensor(X[:, 0]), torch.tensor(y)).numpy()
    for m in range(0, len(y), 37):
        for c in range(5):
            sel = (X[:, 0] == X[m, 0]) & (y == y[m])
            assert abs(p[m, c] - np.mean(X[sel, c] == X[m, c])) < 1e-12
    pb = gather_conditional(T, torch.tensor(X), torch.tensor(X[:, 0]), torch.tensor(y), over_b=True).numpy()
    assert pb.shape == (len(y), 5, 3)
    np.testing.assert_allclose(pb[np.arange(len(y)), :, y], p)


def test_unique_rows_merge_weights():
    rows, w, inv = unique_rows(torch.tensor([[1, 2], [0, 1], [1, 2]]))
    assert rows.tolist() == [[0, 1], [1, 2]] and w.tolist() == [1.0, 2.0] and inv.tolist() == [1, 0, 1]


def test_blocked_tables_and_lookups_with_missing_entries_and_weights_equal_plain_loops():
    # 2,000 rows x 50 candidates: a 64 KiB block budget splits the candidates into 7 blocks
    rng = np.random.default_rng(7)
    M, N = 2000, 50
    X = rng.integers(0, 3, (M, N))
    y = rng.integers(0, 4, M)
    X[rng.random((M, N)) < 0.05] = -1
    a = X[:, 3].copy()
    w = rng.random(M)
    plain = np.zeros((N, 3, 3, 4))
    for m in range(M):
        for c in range(N):
            if X[m, c] >= 0 and a[m] >= 0:
                plain[c, X[m, c], a[m], y[m]] += w[m]
    tX, ta, ty = torch.tensor(X, dtype=torch.int8), torch.tensor(a), torch.tensor(y)
    with tp.config_context(memory_budget=2**16):
        T = joint_table(tX, 3, ta, 3, ty, 4, weights=torch.tensor(w))
        Tc = joint_table(tX, 3, ta, 3, ty, 4)
        p = gather_conditional(Tc, tX, ta, ty).numpy()
        pb = gather_conditional(Tc, tX, ta, ty, over_b=True).numpy()
    np.testing.assert_allclose(T.numpy(), plain, rtol=1e-12)
    with tp.config_context(memory_budget=2**30):
        assert torch.equal(Tc, joint_table(tX, 3, ta, 3, ty, 4))
    cnt = Tc.numpy()
    for m in range(0, M, 97):
        for c in range(N):
            if X[m, c] < 0 or a[m] < 0:
                assert p[m, c] == 0 and not pb[m, c].any()
                continue
            cond = cnt[c, :, a[m], :].sum(0)  # counts of (a, y) where candidate c is observed
            want = cnt[c, X[m, c], a[m], :] / np.maximum(cond, 1)
            np.testing.assert_allclose(pb[m, c], np.where(cond > 0, want, 0), rtol=1e-12)
            assert abs(p[m, c] - want[y[m]]) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("weighted", [False, True])
def test_both_histogram_paths_agree(weighted, dtype):
    """The bincount path (CPU) and the atomic index_add path (CUDA: no host synchronization) agree."""
    from tensorprob.counting._tables import _count

    g = torch.Generator().manual_seed(3)
    idx = torch.randint(0, 50, (4000,), generator=g)
    w = torch.rand(4000, generator=g, dtype=torch.float64).to(dtype) if weighted else None
    a = _count(idx, 53, w, dtype, atomic=False).to(dtype)
    b = _count(idx, 53, w, dtype, atomic=True)
    assert b.dtype == dtype and b.shape == (53,)
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(b, a, rtol=64 * eps, atol=64 * eps * float(a.abs().max()))


def test_tables_leave_int64_and_fortran_codes_untouched(dtype):
    """joint_table / gather_conditional work on a copy: int64 and column-major codes come back unchanged."""
    from tensorprob.counting import gather_conditional

    rng = np.random.default_rng(0)
    codes_np = np.asfortranarray(rng.integers(-1, 3, size=(50, 4)))
    codes = torch.as_tensor(codes_np)
    before = codes.clone()
    y = torch.as_tensor(rng.integers(0, 2, size=50))
    T = joint_table(codes, 3, None, 1, y, 2, dtype=dtype)
    assert torch.equal(codes, before)
    dense = np.zeros((4, 3, 2))
    for n in range(4):
        ok = codes_np[:, n] >= 0
        np.add.at(dense[n], (codes_np[ok, n], y.numpy()[ok]), 1)
    np.testing.assert_array_equal(T.reshape(4, 3, 2).numpy(), dense)
    P = torch.rand(4, 3, 1, 2, dtype=dtype)
    gather_conditional(P, codes, None, y)
    assert torch.equal(codes, before)


def test_entropy_of_integer_counts_by_lookup():
    """Integer tables take n log n from a lookup table: the entropies of the log formula, exact zeros kept."""
    import torch

    from tensorprob.counting import _tables
    from tensorprob.counting._tables import entropy_of_counts

    rng = np.random.default_rng(0)
    T = torch.as_tensor(rng.poisson(3.0, (50, 4, 3, 5)), dtype=torch.float64)
    T[0] = 0
    T[1] = 0
    T[1, 2, 1, 3] = 17  # a constant table
    frac = T + 0.5  # not integral: the log formula

    def by_logs(c, dims):
        keep = {0, *dims}
        other = tuple(d for d in range(1, c.ndim) if d not in keep)
        c = (c.sum(other) if other else c).reshape(c.shape[0], -1)
        p = c / c.sum(1, keepdim=True).clamp_min(1e-300)
        return -(p * torch.log(p.clamp_min(1e-300))).sum(1)

    for dims in ((1,), (1, 2), (1, 2, 3), (2, 3)):
        h = entropy_of_counts(T, dims)
        assert h[0] == 0 and h[1] == 0 and not torch.signbit(h[:2]).any()  # empty and constant: exactly +0
        torch.testing.assert_close(h, by_logs(T, dims), rtol=1e-13, atol=1e-14)
        torch.testing.assert_close(entropy_of_counts(frac, dims), by_logs(frac, dims), rtol=1e-13, atol=1e-14)
    big = T * 2**21  # totals above the lookup's range: the log formula
    assert float(big.sum((1, 2, 3)).max()) > _tables._XLOGX_MAX
    torch.testing.assert_close(entropy_of_counts(big, (1, 2, 3)), by_logs(T, (1, 2, 3)), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("kind", ["float64", "float32", "int64", "fractional", "large"])
def test_shared_integer_margins_equal_entropy_of_counts_bit_for_bit(kind):
    """TableInformation's entropies from shared int64 margins equal entropy_of_counts on each margin, bit for bit.

    Whatever order the quantities are read in (each order derives the margins from different
    parents); fractional counts and totals beyond the m log m table take entropy_of_counts itself.
    """
    import itertools

    from tensorprob.counting import entropy_of_counts, table_information
    from tensorprob.counting._tables import _XLOGX_MAX

    rng = np.random.default_rng(7)
    T = torch.as_tensor(rng.integers(0, 40, (37, 4, 3, 5)) * (rng.random((37, 4, 3, 5)) < 0.7))
    T[3] = 0  # an empty table
    T[5, 1:] = 0  # a constant x
    if kind == "fractional":
        T = T.to(torch.float64) * 0.37
    elif kind == "large":
        T = T.to(torch.float64) * (_XLOGX_MAX // 400)
    elif kind != "int64":
        T = T.to(getattr(torch, kind))
    dims = {"h_x": (1,), "h_a": (2,), "h_b": (3,), "h_xa": (1, 2), "h_xb": (1, 3), "h_ab": (2, 3), "h_xab": (1, 2, 3)}
    want = {name: entropy_of_counts(T, d) / 0.5 for name, d in dims.items()}
    for order in itertools.islice(itertools.permutations(dims), 0, None, 397):  # 13 of the 5040 orders
        info = table_information(T, scale=0.5)
        for name in order:
            assert torch.equal(getattr(info, name), want[name]), (kind, order, name)
    assert (table_information(T)._totals is None) == (kind in ("fractional", "large"))


@pytest.mark.parametrize("shape", [(1, 3, 4, 2), (2, 5, 5, 1), (7, 1, 3, 3), (300, 4, 6, 5), (3, 17, 17, 10),
                                   (40, 3, 1, 2)])
def test_information_of_counts_is_table_information_bit_for_bit(shape):
    """The NumPy quantities of integer tables (CMIM's lazy rounds, the CPU's relevance) equal TableInformation's."""
    from tensorprob.counting._tables import _QUANTITIES, _XLOGX_MAX, information_of_counts

    rng = np.random.default_rng(sum(shape))
    T = rng.integers(0, 40, shape) * (rng.random(shape) < 0.7)  # empty cells too
    T[0] = 0  # an empty table: 0
    for scale in (1.0, np.log(2.0)):
        info = table_information(torch.as_tensor(T, dtype=torch.float64), scale)
        for name in _QUANTITIES:
            got = information_of_counts(T, name, scale)
            np.testing.assert_array_equal(got, getattr(info, name).numpy(), err_msg=name)
            assert got[0] == 0.0
    # entropies known beforehand (the class table's, for CMIM's pairs) and a known total: the same bits
    full = (T[1:] if shape[0] > 1 else T).copy()
    tot = full.reshape(len(full), -1).sum(1)
    full.reshape(len(full), -1)[:, 0] += tot.max() - tot  # every table's total the same
    info = table_information(torch.as_tensor(full, dtype=torch.float64))
    for name in ("cmi_x_b_given_a", "mi_xa_b"):
        known = {"h_a": info.h_a.numpy(), "h_ab": info.h_ab.numpy(), "h_b": info.h_b.numpy()}
        got = information_of_counts(full, name, 1.0, known, total=int(full[0].sum()))
        np.testing.assert_array_equal(got, getattr(info, name).numpy(), err_msg=name)
    # a total beyond the lookup table: left to table_information (None)
    big = np.zeros((2, 2, 2, 2), dtype=np.int64)
    big[:, 0, 0, 0] = _XLOGX_MAX + 1
    assert information_of_counts(big, "mi_x_b") is None
    assert information_of_counts(T[:0], "mi_x_b").shape == (0,)
