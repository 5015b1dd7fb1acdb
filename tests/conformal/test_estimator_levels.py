"""The estimators with several confidence levels, ``score(X, y)`` as coverage, and the
deprecated ``score=`` alias of ``conformity_score=``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge

import dpuq


@pytest.fixture(scope="module")
def digits(digits_model):
    return digits_model


def test_classifier_several_levels(digits):
    X, y, model = digits
    clf = dpuq.PrivateConformalClassifier(
        model, epsilon=1.0, confidence_level=[0.8, 0.9, 0.95], random_state=0
    ).conformalize(X[600:1500], y[600:1500])
    sets = clf.predict_set(X[1500:]).sets
    assert sets.shape == (X.shape[0] - 1500, 10, 3)
    assert np.all(sets[..., 0] <= sets[..., 1]) and np.all(sets[..., 1] <= sets[..., 2])
    cov = sets[np.arange(len(sets)), y[1500:]].mean(axis=0)
    assert np.all(cov >= np.array([0.8, 0.9, 0.95]) - 0.05)
    assert clf.threshold_.shape == (3,) and clf.privacy_report_.epsilon == 1.0
    # one coverage per level, as MAPIE's metrics (issue 39: it was the mean over levels)
    score = clf.score(X[1500:], y[1500:])
    assert isinstance(score, np.ndarray) and score.shape == (3,)
    np.testing.assert_allclose(score, cov)
    w = np.arange(len(sets)) % 3 + 1.0
    hit = sets[np.arange(len(sets)), y[1500:]]
    weighted = clf.score(X[1500:], y[1500:], sample_weight=w)
    np.testing.assert_allclose(weighted, np.average(hit, axis=0, weights=w))


def test_regressor_several_levels_and_score():
    X, y = load_diabetes(return_X_y=True)
    model = Ridge(alpha=0.1).fit(X[:150], y[:150])
    reg = dpuq.PrivateConformalRegressor(
        model, epsilon=5.0, bound=300.0, confidence_level=(0.8, 0.9), random_state=0
    ).conformalize(X[150:400], y[150:400])
    iv = reg.predict_interval(X[400:]).sets
    assert iv.shape == (42, 2, 2)
    assert np.all(iv[:, 0, 1] <= iv[:, 0, 0]) and np.all(iv[:, 1, 0] <= iv[:, 1, 1])
    single = dpuq.PrivateConformalRegressor(model, epsilon=5.0, bound=300.0, random_state=0)
    single.conformalize(X[150:400], y[150:400])
    iv1 = single.predict_interval(X[400:]).sets
    expected = np.mean((iv1[:, 0] <= y[400:]) & (y[400:] <= iv1[:, 1]))
    assert single.score(X[400:], y[400:]) == pytest.approx(expected)
    assert isinstance(single.score(X[400:], y[400:]), float)  # one level: scikit-learn's float
    per_level = reg.score(X[400:], y[400:])
    covered = (iv[:, 0] <= y[400:, None]) & (y[400:, None] <= iv[:, 1])
    np.testing.assert_allclose(per_level, covered.mean(axis=0))


def test_mapie_outputs_point_prediction_and_sets(digits):
    """MAPIE 1.x: predict(X) is the point prediction; predict_set / predict_interval give
    (y_pred, sets); today's callers of the sets alone keep working, with a FutureWarning."""
    X, y, model = digits
    clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
    clf.conformalize(X[600:1500], y[600:1500])
    y_pred, sets = clf.predict_set(X[1500:])
    np.testing.assert_array_equal(y_pred, clf.predict(X[1500:]))
    np.testing.assert_array_equal(y_pred, model.predict(X[1500:]))
    assert sets.shape == (X.shape[0] - 1500, 10) and sets.dtype == bool
    old = clf.predict_set(X[1500:])
    with pytest.warns(FutureWarning, match=r"_, sets = est.predict_set\(X\)"):
        np.testing.assert_array_equal(old.sum(axis=1), sets.sum(axis=1))
    with pytest.warns(FutureWarning):
        np.testing.assert_array_equal(old[:, 3], sets[:, 3])
    with pytest.warns(FutureWarning):
        assert np.asarray(old).shape == sets.shape
    Xr, yr = load_diabetes(return_X_y=True)
    reg = dpuq.PrivateConformalRegressor(
        Ridge(alpha=0.1).fit(Xr[:150], yr[:150]), epsilon=5.0, bound=300.0, random_state=0
    ).conformalize(Xr[150:400], yr[150:400])
    y_hat, intervals = reg.predict_interval(Xr[400:])
    np.testing.assert_array_equal(y_hat, reg.predict(Xr[400:]))
    assert intervals.shape == (42, 2) and np.all(intervals[:, 0] <= y_hat)
    with pytest.warns(FutureWarning):
        assert reg.predict_interval(Xr[400:]).shape == (42, 2)


