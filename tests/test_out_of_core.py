"""Out-of-core fits: streamed row chunks and Parquet files reproduce the in-memory fit on all the rows."""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch

import tensorprob as tp
from tensorprob.datasets import RowChunks, shard_files

REL = 1e-12


def _codes():
    data = tp.datasets.make_latent_class(3000, [3, 4, 2, 5, 3], 3, random_state=4)
    return np.asarray(data.X), np.asarray(data.z) % 2


def _frame(n=2400, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    df = pd.DataFrame({"a": rng.normal(z, 1.0), "b": rng.choice(["u", "v", "w"], n).astype(object),
                       "c": rng.integers(0, 4, n).astype(float), "d": rng.uniform(-2, 7, n)})
    df.loc[rng.random(n) < 0.05, "a"] = np.nan
    df.loc[rng.random(n) < 0.05, "b"] = None
    return df, np.array(["no", "yes", "maybe"])[z]


def _pieces(n, sizes):
    cuts = np.cumsum([0, *sizes])
    assert cuts[-1] == n
    return [slice(a, b) for a, b in itertools.pairwise(cuts)]


def _same(ref, got, rel=REL):
    assert len(ref) == len(got)
    # at least a few hundred ulps of the fitted dtype: float32 sums over other chunks (or another
    # number of threads) round differently
    rel = max(rel, 256 * float(torch.finfo(ref[0].weights.dtype).eps))
    for a, b in zip(ref, got):
        assert a.n_iter_ == b.n_iter_ and a.rank == b.rank
        np.testing.assert_allclose(b.loglik_history_, a.loglik_history_, rtol=rel, atol=0)
        np.testing.assert_allclose(b.weights.double().numpy(), a.weights.double().numpy(), rtol=rel, atol=rel)
        for fa, fb in zip(a.factors, b.factors):
            np.testing.assert_allclose(fb.double().numpy(), fa.double().numpy(), rtol=rel, atol=rel)
        assert list(a.variable_names) == list(b.variable_names)
        np.testing.assert_array_equal(a.cardinalities, b.cardinalities)


KW = dict(device="cpu", random_state=0, n_iter_max=40, tol=0)


@pytest.mark.parametrize("init", ["kmeans++", "random"])
def test_code_chunks_equal_in_memory(init):
    X, y = _codes()
    ref = tp.fit_cpds(X, ranks=[2, 3], y=y, init=init, n_restarts=2, **KW)
    parts = _pieces(3000, [700, 1, 1299, 1000])
    chunks = RowChunks([(X[s], y[s]) for s in parts])
    got = tp.fit_cpds(chunks, ranks=[2, 3], init=init, n_restarts=2, **KW)
    _same(ref, got)
    assert chunks.n_rows_ == 3000 and chunks.n_distinct_ == len(np.unique(np.column_stack([X, y]), axis=0))
    # torch chunks, no labels, declared cardinalities
    ref = tp.fit_cpd(X, rank=3, cardinalities=[4, 5, 3, 6, 4], **KW)
    got = tp.fit_cpd(RowChunks([torch.as_tensor(X[s]) for s in parts]), rank=3, cardinalities=[4, 5, 3, 6, 4], **KW)
    _same([ref], [got])


def test_float32_lane():
    X, y = _codes()
    ref = tp.fit_cpd(X, rank=3, y=y, dtype="float32", **KW)
    got = tp.fit_cpd(RowChunks([(X[s], y[s]) for s in _pieces(3000, [1500, 1500])]), rank=3, dtype="float32", **KW)
    assert got.dtype == torch.float32
    _same([ref], [got], rel=50 * torch.finfo(torch.float32).eps)


def test_raw_frames_from_a_callable_equal_in_memory():
    """Strings, NaN, integral floats (categories) and continuous columns (equal-width bins), labels."""
    df, lab = _frame()
    ref = tp.fit_cpds(df, ranks=[2, 4], y=lab, **KW)
    parts = _pieces(len(df), [333, 1000, 67, 1000])

    def gen():
        for s in parts:
            yield df.iloc[s], lab[s]

    got = tp.fit_cpds(gen, ranks=[2, 4], **KW)  # a generator function is taken as a RowChunks source
    _same(ref, got)
    enc_ref, enc_got = ref[0].encoder_, got[0].encoder_
    assert enc_ref.kinds_ == enc_got.kinds_
    for e1, e2 in zip(enc_ref.discretizer_.bin_edges_, enc_got.discretizer_.bin_edges_):
        np.testing.assert_array_equal(e1, e2)
    np.testing.assert_array_equal(enc_ref.transform(df), np.concatenate([enc_got.transform(df.iloc[s]) for s in parts]))


def test_many_chunks_keep_the_encoding():
    """Many small chunks (the representative rows are reduced again along the way), wide numbers."""
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.integers(-3, 3, 5000), rng.integers(0, 5000, 5000), rng.normal(size=5000)])
    ref = tp.fit_cpd(X, rank=2, n_bins=4, **KW)
    got = tp.fit_cpd(RowChunks([X[i:i + 50] for i in range(0, 5000, 50)]), rank=2, n_bins=4, **KW)
    _same([ref], [got])
    assert got.encoder_.kinds_ == ["discretized"] * 3  # a float array is one kind of measurement
    df = pd.DataFrame({"s": X[:, 0].astype(int), "w": X[:, 1].astype(int), "f": X[:, 2]})
    ref = tp.fit_cpd(df, rank=2, n_bins=4, **KW)
    got = tp.fit_cpd(RowChunks([df.iloc[i:i + 50] for i in range(0, 5000, 50)]), rank=2, n_bins=4, **KW)
    _same([ref], [got])
    assert got.encoder_.kinds_ == ["categorical", "discretized", "discretized"]


