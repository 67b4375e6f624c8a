"""Evaluation protocols of the papers, statistics and plots (needs pandas; plots need matplotlib)."""
from ._plots import plot_accuracy_vs_k
from ._protocols import cv_protocol, evaluate_splits, holdout_protocol, make_classifier, summarize
from ._stats import average_ranks, holm, pairwise_wilcoxon

__all__ = ["average_ranks", "cv_protocol", "evaluate_splits", "holdout_protocol", "holm", "make_classifier",
           "pairwise_wilcoxon", "plot_accuracy_vs_k", "summarize"]
