"""The encoding decided once (issue 41) and ranges that overflow (issue 42, item 3).

- One summary per column, summaries that combine: the summary of row pieces combined is the
  summary of all the rows; in memory, streamed and distributed fits give the same encoder.
- Codes are a type: ``Encoder.transform`` returns an ``Encoded``, which models and selectors
  take as codes (never encoded a second time), checked at every entry with one message.
- Feature names as scikit-learn keeps them.
- Integral numeric columns keep their values only while the rows suffice; saturated scores warn.
- Values near the largest floats are binned without overflow; infinite values are the end bins.
"""
from __future__ import annotations

import math
import re
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from test_out_of_core import _pieces

import tensorprob as tp
from tensorprob.datasets import RowChunks
from tensorprob.encoding._numbers import NumberSummary, Sample, row_keys
from tensorprob.encoding._summary import row_limit, summarize

BAD = "Encoded codes must be >= 0 and below their column's cardinality"


def _frame(n=900, seed=0):
    """Mixed types with missing entries: floats (NaN), strings (None), integral floats, nullable ints, bools, objects."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    df = pd.DataFrame({
        "a": rng.normal(z, 1.0),
        "b": rng.choice(["u", "v", "w"], n).astype(object),
        "c": ((z + rng.integers(0, 2, n)) % 4).astype(float),
        "d": pd.array(rng.integers(-1, 3, n), dtype="Int64"),
        "e": rng.random(n) < 0.3,
        "f": np.array([1, "1", True, 2.5], dtype=object)[rng.integers(0, 4, n)],
        "g": rng.uniform(-2, 7, n),
    })
    df.loc[rng.random(n) < 0.05, "a"] = np.nan
    df.loc[rng.random(n) < 0.05, "b"] = None
    df.loc[rng.random(n) < 0.1, "c"] = np.nan
    df.loc[rng.random(n) < 0.05, "d"] = pd.NA
    df.loc[rng.random(n) < 0.05, "f"] = None
    return df, np.array(["no", "yes", "maybe"])[z]


def _same_encoder(a, b):
    assert a.kinds_ == b.kinds_ and a.feature_names_ == b.feature_names_
    np.testing.assert_array_equal(a.cardinalities_, b.cardinalities_)
    for ca, cb in zip(a.categories_, b.categories_):
        assert (ca is None and cb is None) or (len(ca) == len(cb) and all(
            type(u) is type(v) and u == v for u, v in zip(ca.tolist(), cb.tolist())))
    assert (a.discretizer_ is None) == (b.discretizer_ is None)
    if a.discretizer_ is not None:
        for ea, eb in zip(a.discretizer_.bin_edges_, b.discretizer_.bin_edges_):
            np.testing.assert_array_equal(ea, eb)


# ---------------------------------------------------------------- summaries combine
def test_row_limit_by_hand():
    # floor(sqrt(M / (C m))): 100 rows, 10 classes -> 1 value (the n_bins floor 5 wins)
    assert row_limit(100, 10, 5, 64, 5) == 5
    assert row_limit(2600, 2, 5, 64, 5) == 16  # sqrt(260) = 16.1
    assert row_limit(2450, 10, 5, 64, 5) == 7  # sqrt(49): exactly at the limit
    assert row_limit(2449, 10, 5, 64, 5) == 6
    assert row_limit(10**7, 2, 5, 64, 5) == 64  # max_categories caps it
    assert row_limit(100, 10, 5, 64, 0) == 64  # min_cell_count=0: the old rule
    assert row_limit(250, 10, 5, 64, 2.5) == 3 + 2  # sqrt(10) = 3.2 < n_bins


def test_summaries_of_pieces_combine_to_the_summary_of_all_rows():
    df, y = _frame()
    whole = summarize(df, y, limit=64, miss_keys=set(), sample=True, classes=True).summary
    parts = [summarize(df.iloc[s], y[s], limit=64, miss_keys=set(), sample=True, classes=True).summary
             for s in _pieces(len(df), [100, 1, 399, 400])]
    got = parts[0]
    for p in parts[1:]:
        got = got.combine(p, 64, None)
    assert got.n_rows == whole.n_rows and got.kinds == whole.kinds
    np.testing.assert_array_equal(got.n_distinct, whole.n_distinct)
    np.testing.assert_array_equal(got.classes, whole.classes)
    for f in ("n_missing", "lo", "hi", "n_inf", "integral"):
        np.testing.assert_array_equal(getattr(got.numbers, f), getattr(whole.numbers, f), err_msg=f)
    for j, k in enumerate(whole.kinds):
        a, b = whole.values[j], got.values[j]
        if k == "object":
            assert sorted(map(repr, a.items())) == sorted(map(repr, b.items()))
        elif a is None:
            assert b is None
        else:
            np.testing.assert_array_equal(a, b)
        sa, sb = whole.numbers.samples[j], got.numbers.samples[j]
        np.testing.assert_array_equal(sa.rows, sb.rows)
        np.testing.assert_array_equal(sa.values, sb.values)
        np.testing.assert_array_equal(sa.labels, sb.labels)


def test_a_capped_sample_keeps_the_rows_of_smallest_key_whatever_the_pieces():
    rng = np.random.default_rng(1)
    x = rng.normal(size=5000)
    x[rng.random(5000) < 0.1] = np.nan
    keep = np.flatnonzero(~np.isnan(x))
    want = np.sort(keep[np.argsort(row_keys(keep))[:300]])  # brute force: the 300 smallest keys
    for sizes in ([5000], [1234, 1, 3765], [500] * 10):
        parts = [NumberSummary.of(x[s, None], sample=True) for s in _pieces(5000, sizes)]
        got, n = parts[0], sizes[0]
        for p, m in zip(parts[1:], sizes[1:]):
            got, n = got.combine(p, 300, shift=n), n + m
        if len(sizes) == 1:
            got = NumberSummary.of(np.zeros((0, 1)), sample=True).combine(got, 300, shift=0)
        np.testing.assert_array_equal(got.samples[0].rows, want)
        np.testing.assert_array_equal(got.samples[0].values, x[want])
    assert len(np.unique(row_keys(np.arange(10**5)))) == 10**5  # a bijection: no ties


@pytest.mark.parametrize("strategy", ["uniform", "quantile", "mdl"])
def test_in_memory_and_streamed_fits_give_the_same_encoder(strategy):
    df, y = _frame()
    ref = tp.Encoder(discretizer=strategy, n_bins=4).fit(df, y)
    from tensorprob._io import learn_encoding

    chunks = RowChunks([(df.iloc[s], y[s]) for s in _pieces(len(df), [333, 1, 66, 500])])
    got = learn_encoding(chunks, discretizer=strategy, n_bins=4, missing_values=None).encoder
    _same_encoder(ref, got)
    np.testing.assert_array_equal(got.transform(df).codes, ref.transform(df).codes)
    for auto in (tp.Encoder(discretizer=strategy, n_bins=4, max_categories="auto").fit(df, y),):
        streamed = learn_encoding(chunks, discretizer=strategy, n_bins=4, missing_values=None,
                                  max_categories="auto").encoder
        _same_encoder(auto, streamed)


def _job_routes(rank, world, df, y, cuts):
    import tensorprob as tp

    s = slice(cuts[rank], cuts[rank + 1])
    out = {}
    for strategy in ("uniform", "quantile", "mdl"):
        enc = tp.Encoder(discretizer=strategy, n_bins=4, max_categories="auto", distributed=True).fit(df.iloc[s], y[s])
        out[strategy] = (enc.kinds_, [None if c is None else c.tolist() for c in enc.categories_],
                         enc.cardinalities_.tolist(), [e.tolist() for e in enc.discretizer_.bin_edges_],
                         enc.transform(df.iloc[s]).codes)
    return out


@pytest.mark.slow  # spawns Gloo processes
def test_distributed_fit_gives_the_in_memory_encoder(dtype):
    import torch

    if dtype != torch.float64:
        pytest.skip("one lane is enough: the encoding is the same in every lane")
    pytest.importorskip("torch.distributed")
    from _dist_helpers import run_ranks

    df, y = _frame()
    cuts = [0, 300, 300, 900]  # rank 1 holds no rows
    results = run_ranks(_job_routes, world=3, args=(df, y, cuts))
    for rank, (status, out) in enumerate(results):
        assert status == "ok", out
        for strategy, (kinds, cats, cards, edges, codes) in out.items():
            ref = tp.Encoder(discretizer=strategy, n_bins=4, max_categories="auto").fit(df, y)
            assert kinds == ref.kinds_ and cards == ref.cardinalities_.tolist()
            assert cats == [None if c is None else c.tolist() for c in ref.categories_]
            assert edges == [e.tolist() for e in ref.discretizer_.bin_edges_]
            np.testing.assert_array_equal(codes, ref.transform(df).codes[cuts[rank]:cuts[rank + 1]])


# ---------------------------------------------------------------- codes are a type
def test_transform_returns_encoded_that_models_and_selectors_take_as_codes():
    from sklearn.datasets import load_wine

    d = load_wine()
    model = tp.fit_cpd(d.data, rank=3, y=d.target, device="cpu", random_state=0, n_iter_max=30, tol=0)
    codes = model.encoder_.transform(d.data)
    assert isinstance(codes, tp.Encoded) and codes.encoder is model.encoder_
    assert np.asarray(codes).shape == d.data.shape and len(codes) == len(d.data)
    np.testing.assert_array_equal(model.predict(codes), model.predict(d.data))
    # the codes read again as raw values land in the lowest bins: the silent wrong answer of before
    assert not np.array_equal(model.predict(np.asarray(codes, dtype=float)), model.predict(d.data))
    sel = tp.JMI(k=4).fit(d.data, d.target)
    again = tp.JMI(k=4).fit(sel.encoder_.transform(d.data), d.target)
    np.testing.assert_array_equal(again.selected_, sel.selected_)
    np.testing.assert_allclose(again.scores_, sel.scores_, rtol=1e-12)
    enc = tp.Encoder(discretizer="uniform").fit(d.data)
    assert isinstance(enc.fit_transform(d.data), tp.Encoded)
    assert enc.transform(enc.transform(d.data)) is not None  # an Encoded is passed through, not encoded again
    np.testing.assert_array_equal(enc.transform(enc.transform(d.data)).codes, enc.transform(d.data).codes)
    rows = enc.transform(d.data)[10:20]
    assert isinstance(rows, tp.Encoded) and rows.shape == (10, 13)
    with pytest.raises(ValueError, match="cardinalities"):
        tp.Encoder(discretizer="uniform", n_bins=3).fit(d.data).transform(enc.transform(d.data))


def test_one_check_of_encoded_codes_at_every_entry():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 3, (200, 4))
    y = rng.integers(0, 2, 200)
    with pytest.raises(ValueError, match=BAD + ".*column 0 holds np.float64\\(.*\\.9\\) at row 0"):
        tp.Encoded(codes + 0.9, [3, 3, 3, 3])  # before: fit_cpd truncated 2.9 to 2 and fitted
    with pytest.raises(ValueError, match=BAD + ".*column 2 holds 2 at row 3, its cardinality is 2"):
        tp.Encoded(codes, [3, 3, 2, 3])
    with pytest.raises(ValueError, match=BAD + ".*holds -2 at row 5"):
        tp.Encoded(np.where(np.arange(200)[:, None] == 5, -2, codes), [3] * 4)
    with pytest.raises(ValueError, match="cardinalities must be >= 1"):
        tp.Encoded(codes, [3, 3, 3])
    assert tp.Encoded(codes.astype(float), [3] * 4).codes.dtype == np.int8  # whole floats are codes
    bad = tp.Encoded(codes, [3] * 4)
    bad.codes = codes + 0.9  # changed after it was checked: every entry checks again
    entries = {
        "encode": lambda: tp.encode(bad),
        "Encoder.fit": lambda: tp.Encoder().fit(bad),
        "Encoder.transform": lambda: tp.Encoder().fit(tp.Encoded(codes, [3] * 4)).transform(bad),
        "fit_cpd": lambda: tp.fit_cpd(bad, rank=2, device="cpu", n_iter_max=2),
        "fit_cpds": lambda: tp.fit_cpds(bad, ranks=[2], y=y, device="cpu", n_iter_max=2),
        "CPD": lambda: tp.CPD(rank=2, device="cpu", n_iter_max=2).fit(bad),
        "MIM": lambda: tp.MIM(k=2).fit(bad, y),
        "JMI": lambda: tp.JMI(k=2).fit(bad, y),
        "select_features": lambda: tp.select_features(bad, y, 2, method="mrmr"),
        "streamed": lambda: tp.JMI(k=2).fit(RowChunks([(bad, y)])),
    }
    for name, call in entries.items():
        with pytest.raises(ValueError, match=BAD + ".*column 0 holds"):
            call()
        assert name


def test_a_plain_integer_array_is_raw_data_for_encoders_and_selectors():
    X = np.array([[0, 5], [2, 5], [2, 7], [0, 7]] * 10)
    enc = tp.encode(X)
    assert enc.codes[:4].tolist() == [[0, 0], [1, 0], [1, 1], [0, 1]]  # values 0, 2 and 5, 7 by value
    codes = tp.Encoded(enc.codes, enc.cardinalities)
    np.testing.assert_array_equal(tp.encode(codes).codes, enc.codes)  # declared codes: as they are


# ---------------------------------------------------------------- feature names
def test_integer_column_names_match_by_position_without_warnings():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.integers(0, 3, (300, 5)))  # pandas' default names 0, 1, 2, ...
    y = (df[1] + df[3]) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for est in (tp.JMI(k=2), tp.MIM(k=2), tp.Encoder()):
            est.fit(df, y)
            assert not hasattr(est, "feature_names_in_")  # before: the strings '0', '1', ...
            est.transform(df)
        sel = tp.JMI(k=2).fit(df, y)
        assert sel.encoder_.feature_names_ == ["0", "1", "2", "3", "4"]
        np.testing.assert_array_equal(sel.transform(df), df.to_numpy()[:, sorted(sel.selected_)])
    named = df.set_axis(list("abcde"), axis=1)
    assert tp.JMI(k=2).fit(named, y).feature_names_in_.tolist() == list("abcde")
    with pytest.raises(TypeError, match="string"):  # scikit-learn's rule for mixed names
        tp.JMI(k=2).fit(df.set_axis(["a", 1, "c", "d", "e"], axis=1), y)


@pytest.mark.parametrize("est", [tp.Encoder(discretizer="uniform"), tp.Discretizer(), tp.JMI(k=1), tp.MIM(k=1), tp.CMIM(k=1)],
                         ids=lambda e: type(e).__name__)
def test_scikit_learn_feature_name_checks(est):
    from sklearn.utils import estimator_checks as checks

    name = type(est).__name__
    checks.check_n_features_in_after_fitting(name, est)
    checks.check_get_feature_names_out_error(name, est)
    checks.check_transformer_get_feature_names_out(name, est)
    checks.check_transformer_get_feature_names_out_pandas(name, est)
    if name == "Discretizer":  # numbers only, by position: scikit-learn's rules whole
        checks.check_dataframe_column_names_consistency(name, est)
        return
    # check_dataframe_column_names_consistency passes its fit part (feature_names_in_, no warning
    # on fit or transform) and stops at its first refusal: a frame of the fitted columns in
    # another order, which tensorprob's encoders and selectors match by name (DESIGN.md, section 3)
    with pytest.raises(AssertionError, match="did not raise"):
        checks.check_dataframe_column_names_consistency(name, est)
    # its other two refusals, unseen and missing names, with scikit-learn's messages
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(150, 8)), columns=[f"col_{i}" for i in range(8)])
    fitted = clone(est).fit(X, rng.integers(0, 2, 150))
    prefix = re.escape("The feature names should match those that were passed during fit.\n")
    with pytest.raises(ValueError, match=prefix + re.escape("Feature names unseen at fit time:\n- another_prefix_0\n")):
        fitted.transform(X.set_axis([f"another_prefix_{i}" for i in range(8)], axis=1))
    with pytest.raises(ValueError, match=prefix + re.escape("Feature names seen at fit time, yet now missing:\n- col_3\n")):
        fitted.transform(X.iloc[:, :3])
    np.testing.assert_array_equal(np.asarray(fitted.transform(X.iloc[:, ::-1])), np.asarray(fitted.transform(X)))


# ---------------------------------------------------------------- defaults that respect the rows
def test_integral_columns_keep_their_values_only_while_the_rows_suffice():
    rng = np.random.default_rng(3)
    y = np.repeat(np.arange(10), 245)  # 2450 rows, 10 classes: at most sqrt(2450 / 50) = 7 values
    X = np.column_stack([rng.integers(0, 7, 2450), rng.integers(0, 8, 2450), rng.integers(0, 3, 2450)])
    enc = tp.JMI(k=2).fit(X, y).encoder_
    assert enc.kinds_ == ["categorical", "discretized", "categorical"]
    assert enc.cardinalities_.tolist() == [7, 5, 3]
    auto = tp.encode(X, y, max_categories="auto", discretizer="uniform")
    np.testing.assert_array_equal(auto.codes, enc.transform(X).codes)  # the selectors' rule, on its own
    assert tp.encode(X, y).cardinalities.tolist() == [7, 8, 3]  # encode keeps max_categories
    with tp.config_context(min_cell_count=0):  # the rule off: up to max_categories values
        assert tp.JMI(k=2).fit(X, y).encoder_.cardinalities_.tolist() == [7, 8, 3]
    assert tp.JMI(k=2, discretizer=None).fit(X, y).encoder_.cardinalities_.tolist() == [7, 8, 3]  # nothing to bin with
    few = tp.MIM(k=1).fit(X[::10], y[::10]).encoder_  # 245 rows: n_bins (5) values at most
    assert few.kinds_ == ["discretized", "discretized", "categorical"]


def _saturating(n=100, n_features=30, seed=0):
    """Columns that name every row (a permutation each): every table is pure, every score is H(C)."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(n) for _ in range(n_features)], 1), np.arange(n) % 10