def test_weights_in_chunks():
    X, y = _codes()
    w = np.random.default_rng(1).uniform(0, 3, (3000, 2))
    w[::7, 0] = 0
    ref = tp.fit_cpds(X, ranks=[3], y=y, sample_weight=w, **KW)
    got = tp.fit_cpds(RowChunks([(X[s], y[s], w[s]) for s in _pieces(3000, [1000, 2000])]), ranks=[3], **KW)
    _same(ref, got, rel=1e-10)  # weights are summed per chunk before the rescaling: rounding only


def _write_parquet(df, lab, folder, n_files=4, row_group=250):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    folder.mkdir(parents=True, exist_ok=True)
    full = df.assign(label=lab)
    paths = []
    for i, s in enumerate(np.array_split(np.arange(len(full)), n_files)):
        p = folder / f"part-{i:02d}.parquet"
        pq.write_table(pa.Table.from_pandas(full.iloc[s], preserve_index=False), p, row_group_size=row_group)
        paths.append(p)
    return paths


def test_parquet_file_and_directory(tmp_path):
    df, lab = _frame(seed=2)
    paths = _write_parquet(df, lab, tmp_path / "d")
    ref = tp.fit_cpd(df, rank=3, y=lab, **KW)
    got = tp.fit_cpd(RowChunks.from_parquet(tmp_path / "d", target="label"), rank=3, **KW)
    _same([ref], [got])
    one = tp.fit_cpd(str(paths[0]), rank=2, **KW)  # a path: all its columns are features
    ref1 = tp.fit_cpd(pd.read_parquet(paths[0]), rank=2, **KW)
    _same([ref1], [one])
    with pytest.raises(ValueError, match="target column 'nope'"):
        tp.fit_cpd(RowChunks.from_parquet(paths[0], target="nope"), rank=2, **KW)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no"):
        RowChunks.from_parquet(tmp_path / "empty")


