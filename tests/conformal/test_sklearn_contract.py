"""The scikit-learn contract of dpuq's estimators, and randomness that never outlives a release.

scikit-learn's own estimator checks run on every estimator. Checks that do not apply are
listed below with the reason (they are run and expected to fail, so a list that goes stale
shows up as an unexpected pass).
"""

from __future__ import annotations

import functools
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.utils.estimator_checks import parametrize_with_checks

import dpuq
from dpuq import (
    ConceptList,
    DecisionStumps,
    PrivateConformalClassifier,
    PrivateConformalRegressor,
    PrivateERMClassifier,
)


def first_feature_above(X, t):
    """A public concept usable on any 2-d feature matrix (module level: picklable)."""
    return (np.asarray(X)[:, 0] > t).astype(int)


ERM_CONCEPTS = ConceptList(
    [functools.partial(first_feature_above, t=t) for t in np.linspace(-3, 3, 13)]
)

_LABELS = (
    "labels are 0/1 fixed before seeing data: classes_ is not learnt from y, since the set of "
    "labels present would itself be a release"
)
_X_BY_CONCEPTS = (
    "X is whatever the public concept class takes (callables may take any sequence): the "
    "concept class validates it, not scikit-learn's check_array"
)
ERM_SKIPPED = {
    "check_estimators_dtypes": _LABELS,
    "check_dtype_object": _LABELS,
    "check_complex_data": _LABELS,
    "check_classifiers_classes": _LABELS,
    "check_classifiers_train": _LABELS,
    "check_classifiers_regression_target": _LABELS,
    "check_classifier_not_supporting_multiclass": _LABELS,
    "check_fit2d_1feature": _LABELS,
    "check_supervised_y_2d": _LABELS,
    "check_requires_y_none": _LABELS,
    "check_n_features_in_after_fitting": _X_BY_CONCEPTS,
    "check_estimators_empty_data_messages": _X_BY_CONCEPTS,
    "check_estimators_nan_inf": _X_BY_CONCEPTS,
    "check_estimator_sparse_array": _X_BY_CONCEPTS,
    "check_estimator_sparse_matrix": _X_BY_CONCEPTS,
    "check_classifier_data_not_an_array": _X_BY_CONCEPTS,
    "check_fit1d": _X_BY_CONCEPTS,
    "check_fit2d_predict1d": _X_BY_CONCEPTS,
}
CONFORMAL_SKIPPED: dict[str, str] = {}
REGRESSOR_SKIPPED: dict[str, str] = {}


def _expected_failures(estimator) -> dict[str, str]:
    if isinstance(estimator, PrivateERMClassifier):
        return ERM_SKIPPED
    if isinstance(estimator, PrivateConformalRegressor):
        return REGRESSOR_SKIPPED
    return CONFORMAL_SKIPPED


@parametrize_with_checks(
    [
        PrivateERMClassifier(ERM_CONCEPTS, epsilon=1.0, random_state=0),
        PrivateConformalClassifier(LogisticRegression(), epsilon=1.0, prefit=False, random_state=0),
        PrivateConformalRegressor(Ridge(), epsilon=1.0, bound=10.0, prefit=False, random_state=0),
    ],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


# ---------------------------------------------------------------- clone, params, pickle
@pytest.fixture(scope="module")
def digits(digits_model):
    return digits_model


def _estimators(model):
    stumps = DecisionStumps(np.linspace(0, 16, 9), n_features=64)
    return [
        PrivateConformalClassifier(model, epsilon=1.0, random_state=1),
        PrivateConformalRegressor(Ridge().fit([[0.0], [1.0]], [0.0, 1.0]), epsilon=1.0, bound=5.0),
        PrivateERMClassifier(stumps, epsilon=1.0, random_state=2),
    ]


def test_clone_get_params_set_params_round_trip(digits):
    for est in _estimators(digits[2]):
        params = est.get_params(deep=False)
        twin = clone(est)
        assert type(twin) is type(est)
        assert set(twin.get_params(deep=False)) == set(params)
        assert twin.set_params(epsilon=2.5).epsilon == 2.5
        assert est.epsilon == 1.0  # the original is untouched


def test_grid_search_runs_on_the_erm_learner():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 2))
    y = (X[:, 0] > 0.5).astype(int)
    stumps = DecisionStumps(np.linspace(0, 1, 11), n_features=2)
    search = GridSearchCV(
        PrivateERMClassifier(stumps, epsilon=1.0, random_state=0), {"epsilon": [0.5, 5.0]}, cv=2
    ).fit(X, y)
    assert search.best_params_["epsilon"] in (0.5, 5.0)


def test_prefit_false_trains_a_clone_and_leaves_the_parameter_unfitted(digits):
    X, y, _ = digits
    base = LogisticRegression(max_iter=300)
    clf = PrivateConformalClassifier(base, epsilon=1.0, prefit=False, random_state=0)
    clf.fit(X[:500], y[:500]).conformalize(X[500:1200], y[500:1200])
    assert not hasattr(base, "coef_")
    assert hasattr(clf.estimator_, "coef_")
    assert clf.n_features_in_ == 64


