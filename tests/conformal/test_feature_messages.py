"""No error quotes a person's features: ``X`` is checked before the wrapped model sees it
(probe defect D8: scikit-learn's "Expected 2D array ... array=[0.294 -1.51 0.644]" was passed
on by ``update``, ``conformalize``, ``predict_set`` and ``predict_interval``)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge

import dpuq
from dpuq.conformal._base import check_features

VALUES = (0.2941234, -1.5112345, 0.6443217)
ROW = np.array(VALUES)  # one person's features, 1-d by mistake
QUOTED = re.compile(r"2941|5112|6443|0\.29|1\.51|0\.64")

RNG = np.random.default_rng(0)
X_TRAIN = RNG.normal(size=(200, 3))
Y_CLASS = (X_TRAIN[:, 0] > 0).astype(int)
Y_REG = X_TRAIN[:, 0] + RNG.normal(size=200)


def _classifier(**kw):
    return dpuq.PrivateConformalClassifier(
        LogisticRegression().fit(X_TRAIN, Y_CLASS), epsilon=1.0, random_state=0, **kw
    )


def _regressor(**kw):
    return dpuq.PrivateConformalRegressor(
        Ridge().fit(X_TRAIN, Y_REG), epsilon=1.0, bound=3.0, random_state=0, **kw
    )


def _online_classifier():
    return dpuq.PrivateOnlineConformalClassifier(
        LogisticRegression().fit(X_TRAIN, Y_CLASS), epsilon=1.0, random_state=0
    )


def _online_regressor():
    return dpuq.PrivateOnlineConformalRegressor(
        Ridge().fit(X_TRAIN, Y_REG), epsilon=1.0, bound=3.0, random_state=0
    )


def _released(est):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if isinstance(est, dpuq.PrivateConformalClassifier):
            return est.conformalize(X_TRAIN, Y_CLASS)
        return est.conformalize(X_TRAIN, Y_REG)


CALLS = {
    "online classifier update": lambda: _online_classifier().update(ROW, [0, 1, 0]),
    "online regressor update": lambda: _online_regressor().update(ROW, [0.0, 1.0, 0.0]),
    "online classifier predict_set": lambda: _online_classifier().start().predict_set(ROW),
    "online regressor predict_interval": (
        lambda: _online_regressor().start().predict_interval(ROW)
    ),
    "classifier conformalize": lambda: _classifier().conformalize(ROW, [0, 1, 0]),
    "classifier predict_set": lambda: _released(_classifier()).predict_set(ROW),
    "classifier predict": lambda: _released(_classifier()).predict(ROW),
    "classifier predict_proba": lambda: _released(_classifier()).predict_proba(ROW),
    "classifier score before release": lambda: _classifier().score(ROW, [0, 1, 0]),
    "classifier class-conditional": (
        lambda: _classifier(class_conditional=True).conformalize(ROW, [0, 1, 0])
    ),
    "regressor conformalize": lambda: _regressor().conformalize(ROW, [0.0, 1.0, 0.0]),
    "regressor predict_interval": lambda: _released(_regressor()).predict_interval(ROW),
    "regressor predict": lambda: _released(_regressor()).predict(ROW),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_one_dimensional_features_are_refused_by_name_without_their_values(name):
    with pytest.raises(ValueError) as info:
        CALLS[name]()
    message = str(info.value)
    assert not QUOTED.search(message), message
    assert re.search(r"\bX(_cal)? must be 2-dimensional", message), message
    assert "Reshape your data" in message  # scikit-learn's advice, kept
    assert info.value.__cause__ is None  # the model's own error is not chained either


@pytest.mark.parametrize(
    "X",
    [
        np.array([["SENTINEL", "0.2941234"]]),
        np.array([[0.2941234, "SENTINEL"]], dtype=object),
        np.array([[0.2941234 + 1j, -1.5112345]]),
    ],
    ids=["strings", "object", "complex"],
)
def test_a_models_error_on_non_numeric_features_shows_none_of_them(X, tmp_path):
    """Complex data are refused; text reaches the model (a pipeline may encode it), and the
    model's error on it ("could not convert string to float: 'SENTINEL'") is replaced by its
    type. Either way before any charge."""
    led = dpuq.Ledger(tmp_path / "l.db")
    led.create_budget("d", epsilon=5.0)
    for call in (
        lambda: _classifier().conformalize(X, [0], ledger=led, dataset="d"),
        lambda: _regressor().conformalize(X, [0.0], ledger=led, dataset="d"),
        lambda: _released(_classifier()).predict_set(X),
        lambda: _online_regressor().update(X, [0.0]),
    ):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "X" in message and not QUOTED.search(message) and "SENTINEL" not in message
    assert led.status("d").spent_epsilon == 0.0


def test_features_the_models_take_still_pass():
    pd = pytest.importorskip("pandas")
    sparse = pytest.importorskip("scipy.sparse")
    clf = _released(_classifier())
    expected = clf.predict_set(X_TRAIN[:5]).sets
    for X in (
        X_TRAIN[:5].tolist(),
        X_TRAIN[:5].astype(object),  # numbers held as objects: converted as scikit-learn does
        X_TRAIN[:5].astype(np.float32),
        pd.DataFrame(X_TRAIN[:5]),
        sparse.csr_matrix(X_TRAIN[:5]),
    ):
        np.testing.assert_array_equal(clf.predict_set(X).sets, expected)
    with_nan = X_TRAIN[:5].copy()
    with_nan[0, 0] = np.nan  # not refused here: the model decides (scikit-learn's own message)
    assert check_features(with_nan) is with_nan
    with pytest.raises(ValueError, match="NaN"):
        clf.predict_set(with_nan)
    images = np.zeros((2, 1, 4, 4))  # a network's input: more than 2 dimensions pass
    assert check_features(images) is images


def test_a_pipeline_that_encodes_text_still_works():
    """Text columns that the wrapped pipeline one-hot encodes are the model's business."""
    pd = pytest.importorskip("pandas")
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame = pd.DataFrame({"x": X_TRAIN[:, 0], "site": np.where(X_TRAIN[:, 1] > 0, "a", "b")})
    enc = make_column_transformer((OneHotEncoder(), ["site"]), remainder="passthrough")
    model = make_pipeline(enc, LogisticRegression()).fit(frame, Y_CLASS)
    clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.conformalize(frame, Y_CLASS)
    assert clf.predict_set(frame.iloc[:5]).sets.shape[0] == 5