@pytest.mark.parametrize("cls", [tp.MIM, tp.JMI, tp.CMIM], ids=lambda c: c.__name__)
def test_saturated_scores_warn_once(cls):
    X, y = _saturating()
    with tp.config_context(min_cell_count=0, max_categories=128), warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        sel = cls(k=3).fit(X, y)
    hits = [w for w in rec if "saturate" in str(w.message)]
    assert len(hits) == 1 and "tie at the maximum" in str(hits[0].message)
    assert hits[0].filename == __file__  # points at the caller
    np.testing.assert_allclose(sel.scores_[0], math.log(10), rtol=1e-6)
    with warnings.catch_warnings(record=True) as rec:  # the default rule bins them: no warning
        warnings.simplefilter("always")
        cls(k=3).fit(X, y)
    assert not [w for w in rec if "saturate" in str(w.message)]
    W = np.random.default_rng(1).poisson(1.0, (100, 3)).astype(float)
    with tp.config_context(min_cell_count=0, max_categories=128), warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cls(k=3).fit(X, y, resamples=W)  # a batch of selections: still one warning
    assert len([w for w in rec if "saturate" in str(w.message)]) == 1


def test_saturation_threshold():
    import torch

    from tensorprob.selection._greedy import SATURATED_TIES, warn_if_saturated

    for ties, warns in ((SATURATED_TIES, False), (SATURATED_TIES + 1, True)):
        s = torch.tensor([1.0] * ties + [0.5] * 20, dtype=torch.float64)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            warn_if_saturated("jmi", s, torch.ones(s.numel(), dtype=torch.bool))
        assert bool(rec) == warns
    s = torch.tensor([1.0] * 12 + [0.5], dtype=torch.float64)
    avail = torch.tensor([False] * 2 + [True] * 11)  # only 10 of the ties are candidates
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_saturated("jmi", s, avail)