def _objects(obj, seen=None):
    """Every object reachable from ``obj`` through dicts, sequences and ``__dict__``."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    children = []
    if isinstance(obj, dict):
        children = [*obj.keys(), *obj.values()]
    elif isinstance(obj, list | tuple | set | frozenset):
        children = list(obj)
    elif hasattr(obj, "__dict__"):
        children = list(vars(obj).values())
    for child in children:
        yield from _objects(child, seen)


def test_pickles_hold_no_generator(digits):
    X, y, model = digits
    for est in _estimators(model):
        if isinstance(est, PrivateERMClassifier):
            est.fit(X[600:1000], (y[600:1000] > 4).astype(int))
        elif isinstance(est, PrivateConformalClassifier):
            est.conformalize(X[600:1400], y[600:1400])
        else:
            est.conformalize([[0.0]] * 300, np.linspace(-1, 1, 300))
        restored = pickle.loads(pickle.dumps(est))
        kinds = {type(o) for o in _objects(restored)}
        assert not kinds & {np.random.Generator, np.random.RandomState}
        assert not any(isinstance(o, np.random.BitGenerator) for o in _objects(restored))


def test_a_generator_is_refused_as_an_estimator_parameter_and_never_pickled(digits):
    X, y, model = digits
    clf = PrivateConformalClassifier(model, epsilon=1.0, random_state=np.random.default_rng(0))
    with pytest.raises(TypeError, match="random_state of an estimator"):
        clf.conformalize(X[600:1400], y[600:1400])
    restored = pickle.loads(pickle.dumps(clf))
    assert restored.random_state is None


def test_changing_random_state_after_a_seeded_release_takes_effect(digits):
    X, y, model = digits
    Xc, yc = X[600:1400], y[600:1400]
    clf = PrivateConformalClassifier(model, epsilon=0.5, n_bins=400, random_state=7)
    first = clf.conformalize(Xc, yc).threshold_
    assert clf.conformalize(Xc, yc).threshold_ == first  # a seed: the same release each call
    assert clf.privacy_report_.seeded
    clf.set_params(random_state=None)
    fresh = {clf.conformalize(Xc, yc).threshold_ for _ in range(12)}
    assert not clf.privacy_report_.seeded
    assert len(fresh) > 1  # OS entropy at each call, not the seeded stream
    clf.set_params(random_state=8)
    others = {clf.set_params(random_state=s).conformalize(Xc, yc).threshold_ for s in range(8, 20)}
    assert len(others) > 1  # a new seed takes effect


# ---------------------------------------------------------------- seeded flags
def test_every_seeded_release_says_so_and_unseeded_ones_do_not(digits):
    X, y, model = digits
    x = np.random.default_rng(0).uniform(size=400)
    scores = np.random.default_rng(1).uniform(size=1000)
    releases = {
        "calibrate": lambda rs: dpuq.calibrate(scores, alpha=0.1, epsilon=1.0, random_state=rs),
        "interval": lambda rs: dpuq.private_confidence_interval(
            x, epsilon=2.0, bounds=(0, 1), alpha=0.1, random_state=rs
        ),
        "normal": lambda rs: dpuq.normal_approximation_interval(
            x, epsilon=2.0, bounds=(0, 1), alpha=0.1, random_state=rs
        ),
        "bootstrap cdf": lambda rs: dpuq.private_bootstrap_cdf(
            x, 0.0, epsilon=1.0, bounds=(0, 1), random_state=rs
        ),
        "bootstrap grid": lambda rs: dpuq.private_bootstrap_cdf_grid(
            x, epsilon=1.0, bounds=(0, 1), random_state=rs
        ),
        "studentized": lambda rs: dpuq.private_studentized_cdf(
            np.tile(x, 10), 1.0, epsilon=5.0, bounds=(0, 1), random_state=rs
        ),
        "mean": lambda rs: __import__("dpuq.inference", fromlist=["x"]).private_mean(
            x, epsilon=1.0, bounds=(0, 1), random_state=rs
        ),
        "erm": lambda rs: PrivateERMClassifier(
            DecisionStumps(np.linspace(0, 16, 9), n_features=64), epsilon=1.0, random_state=rs
        ).fit(X[:300], (y[:300] > 4).astype(int)),
        "conformal": lambda rs: PrivateConformalClassifier(
            model, epsilon=1.0, random_state=rs
        ).conformalize(X[600:1400], y[600:1400]),
    }
    for name, release in releases.items():
        seeded = release(3)
        report = getattr(seeded, "privacy_report", None) or seeded.privacy_report_
        assert report.seeded, name
        assert "seeded" in str(report), name
        fresh = release(None)
        report = getattr(fresh, "privacy_report", None) or fresh.privacy_report_
        assert not report.seeded, name
        assert "seeded" not in str(report), name
