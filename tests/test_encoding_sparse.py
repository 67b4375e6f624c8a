"""Sparse input to sparse codes (tensorprob.encoding._sparse) against the dense encoder on X.toarray()."""
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import tensorprob as tp
from tensorprob.encoding._encode import Encoder
from tensorprob.encoding._sparse import encode_sparse, transform_sparse

FORMATS = ["csr", "csc", "coo", "csr_array"]


def _as_format(X, fmt):
    if fmt == "csr_array":
        return sp.csr_array(X)
    return X.asformat(fmt)


def _random_matrix(rng, kind, M, N, density=0.2):
    """A random sparse matrix of one kind of values (see the cases below), CSR."""
    mask = rng.random((M, N)) < density
    if kind == "few_ints":
        vals = rng.integers(-3, 4, size=(M, N))
    elif kind == "many_ints":  # more values than the "auto" row rule keeps: binned
        vals = rng.integers(-500, 500, size=(M, N))
    elif kind == "floats":
        vals = rng.normal(size=(M, N)) * 3
    elif kind == "bools":
        vals = rng.random((M, N)) < 0.7
    elif kind == "positive_floats":
        vals = rng.exponential(size=(M, N)) + 0.5
    else:
        raise AssertionError(kind)
    dense = np.where(mask, vals, 0).astype(vals.dtype)
    dense[:, 0] = 0  # a column with no stored entry
    if N > 2:  # a column without an implicit zero (every entry stored, some of them nonzero)
        dense[:, 1] = vals[:, 1] if kind != "bools" else True
    X = sp.csr_matrix(dense)
    if N > 3 and X.nnz:  # a few explicitly stored zeros
        X = X.tolil()
        X[0, 3] = 0
        X = X.tocsr()
        X.data[X.data == 0] = 0
        coo = X.tocoo()
        extra = sp.csr_matrix((np.zeros(2, dtype=X.dtype), ([1, 2], [3, 3])), shape=X.shape)
        X = sp.csr_matrix((np.concatenate([coo.data, extra.data]),
                           (np.concatenate([coo.row, [1, 2]]), np.concatenate([coo.col, [3, 3]]))), shape=X.shape)
    return X


def _dense_zero_codes(enc, dtype):
    """The dense code of the value 0 in every column (0 where a categorical column has no 0)."""
    z = np.zeros(enc.n_features_in_, dtype=np.int64)
    edges = {j: e for j, e in zip(enc._cont_idx, getattr(enc.discretizer_, "bin_edges_", []))}
    for j, kind in enumerate(enc.kinds_):
        if kind == "discretized":
            z[j] = np.searchsorted(edges[j], 0.0, side="right")
        else:
            cats = enc.categories_[j]
            hit = np.flatnonzero(cats == np.zeros(1, dtype=dtype)[0]) if len(cats) else []
            z[j] = hit[0] if len(hit) else 0
    return z


def _swap(codes, z):
    out = codes.astype(np.int64).copy()
    for j in range(codes.shape[1]):
        col = codes[:, j]
        out[col == z[j], j] = 0
        out[col == 0, j] = z[j]
    return out


def _fit_both(X, y=None, **params):
    """Dense and sparse fits: (dense encoder, dense codes, dense warnings, sparse encoder, codes, cards, warnings)."""
    dense = Encoder(**params)
    with warnings.catch_warnings(record=True) as wd:
        warnings.simplefilter("always")
        dcodes = dense._fit(X.toarray(), y, None)
    sparse = Encoder(**params)
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        scodes, cards = encode_sparse(sparse, X, y)
    return dense, dcodes, [str(w.message) for w in wd], sparse, scodes, cards, [str(w.message) for w in ws]


def _assert_same_fit(dense, sparse):
    assert sparse.n_features_in_ == dense.n_features_in_
    assert sparse.feature_names_ == dense.feature_names_
    assert sparse.kinds_ == dense.kinds_
    assert sparse.discretized_ == dense.discretized_
    assert sparse._cont_idx == dense._cont_idx
    assert not hasattr(sparse, "feature_names_in_")
    np.testing.assert_array_equal(sparse.cardinalities_, dense.cardinalities_)
    assert sparse.cardinalities_.dtype == np.int64
    for a, b in zip(dense.categories_, sparse.categories_):
        if a is None:
            assert b is None
        else:
            assert b is not None and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    if dense.discretizer_ is None:
        assert sparse.discretizer_ is None
    else:
        assert type(sparse.discretizer_) is type(dense.discretizer_)
        assert len(sparse.discretizer_.bin_edges_) == len(dense.discretizer_.bin_edges_)
        for a, b in zip(dense.discretizer_.bin_edges_, sparse.discretizer_.bin_edges_):
            np.testing.assert_array_equal(a, b)  # bit for bit
        np.testing.assert_array_equal(sparse.discretizer_.n_bins_, dense.discretizer_.n_bins_)


