"""The shared selector base: parameter validation, y/k checks, fitted state, registry, VMI params."""
import numpy as np
import pytest
from _helpers import random_data
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError

import tensorprob as tp
from tensorprob.selection import CodedSelector, RealSelector, available_methods, get_selector
from tensorprob.selection._base import _BaseSelector


def test_two_kinds_of_selector_under_one_base():
    assert {c.__name__ for c in _BaseSelector.__subclasses__()} == {"CodedSelector", "RealSelector"}
    for name in available_methods():
        cls = get_selector(name)
        assert issubclass(cls, RealSelector if name in ("hofs", "gmi", "pairwise_dp", "spec", "trace_ratio") else CodedSelector), name


@pytest.mark.parametrize("method", available_methods())
def test_not_fitted_error_before_fit(method):
    sel = get_selector(method)(k=1)
    for call in (sel.get_support, lambda: sel.transform(np.zeros((3, 2))), sel.get_feature_names_out):
        with pytest.raises(NotFittedError):
            call()


def test_invalid_parameters_are_reported_by_scikit_learn():
    X, y = random_data(0)
    with pytest.raises(InvalidParameterError,
                       match=r"The 'k' parameter of JMI must be an int in the range \[1, inf\) or a str among "
                             r"\{'all'\}\. Got 0 instead\."):
        tp.JMI(k=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match=r"The 'beta' parameter of MIFS must be a float in the range "
                                                    r"\[0.0, inf\)\. Got -1 instead\."):
        tp.MIFS(beta=-1).fit(X, y)
    with pytest.raises(InvalidParameterError, match="The 'n_bins' parameter of JMI must be an int in the range"):
        tp.JMI(n_bins=1).fit(X, y)
    with pytest.raises(InvalidParameterError, match="The 'base' parameter of MIM must be"):
        tp.MIM(base=10).fit(X, y)
    with pytest.raises(InvalidParameterError, match="The 'q' parameter of VMI must be a str among"):
        tp.VMI(q="triple").fit(X, y)
    with pytest.raises(InvalidParameterError, match="The 'solver' parameter of HOFS must be a str among"):
        tp.HOFS(solver="lbfgs").fit(X.astype(float), y)
    with pytest.raises(InvalidParameterError, match="The 'k' parameter of GSMCPD must be"):
        tp.GSMCPD(k="most").fit(X, y)


# one set of messages for y, whatever the kind of selector
@pytest.mark.parametrize("cls", [tp.HOFS, tp.GMI, tp.JMI])
@pytest.mark.parametrize("make_y, match", [
    (lambda n: None, "requires y to be passed"),
    (lambda n: np.where(np.arange(n) < 3, np.nan, np.arange(n) % 2), "contains 3 missing label"),
    (lambda n: np.ones(n), "y has a single class"),
    (lambda n: np.arange(n + 1) % 2, "X has 20 samples but y has 21 labels"),
])
def test_bad_labels(cls, make_y, match):
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match=match):
        cls(k=2).fit(X, make_y(20))


def test_vmi_parameters_are_its_own():
    vmi = tp.VMI(k=3, q="naive")
    assert set(vmi.get_params()) == {"k", "q", "restart_threshold", "discretizer", "n_bins", "missing_values", "base",
                                     "device", "dtype", "distributed"}
    vmi.set_params(q="pairwise", restart_threshold=0.05)
    assert vmi.q == "pairwise" and vmi.restart_threshold == 0.05
    twin = clone(vmi)
    assert twin.get_params() == vmi.get_params() and twin is not vmi
    X, y = random_data(1)
    a, b = twin.fit(X, y), tp.PDA(k=3, distribution="gmd", framework="vi", k1=1, restart_threshold=0.05).fit(X, y)
    assert a.selected_.tolist() == b.selected_.tolist()
    assert not hasattr(tp.VMI(), "distribution")  # no read-only PDA parameters on VMI


def test_registry_names_and_aliases():
    names = available_methods()
    assert all("-" not in n for n in names)
    assert get_selector("gsm-cpd") is get_selector("gsm_cpd") is tp.GSMCPD
    assert get_selector("spec-cmi") is tp.SPECCMI and get_selector("JMI") is tp.JMI
    X, y = random_data(2)
    assert tp.select_features(X, y, 2, method="spec-cmi").selected_.tolist() == \
        tp.select_features(X, y, 2, method="spec_cmi").selected_.tolist()
    with pytest.raises(ValueError, match="unknown method 'magic'; available: cife, cmim"):
        get_selector("magic")


def test_a_new_criterion_registers_itself():
    from tensorprob.selection._api import _REGISTRY
    from tensorprob.selection._classic import _ClassicSelector, mim_criterion

    class Relevance(_ClassicSelector):
        method_name = "relevance_only_test"

        def _criterion(self):
            return mim_criterion()

    try:
        X, y = random_data(3)
        got = tp.select_features(X, y, 3, method="relevance-only-test")
        assert got.selected_.tolist() == tp.MIM(k=3).fit(X, y).selected_.tolist()
    finally:
        del _REGISTRY["relevance_only_test"]
