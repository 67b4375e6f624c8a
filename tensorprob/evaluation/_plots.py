"""Plots of evaluation results (matplotlib, imported lazily)."""
from __future__ import annotations

from typing import Any


def plot_accuracy_vs_k(results, ax: Any = None, classifier: str | None = None, title: str | None = None):
    """Mean accuracy (with a band of one standard deviation over splits) against k, one line per method.

    Parameters
    ----------
    results : pandas.DataFrame
        Rows of :func:`evaluate_splits` (columns ``method, k, accuracy`` and, with
        ``classifier``, ``classifier``).
    ax : matplotlib.axes.Axes, optional
        Where to draw; default a new 6 x 4 inch figure.
    classifier : str, optional
        Keep only the rows of this classifier label.
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    import matplotlib.pyplot as plt

    df = results if classifier is None else results[results["classifier"] == classifier]
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for method, g in df.groupby("method"):
        s = g.groupby("k")["accuracy"].agg(["mean", "std"]).fillna(0.0)
        ax.plot(s.index, s["mean"], label=method)
        ax.fill_between(s.index, s["mean"] - s["std"], s["mean"] + s["std"], alpha=0.15)
    ax.set_xlabel("number of selected features k")
    ax.set_ylabel("accuracy")
    if title:
        ax.set_title(title)
    ax.legend()
    return ax
