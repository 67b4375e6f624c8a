"""The logic of ``benchmarks/repro_gsm_fig4.py`` that decides what runs: the rank grid's growth, the
chosen rank, per-data-set split counts, COIL-20's absence, and the lead table's arithmetic."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from _helpers import load_benchmark_script


@pytest.fixture(scope="module")
def script():
    """The benchmark script as a module."""
    return load_benchmark_script("repro_gsm_fig4")


def test_next_rank_grows_by_half_to_a_multiple_of_ten(script):
    assert [script.next_rank(r) for r in (30, 40, 80, 120, 180)] == [50, 60, 120, 180, 270]


def test_grid_grows_only_while_the_error_falls_at_its_top(script):
    ranks = [5, 10, 20, 40, 80]
    assert script.grow_grid(ranks, [0.4, 0.3, 0.2, 0.1, 0.05], 180) == 120  # still falling at 80
    assert script.grow_grid(ranks, [0.4, 0.3, 0.2, 0.1, 0.12], 180) is None  # turned up after 40
    assert script.grow_grid(ranks, [0.4, 0.3, 0.2, 0.1, 0.1], 180) is None  # flat: the smaller rank wins
    assert script.grow_grid(ranks + [120], [0.4, 0.3, 0.2, 0.1, 0.05, 0.04], 180) == 180
    assert script.grow_grid(ranks + [120, 180], [0.4, 0.3, 0.2, 0.1, 0.05, 0.04, 0.03], 180) is None  # cap
    assert script.grow_grid(ranks, [0.4, 0.3, 0.2, 0.1, 0.05], 0) is None  # no growth
    # order of the ranks does not matter (an appended rank may come from a later call)
    assert script.grow_grid([80, 5, 40], [0.05, 0.4, 0.1], 180) == 120


def test_grid_patience_looks_past_an_upturn(script):
    # COIL-20 split 0 of the cvall run: the minimum at 180, a rise at 270
    ranks = [5, 10, 15, 20, 30, 40, 60, 80, 120, 180, 270]
    errors = [0.77, 0.58, 0.44, 0.35, 0.30, 0.24, 0.20, 0.18, 0.135, 0.0962, 0.0982]
    assert script.grow_grid(ranks, errors, 930) is None  # patience 0: today's rule
    assert script.grow_grid(ranks, errors, 930, patience=1) == 410  # one rank past the minimum: go on
    assert script.grow_grid(ranks + [410], errors + [0.099], 930, patience=1) is None  # two past it: done
    assert script.grow_grid(ranks + [410], errors + [0.099], 930, patience=2) == 620
    assert script.grow_grid(ranks + [410], errors + [0.05], 930, patience=1) == 620  # fell again: a new minimum
    assert script.grow_grid(ranks, errors, 270, patience=1) is None  # still capped
    # a flat error counts as a rise (ties go to the smaller rank)
    assert script.grow_grid([10, 20, 30], [0.2, 0.1, 0.1], 180, patience=1) == 50
    assert script.grow_grid([10, 20, 30, 50], [0.2, 0.1, 0.1, 0.1], 180, patience=1) is None
    # while the error falls patience changes nothing
    falling = [0.4, 0.3, 0.2, 0.1, 0.05]
    assert script.grow_grid(ranks[:5], falling, 180, patience=1) == script.grow_grid(ranks[:5], falling, 180)


def test_parse_redo(script):
    assert script.parse_redo("coil20=0,1") == {("coil20", 0), ("coil20", 1)}
    assert script.parse_redo("coil20=0,1;mnist=3") == {("coil20", 0), ("coil20", 1), ("mnist", 3)}
    assert script.parse_redo("") == set()


def test_chosen_rank_flags_the_top_of_the_grid(script):
    assert script.chosen_rank([5, 10, 20], [0.3, 0.1, 0.2]) == (10, False)
    assert script.chosen_rank([5, 10, 20], [0.3, 0.2, 0.1]) == (20, True)
    assert script.chosen_rank([5, 10, 20], [0.3, 0.1, 0.1]) == (10, False)


def test_repeats_by_data_set(script):
    args = SimpleNamespace(repeats=10, repeats_by="mnist=5, coil20=3")
    assert [script.repeats_for(args, n) for n in ("chess", "mnist", "coil20")] == [10, 5, 3]


def test_coil20_absent_is_skipped_with_a_message(script, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TENSORPROB_DATA", str(tmp_path))
    assert script.load("coil20") is None
    assert "coil20: skipped" in capsys.readouterr().out


def test_paper_k_is_30_on_chess(script):
    assert script.PAPER_K == {"chess": 30, "mnist": 50, "coil20": 50}


def test_lead_rows(script):
    rows = []
    for split in range(2):
        for k in range(1, 11):
            for m, acc in ((script.GSM, 0.8), ("MRMR", 0.7), ("JMIM", 0.75 if k > 1 else 0.9)):
                rows.append({"dataset": "mnist", "input": "codes", "method": m, "split": split, "k": k,
                             "accuracy": acc})
    out = script.lead_rows(pd.DataFrame(rows), ["mnist"], "codes")
    assert len(out) == 1 and out[0]["variant"] == script.GSM
    assert out[0]["vs MRMR: k ahead"] == "10/10" and out[0]["vs JMIM: k ahead"] == "9/10"
    assert out[0]["vs MRMR: splits ahead"] == "2/2"
    gap = float(out[0]["vs JMIM: points (mean over k) ± sd over splits"].split(" ")[0])
    assert np.isclose(gap, 100 * (0.8 - (0.9 + 9 * 0.75) / 10), atol=0.05)
    assert out[0]["clear lead"] == "yes"


def test_split_commits_name_each_commit_with_its_splits(script):
    # runs resumed at another commit: the report's header names every commit with the splits it ran;
    # rows written before the per-split column take the commit their run recorded
    r = pd.DataFrame({"dataset": ["chess"] * 7 + ["mnist"] * 2, "split": [0, 1, 2, 3, 4, 5, 7, 0, 1],
                      "commit": [None] * 5 + ["abc1234"] * 2 + [np.nan, "abc1234"]})
    assert script.split_commits(r, "26deeb4") == ("26deeb4 (chess splits 0-4; mnist split 0); "
                                                 "abc1234 (chess splits 5, 7; mnist split 1)")
    assert script.split_commits(r.drop(columns="commit"), "26deeb4") == "26deeb4"
    assert script.split_commits(pd.DataFrame(), "26deeb4") == "26deeb4"


def test_band_edges_cut_the_last_band_at_k(script):
    assert script.band_edges(30) == [(1, 10), (11, 20), (21, 30)]
    assert script.band_edges(25) == [(1, 10), (11, 20), (21, 25)]
    assert script.band_edges(6) == [(1, 6)]


def test_paired_test_against_scipy(script):
    from scipy.stats import ttest_rel, wilcoxon

    a = np.array([0.80, 0.82, 0.79, 0.85, 0.81, 0.83])
    b = a - np.array([0.01, 0.02, -0.005, 0.03, 0.015, 0.01])
    t = script.paired_test(a, b)
    assert t["n"] == 6 and np.isclose(t["diff"], (a - b).mean())
    assert np.isclose(t["p_t"], ttest_rel(a, b).pvalue) and np.isclose(t["p_w"], wilcoxon(a, b).pvalue)
    same = script.paired_test(a, a)  # no difference: no test
    assert same["diff"] == 0 and np.isnan(same["p_t"]) and np.isnan(same["p_w"])
    assert np.isnan(script.paired_test([0.5], [0.4])["p_t"])


def test_paired_rows_pair_the_splits_band_by_band(script):
    # the variant is 2 points ahead of MRMR on k = 1..10 and 1 point behind on 11..20 on every split, and
    # level with JMIM; a split the variant did not run is left out of its pairs
    rows = []
    for split in range(4):
        for k in range(1, 21):
            for m, acc in ((script.GSM, 0.5 + 0.01 * split), ("MRMR", 0.5 + 0.01 * split + (-0.02 if k <= 10 else 0.01)),
                           ("JMIM", 0.5 + 0.01 * split)):
                if m == script.GSM and split == 3:
                    continue
                rows.append({"dataset": "coil20", "input": "codes", "method": m, "split": split, "k": k,
                             "accuracy": acc})
    out = {(r["baseline"], r["k"]): r for r in script.paired_rows(pd.DataFrame(rows), ["coil20"], "codes")}
    assert set(out) == {(b, k) for b in ("MRMR", "JMIM") for k in ("1..20 (mean)", "1..10", "11..20")}
    assert out[("MRMR", "1..10")]["splits"] == 3 and np.isclose(out[("MRMR", "1..10")]["points"], 2.0)
    assert np.isclose(out[("MRMR", "11..20")]["points"], -1.0) and out[("MRMR", "11..20")]["splits ahead"] == 0
    assert np.isclose(out[("MRMR", "1..20 (mean)")]["points"], 0.5)
    assert out[("JMIM", "1..20 (mean)")]["points"] == 0 and np.isnan(out[("JMIM", "1..20 (mean)")]["p (paired t)"])


def test_four_largest_sets_by_three_readings(script):
    by_cells = script.largest(lambda n, m: n * m)
    assert "MNIST" in script.largest(lambda n, m: m) and "MNIST" in script.largest(lambda n, m: n) and "MNIST" in by_cells
    assert "COIL-20" in by_cells and "Chess" not in by_cells and "Chess" in script.largest(lambda n, m: m)
