"""Encoding of raw data and discretization (uniform / quantile / MDL); the sklearn transformer API."""
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.preprocessing import KBinsDiscretizer

import tensorprob as tp
from tensorprob.encoding import mdl_cut_points


# ---------------------------------------------------------------- encode
def test_encode_mixed_dataframe():
    df = pd.DataFrame({
        "color": ["red", "blue", None, "red"],
        "flag": [True, False, True, True],
        "count": [0, 2, 2, 1],
        "size": [0.1, 0.5, np.nan, 0.9],
        "kind": pd.Categorical(["a", "b", "a", "b"]),
    })
    enc = tp.encode(df, n_bins=2, discretizer="uniform")
    assert enc.feature_names == ["color", "flag", "count", "size", "kind"]
    assert enc.codes[:, 0].tolist() == [1, 0, -1, 1]
    assert enc.codes[:, 1].tolist() == [1, 0, 1, 1]
    assert enc.codes[:, 2].tolist() == [0, 2, 2, 1]
    assert enc.codes[:, 3].tolist() == [0, 1, -1, 1]
    assert enc.codes[:, 4].tolist() == [0, 1, 0, 1]
    assert enc.cardinalities.tolist() == [2, 2, 3, 2, 2]
    assert enc.codes.dtype == np.int8
    assert enc.encoder.kinds_ == ["categorical", "categorical", "categorical", "discretized", "categorical"]
    assert enc.discretized == ["size"]
    # the fitted encoder maps new data the same way, and rejects unseen categories
    np.testing.assert_array_equal(enc.encoder.transform(df), enc.codes)
    bad = df.copy()
    bad.loc[0, "color"] = "green"
    with pytest.raises(ValueError, match="'color' has a value not seen"):
        enc.encoder.transform(bad)


def test_encode_numpy_torch_and_strings():
    X = np.array([[1, 5], [2, 5], [1, 7]])
    enc = tp.encode(X)
    assert enc.codes.tolist() == [[0, 0], [1, 0], [0, 1]] and enc.feature_names == ["x0", "x1"]
    enc_t = tp.encode(torch.tensor(X))
    np.testing.assert_array_equal(enc_t.codes, enc.codes)
    S = np.array([["b", "x"], ["a", "y"], ["b", None]], dtype=object)
    assert tp.encode(S).codes.tolist() == [[1, 0], [0, 1], [1, -1]]
    # a raw -1 is a value (issue 12); a value is missing only when named in missing_values
    assert tp.encode(np.array([[0], [-1], [1]])).codes[:, 0].tolist() == [1, 0, 2]
    assert tp.encode(np.array([[0], [-1], [1]]), missing_values=-1).codes[:, 0].tolist() == [0, -1, 1]


def test_encode_discretizes_floats_and_many_valued_ints():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=200), rng.integers(0, 256, 200)])
    enc = tp.encode(X, n_bins=5, discretizer="uniform")
    assert enc.encoder.kinds_ == ["discretized", "discretized"]
    assert enc.cardinalities.tolist() == [5, 5]
    kb = KBinsDiscretizer(n_bins=5, encode="ordinal", strategy="uniform").fit(X)
    np.testing.assert_array_equal(enc.codes, kb.transform(X).astype(int))


def test_encode_errors():
    with pytest.raises(ValueError, match="2-D"):
        tp.encode(np.arange(5))
    with pytest.raises(ValueError, match="empty"):
        tp.encode(np.zeros((0, 2)))
    with pytest.raises(ValueError, match="discretizer=None"):
        tp.encode(np.array([[0.5], [1.5]]), discretizer=None)
    words = np.array([[f"w{i}"] for i in range(100)], dtype=object)
    with pytest.raises(ValueError, match="100 categories, above max_categories=64"):
        tp.encode(words)
    with tp.config_context(max_categories=128):
        assert tp.encode(words).cardinalities.tolist() == [100]
    with pytest.raises(ValueError, match="missing label"):
        tp.encode_labels(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="1-D"):
        tp.encode_labels(np.zeros((3, 2)))