def test_shard_files(tmp_path):
    names = [f"f{i}.pq" for i in (3, 0, 4, 1, 2)]
    assert shard_files(names, rank=0, world_size=2) == ["f0.pq", "f2.pq", "f4.pq"]
    assert shard_files(names, rank=1, world_size=2) == ["f1.pq", "f3.pq"]
    shares = [shard_files(names, rank=r, world_size=3) for r in range(3)]
    assert sorted(f for s in shares for f in s) == sorted(names) and [len(s) for s in shares] == [2, 2, 1]
    assert shard_files(names, rank=5, world_size=7) == []
    assert shard_files(names) == sorted(names)  # no process group: rank 0 of 1
    with pytest.raises(ValueError, match="rank must be"):
        shard_files(names, rank=2, world_size=2)
    with pytest.raises(ValueError, match="world_size"):
        shard_files(names, rank=0, world_size=0)
    df, lab = _frame(200)
    _write_parquet(df, lab, tmp_path / "x" / "y", n_files=3)
    got = shard_files(tmp_path / "x", rank=1, world_size=2)
    assert [p.rsplit("/", 1)[-1] for p in got] == ["part-01.parquet"]


def test_errors():
    X, y = _codes()
    with pytest.raises(TypeError, match="not an iterator"):
        RowChunks(iter([X]))
    with pytest.raises(ValueError, match="y and sample_weight must be None"):
        tp.fit_cpd(RowChunks([X]), rank=2, y=y, **KW)
    with pytest.raises(ValueError, match="chunk 1 differs"):
        tp.fit_cpd(RowChunks([(X, y), X]), rank=2, **KW)
    with pytest.raises(ValueError, match="no rows"):
        tp.fit_cpd(RowChunks([X[:0]]), rank=2, **KW)
    with pytest.raises(ValueError, match=r"more than 50 distinct rows \(at least \d+ found"):
        tp.fit_cpd(RowChunks([X[:1000], X[1000:]], max_distinct_rows=50, storage="table"), rank=2, **KW)
    with pytest.raises(ValueError, match="storage must be one of"):
        RowChunks([X], storage="disk")
    with pytest.raises(ValueError, match="block_rows must be"):
        RowChunks([X], block_rows=0)
    df, lab = _frame(300)
    from sklearn.preprocessing import KBinsDiscretizer

    with pytest.raises(ValueError, match=r"discretizer object cannot be fitted on row chunks.*'a'"):
        tp.fit_cpd(RowChunks([(df, lab)]), rank=2, discretizer=KBinsDiscretizer(encode="ordinal"), **KW)
    # without continuous columns the discretizer does not matter
    ref = tp.fit_cpd(df[["b", "c"]], y=lab, rank=2, discretizer=KBinsDiscretizer(encode="ordinal"), **KW)
    got = tp.fit_cpd(RowChunks([(df[["b", "c"]], lab)]), rank=2, discretizer=KBinsDiscretizer(encode="ordinal"), **KW)
    _same([ref], [got])


@pytest.mark.parametrize("strategy", ["quantile", "mdl"])
def test_equal_frequency_and_mdl_bins_from_chunks(strategy):
    """The cut points come from the finite values of every chunk (a combined sample): those of the rows in memory."""
    df, lab = _frame(1500, seed=4)
    parts = _pieces(len(df), [400, 1, 599, 500])
    ref = tp.fit_cpd(df, y=lab, rank=2, discretizer=strategy, n_bins=4, **KW)
    got = tp.fit_cpd(RowChunks([(df.iloc[s], lab[s]) for s in parts]), rank=2, discretizer=strategy, n_bins=4, **KW)
    _same([ref], [got])
    for e1, e2 in zip(ref.encoder_.discretizer_.bin_edges_, got.encoder_.discretizer_.bin_edges_):
        np.testing.assert_array_equal(e1, e2)


# --- spilled rows: the EM streams them from temporary files at every iteration ---------------------


