"""The plan of a joint release of several levels (``dpuq.calibrate(alpha=[...])``): data-free.

Which levels the joint release serves, with how many bins, at which target ranks and with which
certificates, and the smallest n or ε that serves each level. Everything here uses only the
public ``n``, ``alphas``, ``epsilon`` and ``n_bins``, so the decision to set a level aside (full
sets) is itself public: the served levels share the whole ε in one draw
(:mod:`dpuq.mechanisms.joint_quantiles`), the set-aside ones use no data.
"""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import (
    check_alpha,
    check_count,
    check_epsilon,
    check_n_bins,
)
from dpuq.mechanisms.joint_quantiles import _MAX_TUPLES, joint_union_sizes, n_ordered_tuples
from dpuq.planning.bins import auto_n_bins
from dpuq.planning.levels import _cert, _certified_rho, _level_from_rho

__all__ = ["check_alphas", "format_levels", "joint_plan", "joint_served"]

#: The smallest bin count ``n_bins="auto"`` considers (the smallest value of the single-level
#: grid): the most favourable one for serving every level.
SMALLEST_AUTO_BINS = 10


def check_alphas(alpha) -> tuple[float, ...]:
    """A non-empty sequence of distinct miscoverage levels, each in (0, 0.5]."""
    if isinstance(alpha, str) or not hasattr(alpha, "__len__"):
        raise TypeError(f"alpha must be a number or a sequence of numbers, got {alpha!r}")
    values = tuple(check_alpha(a, "alpha") for a in alpha)
    if not values:
        raise ValueError("alpha must hold at least one level")
    if len(set(values)) != len(values):
        raise ValueError(f"alpha must not repeat a level, got {format_levels(values)}")
    return values


def format_levels(values) -> str:
    """Levels as a user types them: ``[0.05, 0.1]`` (12 significant digits, no float noise).

    Examples
    --------
    >>> format_levels([1 - 0.95, 0.1])
    '[0.05, 0.1]'
    """
    return "[" + ", ".join(f"{float(v):.12g}" for v in values) + "]"


def _plan_at(n: int, alphas: tuple, eps: float, m: int):
    """Ranks and certificates at a fixed m: drop the levels no rank certifies, plan the rest."""
    n_levels = len(alphas)
    active = sorted(range(n_levels), key=lambda i: -alphas[i])  # increasing rank
    level = np.full(n_levels, math.inf)
    cover = np.ones(n_levels)
    for _ in range(n_levels):
        sizes = joint_union_sizes(m, len(active))
        rhos = [
            _certified_rho(n, alphas[i], eps, s + 1) for i, s in zip(active, sizes, strict=True)
        ]
        keep = [i for i, r in zip(active, rhos, strict=True) if math.isfinite(r)]
        if len(keep) == len(active):
            break
        active = keep
    if active:
        sizes = joint_union_sizes(m, len(active))
        for i, size in zip(active, sizes, strict=True):
            rho = _certified_rho(n, alphas[i], eps, size + 1)
            level[i] = _level_from_rho(n, rho, alphas[i], eps, size + 1)
        # ranks must be nondecreasing along the draw's order (rounding could break ties)
        level[active] = np.maximum.accumulate([level[i] for i in active])
        for i, size in zip(active, sizes, strict=True):  # the certificate at the rank used
            cover[i] = _cert(n, level[i] * n, eps, size + 1)
    return level, cover


def _auto_bins(n: int, alphas: tuple, eps: float) -> int:
    """The median level's single-level choice at ε/L; if it sets aside a level that the
    smallest grid value would serve, the largest m below it that serves as many levels."""
    n_levels = len(alphas)
    choices = sorted(auto_n_bins(n, a, eps / n_levels)[0] for a in alphas)
    m = choices[(n_levels - 1) // 2]
    lo = SMALLEST_AUTO_BINS
    if m <= lo:
        return m

    def served(bins: int) -> int:
        return int(np.isfinite(_plan_at(n, alphas, eps, bins)[0]).sum())

    best = served(lo)
    if served(m) >= best:
        return m
    while m - lo > 1:  # invariant: lo serves `best` levels, m serves fewer (fewer as m grows)
        mid = (lo + m) // 2
        if served(mid) >= best:
            lo = mid
        else:
            m = mid
    return lo


def joint_plan(n: int, alphas, epsilon: float, n_bins: int | str = "auto"):
    """Data-free plan of the joint release: bins, target ranks and certificates per level.

    Levels are sorted by decreasing alpha (increasing rank). A level whose certificate cannot
    reach ``1 - alpha`` even at rank n (with every served level in the draw) is set aside
    (full sets, no data used), and the rest are planned again with fewer levels (smaller
    union sizes, so they stay certified). With ``n_bins="auto"``, m is the median level's
    single-level choice at ε/L, lowered (never below 10) when a smaller m serves more levels.

    Returns
    -------
    m : int
    level : ndarray (L,)
        ``ρ_l/n`` aligned with ``alphas`` (``inf`` when set aside).
    cover : ndarray (L,)
        Certified coverage (1 when set aside).

    Examples
    --------
    >>> m, level, cover = joint_plan(1000, [0.05, 0.1, 0.2], 1.0)
    >>> m, bool(np.all(cover >= [0.95, 0.9, 0.8]))
    (79, True)
    """
    alphas = check_alphas(alphas)
    eps = check_epsilon(epsilon)
    n = check_count(n, "n")
    m = _auto_bins(n, alphas, eps) if n_bins == "auto" else check_n_bins(n_bins)
    if n_ordered_tuples(m, len(alphas)) >= _MAX_TUPLES:  # refused before any data or budget
        raise ValueError(
            f"{len(alphas)} levels over {m} bins give too many ordered tuples for the exact "
            "joint sampler; use fewer levels or a smaller n_bins"
        )
    level, cover = _plan_at(n, alphas, eps, m)
    return m, level, cover


def joint_served(n: int, alphas, epsilon: float, n_bins: int | str = "auto") -> np.ndarray:
    """Which levels a joint release of all of ``alphas`` can serve (boolean, aligned).

    With ``n_bins="auto"`` the answer is for the most favourable bin count (10, the smallest
    value ``"auto"`` takes), which ``"auto"`` then uses when needed, as for one level.

    Examples
    --------
    >>> joint_served(199, [0.2, 0.1, 0.05], 1.0).tolist()
    [True, True, False]
    """
    alphas = check_alphas(alphas)
    eps = check_epsilon(epsilon)
    m = SMALLEST_AUTO_BINS if n_bins == "auto" else check_n_bins(n_bins)
    return np.isfinite(_plan_at(check_count(n, "n"), alphas, eps, m)[0])
