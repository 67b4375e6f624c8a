"""The papers' scikit-feature ``.mat`` sets: by path, by name (data_home / TENSORPROB_DATA), values as codes or bins.

The logic is tested on tiny files written here; the tests on the real files (the folder of
the ``skfeature_dir`` fixture) are skipped when that folder is absent.
"""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.io

import tensorprob as tp
from tensorprob._cli import main
from tensorprob.datasets import list_datasets, load_dataset

# README of ../shared/data: file -> (samples, features, classes, discrete codes)
REAL_SETS = {
    "COIL20": (1440, 1024, 20, False), "ORL": (400, 1024, 40, False), "Isolet": (1560, 617, 26, False),
    "madelon": (2600, 500, 2, False), "colon": (62, 2000, 2, True), "leukemia": (72, 7070, 2, True),
    "lymphoma": (96, 4026, 9, True), "lung_small": (73, 325, 7, True), "nci9": (60, 9712, 9, True),
    "ALLAML": (72, 7129, 2, False), "TOX-171": (171, 5748, 4, False), "GLIOMA": (50, 4434, 4, False),
    "warpAR10P": (130, 2400, 10, False), "warpPIE10P": (210, 2420, 10, False),
}


def _write(path, X, Y):
    scipy.io.savemat(str(path), {"X": X, "Y": np.asarray(Y).reshape(-1, 1)})
    return path


@pytest.fixture
def folder(tmp_path):
    """A folder with a float set (TOX-171 spelling), an int16 coded set and a uint8 image set."""
    rng = np.random.default_rng(0)
    y = np.repeat([1, 2, 3], 10)
    _write(tmp_path / "TOX-171.mat", rng.normal(size=(30, 6)) + y[:, None], y)
    _write(tmp_path / "colon.mat", rng.choice(np.array([-2, 0, 2], dtype=np.int16), size=(30, 8)),
           np.where(y == 1, -1, 1).astype(np.int16))
    # 0..255 pixels of 90 images: more than 64 values in some column, so the array is measured
    pixels = rng.integers(0, 256, size=(90, 5)).astype(np.uint8)
    pixels[:, 0] = np.arange(90) % 3  # one column with only 3 values: still a measurement like the others
    _write(tmp_path / "ORL.mat", pixels, np.repeat([1, 2, 3], 30).astype(np.uint8))
    return tmp_path


def test_read_by_path_float_set(folder):
    for path in (folder / "TOX-171.mat", str(folder / "TOX-171.mat")):
        X, y, meta = load_dataset(path)
        assert X.shape == (30, 6) and X.dtype == np.float64 and y.dtype == np.int64
        assert meta["source"] == "skfeature-mat" and meta["path"] == str((folder / "TOX-171.mat").resolve())
        assert meta["shape"] == (30, 6) and meta["n_classes"] == 3 and meta["class_names"] == ["1", "2", "3"]
        assert meta["discrete"] is False and meta["dtype"] == "float64" and meta["name"] == "tox171"
        assert "TOX-171" in meta["paper_names"] and not any(meta["categorical"])
    fr = load_dataset(folder / "TOX-171.mat", as_frame=True).X
    assert list(fr.columns) == [f"x{j}" for j in range(6)]


def test_int16_codes_are_taken_as_codes(folder):
    X, y, meta = load_dataset(folder / "colon.mat")
    assert X.dtype == np.int16 and meta["discrete"] is True and all(meta["categorical"])
    assert set(np.unique(X)) == {-2, 0, 2} and set(y) == {-1, 1}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "discretized into 5 bins" warning
        sel = tp.MIM(k=3).fit(X, y)
    assert sel.encoder_.discretized_ == [] and set(sel.encoder_.kinds_) == {"categorical"}
    assert sel.encoder_.cardinalities_.max() == 3


def test_uint8_pixels_are_measurements(folder):
    X, y, meta = load_dataset(folder / "ORL.mat")
    assert X.dtype == np.float64 and meta["discrete"] is False and meta["dtype"] == "uint8"
    sel = tp.MIM(k=2).fit(X, y)  # the selectors' default: discretizer="uniform", n_bins=5
    # the whole array is one kind of measurement: the 3-valued column is binned like the others
    assert len(sel.encoder_.discretized_) == 5 and sel.encoder_.cardinalities_.tolist() == [5] * 5
    with pytest.warns(UserWarning, match="5 equal-width bins"):  # the encoder's "auto" says so
        tp.Encoder().fit(X)


def test_lookup_by_name_in_data_home_and_env(folder, monkeypatch):
    monkeypatch.delenv("TENSORPROB_DATA", raising=False)
    for name in ("tox171", "TOX-171", "tox_171", "Tox171"):
        assert load_dataset(name, data_home=folder).metadata["name"] == "tox171"
    assert load_dataset("ORL", data_home=str(folder)).X.shape == (90, 5)
    monkeypatch.setenv("TENSORPROB_DATA", str(folder))
    X, _, meta = load_dataset("colon")
    assert X.dtype == np.int16 and meta["path"].endswith("colon.mat")
    assert load_dataset("mat:orl").metadata["source"] == "skfeature-mat"
    assert {"coil20", "colon", "lung_small", "tox171"} <= set(list_datasets())


