"""A private, distribution-free confidence interval for a population quantile (privacy-critical).

``private_confidence_interval(x, statistic="quantile", quantile=q, bounds=(a, b))`` releases
this interval (``method="order_statistics"``, the default for a quantile): the classical
order-statistic interval (Thompson 1936; David and Nagaraja, *Order Statistics*, §7.1) with
its two order statistics replaced by private rank-targeted quantiles, the ranks moved out by
a margin that covers the mechanism's rank error. Its coverage is **exact in finite samples,
for every law** (continuous, discrete, skewed), not asymptotic.

The release
-----------
``m`` public bins of ``[a, b]`` with upper edges ``t_j = a + (b - a) j/m`` (``t_m = b``),
computed once in floating point; the counts are ``C_j = #{x <= t_j}`` on that same array, so
``x <= t_J`` exactly when ``x``'s bin is at most ``J`` (no rounding between the binning and
the released ends: data on the edges, integer ages say, are counted where they are
released). Two releases of
:func:`dpuq.mechanisms.quantile.private_quantile_from_counts` (the exponential mechanism
with the rank utility ``u_j = -dist(ρ, [L_j, C_j])``, ``L_j = C_{j-1}``), each with ``ε/2``:

- the upper end ``U = t_J`` for a target rank ``ρ_U`` above ``nq``;
- the lower end ``L = t_{J-1}`` (``a`` for the first bin) for a target rank ``ρ_L``
  below ``nq``;

where the target ranks are the tightest that keep each end's miss probability at most
``α/2`` once the binomial sampling law and the mechanism's worst-case rank error are
combined (below, "Coverage"). A target rank above ``n`` (below 0) makes that end the bound
``b`` (``a``), with nothing drawn for it: the honest answer at this ``n`` and ε.

**Privacy** (replace-one, ``n`` public): replacing one value moves every ``C_j`` and ``L_j``
by at most 1, so each rank utility has sensitivity 1 and each release is ``ε/2``-DP
(:mod:`dpuq.mechanisms.quantile`, whose exact law is tested by neighbour enumeration); the
target ranks and ``m`` are public (functions of ``n``, ``q``, ``α``, ε, ``m``); two releases
compose to ε-DP, δ = 0. An end that is the bound (target rank out of ``[0, n]``, known before
the data are read) is not drawn and costs nothing: the call charges ``ε/2`` per drawn end.

**Coverage** ``>= 1 - α``, for any law of ``X`` and any ``n``. Let ``D = -u_J >= 0`` be the
released bin's rank distance. Some bin has ``u = 0`` (the ``[L_j, C_j]`` tile ``[0, n]``) and
at most ``m`` bins have ``u <= -t``, so for every data set ``P(D >= t) <= G(t) =
min(1, m exp(-ε_i t / 2))``, ``ε_i = ε/2``. Upper end: if the population quantile ``θ_q``
exceeded ``U = t_J``, every ``x <= t_J`` would be below ``θ_q``, so ``N_< = #{x < θ_q} >=
C_J >= ρ_U - D``. Given the data, that has probability at most ``G(ρ_U - N_<)``, and
``N_<`` is binomial with success probability ``P(X < θ_q) <= q``; ``G(ρ_U - k)`` grows with
``k``, so the miss probability is at most ``F_U(ρ_U) = E G(ρ_U - B)``, ``B ~ Binomial(n, q)``.
Lower end, symmetrically (``N_<= = #{x <= θ_q}``, success probability ``>= q``, and
``N_<= <= L_J <= ρ_L + D``): at most ``F_L(ρ_L) = E G(B - ρ_L)``. The release takes the
smallest ``ρ_U`` with ``F_U(ρ_U) <= α/2`` and the largest ``ρ_L`` with ``F_L(ρ_L) <= α/2``
(:func:`order_statistic_ranks`, by bisection on the exact binomial law; the binomial mass
outside the window it sums over is counted as a miss). The two ends miss with probability at
most ``α``. This convolution bound is never wider than splitting ``α/2`` into a binomial
tail ``γ`` and a mechanism failure ``β = G(Δ)`` (the union bound this module used first,
``E G(ρ - B) <= P(B >= ρ - Δ) + G(Δ)``), and is 17–21 % narrower in ranks at ``n`` = 1000
to 5000, ε = 0.5 to 1. (Until the review of this module the scores ``(x - a)/(b - a)`` were
binned and the edges mapped back: on integer data with ``m = 100`` that rounding put ``U`` an
ulp below a median of 29 and the interval missed every time.)

The cost of privacy is a margin of ranks on each side beyond the non-private binomial
ends: at ``n`` = 5000, ε = 1, ``m`` = 1001, the median's ends lie 90 ranks from ``n/2``
against the non-private 58, and the resolution of the bins ``(b - a)/m``.
"""

