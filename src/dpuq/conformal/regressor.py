"""``PrivateConformalRegressor``: scikit-learn style private prediction intervals."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from dpuq._validation import as_array, check_array_1d, check_epsilon
from dpuq.conformal._base import (
    _deprecated_score_alias,
    _hide_deprecated_kwargs,
    _PrivateConformalBase,
    model_errors_hidden,
)
from dpuq.conformal.calibration import UninformativeReleaseWarning
from dpuq.conformal.class_conditional import check_groups, grouped_intervals
from dpuq.conformal.outputs import ConformalPrediction
from dpuq.conformal.regression_scores import (
    absolute_residual_intervals,
    absolute_residual_scores,
    check_bound,
    check_quantile_predictions,
    cqr_intervals,
    cqr_scores,
)
from dpuq.mechanisms.randomness import RandomState
from dpuq.scale.sources import is_dask_collection

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

    - ``conformity_score="absolute"``: ``[μ̂(x) - tB, μ̂(x) + tB]``;
    - ``conformity_score="cqr"``: ``[q̂_lo(x) - B(2t-1), q̂_hi(x) + B(2t-1)]`` (Romano et al. 2019);

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
        ``conformity_score="absolute"``: anything with ``predict(X) -> (n,)`` or a callable
        ``X -> (n,)``. ``conformity_score="cqr"``: a pair ``(lower, upper)`` of such
        estimators (e.g. two scikit-learn
        ``GradientBoostingRegressor(loss="quantile", alpha=...)``), or one object/callable
        returning an (n, 2) array of lower and upper quantiles.
    epsilon : float
        Privacy parameter of the calibration release, > 0 (keyword-only, no default).
    confidence_level : float or sequence of float, default 0.9
        Target coverage ``1 - alpha``; ``alpha`` must be in (0, 0.5]. A sequence releases one
        threshold per level jointly for the same total ε, and ``predict_interval``'s
        intervals have shape (n, 2, L), as MAPIE's do.
    conformity_score : {"absolute", "cqr"}, default "absolute"
        (``score=`` is a deprecated alias, kept for one release; it warns.)
    bound : float or dpuq.PublicBound
        Public bound ``B > 0`` (keyword-only, no default): residuals beyond ``B`` (for CQR,
        distances beyond ``B`` outside or inside the quantile band) all get score 1 or 0. Too
        small a bound widens intervals (more releases at ``t = 1``), never loses coverage; too
        large a bound coarsens the grid (steps of ``B/m``). Never compute it from the
        calibration data.
    n_bins : "auto" or int, default "auto"
    method : {"certified", "paper"}, default "certified"
        Calibration method of :func:`dpuq.calibrate` (the certified level, or Algorithm 3).
    prefit : bool, default True
        If False, ``fit(X, y)`` trains clones of the estimator(s) into ``estimator_`` (the
        ``estimator`` parameter itself is left untouched, as in scikit-learn). For the bound,
        see :func:`dpuq.public_bound`.
    random_state : None or int
        None (default) draws fresh OS entropy at every release: use it for real releases. An
        int seed gives the same release at every call on the same data (experiments and tests
        only; the report then says "seeded"). A Generator is refused: it would be copied into
        clones and pickles (see :mod:`dpuq._estimator`).
    n_groups : int, optional
        Number of public groups (e.g. sites) for group-conditional intervals: then
        ``conformalize`` and ``predict_interval`` take ``groups=`` (integers
        ``0..n_groups-1``), one threshold is released per group with
        :func:`dpuq.calibrate_by_class` (coverage for every group; ε-DP under replace-one in
        total), and each point gets its group's interval.

    Attributes
    ----------
    threshold_ : float, or ndarray of shape (n_groups,) with ``n_groups``
        Released threshold(s) in [0, 1].
    calibration_ : PrivateCalibration
    privacy_report_ : PrivacyReport
    n_calibration_ : int
    bound_ : float
        The public bound used at calibration (the intervals use this one).
    score_ : str
    estimator_ : object or pair
        The trained clone(s) of ``estimator`` (``prefit=False`` only).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = Ridge(alpha=0.1).fit(X[:150], y[:150])
    >>> reg = PrivateConformalRegressor(model, epsilon=5.0, bound=300.0, random_state=0)
    >>> reg = reg.conformalize(X[150:400], y[150:400])
    >>> y_pred, intervals = reg.predict_interval(X[400:])  # as in MAPIE 1.x
    >>> y_pred.shape, intervals.shape
    ((42,), (42, 2))
    """

    _predict_verb = "predict_interval"
    _estimator_type = "regressor"

    @_hide_deprecated_kwargs
    def __init__(
        self,
        estimator: Any,
        *,
        epsilon: float,
        confidence_level: float = 0.9,
        conformity_score: str = "absolute",
        bound: float,
        n_bins: int | str = "auto",
        method: str = "certified",
        prefit: bool = True,
        random_state: RandomState = None,
        n_groups: int | None = None,
        **deprecated: Any,
    ) -> None:  # ``**deprecated``: the ``score=`` alias only (hidden from the signature)
        self.estimator = estimator
        self.epsilon = epsilon
        self.confidence_level = confidence_level
        self.conformity_score = _deprecated_score_alias(conformity_score, "absolute", deprecated)
        self.bound = bound
        self.n_bins = n_bins
        self.method = method
        self.prefit = prefit
        self.random_state = random_state
        self.n_groups = n_groups

    # ------------------------------------------------------------------ helpers
    def _check_score(self) -> str:
        if self.conformity_score not in _SCORES:
            raise ValueError(
                f"conformity_score must be one of {list(_SCORES)}, got {self.conformity_score!r}"
            )
        return self.conformity_score

    def _check_params(self) -> tuple[float, float, float]:
        from dpuq.conformal.bound import PublicBound

        self._check_score()
        bound = self.bound.bound if isinstance(self.bound, PublicBound) else self.bound
        return check_epsilon(self.epsilon), self._alpha(), check_bound(bound)

    @staticmethod
    def _call(est, X) -> np.ndarray:
        if hasattr(est, "predict"):
            return as_array(est.predict(X), "estimator's predictions")
        if callable(est):
            return as_array(est(X), "estimator's predictions")
        raise TypeError("estimator must have a predict method or be a callable")

    def _is_pair(self) -> bool:
        est = self._model()
        return isinstance(est, tuple | list) and len(est) == 2

    def _point(self, X, name: str = "X") -> np.ndarray:
        """Point predictions on ``X`` (named ``name`` in errors), checked."""
        if self._is_pair():
            raise TypeError(
                "conformity_score='absolute' needs one estimator returning point predictions, "
                "not a pair"
            )
        with model_errors_hidden(X, name):  # X checked first: its errors can quote features
            predictions = self._call(self._model(), X)
        return check_array_1d(predictions, "estimator's predictions")

    def _quantiles(self, X, name: str = "X") -> np.ndarray:
        """(n, 2) lower and upper quantile predictions on ``X``, checked."""
        if self._is_pair():
            lower, upper = self._model()
            with model_errors_hidden(X, name):  # X checked first: its errors can quote features
                lo_raw, hi_raw = self._call(lower, X), self._call(upper, X)
            lo = check_array_1d(lo_raw, "lower estimator's predictions")
            hi = check_array_1d(hi_raw, "upper estimator's predictions")
            if lo.size != hi.size:
                raise ValueError(f"lower and upper estimators gave {lo.size} and {hi.size} rows")
            return np.column_stack((lo, hi))
        with model_errors_hidden(X, name):
            raw = self._call(self._model(), X)
        return check_quantile_predictions(raw, "estimator's quantile predictions")

    def _dask_scores(self, X, y):
        """Scores on Dask ``X``, ``y``: lazy, one task per row block, never gathered (this
        estimator hands its block scoring function to :func:`dpuq.scale._dask.map_scores`)."""
        from dpuq.scale._dask import map_scores

        _, _, bound = self._check_params()

        def block_scores(xb: np.ndarray, yb: np.ndarray) -> np.ndarray:
            if xb.shape[0] == 0:
                return np.empty(0)
            yv = check_array_1d(yb, "y_cal", allow_empty=True)  # the memory path's message
            if self.conformity_score == "absolute":
                return absolute_residual_scores(self._point(xb, "X_cal"), yv, bound=bound)
            return cqr_scores(self._quantiles(xb, "X_cal"), yv, bound=bound)

        return map_scores(block_scores, X, y)

    # ------------------------------------------------------------------ API
    def fit(self, X, y) -> PrivateConformalRegressor:
        """Train the estimator(s) on training data when ``prefit=False``; returns self."""
        self._check_params()
        if not self.prefit:
            shape = getattr(y, "shape", None)
            if shape is not None and len(shape) == 2 and shape[1] == 1:  # column: warn, flatten
                from sklearn.utils.validation import column_or_1d

                y = column_or_1d(y, warn=True)
            self._fit_model(X, y)
        return self

    def conformalize(
        self, X_cal, y_cal, groups=None, *, ledger=None, dataset=None
    ) -> PrivateConformalRegressor:
        """Release the ε-DP threshold from calibration data; returns self.

        ``groups``: the calibration points' groups when ``n_groups`` is set. The calibration
        data and their scores are not kept. With ``ledger``/``dataset`` (:class:`dpuq.Ledger`
        or its path, and a data set name) ε is charged to the data set's budget before any noise
        is drawn, or the release is refused.
        """
        epsilon, alpha, bound = self._check_params()
        if self.n_groups is not None and groups is not None:  # settings errors before any charge
            self._check_grouped(alpha, "n_groups")
        self._check_bins()
        self._warn_if_released(epsilon)
        y = None if is_dask_collection(X_cal) else check_array_1d(y_cal, "y_cal")
        if y is not None:
            group_index = check_groups(groups, self.n_groups, y.size)
        elif check_groups(None if groups is None else [], self.n_groups, 0) is None:
            group_index = None  # not grouped (n_groups, groups= checked as in memory)
        else:  # Dask groups: validated chunk-wise with the scores (dpuq.calibrate_by_class)
            if not is_dask_collection(groups):
                raise TypeError("groups must be a Dask collection when X_cal is one")
            group_index = groups
        if y is None:  # Dask input: scores computed on the workers, never gathered
            scores = self._dask_scores(X_cal, y_cal)
            described = _DESCRIBED[self.conformity_score]
        elif self.conformity_score == "absolute":
            pred = self._point(X_cal, "X_cal")
            if pred.size != y.size:
                raise ValueError("X_cal gave a different number of predictions than y_cal has rows")
            scores = absolute_residual_scores(pred, y, bound=bound)
            described = _DESCRIBED["absolute"]
        else:
            quant = self._quantiles(X_cal, "X_cal")
            if quant.shape[0] != y.size:
                raise ValueError("X_cal gave a different number of predictions than y_cal has rows")
            scores = cqr_scores(quant, y, bound=bound)
            described = _DESCRIBED["cqr"]
        rng = self._rng()  # one fresh generator per release, never stored
        what = "PrivateConformalRegressor.conformalize"
        cal, receipt = self._charge_and_release(
            scores,
            group_index,
            self.n_groups,
            alpha,
            epsilon,
            rng,
            ledger=ledger,
            dataset=dataset,
            what=what,
            labels_name="groups",
            settings={
                "alpha": alpha,
                "n": None if y is None else int(y.size),
                "method": self.method,
                "score": self.conformity_score,
                "bound": bound,
                "n_groups": self.n_groups,
            },
        )
        details = dict(cal.privacy_report.details)
        details.update({"score": described, "bound (public)": bound})
        report = self._seeded(dataclasses.replace(cal.privacy_report, details=details))
        self._store_release(cal, report, receipt, what)
        self.bound_ = bound
        self.score_ = self.conformity_score
        whole = np.asarray(self.threshold_) >= 1.0
        if np.any(whole & np.asarray(getattr(self.calibration_, "informative", True))):
            # from the released threshold(s) only (calibrate already warned when no level
            # was informative, from public settings)
            warnings.warn(
                "the released threshold is 1"
                + (" for some level(s) or group(s)" if np.ndim(self.threshold_) else "")
                + f": those intervals are the whole line (-inf, inf). The public bound B = "
                f"{bound:g} may be too small, or n, epsilon or alpha too small",
                UninformativeReleaseWarning,
                stacklevel=2,
            )
        return self

    def predict(self, X) -> np.ndarray:
        """Point predictions: ``μ̂(x)``, or for CQR the midpoint of the quantile band."""
        self._check_score()
        if self.conformity_score == "absolute":
            return self._point(X)
        return self._quantiles(X).mean(axis=1)

    def predict_interval(self, X, groups=None) -> ConformalPrediction:
        """Point predictions and intervals, ``(y_pred, intervals)`` as in MAPIE 1.x.

        ``y_pred``: :meth:`predict`, shape (n,). ``intervals``: shape (n, 2), columns lower,
        upper; ``(-inf, inf)`` rows when the release was uninformative (threshold 1). With
        ``n_groups``, ``groups`` gives each row's group and the row gets its group's interval.
        With several confidence levels: shape (n, 2, L), levels in the order given. Write
        ``y_pred, intervals = reg.predict_interval(X)``; using the result as the intervals
        array (the output before MAPIE's pair) still works for one release, with a
        ``FutureWarning`` (:mod:`dpuq.conformal.outputs`).
        """
        intervals = self._intervals(X, groups)
        return ConformalPrediction(self.predict(X), intervals)

    def _intervals(self, X, groups=None) -> np.ndarray:
        """The intervals alone (no point predictions)."""
        self._check_conformalized()
        if self._multi_level():
            if groups is not None:
                raise ValueError("groups= needs a regressor conformalized with n_groups")
            if self.score_ == "absolute":
                fn, pred = absolute_residual_intervals, self._point(X)
            else:
                fn, pred = cqr_intervals, self._quantiles(X)
            return np.stack([fn(pred, t, bound=self.bound_) for t in self.threshold_], axis=-1)
        if np.ndim(self.threshold_):  # group-conditional release
            if self.score_ == "absolute":
                fn, pred = absolute_residual_intervals, self._point(X)
            else:
                fn, pred = cqr_intervals, self._quantiles(X)
            g = check_groups(groups, self.threshold_.size, pred.shape[0], required=True)
            return grouped_intervals(fn, pred, g, self.threshold_, bound=self.bound_)
        if groups is not None:
            raise ValueError("groups= needs a regressor conformalized with n_groups")
        if self.score_ == "absolute":
            return absolute_residual_intervals(self._point(X), self.threshold_, bound=self.bound_)
        return cqr_intervals(self._quantiles(X), self.threshold_, bound=self.bound_)

    def _covered(self, X, y) -> np.ndarray:
        """Whether each outcome is in its interval: (n,) or (n, L)."""
        target = check_array_1d(y, "y")
        intervals = self._intervals(X)
        if target.size != intervals.shape[0]:
            raise ValueError(f"X has {intervals.shape[0]} rows but y has {target.size}")
        t = target if intervals.ndim == 2 else target[:, None]
        return (intervals[:, 0] <= t) & (t <= intervals[:, 1])