# ---------------------------------------------------------------- discretize
def test_uniform_and_quantile_match_kbins():
    rng = np.random.default_rng(1)
    X = rng.exponential(size=(300, 3))
    for strategy in ("uniform", "quantile"):
        ours = tp.discretize(X, n_bins=4, strategy=strategy)
        kb = KBinsDiscretizer(n_bins=4, encode="ordinal", strategy=strategy, subsample=None,
                              **({"quantile_method": "averaged_inverted_cdf"} if strategy == "quantile" else {}))
        np.testing.assert_array_equal(ours, kb.fit_transform(X).astype(int))


@pytest.mark.parametrize("n_bins", [2, 5, 11])
def test_uniform_edges_equal_sklearn_bit_for_bit(n_bins):
    # the cut points of all columns at once are the per-column np.linspace of KBinsDiscretizer,
    # at every scale and offset (including a step that underflows to 0, computed one by one)
    from tensorprob.encoding._discretize import _uniform_edges

    rng = np.random.default_rng(n_bins)
    for scale in (1e-300, 1e-8, 1.0, 3.7e5, 1e300):
        X = rng.standard_normal((40, 25)) * scale + rng.standard_normal(25) * scale * 100
        kb = KBinsDiscretizer(n_bins=n_bins, encode="ordinal", strategy="uniform", subsample=None).fit(X)
        ours = _uniform_edges(X.min(0), X.max(0), n_bins)
        for j in range(X.shape[1]):
            np.testing.assert_array_equal(ours[j], kb.bin_edges_[j][1:-1])
    tiny = _uniform_edges(np.array([0.0, 0.0]), np.array([5e-324, 1.0]), n_bins)
    np.testing.assert_array_equal(tiny[0], np.linspace(0.0, 5e-324, n_bins + 1)[1:-1])
    np.testing.assert_array_equal(tiny[1], np.linspace(0.0, 1.0, n_bins + 1)[1:-1])


def test_bin_codes_equal_searchsorted():
    # codes of all columns by comparisons = searchsorted(side="right") per column; -1 for NaN
    from tensorprob.encoding._discretize import _bin_codes

    rng = np.random.default_rng(3)
    X = rng.standard_normal((2000, 30))
    X[rng.random(X.shape) < 0.05] = np.nan
    X[0, 0], X[1, 1] = np.inf, -np.inf
    edges = [np.sort(rng.standard_normal(rng.integers(0, 8))) for _ in range(30)]
    edges[2] = np.array([X[5, 2], X[5, 2]])  # a value equal to (repeated) cut points
    ref = np.stack([np.searchsorted(e, X[:, j], side="right") for j, e in enumerate(edges)], 1)
    ref[np.isnan(X)] = -1  # +inf: the last bin, -inf: the first
    np.testing.assert_array_equal(_bin_codes(X, edges), ref)
    assert _bin_codes(X[:0], edges).shape == (0, 30)


def test_float_array_codes_whole_and_by_column_agree():
    # a float array continuous as a whole is coded in one pass; a DataFrame of the same columns
    # (typed column by column) gives the same codes, user missing values and NaN included
    rng = np.random.default_rng(4)
    X = rng.standard_normal((500, 12))
    X[rng.random(X.shape) < 0.05] = np.nan
    X[::7, 3] = -999.0
    for kw in ({}, {"missing_values": -999.0}):
        whole = tp.encode(X, n_bins=4, discretizer="uniform", **kw)
        frame = tp.encode(pd.DataFrame(X), n_bins=4, discretizer="uniform", **kw)
        np.testing.assert_array_equal(whole.codes, frame.codes)
        assert whole.encoder.kinds_ == ["discretized"] * 12
    assert (tp.encode(X, n_bins=4, discretizer="uniform", missing_values=-999.0).codes[::7, 3] == -1).all()