KWS = dict(KW, n_iter_max=12)  # short of the exact fixed points that tol=0 stops at (the step may differ)


def _distinct_planted(n=1500, seed=3):
    """Planted latent-class rows that are (nearly) all distinct: no table of distinct rows saves anything."""
    data = tp.datasets.make_planted((n, 16, 4, 3), rank=3, concentration=1.0, random_state=seed)
    return np.asarray(data.X).astype(np.int64), np.asarray(data.y)


def _rel(dtype):
    """Agreement of a spilled fit with the in-memory one: the sums differ in order only (rounding)."""
    return 1e-9 if dtype == torch.float64 else 50 * torch.finfo(dtype).eps


def _spill_dirs(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("tensorprob-spill-"))


@pytest.mark.parametrize("how", ["spill", "auto"])
def test_spilled_rows_equal_in_memory(how, dtype, tmp_path):
    X, y = _distinct_planted()
    assert len(np.unique(X, axis=0)) > 0.95 * len(X)
    ref = tp.fit_cpds(X, ranks=[2, 3], y=y, init="random", n_restarts=2, **KWS)
    opts = dict(storage="spill") if how == "spill" else dict(max_distinct_rows=200)  # "auto" switches
    chunks = RowChunks([(X[s], y[s]) for s in _pieces(len(X), [400, 1, 599, 500])], block_rows=160,
                       spill_dir=tmp_path, **opts)
    got = tp.fit_cpds(chunks, ranks=[2, 3], init="random", n_restarts=2, **KWS)
    assert chunks.spilled_ and chunks.n_rows_ == len(X) and chunks.n_distinct_ >= 0.95 * len(X)
    _same(ref, got, rel=_rel(dtype))
    assert _spill_dirs(tmp_path) == []  # the files are gone
    small = RowChunks([(X[s], y[s]) for s in _pieces(len(X), [700, 800])])  # the default: a table
    tp.fit_cpd(small, rank=2, init="random", **KWS)
    assert not small.spilled_


def test_spilled_raw_frames_and_weight_sets_equal_in_memory(dtype, tmp_path):
    """Strings, NaN (marginalized), continuous columns; two weight sets given with the chunks."""
    df, lab = _frame(1200, seed=9)
    w = np.random.default_rng(2).uniform(0, 2, (len(df), 2))
    w[::5, 1] = 0
    ref = tp.fit_cpds(df, ranks=[2, 4], y=lab, sample_weight=w, init="random", **KWS)
    parts = _pieces(len(df), [500, 300, 400])

    def gen():
        for s in parts:
            yield df.iloc[s], lab[s], w[s]

    chunks = RowChunks(gen, storage="spill", block_rows=100, spill_dir=tmp_path)
    got = tp.fit_cpds(chunks, ranks=[2, 4], init="random", **KWS)
    assert chunks.spilled_
    _same(ref, got, rel=max(_rel(dtype), 1e-10))  # weights summed per chunk before the rescaling
    assert len(got) == 4 and _spill_dirs(tmp_path) == []


