"""The baselines private intervals are compared with (Chadha et al. 2024): the percentile bootstrap
(not
private) and the normal approximation with Laplace mean and variance (ε-DP in total)."""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import check_epsilon, check_in_open_unit
from dpuq.inference._data import (
    Statistic,
    check_bounds,
    check_data,
    parse_statistic,
)
from dpuq.inference._tiles import ArrayData
from dpuq.inference.confidence_interval import ConfidenceInterval
from dpuq.inference.ensemble import _resolve_resamples
from dpuq.inference.normal_laplace import normal_laplace_quantile
from dpuq.mechanisms.laplace import laplace_release, laplace_scale
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.privacy.ledger import charge
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.scale.sources import is_dask_collection

__all__ = [
    "normal_approximation_interval",
    "percentile_bootstrap_interval",
]


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

    if is_dask_collection(x):  # never gather a Dask array on the client behind one's back
        raise TypeError(
            "percentile_bootstrap_interval is not private (a reference for experiments on data "
            "that fit in memory): its n_resamples full-size resamples read n_resamples x n "
            "random positions of x; on Dask use private_confidence_interval"
        )
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


def _normal_batch(xb, bounds, alpha, e_mean, e_var, rng, moments=None):
    """Private normal approximation for each row of ``xb``: ``(lower, upper, estimate)``.

    ``moments``: ``(n, means, variances)`` computed elsewhere (one sample on the block grid,
    in memory or on Dask), then ``xb`` is None."""
    n, means, variances = moments or (xb.shape[1], xb.mean(axis=1), xb.var(axis=1))
    a, b = bounds
    r = b - a
    mean_scale, var_scale = laplace_scale(r / n, e_mean), laplace_scale(r * r / n, e_var)
    est = laplace_release(means, scale=mean_scale, random_state=rng)
    var = laplace_release(variances, scale=var_scale, random_state=rng)
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
    variance_share: float = 0.5,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> ConfidenceInterval:
    """Private normal-approximation interval for the mean (a baseline); ε-DP in total.

    ``ledger``/``dataset`` charge ``epsilon`` before any noise is drawn (as in
    :func:`private_confidence_interval`).

    With ``ε_var = variance_share * epsilon`` (default share 0.5) and ``ε_m`` the rest:
    ``θ̃ = x̄ + Laplace(R/(n ε_m))``; ``σ̃² = s² + Laplace(R²/(n ε_var))``; the interval is
    ``θ̃ ± q`` with ``q`` the ``1 - α/2`` quantile of ``N(0, σ̃²/n) + Laplace(R/(n ε_m))``, the
    law of ``θ̃ - θ`` under the normal approximation (the noise of ``θ̃`` is folded in
    exactly), intersected with ``[a, b]``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).uniform(0, 1, 1000)
    >>> ci = normal_approximation_interval(x, alpha=0.05, epsilon=1.0, bounds=(0, 1),
    ...                                    random_state=0)
    >>> ci.lower < ci.estimate < ci.upper, round(ci.width, 2), ci.privacy_report.epsilon
    (True, 0.04, 1.0)
    """
    a = check_in_open_unit(alpha, "alpha")
    eps = check_epsilon(epsilon)
    share = check_in_open_unit(variance_share, "variance_share")
    e_var, e_mean = share * eps, (1.0 - share) * eps
    if is_dask_collection(x):  # sums on the workers (dpuq.inference._dask)
        from dpuq.inference._dask import dask_interval_data

        data = dask_interval_data(x, bounds, clip=clip, statistic="mean", method="ensemble")
    else:
        data = ArrayData(check_data(x, bounds, clip=clip)[0])
    if data.size < 2:
        raise ValueError(f"x needs at least 2 values, got n={data.size}")
    bnds = check_bounds(bounds)
    rng = check_random_state(random_state)
    what = "normal_approximation_interval"
    charge(
        ledger, dataset, eps, what=what, random_state=random_state,
        settings={"alpha": a, "n": int(data.size), "bounds": [float(v) for v in bnds]},
    )  # fmt: skip
    mean, var = data.mean_variance()  # on the block grid, as on Dask
    moments = (data.size, np.array([mean]), np.array([var]))
    lo, hi, est, ms, vs = _normal_batch(None, bnds, a, e_mean, e_var, rng, moments)
    report = PrivacyReport(
        mechanism="normal approximation with Laplace mean and Laplace variance",
        epsilon=eps,
        relation=Relation.REPLACE_ONE,
        sensitivity="mean R/n; variance R^2/n",
        details={
            "n": data.size,
            "epsilon_mean": e_mean,
            "epsilon_variance": e_var,
            "mean_noise_scale": ms,
            "variance_noise_scale": vs,
        },
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
