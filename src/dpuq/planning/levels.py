"""Levels and certificates of a private calibration: data-free, so free of privacy cost.

- ``method="certified"`` (default): the rank utility of :mod:`dpuq.mechanisms.quantile` at the
  smallest target rank ρ whose coverage certificate
  ``cert(ρ) = (1/(n+1)) Σ_{k=1..n} 1/(1 + r_k)``, ``r_k = (m-1) exp(-(ε/2)(ρ - k + 1))``,
  reaches ``1 - α`` (proof: docs/explanation/calibration.md): :func:`coverage_certificate`,
  :func:`certified_level`.
- ``method="paper"``: Algorithm 3 of Angelopoulos et al. (2022): the inflated level
  ``q̃ = (n+1)(1-α)/(n(1-γα)) + 2 log(m/(γα))/(ε n)`` and the γ* that minimises it:
  :func:`inflated_level`, :func:`optimal_gamma`.

Every function here uses only the public ``n``, ``alpha``, ``epsilon`` and ``n_bins``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import expit

from dpuq._validation import (
    _as_float,
    check_alpha,
    check_count,
    check_epsilon,
    check_in_open_unit,
    check_n_bins,
    check_positive_int,
)

__all__ = [
    "METHODS",
    "TINY_GAMMA",
    "certified_level",
    "coverage_certificate",
    "coverage_upper_bound",
    "inflated_level",
    "optimal_gamma",
]

#: The calibration methods: the certified rank method (default) and the paper's Algorithm 3.
METHODS = ("certified", "paper")
#: Fallback gamma when the stationary point of q̃ is not in (0, 1) (Angelopoulos et al.).
TINY_GAMMA = 1e-12
#: ``|x| > _CUT``: ``expit(x)`` is 1 or 0 to double precision; those terms are summed in bulk.
_CUT = 40.0


def _check_method(method) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def _check_plan(n, alpha, epsilon, n_bins):
    return (
        check_count(n, "n"),
        check_alpha(alpha),
        check_epsilon(epsilon),
        check_n_bins(n_bins),
    )


def _check_bins(n_bins):
    if n_bins == "auto":
        return n_bins
    return check_positive_int(n_bins, "n_bins", minimum=2)


# ------------------------------------------------------------------- the certified method
#: Above this many terms in the certificate's window (only for tiny ε), a lower-bounding
#: integral replaces the sum, so memory stays bounded whatever n and ε.
_MAX_TERMS = 1 << 22
#: Most single steps back from the certificate's computed cut (it is off by one or two).
_MAX_BACKSTEPS = 64


def _cert(n: int, rho: float, epsilon: float, m: int) -> float:
    """``cert(ρ)``, rounded down: terms above the cut are ``1 - e^{-x}`` at worst, bounded in
    bulk by a geometric series; terms below it (all ``< e^-40``) are dropped."""
    c = 0.5 * epsilon
    a = c * (rho + 1.0) - math.log(m - 1)  # x_k = a - c k, decreasing in k
    k_hi = min(n, max(0, math.ceil((a - _CUT) / c) - 1))  # x_k > _CUT for k <= k_hi (safe side)
    # the rounding of the division is off by a step or two; each step moves x_k by c. Bounded:
    # where c k is beyond float precision a step moves nothing (n <= 2^53 keeps it moving)
    for _ in range(_MAX_BACKSTEPS):
        if not (k_hi >= 1 and a - c * k_hi <= _CUT):
            break
        k_hi -= 1
    k_lo = min(n, max(k_hi, math.floor((a + _CUT) / c) + 1))  # x_k < -_CUT for k > k_lo
    if k_lo - k_hi > _MAX_TERMS:
        # tiny ε: too many terms to sum one by one. f(k) = expit(a - c k) decreases, so
        # sum_{k=K1..K2} f(k) >= integral_{K1}^{K2+1} f = (softplus(a - c K1) - softplus(a - c
        # (K2 + 1))) / c: still a lower bound, so the certificate stays rounded down
        lo, hi = k_hi + 1.0, k_lo + 1.0
        total = float((np.logaddexp(0.0, a - c * lo) - np.logaddexp(0.0, a - c * hi)) / c)
    else:
        k = np.arange(k_hi + 1, k_lo + 1, dtype=float)
        total = float(expit(a - c * k).sum())
    if k_hi:
        total += k_hi - math.exp(-_CUT) / -math.expm1(-c)
    return max(total, 0.0) / (n + 1)


def coverage_certificate(n: int, level: float, epsilon: float, n_bins: int) -> float:
    """Certified coverage of the rank-utility release at target rank ``ρ = level · n``.

    ``cert(ρ) = (1/(n+1)) Σ_{k=1..n} 1/(1 + r_k)``, ``r_k = (m-1) exp(-(ε/2)(ρ - k + 1))``:
    for exchangeable scores, ``P(s_{n+1} <= T) >= cert(ρ)`` (docs/explanation/calibration.md,
    Theorem).
    Increasing in ``level``; at most ``n/(n+1)``. A level above 1 stands for the constant
    release 1.0 (full sets), whose coverage is 1. Vectorised over k; the value is rounded down.

    Parameters
    ----------
    n : int
        Number of calibration points (public).
    level : float
        ``ρ/n`` >= 0.
    epsilon : float
        Privacy parameter > 0.
    n_bins : int
        Number of bins ``m`` >= 2.

    Examples
    --------
    >>> round(coverage_certificate(1000, 0.92, 1.0, 250), 4)
    0.9086
    >>> coverage_certificate(1000, 1.0, 100.0, 2) == 1000 / 1001
    True
    """
    n, _, epsilon, m = _check_plan(n, 0.5, epsilon, n_bins)
    q = float(level)
    if not (math.isfinite(q) or q == math.inf) or q < 0:
        raise ValueError(f"level must be a number >= 0, got {level!r}")
    if q > 1.0:
        return 1.0
    return _cert(n, q * n, epsilon, m)


def _below_ceiling(n: int, alpha: float) -> bool:
    """``n/(n+1) <= 1 - α`` exactly (α read as its decimal): then no ρ is certified, since
    ``cert < n/(n+1)`` always (a float sum could round up to the boundary)."""
    return Fraction(n, n + 1) <= 1 - Fraction(repr(float(alpha)))


def _certified_rho(n: int, alpha: float, epsilon: float, m: int) -> float:
    """Smallest ρ in [0, n] with ``cert(ρ) >= 1 - α`` (bisection), or ``inf`` if none."""
    target = 1.0 - alpha
    if _below_ceiling(n, alpha) or _cert(n, float(n), epsilon, m) < target:
        return math.inf
    lo, hi = 0.0, float(n)
    if _cert(n, lo, epsilon, m) >= target:
        return lo
    while hi - lo > 1e-9 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if _cert(n, mid, epsilon, m) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def _level_from_rho(n: int, rho: float, alpha: float, epsilon: float, m: int) -> float:
    """``ρ/n``, nudged up so that the mechanism's ``(ρ/n)·n`` is still certified."""
    if not math.isfinite(rho):
        return math.inf
    level = rho / n
    while _cert(n, level * n, epsilon, m) < 1.0 - alpha:
        level = math.nextafter(level, math.inf)
    return level


