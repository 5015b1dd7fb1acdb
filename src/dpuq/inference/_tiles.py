"""The per-subset step of the private intervals, tile by tile (not private; no release here).

The ensemble intervals (:mod:`dpuq.inference.interval_methods`) need, per disjoint subset of
the bag of little bootstraps, one or two numbers (the studentized half-width ``h_k``, the
asymmetry ``r_k``) or a short histogram of roots (``"ensemble_cdf"``). Computing them needs
the subset's sorted values, its resampling weights and the simulated noise of the
mechanisms folded into the root's law; none of that has to meet the other subsets. This module
runs that step on *tiles* (runs of at most :data:`~dpuq.inference._blocks.TILE_ROWS` subsets
inside one weight group) with randomness derived per piece
(:func:`dpuq.mechanisms.randomness.derived_generator`):

- the weights of weight group ``g`` come from ``(weight_seed, g)``;
- the simulated noise of the tile starting at subset ``lo`` comes from ``(noise_seed, lo)``.

The in-memory path (:class:`ArrayData`) and the Dask path (:mod:`dpuq.inference._dask`) call
the same kernels on the same tiles with the same generators, so a release on a Dask array
equals the in-memory one for the same ``random_state``; on Dask, the kernels run on the
workers and only the per-subset results (``s`` numbers, or ``s`` short histograms) reach the
client. The law is unchanged: independent weight rows per group and independent noise draws.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from dpuq.inference._blocks import (
    TILE_ROWS,
    PartitionPlan,
    block_bounds,
    block_sum,
    blocked_mean_variance,
    one_blas_thread,
    partition_plan,
    sorted_subsets,
    tile_moments,
    tiles,
)
from dpuq.inference._data import Statistic
from dpuq.inference._resampling import MAX_WEIGHT_DRAWS, Resamples, simulate_em_median
from dpuq.mechanisms.laplace import laplace_noise
from dpuq.mechanisms.randomness import bootstrap_weights, derive_seed, derived_generator

__all__ = [
    "ArrayData",
    "CdfKernel",
    "EnsembleKernel",
    "TilePlan",
    "apply_tiles",
    "median_counts",
    "tile_plan",
    "trim_parts",
    "trimmed_mean_from_parts",
]


# --------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class TilePlan:
    """Sizes and seeds of the per-subset step (data-independent; drawn from the generator)."""

    n_subsets: int
    subset_size: int
    n_resamples: int
    resample_size: int
    n_groups: int
    group_size: int
    weight_seed: int
    noise_seed: int

    @property
    def n(self) -> int:
        """The resample size (``Resamples.n``)."""
        return self.resample_size

    @property
    def tile_rows(self) -> int:
        return min(TILE_ROWS, self.group_size)

    def tiles(self) -> list[tuple[int, int, int]]:
        """``(group, lo, hi)`` of every tile (see :func:`dpuq.inference._blocks.tiles`)."""
        return tiles(self.n_subsets, self.group_size)

    def weights(self, group: int) -> np.ndarray:
        """The ``(T, b)`` weights of ``group`` (cached: tiles of one group share them)."""
        return _weights(
            self.weight_seed, group, self.resample_size, self.subset_size, self.n_resamples
        )

    def generator(self, lo: int) -> np.random.Generator:
        """The generator of the simulated noise of the tile starting at subset ``lo``."""
        return derived_generator(self.noise_seed, lo)


@functools.lru_cache(maxsize=2)
def _weights(seed: int, group: int, m: int, b: int, t: int) -> np.ndarray:
    w = bootstrap_weights(seed, group, m, b, t)
    w.setflags(write=False)
    return w


def tile_plan(
    n: int, n_subsets: int, n_resamples: int, resample_size: int, rng
) -> tuple[PartitionPlan, TilePlan]:
    """Draw the partition (one seed), then the weight seed and the noise seed, from ``rng``.

    ``K`` weight groups: every subset has its own weights when ``s T b`` cells fit in
    :data:`~dpuq.inference._resampling.MAX_WEIGHT_DRAWS`, else consecutive subsets share them
    (see :mod:`dpuq.inference._resampling`).
    """
    s, t = int(n_subsets), int(n_resamples)
    b = n // s
    partition = partition_plan(n, s, b, rng)
    k = s if s * t * b <= MAX_WEIGHT_DRAWS else max(1, min(s, MAX_WEIGHT_DRAWS // (t * b)))
    weight_seed = derive_seed(rng)
    noise_seed = derive_seed(rng)
    return partition, TilePlan(
        s, b, t, int(resample_size), k, math.ceil(s / k), weight_seed, noise_seed
    )


def apply_tiles(rows: np.ndarray, lo: int, span: list, plan: TilePlan, kernel) -> tuple:
    """Run ``kernel`` on the tiles of ``span`` (subsets ``lo..``, rows of ``rows``); the
    outputs concatenated along the subsets."""
    outs = []
    for g, t_lo, t_hi in span:
        outs.append(
            kernel(
                rows[t_lo - lo : t_hi - lo],
                plan.weights(g),
                plan.generator(t_lo),
                plan.tile_rows,
                plan.resample_size,
            )
        )
    return tuple(np.concatenate(parts) for parts in zip(*outs, strict=True))


# --------------------------------------------------------------------------- kernels
@dataclass(frozen=True)
class EnsembleKernel:
    """Per-subset ``(h_k, r_k)`` of the studentized ensemble (``r_k`` NaN when symmetric).

    ``θ̃*`` and ``σ̃*`` are the private estimate and variance simulated on each resample:
    Laplace noise of the released scales, or the exponential-mechanism median
    (:func:`~dpuq.inference._resampling.simulate_em_median`); ``var_margin`` and ``var_cap``
    are the studentizing variance's upper-bound margin and cap (``_safe_variance``).
    """

    stat: Statistic
    est_scale: float | None
    var_scale: float
    var_margin: float
    var_cap: float
    v_floor: float
    alpha: float
    symmetric: bool
    candidates: np.ndarray | None = None
    em_epsilon: float = 0.0

    def __call__(self, rows, weights, gen, tile_rows: int, m: int):
        r, tt = rows.shape[0], weights.shape[0]
        theta_k = self.stat.of_sorted(rows)[:, None]
        with one_blas_thread():
            m1, m2 = tile_moments(rows, weights, tile_rows, m)
        v_star = np.maximum(m2 - m1 * m1, 0.0)
        res = Resamples(rows[None], weights[None], r, m)
        if self.stat.name == "median":
            theta_star = simulate_em_median(res, self.candidates, self.em_epsilon, gen)
        else:
            raw = m1 if self.stat.name == "mean" else res.statistic(self.stat)
            theta_star = raw + laplace_noise(self.est_scale, size=(r, tt), random_state=gen)
        v_star = (v_star + laplace_noise(self.var_scale, v_star.shape, random_state=gen)) * (
            m / (m - 1)
        )
        v_star = np.minimum(self.var_cap, np.maximum(v_star, 0.0) + self.var_margin)
        v_star = np.maximum(v_star, self.v_floor)
        roots = math.sqrt(m) * (theta_star - theta_k) / np.sqrt(v_star)
        h_min = 1e-6 * float(ndtri(1.0 - self.alpha / 2.0))
        if self.symmetric:  # the symmetric bootstrap-t: the 1 - α quantile of |root|
            h_k = np.quantile(np.abs(roots), 1.0 - self.alpha, axis=1, method="normal_unbiased")
            return np.maximum(h_k, h_min), np.full(r, np.nan)
        lo_k, hi_k = np.quantile(
            roots, [self.alpha / 2.0, 1.0 - self.alpha / 2.0], axis=1, method="normal_unbiased"
        )
        h_k = np.maximum((hi_k - lo_k) / 2.0, h_min)
        return h_k, (hi_k + lo_k) / (2.0 * h_k)


@dataclass(frozen=True)
class CdfKernel:
    """Per-subset masses of the basic root ``√m (θ̂_k - θ*)`` on the cells of ``grid``
    (``searchsorted(grid, root, "left")``), shape ``(rows, G + 1)``; the median's ``θ*`` is the
    exponential mechanism simulated on the resample."""

    stat: Statistic
    grid: np.ndarray
    candidates: np.ndarray | None = None
    em_epsilon: float = 0.0

    def __call__(self, rows, weights, gen, tile_rows: int, m: int):
        r, tt = rows.shape[0], weights.shape[0]
        res = Resamples(rows[None], weights[None], r, m)
        theta_k = self.stat.of_sorted(rows)[:, None]
        if self.stat.name == "median":
            star = simulate_em_median(res, self.candidates, self.em_epsilon, gen)
        else:
            star = res.statistic(self.stat)
        roots = math.sqrt(m) * (theta_k - star)
        g1 = self.grid.size + 1
        cell = np.searchsorted(self.grid, roots, side="left")
        counts = np.bincount((np.arange(r)[:, None] * g1 + cell).ravel(), minlength=r * g1)
        return (counts.reshape(r, g1) / tt,)


# --------------------------------------------------------------------------- point statistics
def median_counts(sorted_values: np.ndarray, candidates: np.ndarray):
    """``(#{x < c_j}, #{x <= c_j})`` for sorted values: integers, so block counts add exactly."""
    return (
        np.searchsorted(sorted_values, candidates, side="left"),
        np.searchsorted(sorted_values, candidates, side="right"),
    )


def trim_parts(values: np.ndarray, v_lo: float, v_hi: float):
    """``(Σ x in (v_lo, v_hi), #{x <= v_lo}, #{x < v_hi})`` of one block."""
    v = np.asarray(values, dtype=float)
    mid = v[(v > v_lo) & (v < v_hi)]
    return block_sum(mid), int(np.count_nonzero(v <= v_lo)), int(np.count_nonzero(v < v_hi))


def trimmed_mean_from_parts(parts, n: int, k: int, v_lo: float, v_hi: float) -> float:
    """The mean of the order statistics ``k+1..n-k`` from per-block :func:`trim_parts`, with
    ``v_lo``, ``v_hi`` the ``(k+1)``-th and ``(n-k)``-th smallest values: the values strictly
    between them, plus the copies of each end value that fall inside the trimmed ranks."""
    if v_lo == v_hi:
        return float(v_lo)
    total = math.fsum(p[0] for p in parts)
    n_lo = sum(p[1] for p in parts) - k  # copies of v_lo among the kept ranks
    n_hi = (n - k) - sum(p[2] for p in parts)  # copies of v_hi among the kept ranks
    return math.fsum([total, n_lo * v_lo, n_hi * v_hi]) / (n - 2 * k)


class ArrayData:
    """A validated 1-d NumPy sample with the interface of the Dask path's data object."""

    def __init__(self, x: np.ndarray) -> None:
        self.array = x
        self.size = int(x.size)

    def mean_variance(self) -> tuple[float, float]:
        return blocked_mean_variance(self.array)

    def median_counts(self, candidates: np.ndarray):
        return median_counts(np.sort(self.array), candidates)

    def order_statistics(self, ranks) -> list[float]:
        """The values of 0-based ``ranks`` in sorted order."""
        part = np.partition(self.array, list(ranks))
        return [float(part[r]) for r in ranks]

    def trim_parts(self, v_lo: float, v_hi: float) -> list:
        return [trim_parts(self.array[a:b], v_lo, v_hi) for a, b in block_bounds(self.size)]

    def run_tiles(self, partition: PartitionPlan, plan: TilePlan, kernel) -> tuple:
        return apply_tiles(sorted_subsets(self.array, partition), 0, plan.tiles(), plan, kernel)


def exact_statistic(data, stat: Statistic, candidates: np.ndarray | None):
    """What :func:`~dpuq.inference.estimates._release_point_estimate` needs of the sample:
    the mean, the median's candidate counts, or the trimmed mean (order statistics, then
    block sums)."""
    if stat.name == "mean":
        return data.mean_variance()[0]
    if stat.name == "median":
        return data.median_counts(candidates)
    n, k = data.size, stat.n_trim(data.size)
    v_lo, v_hi = data.order_statistics([k, n - k - 1])
    return trimmed_mean_from_parts(data.trim_parts(v_lo, v_hi), n, k, v_lo, v_hi)
