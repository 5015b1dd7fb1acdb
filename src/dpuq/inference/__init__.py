"""Private confidence sets: private bootstrap CDFs and confidence intervals (Chadha et al. 2024).

Privacy-critical pieces: :mod:`dpuq.inference.estimates` (private point estimates),
:mod:`dpuq.inference.aggregation` (how subset results are released). Everything else computes
per-subset quantities or post-processes releases.
"""

from dpuq.inference import statistics
from dpuq.inference._data import (
    ClippingWarning,
    SubsetRegimeWarning,
    UninformativeIntervalWarning,
    check_data,
)
from dpuq.inference.aggregation import project_monotone, tree_error_bound
from dpuq.inference.bootstrap import (
    NaivePrivacy,
    PrivateCDF,
    PrivateCDFGrid,
    naive_bootstrap_privacy,
    private_bootstrap_cdf,
    private_bootstrap_cdf_grid,
    private_studentized_cdf,
    subset_bootstrap_cdfs,
)
from dpuq.inference.estimates import (
    PrivateEstimate,
    private_mean,
    private_median,
    private_median_log_distribution,
    private_trimmed_mean,
    private_variance,
)
from dpuq.inference.general import weighted_quantile
from dpuq.inference.intervals import (
    ConfidenceInterval,
    normal_approximation_interval,
    normal_laplace_cdf,
    percentile_bootstrap_interval,
    private_confidence_interval,
)
from dpuq.inference.pilot import PilotCheck, pilot_check

__all__ = [
    "ClippingWarning",
    "ConfidenceInterval",
    "NaivePrivacy",
    "PilotCheck",
    "PrivateCDF",
    "PrivateCDFGrid",
    "PrivateEstimate",
    "SubsetRegimeWarning",
    "UninformativeIntervalWarning",
    "check_data",
    "naive_bootstrap_privacy",
    "normal_approximation_interval",
    "normal_laplace_cdf",
    "percentile_bootstrap_interval",
    "pilot_check",
    "private_bootstrap_cdf",
    "private_bootstrap_cdf_grid",
    "private_confidence_interval",
    "private_mean",
    "private_median",
    "private_median_log_distribution",
    "private_studentized_cdf",
    "private_trimmed_mean",
    "private_variance",
    "project_monotone",
    "statistics",
    "subset_bootstrap_cdfs",
    "tree_error_bound",
    "weighted_quantile",
]
