"""Bag-of-little-bootstraps resampling, vectorised (not privacy-critical).

A subset of ``b`` points is resampled to size ``n`` by multinomial weights
``W ~ Multinomial(n, (1/b, ..., 1/b))`` (Kleiner et al. 2014): one row of weights is one
resample, and every statistic of a resample is a function of the subset's sorted points and
the weights. Nothing here loops over resamples or data points.

Weights are drawn from the caller's generator before and independently of the data values, so
two neighbouring data sets see the same permutation and the same weights (the privacy
arguments condition on them). When ``s * T * b`` exceeds :data:`MAX_WEIGHT_DRAWS`, subsets
share weight draws in ``K`` groups; this costs no privacy (the weights are data-independent)
and keeps each subset's bootstrap exact, but the Monte Carlo errors of subsets in one group are
correlated, so they average over ``K * T`` rather than ``s * T`` resamples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpuq.inference._blocks import (
    TILE_ROWS,
    one_blas_thread,
    partition_plan,
    sorted_subsets,
    tile_moments,
    tiles,
)
from dpuq.inference._data import Statistic
from dpuq.mechanisms.log_weights import sample_log_weights_rows

__all__ = ["MAX_WEIGHT_DRAWS", "Resamples", "draw_resamples", "simulate_em_median"]

#: Multinomial cells drawn at most per call before subsets share weights (about 0.3 s).
MAX_WEIGHT_DRAWS = 5_000_000


@dataclass
class Resamples:
    """Subsets (sorted within each) and their BLB resampling weights.

    ``xs`` has shape ``(K, m, b)``: ``K`` weight groups of ``m`` subsets of ``b`` sorted points
    (the last group is padded with copies of the last subset when ``K m > s``; padded rows are
    dropped by :meth:`unpad`). ``weights`` has shape ``(K, T, b)``; ``n`` is the resample size.
    """

    xs: np.ndarray
    weights: np.ndarray
    n_subsets: int
    n: int

    @property
    def subset_size(self) -> int:
        return self.xs.shape[-1]

    @property
    def n_resamples(self) -> int:
        return self.weights.shape[1]

    def unpad(self, a: np.ndarray) -> np.ndarray:
        """``(K, m, ...)`` -> ``(s, ...)``."""
        return a.reshape((-1, *a.shape[2:]))[: self.n_subsets]

    def subsets(self) -> np.ndarray:
        """The sorted subsets, shape ``(s, b)``."""
        return self.unpad(self.xs)

    def cumulative(self) -> np.ndarray:
        """Cumulative weights ``C[g, t, j] = sum_{i <= j} W[g, t, i]``, shape ``(K, T, b)``."""
        return np.cumsum(self.weights, axis=-1)

    def _apply(self, values: np.ndarray) -> np.ndarray:
        """``sum_j W[g, t, j] * values[g, m, j]`` -> ``(K, m, T)``."""
        return np.matmul(values, np.swapaxes(self.weights, 1, 2))

    def statistic(self, stat: Statistic) -> np.ndarray:
        """The statistic of every resample, shape ``(s, T)``."""
        n = self.n
        if stat.name == "mean":
            return self.unpad(self._apply(self.xs)) / n
        cum = self.cumulative()
        if stat.name == "median":
            ranks = [(n + 1) // 2] if n % 2 else [n // 2, n // 2 + 1]
            out = 0.0
            for r in ranks:  # the r-th smallest of the resample (1-based)
                j = np.count_nonzero(cum < r, axis=-1)  # (K, T)
                idx = np.broadcast_to(j[:, None, :], (*self.xs.shape[:2], j.shape[-1]))
                out = out + np.take_along_axis(self.xs, idx, axis=-1)
            return self.unpad(out / len(ranks))
        k = stat.n_trim(n)
        prev = cum - self.weights
        overlap = np.clip(np.minimum(cum, n - k) - np.maximum(prev, k), 0.0, None)
        return self.unpad(np.matmul(self.xs, np.swapaxes(overlap, 1, 2))) / (n - 2 * k)

    def mean_and_variance(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and plug-in variance ``(1/n) sum (x - mean)^2`` of every resample, ``(s, T)``.

        Products of the weights with the stacked ``[x, x^2]``.
        Computed tile by tile (:func:`dpuq.inference._blocks.tile_moments`), so that the Dask
        path (:mod:`dpuq.scale.intervals`) gets the same numbers bit for bit.
        """
        m = self.xs.shape[1]
        subsets = self.subsets()
        m1 = np.empty((self.n_subsets, self.n_resamples))
        m2 = np.empty_like(m1)
        with one_blas_thread():
            for g, lo, hi in tiles(self.n_subsets, m):
                m1[lo:hi], m2[lo:hi] = tile_moments(
                    subsets[lo:hi], self.weights[g], min(TILE_ROWS, m), self.n
                )
        return m1, np.maximum(m2 - m1 * m1, 0.0)


