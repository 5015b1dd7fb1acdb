"""``PrivateConformalClassifier``: scikit-learn style private prediction sets."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpuq._validation import check_epsilon, check_probabilities
from dpuq.conformal._base import _PrivateConformalBase
from dpuq.conformal.calibration import PrivateCalibration, calibrate
from dpuq.conformal.scores import score_function
from dpuq.conformal.sets import prediction_sets
from dpuq.mechanisms.randomness import RandomState
from dpuq.report import PrivacyReport
from dpuq.scale import is_dask_collection

__all__ = ["PrivateConformalClassifier"]


class PrivateConformalClassifier(_PrivateConformalBase):
    """Split-conformal prediction sets whose threshold is released with ε-DP.

    Wraps any fitted classifier with ``predict_proba`` (or a plain callable returning class
    probabilities). ``conformalize`` computes conformity scores on held-out calibration data
    and releases the threshold with :func:`dpuq.calibrate`; the fitted object then holds only
    released values (threshold, level, bins, privacy report), never calibration scores,
    features or labels, so it can be shared.

    Privacy: ε-DP for the calibration set, replace-one with ``n`` public. The model itself is
    not protected by this class: train it on other people, or privately (``dpuq.training``).

    Parameters
    ----------
    estimator : object with ``predict_proba``, or callable
        The classifier. If ``prefit=False`` it must also have ``fit``.
    epsilon : float
        Privacy parameter of the calibration release, > 0 (keyword-only, no default).
    confidence_level : float, default 0.9
        Target coverage ``1 - alpha``; ``alpha`` must be in (0, 0.5].
    score : {"lac", "aps", "raps"}, default "lac"
    n_bins : "auto" or int, default "auto"
    prefit : bool, default True
        If False, ``fit(X, y)`` trains the estimator first.
    score_params : dict, optional
        Extra keyword arguments of the score (e.g. ``{"lam": 0.01, "k_reg": 5}`` for RAPS,
        ``{"randomized": True}`` for APS/RAPS).
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments only.

    Attributes
    ----------
    threshold_ : float
    calibration_ : PrivateCalibration
    privacy_report_ : PrivacyReport
    classes_ : ndarray

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_digits(return_X_y=True)
    >>> model = LogisticRegression(max_iter=2000).fit(X[:800], y[:800])
    >>> clf = PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
    >>> clf = clf.conformalize(X[800:1600], y[800:1600])
    >>> sets = clf.predict_set(X[1600:])
    >>> sets.shape
    (197, 10)
    """

    _predict_verb = "predict_set"

    def __init__(
        self,
        estimator: Any,
        *,
        epsilon: float,
        confidence_level: float = 0.9,
        score: str = "lac",
        n_bins: int | str = "auto",
        prefit: bool = True,
        score_params: dict | None = None,
        random_state: RandomState = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.confidence_level = confidence_level
        self.score = score
        self.n_bins = n_bins
        self.prefit = prefit
        self.score_params = score_params
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _proba(self, X) -> np.ndarray:
        est = self.estimator
        if hasattr(est, "predict_proba"):
            probs = est.predict_proba(X)
        elif callable(est):
            probs = est(X)
        else:
            raise TypeError("estimator must have predict_proba or be a callable")
        probs = check_probabilities(probs, "estimator's probabilities")
        if hasattr(self, "classes_") and probs.shape[1] != len(self.classes_):
            raise ValueError(
                f"estimator returned {probs.shape[1]} columns but there are "
                f"{len(self.classes_)} classes"
            )
        return probs

    def _score_matrix(self, probs: np.ndarray, labels=None) -> np.ndarray:
        params = dict(self.score_params or {})
        if params.get("randomized"):
            params["random_state"] = self._rng()
        return score_function(self.score)(probs, labels, **params)

    def _label_index(self, y) -> np.ndarray:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
        classes = self.classes_
        pos = np.searchsorted(classes, y)
        pos_clipped = np.minimum(pos, len(classes) - 1)
        bad = classes[pos_clipped] != y
        if bad.any():
            raise ValueError(
                f"y has {int(bad.sum())} label(s) not among the classes {classes.tolist()}"
            )
        return pos

    def _set_classes(self, y=None, n_columns: int | None = None) -> None:
        if hasattr(self.estimator, "classes_"):
            self.classes_ = np.asarray(self.estimator.classes_)
        elif n_columns is not None:
            self.classes_ = np.arange(n_columns)
        elif y is not None:
            self.classes_ = np.unique(np.asarray(y))

    # ------------------------------------------------------------------ API
    def fit(self, X, y) -> PrivateConformalClassifier:
        """Train the estimator on training data when ``prefit=False``; returns self."""
        check_epsilon(self.epsilon)
        self._alpha()
        if not self.prefit:
            if not hasattr(self.estimator, "fit"):
                raise TypeError("prefit=False needs an estimator with a fit method")
            self.estimator.fit(X, y)
        self._set_classes(y=y)
        return self

    def _calibration_scores(self, X_cal, y_cal) -> np.ndarray:
        probs = self._proba(X_cal)
        if not hasattr(self, "classes_"):
            self._set_classes(n_columns=probs.shape[1])
        if len(np.asarray(y_cal)) != probs.shape[0]:
            raise ValueError(
                f"X_cal has {probs.shape[0]} rows but y_cal has {len(np.asarray(y_cal))}"
            )
        return self._score_matrix(probs, self._label_index(y_cal))

    def conformalize(self, X_cal, y_cal) -> PrivateConformalClassifier:
        """Release the ε-DP threshold from calibration data; returns self.

        The calibration data and their scores are not kept.
        """
        epsilon = check_epsilon(self.epsilon)
        alpha = self._alpha()
        score_function(self.score)
        if is_dask_collection(X_cal):  # scores computed on the workers, never gathered
            from dpuq.scale import score_partitions

            self._set_classes()
            scores = score_partitions(self, X_cal, y_cal)
        else:
            scores = self._calibration_scores(X_cal, y_cal)
        self.calibration_: PrivateCalibration = calibrate(
            scores, alpha=alpha, epsilon=epsilon, n_bins=self.n_bins, random_state=self._rng()
        )
        self.threshold_ = self.calibration_.threshold
        self.privacy_report_: PrivacyReport = self.calibration_.privacy_report
        self.n_calibration_ = self.calibration_.n
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities of the wrapped estimator."""
        return self._proba(X)

    def predict(self, X) -> np.ndarray:
        """Point predictions: the most probable class."""
        probs = self._proba(X)
        if not hasattr(self, "classes_"):
            self._set_classes(n_columns=probs.shape[1])
        return self.classes_[np.argmax(probs, axis=1)]

    def predict_set(self, X) -> np.ndarray:
        """Boolean prediction sets of shape (n, n_classes), columns in ``classes_`` order."""
        self._check_conformalized()
        return prediction_sets(self._score_matrix(self._proba(X)), self.threshold_)
