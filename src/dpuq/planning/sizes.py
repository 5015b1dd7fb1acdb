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
from functools import partial

import numpy as np

from dpuq._validation import check_alpha, check_count, check_epsilon
from dpuq.planning._bin_simulation import expected_thresholds
from dpuq.planning.bins import _bin_grid, _reference_expected_threshold, auto_n_bins
from dpuq.planning.joint import SMALLEST_AUTO_BINS, _plan_at, check_alphas, joint_plan
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
    "JointPlan",
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


def _several(alpha) -> bool:
    return not isinstance(alpha, str) and hasattr(alpha, "__len__")


def _check_joint(alpha, method: str) -> tuple[float, ...]:
    if method != "certified":
        raise ValueError("several levels need method='certified' (the joint release)")
    return check_alphas(alpha)


def _joint_informative(n, alphas, epsilon, n_bins, which: int) -> bool:
    m = SMALLEST_AUTO_BINS if n_bins == "auto" else int(n_bins)
    return bool(np.isfinite(_plan_at(n, alphas, epsilon, m)[0][which]))


def min_calibration_size(
    alpha, epsilon: float, n_bins: int | str = "auto", *, method: str = "certified"
):
    """Smallest n for which the private sets can be informative.

    With ``n_bins="auto"`` the answer is for the smallest grid value (10 bins, for
    both methods), the most favourable one; :func:`auto_n_bins` never
    picks an uninformative m when an informative one exists. Informativeness grows with n.

    Several levels (``alpha=[...]``): an int array, per level the smallest n at which the
    *joint* release of all of them (``dpuq.calibrate(alpha=[...])``) serves that level; the
    joint release needs more data per level than a release of that level alone, since the
    levels share ε (:func:`dpuq.planning.joint.joint_served`).

    Examples
    --------
    >>> min_calibration_size(0.1, 1.0)
    51
    >>> min_calibration_size(0.1, 1.0, method="paper")
    162
    >>> min_calibration_size([0.2, 0.1, 0.05], 1.0).tolist(), min_calibration_size(0.05, 1.0)
    ([56, 112, 214], 103)
    """
    method = _check_method(method)
    epsilon = check_epsilon(epsilon)
    n_bins = _check_bins(n_bins)
    if _several(alpha):
        alphas = _check_joint(alpha, method)
        return np.array(
            [joint_min_n(alphas, epsilon, n_bins, i) for i in range(len(alphas))], dtype=np.int64
        )
    alpha = check_alpha(alpha)
    return _smallest_n(partial(_informative, alpha=alpha, method=method), epsilon, n_bins)


def _smallest_n(informative, epsilon: float, n_bins) -> int:
    """Doubling then bisection over n of ``informative(n, epsilon=, n_bins=)``."""

    def ok(n: int) -> bool:
        return informative(n, epsilon=epsilon, n_bins=n_bins)

    lo, hi = 1, 2
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > 10**15:
            raise ValueError("no calibration size gives informative sets at these settings")
    while hi - lo > 1:  # invariant: lo uninformative (or lo == 1), hi informative
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return lo if ok(lo) else hi


def min_epsilon(n: int, alpha, n_bins: int | str = "auto", *, method: str = "certified"):
    """Smallest ε (3 significant digits, rounded up) for which the sets can be informative.

    Returns ``inf`` when no ε suffices (then ``n/(n+1) <= 1 - α``: even the non-private
    split-conformal threshold is infinite). Several levels (``alpha=[...]``): a float array,
    per level the smallest ε at which the joint release of all of them serves that level.

    Examples
    --------
    >>> min_epsilon(1000, 0.1)
    0.0463
    >>> min_epsilon(1000, 0.1, method="paper")
    0.153
    """
    method = _check_method(method)
    n = check_count(n, "n")
    n_bins = _check_bins(n_bins)
    if _several(alpha):
        alphas = _check_joint(alpha, method)
        return np.array([joint_min_epsilon(n, alphas, n_bins, i) for i in range(len(alphas))])
    alpha = check_alpha(alpha)
    return _smallest_epsilon(
        lambda epsilon, n_bins: _informative(n, alpha, epsilon, n_bins, method), n_bins
    )


