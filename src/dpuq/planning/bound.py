"""How much of the residual law a regression bound ``B`` must cover at the user's n and ε.

Private regression intervals score residuals as ``min(|y - ŷ| / B, 1)``; every calibration
residual beyond ``B`` scores 1 (the top bin). The release is the whole line when the drawn
bin is the top one. If ``B`` is the ``q`` quantile of the residual law, the number ``K`` of
calibration residuals beyond it is Binomial(n, 1 - q), and given ``K`` the law of the draw is
exact (:mod:`dpuq.mechanisms.quantile`, rank utility at the certified level). The residuals
below ``B`` sit on the quantile lattice of a reference law: normal errors (``|r|/B`` given
``|r| < B``, :func:`half_normal_below`) when nothing else is known, the held-out training
residuals themselves in :func:`dpuq.public_bound`. Heavier tails than the reference put the
residuals below ``B`` further from it (fewer whole-line releases), lighter tails closer.

:func:`whole_line_probability` gives ``P(whole line)`` for a coverage ``q`` at public
``(n, alpha, ε)``; :func:`aimed_residual_coverage` the smallest ``q`` (the tightest ``B``)
that keeps it at most ``risk``. Data-free: n, alpha, ε and risk only.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp, ndtr, ndtri
from scipy.stats import binom

from dpuq._validation import (
    check_alpha,
    check_count,
    check_epsilon,
    check_in_open_unit,
)
from dpuq.planning.bins import auto_n_bins
from dpuq.planning.levels import _certified_rho, _level_from_rho

__all__ = ["aimed_residual_coverage", "half_normal_below", "whole_line_probability"]

#: Binomial tails below this mass are dropped (their whole-line probability is at most 1).
_TAIL = 1e-12


def _plan(n: int, alpha: float, epsilon: float, n_bins) -> tuple[int, float]:
    m = auto_n_bins(n, alpha, epsilon)[0] if n_bins == "auto" else int(n_bins)
    rho = _certified_rho(n, alpha, epsilon, m)
    return m, _level_from_rho(n, rho, alpha, epsilon, m) * n


def half_normal_below(q: float):
    """The reference law of ``|r| / B`` given ``|r| < B`` for normal errors and ``B`` their
    ``q`` quantile: the CDF ``t -> P(|Z| <= t z_q) / q`` on [0, 1]."""
    z_q = ndtri(0.5 * (1.0 + q))
    return lambda t: (2.0 * ndtr(t * z_q) - 1.0) / q


def _whole_line(n: int, m: int, rho: float, epsilon: float, q: float, below_cdf=None) -> float:
    k_lo, k_hi = (int(v) for v in binom.ppf([_TAIL, 1 - _TAIL], n, 1 - q))
    k = np.arange(max(k_lo - 1, 0), min(k_hi + 1, n) + 1)
    below_b = (n - k)[:, None]  # residuals below B, on the quantile lattice of their law
    cdf = (below_cdf or half_normal_below(q))(np.arange(1, m + 1) / m)
    at_or_below = np.floor(below_b * np.clip(cdf, 0.0, 1.0)[None, :] + 0.5)
    at_or_below[:, -1] = n  # the K residuals beyond B score 1: the top bin
    below = np.concatenate([np.zeros((k.size, 1)), at_or_below[:, :-1]], axis=1)
    lw = -0.5 * epsilon * np.maximum(np.maximum(below - rho, rho - at_or_below), 0.0)
    p_top = np.exp(lw[:, -1] - logsumexp(lw, axis=1))
    weights = binom.pmf(k, n, 1 - q)
    return float(min(1.0, weights @ p_top + (1.0 - weights.sum())))


def whole_line_probability(
    n: int,
    alpha: float,
    epsilon: float,
    residual_coverage: float,
    n_bins: int | str = "auto",
    *,
    below_law=None,
) -> float:
    """``P(the released intervals are the whole line)`` when ``B`` covers ``residual_coverage``
    of the calibration residuals' law (module docstring; on the safe side).

    Examples
    --------
    >>> round(whole_line_probability(159, 0.1, 1.0, 0.95), 2)
    0.4
    >>> round(whole_line_probability(159, 0.1, 1.0, 0.99), 3)
    0.01
    """
    n = check_count(n, "n")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    q = check_in_open_unit(residual_coverage, "residual_coverage")
    m, rho = _plan(n, alpha, epsilon, n_bins)
    if not math.isfinite(rho):
        return 1.0
    return _whole_line(n, m, rho, epsilon, q, None if below_law is None else below_law(q))


def aimed_residual_coverage(
    n: int,
    alpha: float,
    epsilon: float,
    risk: float = 0.01,
    n_bins: int | str = "auto",
    *,
    below_law=None,
) -> float:
    """The smallest residual coverage ``q`` (3 decimals, rounded up) whose whole-line
    probability is at most ``risk``: the tightest ``B`` that still works at n and ε.

    Returns ``inf`` when the release cannot be informative at these settings (no ``B`` helps),
    and ``1 - 1e-6`` (the largest ``q`` tried) when no ``q`` keeps the probability at most
    ``risk`` (e.g. a law whose top is a point mass, as a small sample of residuals).
    ``below_law(q)``, optional, gives the CDF on [0, 1] of ``|r|/B`` given ``|r| < B`` for the
    ``q`` quantile ``B`` (default: normal errors, :func:`half_normal_below`).

    Examples
    --------
    >>> aimed_residual_coverage(159, 0.1, 1.0)
    0.99
    >>> aimed_residual_coverage(5000, 0.1, 1.0)
    0.913
    """
    n = check_count(n, "n")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    risk = check_in_open_unit(risk, "risk")
    m, rho = _plan(n, alpha, epsilon, n_bins)
    if not math.isfinite(rho):
        return math.inf
    law = below_law or half_normal_below

    def p(q: float) -> float:
        return _whole_line(n, m, rho, epsilon, q, law(q))

    lo, hi = 1 - alpha, 1.0 - 1e-6  # P(whole line) decreases as q grows
    if p(hi) > risk:
        return hi  # no q reaches the risk: the largest (the caller says so)
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if p(mid) <= risk:
            hi = mid
        else:
            lo = mid
    return math.ceil(hi * 1000) / 1000 if hi <= 0.999 else hi