def certified_level(n: int, alpha: float, epsilon: float, n_bins: int) -> float:
    """The certified method's level ``ρ*/n``: the smallest with ``cert >= 1 - alpha``.

    Returns ``inf`` when even ``ρ = n`` is not certified (no informative release: the
    threshold is the constant 1.0). Roughly ``ρ* ≈ (1-α)(n+1) + (2/ε) log(m-1) - 1/2``.

    Examples
    --------
    >>> lvl = certified_level(1000, 0.1, 1.0, 250)
    >>> round(lvl, 4), coverage_certificate(1000, lvl, 1.0, 250) >= 0.9
    (0.9114, True)
    >>> certified_level(20, 0.1, 1.0, 10)
    inf
    """
    n, alpha, epsilon, m = _check_plan(n, alpha, epsilon, n_bins)
    return _level_from_rho(n, _certified_rho(n, alpha, epsilon, m), alpha, epsilon, m)


# ------------------------------------------------------------------- the paper's method
def _level(n: int, alpha: float, epsilon: float, m: int, gamma: float) -> float:
    return (n + 1) * (1 - alpha) / (n * (1 - gamma * alpha)) + 2 * math.log(m / (gamma * alpha)) / (
        epsilon * n
    )


def inflated_level(n: int, alpha: float, epsilon: float, n_bins: int, gamma: float) -> float:
    """The inflated quantile level q̃ (Algorithm 3 of Angelopoulos et al.), unclipped.

    ``q̃ = (n+1)(1-α) / (n(1-γα)) + 2 log(m/(γα)) / (ε n)``. A value >= 1 means that no
    informative threshold can be released: the prediction sets are full.

    Examples
    --------
    >>> round(inflated_level(1000, 0.1, 1.0, 100, 0.1), 4)
    0.9284
    """
    n, alpha, epsilon, m = _check_plan(n, alpha, epsilon, n_bins)
    gamma = check_in_open_unit(gamma, "gamma")
    return _level(n, alpha, epsilon, m, gamma)


