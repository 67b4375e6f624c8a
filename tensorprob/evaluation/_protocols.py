"""Evaluation protocols of the papers, as functions over any selector.

Every protocol selects features once per training part (a hold-out split or a CV fold)
with ``k = max(ks)`` and scores every prefix of the ordered selection, so the selection
never sees the test part. (Papers 001 and 002 selected on the whole data set before cross-
validating; their numbers are therefore optimistic next to these.) Selectors get the raw
training data and discretize it themselves (their ``discretizer``, fitted on the training
part only); classifiers see the continuous values, min-max scaled on the training part
(``inputs="continuous"``), or equal-width bin codes fitted on the training part
(``inputs="codes"``).
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._config import _NoBar, progress_bar
from .._docstrings import fill_doc
from ..encoding import to_numeric
from ._fragments import EVAL_FRAGMENTS

_CLASSIFIERS = ("1nn", "3nn", "linear_svm")
_INPUTS = ("continuous", "codes")


def make_classifier(name: Any, *, inputs: str = "continuous", n_bins: int = 5):
    """A scikit-learn pipeline (input transform + classifier) from a name, or a clone of an estimator.

    Parameters
    ----------
    name : {"1nn", "3nn", "linear_svm"} or scikit-learn estimator
        ``"1nn"`` / ``"3nn"``: k-nearest neighbours (Euclidean); ``"linear_svm"``:
        ``LinearSVC(C=1)``. An estimator is cloned and returned as it is (``inputs`` is ignored).
    inputs : {"continuous", "codes"}, default="continuous"
        What the classifier sees. ``"continuous"``: the values min-max scaled on the training
        data. ``"codes"``: ``n_bins`` equal-width bin codes per column (``KBinsDiscretizer``,
        fitted on the training data; a constant column becomes one bin), as when the data set is
        distributed pre-discretized.
    n_bins : int, default=5
        Number of bins when ``inputs="codes"``.

    Returns
    -------
    sklearn.pipeline.Pipeline or estimator
        An unfitted classifier.

    Examples
    --------
    >>> from tensorprob.evaluation import make_classifier
    >>> [step for step, _ in make_classifier("1nn", inputs="codes").steps]
    ['kbinsdiscretizer', 'kneighborsclassifier']
    """
    from sklearn.base import clone
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import KBinsDiscretizer, MinMaxScaler
    from sklearn.svm import LinearSVC

    if not isinstance(name, str):
        return clone(name)
    if name == "1nn":
        clf = KNeighborsClassifier(n_neighbors=1)
    elif name == "3nn":
        clf = KNeighborsClassifier(n_neighbors=3)
    elif name == "linear_svm":
        clf = LinearSVC(C=1.0, max_iter=5000)
    else:
        raise ValueError(f"classifier must be one of {_CLASSIFIERS} or a scikit-learn estimator, got {name!r}")
    if inputs == "continuous":
        return make_pipeline(MinMaxScaler(), clf)
    if inputs == "codes":
        # ordinal codes keep the order of the bins, so k-NN distances stay meaningful
        disc = KBinsDiscretizer(n_bins=int(n_bins), encode="ordinal", strategy="uniform", subsample=None)
        return make_pipeline(disc, clf) if name == "1nn" or name == "3nn" else make_pipeline(disc, MinMaxScaler(), clf)
    raise ValueError(f"inputs must be one of {_INPUTS}, got {inputs!r}")


def _rows(X: Any, idx: np.ndarray) -> Any:
    return X.iloc[idx] if hasattr(X, "iloc") else np.asarray(X)[idx]


def _classifier_specs(classifiers: Any) -> list[tuple[str, Any]]:
    """(label, name-or-estimator) pairs from a name, an estimator, a sequence of them or a dict label -> spec."""
    if isinstance(classifiers, Mapping):
        return [(str(label), spec) for label, spec in classifiers.items()]
    if isinstance(classifiers, str) or hasattr(classifiers, "fit"):
        classifiers = [classifiers]
    return [(c if isinstance(c, str) else type(c).__name__, c) for c in classifiers]


@fill_doc(**EVAL_FRAGMENTS)
def evaluate_splits(selectors: dict, X: Any, y: Any, splits: Sequence[tuple[np.ndarray, np.ndarray]], ks: Sequence[int],
                    classifiers: Any = ("1nn",), *, progress: bool = True, dataset: str = "",
                    return_fitted: bool = False, batched: bool = False):
    """Select on every training part, score every k prefix with every classifier on the test part.

    Parameters
    ----------
    selectors : dict of str to selector
        Method name -> unfitted selector with a ``k`` parameter and a ``selected_`` attribute
        after ``fit`` (cloned for every split).
    %(X_eval)s
    %(y_labels)s
    splits : sequence of (train_idx, test_idx)
        Row indices of each training and test part.
    ks : sequence of int
        Numbers of features to score: prefixes of one selection of ``max(ks)`` features.
    classifiers : str, estimator, sequence of them, or dict of str to them, default=("1nn",)
        Names (see :func:`make_classifier`) or scikit-learn estimators. A dict gives each one the
        label stored in the ``classifier`` column (e.g. ``{"codes": make_classifier("1nn",
        inputs="codes"), "continuous": "1nn"}``); otherwise the label is the name or the class
        name of the estimator.
    %(progress)s
    %(dataset_fitted)s
    %(batched)s

    Returns
    -------
    results : pandas.DataFrame
        One row per (method, split, classifier, k): ``dataset, method, split, classifier, k,
        accuracy, error, select_seconds``.
    fitted : dict of (str, int) to selector
        Only when ``return_fitted``: the selector fitted on each training part, keyed by
        ``(method, split)``.
    """
    import pandas as pd
    from sklearn.base import clone

    y = np.asarray(y)
    Xn = to_numeric(X)
    kmax = int(max(ks))
    if kmax > Xn.shape[1]:
        raise ValueError(f"k up to {kmax} asked for but the data has {Xn.shape[1]} features")
    specs = _classifier_specs(classifiers)
    records, fitted = [], {}
    jobs = [(name, s, i, tr, te) for name, s in selectors.items() for i, (tr, te) in enumerate(splits)]
    batches: dict[str, tuple[Any, float]] = {}
    if batched:  # one fit per method for all splits: the training masks as a batch of weight vectors
        masks = np.zeros((len(y), len(splits)))
        for i, (tr, _) in enumerate(splits):
            masks[tr, i] = 1.0
        for name, proto in selectors.items():
            t0 = time.perf_counter()
            sel = clone(proto).set_params(k=kmax).fit(X, y, resamples=masks)
            batches[name] = (sel, (time.perf_counter() - t0) / len(splits))
    bar = progress_bar(len(jobs), f"evaluating {dataset}".strip()) if progress else _NoBar()
    with bar:
        for name, proto, i, tr, te in jobs:
            if batched:
                sel, secs = batches[name]
                order = np.asarray(sel.selected_[i])
                order = order[order >= 0]
                if return_fitted:
                    fitted[(name, i)] = sel
            else:
                sel = clone(proto).set_params(k=kmax)
                t0 = time.perf_counter()
                sel.fit(_rows(X, tr), y[tr])
                secs = time.perf_counter() - t0
                if return_fitted:
                    fitted[(name, i)] = sel
                order = np.asarray(sel.selected_)
            for label, spec in specs:
                for k in ks:
                    cols = order[: int(k)]
                    clf = make_classifier(spec).fit(Xn[np.ix_(tr, cols)], y[tr])
                    acc = float((clf.predict(Xn[np.ix_(te, cols)]) == y[te]).mean())
                    records.append({"dataset": dataset, "method": name, "split": i, "classifier": label,
                                    "k": int(k), "accuracy": acc, "error": 1.0 - acc, "select_seconds": secs})
            bar.update(1)
    results = pd.DataFrame.from_records(records)
    return (results, fitted) if return_fitted else results


@fill_doc(**EVAL_FRAGMENTS)
def holdout_protocol(selectors: dict, X: Any, y: Any, *, ks: Sequence[int] = tuple(range(1, 51)),
                     n_repeats: int = 10, test_size: float = 0.3, classifier: Any = "1nn", random_state: Any = 0,
                     progress: bool = True, dataset: str = "", return_fitted: bool = False, batched: bool = False):
    """Paper 000's protocol: repeated stratified hold-out splits, classifier accuracy against k.

    Parameters
    ----------
    %(selectors)s
    %(X_eval)s
    %(y_labels)s
    ks : sequence of int, default=1..50
        Numbers of selected features to score; values above the number of features are dropped.
    %(n_repeats_splits)s
    %(test_size)s
    classifier : str, estimator or dict, default="1nn"
        One classifier, or several as a dict label -> spec (see :func:`evaluate_splits`).
    %(protocol_options)s

    Returns
    -------
    %(protocol_returns)s

    References
    ----------
    .. [1] M. Amiridi, N. Kargas, N. D. Sidiropoulos, "Information-theoretic feature selection via
       tensor decomposition and submodularity".
    """
    y = np.asarray(y)
    ks = [k for k in ks if k <= to_numeric(X).shape[1]]
    return evaluate_splits(selectors, X, y, holdout_splits(y, n_repeats, test_size, random_state), ks, classifier,
                           progress=progress, dataset=dataset, return_fitted=return_fitted, batched=batched)


@fill_doc(**EVAL_FRAGMENTS)
def holdout_splits(y: Any, n_repeats: int = 10, test_size: float = 0.3, random_state: Any = 0
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The stratified (train, test) index pairs of :func:`holdout_protocol`.

    Parameters
    ----------
    %(y_labels)s
    %(n_repeats_splits)s
    %(test_size)s
    %(split_seed)s

    Returns
    -------
    list of (numpy.ndarray, numpy.ndarray)
        Training and test row indices of each split.
    """
    from sklearn.model_selection import StratifiedShuffleSplit

    y = np.asarray(y)
    sss = StratifiedShuffleSplit(n_splits=n_repeats, test_size=test_size, random_state=_seed(random_state))
    return list(sss.split(np.zeros(len(y)), y))


