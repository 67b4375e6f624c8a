"""Command line: the main jobs and one-line errors with exit status 2."""
import json

import pytest

import tensorprob as tp
from tensorprob._cli import _load, main


def test_fit_cpd_report(capsys, device):
    assert main(["fit-cpd", "wine", "--rank", "3", "--json", "--device", device]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["rank"] == 3 and rep["variables"] == 14 and rep["device"].startswith(device) and rep["iterations"] >= 1


def test_select_prints_ordered_features(capsys, tmp_path):
    assert main(["select", "wine", "-k", "3", "--method", "mrmr", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["rank"] for p in out["selected"]] == [1, 2, 3]
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,c,label\n" + "\n".join(f"{i % 3},{i % 2},{(i * 7) % 5},{i % 2}" for i in range(60)))
    assert main(["select", str(csv), "--target", "label", "-k", "2", "--method", "jmi"]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[1].split()[1] == "b"  # b equals the label


def test_evaluate_summary(capsys):
    """The printed table is the library protocol's summary for the same configuration."""
    assert main(["evaluate", "wine", "--methods", "mim,jmi", "--ks", "2,4", "--repeats", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[-3:] == ["mean_error", "std_error", "select_seconds"]
    printed = {ln.split()[-5]: float(ln.split()[-3]) for ln in lines[1:]}  # method -> mean_error

    X, y, _, _ = _load("wine", None)
    res = tp.evaluation.holdout_protocol({"mim": tp.MIM(k=4), "jmi": tp.JMI(k=4)}, X, y, ks=[2, 4], n_repeats=2,
                                         classifier="1nn", random_state=0, progress=False)
    expected = tp.evaluation.summarize(res).set_index("method")["mean_error"]
    assert set(printed) == {"mim", "jmi"}
    for method, value in printed.items():
        assert value == pytest.approx(expected[method], abs=5e-7)  # printed with 6 decimals


@pytest.mark.parametrize("argv, message", [
    (["select", "no-such-dataset", "-k", "3"], "unknown dataset"),
    (["select", "wine", "-k", "99"], "larger than the number of features"),
    (["select", "wine", "--method", "magic"], "unknown method"),
    (["evaluate", "wine", "--methods", "jmi,nope"], "unknown method"),
])
def test_errors_are_one_line_with_status_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_files(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["select", str(empty), "--target", "y"]) == 2
    f = tmp_path / "d.csv"
    f.write_text("a,b\n1,2\n3,4\n")
    assert main(["select", str(f), "--target", "zz"]) == 2
    assert "target column 'zz'" in capsys.readouterr().err


def test_feature_names_of_shipped_sets(capsys):
    assert main(["select", "wine", "-k", "2", "--method", "mim", "--json", "--no-progress"]) == 0
    names = {p["feature"] for p in json.loads(capsys.readouterr().out)["selected"]}
    from sklearn.datasets import load_wine

    assert names <= set(load_wine().feature_names)


def test_progress_bars_go_to_stderr_and_keep_json_clean(capsys):
    pytest.importorskip("tqdm")
    assert main(["select", "wine", "-k", "3", "--method", "jmi", "--json", "--progress"]) == 0
    cap = capsys.readouterr()
    assert len(json.loads(cap.out)["selected"]) == 3
    assert "selecting (jmi)" in cap.err
    assert main(["fit-cpd", "wine", "--rank", "2", "--max-iter", "5", "--json", "--progress"]) == 0
    cap = capsys.readouterr()
    json.loads(cap.out)
    assert "EM (4 models)" in cap.err  # one model, four batched starts (the default --restarts)
    assert main(["select", "wine", "-k", "3", "--json", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("content, message", [
    ("a,b,label\n1,x,0\n2,3,1\nabc,4,0\n3,5,1\n", "mixes numbers and text"),
    ("a,label\n", "holds no data"),
])
def test_bad_csv_contents(tmp_path, capsys, content, message):
    f = tmp_path / "d.csv"
    f.write_text(content)
    assert main(["select", str(f), "--target", "label", "-k", "1"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_file_and_unknown_name(capsys):
    assert main(["select", "missing.csv", "--target", "y"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["fit-cpd", "not-a-dataset"]) == 2
    assert "unknown dataset" in capsys.readouterr().err


# ---------------------------------------------------------------- issue 12: every user error is one line, status 2
def _one_line_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv, message", [
    (["evaluate", "wine", "--repeats", "0", "--ks", "2"], "--repeats must be >= 1"),
    (["evaluate", "wine", "--methods", ",", "--ks", "2"], "--methods names no method"),
    (["evaluate", "wine", "--methods", "", "--ks", "2"], "--methods names no method"),
    (["evaluate", "wine", "--methods", "mim", "--ks", "0"], "--ks needs integers >= 1"),
    (["evaluate", "wine", "--methods", "mim", "--ks", "2,x"], "--ks needs comma-separated integers"),
    (["evaluate", "wine", "--methods", "mim", "--folds", "1", "--protocol", "cv"], "--folds must be >= 2"),
    (["select", "wine", "--target", "foo", "-k", "1"], "--target applies to CSV/TSV/Parquet files"),
    (["fit-cpd", "wine", "--target", "foo"], "--target applies to CSV/TSV/Parquet files"),
    (["fit-cpd", "wine", "--rank", "0"], "--rank must be >= 1"),
    (["fit-cpd", "wine", "--save", "/nonexistent-dir-e3/m.pt"], "does not exist"),
    (["select", "wine", "--no-such-option"], "unrecognized arguments"),
    (["select", "wine", "-k"], "expected one argument"),
])
def test_user_errors_one_line(argv, message, capsys):
    _one_line_2(argv, message, capsys)


@pytest.mark.filterwarnings("ignore:rank-2 fit did not converge")
def test_save_into_a_directory_or_unwritable(tmp_path, capsys, monkeypatch):
    _one_line_2(["fit-cpd", "wine", "--rank", "2", "--save", str(tmp_path)], "is a directory", capsys)

    def fail(self, path):  # what torch.save raises for a path it cannot open (e.g. as root under /proc)
        raise RuntimeError("open file failed with strerror: Permission denied")

    monkeypatch.setattr(tp.CPDModel, "save", fail)
    _one_line_2(["fit-cpd", "wine", "--rank", "2", "--max-iter", "2", "--save", str(tmp_path / "m.pt")],
                "cannot write --save", capsys)


def test_continuous_label_rejected(tmp_path, capsys):
    f = tmp_path / "c.csv"
    f.write_text("a,b,label\n" + "\n".join(f"{i % 3},{i % 2},{i * 0.37 + 0.01:.3f}" for i in range(60)))
    for cmd in (["select", str(f), "--target", "label", "-k", "1"],
                ["evaluate", str(f), "--target", "label", "--methods", "mim", "--ks", "1"],
                ["fit-cpd", str(f), "--target", "label", "--rank", "2"]):
        _one_line_2(cmd, "is continuous", capsys)


def test_tsv_read_tab_separated(tmp_path, capsys):
    f = tmp_path / "d.tsv"
    f.write_text("a\tb\tlabel\n" + "\n".join(f"{i % 3}\t{i % 2}\t{i % 2}" for i in range(60)))
    assert main(["select", str(f), "--target", "label", "-k", "1", "--method", "mim", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["selected"][0]["feature"] == "b"


def test_unreadable_parquet_one_line(tmp_path, capsys):
    f = tmp_path / "d.parquet"
    f.write_bytes(b"not parquet")
    _one_line_2(["select", str(f), "--target", "y"], "cannot read", capsys)


def test_parquet_engine_in_data_extra():
    import pathlib

    import tomllib

    pyproject = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("pyarrow") for d in extras["data"])
