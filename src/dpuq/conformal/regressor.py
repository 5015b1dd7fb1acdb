"""``PrivateConformalRegressor``: scikit-learn style private prediction intervals."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpuq._validation import check_array_1d, check_epsilon
from dpuq.conformal._base import _PrivateConformalBase
from dpuq.conformal.calibration import PrivateCalibration, calibrate
from dpuq.conformal.regression_scores import (
    absolute_residual_intervals,
    absolute_residual_scores,
    check_bound,
    check_quantile_predictions,
    cqr_intervals,
    cqr_scores,
)
from dpuq.mechanisms.randomness import RandomState
from dpuq.report import PrivacyReport
from dpuq.scale import is_dask_collection

__all__ = ["PrivateConformalRegressor"]

_DESCRIBED = {
    "absolute": "absolute residual min(|y - ŷ| / B, 1)",
    "cqr": "CQR max(q_lo - y, y - q_hi) mapped to [0, 1] by (clip(r, -B, B) + B)/(2B)",
}

_SCORES = ("absolute", "cqr")


class PrivateConformalRegressor(_PrivateConformalBase):
    """Split-conformal prediction intervals whose threshold is released with ε-DP.

    Wraps a fitted regressor. ``conformalize`` turns held-out calibration data into scores in
    [0, 1] with a **public** bound ``B`` (:mod:`dpuq.conformal.regression_scores`) and releases
    the threshold ``t`` with :func:`dpuq.calibrate`. Intervals are then

    - ``score="absolute"``: ``[μ̂(x) - tB, μ̂(x) + tB]``;
    - ``score="cqr"``: ``[q̂_lo(x) - B(2t-1), q̂_hi(x) + B(2t-1)]`` (Romano et al. 2019);

    and ``t = 1`` (no informative release at this n, α, ε) gives the whole line. For a new
    exchangeable point ``P(lower <= Y <= upper) >= confidence_level``.

    The fitted object holds only released values (threshold, level, bins, the public bound,
    privacy report), never calibration scores, features or outcomes, so it can be shared.

    Privacy: ε-DP for the calibration set, replace-one with ``n`` public: each calibration
    person's score depends only on their own (x, y) and on public things (the model, B). The
    model is not protected by this class: train it on other people, or privately.

    Parameters
    ----------
    estimator : object or callable, or a pair of them for CQR
        ``score="absolute"``: anything with ``predict(X) -> (n,)`` or a callable ``X -> (n,)``.
        ``score="cqr"``: a pair ``(lower, upper)`` of such estimators (e.g. two scikit-learn
        ``GradientBoostingRegressor(loss="quantile", alpha=...)``), or one object/callable
        returning an (n, 2) array of lower and upper quantiles.
    epsilon : float
        Privacy parameter of the calibration release, > 0 (keyword-only, no default).
    confidence_level : float, default 0.9
        Target coverage ``1 - alpha``; ``alpha`` must be in (0, 0.5].
    score : {"absolute", "cqr"}, default "absolute"
    bound : float
        Public bound ``B > 0`` (keyword-only, no default): residuals beyond ``B`` (for CQR,
        distances beyond ``B`` outside or inside the quantile band) all get score 1 or 0. Too
        small a bound widens intervals (more releases at ``t = 1``), never loses coverage; too
        large a bound coarsens the grid (steps of ``B/m``). Never compute it from the
        calibration data.
    n_bins : "auto" or int, default "auto"
    prefit : bool, default True
        If False, ``fit(X, y)`` trains the estimator(s) first.
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments only.

    Attributes
    ----------
    threshold_ : float
        Released threshold in [0, 1].
    calibration_ : PrivateCalibration
    privacy_report_ : PrivacyReport
    n_calibration_ : int
    bound_ : float
        The public bound used at calibration (the intervals use this one).
    score_ : str

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = Ridge(alpha=0.1).fit(X[:150], y[:150])
    >>> reg = PrivateConformalRegressor(model, epsilon=5.0, bound=300.0, random_state=0)
    >>> reg = reg.conformalize(X[150:400], y[150:400])
    >>> reg.predict_interval(X[400:]).shape
    (42, 2)
    """

    _predict_verb = "predict_interval"

    def __init__(
        self,
        estimator: Any,
        *,
        epsilon: float,
        confidence_level: float = 0.9,
        score: str = "absolute",
        bound: float,
        n_bins: int | str = "auto",
        prefit: bool = True,
        random_state: RandomState = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.confidence_level = confidence_level
        self.score = score
        self.bound = bound
        self.n_bins = n_bins
        self.prefit = prefit
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _check_score(self) -> str:
        if self.score not in _SCORES:
            raise ValueError(f"score must be one of {list(_SCORES)}, got {self.score!r}")
        return self.score

    def _check_params(self) -> tuple[float, float, float]:
        self._check_score()
        return check_epsilon(self.epsilon), self._alpha(), check_bound(self.bound)

    @staticmethod
    def _call(est, X) -> np.ndarray:
        if hasattr(est, "predict"):
            return np.asarray(est.predict(X))
        if callable(est):
            return np.asarray(est(X))
        raise TypeError("estimator must have a predict method or be a callable")

    def _is_pair(self) -> bool:
        est = self.estimator
        return isinstance(est, tuple | list) and len(est) == 2

    def _point(self, X) -> np.ndarray:
        if self._is_pair():
            raise TypeError(
                "score='absolute' needs one estimator returning point predictions, not a pair"
            )
        return check_array_1d(self._call(self.estimator, X), "estimator's predictions")

    def _quantiles(self, X) -> np.ndarray:
        if self._is_pair():
            lo = check_array_1d(self._call(self.estimator[0], X), "lower estimator's predictions")
            hi = check_array_1d(self._call(self.estimator[1], X), "upper estimator's predictions")
            if lo.size != hi.size:
                raise ValueError(f"lower and upper estimators gave {lo.size} and {hi.size} rows")
            return np.column_stack((lo, hi))
        return check_quantile_predictions(
            self._call(self.estimator, X), "estimator's quantile predictions"
        )

    # ------------------------------------------------------------------ API
    def fit(self, X, y) -> PrivateConformalRegressor:
        """Train the estimator(s) on training data when ``prefit=False``; returns self."""
        self._check_params()
        if not self.prefit:
            ests = list(self.estimator) if self._is_pair() else [self.estimator]
            for est in ests:
                if not hasattr(est, "fit"):
                    raise TypeError("prefit=False needs estimator(s) with a fit method")
                est.fit(X, y)
        return self

    def conformalize(self, X_cal, y_cal) -> PrivateConformalRegressor:
        """Release the ε-DP threshold from calibration data; returns self.

        The calibration data and their scores are not kept.
        """
        epsilon, alpha, bound = self._check_params()
        y = None if is_dask_collection(X_cal) else check_array_1d(y_cal, "y_cal")
        if y is None:  # Dask input: scores computed on the workers, never gathered
            from dpuq.scale import score_partitions

            scores = score_partitions(self, X_cal, y_cal)
            described = _DESCRIBED[self.score]
        elif self.score == "absolute":
            pred = self._point(X_cal)
            if pred.size != y.size:
                raise ValueError(f"X_cal gave {pred.size} predictions but y_cal has {y.size}")
            scores = absolute_residual_scores(pred, y, bound=bound)
            described = _DESCRIBED["absolute"]
        else:
            quant = self._quantiles(X_cal)
            if quant.shape[0] != y.size:
                raise ValueError(f"X_cal gave {quant.shape[0]} predictions but y_cal has {y.size}")
            scores = cqr_scores(quant, y, bound=bound)
            described = _DESCRIBED["cqr"]
        cal = calibrate(
            scores, alpha=alpha, epsilon=epsilon, n_bins=self.n_bins, random_state=self._rng()
        )
        details = dict(cal.privacy_report.details)
        details.update({"score": described, "bound (public)": bound})
        report = dataclasses.replace(cal.privacy_report, details=details)
        self.calibration_: PrivateCalibration = dataclasses.replace(cal, privacy_report=report)
        self.threshold_ = self.calibration_.threshold
        self.privacy_report_: PrivacyReport = report
        self.n_calibration_ = self.calibration_.n
        self.bound_ = bound
        self.score_ = self.score
        return self

    def predict(self, X) -> np.ndarray:
        """Point predictions: ``μ̂(x)``, or for CQR the midpoint of the quantile band."""
        self._check_score()
        if self.score == "absolute":
            return self._point(X)
        return self._quantiles(X).mean(axis=1)

    def predict_interval(self, X) -> np.ndarray:
        """Prediction intervals of shape (n, 2): columns lower, upper.

        ``(-inf, inf)`` rows when the release was uninformative (threshold 1).
        """
        self._check_conformalized()
        if self.score_ == "absolute":
            return absolute_residual_intervals(self._point(X), self.threshold_, bound=self.bound_)
        return cqr_intervals(self._quantiles(X), self.threshold_, bound=self.bound_)
