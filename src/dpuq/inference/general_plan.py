"""The general path's public plan (data-free), for :mod:`dpuq.inference.general`.

The numbers of subsets (one partition, or the locating and the estimating one), the location's
ε and its failure bound, the spread counts' radii, shares and noise floors, the ``log sd``
grid and the checks of ``statistic_bounds``. Everything here is a function of public
quantities only (``n``, ε, the bounds, the settings), never of the data; the subsets'
summaries (user code on the rows) are in :mod:`dpuq.inference._subsets`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from scipy.special import ndtri

from dpuq._validation import check_span
from dpuq.mechanisms.discrete_laplace import lattice_laplace_scale

__all__ = [
    "ESTIMATE_SIZE_GAIN",
    "ESTIMATE_SUBSETS_COEF",
    "LOCATION_BETA",
    "MAX_STATISTIC_BOUND",
    "MIN_AUTO_SUBSET",
    "MIN_LOCATING_SUBSET",
    "NOISE_FLOOR_FACTOR",
    "SPREAD_FRACTION_CAP",
    "SPREAD_FRACTION_MIN",
    "SPREAD_NOISE_BETA",
    "SPREAD_RADII",
    "SPREAD_SHARES",
    "SPREAD_SWITCH",
    "estimate_subsets",
    "location_epsilon",
    "location_failure_bound",
    "resolve_general_subsets",
]

#: Candidates of the ``log sd`` median: step and span below the bounds' width.
LOG_SD_STEP, LOG_SD_SPAN = 0.25, math.log(1e6)
#: Largest data-free bound on the probability that a private location misses the values
#: (:func:`location_failure_bound`) at which an interval is still released.
LOCATION_BETA = 0.05
#: Radii of the spread's two counts, in units of the preliminary scale (the bootstrap's), and
#: their shares of the spread's count budget. The bootstrap of small subsets is short by a
#: factor 1-4.5 on skewed data (issue 33), which the first radius keeps at 0.45-2
#: normal-equivalent spreads, where a count measures a spread best; the second is the safety
#: net where the bootstrap says almost nothing (a rare group: one row of it per subset).
SPREAD_RADII = (2.0, 16.0)
SPREAD_SHARES = (2.0 / 3.0, 1.0 / 3.0)
#: Below this released fraction within the first radius, or below the first count's noise
#: floor (:data:`SPREAD_NOISE_BETA`), the second count is used.
SPREAD_SWITCH = 0.25
#: Released fractions within the radius above the cap say only that the spread is below
#: ``radius / Φ⁻¹((1 + cap)/2)``; below ``SPREAD_FRACTION_MIN`` the release is trivial.
SPREAD_FRACTION_CAP = 0.99
SPREAD_FRACTION_MIN = 0.05
#: A released count below the level its Laplace noise alone exceeds with this probability
#: (``scale log(1/(2β))``, public) gives the trivial release: a statistic with no estimate on
#: most subsets must not get an interval made of noise.
SPREAD_NOISE_BETA = 0.01
#: Smallest subset the automatic number of subsets allows (a subset whose estimate enters the
#: point estimate: its bias must be small).
MIN_AUTO_SUBSET = 20
#: Smallest locating subset (two partitions, :func:`estimate_subsets`): these only find the
#: scale and the location, whose windows are wide, and more of them let the locations work at
#: smaller ``n ε`` (``s_0 ε`` of a few tens).
MIN_LOCATING_SUBSET = 10


#: Largest magnitude of ``statistic_bounds``: sums and squares of values clamped to them
#: stay finite (an overflow would be a data-dependent error after the charge).
MAX_STATISTIC_BOUND = 1e150


def _check_statistic_bounds(statistic_bounds) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(lo, hi, scalar)``: public bounds of f's output, arrays of shape ``(p,)``."""
    try:
        lo, hi = statistic_bounds
    except (TypeError, ValueError):
        raise TypeError(
            f"statistic_bounds must be a pair (lower, upper), got {statistic_bounds!r}"
        ) from None
    scalar = all(isinstance(v, Real | np.floating | np.integer) for v in (lo, hi))
    try:
        lo_a = np.atleast_1d(np.asarray(lo, dtype=float))
        hi_a = np.atleast_1d(np.asarray(hi, dtype=float))
    except (TypeError, ValueError):
        raise TypeError("statistic_bounds must hold numbers or 1-d arrays of numbers") from None
    if lo_a.ndim != 1 or lo_a.shape != hi_a.shape or lo_a.size == 0:
        raise ValueError("statistic_bounds must be two numbers or two 1-d arrays of one length")
    if not (np.all(np.isfinite(lo_a)) and np.all(np.isfinite(hi_a))):
        raise ValueError("statistic_bounds must be finite")
    if max(np.abs(lo_a).max(), np.abs(hi_a).max()) > MAX_STATISTIC_BOUND:
        raise ValueError(  # beyond it, sums and squares of clamped values could overflow
            f"statistic_bounds must lie within ±{MAX_STATISTIC_BOUND:g}: rescale the statistic"
        )
    if not np.all(lo_a < hi_a):
        raise ValueError("statistic_bounds must satisfy lower < upper in every coordinate")
    check_span(0.0, float((hi_a - lo_a).min()), "statistic_bounds")
    return lo_a, hi_a, scalar