def _assert_same_codes(dense, dcodes, scodes, cards, dtype):
    assert isinstance(scodes, sp.csr_matrix)
    assert scodes.has_canonical_format and scodes.has_sorted_indices
    assert scodes.dtype.kind == "i"
    assert not np.any(scodes.data == 0)
    np.testing.assert_array_equal(cards, dense.cardinalities_)
    assert cards.dtype == np.int64
    z = _dense_zero_codes(dense, dtype)
    np.testing.assert_array_equal(scodes.toarray(), _swap(np.asarray(dcodes), z))


def _check(X, y=None, **params):
    dense, dcodes, wd, sparse, scodes, cards, ws = _fit_both(X, y, **params)
    assert ws == wd
    _assert_same_fit(dense, sparse)
    _assert_same_codes(dense, dcodes, scodes, cards, X.dtype)
    return dense, sparse, scodes


CASES = [("few_ints", np.int64), ("few_ints", np.int8), ("many_ints", np.int32), ("floats", np.float64),
         ("floats", np.float32), ("bools", np.bool_), ("positive_floats", np.float64), ("few_ints", np.float32)]


@pytest.mark.parametrize("kind,dtype", CASES)
@pytest.mark.parametrize("discretizer", ["uniform", "auto", "quantile"])
def test_matches_dense_encoder(kind, dtype, discretizer):
    rng = np.random.default_rng(abs(hash((kind, str(dtype), discretizer))) % 2**32)
    for trial in range(6):
        M, N = int(rng.integers(5, 300)), int(rng.integers(4, 9))
        X = _random_matrix(rng, kind, M, N, density=float(rng.uniform(0.05, 0.6))).astype(dtype)
        X = _as_format(X, FORMATS[trial % len(FORMATS)])
        y = rng.integers(0, int(rng.integers(2, 4)), size=M)
        _check(X, y if trial % 2 else None, discretizer=discretizer, n_bins=int(rng.integers(2, 9)),
               max_categories="auto")


@pytest.mark.parametrize("fmt", FORMATS)
def test_nan_inf_and_missing_values(fmt):
    rng = np.random.default_rng(3)
    for trial in range(8):
        M, N = 120, 6
        X = _random_matrix(rng, "few_ints" if trial % 2 else "floats", M, N).astype(np.float64).tolil()
        for _ in range(10):
            X[int(rng.integers(M)), int(rng.integers(N))] = rng.choice([np.nan, -999.0, np.inf, -np.inf])
        X = _as_format(X.tocsr(), fmt)
        for disc in ("uniform", "quantile"):
            _check(X, discretizer=disc, n_bins=int(rng.integers(2, 9)), max_categories="auto", missing_values=[-999])
            _check(X, discretizer=disc, n_bins=4)


def test_integer_missing_values_and_fixed_limit():
    rng = np.random.default_rng(4)
    X = _random_matrix(rng, "many_ints", 200, 7).astype(np.int32).tolil()
    X[3, 2] = -999
    X[5, 4] = -999
    X = X.tocsr()
    _check(X, discretizer="uniform", n_bins=5, missing_values=-999)
    _check(X, discretizer="uniform", n_bins=5, max_categories=40)
    _check(X, discretizer=None, max_categories=1000)


def test_mdl_matches_dense():
    rng = np.random.default_rng(5)
    for trial in range(6):
        M, N = 250, 5
        X = _random_matrix(rng, "floats" if trial % 2 else "many_ints", M, N, density=0.4)
        y = (X.toarray()[:, 2] > 0).astype(np.int64) + rng.integers(0, 2, size=M) * (trial % 3 == 0)
        _check(X, y, discretizer="mdl", n_bins=int(rng.integers(2, 9)), max_categories="auto")


