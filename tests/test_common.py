"""scikit-learn's common estimator checks over every registered selector and the two transformers."""
from sklearn.utils.estimator_checks import parametrize_with_checks

import tensorprob as tp
from tensorprob.selection import available_methods, get_selector


def _instance(name, cls):
    if name == "gsm_cpd":  # small, fast settings; the CPD needs a rank the checks' tiny data support
        return cls(k=1, rank=2, n_samples=200, n_iter_max=20, random_state=0)
    return cls(k=1)


ESTIMATORS = [_instance(n, get_selector(n)) for n in available_methods()] + [tp.Encoder(), tp.Discretizer()]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_pipeline_and_grid_search():
    from sklearn.datasets import load_wine
    from sklearn.model_selection import GridSearchCV
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import Pipeline

    d = load_wine()
    pipe = Pipeline([("select", tp.JMI()), ("knn", KNeighborsClassifier(3))])
    grid = GridSearchCV(pipe, {"select__k": [2, 4, 6], "select__n_bins": [3, 5]}, cv=3).fit(d.data, d.target)
    assert grid.best_params_["select__k"] in (2, 4, 6)
    assert grid.best_estimator_.named_steps["select"].transform(d.data).shape[1] == grid.best_params_["select__k"]