@fill_doc(**EVAL_FRAGMENTS)
def cv_protocol(selectors: dict, X: Any, y: Any, *, ks: Sequence[int] | None = None, n_splits: int = 10,
                n_repeats: int = 1, classifiers: Any = ("linear_svm",), random_state: Any = 0,
                progress: bool = True, dataset: str = "", return_fitted: bool = False, batched: bool = False):
    """Papers 001/002 (and 004 with repeats): classifier error of every k prefix under cross-validation.

    ``n_splits``-fold stratified CV, repeated ``n_repeats`` times; leave-one-out when there are
    fewer than 100 samples.

    Parameters
    ----------
    %(selectors)s
    %(X_eval)s
    %(y_labels)s
    ks : sequence of int, optional
        Numbers of selected features to score. Default ``10, 20, ..., min(100, N)`` (all N
        features when N < 10); values above N are dropped.
    n_splits : int, default=10
        Folds per repeat.
    n_repeats : int, default=1
        Repeats of the stratified K-fold (ignored under leave-one-out).
    classifiers : str, estimator, sequence or dict, default=("linear_svm",)
        See :func:`evaluate_splits`.
    %(protocol_options)s

    Returns
    -------
    %(protocol_returns)s
        Column ``split`` numbers the folds of all repeats.

    References
    ----------
    .. [1] S. Gao, G. Ver Steeg, A. Galstyan, "Variational information maximization for feature
       selection", NeurIPS 2016.
    .. [2] Y. Sun, W. Wang, M. Kirley, X. Li, J. Chan, "Revisiting probability distribution
       assumptions for information theoretic feature selection", AAAI 2020.
    """
    from sklearn.model_selection import LeaveOneOut, RepeatedStratifiedKFold

    y = np.asarray(y)
    n_feat = to_numeric(X).shape[1]
    if ks is None:
        ks = list(range(10, min(100, n_feat) + 1, 10)) or [n_feat]
    ks = [k for k in ks if k <= n_feat]
    if len(y) < 100:
        splits = list(LeaveOneOut().split(np.zeros(len(y))))
    else:
        rskf = RepeatedStratifiedKFold(n_splits=n_splits, n_repeats=n_repeats, random_state=_seed(random_state))
        splits = list(rskf.split(np.zeros(len(y)), y))
    return evaluate_splits(selectors, X, y, splits, ks, classifiers, progress=progress, dataset=dataset,
                           return_fitted=return_fitted, batched=batched)