from __future__ import annotations

import functools
import math
from numbers import Integral

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from dpuq._validation import check_candidates, check_epsilon, check_in_open_unit
from dpuq.inference._tiles import ArrayData
from dpuq.inference.confidence_interval import ConfidenceInterval
from dpuq.mechanisms.quantile import private_quantile_from_counts
from dpuq.privacy.ledger import CALLER_CHARGED
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = ["order_statistic_ends", "order_statistic_ranks"]

#: Binomial mass left out of the sums of :func:`order_statistic_ranks` (counted as a miss).
_BINOMIAL_TAIL = 1e-13


def _miss_bound(rho: float, k: np.ndarray, pk: np.ndarray, outside: float, log_m: float,
                eps_end: float, side: int) -> float:  # fmt: skip
    """``E G(side (ρ - B))`` (module docstring, "Coverage"): one end's miss bound at rank ρ."""
    t = side * (rho - k)
    return float(np.sum(pk * np.exp(np.minimum(0.0, log_m - eps_end * t / 2.0)))) + outside


def order_statistic_ranks(n: int, q: float, alpha: float, epsilon: float, n_bins: int):
    """``(ρ_L, ρ_U, margin)``: the private ends' target ranks (public) and the privacy margin.

    ``ρ_U`` is the smallest rank whose miss bound ``E G(ρ_U - B)`` is at most ``α/2`` and
    ``ρ_L`` the largest with ``E G(B - ρ_L) <= α/2`` (module docstring, "Coverage");
    ``margin`` is how many ranks further out they lie, on average over the two sides, than
    the non-private order-statistic interval's ends: what privacy costs in ranks.

    Examples
    --------
    >>> lo, hi, margin = order_statistic_ranks(5000, 0.5, 0.1, 1.0, 1001)
    >>> round(lo, 1), round(hi, 1), round(margin, 1)
    (2409.8, 2590.2, 32.0)
    """
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    q = check_in_open_unit(q, "q")
    alpha = check_in_open_unit(alpha, "alpha")
    epsilon = check_epsilon(epsilon)
    n_bins = check_candidates(n_bins, "n_bins")
    return _target_ranks(int(n), q, alpha, epsilon, n_bins)


@functools.lru_cache(maxsize=256)
def _target_ranks(n: int, q: float, alpha: float, epsilon: float, n_bins: int):
    """:func:`order_statistic_ranks` on validated public values (cached: a release asks for
    them twice, once to know which ends it draws and charges, once to draw them)."""
    k_lo = max(0, int(binom.ppf(_BINOMIAL_TAIL, n, q)) - 1)
    k_hi = min(n, int(binom.isf(_BINOMIAL_TAIL, n, q)) + 1)
    k = np.arange(k_lo, k_hi + 1, dtype=float)
    pk = binom.pmf(k, n, q)
    outside = float(binom.cdf(k_lo - 1, n, q) + binom.sf(k_hi, n, q))
    eps_end, log_m, target = epsilon / 2.0, math.log(n_bins), alpha / 2.0
    reach = (2.0 / eps_end) * math.log(4.0 * n_bins / alpha)  # G(reach) = α/4
    ends = []
    for side, inner, outer in ((1, k_lo - 1.0, k_hi + reach), (-1, k_hi + 1.0, k_lo - reach)):
        excess = lambda r, s=side: _miss_bound(r, k, pk, outside, log_m, eps_end, s) - target  # noqa: E731
        rho = brentq(excess, inner, outer, xtol=1e-9, rtol=4.0 * np.finfo(float).eps)
        hair = max(1e-6, 1e-12 * abs(rho))  # outward until the bound is met (it falls there)
        while excess(rho) > 0.0:
            rho += side * hair
            hair *= 2.0
        ends.append(rho)
    rho_u, rho_l = ends
    plain_u = float(binom.isf(target, n, q)) + 1.0  # non-private ends, for the margin only
    plain_l = float(binom.ppf(target, n, q)) - 1.0
    margin = ((math.ceil(rho_u) - plain_u) + (plain_l - math.floor(rho_l))) / 2.0
    return rho_l, rho_u, max(margin, 0.0)


