"""Evaluation protocols of the papers, as functions over any selector.

Every protocol selects features once per training part (a hold-out split or a CV fold)
with ``k = max(ks)`` and scores every prefix of the ordered selection, so the selection
never sees the test part. (Papers 001 and 002 selected on the whole data set before cross-
validating; their numbers are therefore optimistic next to these.) Selectors get the raw
training data and discretize it themselves (their ``discretizer``, fitted on the training
part only); classifiers see the continuous values, min-max scaled on the training part.
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Sequence

import numpy as np

_CLASSIFIERS = ("1nn", "3nn", "linear_svm")


def make_classifier(name: Any):
    """A scikit-learn pipeline (min-max scaling + classifier) from a name or an estimator.

    ``"1nn"`` / ``"3nn"``: k-nearest neighbours (Euclidean); ``"linear_svm"``: ``LinearSVC(C=1)``.
    """
    from sklearn.base import clone
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MinMaxScaler
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
    return make_pipeline(MinMaxScaler(), clf)


def _progress(it: Iterable, total: int, desc: str, enabled: bool):
    if not enabled:
        return it
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional
        return it
    return tqdm(it, total=total, desc=desc, leave=False)


def _numeric(X: Any) -> np.ndarray:
    """Continuous view of X for the classifiers (categorical columns become their codes)."""
    if hasattr(X, "columns"):
        import pandas as pd

        cols = []
        for c in X.columns:
            s = X[c]
            if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
                cols.append(s.to_numpy(dtype=np.float64))
            else:
                cols.append(pd.factorize(s, sort=True)[0].astype(np.float64))
        return np.column_stack(cols)
    X = np.asarray(X)
    if X.dtype.kind in "biuf":
        return X.astype(np.float64)
    from ..encoding import encode

    return encode(X, discretizer=None).codes.astype(np.float64)


def _rows(X: Any, idx: np.ndarray) -> Any:
    return X.iloc[idx] if hasattr(X, "iloc") else np.asarray(X)[idx]


def evaluate_splits(selectors: dict, X: Any, y: Any, splits: Sequence[tuple[np.ndarray, np.ndarray]], ks: Sequence[int],
                    classifiers: Sequence[Any] = ("1nn",), *, progress: bool = True, dataset: str = ""):
    """Select on every training part, score every k prefix with every classifier on the test part.

    Parameters
    ----------
    selectors : dict name -> unfitted selector (cloned for every split)
    X, y : data (raw; selectors discretize) and labels
    splits : list of (train_idx, test_idx)
    ks : numbers of features to score (prefixes of one selection of ``max(ks)`` features)
    classifiers : names ("1nn", "3nn", "linear_svm") or scikit-learn estimators

    Returns
    -------
    pandas.DataFrame
        One row per (method, split, classifier, k): ``dataset, method, split, classifier, k,
        accuracy, error, select_seconds``.
    """
    import pandas as pd
    from sklearn.base import clone

    y = np.asarray(y)
    Xn = _numeric(X)
    kmax = int(max(ks))
    if kmax > Xn.shape[1]:
        raise ValueError(f"k up to {kmax} asked for but the data has {Xn.shape[1]} features")
    records = []
    jobs = [(name, s, i, tr, te) for name, s in selectors.items() for i, (tr, te) in enumerate(splits)]
    for name, proto, i, tr, te in _progress(jobs, len(jobs), f"evaluating {dataset}", progress):
        sel = clone(proto).set_params(k=kmax)
        t0 = time.perf_counter()
        sel.fit(_rows(X, tr), y[tr])
        secs = time.perf_counter() - t0
        order = np.asarray(sel.selected_)
        for cname in classifiers:
            label = cname if isinstance(cname, str) else type(cname).__name__
            for k in ks:
                cols = order[: int(k)]
                clf = make_classifier(cname).fit(Xn[np.ix_(tr, cols)], y[tr])
                acc = float((clf.predict(Xn[np.ix_(te, cols)]) == y[te]).mean())
                records.append({"dataset": dataset, "method": name, "split": i, "classifier": label, "k": int(k),
                                "accuracy": acc, "error": 1.0 - acc, "select_seconds": secs})
    return pd.DataFrame.from_records(records)


def holdout_protocol(selectors: dict, X: Any, y: Any, *, ks: Sequence[int] = tuple(range(1, 51)),
                     n_repeats: int = 10, test_size: float = 0.3, classifier: Any = "1nn", random_state: Any = 0,
                     progress: bool = True, dataset: str = ""):
    """Paper 000's protocol: repeated stratified 70/30 splits, 1-NN accuracy against k = 1..50."""
    from sklearn.model_selection import StratifiedShuffleSplit

    y = np.asarray(y)
    ks = [k for k in ks if k <= _numeric(X).shape[1]]
    sss = StratifiedShuffleSplit(n_splits=n_repeats, test_size=test_size, random_state=_seed(random_state))
    return evaluate_splits(selectors, X, y, list(sss.split(np.zeros(len(y)), y)), ks, [classifier],
                           progress=progress, dataset=dataset)


def cv_protocol(selectors: dict, X: Any, y: Any, *, ks: Sequence[int] | None = None, n_splits: int = 10,
                n_repeats: int = 1, classifiers: Sequence[Any] = ("linear_svm",), random_state: Any = 0,
                progress: bool = True, dataset: str = ""):
    """Papers 001/002 (and 004 with repeats): mean CV error over k = 10..100 (or up to N).

    ``n_splits``-fold stratified CV, leave-one-out when there are fewer than 100 samples.
    """
    from sklearn.model_selection import LeaveOneOut, RepeatedStratifiedKFold

    y = np.asarray(y)
    n_feat = _numeric(X).shape[1]
    if ks is None:
        ks = list(range(10, min(100, n_feat) + 1, 10)) or [n_feat]
    ks = [k for k in ks if k <= n_feat]
    if len(y) < 100:
        splits = list(LeaveOneOut().split(np.zeros(len(y))))
    else:
        rskf = RepeatedStratifiedKFold(n_splits=n_splits, n_repeats=n_repeats, random_state=_seed(random_state))
        splits = list(rskf.split(np.zeros(len(y)), y))
    return evaluate_splits(selectors, X, y, splits, ks, classifiers, progress=progress, dataset=dataset)


def summarize(results) -> Any:
    """Mean error per (dataset, method, classifier) over splits and k: the papers' summary number."""
    return (results.groupby(["dataset", "method", "classifier"], as_index=False)
            .agg(mean_error=("error", "mean"), std_error=("error", "std"), select_seconds=("select_seconds", "mean")))


def _seed(random_state: Any) -> int:
    from .._device import seed_from_random_state

    return seed_from_random_state(random_state) % 2**32