def joint_min_n(alphas: tuple, epsilon: float, n_bins, which: int) -> int:
    """The smallest n at which the joint release of (checked) ``alphas`` serves level
    ``which`` (:func:`min_calibration_size` with several levels, one of them)."""
    return _smallest_n(partial(_joint_informative, alphas=alphas, which=which), epsilon, n_bins)


def joint_min_epsilon(n: int, alphas: tuple, n_bins, which: int) -> float:
    """The smallest ε at which the joint release of (checked) ``alphas`` at n serves level
    ``which`` (:func:`min_epsilon` with several levels, one of them)."""
    return _smallest_epsilon(partial(_joint_informative, n, alphas, which=which), n_bins, 40)


def _smallest_epsilon(informative, n_bins, steps: int = 80) -> float:
    """Bisection over log10 ε of ``informative(epsilon=, n_bins=)``, rounded up to 3 digits."""

    def ok(eps: float) -> bool:
        return informative(epsilon=eps, n_bins=n_bins)

    if not ok(1e12):
        return math.inf
    lo, hi = -12.0, 12.0  # log10 epsilon
    for _ in range(steps):
        mid = (lo + hi) / 2
        if ok(10**mid):
            hi = mid
        else:
            lo = mid
    eps = 10**hi
    digits = 2 - math.floor(math.log10(eps))
    rounded = math.ceil(eps * 10**digits) / 10**digits
    return rounded if ok(rounded) else eps


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


@dataclass(frozen=True)
class JointPlan:
    """What :func:`dpuq.calibrate` will do with several levels (one joint release; no data).

    Arrays are aligned with ``alpha`` as given. ``served``: the levels the joint release
    serves (the others are set aside: full sets). ``level``: ``ρ_l/n`` (inf when set aside);
    ``certified_coverage``: per level (1 when set aside). ``min_n`` / ``min_epsilon``: per
    level, the smallest n (at this ε) and ε (at this n) at which the joint release of all
    these levels serves it; ``min_n_alone``: the smallest n for that level released alone.
    """

    n: int
    alpha: tuple
    epsilon: float
    n_bins: int
    served: np.ndarray
    level: np.ndarray
    certified_coverage: np.ndarray
    min_n: np.ndarray
    min_epsilon: np.ndarray
    min_n_alone: np.ndarray
    method: str = "certified"


def _joint_plan_summary(n: int, alpha, epsilon: float, n_bins, method: str) -> JointPlan:
    alphas = _check_joint(alpha, method)
    m, level, cover = joint_plan(n, alphas, epsilon, n_bins)
    alone = []
    for a in alphas:
        try:
            alone.append(min_calibration_size(a, epsilon, n_bins))
        except ValueError:
            alone.append(-1)
    return JointPlan(
        n,
        alphas,
        epsilon,
        m,
        np.isfinite(level),
        level,
        cover,
        min_calibration_size(list(alphas), epsilon, n_bins),
        min_epsilon(n, list(alphas), n_bins),
        np.array(alone, dtype=np.int64),
    )


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
    alpha,
    epsilon: float,
    n_bins: int | str = "auto",
    *,
    method: str = "certified",
) -> CalibrationPlan | JointPlan:
    """The bins, level, certified coverage and expected threshold of a private calibration.

    Several levels (``alpha=[...]``) give a :class:`JointPlan`: per level, whether the joint
    release serves it, its rank and certificate, and the n or ε that would serve it.

    Examples
    --------
    >>> p = plan(1000, 0.1, 1.0)
    >>> p.n_bins, p.informative, round(p.expected_threshold - p.baseline, 3)
    (210, True, 0.013)
    >>> j = plan(199, [0.2, 0.1, 0.05], 1.0)
    >>> j.served.tolist(), j.min_n.tolist(), j.min_n_alone.tolist()
    ([True, True, False], [56, 112, 214], [25, 51, 103])
    """
    method = _check_method(method)
    n = check_count(n, "n")
    if _several(alpha):
        return _joint_plan_summary(n, alpha, check_epsilon(epsilon), _check_bins(n_bins), method)
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
