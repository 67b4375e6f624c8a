"""Section 6.2 of ``benchmarks/repro_hofs_tables.py`` (paper 002's heterogeneous model): the partition
labels behind the adjusted Rand index, the checks of the paper's statements on one small draw, and the
order of Table 1's columns."""
from __future__ import annotations

import pytest
from _helpers import load_benchmark_script


@pytest.fixture(scope="module")
def script():
    """The benchmark script as a module."""
    return load_benchmark_script("repro_hofs_tables")


def test_partition_labels(script):
    assert script.partition_labels([[2, 3], [5]], 6) == [2, 0, 0, 3, 1, 4]  # F1, F4, F6 alone
    paper = script.partition_labels(script.HET_PAPER_SUBSETS, 20)
    assert len(set(paper)) == len(script.HET_PAPER_SUBSETS)


def test_table1_order(script):
    assert script._fsc("73/325/7") == "325/73/7"


def test_heterogeneous_experiment_rows(script):
    rows = script.heterogeneous_experiment(1, n_samples=200)
    by = {r["method"]: r for r in rows}
    assert set(by) == {"HOFS", "HOFS (plug-in conditional)", "VMI-naive", "VMI-pairwise", "MIM", "JMI"}
    for r in rows:
        assert sorted(r["selected"].split(), key=lambda f: int(f[1:])) == [f"F{i}" for i in range(1, 21)]
    assert 0 <= by["HOFS"]["adjusted_rand_vs_paper"] <= 1 and "subsets_equal_paper" in by["HOFS"]
    assert "adjusted_rand_vs_paper" not in by["MIM"]


def test_hofs_variants_skip_what_the_library_lacks(script, capsys):
    import tensorprob as tp

    out = script.hofs_variants(["corrected", "plug-in conditional", "printed eq. 24"])
    assert out["plug-in conditional"] == {"conditional": "plugin"}
    if "formula" in tp.HOFS().get_params():
        assert out["printed eq. 24"] == {"formula": "printed"}
    else:
        assert "printed eq. 24" not in out and "skipped" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown HOFS variant"):
        script.hofs_variants(["eq. 25"])


def test_paper_best_text_counts_the_papers_table(script):
    text = script._paper_best_text()
    assert "lowest error on Lung, Splice, Semeion, Musk2," in text
    assert "tied lowest on Spambase, Promoter" in text and "behind on Waveform, Optdigits, Madelon" in text