def draw_resamples(
    x: np.ndarray,
    n_subsets: int,
    n_resamples: int,
    rng: np.random.Generator,
    resample_size: int | None = None,
) -> Resamples:
    """Split ``x`` at random into ``s`` disjoint subsets of ``b = floor(n/s)`` points and draw
    BLB weights of total ``n`` for ``T`` resamples per subset (SPEC D, Algorithm 2, lines 1-5).

    ``resample_size`` (default ``n``) can be set to ``b``: the ordinary bootstrap of each
    subset, used for the median's interval (see :mod:`dpuq.inference.intervals`). The
    ``n - s b`` points left over enter no subset. The split is a uniformly random partition
    drawn block by block (:func:`dpuq.inference._blocks.partition_plan`, reproducible on a
    Dask array); randomness is drawn in a fixed order (partition, then weights) that does not
    depend on the data values.
    """
    n = x.size if resample_size is None else int(resample_size)
    s, t = int(n_subsets), int(n_resamples)
    b = x.size // s
    subsets = sorted_subsets(x, partition_plan(x.size, s, b, rng))
    if s * t * b <= MAX_WEIGHT_DRAWS:
        k = s
    else:
        k = max(1, min(s, MAX_WEIGHT_DRAWS // (t * b)))
    m = math.ceil(s / k)
    if k * m > s:
        pad = np.broadcast_to(subsets[-1], (k * m - s, b))
        subsets = np.concatenate([subsets, pad], axis=0)
    weights = rng.multinomial(n, np.full(b, 1.0 / b), size=(k, t)).astype(float)
    return Resamples(subsets.reshape(k, m, b), weights, s, n)


def _count_below(xs: np.ndarray, candidates: np.ndarray, *, strict: bool) -> np.ndarray:
    """Row-wise ``searchsorted``: ``#{xs[r] < c}`` (strict) or ``#{xs[r] <= c}``, exactly.

    A stable sort of each row of ``[candidates, data]`` (strict) or ``[data, candidates]``
    places ties so that a candidate's position minus its own index is the wanted count.
    """
    rows, b = xs.shape
    g = candidates.size
    cand = np.broadcast_to(candidates, (rows, g))
    if strict:
        merged, is_cand = np.concatenate([cand, xs], axis=1), lambda o: o < g
    else:
        merged, is_cand = np.concatenate([xs, cand], axis=1), lambda o: o >= b
    order = np.argsort(merged, axis=1, kind="stable")
    pos = np.nonzero(is_cand(order))[1].reshape(rows, g)
    return pos - np.arange(g)


def simulate_em_median(
    res: Resamples, candidates: np.ndarray, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    """Run the exponential-mechanism median (:func:`dpuq.inference.estimates.private_median`)
    on every resample: one exact draw per resample, shape ``(s, T)``.

    Used to fold the mechanism's noise into the bootstrap law (SPEC D, Proposition 2); this is
    part of the per-subset computation, not a release. On a resample ``X*`` the utility of a
    candidate ``c`` is ``-max(#{X* < c}, #{X* > c})``, which depends on ``c`` only through the
    pair ``(#{subset < c}, #{subset <= c})``; candidates sharing a pair are contiguous, so the
    mechanism is run exactly over at most ``2b + 1`` groups (log-weight ``log |group| +
    ε u / 2``, the exact rows sampler of :mod:`dpuq.mechanisms`), then uniformly inside the
    chosen group (exact bounded integers).
    """
    kk, m, b = res.xs.shape
    xs = res.xs.reshape(kk * m, b)  # padded subsets, sorted
    rows_n = xs.shape[0]
    g = candidates.size
    lo = _count_below(xs, candidates, strict=True)  # #{subset < c}, (rows, G)
    hi = _count_below(xs, candidates, strict=False)  # #{subset <= c}
    change = np.zeros((rows_n, g), dtype=bool)
    change[:, 1:] = (np.diff(lo, axis=1) != 0) | (np.diff(hi, axis=1) != 0)
    gid = np.cumsum(change, axis=1)  # group of each candidate
    n_groups = 2 * b + 1  # at most 2b + 1 groups; a fixed size keeps the draws data-independent
    flat_gid = (np.arange(rows_n)[:, None] * n_groups + gid).ravel()
    size = np.bincount(flat_gid, minlength=rows_n * n_groups).reshape(rows_n, n_groups)
    first = np.zeros((rows_n, n_groups), dtype=np.int64)
    r_idx, c_idx = np.nonzero(change)
    first[r_idx, gid[r_idx, c_idx]] = c_idx
    glo = np.take_along_axis(lo, first, axis=1)  # each group's (lo, hi), from its first member
    ghi = np.take_along_axis(hi, first, axis=1)
    log_size = np.where(size > 0, np.log(np.maximum(size, 1)), -np.inf)

    tt = res.n_resamples
    cum = res.cumulative()
    cum0 = np.concatenate([np.zeros((kk, tt, 1)), cum], axis=-1)  # (K, T, b+1)
    out = np.empty((kk, m, tt))
    per_group = tt * m * n_groups
    step = max(1, 8_000_000 // max(per_group, 1))  # groups per chunk: bounded memory
    for g0 in range(0, kk, step):  # one chunk unless the problem is large
        sl = slice(g0, min(kk, g0 + step))
        c = cum0[sl]  # (k, T, b+1)
        k = c.shape[0]
        shape = (k, tt, m * n_groups)
        lo_idx = np.broadcast_to(glo.reshape(kk, 1, m * n_groups)[sl], shape)
        hi_idx = np.broadcast_to(ghi.reshape(kk, 1, m * n_groups)[sl], shape)
        below = np.take_along_axis(c, lo_idx, axis=-1).reshape(k, tt, m, n_groups)
        above = res.n - np.take_along_axis(c, hi_idx, axis=-1).reshape(k, tt, m, n_groups)
        logw = log_size.reshape(kk, 1, m, n_groups)[sl] - 0.5 * epsilon * np.maximum(below, above)
        pick = sample_log_weights_rows(logw.reshape(-1, n_groups), rng).reshape(logw.shape[:-1])
        rows = (np.arange(g0, g0 + k)[:, None, None] * m + np.arange(m)[None, None, :]).repeat(
            tt, axis=1
        )
        start = first[rows, pick]
        width = size[rows, pick]
        j = start + rng.integers(0, width)  # exact uniform within the group
        out[sl] = np.swapaxes(candidates[np.minimum(j, g - 1)], 1, 2)
    return res.unpad(out)