def _gamma_star(n: int, alpha: float, epsilon: float, m: int) -> float:
    # d q̃ / dγ = 0  <=>  α² γ² − (α(1−α)ε(n+1)/2 + 2α) γ + 1 = 0; smaller root, stably.
    a = alpha * alpha
    b = -(alpha * (1 - alpha) * epsilon * (n + 1) / 2 + 2 * alpha)
    disc = b * b - 4 * a
    root = 2.0 / (-b + math.sqrt(max(disc, 0.0)))
    # the paper's tiny fallback, and gamma just below 1: when the root is not in (0, 1), q̃ decreases
    # on all of (0, 1) and is >= 1 there (uninformative); 1 - 1e-9 then reports its infimum.
    candidates = [TINY_GAMMA, 1.0 - 1e-9]
    if 0.0 < root < 1.0:
        candidates.append(root)
    return min(candidates, key=lambda g: _level(n, alpha, epsilon, m, g))


def optimal_gamma(n: int, alpha: float, epsilon: float, n_bins: int) -> float:
    """γ* minimising q̃ over (0, 1) (Angelopoulos et al., ``method="paper"``), from the stable root.

    Examples
    --------
    >>> g = optimal_gamma(1000, 0.1, 1.0, 100)
    >>> bool(0 < g < 1)
    True
    """
    n, alpha, epsilon, m = _check_plan(n, alpha, epsilon, n_bins)
    return _gamma_star(n, alpha, epsilon, m)


def coverage_upper_bound(
    n: int, alpha: float, epsilon: float, n_bins: int, gamma: float, p_max: float
) -> float:
    """Theorem 3's upper bound on the coverage of the private sets (Angelopoulos et al.).

    ``1 − (1−γ)α + (1−γα)(2 p_max + 2(1 + max(q̃/(1−q̃), 1)) log(m/(γα)) / ((n+1) ε))``,
    with ``p_max`` the largest probability of one bin under the score distribution.
    Returns ``inf`` when ``q̃ >= 1``.

    Examples
    --------
    >>> round(coverage_upper_bound(1000, 0.1, 8.0, 100, 0.1, 0.01), 4)
    0.9558
    """
    n = check_count(n, "n")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    m = check_n_bins(n_bins)
    gamma = check_in_open_unit(gamma, "gamma")
    if not (0.0 <= _as_float(p_max, "p_max") <= 1.0):
        raise ValueError(f"p_max must be in [0, 1], got {p_max!r}")
    q = _level(n, alpha, epsilon, m, gamma)
    if q >= 1.0:
        return math.inf
    log_term = math.log(m / (gamma * alpha))
    return (
        1
        - (1 - gamma) * alpha
        + (1 - gamma * alpha)
        * (2 * p_max + 2 * (1 + max(q / (1 - q), 1.0)) * log_term / ((n + 1) * epsilon))
    )
