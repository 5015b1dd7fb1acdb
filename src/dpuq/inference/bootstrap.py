"""Private bootstrap estimates of the sampling law of a statistic (SPEC D).

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
import warnings
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from dpuq._validation import (
    MAX_RESAMPLES,
    as_real_array,
    check_array_1d,
    check_candidates,
    check_epsilon,
    check_grid_size,
    check_in_open_unit,
    check_size,
    check_work,
)
from dpuq.inference._data import (
    Statistic,
    check_bounds,
    check_data,
    parse_statistic,
    resolve_n_subsets,
)
from dpuq.inference._resampling import Resamples, draw_resamples
from dpuq.inference.aggregation import (
    private_average,
    private_clamped_mean,
    tree_cdf,
    tree_error_bound,
)
from dpuq.ledger import charge
from dpuq.mechanisms.laplace import laplace_release, laplace_scale
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.report import PrivacyReport, Relation

__all__ = [
    "DEFAULT_RESAMPLES",
    "NaivePrivacy",
    "PrivateCDF",
    "PrivateCDFGrid",
    "naive_bootstrap_privacy",
    "private_bootstrap_cdf",
    "private_bootstrap_cdf_grid",
    "private_studentized_cdf",
    "subset_bootstrap_cdfs",
]

#: Bootstrap resamples per subset when ``n_resamples="auto"`` (ensemble methods).
DEFAULT_RESAMPLES = 1000


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivateCDF:
    """Released estimate of a bootstrap CDF at the thresholds ``t``.

    Attributes
    ----------
    t : ndarray
        The thresholds (shape of the input; 0-d for a scalar).
    cdf : ndarray
        The estimate, clipped to [0, 1] (post-processing).
    noisy : ndarray
        The estimate before clipping.
    method, root, statistic : str
    n_subsets : int or None
        ``s`` (None for the naive method).
    n_resamples : int
        Resamples per subset (per data set for the naive method).
    noise_scale : float
        Laplace scale of the released noise (per threshold).
    privacy_report : PrivacyReport
    """

    t: np.ndarray
    cdf: np.ndarray
    noisy: np.ndarray
    method: str
    root: str
    statistic: str
    n_subsets: int | None
    n_resamples: int
    noise_scale: float
    privacy_report: PrivacyReport

    @property
    def value(self) -> float:
        """The estimate at a scalar threshold."""
        if self.cdf.ndim:
            raise ValueError("value is defined for a scalar t; use .cdf")
        return float(self.cdf)


@dataclass(frozen=True)
class PrivateCDFGrid:
    """Released CDF on a public grid with a uniform bound on its privacy noise.

    ``cdf`` is nondecreasing in [0, 1]; with probability at least ``1 - beta`` (over the
    privacy noise), ``max_j |cdf[j] - J*(grid[j])| <= error_bound``, where ``J*`` is the
    ensemble's CDF before noise (the average of the subsets' bootstrap CDFs). The bootstrap's
    own error (``J*`` against the true ``J_n``) is not part of this bound.
    """

    grid: np.ndarray
    cdf: np.ndarray
    noisy: np.ndarray
    error_bound: float
    beta: float
    noise_scale: float
    depth: int
    root: str
    statistic: str
    n_subsets: int
    n_resamples: int
    privacy_report: PrivacyReport


# --- shared pieces ------------------------------------------------------------------------------


def _resolve_resamples(n_resamples, default: int) -> int:
    if isinstance(n_resamples, str):
        if n_resamples != "auto":
            raise ValueError(f"n_resamples must be 'auto' or an integer >= 1, got {n_resamples!r}")
        return default
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, Integral | np.integer):
        raise TypeError(f"n_resamples must be 'auto' or an integer, got {n_resamples!r}")
    return check_size(
        n_resamples,
        "n_resamples",
        maximum=MAX_RESAMPLES,
        reason="the Monte Carlo error is then far below the privacy noise",
    )


def _check_thresholds(t, name: str = "t") -> np.ndarray:
    arr = as_real_array(t, name)
    if arr.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-d array, got shape {arr.shape}")
    check_array_1d(arr.reshape(-1), name)
    return arr


def _check_root(root: str) -> str:
    if root not in ("basic", "studentized"):
        raise ValueError(f"root must be 'basic' or 'studentized', got {root!r}")
    return root


def subset_roots(res: Resamples, stat: Statistic, root: str) -> np.ndarray:
    """Per-subset bootstrap roots, shape ``(s, T)`` (not a release).

    ``basic``: ``√n (θ̂_k - θ̂*)`` (Algorithm 2, line 6). ``studentized`` (mean only):
    ``√n (θ̂* - θ̂_k)/σ̂*`` with ``σ̂*`` the resample's standard deviation (eq. 3); a resample
    with ``σ̂* = 0`` gives ``±inf`` (or 0 when its mean equals ``θ̂_k``).
    """
    n = res.n
    theta_k = stat.of_sorted(res.subsets())[:, None]
    if root == "basic":
        return math.sqrt(n) * (theta_k - res.statistic(stat))
    mean, var = res.mean_and_variance()
    sd = np.sqrt(var * (n / (n - 1)))
    num = math.sqrt(n) * (mean - theta_k)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / sd
    return np.where(num == 0.0, 0.0, out)


def _cdfs_at(roots: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``F_k(t_j) = #{roots_k <= t_j} / T`` for every subset, shape ``(s, k)``."""
    s, tt = roots.shape
    order = np.argsort(t)
    ts = t[order]
    cell = np.searchsorted(ts, roots, side="left")  # roots <= ts[j] <=> cell <= j
    counts = np.bincount(
        (np.arange(s)[:, None] * (ts.size + 1) + cell).ravel(), minlength=s * (ts.size + 1)
    ).reshape(s, ts.size + 1)
    cdf_sorted = np.cumsum(counts, axis=1)[:, :-1] / tt
    out = np.empty_like(cdf_sorted)
    out[:, order] = cdf_sorted
    return out


