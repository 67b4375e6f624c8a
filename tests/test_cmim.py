"""CMIM: both variants against a plain reference, the lazy evaluation against the eager one, the parameters.

``variant="brown"``: ``J = min_j I(X_m;C|X_j)``; ``variant="fleuret"``: ``J = min(I(X_m;C), min_j I(X_m;C|X_j))``.
The reference below is plain NumPy (entropies of ``np.unique`` counts), independent of tensorprob's counting.

The eager evaluation counts every candidate against each new pick (requests of kind ``"pair"``);
the lazy one counts listed (candidate, selected) pairs (kind ``"pairs"``,
``SelectionData.pairs_information``), by the strategies of that kind (``strategies("pairs")``),
forced by name with ``tp.config_context(counting=name)``. A fit records its requests in
``counting_plan_``: a lazy run is one with requests of kind ``"pairs"``.
"""
import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

import tensorprob as tp
from tensorprob.counting import SelectionData, strategies
from tensorprob.selection import get_selector
from tensorprob.selection._classic import CMIMCriterion
from tensorprob.selection._greedy import greedy_forward

#: The strategies of the lazy rounds' requests (kind "pairs"), the reference ("bincount") included.
PAIRS = strategies("pairs")

VARIANTS = ("brown", "fleuret")


# ------------------------------------------------------------------ plain reference
def _h(*cols):
    """Plug-in entropy (nats) of the joint of the given integer columns."""
    _, n = np.unique(np.stack(cols, axis=1), axis=0, return_counts=True)
    p = n / n.sum()
    return float(-(p * np.log(p)).sum())


def _cmi(x, c, z):
    """I(x; c | z) = H(x,z) + H(c,z) - H(x,c,z) - H(z)."""
    return _h(x, z) + _h(c, z) - _h(x, c, z) - _h(z)


def reference_cmim(X, y, k, variant):
    """Greedy CMIM by brute force: every score recomputed over the whole selected set at every step."""
    N = X.shape[1]
    rel = [_h(X[:, m]) + _h(y) - _h(X[:, m], y) for m in range(N)]
    S, scores = [], []
    while len(S) < k:
        cands = [m for m in range(N) if m not in S]
        if not S:
            vals = [rel[m] for m in cands]
        else:
            vals = []
            for m in cands:
                v = min(_cmi(X[:, m], y, X[:, j]) for j in S)
                vals.append(min(v, rel[m]) if variant == "fleuret" else v)
        best = max(vals)
        i = next(i for i, v in enumerate(vals) if v >= best - 1e-12 * max(abs(best), 1.0))  # ties: lowest index
        S.append(cands[i])
        scores.append(vals[i])
    return S, scores


