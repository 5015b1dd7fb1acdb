"""Bag-of-little-bootstraps resampling, vectorised (not privacy-critical).

A subset of ``b`` points is resampled to size ``n`` by multinomial weights
``W ~ Multinomial(n, (1/b, ..., 1/b))`` (Kleiner et al. 2014): one row of weights is one
resample, and every statistic of a resample is a function of the subset's sorted points and
the weights. Nothing here loops over resamples or data points.

Weights are drawn (per weight group, from generators derived from the caller's generator:
:func:`dpuq.mechanisms.randomness.bootstrap_weights`, planned by
:func:`dpuq.inference._tiles.tile_plan`) before and independently of the data values, so two
neighbouring data sets see the same permutation and the same weights (the privacy
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
    tile_moments,
    tiles,
)
from dpuq.inference._data import Statistic
from dpuq.mechanisms.windowed import windowed_exponential_mechanism

__all__ = ["MAX_WEIGHT_DRAWS", "Resamples", "simulate_em_median"]

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
        path (:mod:`dpuq.inference._dask`) gets the same numbers bit for bit.
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


#: Candidates x pairs handled per chunk of :func:`simulate_em_median` (bounds its memory).
_EM_CHUNK = 1_000_000

#: The window of :func:`simulate_em_median` holds the candidates within ``D`` resample ranks of
#: the best, ``D`` the least integer with ``(ε/2)(D + 1) >= ln G + _EM_WINDOW_SLACK``: outside
#: candidates then carry at most ``e^-slack`` of the proposal mass (rejection is rare).
_EM_WINDOW_SLACK = 3.0


def _window_ranks(epsilon: float, n_candidates: int, n: int) -> int:
    """``D``: the least integer >= 0 with ``(ε/2)(D + 1) >= ln G + slack``, at most ``n``."""
    need = 2.0 * (math.log(n_candidates) + _EM_WINDOW_SLACK) / epsilon
    return int(min(n, max(0, math.ceil(need) - 1)))


def _rank_tables(xs: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``lo[i, j] = #{xs[i] < c_j}`` and ``hi[i, j] = #{xs[i] <= c_j}``, shape ``(rows, G)``.

    A point ``x`` is below ``c_j`` iff fewer than ``j + 1`` candidates are ``<= x``: one
    ``searchsorted`` of all points into the (shared) sorted grid, then per-row cumulative counts.
    """
    rows, _ = xs.shape
    g = candidates.size
    offset = (np.arange(rows) * (g + 1))[:, None]
    tables = []
    for side in ("right", "left"):
        k = np.searchsorted(candidates, xs, side=side) + offset
        counts = np.bincount(k.ravel(), minlength=rows * (g + 1)).reshape(rows, g + 1)
        tables.append(np.cumsum(counts, axis=1)[:, :g])
    return tables[0], tables[1]


