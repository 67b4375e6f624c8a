"""Selection from scipy.sparse input: the same picks and scores as the dense copy, counted from the stored entries."""
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from _helpers import skip_unless_counts_on, tols

import tensorprob as tp
from tensorprob.counting._sparse import SparseRows

COUNT_BASED = ["MIM", "MIFS", "MRMR", "CIFE", "JMI", "CMIM", "JMIM", "DISR", "ICAP", "MRI", "RMRMR", "SPECCMI"]


def _sparse_data(seed, M=240, N=30, values=4, C=3, density=0.15):
    """Term-count-like data: mostly 0, a few small counts, one dense column, one never stored, and labels."""
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((M, N)) < density, rng.integers(1, values, (M, N)), 0)
    X[:, 2] = 0  # never stored
    X[:, 4] = np.where(rng.random(M) < 0.85, 1, rng.integers(0, values, M))  # nonzero in most rows
    y = rng.integers(0, C, M)
    X[:, 7] = np.where(rng.random(M) < 0.6, y + 1, 0)  # informative
    return X, y


def _same(a, b, dtype, rtol=1e-12, atol=1e-12):
    np.testing.assert_array_equal(a.selected_, b.selected_)
    np.testing.assert_allclose(a.scores_, b.scores_, **tols(dtype, rtol=rtol, atol=atol))


@pytest.mark.parametrize("name", COUNT_BASED)
def test_sparse_equals_dense(name, dtype):
    X, y = _sparse_data(COUNT_BASED.index(name))
    dense = getattr(tp, name)(k=6).fit(X, y)
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_array):
        got = getattr(tp, name)(k=6).fit(fmt(X), y)
        _same(got, dense, dtype)


@pytest.mark.parametrize("name", ["MIM", "MRMR", "JMI", "CMIM", "DISR"])
def test_sparse_counts_from_the_stored_entries(name):
    """The default plan never reads dense blocks of rows: the class table and the pair quantities come from the entries."""
    X, y = _sparse_data(3)
    plan = getattr(tp, name)(k=5).fit(sp.csr_matrix(X), y).counting_plan_
    assert dict(plan["class"]) == {"sparse-class": 1}
    for kind in set(plan) - {"class", "relevance"}:
        assert set(plan[kind]) == {"baseline"}, (kind, plan[kind])
    assert "dense codes" in str(plan)  # the strategies that read dense codes say why they were left out
    w = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0])  # weighted: float sums from the entries too
    plan = getattr(tp, name)(k=5).fit(sp.csr_matrix(X), y, sample_weight=w).counting_plan_
    assert {n for kind in plan for n in plan[kind]} <= {"sparse-class", "baseline", "class-table"}, plan


@pytest.mark.parametrize("name", ["MRMR", "JMI", "CMIM"])
def test_sparse_reference_gives_the_same(name, dtype):
    X, y = _sparse_data(5)
    S = sp.csr_matrix(X)
    fast = getattr(tp, name)(k=6).fit(S, y)
    with tp.config_context(counting="reference"):
        ref = getattr(tp, name)(k=6).fit(S, y)
    assert {name for kind in ref.counting_plan_ for name in ref.counting_plan_[kind]} == {"bincount"}
    _same(fast, ref, dtype)


@pytest.mark.parametrize("lazy", [True, False])
@pytest.mark.parametrize("variant", ["brown", "fleuret"])
def test_sparse_cmim_lazy_and_eager(lazy, variant, dtype):
    X, y = _sparse_data(11, N=60)
    dense = tp.CMIM(k=8, lazy=lazy, variant=variant).fit(X, y)
    got = tp.CMIM(k=8, lazy=lazy, variant=variant).fit(sp.csr_matrix(X), y)
    _same(got, dense, dtype)
    if lazy:
        assert "pairs" in got.counting_plan_