# ---------------------------------------------------------------- ranges that overflow, infinite values
def _exact_uniform(lo, hi, n_bins):
    return [float(Fraction(lo) + i * (Fraction(hi) - Fraction(lo)) / n_bins) for i in range(1, n_bins)]


def test_ranges_near_the_largest_floats_are_cut_without_overflow():
    big = np.finfo(np.float64).max
    rng = np.random.default_rng(0)
    x = np.concatenate([[-big, big], rng.uniform(-1, 1, 498) * 1.7e308])
    y = (x > 0.5e308).astype(int) + (x > -0.5e308)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy overflow warning either
        d = tp.Discretizer(n_bins=5).fit(x[:, None])
        np.testing.assert_allclose(d.bin_edges_[0], _exact_uniform(-big, big, 5), rtol=1e-15)
        codes = d.transform(x[:, None])[:, 0]
        assert sorted(set(codes.tolist())) == [0, 1, 2, 3, 4]  # before: everything in one bin
        enc = tp.encode(x[:, None], discretizer="uniform")
        np.testing.assert_array_equal(enc.codes[:, 0], codes)
        for strategy in ("quantile", "mdl"):
            e = tp.Discretizer(n_bins=4, strategy=strategy).fit(x[:, None], y).bin_edges_[0]
            assert np.isfinite(e).all() and e.size >= 2
        score = tp.MIM(k=1, discretizer="uniform").fit(x[:, None], y).scores_[0]
        assert score > 0.5  # the information is there (before: 0)
    one_side = np.array([1.5e308, 1.6e308, 1.7e308, 1.79e308])  # a width that does not overflow: exact too
    np.testing.assert_allclose(tp.Discretizer(n_bins=3).fit(one_side[:, None]).bin_edges_[0],
                               _exact_uniform(1.5e308, 1.79e308, 3), rtol=1e-15)