def _em_median_rows(res, candidates, epsilon, d_ranks, j_med, cum0, rows_slice, rng):
    """Exact EM-median draws for the resamples of the (padded) subsets in ``rows_slice``.

    Candidates with the same ``(#{subset < c}, #{subset <= c})`` score alike on every resample
    of the subset: they form contiguous *groups* (at most ``min(G, 2b + 1)`` per subset), and
    the window search and the draw run over groups.
    """
    kk, m, b = res.xs.shape
    tt, n, g = res.n_resamples, res.n, candidates.size
    xs = res.xs.reshape(kk * m, b)[rows_slice]
    n_rows = xs.shape[0]
    lo_tab, hi_tab = _rank_tables(xs, candidates)
    opens = np.ones((n_rows, g), dtype=bool)
    opens[:, 1:] = (np.diff(lo_tab, axis=1) != 0) | (np.diff(hi_tab, axis=1) != 0)
    gid = np.cumsum(opens, axis=1) - 1  # group of each candidate within its row
    n_groups = gid[:, -1] + 1
    g_off = np.cumsum(n_groups) - n_groups  # row -> offset of its groups in the flat arrays
    g_row, g_first = np.nonzero(opens)  # row-major: groups in order
    last_in_row = np.append(g_row[1:] != g_row[:-1], True)
    g_size = np.where(last_in_row, g, np.append(g_first[1:], g)) - g_first
    g_lo, g_hi = lo_tab[g_row, g_first], hi_tab[g_row, g_first]

    r0 = rows_slice.start
    pr = np.repeat(np.arange(n_rows), tt)  # pair -> local row
    pt = np.tile(np.arange(tt), n_rows)  # pair -> resample
    pg = (r0 + pr) // m  # pair -> weight group
    base = (pg * tt + pt) * (b + 1)
    cum_flat = cum0.reshape(-1)

    def score_at(pairs, lo_idx, hi_idx):
        below = cum_flat[base[pairs] + lo_idx]
        above = n - cum_flat[base[pairs] + hi_idx]
        return np.maximum(below, above)

    def score(pairs, j):
        """``max(#{X* < c_j}, #{X* > c_j})`` (minus the utility) of pairs at candidates j."""
        return score_at(pairs, lo_tab[pr[pairs], j], hi_tab[pr[pairs], j])

    def score_group(pairs, k):
        flat = g_off[pr[pairs]] + k
        return score_at(pairs, g_lo[flat], g_hi[flat])

    every = np.arange(pr.size)
    # The score is quasi-convex in c: it equals #{X* > c} left of the lower median of the
    # resample and #{X* < c} right of its upper median, so its minimum is at one of the grid
    # points bracketing the two medians (any point strictly between them scores the same).
    lm = xs[pr, j_med[0][pg, pt]]
    um = xs[pr, j_med[1][pg, pt]]
    q1 = np.searchsorted(candidates, lm, side="left") - 1
    q3 = np.searchsorted(candidates, um, side="right") - 1
    probes = np.clip(np.stack([q1, q1 + 1, q1 + 2, q3, q3 + 1]), 0, g - 1)
    scores = np.stack([score(every, p) for p in probes])
    best = np.argmin(scores, axis=0)
    u_star = scores[best, every]
    k_star = gid[pr, probes[best, every]]
    limit = u_star + d_ranks
    # the window {groups : score <= u* + D} is an interval around k*: two binary searches
    left_lo, left_hi = np.zeros_like(k_star), k_star.copy()
    right_lo, right_hi = k_star.copy(), n_groups[pr] - 1
    while True:
        act_l = np.flatnonzero(left_lo < left_hi)
        act_r = np.flatnonzero(right_lo < right_hi)
        if act_l.size == 0 and act_r.size == 0:
            break
        mid = (left_lo[act_l] + left_hi[act_l]) // 2
        ok = score_group(act_l, mid) <= limit[act_l]
        left_hi[act_l] = np.where(ok, mid, left_hi[act_l])
        left_lo[act_l] = np.where(ok, left_lo[act_l], mid + 1)
        mid = (right_lo[act_r] + right_hi[act_r] + 1) // 2
        ok = score_group(act_r, mid) <= limit[act_r]
        right_lo[act_r] = np.where(ok, mid, right_lo[act_r])
        right_hi[act_r] = np.where(ok, right_hi[act_r], mid - 1)
    k_lo, n_units = left_lo, right_lo - left_lo + 1
    half = 0.5 * epsilon
    pick = np.empty(pr.size, dtype=np.int64)
    ends = np.cumsum(n_units)
    cuts = np.searchsorted(ends, np.arange(_EM_CHUNK, ends[-1], _EM_CHUNK), side="right")
    for sel in np.split(every, np.unique(cuts)):  # pieces of at most ~_EM_CHUNK groups
        if sel.size == 0:
            continue
        nu = n_units[sel]
        flat_pair = np.repeat(sel, nu)
        k = np.repeat(k_lo[sel], nu) + np.arange(flat_pair.size) - np.repeat(np.cumsum(nu) - nu, nu)
        flat_group = g_off[pr[flat_pair]] + k
        lw_in = -half * (score_group(flat_pair, k) - u_star[flat_pair])
        bound = np.full(sel.size, -half * (d_ranks + 1))

        def outside(rows, j, sel=sel):
            return -half * (score(sel[rows], j) - u_star[sel[rows]])

        pick[sel] = windowed_exponential_mechanism(
            lw_in, nu, g_first[flat_group], g_size[flat_group], g, bound, outside, rng
        )
    return candidates[pick].reshape(n_rows, tt)


def simulate_em_median(
    res: Resamples, candidates: np.ndarray, epsilon: float, rng: np.random.Generator
) -> np.ndarray:
    """Run the exponential-mechanism median (:func:`dpuq.inference.estimates.private_median`)
    on every resample: one exact draw per resample, shape ``(s, T)``.

    Used to fold the mechanism's noise into the bootstrap law (Chadha et al. 2024,
    Proposition 2); this is part of the per-subset computation, not a release. On a resample
    ``X*`` the utility of a
    candidate ``c`` is ``-max(#{X* < c}, #{X* > c})``: counts read off the resample's cumulative
    weights at ``#{subset < c}`` and ``#{subset <= c}``. The score is quasi-convex in ``c``, so
    the candidates within ``D`` ranks of the best form an interval found by binary search; the
    draw is exact rejection sampling over that window and a uniform bound outside it
    (:func:`dpuq.mechanisms.windowed.windowed_exponential_mechanism`, same law as the
    mechanism). Time ``O(s T (log G + W))`` for windows of ``W`` candidates (``W`` small when
    ``ε`` times the subset's spread in ranks is large), memory ``O(n + chunk)``: no
    ``subsets x candidates x resamples`` array is formed.
    """
    kk, m, _ = res.xs.shape
    tt, g = res.n_resamples, candidates.size
    cum = res.cumulative()
    cum0 = np.concatenate([np.zeros((kk, tt, 1)), cum], axis=-1)  # (K, T, b+1)
    n = res.n
    ranks = ((n + 1) // 2, n // 2 + 1)  # the lower and upper medians of a resample (1-based)
    j_med = [np.count_nonzero(cum < r, axis=-1) for r in ranks]  # (K, T) each
    del cum
    d_ranks = _window_ranks(epsilon, g, n)
    rows_total = kk * m
    step = max(1, _EM_CHUNK // max(tt, g))
    out = np.empty((rows_total, tt))
    for r0 in range(0, rows_total, step):  # chunks of subsets: bounded memory
        sl = slice(r0, min(rows_total, r0 + step))
        out[sl] = _em_median_rows(res, candidates, epsilon, d_ranks, j_med, cum0, sl, rng)
    return res.unpad(out.reshape(kk, m, tt))
