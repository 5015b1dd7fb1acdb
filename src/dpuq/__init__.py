"""dpuq: differentially private uncertainty quantification.

Private prediction sets (split conformal with an ε-DP calibration quantile), and the
mechanisms under them. Randomness: every function that draws noise takes ``random_state``;
the default ``None`` uses fresh OS entropy (for real releases); an int or Generator makes a run
reproducible (for experiments and tests only).
"""

from dpuq._validation import NotFittedError
from dpuq.conformal import (
    PrivateCalibration,
    PrivateConformalClassifier,
    PrivateConformalRegressor,
    UninformativeReleaseWarning,
    absolute_residual_intervals,
    absolute_residual_scores,
    aps_scores,
    calibrate,
    coverage_upper_bound,
    cqr_intervals,
    cqr_scores,
    lac_scores,
    prediction_sets,
    raps_scores,
    split_conformal_threshold,
)
from dpuq.learning import (
    ConceptList,
    DecisionStumps,
    Intervals,
    PrivateERMClassifier,
    TabulatedConcepts,
    Thresholds,
    pac_sample_complexity,
)
from dpuq.mechanisms import (
    exponential_mechanism,
    exponential_mechanism_log_probabilities,
    exponential_mechanism_probabilities,
)
from dpuq.mechanisms.exponential import (
    exponential_mechanism_accuracy_bound,
    permute_and_flip,
    permute_and_flip_probabilities,
)
from dpuq.metrics import coverage, coverage_by_set_size, set_sizes
from dpuq.quantile import (
    auto_n_bins,
    inflated_level,
    min_calibration_size,
    min_epsilon,
    optimal_gamma,
    private_quantile,
    private_quantile_distribution,
    private_quantile_log_distribution,
)
from dpuq.report import PrivacyReport

__version__ = "0.1.0"

__all__ = [
    "ConceptList",
    "DecisionStumps",
    "Intervals",
    "NotFittedError",
    "PrivacyReport",
    "PrivateCalibration",
    "PrivateConformalClassifier",
    "PrivateConformalRegressor",
    "PrivateERMClassifier",
    "TabulatedConcepts",
    "Thresholds",
    "UninformativeReleaseWarning",
    "absolute_residual_intervals",
    "absolute_residual_scores",
    "aps_scores",
    "auto_n_bins",
    "calibrate",
    "coverage",
    "coverage_by_set_size",
    "coverage_upper_bound",
    "cqr_intervals",
    "cqr_scores",
    "exponential_mechanism",
    "exponential_mechanism_accuracy_bound",
    "exponential_mechanism_log_probabilities",
    "exponential_mechanism_probabilities",
    "inflated_level",
    "lac_scores",
    "min_calibration_size",
    "min_epsilon",
    "optimal_gamma",
    "pac_sample_complexity",
    "permute_and_flip",
    "permute_and_flip_probabilities",
    "prediction_sets",
    "private_quantile",
    "private_quantile_distribution",
    "private_quantile_log_distribution",
    "raps_scores",
    "set_sizes",
    "split_conformal_threshold",
]
