"""Sample sizes, privacy levels and the whole plan of a private calibration: data-free.

:func:`min_calibration_size` and :func:`min_epsilon` search for the smallest n or ε that can
give informative sets; :func:`plan` says what :func:`dpuq.calibrate` will do at public
settings (bins, level, certified coverage, expected threshold). The command ``dpuq plan``
prints these numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpuq._bin_simulation import expected_thresholds
from dpuq._validation import check_alpha, check_epsilon, check_positive_int
from dpuq.planning.bins import _bin_grid, _reference_expected_threshold, auto_n_bins
from dpuq.planning.levels import (
    _below_ceiling,
    _cert,
    _certified_rho,
    _check_bins,
    _check_method,
    _gamma_star,
    _level,
    _level_from_rho,
)

__all__ = [
    "CalibrationPlan",
    "informative_advice",
    "min_calibration_size",
    "min_epsilon",
    "plan",
]


def _informative(n: int, alpha: float, epsilon: float, n_bins, method: str) -> bool:
    if method == "paper":
        m = int(_bin_grid(n, epsilon)[0]) if n_bins == "auto" else int(n_bins)
        return _level(n, alpha, epsilon, m, _gamma_star(n, alpha, epsilon, m)) < 1.0
    m = 10 if n_bins == "auto" else int(n_bins)  # the smallest grid value of both methods
    return not _below_ceiling(n, alpha) and _cert(n, float(n), epsilon, m) >= 1.0 - alpha


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


def informative_advice(n: int, alpha: float, epsilon: float, n_bins, method: str) -> str:
    """Which public n or ε would give informative sets (data-free), in words.

    >>> informative_advice(250, 0.02, 1.0, "auto", "certified")
    'n >= 257 calibration points at epsilon=1 or epsilon >= 1.04 at n=250'
    """
    bins = n_bins if n_bins == "auto" else int(n_bins)
    advice = []
    try:
        need_n = min_calibration_size(alpha, epsilon, bins, method=method)
        advice.append(f"n >= {need_n} calibration points at epsilon={epsilon:g}")
    except ValueError:
        pass
    need_eps = min_epsilon(n, alpha, bins, method=method)
    if math.isfinite(need_eps):
        advice.append(f"epsilon >= {need_eps:g} at n={n}")
    return " or ".join(advice) if advice else "a larger alpha"


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
