"""Private bootstrap confidence intervals, and the baselines they are compared with (SPEC D).

:func:`private_confidence_interval` releases an interval for the mean, median or trimmed mean
of data in a public interval ``[a, b]``, centred on a private estimate ``θ̃`` (ε) and shaped by
a private bootstrap (ε): 2ε-DP in total by default (SPEC D), or the sum of
``epsilon_estimate`` and ``epsilon_cdf`` when the caller splits the budget. Three methods:

``"ensemble"`` (default)
    SPEC D's studentized ensemble, aggregated at the quantiles the interval needs. Each of
    ``s`` disjoint subsets runs a bag-of-little-bootstraps of the root
    ``√n (θ̃* - θ̂_k)/σ̃*``, where ``θ̃*`` and ``σ̃*`` are the *private* estimate and standard
    deviation simulated on the resample (the mechanisms' noise is folded into the root's law,
    Proposition 2). Its ``1 - α`` quantile of ``|root|`` (symmetric bootstrap-t) gives a
    half-width ``h_k``; the ``log h_k`` are aggregated with a clamped mean (Smith 2011, SPEC
    D's aggregation) whose sensitivity is ``(window)/s``, and the interval is
    ``θ̃ ± σ̃ h/√n``, intersected with ``[a, b]``, with ``σ̃`` the private standard deviation.
    With ``symmetric=False`` (not for the median) the two tails are aggregated separately (a
    half-width and an asymmetry), which costs part of the budget: in the tests this was wider
    or covered less at ε·s up to a few hundred. The median bootstraps each subset at its own
    size ``b`` (root scaled by ``√b``): resamples of size ``n`` from ``b`` points make the
    median's bootstrap law a lattice as coarse as its spread.
``"ensemble_cdf"``
    SPEC D's interval taken literally: the all-thresholds CDF (tree mechanism, monotone
    projection, uniform error bound ``u`` holding with probability ``1 - β``), the Laplace
    noise of ``θ̃`` folded in exactly, and the smallest grid interval whose mass is at least
    ``1 - α`` after the slack ``u``. When ``u`` is too large for any such interval the release
    is the whole of ``[a, b]`` (``informative=False``), never a clipped level.
``"naive"``
    Algorithm 1's resamples (a baseline). Only (ε', δ)-DP: the report says how much.

Neighbouring relation: replace-one with ``n`` public. Coverage is that of the bootstrap it
rests on (asymptotic, higher-order accurate for the studentized mean), not exact.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtri

from dpuq._validation import check_candidates, check_epsilon, check_grid_size, check_in_open_unit
from dpuq.inference._data import (
    Statistic,
    UninformativeIntervalWarning,
    check_bounds,
    check_data,
    parse_statistic,
    resolve_n_subsets,
)
from dpuq.inference._resampling import draw_resamples, simulate_em_median
from dpuq.inference.aggregation import (
    private_clamped_mean,
    tree_cdf,
    tree_error_bound,
)
from dpuq.inference.bootstrap import default_grid
from dpuq.inference.ensemble import _resolve_resamples, check_subset_work, subset_roots
from dpuq.inference.estimates import (
    DEFAULT_MEDIAN_CANDIDATES,
    median_candidates,
    release_point_estimate,
    release_variance,
)
from dpuq.inference.naive import _naive_release, naive_bootstrap_privacy
from dpuq.ledger import charge
from dpuq.mechanisms.laplace import laplace_cdf, laplace_noise, laplace_release, laplace_scale
from dpuq.mechanisms.randomness import RandomState, check_random_state, mark_seeded
from dpuq.report import PrivacyReport, Relation
from dpuq.scale.sources import is_dask_collection

__all__ = [
    "ConfidenceInterval",
    "normal_approximation_interval",
    "normal_laplace_cdf",
    "percentile_bootstrap_interval",
    "private_confidence_interval",
]

#: Resamples per subset for ``private_confidence_interval`` when ``n_resamples="auto"``.
DEFAULT_INTERVAL_RESAMPLES = 500

#: How the ensemble method splits ``epsilon_cdf``: variance, half-width, asymmetry.
ENSEMBLE_SHARES = (0.2, 0.5, 0.3)
#: The same for symmetric intervals (the default; no asymmetry released).
SYMMETRIC_SHARES = (0.5, 0.5, 0.0)

#: Clamping half-widths of the ensemble aggregation: ``log h`` (mean, other statistics), ``r``.
LOG_H_HALF_WIDTH = {"mean": math.log(1.5), "other": math.log(2.5)}
R_HALF_WIDTH = 0.5

#: Upper-bound margin of the studentizing variance, in units of its Laplace scale (ln 20).
VAR_MARGIN = math.log(20.0)

#: The median's interval bootstraps each subset at its own size ``b`` (see _ensemble_interval).
MEDIAN_SUBSET_BOOTSTRAP = True


@dataclass(frozen=True)
class ConfidenceInterval:
    """A released confidence interval (released values only, never data).

    Attributes
    ----------
    lower, upper : float
    estimate : float
        The point estimate the interval is built around (private for private methods).
    alpha : float
        Target miscoverage: the interval aims at coverage ``1 - alpha``.
    statistic : str
    method : str
    informative : bool
        False when the release is the whole public interval because nothing better could be
        released at this ε and n (see ``details["reason"]``).
    privacy_report : PrivacyReport or None
        None for the non-private baseline.
    details : Mapping
        Released auxiliary values (noise scales, subsets, quantiles, ...).
    """

    lower: float
    upper: float
    estimate: float
    alpha: float
    statistic: str
    method: str
    informative: bool
    privacy_report: PrivacyReport | None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def __reduce__(self):  # mappingproxy is not picklable
        return (
            type(self),
            (
                self.lower,
                self.upper,
                self.estimate,
                self.alpha,
                self.statistic,
                self.method,
                self.informative,
                self.privacy_report,
                dict(self.details),
            ),
        )

    @property
    def interval(self) -> tuple[float, float]:
        return (self.lower, self.upper)

    @property
    def width(self) -> float:
        return self.upper - self.lower

    def __contains__(self, value: float) -> bool:
        return self.lower <= value <= self.upper

    def __str__(self) -> str:
        head = (
            f"{100 * (1 - self.alpha):g}% interval for the {self.statistic}: "
            f"[{self.lower:.6g}, {self.upper:.6g}] (estimate {self.estimate:.6g}, "
            f"method {self.method})"
        )
        if not self.informative:
            head += f"\nnot informative: {self.details.get('reason', '')}"
        return head if self.privacy_report is None else f"{head}\n{self.privacy_report}"


# --- the normal + Laplace law (noise-aware normal approximation) -------------------------------


def _log_mills(x: np.ndarray) -> np.ndarray:
    """``log(Φ(-x)/φ(x))``, stable for every real ``x`` (erfcx for x > 0)."""
    x = np.asarray(x, dtype=float)
    pos = np.maximum(x, 0.0)
    neg = np.minimum(x, 0.0)
    out_pos = np.log(erfcx(pos / math.sqrt(2.0))) + 0.5 * math.log(math.pi / 2.0)
    out_neg = log_ndtr(-neg) + 0.5 * neg * neg + 0.5 * math.log(2.0 * math.pi)
    return np.where(x > 0, out_pos, out_neg)


def normal_laplace_cdf(t, sigma: float, scale: float) -> np.ndarray:
    """CDF of ``sigma Z + L``, ``Z ~ N(0, 1)``, ``L ~ Laplace(0, scale)`` independent.

    ``Φ(t/σ) - ½ φ(t/σ) [M(σ/λ - t/σ) - M(σ/λ + t/σ)]`` with ``M(x) = Φ(-x)/φ(x)`` the Mills
    ratio (the textbook form ``½ e^{σ²/(2λ²) ∓ t/λ} Φ(±t/σ - σ/λ)`` cancels catastrophically
    for small ``λ``); evaluated in log space.

    Examples
    --------
    >>> float(normal_laplace_cdf(0.0, 1.0, 0.5))
    0.5
    """
    t = np.asarray(t, dtype=float)
    if scale <= 0:
        return np.exp(log_ndtr(t / sigma))
    if sigma <= 0:
        return laplace_cdf(t, scale=scale)
    z = t / sigma
    log_phi = -0.5 * z * z - 0.5 * math.log(2.0 * math.pi)
    left = np.exp(log_phi + _log_mills(sigma / scale - z))
    right = np.exp(log_phi + _log_mills(sigma / scale + z))
    return np.clip(np.exp(log_ndtr(z)) - 0.5 * left + 0.5 * right, 0.0, 1.0)


def normal_laplace_quantile(p: float, sigma: float, scale: float) -> float:
    """Quantile of ``sigma Z + Laplace(scale)`` (bisection on :func:`normal_laplace_cdf`)."""
    from scipy.optimize import brentq

    span = 10.0 * (sigma + scale) + 1e-300
    lo, hi = -span, span
    while normal_laplace_cdf(lo, sigma, scale) > p:
        lo *= 2.0
    while normal_laplace_cdf(hi, sigma, scale) < p:
        hi *= 2.0
    return float(
        brentq(lambda v: float(normal_laplace_cdf(v, sigma, scale)) - p, lo, hi, xtol=1e-12 * span)
    )


# --- helpers ------------------------------------------------------------------------------------


def _split_budget(epsilon, epsilon_estimate, epsilon_cdf) -> tuple[float, float]:
    eps = check_epsilon(epsilon)
    e1 = eps if epsilon_estimate is None else check_epsilon(epsilon_estimate, "epsilon_estimate")
    e2 = eps if epsilon_cdf is None else check_epsilon(epsilon_cdf, "epsilon_cdf")
    return e1, e2


def _clip_interval(lo: float, hi: float, bounds) -> tuple[float, float]:
    """Intersect with the public ``[a, b]``: it contains θ, so coverage cannot drop."""
    a, b = bounds
    lo, hi = max(lo, a), min(hi, b)
    if lo > hi:  # the whole interval fell outside [a, b]: keep the nearest end point
        lo = hi = a if hi < a else b if lo > b else lo
    return float(lo), float(hi)


def _safe_variance(v_noisy, noise_scale: float, r_range: float):
    """The variance used to studentize: ``min(R²/4, max(ṽ, 0) + ln(20) λ_v)``.

    ``ṽ`` is the Laplace-noised variance (scale ``λ_v``). Adding ``ln(20) λ_v`` makes it an
    upper bound of the plug-in variance with probability 0.975, so a noisy value near or below
    0 cannot shrink the interval to nothing; ``R²/4`` bounds every variance on ``[a, b]``
    (Popoviciu). The same map is applied inside the bootstrap, so the studentized root's law
    accounts for it; when ``λ_v`` is small against the variance it changes little.
    """
    return np.minimum(r_range * r_range / 4.0, np.maximum(v_noisy, 0.0) + VAR_MARGIN * noise_scale)


def _reference_half_width(stat: Statistic, alpha: float, n: int, sigma: float, est_scale):
    """Where the subsets' studentized half-widths are expected (centre of their clamping window).

    Mean and trimmed mean: the ``1 - α/2`` quantile of ``Z + √n Laplace(λ)/σ̃`` (the noise of
    ``θ̃`` in studentized units); median: ``sqrt(π/2) z`` (normal theory). Computed from
    released values only.
    """
    if stat.name == "median" or est_scale is None:
        return math.sqrt(math.pi / 2.0) * float(ndtri(1.0 - alpha / 2.0))
    return normal_laplace_quantile(1.0 - alpha / 2.0, 1.0, math.sqrt(n) * est_scale / sigma)


# --- the three private methods ------------------------------------------------------------------


def _ensemble_interval(
    data, bnds, stat, alpha, e_est, e_cdf, n_subsets, tt, rng, n_cand, symmetric
):
    n = data.size
    r_range = bnds[1] - bnds[0]
    chunked = not isinstance(data, np.ndarray)  # a Dask array: statistics from dpuq.scale
    mean, variance = data.mean_variance() if chunked else (None, None)
    est = release_point_estimate(
        None if chunked else data, stat, bnds, e_est, rng, n_cand, n=n, exact=mean
    )
    symmetric = symmetric or stat.name == "median"  # the median's interval is symmetric
    shares = SYMMETRIC_SHARES if symmetric else ENSEMBLE_SHARES
    e_var, e_h, e_r = (share * e_cdf for share in shares)
    var = release_variance(None if chunked else data, bnds, e_var, rng, n=n, exact=variance)
    v_floor = (r_range / n) ** 2
    sigma = math.sqrt(
        max(_safe_variance(var.value * n / (n - 1), var.noise_scale, r_range), v_floor)
    )

    s = resolve_n_subsets(n_subsets, n, e_cdf)
    check_subset_work(s, tt)
    b = n // s
    if stat.name == "trimmed_mean" and b - 2 * stat.n_trim(b) < 1:
        raise ValueError(f"trim={stat.trim} leaves no data in subsets of {b} points")
    # Mean and trimmed mean: bag of little bootstraps (resamples of size n). Median: the
    # ordinary bootstrap of each subset (resamples of size b, root scaled by √b), because an
    # n-resample of b points makes the median's bootstrap law a lattice as coarse as its spread.
    m = b if stat.name == "median" and MEDIAN_SUBSET_BOOTSTRAP else n
    if chunked:  # the same partition, weights and moments, computed on the workers
        theta_k, m_star, v_star, n_groups = data.subset_moments(s, tt, rng)
        theta_k = theta_k[:, None]
    else:
        res = draw_resamples(data, s, tt, rng, resample_size=m)
        theta_k = stat.of_sorted(res.subsets())[:, None]
        m_star, v_star = res.mean_and_variance()
        n_groups = res.weights.shape[0]
    if stat.name == "median":
        # the mechanism's rank noise is O(1/ε); at size b it must be O(1/ε) * sqrt(b/n) ranks
        # to have the same size relative to the root's spread: run it with ε sqrt(n/b)
        cand = median_candidates(bnds, n_cand)
        theta_star = simulate_em_median(res, cand, e_est * math.sqrt(n / m), rng)
    else:
        raw = m_star if stat.name == "mean" else res.statistic(stat)
        theta_star = raw + laplace_noise(est.noise_scale, size=(s, tt), random_state=rng)
    v_star = (v_star + laplace_noise(var.noise_scale, v_star.shape, random_state=rng)) * m / (m - 1)
    v_star = np.maximum(_safe_variance(v_star, var.noise_scale, r_range), v_floor)
    roots = math.sqrt(m) * (theta_star - theta_k) / np.sqrt(v_star)
    z = float(ndtri(1.0 - alpha / 2.0))
    h_min = 1e-6 * z
    if symmetric:  # the symmetric bootstrap-t: the 1 - α quantile of |root|
        h_k = np.quantile(np.abs(roots), 1.0 - alpha, axis=1, method="normal_unbiased")
        h_k, r_k = np.maximum(h_k, h_min), None
    else:
        lo_k, hi_k = np.quantile(
            roots, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1, method="normal_unbiased"
        )
        h_k = np.maximum((hi_k - lo_k) / 2.0, h_min)
        r_k = (hi_k + lo_k) / (2.0 * h_k)

    h_ref = _reference_half_width(stat, alpha, n, sigma, est.noise_scale)
    w_h = LOG_H_HALF_WIDTH["mean" if stat.name == "mean" else "other"]
    agg_h = private_clamped_mean(
        np.log(h_k), epsilon=e_h, half_width=w_h, center=math.log(h_ref), rng=rng
    )
    h = math.exp(agg_h.value)
    if symmetric:
        r_value, r_scale = 0.0, None
    else:
        agg_r = private_clamped_mean(r_k, epsilon=e_r, half_width=R_HALF_WIDTH, center=0.0, rng=rng)
        r_value, r_scale = agg_r.value, agg_r.noise_scale
    hi, lo = h * (r_value + 1.0), h * (r_value - 1.0)
    lower, upper = _clip_interval(
        est.value - sigma * hi / math.sqrt(n), est.value - sigma * lo / math.sqrt(n), bnds
    )
    report = PrivacyReport(
        mechanism="private bootstrap confidence interval (SPEC D; ensemble, studentized, "
        "clamped-mean aggregation of the subsets' quantiles)",
        epsilon=e_est + e_cdf,
        relation=Relation.REPLACE_ONE,
        sensitivity=f"estimate: {est.privacy_report.sensitivity}; variance: R^2/n; "
        f"aggregates: 2 w/s (w = {w_h:.4g} for log h"
        + ("" if symmetric else f", {R_HALF_WIDTH:g} for r")
        + f"; s = {s})",
        details={
            "n": n,
            "epsilon_estimate": e_est,
            "epsilon_variance": e_var,
            "epsilon_half_width": e_h,
            "epsilon_asymmetry": e_r,
            "n_subsets": s,
            "subset_size": b,
            "n_resamples": tt,
            "weight_groups": n_groups,
            "estimate_noise": "exponential mechanism"
            if est.noise_scale is None
            else f"Laplace({est.noise_scale:.6g})",
            "variance_noise_scale": var.noise_scale,
        },
        notes=(
            "sequential composition: estimate + variance + "
            + ("one clamped mean (symmetric interval)" if symmetric else "two clamped means"),
        ),
    )
    details = {
        "sigma": sigma,
        "half_width_studentized": h,
        "asymmetry": r_value,
        "reference_half_width": h_ref,
        "quantiles_studentized": (lo, hi),
        "noise_scale_log_half_width": agg_h.noise_scale,
        "noise_scale_asymmetry": r_scale,
    }
    return lower, upper, est.value, True, report, details


def _fold_bounds(grid, cdf, u, fold_scale, t_eval):
    """Lower and upper bounds on ``P(√n (θ - θ̃) <= t)`` at ``t_eval``.

    ``cdf`` estimates the CDF ``J`` of ``√n (θ - θ̂)`` on ``grid`` to within ``u``; between grid
    points ``J`` is bracketed by the neighbouring values (it is monotone). With
    ``θ̃ = θ̂ + ξ``, ``P(√n (θ - θ̃) <= t) = E J(t + √n ξ)``: the expectation of a step function,
    computed exactly against the Laplace law of ``√n ξ`` (``fold_scale``; 0 for none).
    """
    low_steps = np.maximum(cdf - u, 0.0)  # J(s) >= low_steps[j] for s >= grid[j]
    jumps_low = np.diff(np.concatenate([[0.0], low_steps]))
    up_vals = np.minimum(np.concatenate([cdf + u, [1.0]]), 1.0)  # J(s) <= up_vals[j], s<=grid[j]
    jumps_up = np.diff(up_vals)  # jump at grid[j] (from s <= grid[j] to s > grid[j])

    def prob_ge(x, strict):  # P(t + √n ξ >= x) for each t in t_eval (rows) and x (cols)
        d = x[None, :] - t_eval[:, None]
        if fold_scale <= 0:
            return (d < 0) if strict else (d <= 0)
        return 1.0 - laplace_cdf(d, scale=fold_scale)

    lower = prob_ge(grid, False) @ jumps_low
    upper = up_vals[0] + prob_ge(grid, True) @ jumps_up
    return lower, np.minimum(upper, 1.0)


@functools.lru_cache(maxsize=256)
def _tree_bound(n_grid: int, s: int, e_cdf: float, beta: float) -> tuple[float, int]:
    """Uniform bound of the tree CDF and its depth: data-independent (n_grid, s, ε, β)."""
    depth = max(1, math.ceil(math.log2(n_grid + 1)))
    return tree_error_bound(n_grid, 2.0 * depth / (s * e_cdf), beta), depth


@functools.lru_cache(maxsize=256)
def _smallest_informative_subsets(alpha, e_cdf, n_grid, beta) -> int:
    """Smallest ``s`` whose uniform bound is below ``α/2`` (bisection; the bound falls in s)."""
    lo, hi = 1, 2
    while _tree_bound(n_grid, hi, e_cdf, beta)[0] >= alpha / 2.0:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if _tree_bound(n_grid, mid, e_cdf, beta)[0] >= alpha / 2.0:
            lo = mid + 1
        else:
            hi = mid
    return hi


def _ensemble_cdf_interval(
    data, bnds, stat, alpha, e_est, e_cdf, n_subsets, tt, rng, n_cand, beta, n_grid
):
    n = data.size
    est = release_point_estimate(data, stat, bnds, e_est, rng, n_cand)
    s = resolve_n_subsets(n_subsets, n, e_cdf)
    b = n // s
    if stat.name == "trimmed_mean" and b - 2 * stat.n_trim(b) < 1:
        raise ValueError(f"trim={stat.trim} leaves no data in subsets of {b} points")
    u, depth = _tree_bound(n_grid, s, e_cdf, beta)
    base = {"n": n, "epsilon_estimate": e_est, "n_subsets": s, "subset_size": b}
    details = {"uniform_error_bound": u, "beta": beta, "grid_points": n_grid}
    if u >= alpha / 2.0:
        # No grid interval can have certified mass >= 1 - α: the answer is [a, b] whatever the
        # data, so the bootstrap is not run and costs no privacy.
        s_min = _smallest_informative_subsets(alpha, e_cdf, n_grid, beta)
        reason = (
            f"the uniform error bound {u:.3g} of the private CDF is >= alpha/2 = {alpha / 2:g}, "
            f"so no interval has certified mass >= 1 - alpha; it needs s >= {s_min} subsets, "
            f"i.e. n >= {math.ceil(s_min * s_min * e_cdf)} at epsilon_cdf = {e_cdf:g} with "
            f"n_subsets='auto' (here n = {n}, s = {s})"
        )
        warnings.warn(
            f"uninformative interval: {reason}", UninformativeIntervalWarning, stacklevel=3
        )
        report = PrivacyReport(
            mechanism="private bootstrap confidence interval (SPEC D literal): only the "
            "estimate was released; the interval [a, b] is data-independent",
            epsilon=e_est,
            relation=Relation.REPLACE_ONE,
            sensitivity=f"estimate: {est.privacy_report.sensitivity}",
            details={**base, "epsilon_cdf_spent": 0.0},
            notes=(reason,),
        )
        return bnds[0], bnds[1], est.value, False, report, {**details, "reason": reason}
    res = draw_resamples(data, s, tt, rng)
    if stat.name == "median":  # fold the exponential mechanism in by simulation
        theta_k = stat.of_sorted(res.subsets())[:, None]
        sim = simulate_em_median(res, median_candidates(bnds, n_cand), e_est, rng)
        roots, fold = math.sqrt(n) * (theta_k - sim), 0.0
    else:  # fold the Laplace noise exactly after the release
        roots, fold = subset_roots(res, stat, "basic"), math.sqrt(n) * est.noise_scale
    grid = default_grid(bnds, "basic", n_grid)
    cell = np.searchsorted(grid, roots, side="left")
    masses = (
        np.bincount(
            (np.arange(s)[:, None] * (grid.size + 1) + cell).ravel(),
            minlength=s * (grid.size + 1),
        ).reshape(s, grid.size + 1)
        / tt
    )
    tree = tree_cdf(masses, e_cdf, rng)
    t_eval = np.linspace(grid[0], grid[-1], 8 * grid.size)
    j_low, j_up = _fold_bounds(grid, tree.cdf, u, fold, t_eval)
    ok_hi = np.flatnonzero(j_low >= 1.0 - alpha / 2.0)
    ok_lo = np.flatnonzero(j_up <= alpha / 2.0)
    informative = ok_hi.size > 0 and ok_lo.size > 0
    details["tree_noise_scale"] = tree.noise_scale
    if informative:
        t_hi, t_lo = t_eval[ok_hi[0]], t_eval[ok_lo[-1]]
        lower, upper = _clip_interval(
            est.value + t_lo / math.sqrt(n), est.value + t_hi / math.sqrt(n), bnds
        )
        details["t_lo"], details["t_hi"] = float(t_lo), float(t_hi)
    else:
        lower, upper = bnds
        details["reason"] = (
            f"the private CDF minus its uniform error bound {u:.3g} reaches no 1 - alpha/2 "
            f"inside the grid [{grid[0]:g}, {grid[-1]:g}]"
        )
        warnings.warn(
            f"uninformative interval: {details['reason']}",
            UninformativeIntervalWarning,
            stacklevel=3,
        )
    report = PrivacyReport(
        mechanism="private bootstrap confidence interval (SPEC D literal: all-thresholds tree "
        "CDF, uniform slack)",
        epsilon=e_est + e_cdf,
        relation=Relation.REPLACE_ONE,
        sensitivity=f"estimate: {est.privacy_report.sensitivity}; CDF tree: 2D/s = "
        f"{2 * depth / s:.4g}",
        details={**base, "epsilon_cdf": e_cdf, "n_resamples": tt, "depth": depth},
        notes=(
            f"coverage >= 1 - alpha holds when the bootstrap is exact and the uniform bound "
            f"holds (probability >= 1 - beta = {1 - beta:g})",
        ),
    )
    return lower, upper, est.value, informative, report, details


def _naive_interval(data, bnds, stat, alpha, e_est, e_cdf, tt, rng, delta):
    n = data.size
    theta_tilde, theta_star, scale0, scale_i = _naive_release(
        data, bnds, stat, e_cdf, tt, rng, eps_center=e_est
    )
    roots = math.sqrt(n) * (theta_tilde - theta_star)  # estimates J: √n (θ - θ̂)
    q_lo, q_hi = np.quantile(roots, [alpha / 2.0, 1.0 - alpha / 2.0])
    lower, upper = _clip_interval(
        theta_tilde + q_lo / math.sqrt(n), theta_tilde + q_hi / math.sqrt(n), bnds
    )
    priv = naive_bootstrap_privacy(n, e_cdf, tt, delta, epsilon_center=e_est)
    report = PrivacyReport(
        mechanism="naive private bootstrap interval (SPEC D, Algorithm 1)",
        epsilon=priv.epsilon,
        delta=priv.delta,
        relation=Relation.REPLACE_ONE,
        sensitivity=f"per appearance of a record {scale0 * e_est:.6g}",
        details={
            "n": n,
            "n_resamples": tt,
            "nominal_epsilon_estimate": e_est,
            "nominal_epsilon_resamples": e_cdf,
            "max_appearances_C": priv.max_appearances,
            "total_appearances_A": priv.total_appearances,
            "composition": priv.composition,
        },
        notes=("Algorithm 1 is not ε-DP; this is the rigorous (ε', δ) it has",),
    )
    return lower, upper, theta_tilde, True, report, {"resample_noise_scale": scale_i}


def private_confidence_interval(
    x,
    *,
    alpha: float,
    epsilon: float,
    bounds,
    statistic: str = "mean",
    trim: float = 0.1,
    method: str = "ensemble",
    n_subsets="auto",
    n_resamples="auto",
    epsilon_estimate: float | None = None,
    epsilon_cdf: float | None = None,
    beta: float = 0.05,
    n_grid: int = 127,
    delta: float = 1e-6,
    n_candidates: int = DEFAULT_MEDIAN_CANDIDATES,
    symmetric: bool = True,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> ConfidenceInterval:
    """A differentially private ``1 - alpha`` confidence interval for a statistic (SPEC D).

    The interval is centred on a private estimate ``θ̃`` released with ``epsilon_estimate``
    (default ``epsilon``) and shaped by a private bootstrap released with ``epsilon_cdf``
    (default ``epsilon``): **2ε-DP in total** with the defaults (SPEC D), in general
    ``epsilon_estimate + epsilon_cdf`` (δ = 0), under replace-one neighbours with ``n`` public.
    See the module docstring for the three methods.

    Parameters
    ----------
    x : array-like of shape (n,), or a 1-d Dask array / Series
        Data inside ``bounds``. Dask input (statistic ``"mean"``, method ``"ensemble"``) is
        validated and summarised on the workers; the client receives the mean, the variance
        and the per-subset bootstrap moments, and the release equals the in-memory one for
        the same ``random_state``.
    alpha : float
        Miscoverage, in (0, 1).
    epsilon : float
        ε of each of the two releases (estimate and bootstrap), > 0.
    bounds : (float, float)
        Public interval containing every value, from public knowledge, never from the data.
    statistic : {"mean", "median", "trimmed_mean"}
    trim : float, default 0.1
        Proportion cut at each end for ``"trimmed_mean"``.
    method : {"ensemble", "ensemble_cdf", "naive"}
    n_subsets : "auto" or int
        Subsets of the ensemble; auto ``floor(sqrt(n / epsilon_cdf))`` (SPEC D).
    n_resamples : "auto" or int
        Resamples per subset (auto 500); naive: auto ``floor(sqrt(n epsilon_cdf))``.
    epsilon_estimate, epsilon_cdf : float, optional
        Split the budget differently (each defaults to ``epsilon``).
    beta : float, default 0.05
        ``"ensemble_cdf"`` only: failure probability of the uniform error bound.
    n_grid : int, default 127
        ``"ensemble_cdf"`` only: points of the public grid on ``[-2R, 2R]``.
    delta : float, default 1e-6
        ``"naive"`` only: the δ at which its ε' is reported.
    n_candidates : int, default 1001
        Candidates of the private median (statistic "median").
    symmetric : bool, default True
        ``"ensemble"`` only: a symmetric interval (one released half-width). False releases an
        asymmetry too (the bootstrap-t's skewness correction), splitting the budget three ways;
        ignored for the median, whose interval is always symmetric.
    clip : bool, default False
        Clip data outside ``bounds`` (a warning says so, without a count).
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge the interval's total cost to ``dataset``'s budget before any noise is drawn
        (``"ensemble_cdf"``: only ``epsilon_estimate`` when the data-free error bound shows that
        the bootstrap cannot be informative), or refuse it (:class:`dpuq.BudgetExceededError`).

    Returns
    -------
    ConfidenceInterval

    Raises
    ------
    ValueError
        Data outside ``bounds`` (without ``clip``), non-finite data, ``alpha`` outside (0, 1),
        ε <= 0, too few data for the subsets (the message gives the smallest n).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).uniform(0, 10, 5000)
    >>> ci = private_confidence_interval(x, alpha=0.05, epsilon=1.0, bounds=(0, 10),
    ...                                  random_state=1)
    >>> ci.lower < 5.0 < ci.upper, ci.privacy_report.epsilon
    (True, 2.0)
    """
    a = check_in_open_unit(alpha, "alpha")
    e_est, e_cdf = _split_budget(epsilon, epsilon_estimate, epsilon_cdf)
    stat = parse_statistic(statistic, trim)
    if is_dask_collection(x):  # validated and summarised chunk-wise (dpuq.scale.intervals)
        from dpuq.scale.intervals import dask_interval_data

        data = dask_interval_data(x, bounds, clip=clip, statistic=stat.name, method=method)
    else:
        data, _ = check_data(x, bounds, clip=clip)
    bnds = check_bounds(bounds)
    n = data.size
    if n < 4:
        raise ValueError(f"x needs at least 4 values for an interval, got n={n}")
    if stat.name == "trimmed_mean" and n - 2 * stat.n_trim(n) < 1:
        raise ValueError(f"trim={stat.trim} leaves no data")
    if stat.name == "median":
        check_candidates(n_candidates)
    rng = check_random_state(random_state)
    what, seeded = f"private_confidence_interval ({method})", random_state is not None
    if method == "ensemble":
        tt = _resolve_resamples(n_resamples, DEFAULT_INTERVAL_RESAMPLES)
        charge(ledger, dataset, e_est + e_cdf, what=what, seeded=seeded)
        out = _ensemble_interval(
            data, bnds, stat, a, e_est, e_cdf, n_subsets, tt, rng, n_candidates, symmetric
        )
    elif method == "ensemble_cdf":
        tt = _resolve_resamples(n_resamples, DEFAULT_INTERVAL_RESAMPLES)
        b_fail = check_in_open_unit(beta, "beta")
        cost = e_est + e_cdf
        if ledger is not None or dataset is not None:  # the bootstrap runs? (data-free)
            s_cdf = resolve_n_subsets(n_subsets, n, e_cdf)
            cost -= e_cdf * (_tree_bound(int(n_grid), s_cdf, e_cdf, b_fail)[0] >= a / 2.0)
        charge(ledger, dataset, cost, what=what, seeded=seeded)
        out = _ensemble_cdf_interval(
            data,
            bnds,
            stat,
            a,
            e_est,
            e_cdf,
            n_subsets,
            tt,
            rng,
            n_candidates,
            b_fail,
            check_grid_size(n_grid),
        )
    elif method == "naive":
        if stat.name == "median":
            raise ValueError(
                "method='naive' needs a statistic whose change per appearance of a record is "
                "bounded by R/n (mean, trimmed mean); use method='ensemble' for the median"
            )
        tt = _resolve_resamples(n_resamples, max(1, math.floor(math.sqrt(n * e_cdf))))
        d_naive = check_in_open_unit(delta, "delta")
        cost = naive_bootstrap_privacy(n, e_cdf, tt, d_naive, epsilon_center=e_est)
        charge(ledger, dataset, cost.epsilon, delta=cost.delta, what=what, seeded=seeded)
        out = _naive_interval(data, bnds, stat, a, e_est, e_cdf, tt, rng, d_naive)
    else:
        raise ValueError(f"method must be 'ensemble', 'ensemble_cdf' or 'naive', got {method!r}")
    lower, upper, estimate, informative, report, details = out
    report = mark_seeded(report, random_state)
    return ConfidenceInterval(
        lower, upper, estimate, a, str(stat), method, informative, report, details
    )


# --- baselines ----------------------------------------------------------------------------------


def _percentile_batch(xb: np.ndarray, stat: Statistic, alpha: float, b_res: int, rng):
    """Percentile bootstrap for each row of ``xb`` (trials, n): ``(lower, upper, estimate)``."""
    trials, n = xb.shape
    lows, ups = np.empty(trials), np.empty(trials)
    chunk = max(1, 4_000_000 // (b_res * n))  # trials per chunk (bounded memory)
    for start in range(0, trials, chunk):
        rows = xb[start : start + chunk]
        idx = rng.integers(0, n, size=(rows.shape[0], b_res, n))
        boot = np.take_along_axis(rows[:, None, :], idx, axis=2)
        if stat.name != "mean":
            boot.sort(axis=2)
        vals = stat.of_sorted(boot)
        q = np.quantile(vals, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1)
        lows[start : start + chunk], ups[start : start + chunk] = q
    return lows, ups, stat.of_sorted(np.sort(xb, axis=1))


def percentile_bootstrap_interval(
    x,
    *,
    alpha: float,
    statistic: str = "mean",
    trim: float = 0.1,
    n_resamples: int = 1000,
    random_state: RandomState = None,
) -> ConfidenceInterval:
    """The non-private percentile bootstrap interval (Efron), for comparison only.

    ``[q_{α/2}, q_{1-α/2}]`` of the statistic over ``n_resamples`` resamples of size ``n``.
    **Not private**: its end points are order statistics of resampled data.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=400)
    >>> ci = percentile_bootstrap_interval(x, alpha=0.1, random_state=0)
    >>> ci.lower < 0 < ci.upper, ci.privacy_report is None
    (True, True)
    """
    a = check_in_open_unit(alpha, "alpha")
    stat = parse_statistic(statistic, trim)
    from dpuq._validation import check_array_1d, check_magnitude, check_work

    data = check_magnitude(check_array_1d(x, "x"), "x")
    b_res = _resolve_resamples(n_resamples, 1000)
    check_work(b_res * data.size, "n_resamples x n", "use fewer resamples")
    rng = check_random_state(random_state)
    lo, hi, est = _percentile_batch(data[None, :], stat, a, b_res, rng)
    return ConfidenceInterval(
        float(lo[0]),
        float(hi[0]),
        float(est[0]),
        a,
        str(stat),
        "percentile bootstrap (not private)",
        True,
        None,
        {"n_resamples": b_res},
    )


def _normal_batch(xb, bounds, alpha, e_mean, e_var, rng):
    """Private normal approximation for each row of ``xb``: ``(lower, upper, estimate)``."""
    n = xb.shape[1]
    a, b = bounds
    r = b - a
    mean_scale, var_scale = laplace_scale(r / n, e_mean), laplace_scale(r * r / n, e_var)
    est = laplace_release(xb.mean(axis=1), scale=mean_scale, random_state=rng)
    var = laplace_release(xb.var(axis=1), scale=var_scale, random_state=rng)
    sigma = np.sqrt(np.maximum(var * n / (n - 1), (r / n) ** 2))
    half = np.array(
        [normal_laplace_quantile(1.0 - alpha / 2.0, sg / math.sqrt(n), mean_scale) for sg in sigma]
    )  # one root-find per trial (a 1-d problem)
    lo = np.maximum(est - half, a)
    hi = np.minimum(est + half, b)
    return lo, hi, est, mean_scale, var_scale


def normal_approximation_interval(
    x,
    *,
    alpha: float,
    epsilon: float,
    bounds,
    epsilon_variance: float | None = None,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> ConfidenceInterval:
    """Private normal-approximation interval for the mean (a baseline); ε + ε_var -DP.

    ``ledger``/``dataset`` charge ``ε + ε_var`` before any noise is drawn (as in
    :func:`private_confidence_interval`).

    ``θ̃ = x̄ + Laplace(R/(n ε))``; ``σ̃² = s² + Laplace(R²/(n ε_var))`` (``ε_var`` defaults
    to ``epsilon``: 2ε in total, like :func:`private_confidence_interval`); the interval is
    ``θ̃ ± q`` with ``q`` the ``1 - α/2`` quantile of ``N(0, σ̃²/n) + Laplace(R/(n ε))``, the
    law of ``θ̃ - θ`` under the normal approximation (the noise of ``θ̃`` is folded in
    exactly), intersected with ``[a, b]``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).uniform(0, 1, 1000)
    >>> ci = normal_approximation_interval(x, alpha=0.05, epsilon=1.0, bounds=(0, 1),
    ...                                    random_state=0)
    >>> ci.lower < ci.estimate < ci.upper, round(ci.width, 2), ci.privacy_report.epsilon
    (True, 0.04, 2.0)
    """
    a = check_in_open_unit(alpha, "alpha")
    e_mean = check_epsilon(epsilon)
    e_var = (
        e_mean if epsilon_variance is None else check_epsilon(epsilon_variance, "epsilon_variance")
    )
    data, _ = check_data(x, bounds, clip=clip)
    if data.size < 2:
        raise ValueError(f"x needs at least 2 values, got n={data.size}")
    bnds = check_bounds(bounds)
    rng = check_random_state(random_state)
    what = "normal_approximation_interval"
    charge(ledger, dataset, e_mean + e_var, what=what, seeded=random_state is not None)
    lo, hi, est, ms, vs = _normal_batch(data[None, :], bnds, a, e_mean, e_var, rng)
    report = PrivacyReport(
        mechanism="normal approximation with Laplace mean and Laplace variance",
        epsilon=e_mean + e_var,
        relation=Relation.REPLACE_ONE,
        sensitivity="mean R/n; variance R^2/n",
        details={"n": data.size, "mean_noise_scale": ms, "variance_noise_scale": vs},
        notes=("first-order accurate only: ignores skewness",),
        seeded=random_state is not None,
    )
    return ConfidenceInterval(
        float(lo[0]),
        float(hi[0]),
        float(est[0]),
        a,
        "mean",
        "normal approximation",
        True,
        report,
        {},
    )