def location_failure_bound(n_candidates: int, epsilon: float, n_subsets: int) -> float:
    """Bound on the probability that a private location lands on a candidate whose window
    holds none of the ``s`` values, when some window holds half of them: ``G exp(-ε s / 4)``.

    The exponential mechanism (sensitivity 1) weighs a candidate by ``exp(ε u / 2)``; the
    location the values cluster at has ``u >= s/2`` when at least half of them lie in its
    window, and each of the ``G`` candidates with ``u = 0`` then has probability at most
    ``exp(-ε s / 4)``. A function of public quantities only (``G``, ε, ``s``).

    Examples
    --------
    >>> round(location_failure_bound(56, 0.15, 200), 4)
    0.031
    """
    return float(n_candidates * math.exp(-epsilon * n_subsets / 4.0))


def location_epsilon(n_candidates: int, n_subsets: int) -> float:
    """The ε at which :func:`location_failure_bound` is ``LOCATION_BETA / 2``: ``4 log(2 G /
    β) / s``. A function of public and released quantities only.

    Examples
    --------
    >>> round(location_epsilon(133, 200), 3)
    0.172
    """
    return 4.0 * math.log(2.0 * n_candidates / LOCATION_BETA) / n_subsets


def _spread_from_count(count: float, s: int, radius: float) -> float | None:
    """The normal-equivalent spread ``σ`` with ``P(|θ_k - m| <= radius) = count / s``.

    Post-processing of the released ``count``: ``σ = radius / Φ⁻¹((1 + F)/2)``, ``F`` the
    released fraction. A fraction above :data:`SPREAD_FRACTION_CAP` says only that ``σ`` is at
    most about ``radius / 2.6``; the spread is then taken as that bound (conservative: a wider
    interval). ``None`` when the fraction is below
    :data:`SPREAD_FRACTION_MIN` (the spread is too large for the radius to say anything).
    """
    frac = count / s
    if not frac >= SPREAD_FRACTION_MIN:
        return None
    x = float(ndtri((1.0 + min(frac, SPREAD_FRACTION_CAP)) / 2.0))
    return radius / x


#: A lattice-Laplace count's noise alone exceeds this many scales with probability
#: :data:`SPREAD_NOISE_BETA`.
NOISE_FLOOR_FACTOR = math.log(1.0 / (2.0 * SPREAD_NOISE_BETA))


def _count_scale(part: float, e_count: float) -> float:
    """The noise scale of a spread count given ``part`` of the counts' ε (sensitivity 1)."""
    return lattice_laplace_scale(1.0, part * e_count)


def _count_floor(which: int, e_count: float) -> float:
    """The level below which spread count ``which`` says nothing: its lattice-Laplace noise
    alone exceeds it with probability :data:`SPREAD_NOISE_BETA`. Public (ε only)."""
    return _count_scale(SPREAD_SHARES[which], e_count) * NOISE_FLOOR_FACTOR