def test_spilled_kmeanspp_is_the_seeding_by_passes(dtype, monkeypatch):
    """k-means++ on spilled rows: the in-memory seeding with its draws made by passes over the rows."""
    from tensorprob.cpd import _em, _fit

    X, y = _distinct_planted(900)
    # one chunk: the spill holds the distinct rows in the order of the in-memory table
    got = tp.fit_cpds(RowChunks([(X, y)], storage="spill", block_rows=100), ranks=[2, 3], n_restarts=2, **KWS)
    again = tp.fit_cpds(RowChunks([(X, y)], storage="spill", block_rows=250), ranks=[2, 3], n_restarts=2, **KWS)
    _same(got, again, rel=_rel(dtype))  # blocks of another size: rounding only
    plain = tp.fit_cpds(X, ranks=[2, 3], y=y, n_restarts=2, **KWS)  # torch.multinomial draws
    assert not np.allclose(plain[0].loglik_history_[0], got[0].loglik_history_[0], rtol=1e-6)
    monkeypatch.setattr(_fit, "init_kmeanspp", lambda *a, **k: _em.init_kmeanspp(*a, **{**k, "by_passes": True}))
    ref = tp.fit_cpds(X, ranks=[2, 3], y=y, n_restarts=2, **KWS)
    _same(ref, got, rel=_rel(dtype))
    # many chunks: other rows (each chunk's own duplicates merged), a k-means++ start all the same
    many = tp.fit_cpds(RowChunks([(X[s], y[s]) for s in _pieces(900, [300, 600])], storage="spill"),
                       ranks=[3], **KWS)[0]
    rand = tp.fit_cpds(X, ranks=[3], y=y, init="random", **KWS)[0]
    assert many.loglik_history_[0] > rand.loglik_history_[0]  # seeded on the data, not uniform


def test_draws_by_passes_are_inverse_transform_draws():
    """Every draw is the row where u x total falls in the running sum of the probabilities."""
    from tensorprob.counting import unique_rows
    from tensorprob.cpd._em import EMData, _draw_by_passes
    from tensorprob.cpd._stream import Spill

    X, _ = _distinct_planted(700)
    rows, W, _ = unique_rows(torch.as_tensor(X), torch.rand(700, 2, dtype=torch.float64,
                                                              generator=torch.Generator().manual_seed(1)))
    cards = torch.as_tensor(X.max(0) + 1)
    spill = Spill(X.shape[1], np.int64, 2, block_rows=64)
    try:
        spill.append(rows, W)
        r, w = spill.finish()
        data = EMData.build(r, cards, w, torch.float64, 64, spill=spill)
        p = torch.rand(700, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) ** 4
        p[:, 2] = 0  # all zero: that model draws by weight
        ws = torch.tensor([0, 1, 1])
        n_draw, L = [5, 2, 3], 5
        gens = [torch.Generator().manual_seed(10 + b) for b in range(3)]
        live = torch.tensor([True, True, True])
        flat = _draw_by_passes(data, ws, lambda s, e, w: p[s:e], live, n_draw, L, gens)
    finally:
        spill.close()
    offsets = np.concatenate([[0], np.cumsum(X.max(0) + 1)[:-1]])
    q = torch.where(p.sum(0) > 0, p, W[:, ws]).numpy()
    for b in range(3):
        u = torch.rand(n_draw[b], generator=torch.Generator().manual_seed(10 + b), dtype=torch.float64).numpy()
        cum = np.cumsum(q[:, b])
        idx = np.searchsorted(cum, u * cum[-1], side="right")
        want = rows.numpy()[np.concatenate([idx, np.full(L - n_draw[b], idx[0])])] + offsets
        np.testing.assert_array_equal(flat.view(3, L, -1)[b].numpy(), want)


def test_spilled_blocks_bound_the_memory(monkeypatch, tmp_path):
    """Every product of the E-step and of the seeding sees at most block_rows rows; nothing is cached."""
    from tensorprob.counting import _incidence
    from tensorprob.cpd import _em

    X, y = _distinct_planted(2000)
    D = int((X.max(0) + 1).sum()) + 3  # the (variable, value) columns, label included
    seen = []
    for module, name in ((_incidence, "incidence_matmul"), (_incidence, "incidence_matmul_reference")):
        orig = getattr(module, name)

        def spy(S, *args, _orig=orig, **kw):
            seen.append(S.shape[1] if S.shape[0] == D else S.shape[0])  # S (rows, D) or S^T (D, rows)
            return _orig(S, *args, **kw)

        monkeypatch.setattr(module, name, spy)
    built = []
    orig_build = _em.EMData.build.__func__
    monkeypatch.setattr(_em.EMData, "build", classmethod(lambda cls, *a, **k: built.append(orig_build(cls, *a, **k))
                                                         or built[-1]))
    tp.fit_cpds(RowChunks([(X[s], y[s]) for s in _pieces(2000, [1000, 1000])], storage="spill", block_rows=128),
                ranks=[2, 3], n_restarts=2, **dict(KWS, n_iter_max=5))
    assert len(seen) > 6 * 2000 // 128 and max(seen) <= 128
    assert built and all(not d.incidence.cached and d.spill is not None for d in built)


