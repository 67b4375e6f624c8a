"""Paper 004 Table 3 on the paper's own sets apart from the added ones (``benchmarks/repro_amd_ranks.py``):
the pairwise wins read from the test-based ranks, the split of the sets, and ties that survive a rebuild."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _helpers import load_benchmark_script


@pytest.fixture(scope="module")
def script():
    """The benchmark script as a module."""
    return load_benchmark_script("repro_amd_ranks")


def _ranks(script, sets, gmd_beats_amd=()):
    rows = []
    for ds in sets:
        for clf in script.CLFS:
            for g in script.GROUPS:
                names = {d: script.method_name(g, d) for d in script.DISTS}
                gm = (ds, clf, g) in gmd_beats_amd
                better = {"FID": (), "GMD": (names["FID"],) + ((names["AMD"],) if gm else ()),
                          "AMD": () if gm else (names["FID"],)}
                for d in script.DISTS:
                    rank = {"FID": 3 if not gm else 2, "GMD": 1, "AMD": 2 if gm else 1}[d]
                    rows.append({"dataset": ds, "classifier": clf, "group": g, "method": names[d], "rank": rank,
                                 "better_than": better[d], "plain_rank": float(rank), "error_pct": 10.0})
    return pd.DataFrame(rows)


def test_pairwise_wins_read_better_than(script):
    r = _ranks(script, ["chess", "wine"], gmd_beats_amd={("chess", "SVM", "J^{1,0}")})
    w = script.pairwise_wins(r)
    gm = w[(w["winner"] == "GMD") & (w["loser"] == "AMD")]
    assert list(zip(gm["dataset"], gm["classifier"], gm["group"])) == [("chess", "SVM", "J^{1,0}")]
    assert ((w["winner"] == "AMD") & (w["loser"] == "FID")).sum() == 2 * 2 * 3 - 1


def test_own_sets_report_splits_paper_and_added_sets(script):
    sets = ["chess", "wine", "vehicle"]
    r = _ranks(script, sets, gmd_beats_amd={("vehicle", "KNN", "J~^1 (VI)")})
    text = "\n".join(script.own_sets_report({"mdl": (r, sets)}))
    assert "paper's sets (2)" in text and "added sets (1)" in text
    assert "paper's sets (2): 0 of 6 blocks" in text  # GMD 1, AMD 1, FID 3: a tie is not the strict order
    assert "GMD significantly better than AMD: vehicle (added) KNN J~^1 (VI)" in text
    assert script.own_sets_report({"mdl": (r[r["dataset"] != "vehicle"], ["chess", "wine"])}) == []  # one part


def test_plain_ranks_keep_ties_of_rounding(script):
    # the same errors summed in another order differ in the last bits; they must still tie
    a = [0.1, 0.2, 0.3]
    rows = []
    for d, errs in (("FID", [0.5, 0.5, 0.5]), ("GMD", a), ("AMD", a[::-1])):
        for i, e in enumerate(errs):
            rows.append({"dataset": "wine", "classifier": "linear_svm", "method": script.method_name("J^{1,0}", d),
                         "split": i, "repeat": 0, "error": e})
    pf = pd.DataFrame(rows)
    groups = {"J^{1,0}": [script.method_name("J^{1,0}", d) for d in script.DISTS]}
    out = script.rank_rows(pf, groups, "fold", 0.05)
    pr = out.set_index("method")["plain_rank"]
    assert pr[script.method_name("J^{1,0}", "GMD")] == pr[script.method_name("J^{1,0}", "AMD")] == 1.5
    assert np.isclose(pr[script.method_name("J^{1,0}", "FID")], 3.0)