def test_infinite_values_are_the_end_bins():
    x = np.array([-np.inf, 0.0, 0.25, 0.5, 0.75, 1.0, np.inf, np.nan])[:, None]
    for strategy in ("uniform", "quantile"):
        d = tp.Discretizer(n_bins=4, strategy=strategy).fit(x)
        assert np.isfinite(d.bin_edges_[0]).all()  # cut points from the finite values only
        got = d.transform(x)[:, 0].tolist()
        assert got[0] == 0 and got[6] == d.n_bins_[0] - 1 and got[7] == -1
    enc = tp.encode(x, discretizer="uniform", n_bins=4)
    assert enc.codes[:, 0].tolist() == [0, 0, 1, 2, 3, 3, 3, -1] and enc.encoder.kinds_ == ["discretized"]
    whole = tp.encode(pd.DataFrame({"w": [0.0, 1.0, 2.0, np.inf, -np.inf, 1.0]}))  # whole numbers: categories
    assert whole.encoder.categories_[0].tolist() == [-np.inf, 0.0, 1.0, 2.0, np.inf]
    assert tp.Discretizer(n_bins=3).fit(np.array([[np.inf], [-np.inf]])).n_bins_.tolist() == [1]
    streamed = tp.fit_cpd(RowChunks([x[:4], x[4:]]), rank=1, n_bins=4, device="cpu", n_iter_max=2)
    np.testing.assert_array_equal(streamed.encoder_.discretizer_.bin_edges_[0], enc.encoder.discretizer_.bin_edges_[0])
    assert isinstance(Sample(np.zeros(0, np.int64), np.zeros(0), None), Sample)
