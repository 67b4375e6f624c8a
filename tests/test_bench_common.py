"""The benchmark scaffold's clean-tree rule: results come from a commit, not from uncommitted edits."""
import argparse
import os
import subprocess

import pytest
from _helpers import load_benchmark_script


@pytest.fixture(scope="module")
def common():
    return load_benchmark_script("_common")


def _git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def test_uncommitted_edits_name_the_library_and_scripts_not_the_results(common, tmp_path, monkeypatch):
    monkeypatch.delenv("TENSORPROB_COMMIT", raising=False)
    for d in ("tensorprob", "benchmarks/results", "kernels"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "tensorprob" / "a.py").write_text("x = 1\n")
    (tmp_path / "benchmarks" / "run.py").write_text("y = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "c")
    here = str(tmp_path / "benchmarks" / "run.py")
    assert common.uncommitted_edits(here) == []
    (tmp_path / "benchmarks" / "results" / "r.csv").write_text("new result\n")  # outputs do not count
    (tmp_path / "README.md").write_text("docs\n")  # nor files outside the library and the scripts
    assert common.uncommitted_edits(here) == []
    (tmp_path / "tensorprob" / "a.py").write_text("x = 2\n")
    (tmp_path / "kernels" / "k.py").write_text("new\n")
    assert sorted(common.uncommitted_edits(here)) == ["kernels/k.py", "tensorprob/a.py"]
    assert "(with uncommitted edits to " in common.git_state(here)
    monkeypatch.setenv("TENSORPROB_COMMIT", "abc1234")  # a copy of the tree names its commit
    assert common.uncommitted_edits(here) == [] and common.git_state(here) == "abc1234"


@pytest.mark.parametrize("flags, refused", [({}, True), ({"quick": True}, False), ({"from_csv": True}, False),
                                            ({"allow_dirty": True}, False)])
def test_a_run_that_writes_results_refuses_a_dirty_tree(common, monkeypatch, flags, refused):
    monkeypatch.setattr(common, "uncommitted_edits", lambda path=None: ["tensorprob/a.py"])
    ap = argparse.ArgumentParser()
    args = argparse.Namespace(**{"quick": False, "from_csv": False, "allow_dirty": False, **flags})
    if refused:
        with pytest.raises(SystemExit):
            common.refuse_dirty(ap, args)
    else:
        common.refuse_dirty(ap, args)
    monkeypatch.setattr(common, "uncommitted_edits", lambda path=None: [])
    common.refuse_dirty(ap, argparse.Namespace(quick=False, from_csv=False, allow_dirty=False))  # clean: runs


def test_live_at_peak_replays_an_allocator_trace():
    """bench_gpu's memory breakdown: the peak of a trace and its live blocks by allocating line."""
    gpu = load_benchmark_script("bench_gpu")

    def alloc(addr, size, file, line):
        return {"action": "alloc", "addr": addr, "size": size,
                "frames": [{"filename": "/torch/cuda/x.py", "line": 9, "name": "inner"},
                           {"filename": f"/site/tensorprob/{file}", "line": line, "name": "f"}]}

    trace = [alloc(1, 100, "a.py", 1), alloc(2, 50, "b.py", 2), {"action": "free_completed", "addr": 1, "size": 100},
             alloc(3, 120, "a.py", 1), alloc(5, 7, "a.py", 1),
             {"action": "alloc", "addr": 4, "size": 10, "frames": [{"filename": "/torch/x.py", "line": 3, "name": "g"}]},
             {"action": "free_completed", "addr": 3, "size": 120}, alloc(6, 60, "c.py", 4)]
    peak, sites = gpu.live_at_peak(trace)
    assert peak == 50 + 120 + 7 + 10  # after the fourth block; block 6 comes once 120 bytes are free
    assert sites == [("a.py:1 f", 127), ("b.py:2 f", 50), ("/torch/x.py:3 g", 10)]
    assert gpu.live_at_peak([]) == (0, [])


def _sleeper():
    import time

    def run():
        time.sleep(0.002)
        return "done"
    return run


def test_warm_calls_fill_min_seconds(common, monkeypatch):
    """Warm calls: ``repeats`` of them, more until they add up to ``min_seconds``, at most MAX_WARM_CALLS."""
    import queue

    def warm(repeats, min_seconds):
        q = queue.Queue()
        common._measured_child(_sleeper, (), repeats, 10.0, q, min_seconds)
        msgs = [q.get_nowait() for _ in range(q.qsize())]
        assert [m[0] for m in msgs] == ["ready", "first", "ok"]
        assert msgs[-1][1] == ("done" if msgs[-1][3] else None)  # the last warm call's result
        return msgs[-1][3]

    assert len(warm(3, 0.0)) == 3
    w = warm(3, 0.05)
    assert len(w) > 3 and sum(w) >= 0.05 and sum(w[:-1]) < 0.05  # stops at the first call past it
    assert len(warm(0, 1.0)) == 0  # no warm calls asked for: none, whatever the time
    monkeypatch.setattr(common, "MAX_WARM_CALLS", 5)
    assert len(warm(2, 100.0)) == 5
