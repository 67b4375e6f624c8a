"""Statistics of comparisons: Holm correction, Wilcoxon rank-sum, paired t-test win/tie/loss, ranks.

References
----------
.. [Holm79] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6, 1979.
.. [Sun20] Y. Sun, W. Wang, M. Kirley, X. Li, J. Chan, "Revisiting probability distribution assumptions
   for information theoretic feature selection", AAAI 2020 (test-based ranks).
.. [Gao16] S. Gao, G. Ver Steeg, A. Galstyan, "Variational information maximization for feature
   selection", NeurIPS 2016 (win/tie/loss by paired t-test).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from .._docstrings import fill_doc
from ._fragments import EVAL_FRAGMENTS


def holm(pvalues: Any) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1).

    Parameters
    ----------
    pvalues : array-like of shape (m,)
        Unadjusted p-values of m tests.

    Returns
    -------
    numpy.ndarray of shape (m,)
        Adjusted p-values, in the input order: the i-th smallest p is multiplied by m - i + 1
        (i from 1), and a running maximum keeps them monotone.

    References
    ----------
    .. [1] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6, 1979.

    Examples
    --------
    >>> from tensorprob.evaluation import holm
    >>> holm([0.01, 0.04, 0.03]).round(6).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, (m - rank) * p[i])
        adj[i] = min(1.0, running)
    return adj


@fill_doc(**EVAL_FRAGMENTS)
def pairwise_wilcoxon(results, reference: str, *, alpha: float = 0.05, value: str = "error"):
    """Per dataset and classifier, compare ``reference`` with every other method.

    The samples are the per-split values of ``value`` averaged over k; the test is scipy's
    two-sided Wilcoxon rank-sum test, Holm-corrected over the methods compared within a
    dataset and classifier. Two samples without any spread give p = 1.

    Parameters
    ----------
    %(results_splits)s
    reference : str
        The method compared with all others.
    %(alpha_holm)s
    %(value_lower)s

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, classifier, other method): ``reference_error``, ``method_error``
        (means), ``p_value``, ``p_holm`` and ``outcome``: "win" / "loss" (reference
        significantly lower / higher) or "tie".

    Raises
    ------
    ValueError
        When ``reference`` is missing from a (dataset, classifier) group.

    References
    ----------
    .. [1] F. Wilcoxon, "Individual comparisons by ranking methods", Biometrics Bulletin 1, 1945.
    .. [2] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6, 1979.
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


@fill_doc(**EVAL_FRAGMENTS)
def significance_ranks(results, groups: Mapping[str, Sequence[str]] | None = None, *, alpha: float = 0.05,
                       value: str = "error"):
    """Test-based ranks: 1 + the number of methods with a significantly lower ``value``.

    Within each dataset, classifier and group of methods, every method is compared with every
    other method of its group by :func:`pairwise_wilcoxon` (two-sided Wilcoxon rank-sum on the
    per-split values, Holm-corrected over the other methods of the group). Methods that do not
    differ significantly share the better rank, so the ranks of a group sum to less than
    ``1 + 2 + ... + n`` unless every difference is significant.

    Parameters
    ----------
    %(results_splits)s
        To test other samples (e.g. per-repeat means), aggregate them first and store their
        index in ``split``.
    groups : dict of str to sequence of str, optional
        Group label -> methods ranked against each other. Default: one group ``"all"`` with
        every method.
    %(alpha_holm)s
    %(value_lower)s

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, classifier, group, method): ``mean`` (of ``value`` over the rows),
        ``rank`` and ``better_than`` (tuple of the methods it beats significantly).

    References
    ----------
    .. [1] Y. Sun, W. Wang, M. Kirley, X. Li, J. Chan, "Revisiting probability distribution
       assumptions for information theoretic feature selection", AAAI 2020.
    """
    import pandas as pd

    if groups is None:
        groups = {"all": list(dict.fromkeys(results["method"]))}
    rows = []
    for (ds, clf), g in results.groupby(["dataset", "classifier"]):
        for label, methods in groups.items():
            sub = g[g["method"].isin(list(methods))]
            for m in methods:
                pw = pairwise_wilcoxon(sub, reference=m, alpha=alpha, value=value)
                outcome = pw["outcome"] if len(pw) else pd.Series([], dtype=object)  # a group of one method
                rows.append({"dataset": ds, "classifier": clf, "group": label, "method": m,
                             "mean": float(sub.loc[sub["method"] == m, value].mean()),
                             "rank": 1 + int((outcome == "loss").sum()),
                             "better_than": tuple(pw.loc[outcome == "win", "method"]) if len(pw) else ()})
    return pd.DataFrame(rows)


def average_ranks(results, value: str = "error"):
    """Average rank of every method across datasets (1 = lowest mean; ties share the mean rank).

    Parameters
    ----------
    results : pandas.DataFrame
        Rows of :func:`evaluate_splits` (columns ``dataset, classifier, method`` and ``value``).
    value : str, default="error"
        The ranked column (its mean per dataset, classifier and method); lower is better.

    Returns
    -------
    pandas.DataFrame
        Methods as rows, classifiers as columns: the rank averaged over datasets
        (``scipy.stats.rankdata``, average method for ties), sorted by the classifier columns.
    """
    from scipy.stats import rankdata

    means = results.groupby(["dataset", "classifier", "method"])[value].mean().unstack("method")
    ranks = means.apply(lambda row: rankdata(row.to_numpy()), axis=1, result_type="expand")
    ranks.columns = means.columns
    return ranks.groupby(level="classifier").mean().T.sort_values(by=list(ranks.index.unique("classifier")))


class Comparison(NamedTuple):
    """Outcome of :func:`win_tie_loss`: ``"W"``, ``"T"`` or ``"L"``, and the test's p-value.

    Parameters
    ----------
    outcome : {"W", "T", "L"}
        Win, tie or loss of the reference method.
    p_value : float
        The paired t-test's two-sided p-value (NaN when no test was possible).
    """

    outcome: str
    p_value: float


def win_tie_loss(reference: Any, other: Any, *, alpha: float = 0.05) -> Comparison:
    """Win / tie / loss of ``reference`` against ``other`` by a two-sided paired t-test.

    The pairs are the two methods' values at the same point of a grid, e.g. their CV errors
    at each k of ``k = 10..100``. Lower values are better.

    Parameters
    ----------
    reference, other : array-like of shape (n,)
        Paired values (errors) of the two methods.
    alpha : float, default=0.05
        Level of the test.

    Returns
    -------
    Comparison
        ``("W", p)`` when the difference is significant and ``reference`` has the lower mean,
        ``("L", p)`` when significant the other way, else ``("T", p)``. Fewer than two pairs or
        identical values give ``("T", nan)``.

    References
    ----------
    .. [1] S. Gao, G. Ver Steeg, A. Galstyan, "Variational information maximization for feature
       selection", NeurIPS 2016 (Table 3's W/T/L lines).

    Examples
    --------
    >>> from tensorprob.evaluation import win_tie_loss
    >>> win_tie_loss([0.10, 0.12, 0.11, 0.13], [0.20, 0.21, 0.22, 0.25]).outcome
    'W'
    """
    from scipy.stats import ttest_rel

    a, b = np.asarray(reference, dtype=np.float64), np.asarray(other, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"reference and other must be 1-D of the same length, got {a.shape} and {b.shape}")
    if a.size < 2 or np.allclose(a, b):
        return Comparison("T", float("nan"))
    p = float(ttest_rel(a, b).pvalue)
    if not np.isfinite(p) or p >= alpha:
        return Comparison("T", p)
    return Comparison("W" if a.mean() < b.mean() else "L", p)