def test_spill_files_removed_on_error(tmp_path):
    X, y = _distinct_planted(600)

    def stop(it, ll):
        raise RuntimeError("stop the fit")

    chunks = RowChunks([(X[:300], y[:300]), (X[300:], y[300:])], storage="spill", spill_dir=tmp_path)
    with pytest.raises(RuntimeError, match="stop the fit"):
        tp.fit_cpd(chunks, rank=2, callback=stop, **KWS)
    assert chunks.spilled_ and _spill_dirs(tmp_path) == []
    reads = []

    def flaky():  # the second pass fails after writing a chunk to the spill
        reads.append(1)
        yield X[:300], y[:300]
        if len(reads) > 1:
            raise OSError("disk gone")
        yield X[300:], y[300:]

    with pytest.raises(OSError, match="disk gone"):
        tp.fit_cpd(RowChunks(flaky, storage="spill", spill_dir=tmp_path), rank=2, **KWS)
    assert _spill_dirs(tmp_path) == []


def _changing(kind, X, y):
    """A source whose second pass differs from its first: fewer, more or other rows, or another number of chunks."""
    calls = []

    def source():
        calls.append(1)
        parts = [(X[:300], y[:300]), (X[300:600], y[300:600])]
        if len(calls) > 1:
            if kind == "fewer rows":
                parts[1] = (X[300:400], y[300:400])
            elif kind == "more rows":
                parts[1] = (X[300:700], y[300:700])
            elif kind == "other values":  # as many rows, other ones
                parts[1] = (X[600:900], y[600:900])
            elif kind == "other labels":
                parts[1] = (X[300:600], y[300:600][::-1])
            elif kind == "one chunk more":
                parts.append((X[600:700], y[600:700]))
            else:  # one chunk fewer
                parts = parts[:1]
        yield from parts

    return source


CHANGES = ["fewer rows", "more rows", "other values", "other labels", "one chunk more", "one chunk fewer"]


@pytest.mark.parametrize("storage", ["table", "spill", "auto"])
@pytest.mark.parametrize("kind", CHANGES)
def test_a_source_that_changes_between_the_passes_is_an_error(kind, storage, tmp_path):
    """Before: fitted on the rows of the second pass and reported the first pass's n_rows_ (issue 42, item 2)."""
    X, y = _distinct_planted(900)
    options = {"max_distinct_rows": 100} if storage == "auto" else {}  # "auto" spills on the way
    chunks = RowChunks(_changing(kind, X, y), storage=storage, spill_dir=tmp_path, block_rows=128, **options)
    with pytest.raises(ValueError, match="changed between the passes"):
        tp.fit_cpd(chunks, rank=2, **KWS)
    assert _spill_dirs(tmp_path) == []  # the files of a spill are removed on the error
    raw = pd.DataFrame(X[:, :4].astype(float)).set_axis(list("abcd"), axis=1)  # raw data: the encoder's path
    with pytest.raises(ValueError, match="changed between the passes"):
        tp.fit_cpd(RowChunks(_changing(kind, raw.to_numpy() + 0.5, y), storage=storage, **options), rank=2, **KWS)


def test_select_rank_refuses_streamed_data():
    X, y = _codes()
    with pytest.raises(TypeError, match="select_rank takes data in memory"):
        tp.select_rank(RowChunks([(X, y)]), y, ranks=[2], device="cpu")


# --- distributed: every rank streams its own Parquet files -------------------------------------


