"""PrivateConformalClassifier: API, stored state and errors."""

import pickle

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

import dpuq


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    idx = np.random.default_rng(0).permutation(len(y))
    return X[idx[:700]], y[idx[:700]], X[idx[700:1400]], y[idx[700:1400]], X[idx[1400:]]


@pytest.fixture(scope="module")
def model(digits):
    X, y, *_ = digits
    return LogisticRegression(max_iter=2000).fit(X, y)


class TestWorkflow:
    def test_conformalize_then_predict_set(self, digits, model):
        _, _, Xc, yc, Xt = digits
        clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
        assert clf.conformalize(Xc, yc) is clf
        sets = clf.predict_set(Xt).sets
        assert sets.shape == (len(Xt), 10) and sets.dtype == bool
        assert clf.threshold_ == clf.calibration_.threshold
        assert clf.privacy_report_.epsilon == 1.0
        assert clf.classes_.tolist() == list(range(10))
        np.testing.assert_array_equal(clf.predict(Xt), model.predict(Xt))

    def test_fit_trains_when_not_prefit(self, digits):
        X, y, Xc, yc, Xt = digits
        clf = dpuq.PrivateConformalClassifier(
            LogisticRegression(max_iter=2000), epsilon=2.0, prefit=False, random_state=0
        )
        clf.fit(X, y).conformalize(Xc, yc)
        assert clf.predict_set(Xt).sets.any(axis=1).mean() > 0.5

    def test_callable_estimator_and_string_labels(self, digits, model):
        _, _, Xc, yc, Xt = digits
        names = np.array([f"digit{k}" for k in range(10)])
        clf = dpuq.PrivateConformalClassifier(model.predict_proba, epsilon=1.0, random_state=0)
        clf.fit(None, names)  # classes from the training labels
        clf.conformalize(Xc, names[yc])
        assert clf.predict(Xt[:3]).tolist() == names[model.predict(Xt[:3])].tolist()

    @pytest.mark.parametrize("score", ["lac", "aps", "raps"])
    def test_scores(self, digits, model, score):
        _, _, Xc, yc, Xt = digits
        clf = dpuq.PrivateConformalClassifier(
            model, epsilon=1.0, conformity_score=score, random_state=1
        )
        clf.conformalize(Xc, yc)
        size = clf.predict_set(Xt).sets.sum(axis=1).mean()
        assert clf.calibration_.informative and 0.5 <= size < 3  # informative, not full

    def test_randomised_aps(self, digits, model):
        _, _, Xc, yc, Xt = digits
        clf = dpuq.PrivateConformalClassifier(
            model,
            epsilon=1.0,
            conformity_score="aps",
            score_params={"randomized": True},
            random_state=1,
        )
        clf.conformalize(Xc, yc)
        assert clf.predict_set(Xt).sets.shape == (len(Xt), 10)


class TestStoredState:
    def test_pickle_holds_no_calibration_score_or_label(self, digits, model):
        _, _, Xc, yc, _ = digits
        clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
        clf.conformalize(Xc, yc)
        blob = pickle.dumps(clf)
        scores = dpuq.lac_scores(model.predict_proba(Xc), yc)
        leaked = [s for s in np.unique(scores) if s != 0 and np.float64(s).tobytes() in blob]
        assert leaked == []
        model_blob = pickle.dumps(model)
        assert len(blob) - len(model_blob) < 4000  # only a handful of released values added
        assert np.asarray(Xc).tobytes()[:64] not in blob

    def test_unpickled_object_predicts_the_same(self, digits, model):
        _, _, Xc, yc, Xt = digits
        clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
        clf.conformalize(Xc, yc)
        clone = pickle.loads(pickle.dumps(clf))
        np.testing.assert_array_equal(clone.predict_set(Xt).sets, clf.predict_set(Xt).sets)


class TestErrors:
    def test_predict_set_before_conformalize(self, model, digits):
        clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0)
        with pytest.raises(dpuq.NotFittedError, match="conformalize"):
            clf.predict_set(digits[4])

    def test_no_validation_in_init(self):
        clf = dpuq.PrivateConformalClassifier(None, epsilon=-3, confidence_level=7)
        assert clf.epsilon == -3

    @pytest.mark.parametrize(
        ("params", "match"),
        [
            ({"epsilon": 0}, "epsilon"),
            ({"confidence_level": 0.3}, "confidence_level"),
            ({"confidence_level": 1.0}, "confidence_level"),
            ({"conformity_score": "bogus"}, "score must be one of"),
            ({"n_bins": 1}, "n_bins"),
        ],
    )
    def test_bad_parameters(self, digits, model, params, match):
        _, _, Xc, yc, _ = digits
        kwargs = {"epsilon": 1.0} | params
        with pytest.raises(ValueError, match=match):
            dpuq.PrivateConformalClassifier(model, **kwargs).conformalize(Xc, yc)

    def test_labels_outside_classes(self, digits, model):
        _, _, Xc, yc, _ = digits
        y = yc.copy()
        y[0] = 42
        with pytest.raises(ValueError, match="not among the classes"):
            dpuq.PrivateConformalClassifier(model, epsilon=1.0).conformalize(Xc, y)

    def test_mismatched_lengths(self, digits, model):
        _, _, Xc, yc, _ = digits
        with pytest.raises(ValueError, match="rows"):
            dpuq.PrivateConformalClassifier(model, epsilon=1.0).conformalize(Xc, yc[:-1])

    def test_estimator_returning_logits(self, digits):
        _, _, Xc, yc, _ = digits
        with pytest.raises(ValueError, match="sum to 1"):
            dpuq.PrivateConformalClassifier(
                lambda X: np.ones((len(X), 10)), epsilon=1.0
            ).conformalize(Xc, yc)

    def test_object_without_predict_proba(self, digits):
        _, _, Xc, yc, _ = digits
        with pytest.raises(TypeError, match="predict_proba"):
            dpuq.PrivateConformalClassifier(object(), epsilon=1.0).conformalize(Xc, yc)