@pytest.mark.parametrize("name", ["MIM", "MRMR", "JMI", "CMIM"])
def test_sparse_weights_missing_and_resamples(name, dtype):
    X, y = _sparse_data(21)
    rng = np.random.default_rng(0)
    Xf = X.astype(np.float64)
    Xf[rng.integers(0, X.shape[0], 25), rng.integers(0, X.shape[1], 25)] = np.nan  # stored NaN: missing
    S = sp.csr_matrix(Xf)
    assert np.isnan(S.data).sum() > 0
    sel = getattr(tp, name)
    _same(sel(k=5).fit(S, y), sel(k=5).fit(Xf, y), dtype)
    w = rng.integers(0, 3, X.shape[0]).astype(float)
    _same(sel(k=5).fit(sp.csr_matrix(X), y, sample_weight=w), sel(k=5).fit(X, y, sample_weight=w), dtype)
    wf = rng.uniform(0.2, 2.0, X.shape[0])
    _same(sel(k=5).fit(sp.csr_matrix(X), y, sample_weight=wf), sel(k=5).fit(X, y, sample_weight=wf), dtype)
    W = rng.poisson(1.0, (X.shape[0], 3)).astype(float)
    got, ref = sel(k=5).fit(sp.csr_matrix(X), y, resamples=W), sel(k=5).fit(X, y, resamples=W)
    assert got.selected_.shape == (3, 5)
    _same(got, ref, dtype)


def test_sparse_floats_are_binned_as_dense(dtype):
    """Continuous nonzero values (tf-idf-like) are discretized by the dense rules, the zeros kept implicit."""
    X, y = _sparse_data(8, values=6)
    rng = np.random.default_rng(1)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    a = tp.JMI(k=5).fit(Xf, y)
    b = tp.JMI(k=5).fit(sp.csr_matrix(Xf), y)
    _same(b, a, dtype)
    assert b.encoder_.cardinalities_.tolist() == a.encoder_.cardinalities_.tolist()


def test_sparse_pandas_columns_and_transform():
    pd = pytest.importorskip("pandas")
    X, y = _sparse_data(2)
    frame = pd.DataFrame({f"t{i}": pd.arrays.SparseArray(X[:, i], fill_value=0) for i in range(X.shape[1])})
    got = tp.JMI(k=4).fit(frame, y)
    ref = tp.JMI(k=4).fit(X, y)
    np.testing.assert_array_equal(got.selected_, ref.selected_)
    S = sp.csr_matrix(X)
    fitted = tp.JMI(k=4).fit(S, y)
    kept = fitted.transform(S)
    assert sp.issparse(kept) and kept.shape == (X.shape[0], 4)
    np.testing.assert_array_equal(kept.toarray(), X[:, np.sort(fitted.selected_)])


def test_sparse_planted_corpus_terms_are_recovered():
    d = tp.datasets.make_sparse_corpus(4000, 4000, nnz_per_row=30, n_informative=4, effect=8.0, random_state=0)
    planted = set(d.metadata["informative"].tolist())
    for name in ("MIM", "JMI", "CMIM"):
        sel = getattr(tp, name)(k=10).fit(d.X, d.y)
        assert planted <= set(sel.selected_.tolist()), name


def test_sparse_never_densified():
    """A fit on a wide sparse matrix allocates far less than its dense copy (rows x columns)."""
    import tracemalloc

    d = tp.datasets.make_sparse_corpus(20_000, 20_000, nnz_per_row=20, random_state=1)
    tracemalloc.start()
    try:
        tp.JMI(k=5).fit(d.X, d.y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000 * 20_000 // 8, peak  # an eighth of one byte per cell


@pytest.mark.parametrize("name", ["PDA", "VMI", "GSMCPD", "HOFS", "GMI"])
def test_other_selectors_refuse_sparse_by_name(name):
    X, y = _sparse_data(0, N=8)
    with pytest.raises(TypeError, match=r"(?i)sparse"):
        getattr(tp, name)(k=2).fit(sp.csr_matrix(X), y)


def test_sparse_rows_blocks_are_the_dense_rows():
    X, y = _sparse_data(4, M=50)
    w = np.arange(50, dtype=float)
    rows = SparseRows(sp.coo_matrix(X), y, w, block_rows=16)
    assert rows.nnz == int((X != 0).sum()) and rows.complete and rows.weighted
    got = [(c.numpy(), yy.numpy(), ww.numpy()) for c, yy, ww in rows.blocks(torch.device("cpu"))]
    np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), X)
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), y)
    np.testing.assert_array_equal(np.concatenate([g[2] for g in got]), w)
    np.testing.assert_array_equal(rows.column(4), X[:, 4])


