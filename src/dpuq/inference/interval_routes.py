"""The routes :func:`~dpuq.inference.intervals.private_confidence_interval` hands off to.

- :func:`_order_statistics`: the median's and a quantile's default, the exact order-statistic
  interval of :mod:`dpuq.inference.quantile_interval` (settings checked, charged, released);
- :func:`_general`: a callable statistic, or ``statistic="quantile"`` (the order statistics
  by default, else a subsets' method), through :mod:`dpuq.inference.general` (its settings
  and its ledger charge);
- :func:`_refuse_subset_settings`: a subsets' setting passed to ``method="order_statistics"``
  (which has no subsets) is refused by name rather than ignored.

The privacy argument of each route, and its noise, are in the module it calls.
"""

from __future__ import annotations

import warnings

import numpy as np

from dpuq._validation import check_candidates, check_epsilon, check_in_open_unit
from dpuq.inference._data import UninformativeIntervalWarning, check_bounds, check_data
from dpuq.inference.confidence_interval import ConfidenceInterval
from dpuq.inference.estimates import DEFAULT_MEDIAN_CANDIDATES
from dpuq.inference.general import ESTIMATE_SHARE, _private_statistic_interval, weighted_quantile
from dpuq.inference.quantile_interval import _private_quantile_interval, order_statistic_ends
from dpuq.mechanisms.randomness import check_random_state, mark_seeded
from dpuq.privacy.ledger import charge, ledger_required

#: The settings of the subsets' methods, at their defaults (``order_statistics`` has none).
_SUBSET_DEFAULTS = {"n_subsets": "auto", "n_resamples": "auto", "estimate_share": None,
                    "bias_correction": None, "symmetric": True}  # fmt: skip


def _refuse_subset_settings(**given) -> None:
    """ValueError naming a subsets' setting passed to ``method="order_statistics"``."""
    for name, value in given.items():
        default = _SUBSET_DEFAULTS[name]
        if value is not default and not (isinstance(value, str) and value == default):
            raise ValueError(
                f"{name} is a setting of the subsets' methods; method='order_statistics' (the "
                "median's and a quantile's default) has no subsets: pass method='ensemble' to "
                f"use {name}, or leave it out"
            )


def _order_statistics(x, bnds, level, alpha, epsilon, n_bins, random_state, ledger, dataset,
                      name) -> ConfidenceInterval:  # fmt: skip
    """The quantile's and the median's default: validated settings, the charge, then the
    release (``x``: a validated array, or the Dask path's data object)."""
    a = check_in_open_unit(alpha, "alpha")
    eps = check_epsilon(epsilon)
    n_bins = check_candidates(n_bins)
    if x.size < 2:
        raise ValueError(f"x needs at least 2 values for a quantile interval, got n={x.size}")
    settings = {"alpha": a, "n": int(x.size), "statistic": name, "method": "order_statistics",
                "bounds": [float(bnds[0]), float(bnds[1])]}  # fmt: skip
    rng = check_random_state(random_state)  # before the charge: a bad seed costs nothing
    ends = order_statistic_ends(x.size, level, a, eps, n_bins)  # public: which ends are drawn
    if ends:  # an end that no order statistic reaches is the bound, drawn and charged for nothing
        charge(ledger, dataset, eps * ends / 2.0, seeded=random_state is not None,
               what=f"private_confidence_interval ({name}, order_statistics)",
               settings=settings)  # fmt: skip
    ci = _private_quantile_interval(x, bnds, level, alpha=a, epsilon=eps, n_bins=n_bins,
                                   rng=rng, name=name)  # fmt: skip
    if not ci.informative:
        warnings.warn(f"uninformative interval: {ci.details['reason']}",
                      UninformativeIntervalWarning, stacklevel=4)  # fmt: skip
    return mark_seeded(ci, random_state)


def _general(
    x, statistic, statistic_bounds, bounds, quantile, vectorized, alpha, epsilon, method,
    n_subsets, n_resamples, estimate_share, clip, random_state, ledger, dataset,
    bias_correction=None, n_candidates=DEFAULT_MEDIAN_CANDIDATES,
):  # fmt: skip
    """A callable statistic, or ``"quantile"``: by default the exact order-statistic interval
    (:mod:`dpuq.inference.quantile_interval`), with ``method="ensemble"`` or
    ``"subsampling"`` the weighted quantile through the subsets' path."""
    if callable(statistic):
        if bounds is not None or quantile is not None:
            raise ValueError(
                "a callable statistic takes statistic_bounds (the public range of its output), "
                "not bounds or quantile"
            )
        if statistic_bounds is None:
            raise TypeError("statistic_bounds is required for a callable statistic")
        name, resample_size = getattr(statistic, "__name__", "statistic"), "subset"
    else:
        if statistic_bounds is not None:
            raise ValueError("statistic='quantile' takes bounds, not statistic_bounds")
        if quantile is None:
            raise TypeError("quantile is required for statistic='quantile' (a level in (0, 1))")
        if bounds is None:
            raise TypeError("bounds is required for statistic='quantile'")
        if method not in ("order_statistics", "ensemble", "subsampling"):
            raise ValueError(
                "method must be 'order_statistics', 'ensemble' or 'subsampling' for "
                f"statistic='quantile', got {method!r}"
            )
        level = check_in_open_unit(quantile, "quantile")
        statistic = weighted_quantile(level)
        name = f"quantile {level:g}"
        x, _ = check_data(x, bounds, clip=clip)
        statistic_bounds, vectorized, resample_size = check_bounds(bounds), True, "subset"
        if method == "order_statistics":
            return _order_statistics(x, statistic_bounds, level, alpha, epsilon, n_candidates,
                                     random_state, ledger, dataset, name)  # fmt: skip
    share = ESTIMATE_SHARE if estimate_share is None else estimate_share
    if bias_correction is None:  # the jackknife is for smooth statistics, not quantiles
        bias_correction = quantile is None
    seeded = random_state is not None
    what = f"private_confidence_interval ({name}, {method})"

    def settings() -> dict:  # evaluated at the charge, after every setting was validated
        return {
            "alpha": float(alpha),
            "n": int(np.shape(x)[0]),
            "statistic": name,
            "method": method,
            "statistic_bounds": np.asarray(statistic_bounds, dtype=float).tolist(),
        }

    if ledger is None and dataset is None and ledger_required():
        # refused before the subsets' (unreleased) summaries draw their resamples
        charge(None, None, epsilon, what=what, random_state=random_state)
    out = _private_statistic_interval(
        x,
        statistic,
        statistic_bounds=statistic_bounds,
        alpha=alpha,
        epsilon=epsilon,
        method=method,
        n_subsets=n_subsets,
        n_resamples=n_resamples,
        estimate_share=share,
        vectorized=vectorized,
        resample_size=resample_size,
        bias_correction=bias_correction,
        name=name,
        rng=check_random_state(random_state),
        charge_cost=lambda eps: charge(
            ledger, dataset, eps, what=what, seeded=seeded, settings=settings()
        ),
    )
    if isinstance(out, tuple):
        return tuple(mark_seeded(ci, random_state) for ci in out)
    return mark_seeded(out, random_state)