def _job_parquet_shards(rank, world, folder):
    files = shard_files(folder)  # rank and world size from the process group
    chunks = RowChunks.from_parquet(files, target="label")
    models = tp.fit_cpds(chunks, ranks=[2, 3], distributed=True, dtype="float64", **KW)
    return files, chunks.n_rows_, [(m.loglik_history_, m.weights.numpy(), [f.numpy() for f in m.factors])
                                   for m in models]


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_two_gloo_ranks_read_their_parquet_shards(tmp_path, dtype):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    if dtype != torch.float64:
        pytest.skip("one lane is enough: the spawned processes fit in float64")
    from _dist_helpers import run_ranks

    df, lab = _frame(seed=7)
    _write_parquet(df, lab, tmp_path / "d", n_files=5)
    ref = tp.fit_cpds(df, ranks=[2, 3], y=lab, dtype="float64", **KW)
    out = run_ranks(_job_parquet_shards, world=2, args=(str(tmp_path / "d"),))
    assert all(status == "ok" for status, _ in out), out
    files0, files1 = out[0][1][0], out[1][1][0]
    assert len(files0) == 3 and len(files1) == 2 and not set(files0) & set(files1)
    for _, (_, n_rows, got) in out:
        assert n_rows == len(df)
        for m, (hist, weights, factors) in zip(ref, got):
            np.testing.assert_allclose(hist, m.loglik_history_, rtol=1e-9, atol=0)
            np.testing.assert_allclose(weights, m.weights.numpy(), rtol=1e-9, atol=1e-12)
            for fa, fb in zip(m.factors, factors):
                np.testing.assert_allclose(fb, fa.numpy(), rtol=1e-9, atol=1e-12)


def _job_spilled_ranks(rank, world, X, y, cuts):
    mine = [slice(a, b) for a, b in cuts[rank]]
    spilled = RowChunks([(X[s], y[s]) for s in mine], storage="spill", block_rows=90)
    pp = tp.fit_cpds(spilled, ranks=[2, 3], n_restarts=2, distributed=True, dtype="float64", **KWS)
    # rank 0 outgrows its table and spills, rank 1 keeps a table: the EM sums both
    mixed = RowChunks([(X[s], y[s]) for s in mine], max_distinct_rows=100 if rank == 0 else None)
    rnd = tp.fit_cpds(mixed, ranks=[2, 3], init="random", distributed=True, dtype="float64", **KWS)
    pack = [(m.loglik_history_, m.weights.numpy(), [f.numpy() for f in m.factors]) for m in pp + rnd]
    return spilled.spilled_, mixed.spilled_, pack


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_two_gloo_ranks_spill_their_rows(dtype):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    if dtype != torch.float64:
        pytest.skip("one lane is enough: the spawned processes fit in float64")
    from _dist_helpers import run_ranks

    X, y = _distinct_planted(1000)
    cuts = [[(0, 250), (250, 600)], [(600, 1000)]]
    out = run_ranks(_job_spilled_ranks, world=2, args=(X, y, cuts))
    assert all(status == "ok" for status, _ in out), out
    # k-means++ over the spills of both ranks = the single-process spill of the same chunks in rank order
    one = RowChunks([(X[a:b], y[a:b]) for c in cuts for a, b in c], storage="spill", block_rows=90)
    ref = tp.fit_cpds(one, ranks=[2, 3], n_restarts=2, dtype="float64", **KWS)
    ref += tp.fit_cpds(X, ranks=[2, 3], y=y, init="random", dtype="float64", **KWS)  # = in memory
    assert [o[1][:2] for o in out] == [(True, True), (True, False)]
    for _, (_, _, got) in out:
        for m, (hist, weights, factors) in zip(ref, got, strict=True):
            np.testing.assert_allclose(hist, m.loglik_history_, rtol=1e-9, atol=0)
            np.testing.assert_allclose(weights, m.weights.numpy(), rtol=1e-9, atol=1e-12)
            for fa, fb in zip(m.factors, factors):
                np.testing.assert_allclose(fb, fa.numpy(), rtol=1e-9, atol=1e-12)


