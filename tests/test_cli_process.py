"""The command line as a process (issue 42 item 7, issue 43 item 6): Ctrl-C, a closed pipe, torchrun, progress.

Ctrl-C prints one line and exits with status 130, leaving no partial file; ``select ... | head``
ends quietly; a failing rank under torchrun prints one line naming its rank; the EM's progress bar
ends at the iteration where the fit stopped.
"""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import tensorprob as tp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(tp.__file__)))
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}


@pytest.fixture
def cpu_lane(device, dtype):
    if (device, dtype) != ("cpu", torch.float64):
        pytest.skip("a CPU child process: the cpu-float64 lane runs it")


def _sigint_default():
    # a run started in the background of a non-interactive shell ignores SIGINT, and children
    # inherit that: the child gets the default back, as a terminal's Ctrl-C would find it
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _tensorprob(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "tensorprob", *args], env=ENV, text=True,
                            preexec_fn=_sigint_default, **kw)


def _long_fit_data(tmp_path):
    # a fit that runs until it is interrupted: --tol 0 and many iterations
    X = tp.datasets.make_latent_class(20000, [4] * 12, 4, random_state=0).X
    path = tmp_path / "d.csv"
    np.savetxt(path, X, fmt="%d", delimiter=",", header=",".join(f"c{j}" for j in range(12)), comments="")
    return path


def _wait_for(stream, text: str, timeout: float = 120) -> str:
    """Read ``stream`` one character at a time until ``text`` appears (or the timeout passes)."""
    seen, t0 = "", time.monotonic()
    while text not in seen and time.monotonic() - t0 < timeout:
        ch = stream.read(1)
        if not ch:
            break
        seen += ch
    return seen


@pytest.mark.slow  # child processes (seconds)
def test_ctrl_c_prints_one_line_exits_130_and_writes_no_partial_file(tmp_path, cpu_lane):
    data = _long_fit_data(tmp_path)
    old = tmp_path / "old.pt"
    tp.CPDModel(torch.tensor([1.0], dtype=torch.float64), [torch.ones(2, 1, dtype=torch.float64) / 2]).save(old)
    before = old.read_bytes()
    for target in ("new.pt", "old.pt"):  # a new file is not created, an existing one is left as it was
        child = _tensorprob("fit-cpd", str(data), "--rank", "8", "--max-iter", "100000", "--tol", "0", "--progress",
                            "--save", str(tmp_path / target), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert "EM (4 models)" in _wait_for(child.stderr, "EM (4 models)")  # the fit runs
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
        assert child.returncode == 130, err
        last = [seg for seg in err.replace("\r", "\n").splitlines() if seg.strip()][-1]
        assert last == "tensorprob: interrupted"
        assert "Traceback" not in err and "KeyboardInterrupt" not in err and out == ""
        assert not (tmp_path / "new.pt").exists() and old.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "old.pt"]  # no temporary file either


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly(cpu_lane):
    child = _tensorprob("select", "wine", "-k", "all", "--method", "mim", "--no-progress", stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
    child.stdout.close()  # `| head` that has read what it wanted: every write of the child meets a closed pipe
    err = child.stderr.read()
    child.wait(timeout=120)
    child.stderr.close()
    assert err == "" and child.returncode == 141, err


@pytest.mark.slow
def test_a_failing_rank_under_torchrun_prints_one_line_naming_it(tmp_path, cpu_lane):
    from _dist_helpers import free_port

    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          f"--master_port={free_port()}", "-m", "tensorprob", "fit-cpd", "wine", "--distributed"],
                         env=ENV, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    ours = [ln for ln in run.stderr.splitlines() if ln.startswith("tensorprob:")]
    assert 1 <= len(ours) <= 2, run.stderr  # one per rank (the launcher may stop the other rank first)
    for ln in ours:
        assert ln.startswith(("tensorprob: error (rank 0 of 2): ", "tensorprob: error (rank 1 of 2): "))
        assert "--distributed reads a Parquet file" in ln
    assert "tensorprob/" not in run.stderr.replace(str(ROOT), "")  # no traceback through the library


def test_progress_bar_ends_where_the_fit_stopped(capsys):
    pytest.importorskip("tqdm")
    X = tp.datasets.make_latent_class(500, [3, 3, 3], 2, random_state=0).X
    with tp.config_context(progress=True):
        m = tp.fit_cpd(X, rank=2, n_restarts=1, n_iter_max=500, device="cpu", random_state=0)
    assert m.converged_ and m.n_iter_ < 500
    err = capsys.readouterr().err
    assert f"{m.n_iter_}/{m.n_iter_}" in err  # was n_iter_/500 (8 % for a fit that converged at 40)
