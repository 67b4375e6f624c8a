"""Selection on streamed row chunks: every count-based selector equals its fit on the rows in memory.

The streamed fit codes the chunks with the encoding learned in pass 1, spills the codes to
temporary files and counts over blocks of rows (``SelectionData.count``). Its picks must be
those of the in-memory fit on the concatenated rows, and its scores equal to 1e-12 relative
in float64 (a few float32 ulps in the float32 lanes: counts are exact, weighted sums round
once to the working dtype).
"""
from __future__ import annotations

import gc
import itertools
import os
import tempfile
import weakref

import numpy as np
import pandas as pd
import pytest
import torch

import tensorprob as tp
from tensorprob.counting import _dense, _spill, _tables
from tensorprob.datasets import RowChunks, shard_files

CLASSIC = [tp.MIM, tp.MIFS, tp.MRMR, tp.CIFE, tp.JMI, tp.CMIM, tp.JMIM, tp.DISR, tp.ICAP, tp.MRI, tp.RMRMR]


def _rel(dtype) -> float:
    """Relative tolerance of the scores in the lane's dtype: 1e-12 in float64, a few ulps in float32."""
    return max(1e-12, 16 * torch.finfo(dtype).eps)


def _planted(n=1500, n_features=10, seed=0):
    data = tp.datasets.make_planted((n, n_features, 4, 3), rank=4, random_state=seed)
    return np.asarray(data.X), np.asarray(data.y)


def _frame(n=1200, seed=0):
    """Strings with None, floats with NaN (continuous: equal-width bins), integral floats (categories)."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 3, n)
    df = pd.DataFrame({"a": rng.normal(z, 1.0), "b": rng.choice(["u", "v", "w"], n).astype(object),
                       "c": ((z + rng.integers(0, 2, n)) % 4).astype(float), "d": rng.uniform(-2, 7, n),
                       "e": np.where(rng.random(n) < 0.5, z, rng.integers(0, 3, n)).astype(float)})
    df.loc[rng.random(n) < 0.05, "a"] = np.nan
    df.loc[rng.random(n) < 0.05, "b"] = None
    df.loc[rng.random(n) < 0.1, "e"] = np.nan
    return df, np.array(["no", "yes", "maybe"])[z]


def _pieces(n, sizes):
    cuts = np.cumsum([0, *sizes])
    assert cuts[-1] == n
    return [slice(a, b) for a, b in itertools.pairwise(cuts)]


def _same(ref, got, dtype):
    np.testing.assert_array_equal(got.selected_, ref.selected_)
    np.testing.assert_allclose(got.scores_, ref.scores_, rtol=_rel(dtype), atol=0)


def _blocks_of(monkeypatch, rows: int) -> None:
    """Make streamed fits count blocks of ``rows`` rows (the default sizes them from ``memory_budget``)."""
    monkeypatch.setattr(_spill, "default_block_rows", lambda n_features: rows)


def test_rowchunks_block_rows_and_spill_dir_apply_to_selection(monkeypatch, tmp_path, dtype):
    # the options the CPD fits read from RowChunks size the selection's blocks and place its files
    X, y = _planted()
    ref = tp.JMI(k=4).fit(X, y)
    rows_counted, spilled = [], []
    count = _tables.joint_table

    def spy(codes, *args, **kwargs):
        rows_counted.append(codes.shape[0])
        return count(codes, *args, **kwargs)

    init = _spill.SpilledRows.__init__

    def record(self, *args, **kwargs):
        init(self, *args, **kwargs)
        spilled.append(self.path)

    monkeypatch.setattr(_dense, "joint_table", spy)
    monkeypatch.setattr(_spill.SpilledRows, "__init__", record)
    chunks = RowChunks([(X[s], y[s]) for s in _pieces(len(X), [700, 800])], block_rows=333, spill_dir=tmp_path)
    got = tp.JMI(k=4).fit(chunks)
    _same(ref, got, dtype)
    assert max(rows_counted) == 333
    assert len(spilled) == 1 and os.path.dirname(spilled[0]) == str(tmp_path)
    assert not os.path.exists(spilled[0])


# --- every selector, codes from tp.datasets.make_planted --------------------------------------------


@pytest.mark.parametrize("cls", CLASSIC, ids=lambda c: c.__name__)
def test_every_classic_selector_streamed_equals_in_memory(cls, dtype):
    X, y = _planted()
    ref = cls(k=6).fit(X, y)
    got = cls(k=6).fit(RowChunks([(X[s], y[s]) for s in _pieces(len(X), [400, 1, 599, 500])]))
    _same(ref, got, dtype)
    np.testing.assert_array_equal(got.classes_, ref.classes_)
    assert got.n_features_in_ == ref.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(got.encoder_.transform(X), ref.encoder_.transform(X))


@pytest.mark.parametrize("variant,lazy", [("brown", True), ("fleuret", True), ("fleuret", False)])
def test_cmim_lazy_and_variants_on_blocks(variant, lazy, dtype, monkeypatch):
    """CMIM's lazy rounds over blocks (each a pass) give the eager picks, in both variants."""
    X, y = _planted(seed=3)
    ref = tp.CMIM(k=7, variant=variant, lazy=False).fit(X, y)
    chunks = RowChunks([(X[s], y[s]) for s in _pieces(len(X), [700, 800])])
    _blocks_of(monkeypatch, 256)
    got = tp.CMIM(k=7, variant=variant, lazy=lazy).fit(chunks)
    _same(ref, got, dtype)


