"""Selectors with ``distributed=True``: Gloo processes on localhost give the single-process selection.

Each spawn runs many selectors on this rank's rows; the test compares every result with the
fit on all the rows concatenated (rank order): the same picks, scores to 1e-12 relative.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch.distributed as dist
from _dist_helpers import run_ranks

import tensorprob as tp

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")

REL = 1e-12
M = 600


def _data():
    """Raw floats with missing values, the same without them, integer codes, string labels, weights."""
    rng = np.random.default_rng(7)
    Z = rng.integers(0, 3, (M, 7))
    y = (Z[:, 1] + Z[:, 4] + (rng.random(M) < 0.2)) % 3
    labels = np.array(["low", "mid", "high"])[y]
    X = Z + rng.normal(0, 0.3, Z.shape)
    X[:, 6] = rng.normal(y, 1.0)
    Xnan = X.copy()
    Xnan[rng.random(X.shape) < 0.04] = np.nan
    w = rng.uniform(0.0, 2.0, M)
    W = rng.poisson(1.0, (M, 3)).astype(float)
    return X, Xnan, Z, labels, w, W


def _cases():
    """(name, estimator factory, which X, fit options keyed by the per-row arrays they slice)."""
    return [
        ("jmi", lambda d: tp.JMI(k=4, distributed=d), "nan", {}),
        ("jmi_quantile", lambda d: tp.JMI(k=4, discretizer="quantile", distributed=d), "nan", {}),
        ("jmi_mdl", lambda d: tp.JMI(k=4, discretizer="mdl", distributed=d), "nan", {}),
        ("mrmr", lambda d: tp.MRMR(k=4, distributed=d), "nan", {}),
        ("cmim_lazy", lambda d: tp.CMIM(k=5, lazy=True, distributed=d), "nan", {}),
        ("cmim_eager", lambda d: tp.CMIM(k=5, lazy=False, distributed=d), "nan", {}),
        ("cmim_fleuret_lazy", lambda d: tp.CMIM(k=5, variant="fleuret", lazy=True, distributed=d), "raw", {}),
        ("rmrmr", lambda d: tp.RMRMR(k=4, distributed=d), "nan", {}),
        ("spec_cmi", lambda d: tp.SPECCMI(k=4, distributed=d), "nan", {}),
        ("pda_amd", lambda d: tp.PDA(k=4, distribution="amd", framework="mi", distributed=d), "raw", {}),
        ("pda_gmd", lambda d: tp.PDA(k=4, distribution="gmd", framework="mi", k1=2, distributed=d), "raw", {}),
        ("pda_vi", lambda d: tp.PDA(k=4, distribution="amd", framework="vi", distributed=d), "raw", {}),
        ("vmi", lambda d: tp.VMI(k=4, distributed=d), "raw", {}),
        ("vmi_naive", lambda d: tp.VMI(k=3, q="naive", distributed=d), "codes", {}),
        ("trace_ratio", lambda d: tp.TraceRatio(k=3, distributed=d), "raw", {}),
        ("spec_phi2", lambda d: tp.SPEC(k=3, distributed=d), "raw", {}),
        ("spec_phi3", lambda d: tp.SPEC(k=3, mode="phi3", distributed=d), "raw", {}),
        ("jmi_weighted", lambda d: tp.JMI(k=4, distributed=d), "nan", {"sample_weight": "w"}),
        ("cmim_weighted", lambda d: tp.CMIM(k=4, lazy=True, distributed=d), "nan", {"sample_weight": "w"}),
        ("mrmr_resamples", lambda d: tp.MRMR(k=4, distributed=d), "nan", {"resamples": "W"}),
        ("jmi_codes_resamples", lambda d: tp.JMI(k=4, distributed=d), "codes", {"resamples": "W"}),
        ("pda_weighted", lambda d: tp.PDA(k=3, distributed=d), "codes", {"sample_weight": "wi"}),
        ("pda_fractional", lambda d: tp.PDA(k=3, k1=2, distributed=d), "codes", {"sample_weight": "w"}),
        ("pda_resamples", lambda d: tp.PDA(k=3, distributed=d), "codes", {"resamples": "W"}),
        ("pda_vi_resamples", lambda d: tp.PDA(k=3, framework="vi", distributed=d), "codes", {"resamples": "W"}),
        ("vmi_naive_resamples", lambda d: tp.VMI(k=3, q="naive", distributed=d), "codes", {"resamples": "W"}),
        ("jmi_ties", lambda d: tp.JMI(k="all", distributed=d), "ties", {}),
        ("mim_ties", lambda d: tp.MIM(k="all", distributed=d), "ties", {}),
        ("cmim_lazy_wide", lambda d: tp.CMIM(k=12, lazy=True, distributed=d), "wide", {}),
        ("cmim_eager_wide", lambda d: tp.CMIM(k=12, lazy=False, distributed=d), "wide", {}),
    ]


def _run(rows, distributed: bool, names=None, dtype="float64") -> dict:
    with tp.config_context(device="cpu", dtype=dtype):  # the spawned ranks' defaults, whatever the lane
        return _fits(rows, distributed, names)


def _fits(rows, distributed: bool, names) -> dict:
    X, Xnan, Z, labels, w, W = _data()
    noise = np.random.default_rng(11).integers(0, 4, (M, 23))
    arrays = {"raw": X, "nan": Xnan, "codes": Z, "w": w, "W": W, "wi": np.round(w * 2),
              "ties": np.column_stack([Z, Z[:, 4], Z[:, 1], Z[:, 4]]),  # exact copies: tied scores
              "wide": np.column_stack([Z, noise])}
    out = {}
    for name, make, which, opts in _cases():
        if names is not None and name not in names:
            continue
        kw = {key: arrays[v][rows] for key, v in opts.items()}
        sel = make(distributed).fit(arrays[which][rows], labels[rows], **kw)
        out[name] = (np.asarray(sel.selected_), np.asarray(sel.scores_), list(sel.classes_))
    sf = tp.select_features(Xnan[rows], labels[rows], 3, method="icap", distributed=distributed)
    out["select_features_icap"] = (sf.selected_, sf.scores_, list(sf.classes_))
    return out


def _job(rank, world, cuts, names, dtype="float64"):
    return _run(slice(cuts[rank], cuts[rank + 1]), True, names, dtype)


def _check(results, reference, rel=REL):
    for status, got in results:
        assert status == "ok", got
        assert got.keys() == reference.keys()
        for name, (sel, val, classes) in reference.items():
            g_sel, g_val, g_classes = got[name]
            assert g_classes == classes, name
            np.testing.assert_array_equal(g_sel, sel, err_msg=name)
            np.testing.assert_allclose(g_val, val, rtol=rel, atol=1e-14, err_msg=name)
    # every rank holds the same result, bit for bit
    first = results[0][1]
    for _, got in results[1:]:
        for name in first:
            np.testing.assert_array_equal(got[name][1], first[name][1], err_msg=name)


@pytest.fixture(scope="module")
def reference():
    return _run(slice(None), False)


@pytest.mark.slow  # spawns Gloo processes (about 6 s): full suite only
def test_two_ranks_uneven_split_match_single_process(reference):
    _check(run_ranks(_job, 2, ([0, 233, M], None)), reference)


FLOAT32_CASES = {"jmi", "jmi_mdl", "mrmr", "cmim_lazy", "cmim_eager", "rmrmr", "pda_amd", "pda_vi", "vmi", "vmi_naive",
                 "trace_ratio", "spec_phi2", "jmi_weighted", "mrmr_resamples", "jmi_ties"}


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_two_ranks_float32_match_single_process_float32():
    # the counts are exact integers (or float64 sums of weights) in both runs, and every
    # all-reduce is float64: the float32 quantities agree to a few float32 rounding errors
    ref = _run(slice(None), False, FLOAT32_CASES, "float32")
    eps = float(np.finfo(np.float32).eps)
    _check(run_ranks(_job, 2, ([0, 233, M], FLOAT32_CASES, "float32")), ref, rel=64 * eps)


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_rank_with_zero_rows(reference):
    names = {"jmi", "cmim_lazy", "rmrmr", "pda_amd", "vmi", "trace_ratio", "spec_phi3", "jmi_codes_resamples",
             "pda_resamples", "vmi_naive_resamples"}
    ref = {k: v for k, v in reference.items() if k in names or k == "select_features_icap"}
    _check(run_ranks(_job, 2, ([0, 0, M], names)), ref)


def _gsm(rows, distributed):
    Z, labels = _data()[2:4]
    out = []
    for rank in (3, None):  # None: the rank chosen by the (distributed) validation first
        sel = tp.GSMCPD(k=3, rank=rank, ranks=(2, 3), cv=3, estimator="exact", n_iter_max=60, tol=1e-4,
                        random_state=0, device="cpu", dtype="float64",
                        distributed=distributed).fit(Z[rows][:, :5], labels[rows])
        out.append((sel.selected_, sel.scores_, sel.rank_))
    return out


def _job_gsm(rank, world, cuts):
    return _gsm(slice(cuts[rank], cuts[rank + 1]), True)


@pytest.mark.slow
def test_gsm_cpd_matches_single_process():
    ref = _gsm(slice(None), False)
    for status, got in run_ranks(_job_gsm, 2, ([0, 371, M],)):
        assert status == "ok", got
        for (sel, val, rank), (sel0, val0, rank0) in zip(got, ref):
            assert rank == rank0
            np.testing.assert_array_equal(sel, sel0)
            # the scores read a CPD fitted by an EM whose statistics are summed in another order
            np.testing.assert_allclose(val, val0, rtol=1e-9, atol=1e-12)


def _job_faults(rank, world):
    X, Xnan, Z, labels = _data()[:4]
    rows = slice(0, 300) if rank == 0 else slice(300, M)
    out = {}
    n_cols = 7 if rank == 0 else 6  # rank 1 has one feature fewer
    for name, est, data in (("jmi", tp.JMI(k=2, distributed=True), Xnan), ("pda", tp.PDA(k=2, distributed=True), Z),
                            ("trace_ratio", tp.TraceRatio(k=2, distributed=True), X)):
        try:
            est.fit(data[rows][:, :n_cols], labels[rows])
            out[name] = None
        except Exception as exc:  # noqa: BLE001 - the test reads it
            out[name] = (type(exc).__name__, str(exc))
    try:  # a rank with missing values makes PDA (complete data only) raise on every rank
        tp.PDA(k=2, distributed=True).fit(Xnan[rows] if rank == 1 else X[rows], labels[rows])
        out["pda_nan"] = None
    except Exception as exc:  # noqa: BLE001
        out["pda_nan"] = (type(exc).__name__, str(exc))
    try:  # one label class only on each rank is fine: the classes are those of all ranks
        sel = tp.MIM(k=2, distributed=True).fit(Z[rows], np.full(len(Z[rows]), "a" if rank == 0 else "b"))
        out["classes"] = list(sel.classes_)
    except Exception as exc:  # noqa: BLE001
        out["classes"] = (type(exc).__name__, str(exc))
    return out


@pytest.mark.slow  # spawns Gloo processes (seconds): full suite only
def test_faults_raise_on_every_rank_naming_the_rank():
    results = run_ranks(_job_faults, 2)
    for status, out in results:
        assert status == "ok", out
        for name in ("jmi", "pda", "trace_ratio"):
            kind, msg = out[name]
            assert kind == "ValueError", (name, msg)
            assert "number of features" in msg and "rank 1" in msg, (name, msg)
        kind, msg = out["pda_nan"]
        assert kind == "ValueError" and "rank 1" in msg and "complete data" in msg, msg
        assert out["classes"] == ["a", "b"]


@pytest.mark.parametrize("cls", [tp.HOFS, tp.GMI, tp.PairwiseDp])
def test_mst_and_ica_selectors_refuse_distributed(cls):
    X, _, _, labels, _, _ = _data()
    with pytest.raises(ValueError, match="does not support distributed=True"):
        cls(k=2, distributed=True).fit(X[:100], labels[:100])


def test_distributed_needs_a_process_group():
    X, _, _, labels, _, _ = _data()
    with pytest.raises(ValueError, match="init_process_group"):
        tp.JMI(k=2, distributed=True).fit(X, labels)
    with pytest.raises(ValueError, match="init_process_group"):
        tp.TraceRatio(k=2, distributed=True).fit(X, labels)


def test_every_selector_takes_distributed():
    for method in tp.available_methods():
        cls = tp.selection.get_selector(method)
        assert cls().get_params()["distributed"] is False, method
        assert "distributed" in cls._parameter_constraints, method
        assert "distributed : bool, default=False" in cls.__doc__, method
