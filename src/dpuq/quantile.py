"""Compatibility module: the private quantile and its planning helpers under their old home.

The law and sampler live in :mod:`dpuq.mechanisms.quantile` (privacy-critical), levels, bins
and sizes in :mod:`dpuq.planning`, the paper's bin simulation in :mod:`dpuq._bin_simulation`.
"""

from dpuq.mechanisms.quantile import (  # noqa: F401 (private names kept for old imports)
    _bin_index_fast,
    bin_edges,
    bin_index,
    private_quantile,
    private_quantile_distribution,
    private_quantile_log_distribution,
    private_quantiles,
)
from dpuq.planning import (  # noqa: F401
    TINY_GAMMA,
    _bin_grid,
    _gamma_star,
    _level,
    auto_n_bins,
    certified_level,
    coverage_certificate,
    inflated_level,
    min_calibration_size,
    min_epsilon,
    optimal_gamma,
)

__all__ = [
    "TINY_GAMMA",
    "auto_n_bins",
    "bin_edges",
    "bin_index",
    "certified_level",
    "coverage_certificate",
    "inflated_level",
    "min_calibration_size",
    "min_epsilon",
    "optimal_gamma",
    "private_quantile",
    "private_quantile_distribution",
    "private_quantile_log_distribution",
    "private_quantiles",
]