def _prepare(x, bounds, epsilon, statistic, trim, clip):
    eps = check_epsilon(epsilon)
    stat = parse_statistic(statistic, trim)
    data, _ = check_data(x, bounds, clip=clip)
    return data, check_bounds(bounds), eps, stat


def _ensemble_resamples(data, stat, n_subsets, eps, n_resamples, rng):
    s = resolve_n_subsets(n_subsets, data.size, eps)
    b = data.size // s
    if stat.name == "trimmed_mean" and b - 2 * stat.n_trim(b) < 1:
        raise ValueError(f"trim={stat.trim} leaves no data in subsets of {b} points")
    tt = _resolve_resamples(n_resamples, DEFAULT_RESAMPLES)
    check_subset_work(s, tt)
    return draw_resamples(data, s, tt, rng)


def check_subset_work(n_subsets: int, n_resamples: int) -> None:
    """Refuse ``subsets x resamples`` tables beyond :data:`dpuq._validation.MAX_WORK` cells."""
    check_work(
        n_subsets * n_resamples,
        f"n_subsets x n_resamples = {n_subsets:,} x {n_resamples:,}",
        "use fewer resamples (n_resamples) or fewer subsets (n_subsets, or a larger epsilon)",
    )


def _ensemble_details(res: Resamples, **extra) -> dict:
    n = res.n
    s, b = res.n_subsets, res.subset_size
    return {
        "n": n,
        "n_subsets": s,
        "subset_size": b,
        "unused_points": n - s * b,
        "n_resamples": res.n_resamples,
        "resample_size": n,
        "weight_groups": res.weights.shape[0],
        **extra,
    }


