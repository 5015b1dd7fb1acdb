"""Conformal prediction: scores, private and split calibration, sets, estimators."""

from dpuq.conformal.calibration import (
    PrivateCalibration,
    UninformativeReleaseWarning,
    calibrate,
    coverage_upper_bound,
    split_conformal_threshold,
)
from dpuq.conformal.classifier import PrivateConformalClassifier
from dpuq.conformal.scores import aps_scores, lac_scores, raps_scores
from dpuq.conformal.sets import prediction_sets

__all__ = [
    "PrivateCalibration",
    "PrivateConformalClassifier",
    "UninformativeReleaseWarning",
    "aps_scores",
    "calibrate",
    "coverage_upper_bound",
    "lac_scores",
    "prediction_sets",
    "raps_scores",
    "split_conformal_threshold",
]
