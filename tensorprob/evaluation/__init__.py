"""Evaluation protocols of the papers, statistics, set metrics, stability and plots (needs pandas; plots need matplotlib)."""
from ._plots import plot_accuracy_vs_k
from ._protocols import (
    accuracy_curves,
    cv_protocol,
    evaluate_splits,
    holdout_protocol,
    holdout_splits,
    make_classifier,
    summarize,
)
from ._sets import Agreement, plugin_mutual_information, selection_agreement
from ._stability import (
    Stability,
    StabilitySelection,
    kuncheva_index,
    resample_weights,
    selection_frequencies,
    stability_index,
    stability_selection,
)
from ._stats import Comparison, average_ranks, holm, pairwise_wilcoxon, significance_ranks, win_tie_loss

__all__ = ["Agreement", "Comparison", "Stability", "accuracy_curves", "average_ranks", "cv_protocol",
           "evaluate_splits", "holdout_protocol", "holdout_splits", "holm", "kuncheva_index", "make_classifier",
           "pairwise_wilcoxon", "plot_accuracy_vs_k", "plugin_mutual_information", "resample_weights",
           "selection_agreement", "selection_frequencies", "significance_ranks", "stability_index",
           "stability_selection", "StabilitySelection", "summarize", "win_tie_loss"]