def subset_bootstrap_cdfs(
    x,
    t,
    *,
    n_subsets,
    bounds,
    epsilon: float = 1.0,
    statistic: str = "mean",
    trim: float = 0.1,
    root: str = "basic",
    n_resamples="auto",
    random_state: RandomState = None,
) -> np.ndarray:
    """The subsets' bootstrap CDFs at ``t`` before any noise, shape ``(s, k)`` (not private).

    For audits and tests: with the same ``random_state`` this draws the same shuffle and
    weights as :func:`private_bootstrap_cdf` (``method="ensemble"``), whose released value is
    the column mean of this array plus Laplace noise. ``epsilon`` only matters for
    ``n_subsets="auto"``.
    """
    data, _, eps, stat = _prepare(x, bounds, epsilon, statistic, trim, False)
    tv = _check_thresholds(t).reshape(-1)
    rng = check_random_state(random_state)
    res = _ensemble_resamples(data, stat, n_subsets, eps, n_resamples, rng)
    return _cdfs_at(subset_roots(res, stat, _check_root(root)), tv)


# --- Algorithm 1: the naive private bootstrap, and the privacy it actually has ----------------


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
    """The (ε', δ)-DP guarantee of Algorithm 1 (SPEC D), computed rigorously.

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
    """Private bootstrap estimate of ``J_n(t) = P(√n (θ - θ̂) <= t)`` (SPEC D).

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
        ``s``; ``"auto"`` is ``floor(sqrt(n/ε))`` (SPEC D).
    n_resamples : "auto" or int
        ``T``; auto: 1000 per subset (ensemble), ``floor(sqrt(n ε))`` (naive).
    delta : float, default 1e-6
        The δ at which the naive method's ε' is reported (ignored by the ensemble).
    clip : bool, default False
        Clip data outside ``bounds`` (a warning says so, without a count).
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
    data, bnds, eps, stat = _prepare(x, bounds, epsilon, statistic, trim, clip)
    tarr = _check_thresholds(t)
    tv = tarr.reshape(-1)
    rng = check_random_state(random_state)
    n = data.size
    what, seeded = f"private_bootstrap_cdf ({method})", random_state is not None
    if method == "ensemble":
        charge(ledger, dataset, eps, what=what, seeded=seeded)
        res = _ensemble_resamples(data, stat, n_subsets, eps, n_resamples, rng)
        per_subset = _cdfs_at(subset_roots(res, stat, "basic"), tv)
        noisy, scale = private_average(per_subset, eps, rng)
        s = res.n_subsets
        report = PrivacyReport(
            mechanism="private bootstrap ensemble (SPEC D, Algorithm 2)",
            epsilon=eps,
            relation=Relation.REPLACE_ONE,
            seeded=random_state is not None,
            sensitivity=f"1/s = {1 / s:.6g} per threshold ({tv.size}/s in L1 over "
            f"{tv.size} threshold(s))",
            details=_ensemble_details(res, statistic=str(stat), noise_scale=scale),
        )
        return PrivateCDF(
            tarr,
            np.clip(noisy, 0.0, 1.0).reshape(tarr.shape),
            noisy.reshape(tarr.shape),
            "ensemble",
            "basic",
            stat.name,
            s,
            res.n_resamples,
            scale,
            report,
        )
    if method != "naive":
        raise ValueError(f"method must be 'ensemble' or 'naive', got {method!r}")
    if stat.name == "median":
        raise ValueError(
            "method='naive' needs a statistic whose change per appearance of a record is "
            "bounded by R/n (mean, trimmed mean); the median's is R. Use method='ensemble'"
        )
    tt = _resolve_resamples(n_resamples, max(1, math.floor(math.sqrt(n * eps))))
    priv = naive_bootstrap_privacy(n, eps, tt, delta)
    charge(ledger, dataset, priv.epsilon, delta=priv.delta, what=what, seeded=seeded)
    theta_tilde, theta_star, scale0, scale_i = _naive_release(data, bnds, stat, eps, tt, rng)
    roots = math.sqrt(n) * (theta_tilde - theta_star)
    est = (roots[None, :] <= tv[:, None]).mean(axis=1)
    report = PrivacyReport(
        mechanism="naive private bootstrap (SPEC D, Algorithm 1)",
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
    """Private bootstrap CDF at every point of a public grid at once (SPEC D, Theorem 2).

    The ensemble of :func:`private_bootstrap_cdf` gives each subset's bootstrap mass in the
    ``G + 1`` cells of the grid; their average is released through a binary tree (Laplace
    ``2D/(s ε)`` per node, ``D = ceil(log2(G + 1))``), prefix sums give the CDF, and a monotone
    projection makes it a valid CDF (:func:`dpuq.inference.aggregation.tree_cdf`).

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
        if np.any(np.diff(g) <= 0):
            raise ValueError("grid must be strictly increasing")
    rng = check_random_state(random_state)
    what = "private_bootstrap_cdf_grid"
    charge(ledger, dataset, eps, what=what, seeded=random_state is not None)
    res = _ensemble_resamples(data, stat, n_subsets, eps, n_resamples, rng)
    roots = subset_roots(res, stat, root)
    s, tt = roots.shape
    cell = np.searchsorted(g, roots, side="left")
    masses = (
        np.bincount(
            (np.arange(s)[:, None] * (g.size + 1) + cell).ravel(), minlength=s * (g.size + 1)
        ).reshape(s, g.size + 1)
        / tt
    )
    tree = tree_cdf(masses, eps, rng)
    bound = tree_error_bound(g.size, tree.noise_scale, b_fail)
    report = PrivacyReport(
        mechanism="private bootstrap ensemble, all thresholds (SPEC D, Theorem 2: tree "
        "mechanism + monotone projection)",
        epsilon=eps,
        relation=Relation.REPLACE_ONE,
        seeded=random_state is not None,
        sensitivity=f"2/s per tree level in L1, 2D/s = {2 * tree.depth / s:.6g} in total",
        details=_ensemble_details(
            res,
            statistic=str(stat),
            root=root,
            grid_points=g.size,
            depth=tree.depth,
            noise_scale=tree.noise_scale,
            error_bound=bound,
            beta=b_fail,
        ),
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
        tt,
        report,
    )


def studentized_half_width(m: float, n: int, b: int, n_resamples: int) -> float:
    """Default clamping half-width for a subset CDF value near ``m`` (studentized root).

    ``4 sqrt(m (1 - m)/T)`` covers the subsets' Monte Carlo spread; ``1/sqrt(n b)`` their
    spread from the data (the studentized root's subset CDFs differ by ``O(1/sqrt(n b))``,
    Theorem 3); ``1/T`` keeps the window open at ``m`` in {0, 1}.
    """
    mm = min(max(m, 0.0), 1.0)
    return (
        4.0 * math.sqrt(mm * (1.0 - mm) / n_resamples)
        + 1.0 / math.sqrt(n * b)
        + (1.0 / n_resamples)
    )


def private_studentized_cdf(
    x,
    t,
    *,
    epsilon: float,
    bounds,
    n_subsets="auto",
    n_resamples="auto",
    half_width="auto",
    median_share: float = 0.5,
    n_candidates: int = 201,
    clip: bool = False,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PrivateCDF:
    """Private estimate of the studentized mean's CDF ``P(√n (x̄ - θ)/σ̂ <= t)`` (SPEC D,
    Theorem 3).

    Each subset's bootstrap CDF of ``√n (x̄* - x̄_k)/σ̂*`` at ``t`` is computed as in the
    ensemble; because the studentized root is nearly pivotal these ``s`` values lie close
    together, and they are aggregated by :func:`dpuq.inference.aggregation.private_clamped_mean`:
    a private median over ``n_candidates`` points of [0, 1] (``median_share`` of the budget)
    and the mean clamped to ``median ± half_width`` plus ``Laplace(2 half_width/(s ε_mean))``.
    Sensitivity ``2 half_width/s`` instead of ``1/s``: the noise is far smaller when the window
    is narrow.

    Privacy: ε-DP, δ = 0 (sequential composition of the median and the clamped mean; one
    subset per record). ``k`` thresholds share ε equally (ε/k each).

    Parameters
    ----------
    half_width : "auto", float or callable
        Clamping half-width, or a function of the released median. Auto:
        :func:`studentized_half_width` (Monte Carlo and data spread of the subsets' values).
        Values outside the window are clamped, which biases the estimate: a wider window
        trades that bias for noise.
    median_share : float, default 0.5
        Share of each threshold's ε spent on the private median.
    n_candidates : int, default 201
        Candidates of the private median, equally spaced in [0, 1].

    Other parameters are those of :func:`private_bootstrap_cdf`.

    Returns
    -------
    PrivateCDF
        ``noise_scale`` is the largest Laplace scale used over the thresholds.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).uniform(0, 1, 20000)
    >>> est = private_studentized_cdf(x, 1.96, epsilon=1.0, bounds=(0, 1), random_state=0)
    >>> abs(est.value - 0.975) < 0.02
    True
    """
    data, _, eps, stat = _prepare(x, bounds, epsilon, "mean", 0.0, clip)
    tarr = _check_thresholds(t)
    tv = tarr.reshape(-1)
    rng = check_random_state(random_state)
    what = "private_studentized_cdf"
    charge(ledger, dataset, eps, what=what, seeded=random_state is not None)
    res = _ensemble_resamples(data, stat, n_subsets, eps, n_resamples, rng)
    per_subset = _cdfs_at(subset_roots(res, stat, "studentized"), tv)
    n, b, tt = data.size, res.subset_size, res.n_resamples
    if isinstance(half_width, str):
        if half_width != "auto":
            raise ValueError(
                f"half_width must be 'auto', a number or a callable, got {half_width!r}"
            )
        width = lambda m: studentized_half_width(m, n, b, tt)  # noqa: E731
    else:
        width = half_width
    cand = np.linspace(0.0, 1.0, check_candidates(n_candidates))
    eps_each = eps / tv.size
    share = check_in_open_unit(median_share, "median_share")
    # The median lands outside the subsets' values with probability at most
    # G exp(-ε_med s / 4) (exponential-mechanism accuracy: a candidate beyond every value
    # has utility -s, the median about -s/2); then the clamped mean is badly biased.
    far = cand.size * math.exp(-eps_each * share * res.n_subsets / 4.0)
    if far > 0.05:
        warnings.warn(
            f"the private median of the subsets' values may miss them (probability up to "
            f"{min(far, 1.0):.2g}): s = {res.n_subsets} subsets with epsilon "
            f"{eps_each * share:.3g} for the median; use fewer thresholds, a larger epsilon or "
            "more data",
            stacklevel=2,
        )
    out = np.empty(tv.size)
    scales, centers, widths = [], [], []
    for j in range(tv.size):  # one clamped mean per threshold (a handful)
        cm = private_clamped_mean(
            per_subset[:, j],
            epsilon=eps_each,
            half_width=width,
            candidates=cand,
            median_share=share,
            rng=rng,
        )
        out[j] = cm.value
        scales.append(cm.noise_scale)
        centers.append(cm.center)
        widths.append(cm.half_width)
    report = PrivacyReport(
        mechanism="studentized private bootstrap ensemble (SPEC D, Theorem 3): private "
        "median + clamped mean",
        epsilon=eps,
        relation=Relation.REPLACE_ONE,
        seeded=random_state is not None,
        sensitivity="per threshold: median utility 1; clamped mean 2 w/s "
        f"(w = {max(widths):.4g} at most)",
        details=_ensemble_details(
            res,
            statistic="mean (studentized)",
            epsilon_per_threshold=eps_each,
            median_share=median_share,
            released_medians=", ".join(f"{c:.4g}" for c in centers),
            half_widths=", ".join(f"{w:.4g}" for w in widths),
        ),
    )
    return PrivateCDF(
        tarr,
        np.clip(out, 0.0, 1.0).reshape(tarr.shape),
        out.reshape(tarr.shape),
        "ensemble",
        "studentized",
        "mean",
        res.n_subsets,
        tt,
        max(scales),
        report,
    )
