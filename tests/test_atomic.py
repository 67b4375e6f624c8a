"""Atomic writes (issue 42 item 1): an interrupted write leaves the old file or the complete new one."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import tensorprob as tp
from tensorprob._files import atomic_write

# child: saves a ~25 MB model over the same path again and again, alternating two models whose
# first log weight tells them apart; it says "ready" once the first save is complete
_SAVER = """
import sys, torch, tensorprob
path = sys.argv[1]
V, I, F = 20, 40, 4000
lf = [torch.log(torch.full((I, F), 1.0 / I, dtype=torch.float64))] * V
models = []
for first in (0.25, 0.75):
    w = torch.full((F,), (1 - first) / (F - 1), dtype=torch.float64)
    w[0] = first
    models.append(tensorprob.CPDModel.from_log_params(torch.log(w), lf))
models[0].save(path)
print("ready", flush=True)
i = 1
while True:
    models[i % 2].save(path)
    i += 1
"""


def _first_weight(path) -> float:
    return round(float(tp.CPDModel.load(path).weights[0]), 6)


@pytest.mark.slow  # a child process writing 25 MB files (seconds)
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_save_leaves_the_old_or_the_new_model(tmp_path, sig, device, dtype):
    if (device, dtype) != ("cpu", torch.float64):
        pytest.skip("a CPU child process: the cpu-float64 lane runs it")
    path = tmp_path / "model.pt"
    rng = np.random.default_rng(0)
    for _ in range(3):
        child = subprocess.Popen([sys.executable, "-c", _SAVER, str(path)], stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "OMP_NUM_THREADS": "1"},
                                 # SIGINT as a terminal has it (a background run's children ignore it)
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            assert child.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.05, 0.4))  # lands inside one of the saves (they take most of the loop)
            child.send_signal(sig)
            child.wait(timeout=60)
        finally:
            child.kill()
            child.stdout.close()
        assert _first_weight(path) in (0.25, 0.75)  # loads: the old model or the new one, whole
        if sig == signal.SIGINT:  # an interrupted save removes its temporary file
            assert sorted(os.listdir(tmp_path)) == ["model.pt"]


def test_interrupted_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(path, "w") as fh:
            fh.write("partial")
            raise KeyboardInterrupt
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["out.csv"]
    with atomic_write(path, "w") as fh:
        fh.write("new\n")
    assert path.read_text() == "new\n" and os.listdir(tmp_path) == ["out.csv"]
    assert os.stat(path).st_mode & 0o777 == 0o640  # a replaced file keeps its permissions


def test_new_file_gets_the_umask_permissions_and_links_stay_links(tmp_path):
    old = os.umask(0o027)
    try:
        with atomic_write(tmp_path / "a.bin") as fh:
            fh.write(b"x")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "a.bin").st_mode & 0o777 == 0o640
    os.symlink(tmp_path / "a.bin", tmp_path / "link.bin")
    with atomic_write(tmp_path / "link.bin") as fh:
        fh.write(b"y")
    assert os.path.islink(tmp_path / "link.bin") and (tmp_path / "a.bin").read_bytes() == b"y"


def test_bad_mode_is_refused(tmp_path):
    with pytest.raises(ValueError, match="mode must be"):
        with atomic_write(tmp_path / "x", "a"):
            pass


def test_interrupted_model_save_keeps_the_old_model(tmp_path, monkeypatch):
    m = tp.CPDModel(torch.tensor([0.25, 0.75], dtype=torch.float64),
                    [torch.tensor([[0.5, 0.5], [0.5, 0.5]], dtype=torch.float64)])
    path = tmp_path / "m.pt"
    m.save(path)
    before = path.read_bytes()

    def interrupted(obj, f, *a, **k):
        f.write(b"PK partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        m.save(path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["m.pt"]


def test_benchmark_csv_and_report_writes_are_atomic(tmp_path):
    from _helpers import load_benchmark_script

    common = load_benchmark_script("_common")
    path = tmp_path / "r.csv"
    common.write_csv(str(path), [{"a": 1}])
    before = path.read_text()

    class Boom:
        def __str__(self):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        common.write_csv(str(path), [{"a": 2}, {"a": Boom()}])
    assert path.read_text() == before and sorted(os.listdir(tmp_path)) == ["r.csv"]


def test_failed_open_leaves_no_temporary_file(tmp_path):
    # the file object cannot be made (an unknown argument): the temporary file and its descriptor go
    path = tmp_path / "out.txt"
    n_fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with pytest.raises(TypeError):
        with atomic_write(path, "w", no_such_argument=1):
            pass
    assert os.listdir(tmp_path) == []
    if n_fds is not None:
        assert len(os.listdir("/proc/self/fd")) == n_fds