def test_discretize_nan_and_constant_columns():
    X = np.array([[0.0, 1.0], [np.nan, 1.0], [1.0, 1.0], [0.5, 1.0]])
    d = tp.Discretizer(n_bins=2).fit(X)
    out = d.transform(X)
    assert out[:, 0].tolist() == [0, -1, 1, 1] and out[:, 1].tolist() == [0, 0, 0, 0]
    assert d.n_bins_.tolist() == [2, 1]


def test_mdl_hand_worked_cut_points():
    # perfect 2-class split: gain 1 bit > (log2 7 + log2 7 - 2) / 8 = 0.452 -> one cut
    x = np.arange(1, 9, dtype=float)
    assert mdl_cut_points(x, np.array([0, 0, 0, 0, 1, 1, 1, 1])).tolist() == [4.5]
    # n = 4: gain 1 > (log2 3 + 0.807) / 4 = 0.598 -> cut
    assert mdl_cut_points(np.arange(1.0, 5.0), np.array([0, 0, 1, 1])).tolist() == [2.5]
    # alternating classes: best gain 0.311 < (log2 3 + 2.644) / 4 = 1.057 -> no cut
    assert mdl_cut_points(np.arange(1.0, 5.0), np.array([0, 1, 0, 1])).tolist() == []
    # three blocks of three: root cut 3.5 (gain 0.918 > 0.543, ties to the first boundary),
    # then 6.5 on the right part (gain 1 > 0.5215)
    x9, y9 = np.arange(1.0, 10.0), np.repeat([0, 1, 2], 3)
    assert mdl_cut_points(x9, y9).tolist() == [3.5, 6.5]
    assert mdl_cut_points(x9, y9, max_bins=2).tolist() == [3.5]
    # repeated values are never split apart
    assert mdl_cut_points(np.array([1.0, 1, 2, 2, 3, 3]), np.array([0, 0, 1, 1, 1, 1])).tolist() == [1.5]


def test_mdl_discretize_is_supervised():
    x = np.concatenate([np.linspace(0, 1, 50), np.linspace(2, 3, 50)])[:, None]
    y = np.repeat([0, 1], 50)
    codes = tp.discretize(x, strategy="mdl", n_bins=None, y=y)
    assert codes[:50, 0].tolist() == [0] * 50 and codes[50:, 0].tolist() == [1] * 50
    with pytest.raises(ValueError, match="pass the class labels"):
        tp.discretize(x, strategy="mdl")
    with pytest.raises(ValueError, match="The 'strategy' parameter of Discretizer must be a str among"):
        tp.discretize(x, strategy="kmeans")
    with pytest.raises(ValueError, match="The 'n_bins' parameter of Discretizer must be an int in the range"):
        tp.discretize(x, n_bins=1)
    with pytest.raises(ValueError, match="n_bins=None is only allowed with strategy='mdl'"):
        tp.discretize(x, n_bins=None)
    enc = tp.encode(x, y, discretizer="mdl", n_bins=5)
    assert enc.cardinalities.tolist() == [2]


# ---------------------------------------------------------------- scikit-learn transformer API
def test_encoder_and_discretizer_are_sklearn_transformers():
    from sklearn.exceptions import NotFittedError

    X = np.column_stack([np.linspace(0, 1, 12), np.arange(12) % 3]).astype(float)
    for est in (tp.Encoder(n_bins=3), tp.Discretizer(n_bins=3)):
        with pytest.raises(NotFittedError):
            est.transform(X)
        twin = clone(est).set_params(n_bins=4)
        assert twin.n_bins == 4 and est.n_bins == 3
        codes = est.fit(X).transform(X)
        np.testing.assert_array_equal(est.fit_transform(X), codes)
        assert est.n_features_in_ == 2
        assert est.get_feature_names_out().tolist() == ["x0", "x1"]
        with pytest.raises(ValueError, match=r"X has 1 features, but .* is expecting 2 features as input"):
            est.transform(X[:, :1])
    df = pd.DataFrame({"a": ["u", "v", "u"], "b": [0.1, 0.2, 0.3]})
    enc = tp.Encoder().fit(df)
    assert enc.get_feature_names_out().tolist() == ["a", "b"] and enc.feature_names_in_.tolist() == ["a", "b"]


