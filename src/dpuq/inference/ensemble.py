"""The private bootstrap's shared path (Chadha et al. 2024): its results, the subsets' roots and
CDFs.

Every ensemble estimator (:mod:`dpuq.inference.bootstrap`, :mod:`dpuq.inference.studentized`,
the intervals of :mod:`dpuq.inference.intervals`) splits the data into ``s`` disjoint
subsets, bootstraps each (bag of little bootstraps), and aggregates per-subset values with
sensitivity ``1/s`` under replace-one (one person is in one subset). The resampling itself is
:mod:`dpuq.inference._resampling`; the private aggregation, :mod:`dpuq.inference.aggregation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from dpuq._validation import (
    MAX_RESAMPLES,
    as_real_array,
    check_array_1d,
    check_epsilon,
    check_grid_size,
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
from dpuq.inference._resampling import Resamples
from dpuq.inference._tiles import ArrayData, tile_plan
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.scale.sources import is_dask_collection

__all__ = [
    "DEFAULT_RESAMPLES",
    "PrivateCDF",
    "PrivateCDFGrid",
    "check_subset_work",
    "subset_bootstrap_cdfs",
    "subset_roots",
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
    check_grid_size(arr.size, f"the number of {name}")  # each one costs an array column
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


def _prepare(x, bounds, epsilon, statistic, trim, clip, method="ensemble"):
    eps = check_epsilon(epsilon)
    stat = parse_statistic(statistic, trim)
    if is_dask_collection(x):  # validated chunk-wise; per-subset work on the workers
        from dpuq.inference._dask import dask_interval_data

        data = dask_interval_data(x, bounds, clip=clip, statistic=stat.name, method=method)
    else:
        data, _ = check_data(x, bounds, clip=clip)
    return data, check_bounds(bounds), eps, stat


def ensemble_plan(
    n: int, stat, n_subsets, eps: float, n_resamples, thresholds: int = 1
) -> tuple[int, int]:
    """``(s, T)`` of the ensemble for public ``n``, every setting checked (data-free).

    Releases call it before their ledger charge, so that a settings error costs nothing:
    ``thresholds`` (the CDF's points, or a grid's cells) bound the ``T x thresholds``
    comparisons of a subset and the ``s x thresholds`` table of their results.
    """
    s = resolve_n_subsets(n_subsets, n, eps)
    b = n // s
    if stat.name == "trimmed_mean" and b - 2 * stat.n_trim(b) < 1:
        raise ValueError(f"trim={stat.trim} leaves no data in subsets of {b} points")
    tt = _resolve_resamples(n_resamples, DEFAULT_RESAMPLES)
    check_subset_work(s, tt)
    k = int(thresholds)
    for rows, name in ((tt, "n_resamples"), (s, "n_subsets")):
        check_work(rows * k, f"{name} x thresholds = {rows:,} x {k:,}",
                   "use fewer thresholds (t or the grid) or resamples")  # fmt: skip
    return s, tt


def check_subset_work(n_subsets: int, n_resamples: int) -> None:
    """Refuse ``subsets x resamples`` tables beyond :data:`dpuq._validation.MAX_WORK` cells."""
    check_work(
        n_subsets * n_resamples,
        f"n_subsets x n_resamples = {n_subsets:,} x {n_resamples:,}",
        "use fewer resamples (n_resamples) or fewer subsets (n_subsets, or a larger epsilon)",
    )


def _ensemble_report(
    res: Resamples, mechanism: str, epsilon: float, seeded: bool, sensitivity: str, **extra
) -> PrivacyReport:
    """The privacy report of an ensemble release (replace-one, δ = 0): its subsets and
    resamples from ``res``, then ``extra`` details."""
    return PrivacyReport(
        mechanism=mechanism,
        epsilon=epsilon,
        relation=Relation.REPLACE_ONE,
        seeded=seeded,
        sensitivity=sensitivity,
        details=_ensemble_details(res, **extra),
    )


def _ensemble_cdf(
    t: np.ndarray, noisy, root: str, statistic: str, res: Resamples, noise_scale, report
) -> PrivateCDF:
    """The released ensemble CDF at thresholds ``t``: ``noisy`` in the shape of ``t``, clipped
    to [0, 1] (post-processing)."""
    noisy = np.asarray(noisy).reshape(t.shape)
    return PrivateCDF(
        t,
        np.clip(noisy, 0.0, 1.0),
        noisy,
        "ensemble",
        root,
        statistic,
        res.n_subsets,
        res.n_resamples,
        noise_scale,
        report,
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
        "weight_groups": getattr(res, "n_groups", None) or res.weights.shape[0],
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
    kernel = RootKernel(stat, _check_root(root), thresholds=tv)
    (per_subset,), _ = ensemble_step(data, stat, n_subsets, eps, n_resamples, rng, kernel)
    return per_subset


# --- the per-subset step in tiles (dpuq.inference._tiles): in memory or on Dask ---------------


@dataclass(frozen=True)
class RootKernel:
    """Per-subset bootstrap CDFs of the ``root`` (``"basic"`` or ``"studentized"``,
    :func:`~dpuq.inference.ensemble.subset_roots`) at ``thresholds`` (shape ``(rows, k)``),
    or their masses on the cells of ``grid`` (shape ``(rows, G + 1)``)."""

    stat: Statistic
    root: str
    thresholds: np.ndarray | None = None
    grid: np.ndarray | None = None

    def __call__(self, rows, weights, gen, tile_rows: int, m: int):
        r, tt = rows.shape[0], weights.shape[0]
        roots = subset_roots(Resamples(rows[None], weights[None], r, m), self.stat, self.root)
        if self.thresholds is not None:
            return (_cdfs_at(roots, self.thresholds),)
        g1 = self.grid.size + 1
        cell = np.searchsorted(self.grid, roots, side="left")
        counts = np.bincount((np.arange(r)[:, None] * g1 + cell).ravel(), minlength=r * g1)
        return (counts.reshape(r, g1) / tt,)


def ensemble_step(data, stat: Statistic, n_subsets, epsilon: float, n_resamples, rng, kernel):
    """The per-subset step of the ensemble estimators (:mod:`dpuq.inference.bootstrap`,
    :mod:`dpuq.inference.studentized`) on validated data (a NumPy array or the Dask path's
    data object): ``(outputs, plan)``, resamples of size ``n``."""
    data = ArrayData(data) if isinstance(data, np.ndarray) else data
    n = data.size
    s, tt = ensemble_plan(n, stat, n_subsets, epsilon, n_resamples)
    partition, plan = tile_plan(n, s, tt, n, rng)
    return data.run_tiles(partition, plan, kernel), plan
