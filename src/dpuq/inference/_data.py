"""Input checks and small shared definitions for private confidence sets (Chadha et al. 2024).

Every check raises a ``ValueError`` or ``TypeError`` naming the argument. Data outside the
public bounds are an error unless the caller passes ``clip=True``; then they are clipped
*silently*: whether any value was clipped depends on the data, so nothing observable (no
warning, no log record, no message) may say so. No message carries a data-dependent number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np

from dpuq._validation import (
    check_array_1d,
    check_epsilon,
    check_magnitude,
    check_positive_int,
    check_span,
)
from dpuq.scale.sources import is_dask_collection

__all__ = [
    "REPLACE_ONE_DATA",
    "ClippingWarning",
    "Statistic",
    "SubsetRegimeWarning",
    "UninformativeIntervalWarning",
    "check_bounds",
    "check_data",
    "check_outside",
    "parse_statistic",
    "resolve_n_subsets",
]

REPLACE_ONE_DATA = (
    "replace-one (swap): two data sets of the same public size n that differ in one record"
)

STATISTICS = ("mean", "median", "trimmed_mean")


class ClippingWarning(UserWarning):
    """Kept for compatibility; dpuq no longer issues it.

    It used to fire when ``clip=True`` clipped some value: its mere presence told neighbouring
    data sets apart (a data set with one record outside the bounds against one without), a
    side channel outside the ε guarantee. With ``clip=True`` clipping is now silent, whatever
    the data.
    """


def check_bounds(bounds) -> tuple[float, float]:
    """Return the public interval ``(a, b)``: two finite numbers with ``a < b``."""
    try:
        a, b = bounds
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair (lower, upper), got {bounds!r}") from None
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, Real | np.floating | np.integer):
            raise TypeError(f"bounds must hold two real numbers, got {bounds!r}")
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"bounds must be finite, got {bounds!r}")
    check_magnitude(np.array([a, b]), "bounds")
    if not a < b:
        raise ValueError(f"bounds must satisfy lower < upper, got {bounds!r}")
    check_span(a, b, "bounds")
    return a, b


def check_outside(outside: bool, name: str, bounds, clip: bool, stacklevel: int = 2) -> None:
    """Refuse data outside the public ``bounds`` unless ``clip`` (then clipping is silent).

    No count and no extremes in the message: they are data-dependent and not released. With
    ``clip=True`` nothing is said whatever the data (a warning that fires only when a value
    is clipped would tell neighbouring data sets apart). ``stacklevel`` is unused (kept for
    callers).
    """
    a, b = bounds
    if outside and not clip:
        raise ValueError(
            f"{name}: values lie outside bounds [{a:g}, {b:g}]; widen the public bounds or "
            "pass clip=True to clip them"
        )


def check_data(x, bounds, *, clip: bool = False, name: str = "x") -> tuple[np.ndarray, int]:
    """Return ``(x, n_clipped)``: finite 1-d data inside the public ``bounds``.

    Values outside the bounds are an error (with no data-dependent number in it), unless
    ``clip=True``: then they are clipped silently. The count returned stays with the caller;
    no dpuq release, message or warning uses it.
    """
    if not isinstance(clip, bool | np.bool_):
        raise TypeError(f"clip must be True or False, got {clip!r}")
    if is_dask_collection(x):  # never gather a Dask array on the client behind the user's back
        raise TypeError(
            f"{name} is a Dask collection; check_data validates data in memory (every "
            "private release of dpuq.inference takes Dask input and validates it chunk-wise)"
        )
    arr = check_array_1d(x, name)
    a, b = check_bounds(bounds)
    outside = int(np.count_nonzero((arr < a) | (arr > b)))
    check_outside(outside, name, (a, b), clip, stacklevel=4)
    if outside:
        arr = np.clip(arr, a, b)
    return arr, outside


class SubsetRegimeWarning(UserWarning):
    """An interval for a user's statistic whose released spreads say that its subsets are far
    from their large-sample behaviour, so coverage may fall below nominal (whether it fires is
    a function of released values only: :mod:`dpuq.inference.general`)."""


class UninformativeIntervalWarning(UserWarning):
    """No informative interval can be released at these settings: the release is ``[a, b]``."""


@dataclass(frozen=True)
class Statistic:
    """A statistic of the sample: ``"mean"``, ``"median"`` or ``"trimmed_mean"``.

    The trimmed mean with proportion ``trim`` drops ``floor(trim * m)`` values at each end of
    a sample of size ``m`` (the convention of :func:`scipy.stats.trim_mean`).
    """

    name: str
    trim: float = 0.0

    def n_trim(self, m: int) -> int:
        return math.floor(self.trim * m) if self.name == "trimmed_mean" else 0

    def of_sorted(self, xs: np.ndarray) -> np.ndarray:
        """The statistic of each row of sorted samples ``xs`` (..., m)."""
        m = xs.shape[-1]
        if self.name == "mean":
            return xs.mean(axis=-1)
        if self.name == "median":
            return np.median(xs, axis=-1)
        k = self.n_trim(m)
        return xs[..., k : m - k].mean(axis=-1)

    def __str__(self) -> str:
        return (
            f"trimmed mean ({self.trim:g} each end)" if self.name == "trimmed_mean" else self.name
        )


def parse_statistic(statistic, trim=0.1) -> Statistic:
    """Validate ``statistic`` (``"mean"``, ``"median"``, ``"trimmed_mean"``) and ``trim``."""
    if not isinstance(statistic, str) or statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if statistic != "trimmed_mean":
        return Statistic(statistic)
    if isinstance(trim, bool) or not isinstance(trim, Real | np.floating):
        raise TypeError(f"trim must be a number in [0, 0.5), got {trim!r}")
    t = float(trim)
    if not 0.0 <= t < 0.5:
        raise ValueError(f"trim must be in [0, 0.5), got {trim!r}")
    return Statistic("trimmed_mean", t)


def resolve_n_subsets(n_subsets, n: int, epsilon: float, *, min_subset_size: int = 2) -> int:
    """The number of disjoint subsets ``s`` of the ensemble; each must hold >= 2 points.

    ``"auto"`` is Chadha et al.'s ``s = floor(sqrt(n / ε))`` (at least 1), which balances the
    subsets' bootstrap error against the Laplace noise ``1/(s ε)``.
    """
    eps = check_epsilon(epsilon)
    if isinstance(n_subsets, str):
        if n_subsets != "auto":
            raise ValueError(f"n_subsets must be 'auto' or an integer >= 1, got {n_subsets!r}")
        s = max(1, math.floor(math.sqrt(n / eps)))
        s = min(s, n // min_subset_size)
        if s < 1:
            raise ValueError(
                f"x has n={n} value(s): too few, the ensemble needs at least "
                f"{min_subset_size} points"
            )
        return s
    if isinstance(n_subsets, bool) or not isinstance(n_subsets, Integral | np.integer):
        raise TypeError(f"n_subsets must be 'auto' or an integer, got {n_subsets!r}")
    s = check_positive_int(n_subsets, "n_subsets")
    if n < s * min_subset_size:
        raise ValueError(
            f"n_subsets={s} needs n >= {s * min_subset_size} ({min_subset_size} points per "
            f"subset); x has n={n}. Use fewer subsets or more data"
        )
    return s