def _released_bin(counts: np.ndarray, level: float, epsilon: float, rng) -> int:
    """0-based bin ``J`` of one rank-targeted exponential-mechanism release (ε-DP)."""
    e = private_quantile_from_counts(counts, level, epsilon, rng, ledger=CALLER_CHARGED)
    return round(e * counts.size) - 1


def order_statistic_ends(n: int, q: float, alpha: float, epsilon: float, n_bins: int) -> int:
    """How many ends (0, 1, 2) are drawn; each costs ``ε/2`` (a function of public values)."""
    rho_l, rho_u, _ = order_statistic_ranks(n, q, alpha, epsilon, n_bins)
    return int(rho_u <= n) + int(rho_l >= 0)


def _private_quantile_interval(
    data,
    bounds: tuple[float, float],
    q: float,
    *,
    alpha: float,
    epsilon: float,
    n_bins: int,
    rng: np.random.Generator,
    name: str | None = None,
) -> ConfidenceInterval:
    """The interval of the module docstring for validated data in ``bounds``.

    ``data`` is a validated 1-d array, or an object with ``size`` and ``median_counts(edges)``
    (:class:`~dpuq.inference._tiles.ArrayData`, or the Dask path's data, which sums integer
    counts over blocks: the same counts, so the same release). The caller has charged the
    ledger. Returns a :class:`~dpuq.inference.confidence_interval.ConfidenceInterval` whose
    details hold the public target ranks and the privacy margin in ranks.
    """
    if isinstance(data, np.ndarray):
        data = ArrayData(data)
    n = int(data.size)
    rho_l, rho_u, margin = order_statistic_ranks(n, q, alpha, epsilon, n_bins)  # validates
    a, eps, lo, hi = float(alpha), float(epsilon), float(bounds[0]), float(bounds[1])
    # one array for the binning and the released ends: C_j = #{x <= t_j} on these edges
    edges = lo + (hi - lo) * (np.arange(1, n_bins + 1) / n_bins)
    edges[-1] = hi
    at_most = np.asarray(data.median_counts(edges)[1], dtype=np.int64)
    counts = np.diff(at_most, prepend=0)
    upper, lower = hi, lo
    if rho_u <= n:  # else the upper end is b: no order statistic is high enough
        j = _released_bin(counts, rho_u / n, eps / 2.0, rng)
        upper = float(edges[j])
    if rho_l >= 0:
        j = _released_bin(counts, rho_l / n, eps / 2.0, rng)
        lower = float(edges[j - 1]) if j > 0 else lo
    # the two ends are drawn independently and may cross (probability < 1e-7 at usual
    # settings): the sorted pair is post-processing, and it misses only where an end does
    lower, upper = min(lower, upper), max(lower, upper)
    drawn = order_statistic_ends(n, q, alpha, epsilon, n_bins)
    informative, spent = drawn > 0, eps * drawn / 2.0
    report = PrivacyReport(
        mechanism="private order-statistic interval for a quantile (two exponential-mechanism "
        "quantiles with the rank utility, target ranks moved out to cover the rank error)",
        epsilon=spent,
        relation=Relation.REPLACE_ONE,
        sensitivity="rank utilities: 1 (one value replaced moves every bin count by at most 1)",
        details={
            "n": n,
            "n_bins": n_bins,
            "privacy_rank_margin": margin,
            "target_ranks": [rho_l, rho_u],
            "epsilon_per_end": eps / 2.0,
        },
        notes=(
            "coverage >= 1 - alpha in finite samples for any distribution (order statistics; "
            "dpuq.inference.quantile_interval)",
        )
        + (
            ()
            if drawn == 2
            else (
                "an end is the public bound: at this n and epsilon no order statistic is far "
                f"enough out; that end was not drawn and cost nothing (epsilon {spent:g} of "
                f"{eps:g})",
            )
        ),
    )
    details = {"privacy_rank_margin": margin, "target_ranks": (rho_l, rho_u)}
    if not informative:
        details["reason"] = "no order statistic is far enough out at this n and epsilon"
    mid = (lower + upper) / 2.0
    stat = f"quantile {q:g}" if name is None else name
    return ConfidenceInterval(
        lower, upper, mid, a, stat, "order_statistics", informative, report, details
    )
