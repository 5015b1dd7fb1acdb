"""The three private interval methods behind :func:`dpuq.inference.private_confidence_interval`.

``"ensemble"`` (studentized ensemble, clamped-mean aggregation), ``"ensemble_cdf"`` (the
all-thresholds tree CDF with its uniform slack) and ``"naive"`` (Algorithm 1): what each
releases, at which ε and why, is in :mod:`dpuq.inference.intervals`' docstring; each returns
the interval and its settings, and the caller builds the release.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from scipy.special import ndtri

from dpuq._validation import check_epsilon, check_in_open_unit
from dpuq.inference._data import (
    Statistic,
    UninformativeIntervalWarning,
    resolve_n_subsets,
)
from dpuq.inference._tiles import (
    ArrayData,
    exact_statistic,
    tile_plan,
)
from dpuq.inference._tiles import CdfKernel as _CdfKernel
from dpuq.inference._tiles import EnsembleKernel as _EnsembleKernel
from dpuq.inference.aggregation import (
    _private_clamped_mean,
    _tree_cdf,
    tree_error_bound,
    tree_shape,
)
from dpuq.inference.bootstrap import default_grid
from dpuq.inference.ensemble import check_subset_work
from dpuq.inference.estimates import (
    _release_point_estimate,
    _release_variance,
    median_candidates,
)
from dpuq.inference.naive import _naive_release, naive_bootstrap_privacy
from dpuq.inference.normal_laplace import normal_laplace_quantile
from dpuq.mechanisms.discrete_laplace import check_laplace_epsilon
from dpuq.mechanisms.laplace import laplace_cdf
from dpuq.privacy.report import PrivacyReport, Relation

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


#: Default share of ``epsilon`` spent on the point estimate (the rest goes to the bootstrap).
ESTIMATE_SHARE = 0.5


def _split_budget(epsilon, estimate_share) -> tuple[float, float]:
    """``(ε_estimate, ε_cdf) = (share ε, (1 - share) ε)``: ``epsilon`` is the call's total."""
    eps = check_epsilon(epsilon)
    share = check_in_open_unit(estimate_share, "estimate_share")
    return check_epsilon(share * eps, "estimate_share * epsilon"), check_epsilon(
        (1.0 - share) * eps, "(1 - estimate_share) * epsilon"
    )


def check_release_parts(stat: Statistic, e_est: float, e_cdf: float, symmetric: bool) -> None:
    """Refuse, before any charge, an ε whose smallest Laplace release in the ensemble
    (``e_est``, or a share of ``e_cdf``) is too small for the exact sampler: at ε = 2e-12 the
    call was charged and then failed. Public: ε and the shares only."""
    shares = SYMMETRIC_SHARES if symmetric or stat.name == "median" else ENSEMBLE_SHARES
    parts = [share * e_cdf for share in shares if share > 0]
    if stat.name != "median":  # the median's estimate is the exponential mechanism
        parts.append(e_est)
    check_laplace_epsilon(min(parts), what="the smallest part of epsilon in this interval")


def check_cdf_release_parts(stat: Statistic, e_est: float, e_cdf, n_grid) -> None:
    """The same check for ``method="ensemble_cdf"`` (a Laplace estimate, and a tree of Laplace
    nodes over ``n_grid`` points; ``e_cdf=None``: the tree does not run) and for
    ``method="naive"`` (``n_grid=None``: one Laplace value per resample at ``e_cdf``)."""
    if stat.name != "median":  # the median's estimate is the exponential mechanism
        check_laplace_epsilon(e_est, what="the estimate's epsilon")
    if e_cdf is not None:
        nodes = 1 if n_grid is None else tree_shape(n_grid)[1]
        check_laplace_epsilon(e_cdf, dim=nodes, what="the bootstrap's epsilon")


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