def test_all_pair_tables_path_on_blocks(dtype, monkeypatch):
    """Few features and k near N: every pair table counted in one pass (per block)."""
    X, y = _planted(n=900, n_features=6, seed=5)
    _blocks_of(monkeypatch, 200)
    for cls in (tp.CIFE, tp.JMI, tp.RMRMR):
        ref = cls(k=6).fit(X, y)
        got = cls(k=6).fit(RowChunks([(X[s], y[s]) for s in _pieces(900, [300, 600])]))
        _same(ref, got, dtype)


# --- raw data, codes, weights ---------------------------------------------------------------------


@pytest.mark.parametrize("cls", [tp.JMI, tp.CMIM, tp.RMRMR, tp.MRMR], ids=lambda c: c.__name__)
def test_raw_frames_with_missing_values_from_a_callable(cls, dtype):
    df, lab = _frame()
    ref = cls(k=4).fit(df, lab)
    parts = _pieces(len(df), [333, 500, 67, 300])

    def gen():
        for s in parts:
            yield df.iloc[s], lab[s]

    got = cls(k=4).fit(gen)  # a generator function is taken as a RowChunks source
    _same(ref, got, dtype)
    np.testing.assert_array_equal(got.classes_, ref.classes_)
    np.testing.assert_array_equal(got.feature_names_in_, ref.feature_names_in_)
    assert got.encoder_.kinds_ == ref.encoder_.kinds_
    np.testing.assert_array_equal(got.encoder_.transform(df), ref.encoder_.transform(df))


def test_missing_values_option_and_transform(dtype):
    df, lab = _frame(seed=2)
    df["c"] = df["c"].where(df["c"] != 3, -9.0)  # -9 is the user's missing marker
    ref = tp.JMI(k=3, missing_values=-9.0).fit(df, lab)
    got = tp.JMI(k=3, missing_values=-9.0).fit(RowChunks([(df.iloc[s], lab[s]) for s in _pieces(1200, [600, 600])]))
    _same(ref, got, dtype)
    assert pd.DataFrame(got.transform(df)).equals(pd.DataFrame(ref.transform(df)))


def test_integer_codes(dtype):
    X, y = _planted(seed=1)
    X = X.astype(np.int64)
    for cls in (tp.JMI, tp.ICAP):
        ref = cls(k=5).fit(X, y)
        got = cls(k=5).fit(RowChunks([(X[s], y[s]) for s in _pieces(len(X), [750, 750])]))
        _same(ref, got, dtype)