def test_encoder_keeps_the_semantics_of_pandas_dtypes():
    df = pd.DataFrame({
        "i": pd.array([1, 2, 3, 1], dtype="Int64"),           # nullable int, complete: codes
        "j": pd.array([1, None, 3, 1], dtype="Int64"),        # nullable int with NA: categories too
        "f": pd.array([0.5, 1.5, None, 0.5], dtype="Float64"),
        "s": pd.array(["a", "b", None, "a"], dtype="string"),
        "b": pd.array([True, None, False, True], dtype="boolean"),
        "c": pd.Categorical(["x", "y", "x", "y"]),
    })
    enc = tp.encode(df, n_bins=2, discretizer="uniform")
    assert enc.encoder.kinds_ == ["categorical", "categorical", "discretized", "categorical", "categorical",
                                  "categorical"]
    assert enc.codes.tolist() == [[0, 0, 0, 0, 1, 0], [1, -1, 1, 1, -1, 1], [2, 1, -1, -1, 0, 0], [0, 0, 0, 0, 1, 1]]


def test_encoder_rejects_complex_and_sparse_input():
    import scipy.sparse as sp

    with pytest.raises(ValueError, match="Complex data not supported"):
        tp.encode(np.array([[1 + 1j], [2 + 0j]]))
    with pytest.raises(TypeError, match="sparse input"):
        tp.Encoder().fit(sp.csr_matrix(np.eye(3)))



@pytest.mark.parametrize("seed", range(11))
def test_small_integer_arrays_encode_as_the_general_path_does(seed, monkeypatch):
    # the vectorized path for 2-D integer arrays (one presence table, no per-column sort) gives
    # the codes, categories and kinds of the per-column path: gaps, negative values, wide and
    # too-many-category columns (left to the general path), unsigned and narrow dtypes, order
    from tensorprob.encoding import _summary

    rng = np.random.default_rng(seed)
    X = rng.integers(-3, 7, (500, 9))
    X[:, 1] *= 3  # gaps between the values
    X[:, 2] = np.arange(500)  # more than max_categories values: discretized
    X[:, 4] = 2**40 + X[:, 4]  # far from 0, small range
    X[:, 5] = 2**40 * X[:, 5]  # wide range: general path
    X = [X, np.abs(X[:, [0, 1, 3, 6]]).astype(np.uint16 if seed == 1 else np.uint64), (X[:, [0, 1, 3]] % 50).astype(np.int8),
         np.asfortranarray(X), X[:, [0, 3, 6, 7, 8]] - X[:, [0, 3, 6, 7, 8]].min(0), X[::2, ::-1],
         # int8 over its whole range (x - min must not wrap), and binary / constant columns
         np.stack([np.arange(500) % 256 - 128, rng.integers(-128, 128, 500)], 1).astype(np.int8),
         np.stack([rng.integers(0, 2, 500), np.full(500, 7), rng.integers(0, 2, 500) * 5, X[:, 0]], 1),
         (2**60 + np.abs(X[:, [0, 1, 3]])).astype(np.uint64),  # beyond float64's integers
         # spans of at most 8 values, with gaps (the comparison path of the presence check)
         np.stack([rng.integers(0, 3, 500) * 2, rng.integers(1, 4, 500), rng.integers(0, 2, 500) * 7,
                   rng.integers(0, 8, 500)], 1),
         # x - min in the input's own dtype: negative minima, spans near the dtype's limit, gaps
         np.stack([rng.integers(-128, -120, 500), rng.integers(-64, 64, 500), rng.integers(0, 3, 500) * 60 - 128,
                   np.full(500, -128)], 1).astype(np.int8)][seed]
    before = X.copy()
    fast = tp.Encoder(discretizer="uniform")
    codes = fast.fit_transform(X)
    np.testing.assert_array_equal(X, before)  # the caller's data is untouched
    monkeypatch.setattr(_summary, "_small_int_array", lambda *a: None)
    slow = tp.Encoder(discretizer="uniform")
    ref = slow.fit_transform(X)
    assert codes.dtype == ref.dtype
    np.testing.assert_array_equal(codes, ref)
    assert fast.kinds_ == slow.kinds_
    for a, b in zip(fast.categories_, slow.categories_):
        assert (a is None and b is None) or np.array_equal(a, b)
    np.testing.assert_array_equal(fast.transform(X), codes)


