"""Compatibility module: the private quantile and its planning helpers under their old home.

The law and sampler live in :mod:`dpuq.mechanisms.quantile` (privacy-critical), levels, bins
and sizes in :mod:`dpuq.planning`, the paper's bin simulation in :mod:`dpuq._bin_simulation`.
Every name below is the object of its new home (``dpuq.quantile.private_quantile is
dpuq.mechanisms.quantile.private_quantile``).
"""

import importlib

#: Where each old name lives now (private names kept for old imports too).
_HOMES = {
    "dpuq.mechanisms.quantile": (
        "_bin_index_fast bin_edges bin_index private_quantile private_quantile_distribution "
        "private_quantile_log_distribution private_quantiles"
    ),
    "dpuq.planning": (
        "TINY_GAMMA _bin_grid _gamma_star _level auto_n_bins certified_level "
        "coverage_certificate inflated_level min_calibration_size min_epsilon optimal_gamma"
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names.split()}

__all__ = sorted(name for name in _HOME_OF if not name.startswith("_"))


def __getattr__(name: str):
    if name in _HOME_OF:
        return getattr(importlib.import_module(_HOME_OF[name]), name)
    raise AttributeError(f"module 'dpuq.quantile' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOME_OF))