@pytest.mark.parametrize("cls", [tp.JMI, tp.CMIM, tp.MRI], ids=lambda c: c.__name__)
def test_weights_in_chunks(cls, dtype):
    df, lab = _frame(seed=4)
    w = np.random.default_rng(1).uniform(0, 3, len(df))
    w[::7] = 0
    ref = cls(k=4).fit(df, lab, sample_weight=w)
    got = cls(k=4).fit(RowChunks([(df.iloc[s], lab[s], w[s]) for s in _pieces(len(df), [500, 700])]))
    _same(ref, got, dtype)


def test_many_small_chunks_and_blocks_smaller_and_larger_than_a_chunk(dtype, monkeypatch):
    X, y = _planted(n=2000, n_features=8, seed=2)
    ref = tp.JMI(k=5).fit(X, y)
    seen = []
    blocks = _spill.SpilledRows.blocks

    def spy(self, device):
        for b in blocks(self, device):
            seen.append(b[0].shape[0])
            yield b

    monkeypatch.setattr(_spill.SpilledRows, "blocks", spy)
    for chunk, block in ((50, 128), (500, 128), (500, 1024)):
        seen.clear()
        chunks = RowChunks([(X[i:i + chunk], y[i:i + chunk]) for i in range(0, 2000, chunk)])
        _blocks_of(monkeypatch, block)
        got = tp.JMI(k=5).fit(chunks)
        _same(ref, got, dtype)
        assert max(seen) == block and sum(seen[:-(-2000 // block)]) == 2000


def test_parquet_file_and_directory(tmp_path, dtype):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    df, lab = _frame(seed=6)
    full = df.assign(label=lab)
    folder = tmp_path / "d"
    folder.mkdir()
    for i, s in enumerate(np.array_split(np.arange(len(full)), 3)):
        pq.write_table(pa.Table.from_pandas(full.iloc[s], preserve_index=False), folder / f"part-{i}.parquet",
                       row_group_size=150)
    pq.write_table(pa.Table.from_pandas(full, preserve_index=False), tmp_path / "all.parquet", row_group_size=400)
    ref = tp.JMIM(k=4).fit(df, lab)
    for path in (folder, tmp_path / "all.parquet"):
        chunks = RowChunks.from_parquet(path, target="label")
        got = tp.JMIM(k=4).fit(chunks)
        _same(ref, got, dtype)
        assert chunks.n_rows_ == len(df)
        np.testing.assert_array_equal(got.feature_names_in_, ref.feature_names_in_)


# --- memory: chunks read lazily, counts on blocks, temporary files removed ----------------------------


def test_memory_is_bounded_by_a_chunk_and_a_block(tmp_path, monkeypatch, dtype):

    X, y = _planted(n=3000, n_features=8, seed=8)
    ref = tp.RMRMR(k=5).fit(X, y)
    alive = []  # weak references to every chunk handed out
    live_max = [0]

    def source():
        for i in range(0, 3000, 300):
            live_max[0] = max(live_max[0], sum(r() is not None for r in alive))
            Xc = X[i:i + 300].copy()
            alive.append(weakref.ref(Xc))
            yield Xc, y[i:i + 300]
            del Xc

    rows_counted = []
    count = _tables.joint_table

    def spy(codes, *args, **kwargs):
        rows_counted.append(codes.shape[0])
        return count(codes, *args, **kwargs)

    monkeypatch.setattr(_dense, "joint_table", spy)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spilled = []
    init = _spill.SpilledRows.__init__

    def record(self, *args, **kwargs):
        init(self, *args, **kwargs)
        spilled.append(self.path)

    monkeypatch.setattr(_spill.SpilledRows, "__init__", record)
    _blocks_of(monkeypatch, 512)
    got = tp.RMRMR(k=5).fit(source)
    gc.collect()
    _same(ref, got, dtype)
    assert live_max[0] <= 1  # when a chunk is read, at most the previous one is still referenced
    assert rows_counted and max(rows_counted) == 512  # every count sees one block, never the 3000 rows
    assert len(spilled) == 1 and os.path.dirname(spilled[0]) == str(tmp_path)  # under tempfile's directory
    assert not os.path.exists(spilled[0])  # removed at the end of the fit

    def changing():  # a source that yields more rows the second time: the fit fails, the files go too
        changing.calls = getattr(changing, "calls", 0) + 1
        yield X[:1000], y[:1000]
        if changing.calls > 1:
            yield X[1000:1100], y[1000:1100]

    with pytest.raises(ValueError, match="changed between the passes"):
        tp.JMI(k=3).fit(changing)
    assert len(spilled) == 2 and not os.path.exists(spilled[1])
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kind", ["fewer rows", "more rows", "other values", "other labels", "one chunk more",
                                  "one chunk fewer"])
def test_a_source_that_changes_between_the_passes_is_an_error(kind, tmp_path, monkeypatch):
    """The check every multi-pass reader shares (before: only another total number of rows was seen)."""
    from test_out_of_core import _changing

    X, y = _planted(n=900)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ValueError, match="changed between the passes"):
        tp.JMI(k=3).fit(RowChunks(_changing(kind, X, y)))
    df = pd.DataFrame(X.astype(float) + 0.5, columns=[f"f{j}" for j in range(X.shape[1])])
    with pytest.raises(ValueError, match="changed between the passes"):
        tp.CMIM(k=3).fit(RowChunks(_changing(kind, df.to_numpy(), y)))
    assert os.listdir(tmp_path) == []