@pytest.mark.parametrize("case", range(7))
@pytest.mark.parametrize("bits", [True, False])
def test_bitmask_coding_of_small_integers_equals_the_general_path(case, bits, monkeypatch):
    # _bit_coded (values of a column as the bits of one mask, codes by popcount) against the
    # per-column path: masks of 8, 16, 32 and 64 bits, values in [0, 64) with offsets and gaps,
    # negative minima, several row blocks (a tiny memory budget), odd numbers of rows (the
    # halving OR); case 6: few columns with gaps among many (only those are renumbered);
    # bits=False: NumPy without bitwise_count takes the comparison and bincount paths
    from tensorprob.encoding import _summary

    rng = np.random.default_rng(100 + case)
    M = 3000
    X = [np.stack([rng.integers(0, 5, M), rng.integers(2, 4, M), np.full(M, 5), rng.integers(0, 2, M) * 7], 1),
         np.stack([rng.integers(0, 16, M), rng.integers(0, 3, M) * 5 + 1, rng.integers(8, 16, M)], 1),
         np.stack([rng.integers(0, 32, M), rng.integers(0, 64, M), rng.integers(0, 4, M) * 21], 1),
         np.stack([rng.integers(-40, 20, M), rng.integers(-9, -1, M) * 3, rng.integers(100, 160, M)], 1),
         rng.integers(0, 5, (M, 40)),
         np.stack([rng.integers(0, 63, M), np.full(M, 63), rng.integers(0, 2, M) * 63], 1),
         rng.integers(0, 4, (M - 1, 50))][case]
    if case == 6:
        X[:, 3] += 1  # no 0
        X[:, 17] = np.where(X[:, 17] == 2, 5, X[:, 17])  # 0, 1, 3, 5
        X[:, 40] = 7
    X = X.astype([np.int64, np.uint8, np.int16, np.int32, np.int8, np.uint64, np.uint8][case])
    if not bits:
        monkeypatch.delattr(np, "bitwise_count", raising=False)
    with tp.config_context(memory_budget=65536):  # row blocks of a few hundred rows
        fast = tp.Encoder(discretizer="uniform")
        codes = fast.fit_transform(X)
    monkeypatch.setattr(_summary, "_small_int_array", lambda *a: None)
    slow = tp.Encoder(discretizer="uniform")
    ref = slow.fit_transform(X)
    np.testing.assert_array_equal(codes, ref)
    assert fast.kinds_ == slow.kinds_
    for a, b in zip(fast.categories_, slow.categories_):
        assert (a is None and b is None) or (np.array_equal(a, b) and a.dtype == b.dtype)


def test_or_over_rows_reads_every_row():
    # the halving OR of _bit_coded's masks against NumPy's reduction: each row holds its own bit,
    # so a row left out (an odd count at any level of the halving) changes the result
    from tensorprob.encoding._small_ints import _or_over_rows

    rng = np.random.default_rng(3)
    for n in range(1, 65):
        for width in (1, 7, 2048):
            b = np.left_shift(np.uint64(1), rng.permutation(64)[:n].astype(np.uint64))[:, None] * np.ones(width, np.uint64)
            np.testing.assert_array_equal(_or_over_rows(b), np.bitwise_or.reduce(b, axis=0))
            assert int(np.bitwise_count(_or_over_rows(b)[0])) == n


