"""Metrics: coverage and size of prediction sets; calibration of probabilistic classifiers."""

from dpuq.metrics.calibration import (
    ReliabilityCurve,
    adaptive_calibration_error,
    expected_calibration_error,
    multiclass_auc,
    reliability_curve,
    static_calibration_error,
)
from dpuq.metrics.coverage import coverage, coverage_by_set_size, set_sizes

__all__ = [
    "ReliabilityCurve",
    "adaptive_calibration_error",
    "coverage",
    "coverage_by_set_size",
    "expected_calibration_error",
    "multiclass_auc",
    "reliability_curve",
    "set_sizes",
    "static_calibration_error",
]