# --- command line --------------------------------------------------------------------------------


def test_cli_fit_cpd_on_a_parquet_directory(tmp_path, capsys):
    import json

    from tensorprob._cli import main

    df, lab = _frame(seed=3)
    _write_parquet(df, lab, tmp_path / "d", n_files=3)
    argv = ["fit-cpd", str(tmp_path / "d"), "--rank", "3", "--target", "label", "--json", "--device", "cpu",
            "--max-iter", "30", "--no-progress"]
    assert main(argv) == 0
    rep = json.loads(capsys.readouterr().out)
    ref = tp.fit_cpd(df, rank=3, y=lab, device="cpu", n_iter_max=30, random_state=0, n_bins=5)
    assert rep["samples"] == len(df) and rep["variables"] == 5
    assert rep["loglik_per_sample"] == pytest.approx(ref.loglik_history_[-1], rel=1e-12)
    assert main(argv[:4] + ["--no-label"] + argv[4:]) == 0
    assert json.loads(capsys.readouterr().out)["variables"] == 4
    # select reads the folder into memory
    assert main(["select", str(tmp_path / "d"), "--target", "label", "-k", "2", "--json", "--no-progress"]) == 0
    assert len(json.loads(capsys.readouterr().out)["selected"]) == 2


def test_cli_distributed_errors(tmp_path, capsys, monkeypatch):
    from tensorprob._cli import main
    from tensorprob.selection import get_selector

    monkeypatch.delenv("RANK", raising=False)
    df, lab = _frame(200)
    _write_parquet(df, lab, tmp_path / "d", n_files=2)
    assert main(["fit-cpd", str(tmp_path / "d"), "--rank", "2", "--distributed"]) == 2
    assert "torchrun" in capsys.readouterr().err
    assert main(["fit-cpd", "wine", "--rank", "2", "--distributed"]) == 2
    assert "Parquet" in capsys.readouterr().err
    import inspect

    if "distributed" not in inspect.signature(get_selector("jmi").__init__).parameters:
        assert main(["select", str(tmp_path / "d"), "--target", "label", "--distributed"]) == 2
        assert "distributed selection not available" in capsys.readouterr().err
    else:  # the selectors take distributed=: the flag then needs torchrun like fit-cpd
        assert main(["select", str(tmp_path / "d"), "--target", "label", "--distributed"]) == 2
        assert "torchrun" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_under_torch_distributed_run(tmp_path, dtype):
    """Two processes launched by torch.distributed.run: rank 0 alone prints the single-process result."""
    if dtype != torch.float64:
        pytest.skip("one lane is enough")
    import json
    import os
    import subprocess
    import sys

    from _dist_helpers import free_port

    df, lab = _frame(seed=9)
    _write_parquet(df, lab, tmp_path / "d", n_files=4)
    common = [str(tmp_path / "d"), "--rank", "3", "--target", "label", "--json", "--device", "cpu", "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(tp.__file__)),
                                          os.environ.get("PYTHONPATH", "")])}
    one = subprocess.run([sys.executable, "-m", "tensorprob", "fit-cpd", *common], env=env, capture_output=True,
                         text=True, timeout=300)
    assert one.returncode == 0, one.stderr
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          f"--master_port={free_port()}", "-m", "tensorprob", "fit-cpd", *common, "--distributed"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr
    lines = [ln for ln in two.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, two.stdout  # rank 0 only
    rep1, rep2 = json.loads(one.stdout), json.loads(lines[0])
    assert rep2["samples"] == rep1["samples"] == len(df)
    assert rep2["loglik_per_sample"] == pytest.approx(rep1["loglik_per_sample"], rel=1e-9)