def test_categories_of_a_coded_array_are_cut_when_read(monkeypatch):
    # an integer array coded at once keeps its categories packed (values and counts) until
    # categories_ is read: then a list with one sorted array per column (None for a column left
    # to the general path), the same as the per-column path's, also after a pickle round trip and
    # when transform reads them first; an Encoded input's categories are 0 .. c - 1
    import pickle

    from tensorprob.encoding import _summary

    rng = np.random.default_rng(7)
    X = rng.integers(0, 5, (400, 300)) * rng.integers(1, 4, 300)  # counts and gaps differ by column
    X[:, 7] = 3  # one category
    wide = X.copy()
    wide[:, 11] = np.arange(400)  # more than max_categories values: discretized
    for data in (X, wide):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the discretized column
            fast = tp.Encoder(max_categories=20).fit(data)
            if data is X:
                assert not isinstance(vars(fast)["_categories"], list)  # packed
            again = pickle.loads(pickle.dumps(fast))
            codes = again.transform(data)  # reads the categories
            with monkeypatch.context() as m:
                m.setattr(_summary, "_small_int_array", lambda *a: None)
                slow = tp.Encoder(max_categories=20).fit(data)
        np.testing.assert_array_equal(codes, slow.transform(data))
        for enc in (fast, again):
            cats = enc.categories_
            assert type(cats) is list and len(cats) == X.shape[1] and (cats[11] is None) == (data is wide)
            for j, (a, b) in enumerate(zip(cats, slow.categories_)):
                assert (a is None and b is None) or (np.array_equal(a, b) and a.dtype == b.dtype), j
            assert enc.categories_ is cats  # cut once
    assert not hasattr(tp.Encoder(), "categories_")
    enc = tp.Encoder().fit(tp.Encoded(X[:, :5] % 3, cardinalities=[3, 4, 3, 5, 3]))
    assert [c.tolist() for c in enc.categories_] == [list(range(c)) for c in (3, 4, 3, 5, 3)]


def test_text_columns_factorized_as_keyed_one_by_one(monkeypatch):
    """Columns of strings (or bytes) are factorized by pandas; the categories, codes, transform and its
    unseen-value error equal those of keying every entry in Python (pandas' check turned off)."""
    from tensorprob.encoding import _columns

    rng = np.random.default_rng(0)
    words = np.array(["b", "a", "", "won", "nowin", "é"], dtype=object)
    text = words[rng.integers(0, 6, 300)]
    text[::7] = np.str_("a")  # NumPy's str subclass is the same category
    raw = np.array([b"x", b"y"], dtype=object)[rng.integers(0, 2, 300)]
    mixed = text.copy()
    mixed[::11] = None  # missing entries: the Python path
    X = np.column_stack([text, raw, mixed])
    fast = tp.encoding.Encoder().fit(X)
    new = X[:40].copy()
    got = fast.transform(new)
    with pytest.raises(ValueError, match="not seen when fitting: 'zzz'"):
        fast.transform(np.column_stack([np.array(["zzz"] + ["a"] * 4, dtype=object), raw[:5], text[:5]]))
    monkeypatch.setattr(pd.api.types, "infer_dtype", lambda values, skipna=True: "mixed")
    slow = tp.encoding.Encoder().fit(X)
    for a, b in zip(fast.categories_, slow.categories_):
        assert list(a) == list(b)
    np.testing.assert_array_equal(fast.transform(X), slow.transform(X))
    np.testing.assert_array_equal(got, slow.transform(new))
    assert (got[::11, 2] == -1).all() and (got[:, 0] >= 0).all()
    with pytest.raises(ValueError, match="not seen when fitting: 'zzz'"):
        slow.transform(np.column_stack([np.array(["zzz"] + ["a"] * 4, dtype=object), raw[:5], text[:5]]))
    inverse, keys, firsts = _columns._object_categories(text)
    assert [k[0] for k in keys] == ["str"] * len(keys) and len(keys) == 6
    np.testing.assert_array_equal(np.asarray(firsts, dtype=object)[inverse], text)