# --- errors ---------------------------------------------------------------------------------------------


def test_errors(tmp_path):
    X, y = _planted(n=300)
    chunks = RowChunks([(X[:150], y[:150]), (X[150:], y[150:])])
    with pytest.raises(ValueError, match="y and sample_weight must be None"):
        tp.JMI(k=3).fit(chunks, y)
    with pytest.raises(ValueError, match="y and sample_weight must be None"):
        tp.JMI(k=3).fit(chunks, sample_weight=np.ones(300))
    with pytest.raises(ValueError, match=r"resamples .* not available for streamed X"):
        tp.JMI(k=3).fit(chunks, resamples=np.ones((300, 2)))
    with pytest.raises(TypeError, match="does not take streamed X"):
        tp.PDA(k=3).fit(chunks)
    with pytest.raises(TypeError, match="does not take streamed X"):
        tp.GMI(k=3).fit(chunks)
    with pytest.raises(ValueError, match="differs from chunk 0"):
        tp.JMI(k=3).fit(RowChunks([(X[:150], y[:150]), (X[150:, :5], y[150:])]))
    df = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    with pytest.raises(ValueError, match="differs from chunk 0"):
        tp.JMI(k=2).fit(RowChunks([(df[:150], y[:150]), (df[150:].rename(columns={"c": "z"}), y[150:])]))
    with pytest.raises(ValueError, match="holds no rows"):
        tp.JMI(k=3).fit(RowChunks([]))
    with pytest.raises(ValueError, match="holds no rows"):
        tp.JMI(k=3).fit(RowChunks([(X[:0], y[:0])]))
    with pytest.raises(ValueError, match="requires labels"):
        tp.JMI(k=3).fit(RowChunks([X[:150], X[150:]]))
    with pytest.raises(ValueError, match="single class"):
        tp.JMI(k=3).fit(RowChunks([(X, np.zeros(300))]))
    with pytest.raises(ValueError, match="larger than the number of features"):
        tp.JMI(k=11).fit(chunks)
    with pytest.raises(ValueError, match="weight sets"):
        tp.JMI(k=3).fit(RowChunks([(X, y, np.ones((300, 2)))]))
    with pytest.raises(ValueError, match="all weights are zero"):
        tp.JMI(k=3).fit(RowChunks([(X, y, np.zeros(300))]))
    with pytest.raises(ValueError, match="negative"):
        tp.JMI(k=3).fit(RowChunks([(X, y, -np.ones(300))]))
    from sklearn.preprocessing import KBinsDiscretizer

    with pytest.raises(ValueError, match="discretizer object cannot be fitted on row chunks"):
        tp.JMI(k=3, discretizer=KBinsDiscretizer(encode="ordinal")).fit(
            RowChunks([(np.random.default_rng(0).normal(size=(300, 3)), y)]))
    with pytest.raises(FileNotFoundError):
        tp.JMI(k=3).fit(str(tmp_path / "nothing.parquet"))
    with pytest.raises(ValueError, match="requires y"):  # data in memory still need y
        tp.JMI(k=3).fit(X)


