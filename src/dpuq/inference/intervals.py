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

import math

from dpuq._validation import check_candidates, check_grid_size, check_in_open_unit
from dpuq.inference._data import (
    check_bounds,
    check_data,
    parse_statistic,
    resolve_n_subsets,
)
from dpuq.inference.baselines import normal_approximation_interval, percentile_bootstrap_interval
from dpuq.inference.confidence_interval import ConfidenceInterval
from dpuq.inference.ensemble import _resolve_resamples
from dpuq.inference.estimates import (
    DEFAULT_MEDIAN_CANDIDATES,
)
from dpuq.inference.interval_methods import (
    _ensemble_cdf_interval,
    _ensemble_interval,
    _naive_interval,
    _split_budget,
    _tree_bound,
)
from dpuq.inference.naive import naive_bootstrap_privacy
from dpuq.inference.normal_laplace import normal_laplace_cdf
from dpuq.ledger import charge
from dpuq.mechanisms.randomness import RandomState, check_random_state, mark_seeded
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
        Data inside ``bounds``. Dask input (every statistic; methods ``"ensemble"`` and
        ``"ensemble_cdf"``) is validated and summarised on the workers, where the per-subset
        bootstrap also runs; the client receives sums, counts and one result per subset, and
        the release equals the in-memory one for the same ``random_state``
        (:mod:`dpuq.scale.intervals`).
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
