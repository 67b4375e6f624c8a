"""Identical ordered selections to FEAST (the C library of Brown et al., through ``fstoolbox``) where the criteria agree.

How ``fstoolbox`` 0.0.2 must be called (read from its source, and checked by these tests): the integer
entry points (``MIM``, ``mRMR_D``, ``JMI``, ``DISR``, ``ICAP``, ``CMIM``, ``CondMI``, ``BetaGamma``) take
``X`` of shape (n_samples, n_features) of non-negative integer codes and ``y`` of shape (n_samples,) of
non-negative integer labels; they copy X to a Fortran-ordered uint32 array and pass FEAST one pointer per
feature column, as it expects. They return ``(selected, scores)``: 0-based feature indices (NumPy uint64)
in pick order, and each pick's criterion value in bits (MIToolbox uses log2). The ``disc*`` entry points
(float input) are broken in 0.0.2: they pass the row pointers of a C-ordered uint32 copy where FEAST
expects one double array per feature, and the uint32 labels as doubles; ``discMIM`` returns
``[0, 1, ..., k-1]`` and ``discJMI`` zeros or an allocation failure. ``CondMI`` conditions on the joint
of all selected features (not CIFE) and stops, padding with ``2**32 - 1``, once that information is 0.

Pairs: MIM = MIM, MRMR = mRMR_D, JMI = JMI, DISR = DISR, ICAP = ICAP, CMIM(variant="fleuret") = CMIM,
CIFE = BetaGamma(beta=1, gamma=1), MIFS(beta) = BetaGamma(beta, gamma=0).
"""
import numpy as np
import pytest

import tensorprob as tp

try:
    fstoolbox = pytest.importorskip("fstoolbox")
except SystemExit:  # fstoolbox 0.0.2 calls exit(1) at import when it cannot find its libFSToolbox.so
    pytest.skip("fstoolbox cannot load libFSToolbox.so", allow_module_level=True)

# (our method, our options, FEAST function of (X, y, k))
PAIRS = {
    "mim": ("mim", {}, lambda X, y, k: fstoolbox.MIM(X, y, k)),
    "mrmr": ("mrmr", {}, lambda X, y, k: fstoolbox.mRMR_D(X, y, k)),
    "jmi": ("jmi", {}, lambda X, y, k: fstoolbox.JMI(X, y, k)),
    "disr": ("disr", {}, lambda X, y, k: fstoolbox.DISR(X, y, k)),
    "icap": ("icap", {}, lambda X, y, k: fstoolbox.ICAP(X, y, k)),
    "cmim_fleuret": ("cmim", {"variant": "fleuret"}, lambda X, y, k: fstoolbox.CMIM(X, y, k)),
    "cmim_fleuret_lazy": ("cmim", {"variant": "fleuret", "lazy": True}, lambda X, y, k: fstoolbox.CMIM(X, y, k)),
    "cife": ("cife", {}, lambda X, y, k: fstoolbox.BetaGamma(X, y, k, 1.0, 1.0)),
    "mifs": ("mifs", {"beta": 1.0}, lambda X, y, k: fstoolbox.BetaGamma(X, y, k, 1.0, 0.0)),
    "mifs_half": ("mifs", {"beta": 0.5}, lambda X, y, k: fstoolbox.BetaGamma(X, y, k, 0.5, 0.0)),
}


def _chess():
    try:
        d = tp.datasets.load_dataset("chess")
    except ImportError as e:
        pytest.skip(str(e))
    return tp.encode(d.X).codes.astype(np.int64), np.unique(d.y, return_inverse=True)[1]


def _planted(seed=0, M=600, N=16):
    """Relevant, redundant (a noisy and an exact copy) and synergistic features, 3 values, 3 classes."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (M, N))
    y = (X[:, 2] + X[:, 7] + (X[:, 11] > 1) + rng.integers(0, 2, M)) % 3
    X[:, 5] = np.where(rng.random(M) < 0.2, (X[:, 2] + 1) % 3, X[:, 2])
    X[:, 13] = X[:, 7]
    X[:, 9] = (X[:, 2] + X[:, 7]) % 3
    return X, y


DATA = {"chess": _chess, "planted": _planted}
_CODES: dict = {}
_FEAST: dict = {}


def codes(data_name):
    """The data set's codes and labels, built once."""
    if data_name not in _CODES:
        _CODES[data_name] = DATA[data_name]()
    return _CODES[data_name]


def feast(data_name, pair):
    """FEAST's (picks, scores in bits) ranking every feature, computed once per data set and method."""
    if (data_name, pair) not in _FEAST:
        X, y = codes(data_name)
        sel, scores = PAIRS[pair][2](X, y, X.shape[1])
        _FEAST[data_name, pair] = [int(i) for i in sel], np.asarray(scores, dtype=np.float64)
    return _FEAST[data_name, pair]


@pytest.mark.parametrize("data_name", sorted(DATA))
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_same_ordered_selection_as_feast(data_name, pair, dtype):
    X, y = codes(data_name)
    method, opts, _ = PAIRS[pair]
    picks, scores = feast(data_name, pair)
    ours = tp.select_features(X, y, "all", method=method, base=2, dtype=dtype, **opts)
    assert ours.selected_.tolist() == picks
    np.testing.assert_allclose(ours.scores_, scores, rtol=1e-9, atol=1e-12)


def test_feast_cmim_is_fleurets_not_browns():
    X, y = codes("planted")
    picks, _ = feast("planted", "cmim_fleuret")
    assert tp.CMIM(k="all", variant="brown").fit(X, y).selected_.tolist() != picks


_MNIST: dict = {}


def _mnist_feast_cmim(k=50):
    """MNIST-5k codes (5 equal-width bins) and FEAST's CMIM picks and scores, computed once."""
    if not _MNIST:
        try:
            d = tp.datasets.load_dataset("mnist")
        except ImportError as e:
            pytest.skip(str(e))
        X, y = tp.encode(d.X, discretizer="uniform", n_bins=5).codes.astype(np.int64), d.y.astype(np.int64)
        picks, scores = fstoolbox.CMIM(X, y, k)
        _MNIST.update(X=X, y=y, picks=[int(i) for i in picks], scores=np.asarray(scores))
    return _MNIST


@pytest.mark.slow  # MNIST-5k: about 3 s to load (once)
@pytest.mark.parametrize("lazy", [True, False])
def test_cmim_fleuret_is_feasts_on_mnist(lazy, dtype):
    m = _mnist_feast_cmim()
    ours = tp.CMIM(k=50, variant="fleuret", lazy=lazy, base=2, dtype=dtype).fit(m["X"], m["y"])
    assert ours.selected_.tolist() == m["picks"]
    np.testing.assert_allclose(ours.scores_, m["scores"], rtol=1e-9, atol=1e-12)
    # Brown et al.'s CMIM parts from FEAST's on the third pick
    assert tp.CMIM(k=3, variant="brown").fit(m["X"], m["y"]).selected_.tolist() != m["picks"][:3]