def test_errors_like_dense():
    rng = np.random.default_rng(6)
    X = _random_matrix(rng, "floats", 50, 4)
    with pytest.raises(ValueError) as dense_err:
        Encoder(discretizer=None)._fit(X.toarray(), None, None)
    with pytest.raises(ValueError) as sparse_err:
        encode_sparse(Encoder(discretizer=None), X)
    assert str(sparse_err.value) == str(dense_err.value)
    with pytest.raises(ValueError, match="supervised"):
        encode_sparse(Encoder(discretizer="mdl"), X)
    with pytest.raises(ValueError, match="user discretizer"):
        from sklearn.preprocessing import KBinsDiscretizer

        encode_sparse(Encoder(discretizer=KBinsDiscretizer(n_bins=3, encode="ordinal")), X)
    with pytest.raises(ValueError, match="marks the value 0"):
        encode_sparse(Encoder(missing_values=[0]), X)
    with pytest.raises(TypeError, match=r"scipy\.sparse"):
        encode_sparse(Encoder(), X.toarray())


def test_user_discretizer_without_continuous_columns():
    from sklearn.preprocessing import KBinsDiscretizer

    X = _random_matrix(np.random.default_rng(7), "few_ints", 80, 5)
    _check(X, discretizer=KBinsDiscretizer(n_bins=3, encode="ordinal"))


@pytest.mark.parametrize("kind,dtype", [("few_ints", np.int64), ("floats", np.float64), ("bools", np.bool_)])
def test_transform_sparse(kind, dtype):
    rng = np.random.default_rng(8)
    X = _random_matrix(rng, kind, 200, 6).astype(dtype)
    for disc in ("uniform", "quantile"):
        enc = Encoder(discretizer=disc, n_bins=4, max_categories="auto")
        codes, _ = encode_sparse(enc, X)
        np.testing.assert_array_equal(transform_sparse(enc, X).toarray(), codes.toarray())
        rows = X[rng.permutation(200)[:50]]
        dense = Encoder(discretizer=disc, n_bins=4, max_categories="auto")
        dense._fit(X.toarray(), None, None)
        z = _dense_zero_codes(dense, X.dtype)
        np.testing.assert_array_equal(transform_sparse(enc, rows).toarray(), _swap(dense._transform(rows.toarray()), z))


def test_transform_sparse_unseen_value():
    X = sp.csr_matrix(np.array([[1, 0], [2, 3], [1, 3]] * 10))
    enc = Encoder(discretizer="uniform", max_categories="auto")
    encode_sparse(enc, X)
    for new in (np.array([[1, 3], [0, 3]]), np.array([[1, 3], [5, 3]]), np.array([[7, 3], [1, 0]])):
        with pytest.raises(ValueError) as dense_err:
            enc._transform(new)
        with pytest.raises(ValueError) as sparse_err:
            transform_sparse(enc, sp.csr_matrix(new))
        assert str(sparse_err.value) == str(dense_err.value)
    with pytest.raises(ValueError, match="features"):
        transform_sparse(enc, sp.csr_matrix(np.ones((2, 3))))


def test_does_not_change_input():
    X = sp.csc_matrix((np.array([1.0, 2.0, 3.0]), (np.array([0, 0, 1]), np.array([0, 0, 1]))), shape=(3, 2))
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    _, cards = encode_sparse(Encoder(discretizer="uniform"), X)
    for a, b in zip(before, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(a, b)
    dense = tp.encode(X.toarray(), discretizer="uniform")
    np.testing.assert_array_equal(cards, dense.cardinalities)


@pytest.mark.slow
def test_large_corpus_linear_memory():
    data = tp.datasets.make_sparse_corpus(200_000, 50_000, nnz_per_row=50, random_state=0)
    X, y = data.X, data.y
    enc = Encoder(discretizer="uniform", n_bins=5, max_categories="auto")
    tracemalloc.start()
    try:
        codes, cards = encode_sparse(enc, X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    nnz_bytes = X.nnz * (X.data.itemsize + X.indices.itemsize)  # the input's stored entries
    assert peak < 8 * nnz_bytes < X.shape[0] * X.shape[1] // 8  # never a dense (M, N) array
    assert codes.shape == X.shape and codes.nnz <= X.nnz
    assert cards.shape == (X.shape[1],)
    np.testing.assert_array_equal(cards, enc.cardinalities_)
