"""Metrics: coverage and size of prediction sets; calibration of probabilistic classifiers."""

from dpuq.metrics.calibration import (
    ReliabilityCurve,
    adaptive_calibration_error,
    expected_calibration_error,
    multiclass_auc,
    reliability_curve,
    static_calibration_error,
)
from dpuq.metrics.class_coverage import coverage_by_class
from dpuq.metrics.coverage import (
    coverage,
    coverage_by_group,
    coverage_by_set_size,
    set_sizes,
    size_stratified_coverage_violation,
)
from dpuq.metrics.mapie_scores import (
    classification_coverage_score,
    classification_mean_width_score,
    classification_ssc,
    classification_ssc_score,
    regression_coverage_score,
    regression_mean_width_score,
    regression_ssc,
    regression_ssc_score,
)

__all__ = [
    "ReliabilityCurve",
    "adaptive_calibration_error",
    "classification_coverage_score",
    "classification_mean_width_score",
    "classification_ssc",
    "classification_ssc_score",
    "coverage",
    "coverage_by_class",
    "coverage_by_group",
    "coverage_by_set_size",
    "expected_calibration_error",
    "multiclass_auc",
    "regression_coverage_score",
    "regression_mean_width_score",
    "regression_ssc",
    "regression_ssc_score",
    "reliability_curve",
    "set_sizes",
    "size_stratified_coverage_violation",
    "static_calibration_error",
]