def _ensemble_interval(
    data, bnds, stat, alpha, e_est, e_cdf, n_subsets, tt, rng, n_cand, symmetric
):
    n = data.size
    r_range = bnds[1] - bnds[0]
    data = ArrayData(data) if isinstance(data, np.ndarray) else data  # or dpuq.scale's Dask data
    cand = median_candidates(bnds, n_cand) if stat.name == "median" else None
    mean, variance = data.mean_variance()
    exact = mean if stat.name == "mean" else exact_statistic(data, stat, cand)
    est = _release_point_estimate(None, stat, bnds, e_est, rng, n_cand, n=n, exact=exact)
    symmetric = symmetric or stat.name == "median"  # the median's interval is symmetric
    shares = SYMMETRIC_SHARES if symmetric else ENSEMBLE_SHARES
    e_var, e_h, e_r = (share * e_cdf for share in shares)
    var = _release_variance(None, bnds, e_var, rng, n=n, exact=variance)
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
    partition, plan = tile_plan(n, s, tt, m, rng)
    # the median's mechanism rank noise is O(1/ε); at size b it must be O(1/ε) sqrt(b/n) ranks
    # to have the same size relative to the root's spread: it is simulated with ε sqrt(n/b)
    kernel = _EnsembleKernel(
        stat,
        est.noise_scale,
        var.noise_scale,
        VAR_MARGIN * var.noise_scale,
        r_range * r_range / 4.0,
        v_floor,
        alpha,
        symmetric,
        cand,
        e_est * math.sqrt(n / m),
    )
    # per subset (in tiles, with derived generators): in memory here, on the workers on Dask
    h_k, r_k = data.run_tiles(partition, plan, kernel)
    n_groups = plan.n_groups

    h_ref = _reference_half_width(stat, alpha, n, sigma, est.noise_scale)
    w_h = LOG_H_HALF_WIDTH["mean" if stat.name == "mean" else "other"]
    agg_h = _private_clamped_mean(
        np.log(h_k), epsilon=e_h, half_width=w_h, center=math.log(h_ref), rng=rng
    )
    # post-processing: the clamped values' mean lies in its window, so the noisy release is
    # projected onto it (never further from that mean); at a tiny ε the noise alone would
    # give exp(±huge): an overflow after the charge, or a zero-width interval
    unreadable = agg_h.noise_scale > agg_h.half_width  # public: 2 w / (s ε_h) > w
    # where the noise exceeds the window (a tiny ε), the release says nothing about where in
    # it the half-width lies: the window's upper end, the widest it allows (conservative)
    h = math.exp(agg_h.center + agg_h.half_width if unreadable else agg_h.projected())
    if symmetric:
        r_value, r_scale = 0.0, None
    else:
        agg_r = _private_clamped_mean(
            r_k, epsilon=e_r, half_width=R_HALF_WIDTH, center=0.0, rng=rng
        )
        # post-processing, as for log h: the clamped values' mean lies in [-w, w], so the
        # release is projected onto it. Unprojected, noise beyond 1 put both ends on one side
        # of the estimate (a zero-width interval at 0 for a mean at ε = 1e-8)
        r_value = agg_r.projected()
        r_scale = agg_r.noise_scale
    hi, lo = h * (r_value + 1.0), h * (r_value - 1.0)
    raw = (est.value - sigma * hi / math.sqrt(n), est.value - sigma * lo / math.sqrt(n))
    # post-processing of the released ends. An interval wholly outside the public bounds (the
    # estimate's noise beyond them at a small ε) cannot hold θ: it was clipped to a point
    # and marked informative; the whole of the bounds is the honest answer. An interval that
    # is the whole of the bounds says nothing, and the release says so
    outside = raw[1] < bnds[0] or raw[0] > bnds[1]
    lower, upper = bnds if outside else _clip_interval(raw[0], raw[1], bnds)
    informative = not (lower <= bnds[0] and upper >= bnds[1])
    report = PrivacyReport(
        mechanism="private bootstrap confidence interval (Chadha et al. 2024; ensemble, "
        "studentized, clamped-mean aggregation of the subsets' quantiles)",
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
        "half_width_unreadable": unreadable,
        "noise_scale_asymmetry": r_scale,
    }
    if not informative:
        details["reason"] = (
            "the interval, with the privacy noise of this n and epsilon folded in, covers the "
            "whole of bounds"
        )
        warnings.warn(f"uninformative interval: {details['reason']}",
                      UninformativeIntervalWarning, stacklevel=3)  # fmt: skip
    return lower, upper, est.value, informative, report, details


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
    depth = tree_shape(n_grid)[0]
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
    data = ArrayData(data) if isinstance(data, np.ndarray) else data  # or dpuq.scale's Dask data
    cand = median_candidates(bnds, n_cand) if stat.name == "median" else None
    exact = exact_statistic(data, stat, cand)
    est = _release_point_estimate(None, stat, bnds, e_est, rng, n_cand, n=n, exact=exact)
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
            mechanism="private bootstrap confidence interval (Chadha et al. taken literally): "
            "only the "
            "estimate was released; the interval [a, b] is data-independent",
            epsilon=e_est,
            relation=Relation.REPLACE_ONE,
            sensitivity=f"estimate: {est.privacy_report.sensitivity}",
            details={**base, "epsilon_cdf_spent": 0.0},
            notes=(reason,),
        )
        return bnds[0], bnds[1], est.value, False, report, {**details, "reason": reason}
    partition, plan = tile_plan(n, s, tt, n, rng)
    grid = default_grid(bnds, "basic", n_grid)
    # median: the exponential mechanism is folded in by simulation (in the kernel); otherwise
    # the Laplace noise of θ̃ is folded exactly after the release
    fold = 0.0 if stat.name == "median" else math.sqrt(n) * est.noise_scale
    (masses,) = data.run_tiles(partition, plan, _CdfKernel(stat, grid, cand, e_est))
    tree = _tree_cdf(masses, e_cdf, rng)
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
        mechanism="private bootstrap confidence interval (Chadha et al. taken literally: "
        "all-thresholds tree "
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
        mechanism="naive private bootstrap interval (Chadha et al. 2024, Algorithm 1)",
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
