"""Algorithm 1 of Chadha, Duchi, Kuditipudi (2024): the naive private bootstrap (Chadha et al.
2024).

``T = ⌊√(n ε)⌋`` resamples, each statistic released with Laplace noise; one person can appear
in many resamples, so the guarantee is only ``(ε', δ)`` with ``ε'`` from advanced composition
and a bound on how often one point is resampled: :func:`naive_bootstrap_privacy` computes
the ``ε'`` the code actually has, and every report states it. A baseline, not the default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpuq._validation import (
    check_epsilon,
    check_in_open_unit,
)
from dpuq.mechanisms.laplace import laplace_release, laplace_scale

__all__ = [
    "NaivePrivacy",
    "naive_bootstrap_privacy",
]


@dataclass(frozen=True)
class NaivePrivacy:
    """The (ε', δ) guarantee of Algorithm 1 and the numbers behind it."""

    epsilon: float  # total ε', including the ε of the centre θ̃
    delta: float
    epsilon_per_appearance: float  # ε n^(-1/4)
    max_appearances: int  # C: max multiplicity of one record in one resample (w.p. 1 - δ/4)
    total_appearances: int  # A: its total multiplicity over all resamples (w.p. 1 - δ/4)
    composition: str  # "basic" or "advanced"


def naive_bootstrap_privacy(
    n: int,
    epsilon: float,
    n_resamples: int,
    delta: float,
    *,
    epsilon_center: float | None = None,
) -> NaivePrivacy:
    """The (ε', δ)-DP guarantee of Algorithm 1 (Chadha et al. 2024), computed rigorously.

    Algorithm 1 releases ``θ̃ = θ̂ + Laplace(Δ/ε)`` and ``θ̃_i = θ̂(resample_i) +
    Laplace(Δ n^{1/4}/ε)``, ``i = 1..T``, with ``Δ`` the change of the statistic when one
    appearance of one record changes (``R/n`` for the mean). A record that appears ``c_i`` times
    in resample ``i`` moves ``θ̂(resample_i)`` by at most ``c_i Δ``, so given the (data-free)
    resampling indices release ``i`` is ``c_i ε_0``-DP with ``ε_0 = ε n^{-1/4}``.

    The multiplicities of the replaced record are ``c_i ~ Binomial(n, 1/n)`` with
    ``sum_i c_i ~ Binomial(n T, 1/n)``. Let ``E``: ``max_i c_i <= C`` and ``sum_i c_i <= A``, with
    ``C, A`` the smallest integers making each failure probability at most ``δ/4`` (exact
    binomial tails, union over ``i`` for ``C``). On ``E`` the ``T`` releases compose to
    ``min(A ε_0, sqrt(2 ln(2/δ) C A) ε_0 + A ε_0 (e^{C ε_0} - 1))`` (basic composition;
    Dwork-Rothblum-Vadhan advanced composition with ``sum ε_i^2 <= C A ε_0^2``, at ``δ/2``).
    Adding the ε of ``θ̃`` (``epsilon_center``, default ``epsilon``) and the ``δ/2`` of
    ``E``'s failure gives (ε', δ)-DP, since ``E`` depends only on the data-free resampling.

    Examples
    --------
    >>> p = naive_bootstrap_privacy(2000, 1.0, 44, 1e-6)
    >>> p.epsilon > 1.0  # far more than the nominal ε
    True
    """
    eps = check_epsilon(epsilon)
    d = check_in_open_unit(delta, "delta")
    from scipy.stats import binom

    t = int(n_resamples)
    eps0 = eps * n ** (-0.25)

    def smallest(sf, target):
        k = 0
        while sf(k) > target:
            k = max(k + 1, int(k * 1.5))
        lo, hi = 0, k  # sf(hi) <= target
        while lo < hi:
            mid = (lo + hi) // 2
            if sf(mid) <= target:
                hi = mid
            else:
                lo = mid + 1
        return lo

    c_max = smallest(lambda c: t * binom.sf(c, n, 1.0 / n), d / 4)
    a_tot = smallest(lambda a: binom.sf(a, n * t, 1.0 / n), d / 4)
    basic = a_tot * eps0
    advanced = math.sqrt(2.0 * math.log(2.0 / d) * c_max * a_tot) * eps0 + a_tot * eps0 * (
        math.expm1(c_max * eps0)
    )
    boot, how = (basic, "basic") if basic <= advanced else (advanced, "advanced")
    center = eps if epsilon_center is None else check_epsilon(epsilon_center, "epsilon_center")
    return NaivePrivacy(center + boot, d, eps0, c_max, a_tot, how)


def _naive_release(data, bounds, stat, eps, tt, rng, eps_center=None):
    """Algorithm 1's released ``θ̃`` and ``θ̃_i`` (see :func:`naive_bootstrap_privacy`)."""
    n = data.size
    r = bounds[1] - bounds[0]
    delta1 = r / (n - 2 * stat.n_trim(n))  # per-appearance change (R/n for the mean)
    scale0 = laplace_scale(delta1, eps if eps_center is None else eps_center)
    scale_i = laplace_scale(delta1 * n**0.25, eps)
    exact = data.mean() if stat.name == "mean" else stat.of_sorted(np.sort(data))
    theta_tilde = laplace_release(float(exact), scale=scale0, random_state=rng)
    chunk = max(1, 5_000_000 // n)
    stars = []
    for start in range(0, tt, chunk):  # chunks of resamples (bounded memory)
        m = min(chunk, tt - start)
        idx = rng.integers(0, n, size=(m, n))
        if stat.name == "mean":
            stars.append(data[idx].mean(axis=1))
        else:
            stars.append(stat.of_sorted(np.sort(data[idx], axis=1)))
    theta_star = laplace_release(np.concatenate(stars), scale=scale_i, random_state=rng)
    return theta_tilde, theta_star, scale0, scale_i
