"""CPD fits of scipy.sparse input: the dense fit's model, from the stored entries (issue 46)."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from _helpers import tols

import tensorprob as tp
from tensorprob.counting import Incidence, unique_rows
from tensorprob.counting._sparse_rows import SparseCodeRows, SparseIncidence, unique_sparse_rows


def _counts(seed, M=300, N=25, values=4):
    """Mostly-zero counts, a column whose top value is not 0, one never stored, and labels."""
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((M, N)) < 0.2, rng.integers(1, values, (M, N)), 0)
    X[:, 3] = np.where(rng.random(M) < 0.9, 2, 0)
    X[:, 5] = 0
    y = rng.integers(0, 3, M)
    X[:, 7] = np.where(rng.random(M) < 0.7, y, X[:, 7])
    return X, y


def _same_model(a, b, dtype):
    t = tols(dtype, rtol=1e-9, atol=1e-10)
    assert a.n_iter_ == b.n_iter_ and a.cardinalities.tolist() == b.cardinalities.tolist()
    np.testing.assert_allclose(a.loglik_history_, b.loglik_history_, **t)
    torch.testing.assert_close(b.weights, a.weights, **t)
    for fa, fb in zip(a.factors, b.factors):
        torch.testing.assert_close(fb, fa, **t)


@pytest.mark.parametrize("init", ["random", "kmeans++"])
@pytest.mark.parametrize("label", [False, True])
def test_sparse_fit_equals_dense_fit(init, label, dtype):
    """Integer counts are codes as they are (the dense convention); the start and every EM step match."""
    X, y = _counts(1)
    kw = dict(rank=4, y=y if label else None, random_state=0, init=init, n_restarts=2, device="cpu")
    dense = tp.fit_cpd(X, **kw)
    for fmt in (sp.csr_matrix, sp.csc_array, sp.coo_matrix):
        _same_model(dense, tp.fit_cpd(fmt(X), **kw), dtype)


def test_sparse_fit_encodes_like_dense(dtype):
    """Floats are discretized, NaN is missing, weights merge: the model and its encoder are the dense fit's."""
    X, y = _counts(2, values=6)
    rng = np.random.default_rng(0)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    Xf[rng.integers(0, X.shape[0], 20), rng.integers(0, X.shape[1], 20)] = np.nan
    w = rng.uniform(0.5, 2.0, X.shape[0])
    kw = dict(rank=3, y=y, random_state=1, n_restarts=2, sample_weight=w, device="cpu")
    dense, got = tp.fit_cpd(Xf, **kw), tp.fit_cpd(sp.csr_matrix(Xf), **kw)
    _same_model(dense, got, dtype)
    assert got.encoder_.cardinalities_.tolist() == dense.encoder_.cardinalities_.tolist()
    # the factors read in the dense numbering: the fitted model scores dense rows as the dense fit does
    np.testing.assert_allclose(got.predict_proba(Xf[:20]), dense.predict_proba(Xf[:20]), **tols(dtype, rtol=1e-8))


def test_sparse_fit_cpds_several_ranks(dtype):
    X, y = _counts(3)
    dense = tp.fit_cpds(X, ranks=[2, 3], y=y, random_state=0, n_restarts=1, device="cpu")
    got = tp.fit_cpds(sp.csr_matrix(X), ranks=[2, 3], y=y, random_state=0, n_restarts=1, device="cpu")
    for a, b in zip(dense, got):
        _same_model(a, b, dtype)