def test_lung_means_lung_small(tmp_path):
    _write(tmp_path / "lung_small.mat", np.zeros((4, 2), dtype=np.int16), [1, 1, 2, 2])
    assert load_dataset("lung", data_home=tmp_path).metadata["name"] == "lung_small"
    assert load_dataset("Lung", data_home=tmp_path).metadata["paper_names"] == ["Lung"]


def test_other_mat_files_by_name(tmp_path):
    _write(tmp_path / "MyData.mat", np.arange(12.0).reshape(6, 2) + 0.5, [0, 1] * 3)
    d = load_dataset("mydata", data_home=tmp_path)
    assert d.metadata["name"] == "mydata" and d.X.shape == (6, 2) and d.metadata["paper_names"] == []


def test_shipped_names_keep_their_meaning(tmp_path, monkeypatch):
    _write(tmp_path / "wine.mat", np.ones((4, 2)), [0, 0, 1, 1])
    monkeypatch.setenv("TENSORPROB_DATA", str(tmp_path))
    assert load_dataset("wine").metadata["source"] == "sklearn"  # the environment changes no shipped name
    assert load_dataset("wine", data_home=tmp_path).metadata["source"] == "skfeature-mat"  # an explicit folder wins
    assert load_dataset("mat:wine").X.shape == (4, 2)


def test_missing_name_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.delenv("TENSORPROB_DATA", raising=False)
    with pytest.raises(ValueError, match=r"COIL20\.mat .* not found; searched: no folder \(data_home not given and "
                                         r"TENSORPROB_DATA not set\)") as info:
        load_dataset("coil-20")
    assert "coil20" in str(info.value) and "wine" in str(info.value)  # the known names
    with pytest.raises(ValueError, match=rf"searched: data_home='{tmp_path}'"):
        load_dataset("coil20", data_home=tmp_path)
    monkeypatch.setenv("TENSORPROB_DATA", str(tmp_path / "nope"))
    with pytest.raises(ValueError, match=r"unknown dataset 'no-such-set': not a shipped set, and no no-such-set\.mat "
                                         r"was found; searched: TENSORPROB_DATA='.*nope' \(not a folder\)"):
        load_dataset("no-such-set")


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no such \.mat file"):
        load_dataset(tmp_path / "absent.mat")
    scipy.io.savemat(str(tmp_path / "other.mat"), {"data": np.ones((3, 2))})
    with pytest.raises(ValueError, match=r"no variable X or Y \(variables: data\)"):
        load_dataset(tmp_path / "other.mat")
    (tmp_path / "text.mat").write_text("not matlab")
    with pytest.raises(ValueError, match=r"cannot read .* as a MATLAB file"):
        load_dataset(str(tmp_path / "text.mat"))
    scipy.io.savemat(str(tmp_path / "short.mat"), {"X": np.ones((3, 2)), "Y": np.ones((2, 1))})
    with pytest.raises(ValueError, match="X has 3 samples but Y has 2 labels"):
        load_dataset(tmp_path / "short.mat")


def test_cli_reads_mat_files(folder, capsys, monkeypatch):
    assert main(["select", str(folder / "colon.mat"), "-k", "2", "--method", "mim", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["selected"]) == 2 and out["data"].startswith("colon (")
    monkeypatch.setenv("TENSORPROB_DATA", str(folder))
    assert main(["select", "tox171", "-k", "2", "--method", "mim", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"] == "tox171 (skfeature-mat)"
    assert main(["select", str(folder / "absent.mat"), "-k", "2"]) == 2
    assert "does not exist" in capsys.readouterr().err
    monkeypatch.delenv("TENSORPROB_DATA")
    assert main(["select", "coil20", "-k", "2"]) == 2
    err = capsys.readouterr().err
    assert "unknown dataset" in err and "TENSORPROB_DATA" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------ the real files (skipped without them)
def test_every_real_set_loads(skfeature_dir):
    for stem, (n, p, c, discrete) in REAL_SETS.items():
        X, y, meta = load_dataset(Path(skfeature_dir) / f"{stem}.mat")
        assert X.shape == (n, p) and len(y) == n and meta["n_classes"] == c, stem
        assert meta["discrete"] is discrete and (X.dtype.kind == "i") is discrete, stem
        if discrete:
            assert set(np.unique(X)) <= {-2, -1, 0, 1, 2}, stem


def test_real_sets_by_name(skfeature_dir, monkeypatch):
    monkeypatch.setenv("TENSORPROB_DATA", str(skfeature_dir))
    assert load_dataset("COIL-20").X.shape == (1440, 1024)
    assert load_dataset("lung").X.shape == (73, 325)
    assert load_dataset("tox171", data_home=skfeature_dir).X.shape == (171, 5748)


def test_colon_is_not_rebinned_and_orl_is(skfeature_dir):
    X, y, _ = load_dataset(Path(skfeature_dir) / "colon.mat")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sel = tp.MIM(k=5).fit(X, y)
    assert sel.encoder_.discretized_ == [] and sel.encoder_.cardinalities_.max() <= 3
    X, y, _ = load_dataset(Path(skfeature_dir) / "ORL.mat")
    enc = tp.Encoder(discretizer="uniform").fit(X)
    assert len(enc.discretized_) == X.shape[1] and enc.cardinalities_.max() == 5