def _log_sd_grid(lo: float, hi: float) -> np.ndarray:
    top = math.log(hi - lo)
    return np.arange(top - LOG_SD_SPAN, top + LOG_SD_STEP / 2, LOG_SD_STEP)


def resolve_general_subsets(
    n_subsets, n: int, epsilon: float, min_rows: int = MIN_AUTO_SUBSET
) -> int:
    """``s``: auto ``max(floor(sqrt(n/ε)), ceil(200/ε))``, at most ``n // min_rows`` (at least 1).

    The estimate's noise against its standard error is about ``8/(ε sqrt(s))`` and each
    private median needs ``s ε_median`` of a few tens, so ``s`` grows as ε shrinks; subsets of
    at least ``min_rows`` rows (20: the subset estimates' bias stays small; 10 for the
    locating subsets, which only find a scale and a location). Data-independent.
    """
    if isinstance(n_subsets, str):
        if n_subsets != "auto":
            raise ValueError(f"n_subsets must be 'auto' or an integer >= 1, got {n_subsets!r}")
        s = max(math.floor(math.sqrt(n / epsilon)), math.ceil(200.0 / epsilon))
        s = max(1, min(s, n // min_rows))
    elif isinstance(n_subsets, bool) or not isinstance(n_subsets, Integral | np.integer):
        raise TypeError(f"n_subsets must be 'auto' or an integer, got {n_subsets!r}")
    else:
        s = int(n_subsets)
        if s < 1:
            raise ValueError(f"n_subsets must be an integer >= 1, got {s}")
    if n < 2 * s:
        raise ValueError(
            f"n_subsets={s} needs n >= {2 * s} rows (2 per subset); x has n={n}. Use fewer "
            "subsets or more data"
        )
    return s


#: The estimate's subsets (:func:`estimate_subsets`): ``ceil(c n^(3/5) ε^(-2/5))``, ``c`` this.
ESTIMATE_SUBSETS_COEF = 0.6
#: Two partitions only where an estimating subset has at least this many times the rows of a
#: locating one.
ESTIMATE_SIZE_GAIN = 1.25


def estimate_subsets(n: int, epsilon: float, locating_subsets: int, at_least: int = 1) -> int:
    """``s``, the number of (larger) subsets whose estimates make the point estimate and spread.

    The bias–noise trade-off (issue 33). With ``s`` subsets of ``b = n/s`` rows, the
    jackknife leaves a bias ``O(1/b²)``, i.e. ``O(s²/n^(3/2))`` standard errors, while the
    clamped mean's noise is ``O(1/(ε sqrt(s)))`` standard errors. The sum of their squares is
    smallest at ``s ∝ n^(3/5) ε^(-2/5)``. The constant :data:`ESTIMATE_SUBSETS_COEF` comes from
    synthetic (public) heavy-tailed laws: the standard deviation of a lognormal(0, 1) sample of
    ``n = 5000`` at ε = 1 kept a bias of 1.33 standard errors with 200 subsets, 0.80 with 100,
    0.46 with 50. Against the interval's own spread (noise included) that is 0.74, 0.35 and
    0.15, i.e. coverage of about 0.81, 0.88 and 0.90 at nominal 0.90. Never more than
    ``locating_subsets`` (the private locations need that many values) nor than subsets of
    :data:`MIN_AUTO_SUBSET` rows allow, and at least ``at_least`` (the caller's public floor:
    enough values for the spread's noisy count to be read). Where the estimating subsets
    would be less than :data:`ESTIMATE_SIZE_GAIN` times the size of the locating ones, one
    partition does both (``locating_subsets`` is returned). Public: ``n`` and ε only.

    Examples
    --------
    >>> estimate_subsets(5000, 1.0, 200), estimate_subsets(50_000, 1.0, 223)
    (100, 223)
    """
    s = max(math.ceil(ESTIMATE_SUBSETS_COEF * n**0.6 * epsilon**-0.4), int(at_least))
    s = max(1, min(s, int(locating_subsets), n // MIN_AUTO_SUBSET))
    # two partitions only where the estimating subsets are clearly larger (else twice the work)
    return int(locating_subsets) if n // s < ESTIMATE_SIZE_GAIN * (n // locating_subsets) else s
