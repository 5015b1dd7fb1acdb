"""Levels, bins and sizes of a private calibration: data-free, so free of privacy cost.

Two methods (paper and certified):

- ``method="certified"`` (default): the rank utility of :mod:`dpuq.mechanisms.quantile` at the
  smallest target rank ρ whose coverage certificate
  ``cert(ρ) = (1/(n+1)) Σ_{k=1..n} 1/(1 + r_k)``, ``r_k = (m-1) exp(-(ε/2)(ρ - k + 1))``,
  reaches ``1 - α`` (proof: docs/calibration.md). Bins: the m minimising the expected released
  threshold on jittered uniform reference scores ``(i - 1 + u)/n`` under the exact law.
- ``method="paper"``: Algorithm 3 of Angelopoulos et al. (2022): the inflated level
  ``q̃ = (n+1)(1-α)/(n(1-γα)) + 2 log(m/(γα))/(ε n)``, the γ* that minimises it, and bins
  chosen on simulated uniform scores (:mod:`dpuq._bin_simulation`).

Every function here uses only the public ``n``, ``alpha``, ``epsilon`` and ``n_bins``.

Length (~500 lines): both methods' levels and bins, and the searches that use both
(:func:`auto_n_bins`, :func:`min_calibration_size`, :func:`min_epsilon`, :func:`plan`), which
choose between them; the paper's bin simulation is in :mod:`dpuq._bin_simulation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.special import expit

from dpuq._bin_simulation import expected_thresholds
from dpuq._validation import (
    check_alpha,
    check_epsilon,
    check_in_open_unit,
    check_n_bins,
    check_positive_int,
)

__all__ = [
    "METHODS",
    "CalibrationPlan",
    "auto_n_bins",
    "certified_level",
    "coverage_certificate",
    "inflated_level",
    "min_calibration_size",
    "min_epsilon",
    "optimal_gamma",
    "plan",
]

#: The calibration methods: the certified rank method (default) and the paper's Algorithm 3.
METHODS = ("certified", "paper")
#: Fallback gamma when the stationary point of q̃ is not in (0, 1) (Angelopoulos et al.).
TINY_GAMMA = 1e-12
_GRID_SIZE = 50
_CERTIFIED_GRID_SIZE = 60
_MAX_BINS = 10_000_000
#: ``|x| > _CUT``: ``expit(x)`` is 1 or 0 to double precision; those terms are summed in bulk.
_CUT = 40.0


def _check_method(method) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    return method


def _check_plan(n, alpha, epsilon, n_bins):
    return (
        check_positive_int(n, "n"),
        check_alpha(alpha),
        check_epsilon(epsilon),
        check_n_bins(n_bins),
    )


# ------------------------------------------------------------------- the certified method
#: Above this many terms in the certificate's window (only for tiny ε), a lower-bounding
#: integral replaces the sum, so memory stays bounded whatever n and ε.
_MAX_TERMS = 1 << 22


def _cert(n: int, rho: float, epsilon: float, m: int) -> float:
    """``cert(ρ)``, rounded down: terms above the cut are ``1 - e^{-x}`` at worst, bounded in
    bulk by a geometric series; terms below it (all ``< e^-40``) are dropped."""
    c = 0.5 * epsilon
    a = c * (rho + 1.0) - math.log(m - 1)  # x_k = a - c k, decreasing in k
    k_hi = min(n, max(0, math.ceil((a - _CUT) / c) - 1))  # x_k > _CUT for k <= k_hi (safe side)
    while k_hi >= 1 and a - c * k_hi <= _CUT:
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
    for exchangeable scores, ``P(s_{n+1} <= T) >= cert(ρ)`` (docs/calibration.md, Theorem).
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


#: Offsets of the jittered uniform reference lattices (averaging them removes the aliasing
#: between a single lattice and the edges j/m).
_REFERENCE_OFFSETS = 16


def _reference_counts(n: int, m: int, j: np.ndarray) -> np.ndarray:
    """``C_j`` of the reference lattices ``(i - 1 + u_k)/n``, ``u_k = (k + 1/2)/K``: shape
    (K, len(j)); exact integer arithmetic: ``C_j = clip(floor(j n/m - u_k) + 1, 0, n)``."""
    k = np.arange(_REFERENCE_OFFSETS)[:, None]
    two_k = 2 * _REFERENCE_OFFSETS
    num = two_k * j[None, :] * n - (2 * k + 1) * m  # (j n/m - u_k) * 2K m
    return np.clip(num // (two_k * m) + 1, 0, n)


def _reference_expected_threshold(n: int, rho: float, epsilon: float, m: int) -> float:
    """``E[e_J]`` under the exact rank law, averaged over the jittered uniform lattices
    (scores ``(i - 1 + u)/n``), over a bin window.

    Bins outside the window have utility below ``-D``, ``D = (2/ε)(log m + 30)``: their total
    relative mass is below ``e^-30``.
    """
    d = (2.0 / epsilon) * (math.log(m) + 30.0)
    lo = max(1, math.floor((rho - d - 1) * m / n) - 1)
    hi = min(m, math.ceil((rho + d + 1) * m / n) + 2)
    j = np.arange(lo, hi + 1, dtype=np.int64)
    at_or_below = _reference_counts(n, m, j).astype(float)
    below = _reference_counts(n, m, j - 1).astype(float)
    log_w = -0.5 * epsilon * np.maximum(np.maximum(below - rho, rho - at_or_below), 0.0)
    w = np.exp(log_w - log_w.max(axis=1, keepdims=True))
    return float(np.mean(w @ (j / m) / w.sum(axis=1)))


def _certified_grid(n: int, epsilon: float) -> np.ndarray:
    # beyond about 100 bins per calibration point a finer grid cannot move the threshold by
    # more than a hundredth of a rank
    top = int(min(_MAX_BINS, max(1000.0, 10.0 * n * epsilon), max(1000.0, 100.0 * (n + 1))))
    return np.unique(np.round(np.geomspace(10, top, _CERTIFIED_GRID_SIZE)).astype(np.int64))


#: m within this many ranks (in threshold units, over n + 1) of the best counts as a tie.
_TIE_RANKS = 0.05
#: ... or within this much in threshold units, whichever is larger: a finer threshold gains
#: nothing a user can see, and at n = 10^8 it would cost a 10^7-bin law (gigabytes). Binding
#: only for n above 50,000 (below, 0.05/(n + 1) is larger).
_TIE_THRESHOLD = 1e-6


def _auto_certified(n: int, alpha: float, epsilon: float) -> int:
    grid = _certified_grid(n, epsilon)
    expected = np.ones(grid.size)
    rho0 = _certified_rho(n, alpha, epsilon, int(grid[0]))
    if not math.isfinite(rho0):  # cert decreases in m: nothing on the grid is informative
        return int(grid[0])
    target = 1.0 - alpha
    for i, m in enumerate(grid):  # about 60 values, each O(window)
        # cert(rho; m) depends on m only through log(m - 1): shift rho*(m0), then check
        rho = rho0 + (2.0 / epsilon) * (math.log(m - 1) - math.log(grid[0] - 1))
        while rho <= n and _cert(n, rho, epsilon, int(m)) < target:  # float rounding only
            rho = min(float(n), rho + 1e-9 * max(1.0, rho)) if rho < n else math.inf
        if rho <= n:
            expected[i] = _reference_expected_threshold(n, rho, epsilon, int(m))
    # the smallest m within a twentieth of a rank (or 1e-6) of the best: finer grids gain
    # nothing more
    tie = max(_TIE_RANKS / (n + 1), _TIE_THRESHOLD)
    return int(grid[np.flatnonzero(expected <= expected.min() + tie)[0]])


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


def _bin_grid(n: int, epsilon: float) -> np.ndarray:
    top = int(min(_MAX_BINS, max(1000.0, 10.0 * n * epsilon)))
    return np.unique(np.round(np.geomspace(10, top, _GRID_SIZE)).astype(np.int64))


def _auto_paper(n: int, alpha: float, epsilon: float) -> tuple[int, float]:
    grid = _bin_grid(n, epsilon)
    gammas = [_gamma_star(n, alpha, epsilon, int(m)) for m in grid]
    levels = [_level(n, alpha, epsilon, int(m), g) for m, g in zip(grid, gammas, strict=True)]
    if levels[0] >= 1.0:  # q̃ grows with m: nothing on the grid is informative
        return int(grid[0]), gammas[0]
    found = expected_thresholds(
        n, [(int(m), q, epsilon) for m, q in zip(grid, levels, strict=True) if q < 1.0]
    )
    best = int(np.argmin([found.get(int(m), 1.0) for m in grid]))
    return int(grid[best]), gammas[best]


# ------------------------------------------------------------------- both methods
def auto_n_bins(
    n: int, alpha: float, epsilon: float, *, method: str = "certified"
) -> tuple[int, float | None]:
    """Deterministic, data-free number of bins m* (and γ* for the paper's method).

    ``"certified"``: over about 60 log-spaced m from 10 to
    ``max(1000, min(10 n ε, 100 (n+1)))``, the m whose certified release has the smallest
    expected threshold on uniform reference scores (16 jittered lattices ``(i - 1 + u)/n``;
    exact law, over the bins that carry mass); the smallest m within 0.05 ranks (or 1e-6,
    whichever is larger) of the best, since finer grids then gain nothing; uninformative m
    count as 1.
    ``"paper"``: the paper's rule (50 log-spaced m from 10, simulated uniform scores, fixed
    seed).
    Ties go to the smaller m. Uses only ``n``, ``alpha``, ``epsilon``: no privacy cost.

    Returns
    -------
    n_bins : int
    gamma : float or None
        γ* for ``method="paper"``, None for ``"certified"`` (no γ there).

    Examples
    --------
    >>> auto_n_bins(1000, 0.1, 1.0)
    (210, None)
    >>> auto_n_bins(1000, 0.1, 1.0, method="paper")[0]
    15
    """
    method = _check_method(method)
    n = check_positive_int(n, "n")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    if method == "paper":
        return _auto_paper(n, alpha, epsilon)
    return _auto_certified(n, alpha, epsilon), None


def _informative(n: int, alpha: float, epsilon: float, n_bins, method: str) -> bool:
    if method == "paper":
        m = int(_bin_grid(n, epsilon)[0]) if n_bins == "auto" else int(n_bins)
        return _level(n, alpha, epsilon, m, _gamma_star(n, alpha, epsilon, m)) < 1.0
    m = 10 if n_bins == "auto" else int(n_bins)  # the smallest grid value of both methods
    return not _below_ceiling(n, alpha) and _cert(n, float(n), epsilon, m) >= 1.0 - alpha


def _check_bins(n_bins):
    if n_bins == "auto":
        return n_bins
    return check_positive_int(n_bins, "n_bins", minimum=2)


def min_calibration_size(
    alpha: float, epsilon: float, n_bins: int | str = "auto", *, method: str = "certified"
) -> int:
    """Smallest n for which the private sets can be informative.

    With ``n_bins="auto"`` the answer is for the smallest grid value (10 bins, for
    both methods), the most favourable one; :func:`auto_n_bins` never
    picks an uninformative m when an informative one exists. Informativeness grows with n.

    Examples
    --------
    >>> min_calibration_size(0.1, 1.0)
    51
    >>> min_calibration_size(0.1, 1.0, method="paper")
    162
    """
    method = _check_method(method)
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    n_bins = _check_bins(n_bins)
    lo, hi = 1, 2
    while not _informative(hi, alpha, epsilon, n_bins, method):
        lo, hi = hi, hi * 2
        if hi > 10**15:
            raise ValueError("no calibration size gives informative sets at these settings")
    while hi - lo > 1:  # invariant: lo uninformative (or lo == 1), hi informative
        mid = (lo + hi) // 2
        if _informative(mid, alpha, epsilon, n_bins, method):
            hi = mid
        else:
            lo = mid
    return lo if _informative(lo, alpha, epsilon, n_bins, method) else hi


def min_epsilon(
    n: int, alpha: float, n_bins: int | str = "auto", *, method: str = "certified"
) -> float:
    """Smallest ε (3 significant digits, rounded up) for which the sets can be informative.

    Returns ``inf`` when no ε suffices (then ``n/(n+1) <= 1 - α``: even the non-private
    split-conformal threshold is infinite).

    Examples
    --------
    >>> min_epsilon(1000, 0.1)
    0.0463
    >>> min_epsilon(1000, 0.1, method="paper")
    0.153
    """
    method = _check_method(method)
    n = check_positive_int(n, "n")
    alpha = check_alpha(alpha)
    n_bins = _check_bins(n_bins)
    if not _informative(n, alpha, 1e12, n_bins, method):
        return math.inf
    lo, hi = -12.0, 12.0  # log10 epsilon
    for _ in range(80):
        mid = (lo + hi) / 2
        if _informative(n, alpha, 10**mid, n_bins, method):
            hi = mid
        else:
            lo = mid
    eps = 10**hi
    digits = 2 - math.floor(math.log10(eps))
    rounded = math.ceil(eps * 10**digits) / 10**digits
    return rounded if _informative(n, alpha, rounded, n_bins, method) else eps


# ------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class CalibrationPlan:
    """What :func:`dpuq.calibrate` will do at these public settings (no data used).

    ``level``: ``ρ*/n`` (certified) or q̃ (paper); ``inf`` or ``>= 1`` (paper) when the
    release is the constant 1.0. ``certified_coverage``: the guaranteed coverage (the
    certificate, ``1 - alpha`` for the paper's Theorem 2, 1 for full sets).
    ``expected_threshold``: ``E[threshold]`` on uniform reference scores; ``baseline``: the
    split-conformal ``k/(n+1)`` on the same scores (inf when even that is full).
    """

    method: str
    n: int
    alpha: float
    epsilon: float
    n_bins: int
    gamma: float | None
    level: float
    informative: bool
    certified_coverage: float
    expected_threshold: float
    baseline: float


def plan(
    n: int,
    alpha: float,
    epsilon: float,
    n_bins: int | str = "auto",
    *,
    method: str = "certified",
) -> CalibrationPlan:
    """The bins, level, certified coverage and expected threshold of a private calibration.

    Examples
    --------
    >>> p = plan(1000, 0.1, 1.0)
    >>> p.n_bins, p.informative, round(p.expected_threshold - p.baseline, 3)
    (210, True, 0.013)
    """
    method = _check_method(method)
    n = check_positive_int(n, "n")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    n_bins = _check_bins(n_bins)
    k = math.ceil((n + 1) * (1 - Fraction(repr(alpha))))
    baseline = math.inf if k > n else k / (n + 1)
    if n_bins == "auto":
        m, gamma = auto_n_bins(n, alpha, epsilon, method=method)
    else:
        m = n_bins
        gamma = _gamma_star(n, alpha, epsilon, m) if method == "paper" else None
    if method == "paper":
        level = _level(n, alpha, epsilon, m, gamma)
        informative = level < 1.0
        expected = expected_thresholds(n, [(m, level, epsilon)])[m] if informative else 1.0
        cover = 1.0 - alpha if informative else 1.0
    else:
        rho = _certified_rho(n, alpha, epsilon, m)
        level = _level_from_rho(n, rho, alpha, epsilon, m)
        informative = math.isfinite(rho)
        expected = _reference_expected_threshold(n, rho, epsilon, m) if informative else 1.0
        cover = _cert(n, level * n, epsilon, m) if informative else 1.0
    return CalibrationPlan(
        method, n, alpha, epsilon, m, gamma, level, informative, cover, expected, baseline
    )
