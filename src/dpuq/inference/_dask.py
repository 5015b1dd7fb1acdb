"""Private confidence intervals on a Dask array: the statistics on the workers (not private).

:func:`dpuq.private_confidence_interval` with a Dask array calls :func:`dask_interval_data`;
the interval code (:mod:`dpuq.inference.interval_methods`) then asks the returned object, as
it asks :class:`dpuq.inference._tiles.ArrayData` in memory, for

- the mean and plug-in variance (block sums on the public block grid of
  :mod:`dpuq.inference._blocks`, added exactly);
- the median's candidate counts ``#{x < c_j}``, ``#{x <= c_j}`` on the public grid (integer
  counts summed over blocks), or the trimmed mean: its two order statistics by an exact
  radix selection on the values' bit patterns (histograms of 16-bit digits, a reduction),
  then block sums and counts;
- the per-subset results of a kernel (:mod:`dpuq.inference._tiles`): the same random
  partition (block compositions drawn on the client, labels generated per block on the
  workers), an all-to-all exchange that brings each subset's values to one task, and there
  the weights and the simulated noise drawn from the same derived generators as in memory.

What travels to the client: the validation counts, a few numbers per block, the candidates'
counts, and per subset one or two numbers (or a short histogram). The private step then runs
on the client with the same code as in memory, so the release is equal.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpuq.inference._blocks import (
    BLOCK,
    block_labels,
    block_squared_deviation,
    block_sum,
    group_rows,
)
from dpuq.inference._data import check_bounds, check_outside
from dpuq.inference._tiles import apply_tiles, median_counts, trim_parts
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
    if method == "naive":
        raise ValueError(
            "method='naive' (Algorithm 1, a baseline that is only (ε', δ)-DP) draws "
            "T = floor(sqrt(n ε)) resamples of size n with replacement from the whole sample: "
            "Θ(n^1.5) random reads across all chunks (10^12 at n = 10^8), which no chunk-wise "
            "reduction can avoid; use method='ensemble' (or 'ensemble_cdf') on Dask input"
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
        if clip:  # always, so the task graph does not depend on whether data were outside
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

    def median_counts(self, candidates: np.ndarray):
        """``(#{x < c_j}, #{x <= c_j})`` summed over blocks (exact integers)."""
        parts = [
            dask.delayed(_block_median_counts, pure=True)(blk, candidates)
            for blk in self.array.to_delayed().ravel()
        ]
        below, at_most = dask.compute(tree_reduce(parts, _sum_pairs))[0]
        return below, at_most

    def order_statistics(self, ranks) -> list[float]:
        """The values of the 0-based ``ranks`` in sorted order, exactly (radix selection)."""
        return [_select(self.array, int(r)) for r in ranks]

    def trim_parts(self, v_lo: float, v_hi: float) -> list:
        parts = [
            dask.delayed(trim_parts, pure=True)(blk, v_lo, v_hi)
            for blk in self.array.to_delayed().ravel()
        ]
        return list(dask.compute(*parts))

    def run_tiles(self, partition, plan, kernel) -> tuple:
        """``kernel`` on every tile of subsets, on the workers: per subset its outputs."""
        s = plan.n_subsets
        all_tiles = plan.tiles()
        blocks = self.array.to_delayed().ravel()
        n_out = max(1, min(len(all_tiles), len(blocks)))
        cuts = np.linspace(0, len(all_tiles), n_out + 1).round().astype(int)
        spans = [all_tiles[c0:c1] for c0, c1 in itertools.pairwise(cuts) if c1 > c0]
        edges = np.array([sp[0][1] for sp in spans] + [s])
        pieces = [  # each task gets only its block's row of the plan
            dask.delayed(_bucket, pure=True, nout=len(spans))(
                blk, partition.seed, j, partition.counts[j], edges
            )
            for j, blk in enumerate(blocks)
        ]
        outs = [
            dask.delayed(_span_apply, pure=True)([p[i] for p in pieces], sp, plan, kernel)
            for i, sp in enumerate(spans)
        ]
        results = dask.compute(*outs)
        return tuple(np.concatenate(parts) for parts in zip(*results, strict=True))


def _block_median_counts(values: np.ndarray, candidates: np.ndarray):
    below, at_most = median_counts(np.sort(np.asarray(values, dtype=float)), candidates)
    return below.astype(np.int64), at_most.astype(np.int64)


def _sum_pairs(parts: list):
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


# ---------------------------------------------------------------- exact selection
#: Bits per pass of the radix selection; a bucket with at most this many values is gathered.
_DIGIT_BITS = 16
_GATHER = 1 << 20


def _keys(values: np.ndarray) -> np.ndarray:
    """Order-preserving uint64 keys of float64 values (sign flip / bit inversion)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    neg = (bits >> np.uint64(63)).astype(bool)
    return np.where(neg, ~bits, bits | np.uint64(1 << 63))


def _from_key(key: int) -> float:
    k = np.uint64(key)
    bits = k & ~np.uint64(1 << 63) if k >> np.uint64(63) else ~k
    return float(np.array([bits], dtype=np.uint64).view(np.float64)[0])


def _digit_counts(values, prefix: int, shift: int) -> np.ndarray:
    """Histogram of the next digit of the keys whose bits above ``shift + 16`` equal
    ``prefix``."""
    keys = _keys(values)
    top = shift + _DIGIT_BITS
    if top < 64:
        keys = keys[(keys >> np.uint64(top)) == np.uint64(prefix)]
    digits = ((keys >> np.uint64(shift)) & np.uint64((1 << _DIGIT_BITS) - 1)).astype(np.int64)
    return np.bincount(digits, minlength=1 << _DIGIT_BITS)


def _sum_arrays(parts: list):
    return np.sum(np.stack(parts), axis=0)


def _matching(values, prefix: int, top: int) -> np.ndarray:
    keys = _keys(values)
    return keys[(keys >> np.uint64(top)) == np.uint64(prefix)] if top < 64 else keys


def _select(arr, rank: int) -> float:
    """The ``rank``-th smallest value (0-based) of a Dask array: 16-bit digits from the top,
    one histogram reduction per digit, until the bucket holding it is small enough to gather."""
    blocks = arr.to_delayed().ravel()
    prefix, top = 0, 64
    while top > 0:
        shift = top - _DIGIT_BITS
        parts = [dask.delayed(_digit_counts, pure=True)(b, prefix, shift) for b in blocks]
        (hist,) = dask.compute(tree_reduce(parts, _sum_arrays))
        cum = np.cumsum(hist)
        digit = int(np.searchsorted(cum, rank, side="right"))
        rank -= int(cum[digit - 1]) if digit else 0
        prefix, top = (prefix << _DIGIT_BITS) | digit, shift
        if hist[digit] <= _GATHER or top == 0:
            break
    parts = [dask.delayed(_matching, pure=True)(b, prefix, top) for b in blocks]
    keys = np.sort(np.concatenate(dask.compute(*parts)))
    return _from_key(int(keys[rank]))


def da_clip(arr, a: float, b: float):
    import dask.array as da

    return da.clip(arr, a, b)


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


def _span_apply(pieces: list, span: list, plan, kernel) -> tuple:
    """The kernel's outputs for the tiles of one span (one task)."""
    values = np.concatenate([p[0] for p in pieces])
    labels = np.concatenate([p[1] for p in pieces])
    lo, hi = span[0][1], span[-1][2]
    rows = group_rows(values, labels, lo, hi, plan.subset_size)
    return apply_tiles(rows, lo, span, plan, kernel)
