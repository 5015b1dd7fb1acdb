"""Private bootstrap estimates of the sampling law of a statistic (Chadha et al. 2024).

Data ``x_1..x_n`` in a public interval ``[a, b]`` (``R = b - a``); statistic ``θ̂`` (mean,
median or trimmed mean). The target is the CDF of the root (the paper's eq. 2)

    ``J_n(t) = P(√n (θ(P) - θ̂_n) <= t)``,

estimated by the bootstrap law of ``√n (θ̂(sample) - θ̂(resample))``.

- :func:`private_bootstrap_cdf` — ``J_n`` at one or a few thresholds: Algorithm 2 (the
  ensemble / bag of little bootstraps, ε-DP, default) or Algorithm 1 (the naive private
  bootstrap, only (ε', δ)-DP: the report gives the ε' it actually has).
- :func:`private_bootstrap_cdf_grid` — all thresholds of a public grid at once (Theorem 2: tree
  mechanism and monotone projection) with a uniform error bound.
- :func:`private_studentized_cdf` — the studentized root ``√n (θ̂ - θ)/σ̂`` (eq. 3, Theorem
  3), aggregated over subsets by a private median and a clamped mean.

Neighbouring relation throughout: replace-one with ``n`` public. Randomness: ``random_state=None``
(the default) uses OS entropy, for releases; an int or Generator is for experiments only.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np

from dpuq._validation import (
    check_array_1d,
    check_grid_size,
    check_in_open_unit,
)
from dpuq.inference._data import (
    check_bounds,
)
from dpuq.inference.aggregation import (
    _private_average,
    _tree_cdf,
    tree_error_bound,
    tree_shape,
)
from dpuq.inference.ensemble import (
    DEFAULT_RESAMPLES,
    PrivateCDF,
    PrivateCDFGrid,
    RootKernel,
    _check_root,
    _check_thresholds,
    _ensemble_cdf,
    _ensemble_report,
    _prepare,
    _resolve_resamples,
    check_subset_work,
    ensemble_plan,
    ensemble_step,
    subset_bootstrap_cdfs,
    subset_roots,
)
from dpuq.inference.naive import NaivePrivacy, _naive_release, naive_bootstrap_privacy
from dpuq.inference.studentized import private_studentized_cdf, studentized_half_width
from dpuq.mechanisms.discrete_laplace import check_laplace_epsilon
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.privacy.ledger import charge
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = [
    "DEFAULT_RESAMPLES",
    "NaivePrivacy",
    "PrivateCDF",
    "PrivateCDFGrid",
    "check_subset_work",
    "default_grid",
    "naive_bootstrap_privacy",
    "private_bootstrap_cdf",
    "private_bootstrap_cdf_grid",
    "private_studentized_cdf",
    "studentized_half_width",
    "subset_bootstrap_cdfs",
    "subset_roots",
]

# --- the public estimators ----------------------------------------------------------------------


def private_bootstrap_cdf(
    x,
    t,
    *,
    epsilon: float,
    bounds,
    statistic: str = "mean",
    trim: float = 0.1,
    method: str = "ensemble",
    n_subsets="auto",
    n_resamples="auto",
    delta: float = 1e-6,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateCDF:
    """Private bootstrap estimate of ``J_n(t) = P(√n (θ - θ̂) <= t)`` (Chadha et al. 2024).

    ``method="ensemble"`` (Algorithm 2, default): shuffle, split into ``s`` disjoint subsets of
    ``b = floor(n/s)`` points; on each, ``T`` bag-of-little-bootstraps resamples of size ``n``
    (multinomial weights over the ``b`` points) give ``Ĵ^k(t) = (1/T) #{√n (θ̂_k - θ̂*) <= t}``;
    release ``(1/s) sum_k Ĵ^k(t) + Laplace(1/(s ε))``.
    Privacy: ε-DP, δ = 0. One record lies in one subset, whose ``Ĵ^k`` in [0, 1] moves by at
    most 1: sensitivity ``1/s`` (given the data-free shuffle and weights). For ``k``
    thresholds the L1 sensitivity is ``k/s`` and each gets ``Laplace(k/(s ε))``.

    For the median, ``b`` points resampled to size ``n`` give a lattice-valued bootstrap law
    whose spacing is of the order of its spread when ``b ≈ sqrt(n ε)``; the estimate is then
    coarse (:func:`~dpuq.inference.private_confidence_interval` bootstraps the median's
    subsets at their own size instead).

    ``method="naive"`` (Algorithm 1, a baseline; mean and trimmed mean only):
    ``T = floor(sqrt(n ε))`` full-size resamples, each statistic plus
    ``Laplace(Δ n^{1/4}/ε)``, centre ``θ̂ + Laplace(Δ/ε)``. It is **not** ε-DP: the report
    gives the (ε', δ) computed by :func:`naive_bootstrap_privacy`. All thresholds are free.

    Parameters
    ----------
    x : array-like of shape (n,)
        Data inside ``bounds``.
    t : float or array-like of shape (k,)
        Threshold(s).
    epsilon : float
        Privacy parameter, > 0 (the total for the ensemble; the nominal one for naive).
    bounds : (float, float)
        Public interval containing the data, from public knowledge, never from the data.
    statistic : {"mean", "median", "trimmed_mean"}
    trim : float, default 0.1
        Proportion cut at each end for ``"trimmed_mean"``.
    method : {"ensemble", "naive"}
    n_subsets : "auto" or int
        ``s``; ``"auto"`` is ``floor(sqrt(n/ε))`` (Chadha et al. 2024).
    n_resamples : "auto" or int
        ``T``; auto: 1000 per subset (ensemble), ``floor(sqrt(n ε))`` (naive).
    delta : float, default 1e-6
        The δ at which the naive method's ε' is reported (ignored by the ensemble).
    clip : bool, default False
        Clip data outside ``bounds`` (silently: whether any was clipped is not released).
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge the release's cost (naive: its (ε', δ)) to ``dataset``'s budget before any
        noise is drawn, or refuse it (:class:`dpuq.BudgetExceededError`). The same two
        arguments are taken by :func:`private_bootstrap_cdf_grid` and
        :func:`private_studentized_cdf` (cost ``epsilon``).

    Returns
    -------
    PrivateCDF

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).uniform(0, 1, 2000)
    >>> est = private_bootstrap_cdf(x, 0.0, epsilon=1.0, bounds=(0, 1), random_state=1)
    >>> abs(est.value - 0.5) < 0.1   # the root is symmetric about 0
    True
    >>> est.privacy_report.epsilon
    1.0
    """
    data, bnds, eps, stat = _prepare(x, bounds, epsilon, statistic, trim, clip, method)
    tarr = _check_thresholds(t)
    tv = tarr.reshape(-1)
    rng = check_random_state(random_state)
    n = data.size
    what, seeded = f"private_bootstrap_cdf ({method})", random_state is not None
    settings = {"n": n, "statistic": stat.name, "method": method, "thresholds": int(tv.size)}
    if method == "ensemble":
        ensemble_plan(n, stat, n_subsets, eps, n_resamples, tv.size)  # before the charge
        check_laplace_epsilon(eps, dim=tv.size)  # one Laplace value per threshold
        charge(ledger, dataset, eps, what=what, seeded=seeded, settings=settings)
        kernel = RootKernel(stat, "basic", thresholds=tv)
        (per_subset,), res = ensemble_step(data, stat, n_subsets, eps, n_resamples, rng, kernel)
        noisy, scale = _private_average(per_subset, eps, rng)
        report = _ensemble_report(
            res,
            "private bootstrap ensemble (Chadha et al. 2024, Algorithm 2)",
            eps,
            seeded,
            f"1/s = {1 / res.n_subsets:.6g} per threshold ({tv.size}/s in L1 over "
            f"{tv.size} threshold(s))",
            statistic=str(stat),
            noise_scale=scale,
        )
        return _ensemble_cdf(tarr, noisy, "basic", stat.name, res, scale, report)
    if method != "naive":
        raise ValueError(f"method must be 'ensemble' or 'naive', got {method!r}")
    if stat.name == "median":
        raise ValueError(
            "method='naive' needs a statistic whose change per appearance of a record is "
            "bounded by R/n (mean, trimmed mean); the median's is R. Use method='ensemble'"
        )
    tt = _resolve_resamples(n_resamples, max(1, math.floor(math.sqrt(n * eps))))
    check_laplace_epsilon(eps)  # the centre's and every resample's Laplace noise
    priv = naive_bootstrap_privacy(n, eps, tt, delta)
    charge(
        ledger, dataset, priv.epsilon, delta=priv.delta, what=what, seeded=seeded,
        settings=settings,
    )  # fmt: skip
    theta_tilde, theta_star, scale0, scale_i = _naive_release(data, bnds, stat, eps, tt, rng)
    roots = math.sqrt(n) * (theta_tilde - theta_star)
    est = (roots[None, :] <= tv[:, None]).mean(axis=1)
    report = PrivacyReport(
        mechanism="naive private bootstrap (Chadha et al. 2024, Algorithm 1)",
        epsilon=priv.epsilon,
        delta=priv.delta,
        relation=Relation.REPLACE_ONE,
        seeded=random_state is not None,
        sensitivity=f"per appearance of a record: {scale0 * eps:.6g}; "
        f"resample noise Laplace({scale_i:.6g})",
        details={
            "n": n,
            "statistic": str(stat),
            "n_resamples": tt,
            "nominal_epsilon": eps,
            "epsilon_per_appearance": priv.epsilon_per_appearance,
            "max_appearances_C": priv.max_appearances,
            "total_appearances_A": priv.total_appearances,
            "composition": priv.composition,
        },
        notes=(
            "Algorithm 1 is not ε-DP: one record appears in many resamples; the guarantee "
            "above is the rigorous (ε', δ) of naive_bootstrap_privacy",
        ),
    )
    return PrivateCDF(
        tarr,
        est.reshape(tarr.shape),
        est.reshape(tarr.shape),
        "naive",
        "basic",
        stat.name,
        None,
        tt,
        scale_i,
        report,
    )


def default_grid(bounds, root: str, n_grid: int) -> np.ndarray:
    """Public default grid: ``[-2R, 2R]`` for the basic root (its sd is at most ``R/2`` for the
    mean), ``[-6, 6]`` for the studentized root."""
    a, b = check_bounds(bounds)
    half = 2.0 * (b - a) if root == "basic" else 6.0
    return np.linspace(-half, half, n_grid)


def private_bootstrap_cdf_grid(
    x,
    grid=None,
    *,
    epsilon: float,
    bounds,
    statistic: str = "mean",
    trim: float = 0.1,
    root: str = "basic",
    n_subsets="auto",
    n_resamples="auto",
    n_grid: int = 127,
    beta: float = 0.05,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateCDFGrid:
    """Private bootstrap CDF at every point of a public grid at once (Chadha et al. 2024, Theorem
    2).

    The ensemble of :func:`private_bootstrap_cdf` gives each subset's bootstrap mass in the
    ``G + 1`` cells of the grid; their average is released through a binary tree (Laplace
    ``2D/(s ε)`` per node, ``D = ceil(log2(G + 1))``), prefix sums give the CDF, and a monotone
    projection makes it a valid CDF (:func:`dpuq.inference.aggregation._tree_cdf`).

    Privacy: ε-DP, δ = 0 (one subset's cell masses move by at most 2 in L1; ``D`` levels).
    Error: ``error_bound`` bounds the privacy noise uniformly over the grid with probability
    ``1 - beta`` (union and Chernoff bounds; it survives the projection).

    Parameters
    ----------
    grid : array-like of shape (G,), optional
        Public, strictly increasing thresholds. Default: ``n_grid`` points on ``[-2R, 2R]``
        (basic root) or ``[-6, 6]`` (studentized).
    root : {"basic", "studentized"}
        ``√n (θ̂ - θ)`` reversed as in :func:`private_bootstrap_cdf`, or the studentized mean
        ``√n (θ̂ - θ)/σ̂`` (statistic "mean" only).
    beta : float, default 0.05
        Failure probability of ``error_bound``.

    Other parameters are those of :func:`private_bootstrap_cdf`.

    Returns
    -------
    PrivateCDFGrid

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).uniform(0, 1, 5000)
    >>> est = private_bootstrap_cdf_grid(x, epsilon=1.0, bounds=(0, 1), random_state=0)
    >>> bool(np.all(np.diff(est.cdf) >= 0)), est.depth
    (True, 7)
    """
    data, bnds, eps, stat = _prepare(x, bounds, epsilon, statistic, trim, clip)
    root = _check_root(root)
    if root == "studentized" and stat.name != "mean":
        raise ValueError("root='studentized' is implemented for statistic='mean' only")
    b_fail = check_in_open_unit(beta, "beta")
    if grid is None:
        if isinstance(n_grid, bool) or not isinstance(n_grid, Integral) or n_grid < 1:
            raise ValueError(f"n_grid must be an integer >= 1, got {n_grid!r}")
        g = default_grid(bnds, root, check_grid_size(n_grid))
    else:
        g = check_array_1d(grid, "grid")
        check_grid_size(g.size, "the grid's size")  # each point costs an array column
        if np.any(np.diff(g) <= 0):
            raise ValueError("grid must be strictly increasing")
    rng = check_random_state(random_state)
    what = "private_bootstrap_cdf_grid"
    ensemble_plan(data.size, stat, n_subsets, eps, n_resamples, g.size + 1)  # its cells
    check_laplace_epsilon(eps, dim=tree_shape(g.size)[1])  # one Laplace value per tree node
    charge(
        ledger, dataset, eps, what=what, random_state=random_state,
        settings={"n": int(data.size), "statistic": stat.name, "grid": int(g.size)},
    )  # fmt: skip
    kernel = RootKernel(stat, root, grid=g)
    (masses,), res = ensemble_step(data, stat, n_subsets, eps, n_resamples, rng, kernel)
    s = res.n_subsets
    tree = _tree_cdf(masses, eps, rng)
    bound = tree_error_bound(g.size, tree.noise_scale, b_fail)
    report = _ensemble_report(
        res,
        "private bootstrap ensemble, all thresholds (Chadha et al. 2024, Theorem 2: tree "
        "mechanism + monotone projection)",
        eps,
        random_state is not None,
        f"2/s per tree level in L1, 2D/s = {2 * tree.depth / s:.6g} in total",
        statistic=str(stat),
        root=root,
        grid_points=g.size,
        depth=tree.depth,
        noise_scale=tree.noise_scale,
        error_bound=bound,
        beta=b_fail,
    )
    return PrivateCDFGrid(
        g,
        tree.cdf,
        tree.noisy,
        bound,
        b_fail,
        tree.noise_scale,
        tree.depth,
        root,
        stat.name,
        s,
        res.n_resamples,
        report,
    )
