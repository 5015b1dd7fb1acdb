"""Private bootstrap confidence intervals, and the baselines they are compared with (Chadha et al.
2024).

:func:`private_confidence_interval` releases an interval for the mean, median or trimmed mean
of data in a public interval ``[a, b]``, centred on a private estimate ``θ̃`` and shaped by
a private bootstrap: ``epsilon`` is the **total** of the call, split as
``estimate_share * epsilon`` for ``θ̃`` and the rest for the bootstrap (default share
:data:`~dpuq.inference.interval_methods.ESTIMATE_SHARE` = 0.5; before 0.2.0 each part took the
whole ``epsilon``, 2ε in total). A callable ``statistic`` (any estimator ``f(rows,
sample_weight)``) is released by :mod:`dpuq.inference.general`. The median's (and a quantile's)
default is ``"order_statistics"``: the exact, distribution-free order-statistic interval of
:mod:`dpuq.inference.quantile_interval` (coverage at least ``1 - α`` for every law and every
``n``, ties included). Three methods for the mean and trimmed mean (and the median on request):

``"ensemble"`` (default for the mean and trimmed mean)
    Chadha et al.'s studentized ensemble, aggregated at the quantiles the interval needs. Each of
    ``s`` disjoint subsets runs a bag-of-little-bootstraps of the root
    ``√n (θ̃* - θ̂_k)/σ̃*``, where ``θ̃*`` and ``σ̃*`` are the *private* estimate and standard
    deviation simulated on the resample (the mechanisms' noise is folded into the root's law,
    Proposition 2). Its ``1 - α`` quantile of ``|root|`` (symmetric bootstrap-t) gives a
    half-width ``h_k``; the ``log h_k`` are aggregated with a clamped mean (Smith 2011, Chadha
    et al.'s aggregation) whose sensitivity is ``(window)/s``, and the interval is
    ``θ̃ ± σ̃ h/√n``, intersected with ``[a, b]``, with ``σ̃`` the private standard deviation.
    With ``symmetric=False`` (not for the median) the two tails are aggregated separately (a
    half-width and an asymmetry), which costs part of the budget: in the tests this was wider
    or covered less at ε·s up to a few hundred. The median bootstraps each subset at its own
    size ``b`` (root scaled by ``√b``): resamples of size ``n`` from ``b`` points make the
    median's bootstrap law a lattice as coarse as its spread.
``"ensemble_cdf"``
    Chadha et al.'s interval taken literally: the all-thresholds CDF (tree mechanism, monotone
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
import warnings
from collections.abc import Callable

from dpuq._validation import (
    check_candidates,
    check_grid_size,
    check_in_open_unit,
)
from dpuq.inference._data import (
    check_bounds,
    check_data,
    parse_statistic,
    resolve_n_subsets,
)
from dpuq.inference.baselines import normal_approximation_interval, percentile_bootstrap_interval
from dpuq.inference.confidence_interval import ConfidenceInterval
from dpuq.inference.ensemble import _resolve_resamples, check_subset_work
from dpuq.inference.estimates import (
    DEFAULT_MEDIAN_CANDIDATES,
)
from dpuq.inference.interval_methods import (
    _ensemble_cdf_interval,
    _ensemble_interval,
    _naive_interval,
    _split_budget,
    _tree_bound,
    check_cdf_release_parts,
    check_release_parts,
)
from dpuq.inference.interval_routes import _general, _order_statistics, _refuse_subset_settings
from dpuq.inference.naive import naive_bootstrap_privacy
from dpuq.inference.normal_laplace import normal_laplace_cdf
from dpuq.mechanisms.randomness import RandomState, check_random_state, mark_seeded
from dpuq.privacy.ledger import charge
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


#: Below this ``n ε`` the median's ``method="ensemble"`` warns: its coverage on uniform data
#: (n = 2000, nominal 0.90, 100 samples) was 0.90 at ε = 1, 0.73 at ε = 0.1, 0.25 at 0.01.
MEDIAN_ENSEMBLE_MIN_N_EPSILON = 1000.0


def private_confidence_interval(
    x,
    *,
    alpha: float,
    epsilon: float,
    bounds=None,
    statistic: str | Callable = "mean",
    statistic_bounds=None,
    quantile: float | None = None,
    vectorized: bool = False,
    bias_correction: bool | None = None,
    trim: float = 0.1,
    method: str | None = None,
    n_subsets="auto",
    n_resamples="auto",
    estimate_share: float | None = None,
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
    """A differentially private ``1 - alpha`` confidence interval for a statistic.

    The interval is centred on a private estimate ``θ̃`` released with
    ``estimate_share * epsilon`` and shaped by a private bootstrap released with the rest:
    **ε-DP in total** (δ = 0), under replace-one neighbours with ``n`` public. See the module
    docstring for the three methods. With a callable ``statistic`` (and ``statistic_bounds``
    instead of ``bounds``) the call goes to
    :func:`dpuq.inference.general._private_statistic_interval`.

    Parameters
    ----------
    x : array-like of shape (n,) or (n, d), DataFrame, or a 1-d Dask array / Series
        One row per person. (n, d) arrays and DataFrames are for a callable ``statistic``
        (in memory only). Data inside ``bounds``. Dask input (string statistics; methods
        ``"ensemble"`` and ``"ensemble_cdf"``) is validated and summarised on the workers,
        where the per-subset bootstrap also runs; the client receives sums, counts and one
        result per subset, and the release equals the in-memory one for the same
        ``random_state`` (:mod:`dpuq.inference._dask`).
    alpha : float
        Miscoverage, in (0, 1).
    epsilon : float
        The total ε of the call, > 0 (``"naive"``: the nominal total; its report gives the
        (ε', δ) it really has).
    bounds : (float, float)
        Public interval containing every value, from public knowledge, never from the data
        (string statistics; a callable statistic takes ``statistic_bounds`` instead).
    statistic : {"mean", "median", "trimmed_mean", "quantile"} or callable
        A callable ``f(rows, sample_weight) -> float or 1-d array`` is any estimator in
        scikit-learn's ``sample_weight`` convention (:mod:`dpuq.inference.general`: disjoint
        subsets, BLB standard error, subsample-and-aggregate estimate); ``"quantile"`` is
        that path with ``f`` the weighted ``quantile`` of ``x``.
    statistic_bounds : (lo, hi), floats or 1-d arrays
        Callable statistic: the **public** range of ``f``'s output (one pair per coordinate);
        ``f`` is clamped to it, which is what bounds the sensitivity, so it must come from
        public knowledge, never from the data.
    quantile : float, optional
        The level in (0, 1) for ``statistic="quantile"``.
    vectorized : bool, default False
        Callable statistic: ``f`` takes a ``(T, b)`` weight matrix and returns ``(T,)`` or
        ``(T, p)`` values, one call per subset (fast).
    bias_correction : bool, optional
        Callable statistic and ``"quantile"``: correct each subset's estimate by the
        delete-a-group jackknife on that subset's own rows (removes the ``O(1/b)`` bias of a
        smooth nonlinear statistic on subsets of ``b`` rows; :mod:`dpuq.inference.general`).
        Default True for a callable ``f`` and False for ``"quantile"`` (the jackknife is
        inconsistent for quantiles: pass False for a median or quantile ``f`` too). False
        for a smooth ``f`` is the uncorrected estimator (the validity zoo's negative control).
    trim : float, default 0.1
        Proportion cut at each end for ``"trimmed_mean"``.
    method : {"ensemble", "ensemble_cdf", "naive"}, and "order_statistics" for the median;
        for a callable statistic {"ensemble", "subsampling"}; for ``"quantile"``
        {"order_statistics", "ensemble", "subsampling"}. Default: ``"order_statistics"`` for
        ``"median"`` and ``"quantile"`` (exact, distribution-free coverage in finite samples,
        ties included: :mod:`dpuq.inference.quantile_interval`), else ``"ensemble"``. The
        median's ``"ensemble"`` is narrower (about 1.1 times the non-private bootstrap against
        1.6 times) but assumes a density that is smooth and positive at the median on the
        scale of a subset's spread: on tied or bimodal data it covered 0.80 at nominal 0.90.
    n_subsets : "auto" or int
        Subsets of the ensemble; auto ``floor(sqrt(n / ε_cdf))`` (Chadha et al. 2024), with
        ``ε_cdf = (1 - estimate_share) epsilon``.
    n_resamples : "auto" or int
        Resamples per subset (auto 500); naive: auto ``floor(sqrt(n ε_cdf))``.
    estimate_share : float, optional
        Share of ``epsilon`` spent on the point estimate, in (0, 1); the bootstrap gets the
        rest. Default 0.5 (string statistics) or
        :data:`dpuq.inference.general.ESTIMATE_SHARE` (0.7, callable and quantile).
    beta : float, default 0.05
        ``"ensemble_cdf"`` only: failure probability of the uniform error bound.
    n_grid : int, default 127
        ``"ensemble_cdf"`` only: points of the public grid on ``[-2R, 2R]``.
    delta : float, default 1e-6
        ``"naive"`` only: the δ at which its ε' is reported.
    n_candidates : int, default 1001
        Bins of the median's and the quantile's order-statistic interval (their resolution is
        ``(b - a)/n_candidates``), or candidates of the ensemble's private median.
    symmetric : bool, default True
        ``"ensemble"`` only: a symmetric interval (one released half-width). False releases an
        asymmetry too (the bootstrap-t's skewness correction), splitting the budget three ways;
        ignored for the median, whose interval is always symmetric.
    clip : bool, default False
        Clip data outside ``bounds`` (silently: whether any was clipped is not released).
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge the interval's total cost to ``dataset``'s budget before any noise is drawn
        (``"ensemble_cdf"``: only ``estimate_share * epsilon`` when the data-free error bound
        shows that the bootstrap cannot be informative), or refuse it
        (:class:`dpuq.BudgetExceededError`).

    Returns
    -------
    ConfidenceInterval
        A tuple of them, one per coordinate, for a callable statistic with array
        ``statistic_bounds``.

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
    (True, 1.0)
    """
    if method is None:  # the exact order statistics for quantiles; the ensemble for the others
        exact = isinstance(statistic, str) and statistic in ("median", "quantile")
        method = "order_statistics" if exact else "ensemble"
    if method == "order_statistics":  # a subsets' setting would be ignored: say so instead
        _refuse_subset_settings(n_subsets=n_subsets, n_resamples=n_resamples,
                                estimate_share=estimate_share, bias_correction=bias_correction,
                                symmetric=symmetric)  # fmt: skip
    if callable(statistic) or statistic == "quantile":
        return _general(
            x, statistic, statistic_bounds, bounds, quantile, vectorized, alpha, epsilon,
            method, n_subsets, n_resamples, estimate_share, clip, random_state, ledger, dataset,
            bias_correction, n_candidates,
        )  # fmt: skip
    if statistic_bounds is not None or quantile is not None:
        raise ValueError(
            "statistic_bounds is for a callable statistic and quantile for "
            "statistic='quantile'; a string statistic takes bounds"
        )
    if bounds is None:
        raise TypeError("bounds is required for statistic=" + repr(statistic))
    a = check_in_open_unit(alpha, "alpha")
    e_est, e_cdf = _split_budget(epsilon, 0.5 if estimate_share is None else estimate_share)
    stat = parse_statistic(statistic, trim)
    if is_dask_collection(x):  # validated and summarised chunk-wise (dpuq.inference._dask)
        from dpuq.inference._dask import dask_interval_data

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
        if method == "ensemble" and n * float(epsilon) < MEDIAN_ENSEMBLE_MIN_N_EPSILON:
            # public: n and ε only; the exponential mechanism's rank noise outgrows the
            # subsets' clamping window of log h
            warnings.warn(
                f"method='ensemble' for the median undercovers at n * epsilon below "
                f"{MEDIAN_ENSEMBLE_MIN_N_EPSILON:g} (measured: 0.73 at n = 2000, epsilon = "
                "0.1; 0.25 at epsilon = 0.01); the default, method='order_statistics', is "
                "exact",
                UserWarning,
                stacklevel=2,
            )
    if method == "order_statistics":
        if stat.name != "median":
            raise ValueError(
                "method='order_statistics' is for statistic='median' or 'quantile', not "
                f"{stat.name!r}; use method='ensemble'"
            )
        return _order_statistics(data, bnds, 0.5, a, epsilon, n_candidates, random_state,
                                 ledger, dataset, "median")  # fmt: skip
    rng = check_random_state(random_state)
    what, seeded = f"private_confidence_interval ({method})", random_state is not None
    settings = {
        "alpha": a,
        "n": n,
        "statistic": stat.name,
        "method": method,
        "bounds": [float(bnds[0]), float(bnds[1])],
        "estimate_share": e_est / (e_est + e_cdf),
    }

    def charge_cost(cost, delta=0.0):
        return charge(
            ledger, dataset, cost, delta=delta, what=what, seeded=seeded, settings=settings
        )

    if method == "ensemble":
        tt = _resolve_resamples(n_resamples, DEFAULT_INTERVAL_RESAMPLES)
        s_ens = resolve_n_subsets(n_subsets, n, e_cdf)  # settings checked before the charge
        check_subset_work(s_ens, tt)
        if stat.name == "trimmed_mean" and (n // s_ens) - 2 * stat.n_trim(n // s_ens) < 1:
            raise ValueError(f"trim={stat.trim} leaves no data in subsets of {n // s_ens} points")
        check_release_parts(stat, e_est, e_cdf, symmetric)
        charge_cost(e_est + e_cdf)
        out = _ensemble_interval(
            data, bnds, stat, a, e_est, e_cdf, n_subsets, tt, rng, n_candidates, symmetric
        )
    elif method == "ensemble_cdf":
        tt = _resolve_resamples(n_resamples, DEFAULT_INTERVAL_RESAMPLES)
        b_fail = check_in_open_unit(beta, "beta")
        g_size = check_grid_size(n_grid)  # every setting before the charge
        s_cdf = resolve_n_subsets(n_subsets, n, e_cdf)
        check_subset_work(s_cdf, tt)
        if stat.name == "trimmed_mean" and (n // s_cdf) - 2 * stat.n_trim(n // s_cdf) < 1:
            raise ValueError(f"trim={stat.trim} leaves no data in subsets of {n // s_cdf} points")
        cost = e_est + e_cdf
        runs = _tree_bound(g_size, s_cdf, e_cdf, b_fail)[0] < a / 2.0  # data-free
        check_cdf_release_parts(stat, e_est, e_cdf if runs else None, g_size)
        if ledger is not None or dataset is not None:
            cost -= e_cdf * (not runs)
        charge_cost(cost)
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
            g_size,
        )
    elif method == "naive":
        if stat.name == "median":
            raise ValueError(
                "method='naive' needs a statistic whose change per appearance of a record is "
                "bounded by R/n (mean, trimmed mean); use method='ensemble' for the median"
            )
        tt = _resolve_resamples(n_resamples, max(1, math.floor(math.sqrt(n * e_cdf))))
        if tt < math.ceil(1.0 / a):  # public: fewer cannot place its alpha/2 quantiles apart
            raise ValueError(
                f"method='naive' needs n_resamples >= {math.ceil(1.0 / a)} (1/alpha) for its "
                f"percentile interval, got {tt} (the default is floor(sqrt(n * epsilon_cdf))); "
                "use method='ensemble'"
            )
        d_naive = check_in_open_unit(delta, "delta")
        check_cdf_release_parts(stat, e_est, e_cdf, None)
        cost = naive_bootstrap_privacy(n, e_cdf, tt, d_naive, epsilon_center=e_est)
        charge_cost(cost.epsilon, cost.delta)
        out = _naive_interval(data, bnds, stat, a, e_est, e_cdf, tt, rng, d_naive)
    else:
        raise ValueError(
            "method must be 'ensemble', 'ensemble_cdf', 'naive' or (median) 'order_statistics', "
            f"got {method!r}"
        )
    lower, upper, estimate, informative, report, details = out
    report = mark_seeded(report, random_state)
    return ConfidenceInterval(
        lower, upper, estimate, a, str(stat), method, informative, report, details
    )
