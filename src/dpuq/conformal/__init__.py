"""Conformal prediction: scores, private and split calibration, sets, estimators."""

from dpuq.conformal.bound import InSampleResidualsWarning, PublicBound, public_bound
from dpuq.conformal.calibration import (
    PrivateCalibration,
    UninformativeReleaseError,
    UninformativeReleaseWarning,
    calibrate,
    coverage_upper_bound,
    split_conformal_threshold,
)
from dpuq.conformal.class_conditional import ClassConditionalCalibration, calibrate_by_class
from dpuq.conformal.logits import LogitsModel, softmax
from dpuq.conformal.online import aci_thresholds, online_conformal_thresholds
from dpuq.conformal.partitions import score_partitions
from dpuq.conformal.regression_scores import (
    absolute_residual_intervals,
    absolute_residual_scores,
    cqr_intervals,
    cqr_scores,
    residual_normalised_intervals,
    residual_normalised_scores,
)
from dpuq.conformal.risk_control import (
    PrivateRiskControl,
    conformal_risk_control,
    false_negative_losses,
    interval_losses,
    risk_control,
    with_trivial_answer,
)
from dpuq.conformal.scores import aps_scores, lac_scores, raps_scores, top_k_scores
from dpuq.conformal.sets import prediction_sets

__all__ = [
    "ClassConditionalCalibration",
    "InSampleResidualsWarning",
    "LogitsModel",
    "PrivateCalibration",
    "PrivateConformalClassifier",
    "PrivateConformalRegressor",
    "PrivateOnlineConformalClassifier",
    "PrivateOnlineConformalRegressor",
    "PrivateRiskControl",
    "PublicBound",
    "UninformativeReleaseError",
    "UninformativeReleaseWarning",
    "absolute_residual_intervals",
    "absolute_residual_scores",
    "aci_thresholds",
    "aps_scores",
    "calibrate",
    "calibrate_by_class",
    "conformal_risk_control",
    "coverage_upper_bound",
    "cqr_intervals",
    "cqr_scores",
    "false_negative_losses",
    "interval_losses",
    "lac_scores",
    "online_conformal_thresholds",
    "prediction_sets",
    "public_bound",
    "raps_scores",
    "residual_normalised_intervals",
    "residual_normalised_scores",
    "risk_control",
    "score_partitions",
    "softmax",
    "split_conformal_threshold",
    "top_k_scores",
    "with_trivial_answer",
]

# the estimators subclass scikit-learn's BaseEstimator: imported on first use, so that
# `import dpuq` (and every CLI call) does not pay for importing scikit-learn
_LAZY = {
    "PrivateConformalClassifier": "dpuq.conformal.classifier",
    "PrivateConformalRegressor": "dpuq.conformal.regressor",
    "PrivateOnlineConformalClassifier": "dpuq.conformal.online_estimators",
    "PrivateOnlineConformalRegressor": "dpuq.conformal.online_estimators",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpuq.conformal' has no attribute {name!r}")
