"""The device x dtype matrix every test runs in.

Every test runs once per (device, dtype) lane: ``cpu`` and ``cuda`` (without a CUDA device the
CUDA lanes, and every test marked ``cuda``, are deselected), each in ``float64`` and ``float32``.
A lane is applied through :func:`tensorprob.config_context`, so everything a test builds with the defaults
(``device="auto"``, ``dtype=None``) runs on that device in that dtype; the ``device`` and
``dtype`` fixtures hand the lane to tests that pass them explicitly (or compare against it).

Choose lanes on the command line::

    pytest --device cuda            # the GPU lanes only
    pytest --device cpu --dtype float32

The fast lane, ``pytest -m "not slow" -n 2 --dtype float64``, leaves out the tests marked
``@pytest.mark.slow`` in their files (each takes seconds on two cores, or, like scikit-learn's
estimator checks, they are many) and runs one dtype lane; the default run keeps them all.
"""
from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    # Triton kernels run in Triton's interpreter on CPU tensors (tests/test_kernels.py); the
    # variable must be set before triton is first imported.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import tensorprob as tp

if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    # one torch thread per xdist worker: workers x threads above the cores slows torch many-fold
    torch.set_num_threads(1)

DEVICES = ("cpu", "cuda")
_CUDA_DESELECTED = pytest.StashKey[int]()
# Modules whose tests run in a subprocess that the lane cannot reach (the notebook kernels):
# they run once, in the first selected lane, instead of once per lane.
LANE_FREE_MODULES = frozenset({"test_notebooks.py", "test_distributed.py", "test_distributed_selectors.py"})
DTYPES = ("float64", "float32")


def pytest_addoption(parser):
    parser.addoption("--device", action="store", default="all", choices=("all",) + DEVICES,
                     help="device lanes to run: all (cpu and cuda; cuda deselected without a GPU), cpu or cuda")
    parser.addoption("--dtype", action="store", default="all", choices=("all",) + DTYPES,
                     help="dtype lanes to run: all, float64 or float32")


def _lanes(config):
    devs = DEVICES if config.getoption("--device") == "all" else (config.getoption("--device"),)
    dts = DTYPES if config.getoption("--dtype") == "all" else (config.getoption("--dtype"),)
    # without CUDA the cuda lanes are deselected (pytest_collection_modifyitems)
    return [pytest.param((d, t), id=f"{d}-{t}", marks=[pytest.mark.cuda] if d == "cuda" else [])
            for d in devs for t in dts]


def pytest_collection_modifyitems(config, items):
    """Without a CUDA device, deselect every test marked ``cuda`` (the cuda lanes, tests/test_gpu.py).

    The report then says "N deselected" and, once, why (:func:`pytest_terminal_summary`), instead of
    one "needs a CUDA device" skip line per test.
    """
    if torch.cuda.is_available():
        return
    gone = [item for item in items if item.get_closest_marker("cuda") is not None]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = [item for item in items if item.get_closest_marker("cuda") is None]
        config.stash[_CUDA_DESELECTED] = len(gone)
        if hasattr(config, "workeroutput"):  # an xdist worker: the controller prints the summary
            config.workeroutput["cuda_deselected"] = len(gone)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist's controller: take the count of a worker (every worker collects the same tests)."""
    n = getattr(node, "workeroutput", {}).get("cuda_deselected", 0)
    if n:
        node.config.stash[_CUDA_DESELECTED] = n


def pytest_report_header(config):
    if not torch.cuda.is_available():
        return "CUDA: no device here; the tests marked cuda (the cuda lanes) are deselected"
    return None


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    n = config.stash.get(_CUDA_DESELECTED, 0)
    if n:
        terminalreporter.write_line(f"{n} deselected (CUDA): no CUDA device on this machine")


def pytest_generate_tests(metafunc):
    if "_lane" in metafunc.fixturenames:
        lanes = _lanes(metafunc.config)
        if metafunc.definition.path.name in LANE_FREE_MODULES:
            lanes = lanes[:1]
        metafunc.parametrize("_lane", lanes, indirect=True)


@pytest.fixture(autouse=True)
def _lane(request):
    device, dtype = request.param
    with tp.config_context(device=device, dtype=dtype):
        yield device, dtype


@pytest.fixture
def device(_lane) -> str:
    """The lane's device, ``"cpu"`` or ``"cuda"``."""
    return _lane[0]


@pytest.fixture
def dtype(_lane) -> torch.dtype:
    """The lane's dtype as a ``torch.dtype``."""
    return getattr(torch, _lane[1])


def pytest_runtest_logreport(report):
    """With ``TENSORPROB_FAILURE_LOG`` set, append each failure's report to that file as it happens.

    For runs that may be cut off (a device machine's time limit): pytest prints tracebacks only
    at the end of a run. Under xdist the controller writes, the workers do not.
    """
    path = os.environ.get("TENSORPROB_FAILURE_LOG")
    if path and report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):
        with open(path, "a") as fh:
            fh.write(f"\n===== {report.nodeid} ({report.when})\n{report.longrepr}\n")


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(12345)


@pytest.fixture
def skfeature_dir():
    """The folder of the papers' scikit-feature ``.mat`` sets, or skip the test.

    The first existing of: the environment variable ``TENSORPROB_TEST_DATA``,
    ``<repository>/../shared/data/skfeature`` and ``/work/shared/data/skfeature``.
    """
    from pathlib import Path

    candidates = [os.environ.get("TENSORPROB_TEST_DATA", "").strip(),
                  Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "skfeature",
                  "/work/shared/data/skfeature"]
    for c in candidates:
        if c and Path(c).is_dir():
            return Path(c).resolve()
    pytest.skip("scikit-feature data folder not found: the scikit-feature .mat sets live in "
                "../shared/data/skfeature (see ../shared/data/README.md), or set TENSORPROB_TEST_DATA")
