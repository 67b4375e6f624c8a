"""CPDModel.save / load: faithful round trips, no pickle, one clear error for a bad file."""
import io

import numpy as np
import pandas as pd
import pytest
import torch

import tensorprob as tp


def _fit(y, X=None):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (len(y), 3)) if X is None else X
    return tp.fit_cpd(pd.DataFrame(X, columns=["p", "q", "r"]), rank=2, y=y, random_state=0, n_iter_max=10, tol=0)


LABELS = {
    "bool": np.array([True, False] * 20),  # came back as [True, True]
    "datetime": np.array(["2020-01-01", "2021-06-30"] * 20, dtype="datetime64[ns]"),  # came back in the 1700s
    "str": np.array(["a", "bb"] * 20),
    "int": np.array([3, 7] * 20),
    "float": np.array([1.0, 3.0] * 20),  # integral: non-integral float labels are a continuous target (an error)
    "object": np.array(["x", 1] * 20, dtype=object),
}


@pytest.mark.parametrize("kind", sorted(LABELS))
def test_round_trip_keeps_labels_of_every_dtype(tmp_path, kind):
    m = _fit(LABELS[kind])
    m.save(tmp_path / "m.pt")
    back = tp.CPDModel.load(tmp_path / "m.pt")
    assert back.classes.dtype == m.classes.dtype
    assert back.classes.tolist() == m.classes.tolist()
    assert back.variable_names == m.variable_names == ["p", "q", "r", "y"]
    assert torch.equal(back.log_weights, m.log_weights.cpu())
    np.testing.assert_array_equal(back.loglik_history_, m.loglik_history_)


def test_round_trip_keeps_encoder_state(tmp_path):
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"s": rng.choice(["u", "v", None], 60), "f": rng.normal(size=60),
                       "d": pd.to_datetime(rng.choice(["2020-01-01", "2022-02-02"], 60)),
                       "b": rng.choice([True, False], 60)})
    m = tp.fit_cpd(df, rank=2, random_state=0, n_iter_max=10)
    m.save(tmp_path / "m.pt")
    back = tp.CPDModel.load(tmp_path / "m.pt")
    np.testing.assert_array_equal(back.encoder_.transform(df), m.encoder_.transform(df))
    assert torch.allclose(back.log_prob(df), m.log_prob(df).cpu())
    assert list(back.encoder_.feature_names_in_) == ["s", "f", "d", "b"]


def test_saved_file_needs_no_pickle(tmp_path):
    m = _fit(LABELS["str"])
    m.save(tmp_path / "m.pt")
    state = torch.load(tmp_path / "m.pt", weights_only=True)  # only tensors and plain values
    assert isinstance(state["meta"], str)
    assert {type(v) for v in state.values()} <= {str, torch.Tensor, list}


def _tamper(path, out, fn):
    state = torch.load(path, weights_only=True)
    fn(state)
    torch.save(state, out)


@pytest.mark.parametrize("how", ["truncated", "junk", "foreign", "tampered", "unnormalized", "negative", "shape",
                                 "classes", "object"])
def test_bad_files_give_one_clear_error(tmp_path, how):
    m = _fit(LABELS["int"])
    good = tmp_path / "m.pt"
    m.save(good)
    bad = tmp_path / "bad.pt"
    if how == "truncated":
        bad.write_bytes(good.read_bytes()[:200])
    elif how == "junk":
        bad.write_bytes(b"not a model")
    elif how == "foreign":
        torch.save({"weight": torch.zeros(3)}, bad)
    elif how == "tampered":
        _tamper(good, bad, lambda s: s.__setitem__("meta", s["meta"][:-5]))
    elif how == "unnormalized":
        _tamper(good, bad, lambda s: s.__setitem__("log_weights", s["log_weights"] + 0.1))
    elif how == "negative":
        _tamper(good, bad, lambda s: s["log_factors"].__setitem__(0, s["log_factors"][0] * float("nan")))
    elif how == "shape":
        _tamper(good, bad, lambda s: s["log_factors"].__setitem__(0, s["log_factors"][0][:, :1]))
    elif how == "classes":
        _tamper(good, bad, lambda s: s.__setitem__("meta", s["meta"].replace("[3, 7]", "[3, 7, 9]")))
    elif how == "object":
        _tamper(good, bad, lambda s: s.__setitem__("meta", s["meta"].replace(
            "tensorprob.encoding._encode:Encoder", "os:system")))
    with pytest.raises(ValueError, match="not a saved tensorprob CPDModel") as info:
        tp.CPDModel.load(bad)
    assert "weights_only" not in str(info.value)


def test_pickle_bomb_is_not_executed(tmp_path):
    import pickle

    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('executed')",))

    buf = io.BytesIO()
    torch.save({"format": "tensorprob.CPDModel/3", "x": Boom()}, buf, pickle_module=pickle)
    (tmp_path / "evil.pt").write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="not a saved tensorprob CPDModel"):
        tp.CPDModel.load(tmp_path / "evil.pt")


def test_constructor_validates_normalization():
    w = torch.tensor([0.5, 0.6], dtype=torch.float64)
    A = torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64)
    with pytest.raises(ValueError, match="normalize=True"):
        tp.CPDModel(w, [A])
    with pytest.raises(ValueError, match="column 1 of factor 0"):
        tp.CPDModel(torch.tensor([0.5, 0.5], dtype=torch.float64), [A * torch.tensor([1.0, 2.0])])
    m = tp.CPDModel(w, [A * 3], normalize=True)
    assert torch.allclose(m.weights, w / w.sum()) and torch.allclose(m.factors[0], A)
