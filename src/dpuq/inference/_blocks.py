"""Block-wise sufficient statistics shared by the in-memory and the Dask paths (not private).

The private intervals depend on the data through a few statistics: the mean and plug-in
variance, and, per disjoint subset of the bag of little bootstraps, the subset's sorted values
and the weighted moments of its resamples. This module defines each of them on a fixed public
grid of blocks, so that the same numbers come out whether the data are one NumPy array or a
chunked Dask array (:mod:`dpuq.inference._dask`), bit for bit:

- sums are taken per block of :data:`BLOCK` consecutive values (NumPy's own sum) and the block
  sums are added exactly (``math.fsum``), so they do not depend on how a Dask array is chunked
  once it is rechunked to the block grid;
- the random partition into subsets is drawn per block: a seed from the caller's generator,
  the block compositions by sequential multivariate hypergeometric draws (exact), then a
  uniform permutation within each block. Together this is a uniformly random arrangement of
  the labels, i.e. the same law as ``rng.permutation(n)`` followed by a split;
- resample moments are products of ``(rows, b)`` tiles with the weights, computed tile by tile
  with a fixed tile shape and one BLAS thread (a BLAS product's rounding can depend on the
  matrix shape and on the number of threads, not on other rows' values).
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BLOCK",
    "TILE_ROWS",
    "PartitionPlan",
    "block_labels",
    "blocked_mean_variance",
    "one_blas_thread",
    "partition_plan",
    "sorted_subsets",
    "tile_moments",
    "tiles",
]

#: Values per block of the public block grid (sums, partition labels).
BLOCK = 1 << 20
#: Subsets per tile of the resample-moment products.
TILE_ROWS = 128


def block_bounds(n: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` of the block grid over ``range(n)``."""
    return [(i, min(n, i + BLOCK)) for i in range(0, n, BLOCK)]


def block_sum(values: np.ndarray) -> float:
    return float(np.sum(values))


def block_squared_deviation(values: np.ndarray, mean: float) -> float:
    d = values - mean
    return float(np.sum(d * d))


def blocked_mean_variance(x: np.ndarray) -> tuple[float, float]:
    """Mean and plug-in variance ``(1/n) Σ (x - mean)²`` on the block grid (two passes).

    Examples
    --------
    >>> blocked_mean_variance(np.array([1.0, 2.0, 3.0, 4.0]))
    (2.5, 1.25)
    """
    n = x.size
    bounds = block_bounds(n)
    mean = math.fsum(block_sum(x[a:b]) for a, b in bounds) / n
    var = math.fsum(block_squared_deviation(x[a:b], mean) for a, b in bounds) / n
    return mean, var


# --------------------------------------------------------------------------- the partition
@dataclass(frozen=True)
class PartitionPlan:
    """A uniformly random split of ``n`` positions into ``s`` subsets of ``b`` (label
    ``0..s-1``) and ``n - s b`` left over (label ``s``), described per block.

    ``counts[j, k]`` is how many positions of block ``j`` carry label ``k``; ``seed`` fixes
    the arrangement within each block. Data-independent: it is drawn from ``n``, ``s``, ``b``
    and the generator only.
    """

    n: int
    n_subsets: int
    subset_size: int
    seed: int
    counts: np.ndarray

    def block_labels(self, j: int) -> np.ndarray:
        """The labels of block ``j`` (a uniform arrangement of its counts)."""
        return block_labels(self.seed, j, self.counts[j])


def partition_plan(n: int, n_subsets: int, subset_size: int, rng) -> PartitionPlan:
    """Draw the partition's block compositions (one seed is taken from ``rng``)."""
    s, b = int(n_subsets), int(subset_size)
    seed = int(rng.integers(2**63))
    gen = np.random.default_rng([seed, 0])
    bounds = block_bounds(n)
    remaining = np.full(s + 1, b, dtype=np.int64)
    remaining[s] = n - s * b
    counts = np.empty((len(bounds), s + 1), dtype=np.int64)
    for j, (start, stop) in enumerate(bounds[:-1]):  # one draw per block of 2^20 values
        counts[j] = gen.multivariate_hypergeometric(remaining, stop - start)
        remaining -= counts[j]
    counts[-1] = remaining
    return PartitionPlan(n, s, b, seed, counts)


def block_labels(seed: int, j: int, counts: np.ndarray) -> np.ndarray:
    """Labels of block ``j``: a uniform arrangement (seeded by ``(seed, j)``) of ``counts[k]``
    copies of each label ``k``; needs only the block's own row of the plan."""
    gen = np.random.default_rng([seed, j + 1])
    return gen.permutation(np.repeat(np.arange(counts.size, dtype=np.int64), counts))


def group_rows(values: np.ndarray, labels: np.ndarray, lo: int, hi: int, b: int) -> np.ndarray:
    """The sorted subsets ``lo..hi-1`` from values and their labels: shape ``(hi - lo, b)``."""
    keep = (labels >= lo) & (labels < hi)
    v, lab = values[keep], labels[keep]
    order = np.argsort(lab, kind="stable")
    rows = v[order].reshape(hi - lo, b)
    rows.sort(axis=1)
    return rows


def sorted_subsets(x: np.ndarray, plan: PartitionPlan) -> np.ndarray:
    """All ``s`` subsets of ``x`` under ``plan``, each sorted: shape ``(s, b)``."""
    labels = np.concatenate([plan.block_labels(j) for j in range(plan.counts.shape[0])])
    return group_rows(x, labels, 0, plan.n_subsets, plan.subset_size)


# --------------------------------------------------------------------------- moments
def tiles(n_subsets: int, group_size: int) -> list[tuple[int, int, int]]:
    """``(group, lo, hi)`` tiles: subsets ``lo..hi-1`` all in weight group ``group``,
    at most ``min(TILE_ROWS, group_size)`` of them, aligned to the group's start."""
    r = min(TILE_ROWS, group_size)
    out = []
    for g0 in range(0, n_subsets, group_size):
        g_end = min(n_subsets, g0 + group_size)
        out.extend((g0 // group_size, lo, min(g_end, lo + r)) for lo in range(g0, g_end, r))
    return out


@functools.cache
def _blas_controller():
    """threadpoolctl's view of the loaded BLAS libraries, found once: finding them scans every
    loaded library, which per tile took most of an interval's time at small ε (1,000
    subsets: 3 s). None without threadpoolctl."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - installed with the dask and dev extras
        return None
    return ThreadpoolController()


@contextlib.contextmanager
def one_blas_thread():
    """Run BLAS on one thread inside the block (threadpoolctl; a no-op without it)."""
    controller = _blas_controller()
    if controller is None:  # pragma: no cover
        yield
        return
    with controller.limit(limits=1, user_api="blas"):
        yield


def tile_moments(rows: np.ndarray, weights: np.ndarray, tile_rows: int, n: int):
    """``(Σ_j W[t,j] x[r,j], Σ_j W[t,j] x[r,j]²) / n`` for one tile: two ``(rows, T)``.

    ``rows`` (at most ``tile_rows``) is zero-padded to ``tile_rows`` so that every tile is
    the same BLAS product. Call it inside :func:`one_blas_thread` (module docstring).
    """
    r, b = rows.shape
    stacked = np.zeros((2 * tile_rows, b))
    stacked[:r] = rows
    stacked[tile_rows : tile_rows + r] = rows * rows
    both = (stacked @ weights.T) / n
    return both[:r], both[tile_rows : tile_rows + r]