def test_dense_baseline_lazy_pairs_with_wider_earlier_picks(dtype, device):
    """CMIM's lazy rounds by the baseline strategy when an earlier pick has a larger alphabet than this round's."""
    skip_unless_counts_on("baseline", device)  # dense codes: on the lane's device
    rng = np.random.default_rng(3)
    M = 400
    y = rng.integers(0, 2, M)
    X = rng.integers(0, 2, (M, 40))
    X[:, 0] = np.where(rng.random(M) < 0.7, y * 3 + rng.integers(0, 3, M), 0)  # the first pick: 6 values
    X[:, 1:6] = np.where(rng.random((M, 5)) < 0.6, y[:, None], X[:, 1:6])  # binary, informative
    with tp.config_context(counting="baseline"):
        got = tp.CMIM(k=6, lazy=True).fit(tp.Encoded(X, X.max(0) + 1), y)
    with tp.config_context(counting="reference"):
        ref = tp.CMIM(k=6, lazy=True).fit(tp.Encoded(X, X.max(0) + 1), y)
    assert got.selected_[0] == 0 and "baseline" in got.counting_plan_["pairs"]
    _same(got, ref, dtype)


_SPARSE_KINDS = {"class": ["sparse-class", "bincount"], "relevance": ["baseline", "class-table", "bincount"],
                 "pair": ["baseline", "bincount"], "pair_free": ["baseline", "bincount"],
                 "pairs": ["baseline", "bincount"]}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", list(_SPARSE_KINDS))
def test_sparse_strategies_equal_the_dense_reference(kind, weighted, dtype):
    """Every strategy that reads sparse codes, forced by name, counts what the dense reference counts; the others say why not."""
    from tensorprob.counting import SelectionData, strategies

    X, y = _sparse_data(9, N=12)
    cards = X.max(0) + 1
    w = np.random.default_rng(2).uniform(0.5, 2.0, X.shape[0]) if weighted else None
    wt = None if w is None else torch.as_tensor(w)

    def ask(d):
        if kind == "class":
            return [d.class_table]
        if kind == "relevance":
            return [d.relevance]
        if kind == "pairs":
            q = d.pairs_information(np.array([1, 4, 8, 2]), np.array([0, 0, 3, 7]), ("cmi_x_b_given_a", "mi_xa_b"))
            return [q.cmi_x_b_given_a, q.mi_xa_b]
        needed = ("mi_x_a", "h_xa") if kind == "pair_free" else ("mi_xa_b", "cmi_x_b_given_a", "h_xab")
        return [getattr(d.pair_information(j, needed), q) for j in (0, 4, 7) for q in needed]

    with tp.config_context(counting="reference"):
        ref = ask(SelectionData(torch.as_tensor(X), cards, torch.as_tensor(y), 3, dtype=dtype, weights=wt))

    def sparse_data():
        rows = SparseRows(sp.csr_matrix(X), y, w, block_rows=37)
        return SelectionData(torch.empty((0, X.shape[1]), dtype=torch.int64), cards, torch.empty(0, dtype=torch.int64),
                             3, dtype=dtype, stream=rows)

    t = tols(dtype, rtol=1e-12, atol=1e-12)
    for name in strategies(kind):
        d = sparse_data()
        with tp.config_context(counting=name):
            asked = not (kind == "relevance" and weighted)  # weighted relevance comes from the class table
            if asked and name not in _SPARSE_KINDS[kind]:
                with pytest.raises(ValueError, match=f"counting='{name}' was asked for"):
                    ask(d)
                continue
            got = ask(d)
        assert not asked or name in d.counting_plan[kind], (name, d.counting_plan)
        for a, b in zip(got, ref):
            torch.testing.assert_close(a.to(torch.float64), b.to(torch.float64), **t)


@pytest.mark.slow
def test_papers_sets_through_the_sparse_path(skfeature_dir, dtype):
    """The papers' sets, as stored (images, expression values, counts), give the same picks sparse as dense."""
    import scipy.io

    for path in sorted(skfeature_dir.glob("*.mat")):
        mat = scipy.io.loadmat(path)
        X, y = np.asarray(mat["X"]), np.asarray(mat["Y"]).ravel()
        X = X[:, :2000]  # the first columns: the same encoding rules, a bounded time
        dense = tp.JMI(k=8).fit(X, y)
        got = tp.JMI(k=8).fit(sp.csr_matrix(X), y)
        _same(got, dense, dtype)