def planted(seed, M=300, N=10, card=3):
    """Relevant, redundant, synergistic, duplicated and constant columns (exact ties)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, card, (M, N))
    y = (X[:, 1] + (X[:, 4] > 0) + rng.integers(0, 2, M)) % 3
    X[:, 6] = (X[:, 1] + rng.integers(0, 2, M)) % card  # a noisy copy of a relevant feature
    X[:, 7] = X[:, 4]  # an exact copy: tied with feature 4 at every step
    X[:, 3] = (y + X[:, 0]) % card  # informative only together with feature 0
    X[:, 9] = 1  # constant
    return X, y


def _fit(X, y, k, variant, lazy, **kw):
    return tp.CMIM(k=k, variant=variant, lazy=lazy, **kw).fit(X, y)


# ------------------------------------------------------------------ both variants, plain reference
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_variants_match_the_plain_reference(variant, lazy, seed):
    X, y = planted(seed)
    for k in (1, 3, X.shape[1]):
        got = _fit(X, y, k, variant, lazy)
        S, scores = reference_cmim(X, y, k, variant)
        assert got.selected_.tolist() == S
        np.testing.assert_allclose(got.scores_, scores, rtol=1e-9, atol=1e-12)


def test_the_variants_differ_where_a_feature_is_informative_only_jointly():
    X, y = planted(0)
    brown, fleuret = _fit(X, y, 4, "brown", False), _fit(X, y, 4, "fleuret", False)
    assert brown.selected_.tolist() != fleuret.selected_.tolist()
    # Fleuret's score never exceeds the candidate's own relevance
    rel = tp.MIM(k="all").fit(X, y)
    relevance = dict(zip(rel.selected_.tolist(), rel.scores_))
    assert all(s <= relevance[m] + 1e-12 for m, s in zip(fleuret.selected_, fleuret.scores_))
    assert any(s > relevance[m] + 1e-3 for m, s in zip(brown.selected_, brown.scores_))


def test_xor_pair_found_by_brown_only():
    grid = np.array(np.meshgrid(*[[0, 1]] * 4, indexing="ij")).reshape(4, -1).T
    X = np.repeat(grid, 25, axis=0)
    y = X[:, 0] ^ X[:, 3]  # every single feature independent of y
    assert sorted(_fit(X, y, 2, "brown", True).selected_.tolist()) == [0, 3]
    fleuret = _fit(X, y, 2, "fleuret", True)  # capped at I(X_m;C) = 0: the next index
    assert fleuret.selected_.tolist() == [0, 1]
    np.testing.assert_allclose(fleuret.scores_, 0.0, atol=1e-12)


# ------------------------------------------------------------------ lazy == eager
def with_missing(seed, M=400, N=24, card=4, frac=0.1):
    """Planted codes with ties, -1 entries, an all-missing and a constant column."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, card, (M, N))
    y = (X[:, 2] + X[:, 5] // 2 + (rng.random(M) < 0.3)) % 3
    for j in range(N // 3, N, 3):  # noisy copies of the relevant features
        X[:, j] = np.where(rng.random(M) < 0.15 * (1 + j % 4), rng.integers(0, card, M), X[:, 2 + 3 * (j % 2)])
    X[:, 13] = 2  # constant
    X = np.where(rng.random((M, N)) < frac, -1, X)
    X[:, 11] = X[:, 2]  # exact duplicates, missing entries included: ties at every step
    X[:, 12] = X[:, 5]
    X[:, 7] = -1  # never observed: held back until the observed columns run out
    return X, y


def assert_same_scores(got, want):
    """Within 1e-12 (relative), in either dtype lane: the tables are exact integer counts either way.

    Not bit for bit (as before the counting planner): the lazy rounds count listed pairs (kind
    "pairs") and the eager steps all candidates (kind "pair"), possibly by different strategies
    (keyed or sorted histograms, bincounts) whose float64 sums of ``c log c`` run in another order.
    A CMI of 0 may come back as a few ulps of the entropies (about 5 nats here) it is a difference of.
    """
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=64 * np.finfo(np.float64).eps)


def _data(X, y, dtype, device="cpu", weights=None):
    return SelectionData(torch.as_tensor(X, device=device), int(X.max()) + 1, torch.as_tensor(y, device=device),
                         int(y.max()) + 1, dtype=dtype, weights=weights)


def _criterion_run(X, y, k, variant, lazy, dtype, device="cpu", **kw):
    """(picks, scores) of CMIM run by the greedy driver on SelectionData of X, and the data (its plan)."""
    data = _data(X, y, dtype, device)
    return greedy_forward(CMIMCriterion(variant, lazy, **kw), data, k), data


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lazy_equals_eager_with_ties_and_missing_entries(variant, seed, dtype, device):
    X, y = with_missing(seed)
    eager = _fit(X, y, "all", variant, False, missing_values=-1, dtype=dtype)
    lazy = _fit(X, y, "all", variant, True, missing_values=-1, dtype=dtype)
    assert "pairs" in lazy.counting_plan_ and "pairs" not in eager.counting_plan_
    assert lazy.selected_.tolist() == eager.selected_.tolist()
    assert_same_scores(lazy.scores_, eager.scores_)
    assert lazy.selected_[-1] == 7  # the unobserved column comes last


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("seed_size,depth", [(1, 1), (3, 4), (64, 2)])
def test_lazy_equals_eager_for_any_seed_and_depth(variant, seed_size, depth, dtype, device):
    X, y = with_missing(3, M=500, N=40, frac=0.05)
    k = 25
    (S0, v0), _ = _criterion_run(X, y, k, variant, False, dtype, device)
    (S1, v1), _ = _criterion_run(X, y, k, variant, True, dtype, device, seed=seed_size, depth=depth)
    assert S1 == S0
    assert_same_scores(v1, v0)


def tied(seed, M=200, base=5, copies=4):
    """Every column ``copies`` times (shuffled): exact ties at every step, down to the all-zero tail."""
    rng = np.random.default_rng(seed)
    B = rng.integers(0, 3, (M, base))
    y = (B[:, 0] + (B[:, 1] > 0) + (rng.random(M) < 0.3)) % 3
    return np.tile(B, copies)[:, rng.permutation(base * copies)], y


@pytest.mark.slow  # four seeds of tied copies (seconds); the fast lane keeps the tie tests above
@pytest.mark.parametrize("variant", VARIANTS)
def test_lazy_equals_eager_on_exact_ties(variant, dtype, device):
    # a candidate whose bound equals the best exact score may still win the tie by a lower index:
    # the lazy evaluation must bring it up to date (a strict bound test fails here)
    for seed in range(4):
        X, y = tied(seed)
        (S0, v0), _ = _criterion_run(X, y, X.shape[1], variant, False, dtype, device)
        for seed_size, depth in [(1, 1), (2, 1), (8, 2)]:
            (S1, v1), _ = _criterion_run(X, y, X.shape[1], variant, True, dtype, device, seed=seed_size, depth=depth)
            assert S1 == S0
            assert_same_scores(v1, v0)


def test_lazy_counts_fewer_tables(monkeypatch):
    n = []
    real = SelectionData.pairs_information
    monkeypatch.setattr(SelectionData, "pairs_information",  # a spy: the pairs each lazy round counts
                        lambda self, cand, sel, needed: n.append(len(cand)) or real(self, cand, sel, needed))
    X, y = with_missing(4, M=600, N=60, frac=0.0)
    k = 20
    _, data = _criterion_run(X, y, k, "fleuret", True, torch.float64)
    assert sum(n) < 60 * (k - 1) / 2  # the eager evaluation counts all 60 candidates at each of 19 steps
    assert sum(data.counting_plan["pairs"].values()) == len(n) and "pair" not in data.counting_plan


def test_lazy_rounds_go_all_the_way_where_pairs_are_cheap(monkeypatch):
    """On few rows a pair costs far less than a round: every round after the seed brings its contenders up to date.

    Many features and 60 rows (the papers' microarray shape); each such round's pairs reach
    the step's last pick for every contender, so no step needs a third round."""
    rounds = []
    real = CMIMCriterion._catch_up

    def spy(self, idx, depth):
        rounds.append((len(self.selected), depth, idx.size))
        return real(self, idx, depth)
    monkeypatch.setattr(CMIMCriterion, "_catch_up", spy)
    rng = np.random.default_rng(3)
    X, y = rng.integers(0, 3, (60, 3000)), rng.integers(0, 4, 60)
    X[:, :40] = (y[:, None] + rng.integers(0, 2, (60, 40))) % 3  # many near-equal contenders
    got = tp.CMIM(k=12, variant="fleuret", lazy=True, discretizer=None).fit(X, y)
    ref = tp.CMIM(k=12, variant="fleuret", lazy=False, discretizer=None).fit(X, y)
    np.testing.assert_array_equal(got.selected_, ref.selected_)
    assert_same_scores(got.scores_, ref.scores_)
    steps = {}
    for t, depth, size in rounds:
        steps.setdefault(t, []).append((depth, size))
    assert any(len(r) > 1 for r in steps.values())  # some step has contenders past its seed
    for t, r in steps.items():
        assert len(r) <= 2 and all(depth == t for depth, _ in r), (t, r)

def _pairs_case(case):
    """Codes, class and weights (None or Poisson counts) of the pairs tests."""
    X, y = with_missing(5)
    if case != "missing":  # complete rows
        X = np.where(X < 0, 1, X)
    w = np.random.default_rng(6).poisson(1.0, len(y)).astype(float) if case == "weighted" else None
    return X, y, w


@pytest.mark.parametrize("case", ["complete", "missing", "weighted"])
@pytest.mark.parametrize("strategy", PAIRS)
def test_pairs_information_equals_the_eager_step(strategy, case, dtype, device):
    """The quantities of listed pairs, by each strategy of kind "pairs" (forced), are those of the eager
    step's tables (every candidate against one pick), counted by the reference and by "auto". The keyed
    and sorted histograms count complete, unweighted rows only: forced elsewhere they raise, and "auto"
    does not pick them there."""
    X, y, w = _pairs_case(case)
    weights = None if w is None else torch.as_tensor(w, device=device)
    needed = ("cmi_x_b_given_a", "mi_xa_b", "h_xab")
    rng = np.random.default_rng(0)
    with tp.config_context(counting="reference"):
        ref = _data(X, y, dtype, device, weights)
        step = {j: ref.pair_information(j, needed) for j in range(X.shape[1])}
    with tp.config_context(counting="auto"):
        auto = _data(X, y, dtype, device, weights)
    for size in (1, 2, 7, 200):
        cand = rng.integers(0, X.shape[1], size)
        sel = rng.integers(0, X.shape[1], size)
        with tp.config_context(counting="auto"):
            by_auto = auto.pairs_information(cand, sel, needed)
        data = _data(X, y, dtype, device, weights)
        why = ("the codes are not on the CPU" if device != "cpu" else
               "missing entries or weights" if case != "complete" else None)
        if strategy != "bincount" and why is not None:
            with tp.config_context(counting=strategy), pytest.raises(ValueError, match=rf"counting='{strategy}' .*{why}"):
                data.pairs_information(cand, sel, needed)
            assert strategy not in auto.counting_plan["pairs"]
            continue
        with tp.config_context(counting=strategy):
            got = data.pairs_information(cand, sel, needed)
        assert data.counting_plan["pairs"] == {strategy: 1}
        for name in needed:
            want = torch.stack([getattr(step[int(j)], name)[int(m)] for m, j in zip(cand, sel)]).cpu().numpy()
            for values in (got, by_auto):
                assert_same_scores(getattr(values, name).cpu().numpy(), want)


@pytest.mark.parametrize("strategy", PAIRS)
def test_pairs_information_of_one_wide_table_on_two_threads(strategy, device):
    if device != "cpu" and strategy != "bincount":
        pytest.skip(f"{strategy} counts on the CPU only")
    # a table of >= 32768 cells alone in its request: a threaded sum may split its row (a
    # single-output reduction) and round otherwise than the eager step's tables of all candidates
    rng = np.random.default_rng(0)
    X = rng.integers(0, 20, (1000, 4))
    y = (X[:, 0] * 5 + rng.integers(0, 90, 1000)) % 90  # 20 * 20 * 90 = 36,000 cells per table
    with tp.config_context(counting="reference"):
        want = {j: _data(X, y, torch.float64, device).pair_information(j, ("cmi_x_b_given_a",)).cmi_x_b_given_a
                for j in (1, 3)}
    data = _data(X, y, torch.float64, device)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with tp.config_context(counting=strategy):
            for m, j in [(0, 1), (3, 3)]:
                got = data.pairs_information(np.array([m]), np.array([j]), ("cmi_x_b_given_a",)).cmi_x_b_given_a
                assert_same_scores(got.cpu().numpy(), want[j][m:m + 1].cpu().numpy())
    finally:
        torch.set_num_threads(threads)
    assert data.counting_plan["pairs"] == {strategy: 2}


_EAGER: dict = {}


def _complete_case():
    X, y = with_missing(6, M=700, N=50, card=5, frac=0.0)
    return np.where(X < 0, 3, X), y


def _reference_eager(variant, dtype, device, k):
    """The eager run of the reference counting on :func:`_complete_case` (once per lane)."""
    key = (variant, dtype, device, k)
    if key not in _EAGER:
        with tp.config_context(counting="reference"):
            _EAGER[key] = _criterion_run(*_complete_case(), k, variant, False, dtype, device)[0]
    return _EAGER[key]


@pytest.mark.parametrize("strategy", ["auto", *PAIRS])
@pytest.mark.parametrize("variant", VARIANTS)
def test_lazy_equals_eager_on_complete_data(variant, strategy, dtype, device):
    """Complete rows in memory, where every strategy of kind "pairs" applies: the lazy rounds counted by each
    (forced) give the eager picks and scores of the reference counting."""
    if device != "cpu" and strategy not in ("auto", "bincount"):
        pytest.skip(f"{strategy} counts on the CPU only")
    X, y = _complete_case()
    S0, v0 = _reference_eager(variant, dtype, device, 20)
    with tp.config_context(counting=strategy):
        (S1, v1), lazy = _criterion_run(X, y, 20, variant, True, dtype, device)
    assert "pairs" in lazy.counting_plan and "pair" not in lazy.counting_plan
    if strategy != "auto":
        assert set(lazy.counting_plan["pairs"]) == {strategy}
    assert S1 == S0
    assert_same_scores(v1, v0)


def test_auto_weighs_lazy_rounds_against_eager_steps_on_the_cpu():
    """``lazy="auto"`` is eager where an eager step is a slice of the tables of all pairs (few rows and
    features: chess, a 73 x 325 set) and lazy where counting every candidate at every step costs more
    than a few listed pairs: many features (COIL-20-shaped) or many rows (100,000 x 100, where the
    tables of all pairs exceed the memory budget)."""
    rng = np.random.default_rng(3)

    def data(M, N, card, classes, device="cpu"):
        codes = torch.from_numpy(rng.integers(0, card, (M, N)).astype(np.int8)).to(device)
        y = torch.from_numpy(rng.integers(0, classes, M)).to(device)
        return SelectionData(codes, card, y, classes)

    auto = CMIMCriterion("fleuret", "auto")
    for shape, lazy in (((3196, 36, 3, 2), False), ((73, 325, 5, 7), False), ((1440, 1024, 5, 20), True),
                        ((100_000, 100, 2, 10), True), ((100_000, 100, 45, 2), True)):
        d = data(*shape)
        d.plan(10, auto.pair_needed)
        assert auto._use_lazy(d) == lazy, shape
    assert CMIMCriterion("brown", True)._use_lazy(data(10, 2, 2, 2))
    assert not CMIMCriterion("brown", False)._use_lazy(data(1440, 1024, 5, 20))
    if torch.cuda.is_available():
        assert not auto._use_lazy(data(1440, 1024, 5, 20, "cuda"))  # eager on CUDA (one sync per step)


def _large(seed=0, M=1800, N=300):
    """Codes on which "auto" is lazy in memory on the CPU (300 features of 3 values)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (M, N))
    y = (X[:, 0] + X[:, 7] + (rng.random(M) < 0.3)) % 3
    return X, y


def test_auto_is_eager_on_streamed_data(device):
    """Streamed rows: every lazy round would read all the blocks once more, so "auto" is eager there (no
    request of kind "pairs"); ``lazy=True`` still evaluates lazily. Either way the in-memory selection."""
    from tensorprob.datasets import RowChunks

    X, y = _large()

    def chunks():
        return RowChunks([(X[:900], y[:900]), (X[900:], y[900:])])

    with tp.config_context(counting="auto"):
        memory = tp.CMIM(k=4).fit(X, y)
        streamed = tp.CMIM(k=4).fit(chunks())
        lazy = tp.CMIM(k=4, lazy=True).fit(chunks())
    assert ("pairs" in memory.counting_plan_) == (device == "cpu")
    assert "pairs" not in streamed.counting_plan_ and "pairs" in lazy.counting_plan_
    for sel in (streamed, lazy):
        assert sel.selected_.tolist() == memory.selected_.tolist()
        assert_same_scores(sel.scores_, memory.scores_)


def test_auto_is_eager_in_batches_that_count_steps_together(device):
    """CMIM's lazy="auto" on data with enough features for lazy rounds: eager for the members of a batch of
    EAGER_MIN_BATCH or more that the int8 products count (``batch_counts_steps_together``); lazy below
    that, for fractional weights, and where a counting other than "auto" is set. Read in the fits' plans
    (a lazy member counts pairs) and on the members themselves; an explicit choice stands."""
    if device != "cpu":
        pytest.skip("the int8 products count on the CPU alone")
    from tensorprob.counting._batched import EAGER_MIN_BATCH, BatchedSelectionData

    X, y = _large(30, N=1200)
    args = (torch.as_tensor(X), 3, torch.as_tensor(y), 3)
    rng = np.random.default_rng(31)
    for B, weights, counting, lazy in ((EAGER_MIN_BATCH, "counts", "auto", False),
                                       (EAGER_MIN_BATCH - 1, "counts", "auto", True),
                                       (EAGER_MIN_BATCH, "fractions", "auto", True),
                                       (EAGER_MIN_BATCH, "counts", "reference", True)):
        W = rng.poisson(1.0, (len(y), B)).astype(float)
        if weights == "fractions":
            W *= 0.5
        with tp.config_context(counting=counting):
            member = BatchedSelectionData(*args, torch.as_tensor(W)).members[0]
            assert member.batch_counts_steps_together == (not lazy), (B, weights, counting)
            assert CMIMCriterion("brown", "auto")._use_lazy(member) == lazy, (B, weights, counting)
            assert CMIMCriterion("brown", True)._use_lazy(member)  # an explicit choice stands
            assert not CMIMCriterion("brown", False)._use_lazy(member)
            if counting == "auto":
                sel = tp.CMIM(k=3).fit(X, y, resamples=W)
                assert ("pairs" in sel.counting_plan_) == lazy, (B, weights, dict(sel.counting_plan_))


# ------------------------------------------------------------------ parameters
def test_variant_and_lazy_are_validated_parameters():
    X, y = planted(0)
    with pytest.raises(InvalidParameterError, match="'variant' parameter"):
        tp.CMIM(k=2, variant="fleuret2004").fit(X, y)
    with pytest.raises(InvalidParameterError, match="'lazy' parameter"):
        tp.CMIM(k=2, lazy="sometimes").fit(X, y)
    with pytest.raises(ValueError, match="variant must be one of"):
        CMIMCriterion("bogus")
    sel = tp.CMIM(k=3, variant="fleuret", lazy=True)
    assert sel.get_params()["variant"] == "fleuret" and sel.get_params()["lazy"] is True
    assert tp.CMIM().get_params()["variant"] == "brown" and tp.CMIM().get_params()["lazy"] == "auto"
    copy = clone(sel).set_params(variant="brown")
    assert copy.variant == "brown" and sel.variant == "fleuret"
    by_name = get_selector("cmim")(k=3, variant="fleuret").fit(X, y)
    assert by_name.selected_.tolist() == sel.fit(X, y).selected_.tolist()
    assert tp.select_features(X, y, 3, method="cmim", variant="fleuret").selected_.tolist() == by_name.selected_.tolist()
    with pytest.raises(InvalidParameterError):
        get_selector("cmim")(k=3, variant="Fleuret").fit(X, y)