def test_unique_sparse_rows_order_of_the_dense_rows():
    """Distinct rows, merged weights and the inverse equal unique_rows' on the dense codes (missing lowest)."""
    rng = np.random.default_rng(4)
    M, N = 500, 6
    base = np.array([0, 2, 1, 0, 3, 0])
    dense = np.where(rng.random((M, N)) < 0.5, rng.integers(-1, 4, (M, N)), base[None, :])
    dense = dense[rng.integers(0, M // 3, M)]  # repeats
    r, c = np.nonzero(dense != base[None, :])
    csr = sp.csr_matrix((dense[r, c], (r, c)), shape=(M, N))
    csr.data[csr.data == 0] = 0
    rows = SparseCodeRows(np.r_[0, np.cumsum(np.bincount(r, minlength=M))], c, dense[r, c], base)
    w = rng.uniform(0.1, 1.0, M)
    got, merged, inverse = unique_sparse_rows(rows, w)
    ref, ref_w, ref_inv = unique_rows(torch.from_numpy(dense), torch.from_numpy(w))
    np.testing.assert_array_equal(got.dense(), ref.numpy())
    np.testing.assert_allclose(merged, ref_w.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(inverse, ref_inv.numpy())


def test_sparse_incidence_products_equal_the_dense_incidence():
    rng = np.random.default_rng(5)
    M, N = 200, 7
    cards = torch.tensor([3, 4, 2, 5, 3, 2, 3])
    base = np.array([0, 1, 0, 4, 2, 1, 0])
    dense = np.where(rng.random((M, N)) < 0.3, rng.integers(-1, 5, (M, N)) % cards.numpy() - (rng.random((M, N)) < 0.05),
                     base[None, :])
    r, c = np.nonzero(dense != base[None, :])
    rows = SparseCodeRows(np.r_[0, np.cumsum(np.bincount(r, minlength=M))], c, dense[r, c], base)
    D = int(cards.sum())
    ref = Incidence(torch.from_numpy(dense), cards, torch.float64, bytes_per_row=None)
    with tp.config_context(memory_budget=2**16):  # chunks of about 100 rows
        inc = SparseIncidence(rows, cards, torch.float64, bytes_per_row=64 * 8)
    X = torch.from_numpy(rng.normal(size=(D, 3)))
    Y = torch.from_numpy(rng.uniform(size=(M, 3)))
    Y[:, 2] = 0  # a component without mass
    Y[dense[:, 1] == base[1], 0] = 1e-30  # base sums below the subtraction's rounding: summed directly
    (_, _, S_ref, ST_ref), = list(ref.chunks())
    want, want_t = ref.matmul(S_ref, X), ref.matmul_t(ST_ref, Y, 0, M)
    got = torch.cat([inc.matmul(S, X) for _, _, S, _ in inc.chunks()])
    got_t = sum(inc.matmul_t(ST, Y[s:e], s, e) for s, e, _, ST in inc.chunks())
    assert len(inc.ranges) > 1
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got_t, want_t, rtol=1e-12, atol=1e-40)
    np.testing.assert_array_equal(inc.flat(index=torch.tensor([4, 0, 4])).numpy(), ref.flat(index=torch.tensor([4, 0, 4])).numpy())


def test_sparse_corpus_fit_is_never_densified():
    import tracemalloc

    d = tp.datasets.make_sparse_corpus(20_000, 20_000, nnz_per_row=20, random_state=1)
    tracemalloc.start()
    try:
        m = tp.fit_cpd(d.X, rank=5, y=d.y, n_restarts=1, n_iter_max=5, tol=0, random_state=0, device="cpu")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(m.loglik_history_[-1]) and m.n_variables == 20_001
    assert peak < 20_000 * 20_000 // 8, peak


def test_sparse_errors_name_the_problem():
    X, y = _counts(6)
    S = sp.csr_matrix(X)
    with pytest.raises(ValueError, match=r"lie in 0 \.\. cardinality - 1"):
        tp.fit_cpd(S, rank=2, cardinalities=[2] * X.shape[1], device="cpu")
    model = tp.fit_cpd(S, rank=2, y=y, n_restarts=1, random_state=0, device="cpu")
    with pytest.raises(ValueError, match="X has 3 columns, expected 26"):
        model.predict(S[:, :3])
    with pytest.raises(ValueError, match="code out of range in column 1"):
        model.log_prob(sp.csr_matrix(([9], ([0], [1])), shape=(1, 26)), codes=True)
    with pytest.raises(TypeError, match="integer codes"):
        model.log_prob(sp.csr_matrix(([0.5], ([0], [1])), shape=(1, 26)), codes=True)


def test_cpd_estimator_fits_sparse(dtype):
    X, y = _counts(7)
    got = tp.CPD(rank=3, random_state=0, device="cpu").fit(sp.csr_matrix(X), y)
    ref = tp.CPD(rank=3, random_state=0, device="cpu").fit(X, y)
    _same_model(ref.model_, got.model_, dtype)
    np.testing.assert_array_equal(got.predict(X), ref.predict(X))
    # a fitted estimator scores sparse rows as their dense copies
    S = sp.csr_matrix(X)
    t = tols(dtype, rtol=1e-9, atol=1e-10)
    np.testing.assert_array_equal(got.predict(S), ref.predict(X))
    np.testing.assert_allclose(got.predict_proba(S), ref.predict_proba(X), **t)
    np.testing.assert_allclose(got.score_samples(S, y), ref.score_samples(X, y), **t)
    np.testing.assert_allclose(got.score_samples(S), ref.score_samples(X), **t)
    y_unseen = y.copy()
    y_unseen[:5] = 99  # an unseen label is missing, as for dense rows
    np.testing.assert_allclose(got.score_samples(S, y_unseen), ref.score_samples(X, y_unseen), **t)
    assert np.isclose(got.score(S, y), ref.score(X, y), **t)


@pytest.mark.filterwarnings("ignore::scipy.sparse.SparseEfficiencyWarning")  # the test's own DIA copy
@pytest.mark.parametrize("fmt", ["dok", "lil", "dia", "bsr"])
def test_every_sparse_format_fits_and_scores(fmt, dtype):
    """Formats without min / max of their own (DOK, LIL, DIA) and BSR: the CSR fit, and its predictions."""
    X, y = _counts(12)
    for data in (X, X * 0.5):  # codes, and floats binned
        kw = dict(rank=2, y=y, random_state=0, n_restarts=1, device="cpu")
        ref = tp.fit_cpd(sp.csr_matrix(data), **kw)
        S = sp.csr_matrix(data).asformat(fmt)
        got = tp.fit_cpd(S, **kw)
        _same_model(ref, got, dtype)
        np.testing.assert_array_equal(got.predict(S), ref.predict(data))


def test_sparse_rows_score_as_their_dense_copies(dtype):
    """log_prob, posterior and predictions of sparse rows (raw values or codes) equal those of the dense rows."""
    X, y = _counts(11, values=5)
    rng = np.random.default_rng(8)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    Xf[rng.integers(0, X.shape[0], 20), rng.integers(0, X.shape[1], 20)] = np.nan
    t = tols(dtype, rtol=1e-9, atol=1e-10)
    feats = list(range(X.shape[1]))
    for data in (X, Xf):
        model = tp.fit_cpd(data, rank=4, y=y, random_state=0, n_restarts=1, device="cpu")
        for fmt in (sp.csr_matrix, sp.csc_array):
            S = fmt(data)
            torch.testing.assert_close(model.log_prob(S, feats), model.log_prob(data, feats), **t)
            torch.testing.assert_close(model.posterior(S, feats), model.posterior(data, feats), **t)
            torch.testing.assert_close(model.predict_proba(S), model.predict_proba(data), **t)
            np.testing.assert_array_equal(model.predict(S), model.predict(data))
        codes = model.encoder_.transform(data) if data is Xf else data
        full = np.column_stack([codes, model._label_codes(y)])
        S = sp.csr_matrix(np.where(full == -1, -1, full))
        torch.testing.assert_close(model.log_prob(S, codes=True), model.log_prob(full, codes=True), **t)
        sub = [0, 3, 7, X.shape[1]]  # a subset, one column per variable
        torch.testing.assert_close(model.log_prob(sp.csr_matrix(full[:, sub]), sub, codes=True),
                                   model.log_prob(full[:, sub], sub, codes=True), **t)


def test_sparse_rows_of_probability_zero(dtype):
    """Values of probability 0, implicit or stored: -inf where the dense rows have it, and the same posterior."""
    f = [torch.tensor([[0.0, 0.5], [0.6, 0.5], [0.4, 0.0]], dtype=dtype),  # code 0 (implicit) impossible in f = 0
         torch.tensor([[0.7, 0.0], [0.3, 1.0]], dtype=dtype),
         torch.tensor([[0.5, 0.2], [0.5, 0.8]], dtype=dtype)]
    model = tp.CPDModel(torch.tensor([0.3, 0.7], dtype=dtype), f)
    rows = np.array([[0, 0, 0], [1, 0, 0], [2, 1, 1], [0, 1, -1], [2, 0, 1], [1, 1, 0], [-1, 0, 0], [0, 0, -1]])
    dense_lp = model.log_prob(rows, codes=True)
    assert bool(torch.isneginf(dense_lp).any())
    S = sp.csr_matrix(rows)
    t = tols(dtype, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(model.log_prob(S, codes=True), dense_lp, **t)
    torch.testing.assert_close(model.posterior(S, codes=True), model.posterior(rows, codes=True), **t)
    torch.testing.assert_close(model.predict_proba(S, target=2, codes=True),
                               model.predict_proba(rows, target=2, codes=True), **t)


def test_sparse_row_chunks_fit_equals_dense_fit(dtype):
    """Sparse row chunks: one encoding of all of them, the codes stacked sparse: the dense fit of all the rows."""
    X, y = _counts(8)
    rng = np.random.default_rng(4)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    Xf[rng.integers(0, X.shape[0], 15), rng.integers(0, X.shape[1], 15)] = np.nan
    w = rng.uniform(0.5, 2.0, X.shape[0])
    cuts = [0, 110, 111, 240, X.shape[0]]  # a chunk of one row
    for data in (X, Xf):  # codes as they are; floats binned (equal widths) and NaN missing
        S = sp.csr_matrix(data)
        chunks = tp.datasets.RowChunks([(S[a:b], y[a:b], w[a:b]) for a, b in itertools.pairwise(cuts)])
        kw = dict(rank=3, random_state=2, n_restarts=2, device="cpu")
        got = tp.fit_cpd(chunks, **kw)
        ref = tp.fit_cpd(data, y=y, sample_weight=w, **kw)
        _same_model(ref, got, dtype)
        assert chunks.n_rows_ == X.shape[0] and chunks.n_distinct_ <= X.shape[0] and not chunks.spilled_
        if data is Xf:
            assert got.encoder_.cardinalities_.tolist() == ref.encoder_.cardinalities_.tolist()
    # no labels, several weight sets (fit_cpds), a callable source
    W2 = np.stack([w, rng.uniform(0.5, 2.0, X.shape[0])], 1)
    S = sp.csr_matrix(X)
    got = tp.fit_cpds(lambda: ((S[a:b], None, W2[a:b]) for a, b in itertools.pairwise(cuts)), ranks=[2, 3],
                      random_state=0, n_restarts=1, device="cpu")
    ref = tp.fit_cpds(X, ranks=[2, 3], sample_weight=W2, random_state=0, n_restarts=1, device="cpu")
    assert len(got) == len(ref) == 4
    for a, b in zip(ref, got):
        _same_model(a, b, dtype)


def test_sparse_row_chunks_errors_name_the_problem():
    X, y = _counts(9)
    S = sp.csr_matrix(X)
    with pytest.raises(TypeError, match="chunk 1 is dense while another chunk is sparse"):
        tp.fit_cpd(tp.datasets.RowChunks([(S[:50], y[:50]), (X[50:], y[50:])]), rank=2, device="cpu")
    with pytest.raises(TypeError, match="chunk 1 is sparse while another chunk is dense"):
        tp.fit_cpd(tp.datasets.RowChunks([(X[:50], y[:50]), (S[50:], y[50:])]), rank=2, device="cpu")
    with pytest.raises(ValueError, match="some chunks carry labels and others do not"):
        tp.fit_cpd(tp.datasets.RowChunks([(S[:50], y[:50]), (S[50:], None)]), rank=2, device="cpu")
    with pytest.raises(ValueError, match="chunk 1 has 24 columns, chunk 0 has 25"):
        tp.fit_cpd(tp.datasets.RowChunks([S[:50], S[50:, 1:]]), rank=2, device="cpu")
    with pytest.raises(NotImplementedError, match="equal-frequency and MDL"):
        tp.fit_cpd(tp.datasets.RowChunks([S[:50] * 0.5, S[50:] * 0.5]), rank=2, discretizer="quantile", device="cpu")
    with pytest.raises(ValueError, match=r"lie in 0 \.\. cardinality - 1"):
        tp.fit_cpd(tp.datasets.RowChunks([S[:50], S[50:]]), rank=2, cardinalities=[2] * X.shape[1], device="cpu")


def _dist_cpd_job(rank, world, cuts, chunked):
    """This rank's sparse rows (one matrix, or two row chunks), fitted with distributed=True (a spawned Gloo process)."""
    X, y = _counts(10)
    rng = np.random.default_rng(6)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    w = rng.uniform(0.5, 2.0, X.shape[0])
    a, b = cuts[rank], cuts[rank + 1]
    out = {}
    for name, data, init in (("codes", X, "kmeans++"), ("floats", Xf, "random")):
        S = sp.csr_matrix(data[a:b])
        kw = dict(rank=3, random_state=3, n_restarts=2, init=init, device="cpu", distributed=True)
        if chunked:
            m = (b - a) // 2
            chunks = tp.datasets.RowChunks([(S[:m], y[a:a + m], w[a:a + m]), (S[m:], y[a + m:b], w[a + m:b])])
            model = tp.fit_cpd(chunks, **kw)
        else:
            model = tp.fit_cpd(S, y=y[a:b], sample_weight=w[a:b], **kw)
        out[name] = (model.n_iter_, model.loglik_history_.tolist(), model.weights.tolist(),
                     [f.tolist() for f in model.factors])
    try:  # equal-frequency bins need the rows' samples, not summarized across ranks
        tp.fit_cpd(sp.csr_matrix(Xf[a:b]), rank=2, discretizer="quantile", device="cpu", distributed=True)
    except NotImplementedError as exc:
        out["quantile"] = str(exc)
    return out


@pytest.mark.slow  # spawns Gloo processes
@pytest.mark.parametrize("chunked", [False, True])
def test_sparse_distributed_fit_equals_one_process(chunked, dtype):
    """Each rank's sparse rows, one encoding and classes from all ranks, k-means++ seeds from all ranks' rows."""
    from _dist_helpers import run_ranks

    if dtype != torch.float64:
        pytest.skip("the spawned ranks fit in float64 (the sparse EM's float32 lane runs in one process above)")

    X, y = _counts(10)
    rng = np.random.default_rng(6)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    w = rng.uniform(0.5, 2.0, X.shape[0])
    ref = {name: tp.fit_cpd(data, rank=3, y=y, sample_weight=w, random_state=3, n_restarts=2, init=init,
                            device="cpu", dtype="float64")
           for name, data, init in (("codes", X, "kmeans++"), ("floats", Xf, "random"))}
    for cuts in ((0, 130, 300), (0, 0, 300)):  # uneven; a rank without rows
        for status, got in run_ranks(_dist_cpd_job, 2, (cuts, chunked)):
            assert status == "ok", got
            assert "distributed=True with sparse X: discretizer='uniform'" in got.pop("quantile", "")
            for name, model in ref.items():
                n_iter, hist, weights, factors = got[name]
                assert n_iter == model.n_iter_, name
                np.testing.assert_allclose(hist, model.loglik_history_, rtol=1e-9, err_msg=name)
                np.testing.assert_allclose(weights, model.weights.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)
                for f, g in zip(factors, model.factors):
                    np.testing.assert_allclose(f, g.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)
