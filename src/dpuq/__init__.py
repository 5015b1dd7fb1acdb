"""dpuq: differentially private uncertainty quantification.

Private prediction sets (split conformal with an ε-DP calibration quantile), private
bootstrap confidence intervals, and the mechanisms under them. Randomness: every function that
draws noise takes ``random_state``; the default ``None`` uses fresh OS entropy (for real
releases); an int (or, for functions, a Generator) makes a run reproducible (for experiments
and tests only) and the privacy report then says "seeded".
"""

import logging as _logging

# first: old paths (`dpuq.ledger`, `dpuq.report`, ...) resolve to their new homes
from dpuq import _moved
from dpuq._validation import NotFittedError
from dpuq._version import __version__ as __version__
from dpuq.conformal import (
    ClassConditionalCalibration,
    PrivateCalibration,
    PrivateRiskControl,
    UninformativeReleaseError,
    UninformativeReleaseWarning,
    absolute_residual_intervals,
    absolute_residual_scores,
    aps_scores,
    calibrate,
    calibrate_by_class,
    conformal_risk_control,
    coverage_upper_bound,
    cqr_intervals,
    cqr_scores,
    false_negative_losses,
    interval_losses,
    lac_scores,
    prediction_sets,
    public_bound,
    raps_scores,
    residual_normalised_intervals,
    residual_normalised_scores,
    risk_control,
    softmax,
    split_conformal_threshold,
    top_k_scores,
    with_trivial_answer,
)
from dpuq.conformal.online import aci_thresholds, online_conformal_thresholds
from dpuq.conformal.partitions import score_partitions
from dpuq.inference import (
    ConfidenceInterval,
    PilotCheck,
    PrivateCDF,
    PrivateCDFGrid,
    SubsetRegimeWarning,
    UninformativeIntervalWarning,
    normal_approximation_interval,
    percentile_bootstrap_interval,
    pilot_check,
    private_bootstrap_cdf,
    private_bootstrap_cdf_grid,
    private_confidence_interval,
    private_studentized_cdf,
    weighted_quantile,
)
from dpuq.learning import (
    ConceptList,
    DecisionStumps,
    Intervals,
    TabulatedConcepts,
    Thresholds,
)
from dpuq.mechanisms import (
    exponential_mechanism,
    exponential_mechanism_log_probabilities,
    exponential_mechanism_probabilities,
    laplace_mechanism,
)
from dpuq.mechanisms.exponential import exponential_mechanism_accuracy_bound
from dpuq.mechanisms.permute_and_flip import permute_and_flip, permute_and_flip_probabilities
from dpuq.mechanisms.quantile import (
    private_quantile,
    private_quantile_distribution,
    private_quantile_log_distribution,
    private_quantiles,
)
from dpuq.metrics import (
    adaptive_calibration_error,
    classification_coverage_score,
    classification_mean_width_score,
    classification_ssc,
    classification_ssc_score,
    coverage,
    coverage_by_class,
    coverage_by_group,
    coverage_by_set_size,
    expected_calibration_error,
    multiclass_auc,
    regression_coverage_score,
    regression_mean_width_score,
    regression_ssc,
    regression_ssc_score,
    reliability_curve,
    set_sizes,
    size_stratified_coverage_violation,
    static_calibration_error,
)
from dpuq.planning import (
    auto_n_bins,
    certified_level,
    coverage_certificate,
    inflated_level,
    min_calibration_size,
    min_epsilon,
    online_block_size,
    online_coverage_bound,
    optimal_gamma,
)
from dpuq.privacy.ledger import BudgetExceededError, Ledger
from dpuq.privacy.report import PrivacyReport

# library code logs through `logging` under the "dpuq" logger and never prints; the
# application (or `logging.basicConfig`) decides where records go
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

