"""``distributed=True``: Gloo processes on localhost reproduce the single-process results."""
from __future__ import annotations

import numpy as np
import pytest
import torch.distributed as dist
from _dist_helpers import run_ranks

import tensorprob as tp

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")

REL = 1e-9


def _codes():
    return tp.datasets.make_latent_class(2400, [3, 4, 2, 5, 3, 4, 2], 3, random_state=1)


def _raw():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 900)
    X = np.column_stack([rng.normal(y, 1.0), rng.uniform(0, 5, 900), rng.normal(0, 1, 900)])
    X[rng.random(900) < 0.05, 1] = np.nan
    labels = np.array(["no", "yes", "maybe"])[y]
    return X, labels


def _fits(X, y, **kw):
    """What every test compares: the results of the public functions on (X, y)."""
    models = tp.fit_cpds(X, ranks=[2, 3], y=y, device="cpu", random_state=0, n_iter_max=60, **kw)
    return [(m.loglik_history_, m.weights.numpy(), [f.numpy() for f in m.factors]) for m in models]


def _job_split(rank, world, cuts):
    data = _codes()
    X, y = np.asarray(data.X), np.asarray(data.z) % 2
    Xr, yr = _raw()
    s = slice(cuts[rank], cuts[rank + 1])
    s_raw = slice(cuts[rank] * 900 // 2400, cuts[rank + 1] * 900 // 2400)
    out = {
        "codes": _fits(X[s], y[s], distributed=True),
        "codes_random": _fits(X[s], None, init="random", distributed=True),
        "weights": _fits(X[s], None, sample_weight=np.arange(2400)[s] % 5, distributed=True),
    }
    for strategy in ("uniform", "quantile", "mdl"):
        enc = tp.encode(Xr[s_raw], yr[s_raw], discretizer=strategy, n_bins=4, distributed=True)
        out[f"encode_{strategy}"] = (enc.codes, enc.cardinalities, [e.tolist() for e in enc.encoder.discretizer_.bin_edges_])
    out["raw_fit"] = _fits(Xr[s_raw], yr[s_raw], discretizer="quantile", distributed=True)
    sel = tp.select_rank(X[s], y[s], ranks=[2, 3], cv=3, device="cpu", random_state=0, n_iter_max=30, distributed=True)
    out["select"] = (sel.best_rank, sel.errors, sel.train_loglik)
    return out


def _reference():
    data = _codes()
    X, y = np.asarray(data.X), np.asarray(data.z) % 2
    Xr, yr = _raw()
    ref = {"codes": _fits(X, y), "codes_random": _fits(X, None, init="random"),
           "weights": _fits(X, None, sample_weight=np.arange(2400) % 5)}
    for strategy in ("uniform", "quantile", "mdl"):
        enc = tp.encode(Xr, yr, discretizer=strategy, n_bins=4)
        ref[f"encode_{strategy}"] = (enc.codes, enc.cardinalities, [e.tolist() for e in enc.encoder.discretizer_.bin_edges_])
    ref["raw_fit"] = _fits(Xr, yr, discretizer="quantile")
    sel = tp.select_rank(X, y, ranks=[2, 3], cv=3, device="cpu", random_state=0, n_iter_max=30)
    ref["select"] = (sel.best_rank, sel.errors, sel.train_loglik)
    return ref


def _assert_fits_equal(got, ref):
    assert len(got) == len(ref)
    for (h, w, f), (h0, w0, f0) in zip(got, ref):
        assert h.shape == h0.shape  # same number of iterations: the same convergence decisions
        np.testing.assert_allclose(h, h0, rtol=REL, atol=0)
        np.testing.assert_allclose(w, w0, rtol=0, atol=REL)
        for a, b in zip(f, f0):
            np.testing.assert_allclose(a, b, rtol=0, atol=REL)


def _check_against_reference(results, cuts, ref):
    for rank, (status, out) in enumerate(results):
        assert status == "ok", out
        for key in ("codes", "codes_random", "weights", "raw_fit"):
            _assert_fits_equal(out[key], ref[key])
        for strategy in ("uniform", "quantile", "mdl"):
            codes, cards, edges = out[f"encode_{strategy}"]
            codes0, cards0, edges0 = ref[f"encode_{strategy}"]
            lo, hi = cuts[rank] * 900 // 2400, cuts[rank + 1] * 900 // 2400
            np.testing.assert_array_equal(codes, codes0[lo:hi])  # every rank codes its rows as one process does
            np.testing.assert_array_equal(cards, cards0)
            assert edges == edges0
        best, errors, ll = out["select"]
        assert best == ref["select"][0]
        np.testing.assert_allclose(errors, ref["select"][1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(ll, ref["select"][2], rtol=REL)


@pytest.fixture(scope="module")
def reference():
    return _reference()


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_two_ranks_uneven_split_match_single_process(reference):
    """Codes, raw data (three discretizers), sample weights, both inits and select_rank on an uneven split."""
    cuts = [0, 700, 2400]
    _check_against_reference(run_ranks(_job_split, 2, (cuts,)), cuts, reference)


def _job_zero(rank, world):
    data = _codes()
    X, y = np.asarray(data.X), np.asarray(data.z) % 2
    s = slice(0, 0) if rank == 0 else slice(0, None)  # rank 0 holds no rows
    tp_obj = np.array([["a", 1], ["b", 2], [None, 3], ["c", 1]], dtype=object)
    enc = tp.encode(tp_obj[:0] if rank == 1 else tp_obj, distributed=True)
    return _fits(X[s], y[s], distributed=True), (enc.codes, enc.cardinalities)


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_rank_with_zero_rows(reference):
    results = run_ranks(_job_zero, 2)
    for status, (fits, (_, cards)) in results:
        assert status == "ok"
        _assert_fits_equal(fits, reference["codes"])
        np.testing.assert_array_equal(cards, [3, 3])
    assert results[1][1][1][0].shape == (0, 2)  # the empty rank's codes
    np.testing.assert_array_equal(results[0][1][1][0], [[0, 0], [1, 1], [-1, 2], [2, 0]])


def _job_faults(rank, world):
    data = _codes()
    X = np.asarray(data.X)
    caught = {}
    cases = {
        "columns": lambda: tp.fit_cpd(X[:, : 6 if rank == 1 else 7], rank=2, distributed=True),
        "dtype": lambda: tp.fit_cpd(X.astype(float) if rank == 1 else X, rank=2, distributed=True),
        "weights": lambda: tp.fit_cpd(X, rank=2, sample_weight=-np.ones(len(X)) if rank == 1 else None,
                                      distributed=True),
        "encode": lambda: tp.encode(X[:, :3] if rank == 1 else X, distributed=True),
    }
    for name, call in cases.items():
        try:
            call()
            caught[name] = None
        except Exception as exc:  # noqa: BLE001 - the test reads them
            caught[name] = (type(exc).__name__, str(exc))
    dist.barrier()
    return caught


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_faults_raise_on_every_rank_naming_the_rank():
    results = run_ranks(_job_faults, 2)
    for status, caught in results:
        assert status == "ok", caught
        for name, err in caught.items():
            assert err is not None and err[0] == "ValueError", (name, err)
            assert "rank 1" in err[1], (name, err)
        assert "negative" in caught["weights"][1]


def test_distributed_needs_a_process_group():
    with pytest.raises(ValueError, match="init_process_group"):
        tp.fit_cpd(np.zeros((4, 2), dtype=int), rank=1, distributed=True)
    with pytest.raises(TypeError, match="distributed"):
        tp.fit_cpd(np.zeros((4, 2), dtype=int), rank=1, distributed="yes")


@pytest.mark.slow
def test_four_ranks_match_single_process(reference):
    cuts = [0, 300, 301, 1500, 2400]
    _check_against_reference(run_ranks(_job_split, 4, (cuts,), timeout=600), cuts, reference)


def _float32_fits(rows):
    data = _codes()
    X, y = np.asarray(data.X), np.asarray(data.z) % 2
    models = tp.fit_cpds(X[rows], ranks=[2, 3], y=y[rows], device="cpu", dtype="float32", random_state=0,
                         n_iter_max=40, tol=0.0, distributed=rows != slice(None))
    return [(m.loglik_history_, m.weights.numpy(), [f.numpy() for f in m.factors]) for m in models]


def _job_float32(rank, world, cuts):
    return _float32_fits(slice(cuts[rank], cuts[rank + 1]))


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_two_ranks_float32_match_single_process_float32():
    # float32 factors, float64 statistics: the per-rank partial sums change the float64 rounding
    # only. With tol=0 a model stops at the first iteration that leaves its log-likelihood exactly
    # unchanged (a float32 fixed point), which that rounding can move by an iteration or two:
    # the histories agree where both ran and the longer one only repeats its fixed point
    ref = _float32_fits(slice(None))
    eps = float(np.finfo(np.float32).eps)
    cuts = [0, 777, 2400]
    for status, got in run_ranks(_job_float32, 2, (cuts,)):
        assert status == "ok", got
        for (h, w, f), (h0, w0, f0) in zip(got, ref):
            assert h.dtype == h0.dtype and f[0].dtype == np.float32
            n = min(h.size, h0.size)
            np.testing.assert_allclose(h[:n], h0[:n], rtol=256 * eps, atol=0)
            longer = h if h.size > n else h0
            np.testing.assert_allclose(longer[n:], longer[n - 1], rtol=256 * eps, atol=0)
            np.testing.assert_allclose(w, w0, rtol=0, atol=256 * eps)
            for a, b in zip(f, f0):
                np.testing.assert_allclose(a, b, rtol=0, atol=256 * eps)