TEXT_SETS = ("BASEHOCK", "PCMAC", "RELATHE")


@pytest.mark.slow
def test_text_sets_through_the_sparse_path(skfeature_dir, dtype):
    """The scikit-feature text sets (term counts, whole vocabulary): the same picks and scores sparse as dense,
    from the counts and from the terms' presence; a CPD fit of the presence codes equals the dense fit."""
    import scipy.io

    paths = [skfeature_dir / f"{name}.mat" for name in TEXT_SETS if (skfeature_dir / f"{name}.mat").exists()]
    if not paths:
        pytest.skip(f"none of the text sets {TEXT_SETS} is in {skfeature_dir} (see ../shared/data/README.md)")
    for path in paths:
        mat = scipy.io.loadmat(path)
        X, y = np.asarray(mat["X"]), np.asarray(mat["Y"]).ravel()
        for data in (X, (X > 0).astype(np.int8)):
            S = sp.csr_matrix(data)
            for name in ("MIM", "MRMR", "JMI", "CMIM"):
                _same(getattr(tp, name)(k=20).fit(S, y), getattr(tp, name)(k=20).fit(data, y), dtype)
        presence = (X > 0).astype(np.int8)
        kw = dict(rank=3, y=y, n_restarts=1, n_iter_max=5, tol=0, random_state=0, device="cpu")
        a, b = tp.fit_cpd(presence, **kw), tp.fit_cpd(sp.csr_matrix(presence), **kw)
        np.testing.assert_allclose(b.loglik_history_, a.loglik_history_, **tols(dtype, rtol=1e-9))
        np.testing.assert_array_equal(b.predict(sp.csr_matrix(presence[:200])), a.predict(presence[:200]))


def _dist_sparse_job(rank, world, cuts, chunked=False):
    """This rank's rows of the sparse data (one matrix or two row chunks), selected with distributed=True
    (run in a spawned Gloo process)."""
    X, y = _sparse_data(31, M=300)
    rng = np.random.default_rng(5)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    w = rng.uniform(0.2, 2.0, X.shape[0])
    rows = slice(cuts[rank], cuts[rank + 1])
    out = {}
    with tp.config_context(device="cpu", dtype="float64"):
        for name, make, data, kw in (("jmi", lambda: tp.JMI(k=5, distributed=True), X, {}),
                                     ("cmim_lazy", lambda: tp.CMIM(k=5, lazy=True, distributed=True), X, {}),
                                     ("mim_floats", lambda: tp.MIM(k=5, distributed=True), Xf, {}),
                                     ("mrmr_weighted", lambda: tp.MRMR(k=4, distributed=True), X, {"sample_weight": w})):
            S, yr, wr = sp.csr_matrix(data[rows]), y[rows], kw.get("sample_weight", np.ones(300))[rows]
            if chunked:  # two chunks per rank (a rank without rows gives two empty ones)
                m = S.shape[0] // 2
                parts = [(S[:m], yr[:m], wr[:m]), (S[m:], yr[m:], wr[m:])]
                sel = make().fit(tp.datasets.RowChunks([p if kw else p[:2] for p in parts]))
            else:
                sel = make().fit(S, yr, **{k: v[rows] for k, v in kw.items()})
            out[name] = (sel.selected_.tolist(), sel.scores_.tolist(), str(sel.counting_plan_))
    return out


@pytest.mark.slow  # spawns Gloo processes
@pytest.mark.parametrize("chunked", [False, True])
def test_sparse_distributed_equals_one_process(chunked, dtype):
    """Each rank's sparse rows (or row chunks), one encoding from all ranks' summaries: the single-process selection."""
    from _dist_helpers import run_ranks

    if dtype != torch.float64:
        pytest.skip("the spawned ranks select in float64 (the sparse counts' float32 lane runs in one process above)")

    X, y = _sparse_data(31, M=300)
    rng = np.random.default_rng(5)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    w = rng.uniform(0.2, 2.0, X.shape[0])
    with tp.config_context(device="cpu", dtype="float64"):
        ref = {"jmi": tp.JMI(k=5).fit(X, y), "cmim_lazy": tp.CMIM(k=5, lazy=True).fit(X, y),
               "mim_floats": tp.MIM(k=5).fit(Xf, y), "mrmr_weighted": tp.MRMR(k=4).fit(X, y, sample_weight=w)}
    for cuts in ((0, 130, 300), (0, 0, 300)):  # uneven; a rank without rows
        for status, got in run_ranks(_dist_sparse_job, 2, (cuts, chunked)):
            assert status == "ok", got
            for name, sel in ref.items():
                assert got[name][0] == sel.selected_.tolist(), name
                np.testing.assert_allclose(got[name][1], sel.scores_, rtol=1e-12, atol=1e-14, err_msg=name)
                # the pair tables from the stored entries, their cells summed over the ranks
                assert name == "mim_floats" or "baseline" in got[name][2], (name, got[name][2])