# --- distributed: each rank streams its own chunks ----------------------------------------------------


def _job_streamed(rank, world, X, y, w, cases):
    """This rank's share of the rows (rank-order blocks), streamed in chunks of 100 rows."""
    import tensorprob as tp
    from tensorprob.datasets import RowChunks

    parts = np.array_split(np.arange(len(X)), world)[rank]
    out = []
    from tensorprob.counting import _spill

    _spill.default_block_rows = lambda n_features: 64  # blocks smaller than a chunk; ranks count unequal numbers
    with tp.config_context(device="cpu", dtype="float64"):
        for name, weighted in cases:
            rows = [parts[i:i + 100] for i in range(0, len(parts), 100)]
            chunks = RowChunks([(X.iloc[r], y[r], w[r]) if weighted else (X.iloc[r], y[r]) for r in rows])
            sel = {"jmi": tp.JMI(k=4, distributed=True), "cmim": tp.CMIM(k=4, lazy=True, distributed=True),
                   "rmrmr": tp.RMRMR(k=4, distributed=True), "mim": tp.MIM(k=4, distributed=True)}[name]
            sel.fit(chunks)
            out.append((sel.selected_.tolist(), sel.scores_.tolist()))
    return out


def _distributed_case(cases, world=2, n=700):
    pytest.importorskip("torch.distributed")
    if not torch.distributed.is_available():
        pytest.skip("torch.distributed is not available")
    from _dist_helpers import run_ranks

    df, lab = _frame(n=n, seed=11)
    w = np.random.default_rng(2).uniform(0, 2, n)
    out = run_ranks(_job_streamed, world=world, args=(df, lab, w, cases))
    assert all(status == "ok" for status, _ in out), out
    with tp.config_context(device="cpu", dtype="float64"):
        for i, (name, weighted) in enumerate(cases):
            cls = {"jmi": tp.JMI, "cmim": tp.CMIM, "rmrmr": tp.RMRMR, "mim": tp.MIM}[name]
            ref = cls(k=4).fit(df, lab, sample_weight=w if weighted else None)
            for _, results in out:
                sel, scores = results[i]
                assert sel == ref.selected_.tolist(), name
                np.testing.assert_allclose(scores, ref.scores_, rtol=1e-12, atol=0)


@pytest.mark.slow  # spawns Gloo processes: full suite only (the fast lane keeps one spawn per engine)
def test_two_gloo_ranks_stream_their_chunks(dtype):
    if dtype != torch.float64:
        pytest.skip("one lane is enough: the spawned processes select in float64")
    _distributed_case([("jmi", True), ("cmim", False)])


@pytest.mark.slow  # spawns Gloo processes: full suite only
def test_three_gloo_ranks_one_without_rows(dtype):
    if dtype != torch.float64:
        pytest.skip("one lane is enough")
    _distributed_case([("rmrmr", False), ("mim", True)], world=3, n=180)  # rank 2 gets 60 rows: 1 chunk


def _job_parquet(rank, world, folder):
    import tensorprob as tp
    from tensorprob.datasets import RowChunks, shard_files

    files = shard_files(folder)
    with tp.config_context(device="cpu", dtype="float64"):
        sel = tp.JMI(k=3, distributed=True).fit(RowChunks.from_parquet(files, target="label"))
    return files, sel.selected_.tolist(), sel.scores_.tolist()


