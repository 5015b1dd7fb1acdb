"""Private confidence intervals on a Dask array: the statistics on the workers (not private).

:func:`dpuq.private_confidence_interval` with a Dask array (statistic ``"mean"``, method
``"ensemble"``) calls :func:`dask_interval_data`; the interval code then asks the returned
object for

- the mean and plug-in variance (block sums on the public block grid of
  :mod:`dpuq.inference._blocks`, added exactly), and
- the per-subset bootstrap moments: the same random partition (block compositions drawn on
  the client, labels generated per block on the workers), an all-to-all exchange that brings
  each subset's values to one task, and the same tiled products with the same weights.

What travels to the client: the validation counts, two sums per block, and per subset its
mean and the ``T`` resample means and second moments. The noise is then drawn on the client
by the same code and in the same order as in memory, so the release is equal.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpuq.inference._blocks import (
    BLOCK,
    TILE_ROWS,
    block_labels,
    block_squared_deviation,
    block_sum,
    group_rows,
    one_blas_thread,
    partition_plan,
    tile_moments,
    tiles,
)
from dpuq.inference._data import check_bounds, check_outside
from dpuq.inference._resampling import MAX_WEIGHT_DRAWS
from dpuq.scale._dask import dask, to_dask_array, tree_reduce
from dpuq.scale.counts import check_numeric_dtype

__all__ = ["DaskIntervalData", "dask_interval_data"]


def _check_block(values: np.ndarray, a: float, b: float, clip: bool):
    """``(n, non-finite, outside, min, max, sum)`` of one block (the sum after clipping)."""
    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v)
    nonfinite = int(v.size - np.count_nonzero(finite))
    good = v if nonfinite == 0 else v[finite]
    outside = int(np.count_nonzero((good < a) | (good > b)))
    low = float(good.min()) if good.size else math.inf
    high = float(good.max()) if good.size else -math.inf
    total = block_sum(np.clip(v, a, b) if clip and outside else v) if not nonfinite else 0.0
    return [(v.size, nonfinite, outside, low, high, total)]


def _concat(parts: list) -> list:
    return [row for part in parts for row in part]


def dask_interval_data(x, bounds, *, clip: bool, statistic: str, method: str, name: str = "x"):
    """Validate a 1-d Dask array chunk-wise with the errors of ``check_data``."""
    if statistic != "mean" or method != "ensemble":
        raise ValueError(
            "on a Dask array, private_confidence_interval supports statistic='mean' with "
            f"method='ensemble'; got statistic={statistic!r}, method={method!r} (compute the "
            "other statistics in memory)"
        )
    if not isinstance(clip, bool | np.bool_):
        raise TypeError(f"clip must be True or False, got {clip!r}")
    return DaskIntervalData(x, check_bounds(bounds), bool(clip), name)


class DaskIntervalData:
    """A validated 1-d Dask array on the public block grid, with the interval's statistics."""

    def __init__(self, x, bounds: tuple[float, float], clip: bool, name: str = "x") -> None:
        arr = to_dask_array(x, name, ndim=1)
        check_numeric_dtype(arr.dtype, name)
        a, b = bounds
        arr = arr.astype(float).rechunk(BLOCK)  # the block grid of dpuq.inference._blocks
        parts = [
            dask.delayed(_check_block, pure=True)(blk, a, b, clip)
            for blk in arr.to_delayed().ravel()
        ]
        (rows,) = dask.compute(tree_reduce(parts, _concat))
        n = sum(r[0] for r in rows)
        nonfinite = sum(r[1] for r in rows)
        outside = sum(r[2] for r in rows)
        if n == 0:
            raise ValueError(f"{name} is empty")
        if nonfinite:  # no counts or extremes in messages: they depend on the data
            raise ValueError(f"{name} has non-finite value(s) (NaN or inf)")
        check_outside(outside, name, (a, b), clip, stacklevel=5)
        if outside:
            arr = da_clip(arr, a, b)
        self.array = arr
        self.size = int(n)
        self._sums = [r[5] for r in rows]

    def mean_variance(self) -> tuple[float, float]:
        """Mean and plug-in variance, exactly as :func:`~dpuq.inference._blocks.
        blocked_mean_variance` computes them in memory."""
        n = self.size
        mean = math.fsum(self._sums) / n
        parts = [
            dask.delayed(block_squared_deviation, pure=True)(blk, mean)
            for blk in self.array.to_delayed().ravel()
        ]
        sq = dask.compute(*parts)
        return mean, math.fsum(sq) / n

    def subset_moments(self, n_subsets: int, n_resamples: int, rng):
        """``(θ̂_k, m1, m2, K)`` like ``draw_resamples`` + ``mean_and_variance`` in memory:
        the same draws from ``rng`` (partition, then weights), in the same order."""
        n, s, t = self.size, int(n_subsets), int(n_resamples)
        b = n // s
        plan = partition_plan(n, s, b, rng)
        k = s if s * t * b <= MAX_WEIGHT_DRAWS else max(1, min(s, MAX_WEIGHT_DRAWS // (t * b)))
        weights = rng.multinomial(n, np.full(b, 1.0 / b), size=(k, t)).astype(float)
        group = math.ceil(s / k)
        all_tiles = tiles(s, group)
        blocks = self.array.to_delayed().ravel()
        n_out = max(1, min(len(all_tiles), 2 * len(blocks)))
        cuts = np.linspace(0, len(all_tiles), n_out + 1).round().astype(int)
        spans = [all_tiles[c0:c1] for c0, c1 in itertools.pairwise(cuts) if c1 > c0]
        edges = np.array([sp[0][1] for sp in spans] + [s])
        pieces = [  # each task gets only its block's row of the plan
            dask.delayed(_bucket, pure=True, nout=len(spans))(
                blk, plan.seed, j, plan.counts[j], edges
            )
            for j, blk in enumerate(blocks)
        ]
        w = _shared(weights)
        outs = [
            dask.delayed(_span_moments, pure=True)(
                [p[i] for p in pieces], sp, w, b, min(TILE_ROWS, group), n
            )
            for i, sp in enumerate(spans)
        ]
        results = dask.compute(*outs)
        theta = np.concatenate([r[0] for r in results])
        m1 = np.concatenate([r[1] for r in results])
        m2 = np.concatenate([r[2] for r in results])
        return theta, m1, np.maximum(m2 - m1 * m1, 0.0), k


def da_clip(arr, a: float, b: float):
    import dask.array as da

    return da.clip(arr, a, b)


def _shared(value):
    """``value`` once for all tasks: scattered to the workers when a distributed client is
    active (so it is not re-sent with every task), else one graph key."""
    try:
        from distributed import get_client

        return get_client().scatter(value, broadcast=True)
    except (ImportError, ValueError):
        return dask.delayed(value, pure=True)


def _bucket(values: np.ndarray, seed: int, j: int, counts: np.ndarray, edges) -> list:
    """Split block ``j`` by output span: ``[(values, labels), ...]``; left-overs dropped."""
    labels = block_labels(seed, j, counts)
    keep = labels < counts.size - 1
    v, lab = np.asarray(values, dtype=float)[keep], labels[keep]
    span = np.searchsorted(edges, lab, side="right") - 1
    order = np.argsort(span, kind="stable")
    bounds = np.searchsorted(span[order], np.arange(edges.size))
    v, lab = v[order], lab[order]
    return [
        (v[bounds[i] : bounds[i + 1]], lab[bounds[i] : bounds[i + 1]])
        for i in range(edges.size - 1)
    ]


def _span_moments(pieces: list, span: list, weights: np.ndarray, b: int, tile_rows: int, n: int):
    """Subset means and resample moments for the tiles of one span (one task)."""
    values = np.concatenate([p[0] for p in pieces])
    labels = np.concatenate([p[1] for p in pieces])
    lo, hi = span[0][1], span[-1][2]
    rows = group_rows(values, labels, lo, hi, b)
    theta = rows.mean(axis=-1)
    t = weights.shape[1]
    m1 = np.empty((hi - lo, t))
    m2 = np.empty_like(m1)
    with one_blas_thread():
        for g, t_lo, t_hi in span:
            m1[t_lo - lo : t_hi - lo], m2[t_lo - lo : t_hi - lo] = tile_moments(
                rows[t_lo - lo : t_hi - lo], weights[g], tile_rows, n
            )
    return theta, m1, m2