def test_sparse_row_chunks(dtype):
    """Sparse row chunks: one encoding of all of them, the selection of the stacked matrix; the CPD refuses them by name."""
    X, y = _sparse_data(12, M=90)
    rng = np.random.default_rng(3)
    Xf = np.where(X > 0, X * rng.uniform(0.5, 1.5, X.shape), 0.0)
    w = rng.uniform(0.2, 2.0, X.shape[0])
    for data in (X, Xf):
        S = sp.csr_matrix(data)
        chunks = tp.datasets.RowChunks([(S[:30], y[:30], w[:30]), (S[30:55], y[30:55], w[30:55]),
                                        (S[55:], y[55:], w[55:])])
        for sel in (tp.JMI(k=4), tp.CMIM(k=4, lazy=True)):
            got = sel.fit(chunks)
            ref = type(sel)(**sel.get_params()).fit(data, y, sample_weight=w)
            np.testing.assert_array_equal(got.selected_, ref.selected_)
            np.testing.assert_allclose(got.scores_, ref.scores_, **tols(dtype, rtol=1e-9, atol=1e-12))
            assert got.encoder_.cardinalities_.tolist() == ref.encoder_.cardinalities_.tolist()
        assert chunks.n_rows_ == X.shape[0]
    mixed = tp.datasets.RowChunks([(sp.csr_matrix(X[:30]), y[:30]), (X[30:], y[30:])])
    with pytest.raises(TypeError, match="chunk 1 is dense while another chunk is sparse"):
        tp.JMI(k=2).fit(mixed)
    with pytest.raises(TypeError, match="chunk 1 is sparse while another chunk is dense"):
        tp.JMI(k=2).fit(tp.datasets.RowChunks([(X[:30], y[:30]), (sp.csr_matrix(X[30:]), y[30:])]))
    with pytest.raises(NotImplementedError, match="equal-frequency and MDL"):
        tp.JMI(k=2, discretizer="quantile").fit(tp.datasets.RowChunks([(sp.csr_matrix(Xf), y)]))
    with pytest.raises(ValueError, match="some chunks carry sample_weight and others do not"):
        tp.JMI(k=2).fit(tp.datasets.RowChunks([(S[:30], y[:30], w[:30]), (S[30:], y[30:])]))
    with pytest.raises(ValueError, match="JMI requires labels"):
        tp.JMI(k=2).fit(tp.datasets.RowChunks([S[:30], S[30:]]))


def test_sparse_chunks_value_facts_only_when_asked(monkeypatch):
    """Pass 1 over sparse chunks scans the values (min / max) for the CPD; the selectors, which encode the chunks
    anyway, skip that scan."""
    from tensorprob._io import _passes

    X, y = _sparse_data(12, M=90)
    S = sp.csr_matrix(X)
    chunks = tp.datasets.RowChunks([(S[:30], y[:30]), (S[30:], y[30:])])
    read = _passes.read_sparse_chunks(chunks, "test", labels_required=True)
    assert read.values.n_rows == X.shape[0] and read.values.ints
    np.testing.assert_array_equal(read.values.top, X.max(0))
    bare = _passes.read_sparse_chunks(chunks, "test", labels_required=True, values=False)
    assert bare.values.n_rows == 0 and (bare.n_rows, bare.n_cols) == (read.n_rows, read.n_cols)
    np.testing.assert_array_equal(bare.labels, read.labels)
    scans = []
    real_add = _passes.SparseValues.add
    monkeypatch.setattr(_passes.SparseValues, "add", lambda self, M: scans.append(M.shape) or real_add(self, M))
    tp.JMI(k=3).fit(chunks)
    assert scans == []