@pytest.mark.slow
def test_two_gloo_ranks_read_their_parquet_shards(tmp_path, dtype):
    if dtype != torch.float64:
        pytest.skip("one lane is enough")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from _dist_helpers import run_ranks

    df, lab = _frame(seed=12)
    full = df.assign(label=lab)
    for i, s in enumerate(np.array_split(np.arange(len(full)), 5)):
        pq.write_table(pa.Table.from_pandas(full.iloc[s], preserve_index=False), tmp_path / f"p{i}.parquet",
                       row_group_size=100)
    out = run_ranks(_job_parquet, world=2, args=(str(tmp_path),))
    assert all(status == "ok" for status, _ in out), out
    assert out[0][1][0] == shard_files(str(tmp_path), rank=0, world_size=2)
    # shards are round-robin over the files: the reference is the in-memory fit on all the rows
    with tp.config_context(device="cpu", dtype="float64"):
        ref = tp.JMI(k=3).fit(df, lab)
    for _, (_, sel, scores) in out:
        assert sel == ref.selected_.tolist()
        np.testing.assert_allclose(scores, ref.scores_, rtol=1e-12, atol=0)


# --- command line ----------------------------------------------------------------------------------------


def _write_folder(folder, n_files=3, seed=3):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    df, lab = _frame(seed=seed)
    full = df.assign(label=lab)
    folder.mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(np.array_split(np.arange(len(full)), n_files)):
        pq.write_table(pa.Table.from_pandas(full.iloc[s], preserve_index=False), folder / f"part-{i}.parquet",
                       row_group_size=200)
    return df, lab


def test_cli_select_streams_a_parquet_directory(tmp_path, capsys, monkeypatch):
    import json

    from tensorprob._cli import main
    from tensorprob.selection import _base

    df, lab = _write_folder(tmp_path / "d")
    streamed = []
    fit_stream = _base.GreedySelector._fit_stream
    monkeypatch.setattr(_base.GreedySelector, "_fit_stream",
                        lambda self, chunks: streamed.append(1) or fit_stream(self, chunks))
    argv = ["select", str(tmp_path / "d"), "--target", "label", "-k", "3", "--method", "cmim", "--json",
            "--device", "cpu", "--no-progress"]
    assert main(argv) == 0
    rep = json.loads(capsys.readouterr().out)
    ref = tp.CMIM(k=3, device="cpu").fit(df, lab)
    assert streamed == [1]
    assert [p["feature"] for p in rep["selected"]] == [str(df.columns[j]) for j in ref.selected_]
    np.testing.assert_allclose([p["score"] for p in rep["selected"]], ref.scores_, rtol=1e-12)
    # a selector that does not stream still reads the folder into memory
    assert main(["select", str(tmp_path / "d"), "--target", "label", "-k", "2", "--method", "spec_cmi", "--json",
                 "--device", "cpu", "--no-progress"]) == 0
    assert len(json.loads(capsys.readouterr().out)["selected"]) == 2 and streamed == [1]
    assert main(["select", str(tmp_path / "d"), "-k", "2", "--no-progress"]) == 2
    assert "--target" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_select_under_torch_distributed_run(tmp_path, dtype):
    """Two processes launched by torch.distributed.run stream their files; rank 0 prints the one-process picks."""
    if dtype != torch.float64:
        pytest.skip("one lane is enough")
    import json
    import subprocess
    import sys

    from _dist_helpers import free_port

    _write_folder(tmp_path / "d", n_files=4, seed=9)
    common = [str(tmp_path / "d"), "--target", "label", "-k", "3", "--method", "jmi", "--json", "--device", "cpu",
              "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([os.path.dirname(os.path.dirname(tp.__file__)),
                                          os.environ.get("PYTHONPATH", "")])}
    one = subprocess.run([sys.executable, "-m", "tensorprob", "select", *common], env=env, capture_output=True,
                         text=True, timeout=300)
    assert one.returncode == 0, one.stderr
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          f"--master_port={free_port()}", "-m", "tensorprob", "select", *common, "--distributed"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr
    lines = [ln for ln in two.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, two.stdout  # rank 0 only
    rep1, rep2 = json.loads(one.stdout), json.loads(lines[0])
    assert [p["feature"] for p in rep2["selected"]] == [p["feature"] for p in rep1["selected"]]
    np.testing.assert_allclose([p["score"] for p in rep2["selected"]], [p["score"] for p in rep1["selected"]],
                               rtol=1e-12)