def test_score_before_conformalize_is_the_models(digits):
    X, y, model = digits
    clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0)
    assert clf.score(X[1500:], y[1500:]) == pytest.approx(model.score(X[1500:], y[1500:]))


def test_score_alias_is_deprecated_and_cloned(digits):
    _, _, model = digits
    with pytest.warns(FutureWarning, match="conformity_score"):
        clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0, score="aps")
    assert clf.conformity_score == "aps" and "score" not in clf.get_params()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert clone(clf).conformity_score == "aps"
    with pytest.raises(TypeError, match="only"):
        dpuq.PrivateConformalClassifier(model, epsilon=1.0, score="aps", conformity_score="raps")
    with pytest.raises(TypeError, match="unexpected"):
        dpuq.PrivateConformalRegressor(model, epsilon=1.0, bound=1.0, scor="cqr")
    assert callable(clf.score)  # scikit-learn's method, no longer shadowed


def test_several_levels_refused_with_class_conditional(digits):
    X, y, model = digits
    clf = dpuq.PrivateConformalClassifier(
        model, epsilon=1.0, confidence_level=[0.8, 0.9], class_conditional=True
    )
    with pytest.raises(ValueError, match="one confidence_level"):
        clf.conformalize(X[600:1000], y[600:1000])
    with pytest.raises(ValueError, match="repeat"):
        dpuq.PrivateConformalClassifier(model, epsilon=1.0, confidence_level=[0.9, 0.9]).fit(X, y)


def test_several_levels_release_file_roundtrip(digits, tmp_path):
    X, y, model = digits
    clf = dpuq.PrivateConformalClassifier(
        model, epsilon=1.0, confidence_level=[0.8, 0.95], random_state=0
    ).conformalize(X[600:1500], y[600:1500])
    path = tmp_path / "rel.json"
    clf.save_release(path)
    again = dpuq.PrivateConformalClassifier.load_release(path, model)
    np.testing.assert_array_equal(again.predict_set(X[1500:]).sets, clf.predict_set(X[1500:]).sets)
    assert again.confidence_level == pytest.approx([0.8, 0.95])
    cal = dpuq.PrivateCalibration.load(path)
    assert cal.threshold.tolist() == clf.threshold_.tolist() and cal.alpha == clf.calibration_.alpha


def test_cqr_several_levels():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1500, 1))
    y = x[:, 0] + rng.normal(size=1500)

    def band(X):
        return np.column_stack((X[:, 0] - 1.0, X[:, 0] + 1.0))

    reg = dpuq.PrivateConformalRegressor(
        band, epsilon=2.0, bound=4.0, conformity_score="cqr", confidence_level=[0.8, 0.9],
        random_state=0,
    ).conformalize(x[:1000], y[:1000])  # fmt: skip
    iv = reg.predict_interval(x[1000:]).sets
    assert iv.shape == (500, 2, 2)
    cov = dpuq.regression_coverage_score(y[1000:], iv)
    assert np.all(cov >= np.array([0.8, 0.9]) - 0.05) and cov[1] >= cov[0]