def summarize(results) -> Any:
    """Mean error per (dataset, method, classifier) over splits and k: the papers' summary number.

    Parameters
    ----------
    results : pandas.DataFrame
        Rows of :func:`evaluate_splits` (columns ``dataset, method, classifier, error,
        select_seconds``).

    Returns
    -------
    pandas.DataFrame
        One row per (dataset, method, classifier): ``mean_error`` (over every split and k),
        ``std_error`` (sample standard deviation over the same rows) and ``select_seconds``
        (mean selection time).
    """
    return (results.groupby(["dataset", "method", "classifier"], as_index=False)
            .agg(mean_error=("error", "mean"), std_error=("error", "std"), select_seconds=("select_seconds", "mean")))


def accuracy_curves(results, by: Sequence[str] = ("dataset", "classifier", "method"), *, value: str = "accuracy",
                    scale: float = 1.0):
    """Mean and standard deviation over splits of ``value`` at every k: the curves of an accuracy-vs-k figure.

    Parameters
    ----------
    results : pandas.DataFrame
        Rows of :func:`evaluate_splits` (any frame with the ``by`` columns, ``k`` and ``value``).
    by : sequence of str, default=("dataset", "classifier", "method")
        Columns that identify one curve.
    value : str, default="accuracy"
        The column to average (e.g. ``"error"``).
    scale : float, default=1.0
        Factor applied to ``mean`` and ``std`` (100 for percentages).

    Returns
    -------
    pandas.DataFrame
        One row per curve and k: the ``by`` columns, ``k``, ``mean``, ``std`` (sample standard
        deviation, ddof = 1; NaN for a single split) and ``count`` (number of splits).

    Examples
    --------
    >>> import pandas as pd
    >>> from tensorprob.evaluation import accuracy_curves
    >>> res = pd.DataFrame({"method": ["a", "a"], "split": [0, 1], "k": [1, 1], "accuracy": [0.5, 0.7]})
    >>> accuracy_curves(res, by=["method"], scale=100).round(6).to_dict("records")
    [{'method': 'a', 'k': 1, 'mean': 60.0, 'std': 14.142136, 'count': 2}]
    """
    out = results.groupby([*by, "k"])[value].agg(["mean", "std", "count"]).reset_index()
    out["mean"] *= scale
    out["std"] *= scale
    return out


def _seed(random_state: Any) -> int:
    from .._device import seed_from_random_state

    return seed_from_random_state(random_state) % 2**32