# Imported on first use (PEP 562), so that `import dpuq` (and so every CLI call) stays cheap:
# the estimators subclass scikit-learn's BaseEstimator (scikit-learn is imported with them);
# DP-SGD / DP-SGLD training needs torch and opacus (the ``torch`` extra), and is kept out of
# ``__all__`` so that ``from dpuq import *`` works without torch.
_LAZY_TRAINING = (
    "train_classifier",
    "DPSGLDOptimizer",
    "PolynomialDecay",
    "predict_proba",
    "select_and_train",
    "DPClassifier",
    "DPRegressor",
)
_LAZY = {
    "PrivateConformalClassifier": "dpuq.conformal.classifier",
    "PrivateConformalRegressor": "dpuq.conformal.regressor",
    "PrivateOnlineConformalClassifier": "dpuq.conformal.online_estimators",
    "PrivateOnlineConformalRegressor": "dpuq.conformal.online_estimators",
    "PrivateERMClassifier": "dpuq.learning.erm",
    "pac_sample_complexity": "dpuq.learning.erm",
    **dict.fromkeys(_LAZY_TRAINING, "dpuq.training"),
}


def __getattr__(name: str):
    import importlib

    if f"dpuq.{name}" in _moved.MOVED:  # `dpuq.ledger`, `dpuq.accounting`, ... (old paths)
        return importlib.import_module(f"dpuq.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpuq' has no attribute {name!r}")


__all__ = [
    "BudgetExceededError",
    "ClassConditionalCalibration",
    "ConceptList",
    "ConfidenceInterval",
    "DecisionStumps",
    "Intervals",
    "Ledger",
    "NotFittedError",
    "PilotCheck",
    "PrivacyReport",
    "PrivateCDF",
    "PrivateCDFGrid",
    "PrivateCalibration",
    "PrivateConformalClassifier",
    "PrivateConformalRegressor",
    "PrivateERMClassifier",
    "PrivateOnlineConformalClassifier",
    "PrivateOnlineConformalRegressor",
    "PrivateRiskControl",
    "SubsetRegimeWarning",
    "TabulatedConcepts",
    "Thresholds",
    "UninformativeIntervalWarning",
    "UninformativeReleaseError",
    "UninformativeReleaseWarning",
    "absolute_residual_intervals",
    "absolute_residual_scores",
    "aci_thresholds",
    "adaptive_calibration_error",
    "aps_scores",
    "auto_n_bins",
    "calibrate",
    "calibrate_by_class",
    "certified_level",
    "classification_coverage_score",
    "classification_mean_width_score",
    "classification_ssc",
    "classification_ssc_score",
    "conformal_risk_control",
    "coverage",
    "coverage_by_class",
    "coverage_by_group",
    "coverage_by_set_size",
    "coverage_certificate",
    "coverage_upper_bound",
    "cqr_intervals",
    "cqr_scores",
    "expected_calibration_error",
    "exponential_mechanism",
    "exponential_mechanism_accuracy_bound",
    "exponential_mechanism_log_probabilities",
    "exponential_mechanism_probabilities",
    "false_negative_losses",
    "inflated_level",
    "interval_losses",
    "lac_scores",
    "laplace_mechanism",
    "min_calibration_size",
    "min_epsilon",
    "multiclass_auc",
    "normal_approximation_interval",
    "online_block_size",
    "online_conformal_thresholds",
    "online_coverage_bound",
    "optimal_gamma",
    "pac_sample_complexity",
    "percentile_bootstrap_interval",
    "permute_and_flip",
    "permute_and_flip_probabilities",
    "pilot_check",
    "prediction_sets",
    "private_bootstrap_cdf",
    "private_bootstrap_cdf_grid",
    "private_confidence_interval",
    "private_quantile",
    "private_quantile_distribution",
    "private_quantile_log_distribution",
    "private_quantiles",
    "private_studentized_cdf",
    "public_bound",
    "raps_scores",
    "regression_coverage_score",
    "regression_mean_width_score",
    "regression_ssc",
    "regression_ssc_score",
    "reliability_curve",
    "residual_normalised_intervals",
    "residual_normalised_scores",
    "risk_control",
    "score_partitions",
    "set_sizes",
    "size_stratified_coverage_violation",
    "softmax",
    "split_conformal_threshold",
    "static_calibration_error",
    "top_k_scores",
    "weighted_quantile",
    "with_trivial_answer",
]
