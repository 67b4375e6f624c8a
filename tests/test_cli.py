"""Command line: the main jobs and one-line errors with exit status 2."""
import json
import re

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
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# jmi on ") and lines[1].startswith("# score: criterion value of each pick (in nats)")
    assert lines[2].split() == ["rank", "feature", "score"]  # a header names the columns
    assert lines[3].split()[:2] == ["1", "b"]  # b equals the label


def test_evaluate_prints_accuracy_per_k_and_the_summary(capsys, tmp_path):
    """The printed tables are the library protocol's accuracy at every k and its summary for the same configuration."""
    out = tmp_path / "res.csv"
    assert main(["evaluate", "wine", "--methods", "mim,jmi", "--ks", "2,4", "--repeats", "2", "--output", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "# accuracy of 1nn on the first k selected features, mean over 2 splits (holdout)"
    assert lines[1].split() == ["method", "k=2", "k=4"]
    printed = {ln.split()[0]: [float(v) for v in ln.split()[1:]] for ln in lines[2:4]}
    assert lines[4].startswith("# error summary")
    header = lines[5].split()
    assert header[-3:] == ["mean_error", "std_error", "select_seconds"]
    summary = {ln.split()[-5]: float(ln.split()[-3]) for ln in lines[6:8]}  # method -> mean_error
    assert lines[8] == f"# wrote {out}"

    X, y, _, _ = _load("wine", None)
    res = tp.evaluation.holdout_protocol({"mim": tp.MIM(k=4), "jmi": tp.JMI(k=4)}, X, y, ks=[2, 4], n_repeats=2,
                                         classifier="1nn", random_state=0, progress=False)
    acc = res.groupby(["method", "k"])["accuracy"].mean()
    expected = tp.evaluation.summarize(res).set_index("method")["mean_error"]
    assert set(printed) == set(summary) == {"mim", "jmi"}
    for method in printed:
        assert printed[method] == pytest.approx([acc[method, 2], acc[method, 4]], abs=5e-5)  # 4 decimals
        assert summary[method] == pytest.approx(expected[method], abs=5e-7)  # printed with 6 decimals
    import pandas as pd

    cols = ["method", "split", "classifier", "k", "accuracy", "error"]
    pd.testing.assert_frame_equal(pd.read_csv(out)[cols], res[cols], check_dtype=False)


@pytest.mark.parametrize("argv, message", [
    (["select", "no-such-dataset", "-k", "3"], "unknown dataset"),
    (["select", "wine", "-k", "99"], "larger than the number of features"),
    (["select", "wine", "--method", "magic"], "--method: unknown method"),
    (["evaluate", "wine", "--methods", "jmi,nope"], "--methods: unknown method(s) nope"),
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
    assert main(["fit-cpd", "wine", "--rank", "2", "--max-iter", "2", "--json", "--no-progress"]) == 0
    cap = capsys.readouterr()  # the library's warning is one line, without Python's file:line and source line
    err = cap.err.splitlines()  # the change itself depends on the device's random starts
    assert len(err) == 1 and re.fullmatch(r"tensorprob: warning: rank-2 fit did not converge in 2 iterations \(last "
                                          r"relative change \d\.\d\de[-+]\d\d > tol=1e-06\); raise n_iter_max or tol",
                                          err[0]), err
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
    (["evaluate", "wine", "--methods", ",", "--ks", "2"], "--methods names no method"),
    (["evaluate", "wine", "--methods", "", "--ks", "2"], "--methods names no method"),
    (["evaluate", "wine", "--methods", "mim", "--ks", "0"], "--ks needs integers >= 1"),
    (["evaluate", "wine", "--methods", "mim", "--ks", "2,x"], "--ks needs comma-separated integers"),
    (["select", "wine", "--target", "foo", "-k", "1"], "--target applies to CSV/TSV/Parquet files"),
    (["fit-cpd", "wine", "--target", "foo"], "--target applies to CSV/TSV/Parquet files"),
    (["fit-cpd", "wine", "--save", "/nonexistent-dir-e3/m.pt"], "does not exist"),
])
def test_user_errors_one_line(argv, message, capsys):
    _one_line_2(argv, message, capsys)


# ---------------------------------------------------------------- issue 42 item 7: argument errors name the argument
@pytest.mark.parametrize("argv, message", [
    (["select", "wine", "-k", "ten"], "argument -k: expected an integer >= 1, 'all' or 'auto', got 'ten'"),
    (["select", "wine", "-k", "0"], "argument -k: must be >= 1, 'all' or 'auto', got 0"),
    (["select", "wine", "-k"], "argument -k: expected one argument"),
    (["select", "wine", "--no-such-option"], "unrecognized arguments: --no-such-option"),
    (["select", "wine", "--device", "gpu"], "argument --device: expected auto, cpu, cuda or cuda:N, got 'gpu'"),
    (["fit-cpd", "wine", "--rank", "ten"], "argument --rank: expected an integer >= 1, got 'ten'"),
    (["fit-cpd", "wine", "--rank", "0"], "argument --rank: must be >= 1, got 0"),
    (["fit-cpd", "wine", "--restarts", "0"], "argument --restarts: must be >= 1, got 0"),
    (["fit-cpd", "wine", "--max-iter", "1.5"], "argument --max-iter: expected an integer >= 1, got '1.5'"),
    (["fit-cpd", "wine", "--bins", "1"], "argument --bins: must be >= 2, got 1"),
    (["fit-cpd", "wine", "--tol", "-1"], "argument --tol: must be a finite number >= 0, got '-1'"),
    (["fit-cpd", "wine", "--tol", "nan"], "argument --tol: must be a finite number >= 0, got 'nan'"),
    (["fit-cpd", "wine", "--tol", "small"], "argument --tol: expected a number >= 0, got 'small'"),
    (["fit-cpd", "wine", "--seed", "-3"], "argument --seed: must be >= 0, got -3"),
    (["fit-cpd", "wine", "--dtype", "None"], "argument --dtype: invalid choice: 'None'"),
    (["evaluate", "wine", "--repeats", "0", "--ks", "2"], "argument --repeats: must be >= 1, got 0"),
    (["evaluate", "wine", "--folds", "1", "--protocol", "cv"], "argument --folds: must be >= 2, got 1"),
    (["evaluate", "wine", "--classifier", "svm"], "argument --classifier: invalid choice: 'svm'"),
    (["fit-cpd"], "the following arguments are required: DATA"),
    (["frobnicate"], "argument {fit-cpd,select,evaluate}: invalid choice: 'frobnicate'"),
])
def test_argument_errors_name_the_argument_after_the_usage(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("usage: tensorprob"), err
    assert err[-1].startswith("tensorprob: error: ") and message in err[-1], err
    assert not any("Traceback" in ln for ln in err)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="the error of a machine without CUDA")
def test_cuda_asked_for_without_cuda_names_the_argument(capsys):
    assert main(["select", "wine", "--device", "cuda"]) == 2
    assert "argument --device: 'cuda' asked for, but CUDA is not available" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"tensorprob {tp.__version__}"


def test_every_option_has_help_and_shows_its_default():
    import argparse

    from tensorprob._cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(subs) == {"fit-cpd", "select", "evaluate"}
    for name, sp in subs.items():
        text = sp.format_help()
        for action in sp._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (name, action.dest)
            if action.option_strings and action.default is not None and not isinstance(action.default, bool):
                assert f"(default: {action.default})" in " ".join(text.split()), (name, action.dest)
            if action.dest == "dtype":
                assert None not in action.choices and "(default: float64 on the CPU" in " ".join(text.split())


def test_fit_cpd_save_confirms_the_path_and_keeps_the_label_name(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,c,species\n" + "\n".join(f"{i % 3},{i % 2},{(i * 7) % 5},{'xy'[i % 2]}" for i in range(90)))
    path = tmp_path / "m.pt"
    argv = ["fit-cpd", str(csv), "--target", "species", "--rank", "2", "--max-iter", "5", "--tol", "0", "--save"]
    assert main(argv + [str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"saved model to {path}"
    m = tp.CPDModel.load(path)
    assert m.variable_names == ["a", "b", "c", "species"]  # was "y"
    import pandas as pd

    assert list(m.predict(pd.DataFrame({"a": [0], "b": [1], "c": [2]}))) == ["y"]  # the labels of the file
    assert main(argv + [str(tmp_path / "m2.pt"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["saved"] == str(tmp_path / "m2.pt")


def test_save_into_a_directory_or_unwritable(tmp_path, capsys, monkeypatch):
    _one_line_2(["fit-cpd", "wine", "--rank", "2", "--save", str(tmp_path)], "is a directory", capsys)

    def fail(self, path):  # what torch.save raises for a path it cannot open (e.g. as root under /proc)
        raise RuntimeError("open file failed with strerror: Permission denied")

    monkeypatch.setattr(tp.CPDModel, "save", fail)
    _one_line_2(["fit-cpd", "wine", "--rank", "2", "--max-iter", "2", "--tol", "0", "--save", str(tmp_path / "m.pt")],
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


def test_select_reads_sparse_npz_and_svmlight(tmp_path, capsys):
    """SciPy's .npz (labels from --labels) and svmlight files go to the sparse selectors, as the matrices in Python do."""
    import numpy as np
    import scipy.sparse as sp
    from sklearn.datasets import dump_svmlight_file

    d = tp.datasets.make_sparse_corpus(800, 300, nnz_per_row=15, n_informative=3, effect=8.0, random_state=0)
    want = tp.JMI(k=4).fit(d.X, d.y).selected_.tolist()
    npz, lab, txt, svm = (tmp_path / n for n in ("X.npz", "y.npy", "y.txt", "X.svm"))
    sp.save_npz(npz, d.X)
    np.save(lab, d.y)
    txt.write_text("\n".join(str(v) for v in d.y))
    dump_svmlight_file(d.X, d.y, str(svm))
    for argv in (["select", str(npz), "--labels", str(lab)], ["select", str(npz), "--labels", str(txt)],
                 ["select", str(svm)]):
        assert main(argv + ["-k", "4", "--method", "jmi", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert [p["index"] for p in out["selected"]] == want
        assert out["selected"][0]["feature"] == f"x{want[0]}"
    for argv, message in ((["select", str(npz)], "pass --labels FILE"),
                          (["select", str(svm), "--labels", str(lab)], "brings its own labels"),
                          (["select", str(npz), "--target", "y"], "pass the labels with --labels FILE"),
                          (["select", str(npz), "--labels", str(tmp_path / "none.npy")], "does not exist"),
                          (["select", str(npz), "--labels", str(lab), "--method", "pda"], "does not accept sparse"),
                          (["evaluate", str(svm)], "evaluate does not take sparse matrices yet")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (argv, err)
    # fit-cpd: the label from the file (svmlight) or from --labels (.npz), or none
    for argv, variables in (([str(svm)], 301), ([str(npz), "--labels", str(lab)], 301), ([str(npz)], 300)):
        assert main(["fit-cpd", *argv, "--rank", "2", "--restarts", "1", "--max-iter", "3", "--json",
                     "--device", "cpu"]) == 0
        assert json.loads(capsys.readouterr().out)["variables"] == variables
