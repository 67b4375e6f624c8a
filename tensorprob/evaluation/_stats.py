"""Statistics of comparisons: Wilcoxon rank-sum with Holm correction, average ranks (paper 004)."""
from __future__ import annotations

from typing import Any

import numpy as np


def holm(pvalues: Any) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * p[i])
        adj[i] = min(1.0, running)
    return adj


def pairwise_wilcoxon(results, reference: str, *, alpha: float = 0.05, value: str = "error"):
    """Per dataset and classifier, compare ``reference`` with every other method.

    The samples are the per-split errors averaged over k; the test is scipy's two-sided
    Wilcoxon rank-sum test, Holm-corrected over the methods compared within a dataset and
    classifier. ``outcome`` is "win" / "loss" (reference significantly lower / higher error)
    or "tie".
    """
    import pandas as pd
    from scipy.stats import ranksums

    per_split = results.groupby(["dataset", "classifier", "method", "split"], as_index=False)[value].mean()
    rows = []
    for (ds, clf), g in per_split.groupby(["dataset", "classifier"]):
        ref = g.loc[g["method"] == reference, value].to_numpy()
        if ref.size == 0:
            raise ValueError(f"reference method {reference!r} is not in the results for {ds!r}")
        others = [m for m in g["method"].unique() if m != reference]
        stats = []
        for m in others:
            other = g.loc[g["method"] == m, value].to_numpy()
            p = ranksums(ref, other).pvalue if np.ptp(np.concatenate([ref, other])) > 0 else 1.0
            stats.append((m, float(np.mean(ref)), float(np.mean(other)), float(p)))
        adj = holm([s[3] for s in stats]) if stats else []
        for (m, a, b, p), pa in zip(stats, adj):
            outcome = "tie" if pa >= alpha else ("win" if a < b else "loss")
            rows.append({"dataset": ds, "classifier": clf, "reference": reference, "method": m,
                         "reference_error": a, "method_error": b, "p_value": p, "p_holm": float(pa),
                         "outcome": outcome})
    return pd.DataFrame(rows)


def average_ranks(results, value: str = "error"):
    """Average rank of every method across datasets (1 = lowest mean error; ties share ranks)."""
    from scipy.stats import rankdata

    means = results.groupby(["dataset", "classifier", "method"])[value].mean().unstack("method")
    ranks = means.apply(lambda row: rankdata(row.to_numpy()), axis=1, result_type="expand")
    ranks.columns = means.columns
    return ranks.groupby(level="classifier").mean().T.sort_values(by=list(ranks.index.unique("classifier")))
