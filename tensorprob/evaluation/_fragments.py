"""Numpydoc fragments shared by the evaluation functions (filled by :func:`tensorprob._docstrings.fill_doc`).

>>> from tensorprob.evaluation._fragments import EVAL_FRAGMENTS
>>> EVAL_FRAGMENTS["alpha_holm"].splitlines()[0]
'alpha : float, default=0.05'
"""
from __future__ import annotations

from .._docstrings import FRAGMENTS

__all__ = ["EVAL_FRAGMENTS"]

EVAL_FRAGMENTS: dict[str, str] = {
    "selectors": """\
selectors : dict of str to selector
    Method name -> unfitted selector (see :func:`evaluate_splits`).""",
    "X_eval": """\
X : array-like or pandas.DataFrame of shape (n_samples, n_features)
    Raw data (selectors discretize it themselves; classifiers see
    :func:`tensorprob.encoding.to_numeric` of it).""",
    "split_seed": """\
random_state : int, numpy.random.Generator or None, default=0
    Seed of the split or fold assignment (``None``: fresh entropy, not reproducible).""",
    "dataset_fitted": """\
dataset : str, default=""
    Value of the ``dataset`` column.
return_fitted : bool, default=False
    Also return the fitted selectors, keyed by ``(method, split)``.""",
    "batched": """\
batched : bool, default=False
    Fit each selector once for all splits, ``fit(X, y, resamples=W)`` with the training masks
    as ``W`` (one batch: the count-based criteria, PDA and VMI advance all splits' selections together; see
    :func:`tensorprob.stability_selection`), instead of once per split. The selections are
    those of ``fit(X, y, sample_weight=mask)``: the selector's encoding (categories,
    equal-width bin edges) is then learned from all rows, test rows included (unsupervised; a
    supervised ``discretizer="mdl"`` is refused), where the per-split fit learns it on the
    training part only. ``select_seconds`` is the batch's time divided by the number of splits;
    with ``return_fitted`` every split of a method maps to its one batched selector (split i's
    selection is its ``selected_[i]``). Selectors fitted on integer codes (or with
    ``tp.Encoded``) select the same either way.""",
    "protocol_returns": """\
pandas.DataFrame, or (pandas.DataFrame, dict) with ``return_fitted``
    The rows of :func:`evaluate_splits` (and the fitted selectors).""",
    "n_repeats_splits": """\
n_repeats : int, default=10
    Number of stratified random splits (``StratifiedShuffleSplit``).""",
    "test_size": """\
test_size : float, default=0.3
    Fraction of the rows in each test part.""",
    "results_splits": """\
results : pandas.DataFrame
    Rows of :func:`evaluate_splits` (columns ``dataset, classifier, method, split`` and
    ``value``).""",
    "alpha_holm": """\
alpha : float, default=0.05
    Level of the Holm-corrected tests.""",
    "value_lower": """\
value : str, default="error"
    The compared column; lower is better.""",
}
# the options every protocol ends with, in signature order: composed, so the text stays in one place
EVAL_FRAGMENTS["protocol_options"] = "\n".join(
    (EVAL_FRAGMENTS["split_seed"], FRAGMENTS["progress"], EVAL_FRAGMENTS["dataset_fitted"],
     EVAL_FRAGMENTS["batched"]))
