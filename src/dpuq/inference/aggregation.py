"""Private aggregation of per-subset bootstrap results (privacy-critical; Chadha et al. 2024).

The ensemble splits the data into ``s`` disjoint subsets; every quantity here is computed from
``s`` per-subset values (or vectors), each a function of one subset only (given the
data-independent shuffle and resampling weights). Replacing one record therefore changes at
most one of the ``s`` inputs: that is the neighbouring relation these mechanisms are stated
for ("one of ``s`` inputs replaced").

- :func:`_private_average` — the average of ``s`` values in ``[0, 1]`` plus
  ``Laplace(k/(s ε))`` for ``k`` coordinates (Algorithm 2; sensitivity ``1/s`` per coordinate).
- :func:`_private_clamped_mean` — a private median (exponential mechanism over public
  candidates) and the mean clamped to a window around it (widened winsorised mean, Smith 2011):
  sensitivity ``(window width)/s`` instead of ``(range)/s``.
- :func:`_em_value`, :func:`_em_quantile`, :func:`_tail_second_moment` and
  :func:`_subsampling_coordinate` — the releases of :mod:`dpuq.inference.general` over its
  subset estimates (exponential-mechanism windows and quantiles of sensitivity 1; a mean of
  values in ``[0, 1]``, sensitivity ``1/s``), each with its argument in its docstring.
- :func:`_tree_cdf` — all thresholds at once (Chadha et al. 2024, Theorem 2): a binary tree over the
cells of
  a public grid, ``Laplace(2 D/(s ε))`` per node, prefix sums, then a monotone projection
  (:func:`project_monotone`), with a rigorous uniform error bound (:func:`tree_error_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpuq._validation import check_epsilon, check_in_open_unit
from dpuq.mechanisms.exponential import exponential_mechanism
from dpuq.mechanisms.laplace import laplace_release, laplace_scale
from dpuq.privacy.ledger import CALLER_CHARGED

__all__ = [
    "ClampedMean",
    "TreeCDF",
    "median_utilities",
    "project_monotone",
    "tree_error_bound",
    "window_count_utilities",
]


def _private_average(
    values: np.ndarray, epsilon: float, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """Average ``s`` per-subset vectors with entries in ``[0, 1]`` and add Laplace noise.

    Privacy: one of the ``s`` rows replaced moves each of the ``k`` averaged coordinates by at
    most ``1/s``, so the L1 sensitivity is ``k/s`` and ``Laplace(k/(s ε))`` per coordinate is
    ε-DP (Algorithm 2, line 8, composed over ``k`` thresholds).

    Parameters
    ----------
    values : ndarray of shape (s, k)
        Per-subset values in ``[0, 1]`` (bootstrap CDFs at ``k`` thresholds).

    Returns
    -------
    (noisy average of shape (k,), Laplace scale)
    """
    vals = np.asarray(values, dtype=float)
    if vals.ndim != 2 or np.any((vals < 0) | (vals > 1)):
        raise ValueError("values must be an (s, k) array with entries in [0, 1]")
    s, k = vals.shape
    scale = laplace_scale(k / s, epsilon, dim=k)
    return laplace_release(vals.mean(axis=0), scale=scale, random_state=rng), scale


def median_utilities(values: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """``-max(#{v < c}, #{v > c})`` for each candidate ``c``: sensitivity 1 when one of the
    values is replaced (each count moves by at most 1).

    Examples
    --------
    >>> median_utilities(np.array([1.0, 2.0, 3.0]), np.array([0.0, 2.0, 5.0])).tolist()
    [-3.0, -1.0, -3.0]
    """
    v = np.sort(np.asarray(values, dtype=float))
    below = np.searchsorted(v, candidates, side="left")
    above = v.size - np.searchsorted(v, candidates, side="right")
    return -np.maximum(below, above).astype(float)


def window_count_utilities(
    values: np.ndarray, candidates: np.ndarray, half_width: float
) -> np.ndarray:
    """``#{v : |v - c| <= half_width}`` for each candidate ``c``: sensitivity 1 when one of the
    values is replaced (each count moves by at most 1).

    Used to locate tightly clustered values: a candidate far from all of them scores 0 and one
    at their centre about ``s``, twice the median utility's gap.

    Examples
    --------
    >>> window_count_utilities(np.array([1.0, 1.1, 3.0]), np.array([0.0, 1.0, 3.0]), 0.2).tolist()
    [0.0, 2.0, 1.0]
    """
    v = np.sort(np.asarray(values, dtype=float))
    c = np.asarray(candidates, dtype=float)
    inside = np.searchsorted(v, c + half_width, side="right") - np.searchsorted(
        v, c - half_width, side="left"
    )
    return inside.astype(float)


def _private_median_of_values(
    values: np.ndarray, candidates: np.ndarray, epsilon: float, rng: np.random.Generator
) -> float:
    """Exponential-mechanism median of ``s`` values over public ``candidates``; ε-DP.

    Utility ``-max(#{v < c}, #{v > c})``, sensitivity 1 (one value replaced moves each count by
    at most 1), released with probability ``∝ exp(ε u / 2)``.
    """
    u = median_utilities(values, candidates)
    return float(
        candidates[
            exponential_mechanism(
                u, epsilon=epsilon, sensitivity=1.0, random_state=rng, ledger=CALLER_CHARGED
            )
        ]
    )


@dataclass(frozen=True)
class ClampedMean:
    """Result of :func:`_private_clamped_mean` (released values only)."""

    value: float
    center: float
    half_width: float
    noise_scale: float
    epsilon_median: float
    epsilon_mean: float

    def projected(self) -> float:
        """The release projected onto the window ``center ± half_width``, where the clamped
        values' mean lies: post-processing, never further from that mean than ``value``."""
        return min(max(self.value, self.center - self.half_width),
                   self.center + self.half_width)  # fmt: skip


def check_half_width(value, where: str = "") -> float:
    """A clamping half-width as a float: finite and > 0, else a ValueError (``where`` says
    what gave it).

    Examples
    --------
    >>> check_half_width(0.25)
    0.25
    """
    try:
        w = float(value)
    except (TypeError, ValueError):
        w = math.nan
    if not (math.isfinite(w) and w > 0):
        raise ValueError(f"half_width must be finite and > 0{where}, got {value!r}")
    return w


def _private_clamped_mean(
    values: np.ndarray,
    *,
    epsilon: float,
    half_width: float | Callable[[float], float],
    center: float | None = None,
    candidates: np.ndarray | None = None,
    median_share: float = 0.5,
    rng: np.random.Generator,
) -> ClampedMean:
    """Private mean of ``s`` values clamped to a window around a private median; ε-DP.

    1. ``m``: the exponential-mechanism median of the values over the public ``candidates``,
       with ``median_share * ε`` (skipped when a public ``center`` is given: then ``m = center``
       and the whole ε goes to step 2).
    2. ``w = half_width(m)`` (a function of released values only, so post-processing) and
       ``mean(clip(v, m - w, m + w)) + Laplace(2w/(s ε_2))``, ``ε_2`` the rest of ε.

    Privacy: one of the ``s`` values replaced moves the clamped mean by at most ``2w/s``
    (clamping is 1-Lipschitz and the window is fixed given ``m``); step 2 is ε_2-DP given ``m``
    and step 1 is ε_1-DP, so the pair is ε-DP by sequential composition
    (Chadha et al. 2024; Smith 2011).
    """
    eps = check_epsilon(epsilon)
    v = np.asarray(values, dtype=float)
    s = v.size
    if center is None:
        share = check_in_open_unit(median_share, "median_share")
        if candidates is None:
            raise ValueError("candidates are needed for the private median")
        eps_med, eps_mean = share * eps, (1.0 - share) * eps
        m = _private_median_of_values(v, candidates, eps_med, rng)
    else:
        eps_med, eps_mean = 0.0, eps
        m = float(center)
    w = check_half_width(half_width(m) if callable(half_width) else half_width)
    scale = laplace_scale(2.0 * w / s, eps_mean)
    value = laplace_release(float(np.clip(v, m - w, m + w).mean()), scale=scale, random_state=rng)
    return ClampedMean(value, m, w, scale, eps_med, eps_mean)


# --- all thresholds at once: the tree mechanism -------------------------------------------------


def project_monotone(y) -> np.ndarray:
    """Euclidean projection of ``y`` onto ``{0 <= F_1 <= ... <= F_G <= 1}``.

    Pool-adjacent-violators (isotonic regression), then clipping to [0, 1], which is the exact
    projection onto the bounded monotone set. For every nondecreasing ``F`` with values in
    [0, 1], ``max |proj(y) - F| <= max |y - F|``: each fitted value is an average of ``y`` over
    a block and equals a max-min of block averages, so a uniform error bound on the noisy CDF
    survives the projection.

    Examples
    --------
    >>> project_monotone([0.2, 0.1, 0.5, 1.3]).tolist()
    [0.15000000000000002, 0.15000000000000002, 0.5, 1.0]
    """
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise ValueError("y must be 1-dimensional")
    # blocks as (sum, count); the loop runs over grid points (a few hundred), not data
    sums: list[float] = []
    counts: list[int] = []
    for v in y.tolist():
        sums.append(v)
        counts.append(1)
        while len(sums) > 1 and sums[-2] * counts[-1] > sums[-1] * counts[-2]:
            s2, c2 = sums.pop(), counts.pop()
            sums[-1] += s2
            counts[-1] += c2
    fitted = np.repeat(np.array(sums) / np.array(counts), counts)
    return np.clip(fitted, 0.0, 1.0)


def _prefix_nodes(g: int, depth: int) -> np.ndarray:
    """Number of tree nodes summed for each prefix ``[0, j)``, ``j = 1..g``: popcount(j)."""
    j = np.arange(1, g + 1)
    return np.array([bin(int(v)).count("1") for v in j]) if g else np.zeros(0, int)


def _laplace_sum_tail(m: np.ndarray, scale: float, u: float) -> np.ndarray:
    """Upper bound on ``P(|L_1 + ... + L_m| > u)``, ``L_i`` i.i.d. ``Laplace(0, scale)``.

    ``m = 1``: exact, ``exp(-u/scale)``. ``m >= 2``: Chernoff,
    ``2 min_θ exp(-θ u) (1 - scale² θ²)^(-m)`` at its minimiser
    ``θ = (sqrt(m² scale² + u²) - m scale) / (u scale)``.
    """
    m = np.asarray(m, dtype=float)
    out = np.zeros_like(m)
    one = m == 1
    out[one] = math.exp(-u / scale)
    many = m >= 2
    if np.any(many):
        mm = m[many]
        th = (np.sqrt(mm * mm * scale * scale + u * u) - mm * scale) / (u * scale)
        log_b = -th * u - mm * np.log1p(-((scale * th) ** 2))
        out[many] = np.minimum(1.0, 2.0 * np.exp(log_b))
    return out


def tree_error_bound(n_grid: int, scale: float, beta: float) -> float:
    """A ``u`` with ``P(max_j |noise of the prefix sum at grid point j| > u) <= beta``.

    Union bound over the ``n_grid`` prefix sums of :func:`_tree_cdf`, each the sum of
    popcount(j) independent ``Laplace(0, scale)`` node noises (:func:`_laplace_sum_tail`);
    solved for ``u`` by bisection. Rigorous (no simulation) and data-independent.

    Examples
    --------
    >>> round(tree_error_bound(1, 0.1, 0.05), 6)  # one node: 0.1 * ln(20)
    0.299573
    """
    b = check_in_open_unit(beta, "beta")
    depth = max(1, math.ceil(math.log2(n_grid + 1)))
    m = _prefix_nodes(n_grid, depth)

    def total(u: float) -> float:
        return float(_laplace_sum_tail(m, scale, u).sum())

    lo, hi = 0.0, scale
    while total(hi) > b:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if total(mid) > b:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class TreeCDF:
    """Noisy CDF on a grid from :func:`_tree_cdf` (released values only)."""

    noisy: np.ndarray  # prefix sums with noise, before projection
    cdf: np.ndarray  # monotone projection in [0, 1]
    noise_scale: float  # Laplace scale per node
    depth: int


def tree_shape(n_grid: int) -> tuple[int, int]:
    """``(depth, nodes)`` of the tree that releases a CDF on ``n_grid`` points: depth
    ``D = max(1, ceil(log2(G + 1)))`` and the ``2^(D+1) - 2`` nodes of levels ``1..D`` that
    get noise (public: the grid's size only).

    Examples
    --------
    >>> tree_shape(127)
    (7, 254)
    """
    depth = max(1, math.ceil(math.log2(n_grid + 1)))
    return depth, 2 ** (depth + 1) - 2


def _tree_cdf(masses: np.ndarray, epsilon: float, rng: np.random.Generator) -> TreeCDF:
    """Release a CDF on ``G`` grid points from ``s`` per-subset cell masses; ε-DP.

    ``masses`` has shape ``(s, G + 1)``: row ``k`` is subset ``k``'s bootstrap mass in the cells
    ``(-inf, t_1], (t_1, t_2], ..., (t_G, inf)`` (each row sums to 1). The average is put on
    the leaves of a binary tree of depth ``D = ceil(log2(G + 1))``; every node of levels
    ``1..D`` (the root is always 1 and is not released) gets ``Laplace(2D/(s ε))``; the CDF at
    ``t_j`` is the sum of the at most ``D`` nodes that tile cells ``0..j-1``.

    Privacy (Chadha et al. 2024, Theorem 2): one subset's row changes by at most 2 in L1
    (both rows are
    probability vectors), so the averaged leaves move by ``2/s`` in L1 and so does every level
    of node sums; over ``D`` levels the L1 sensitivity is ``2D/s``, and ``Laplace(2D/(s ε))``
    per node is ε-DP. Prefix sums and the projection are post-processing.
    """
    p = np.asarray(masses, dtype=float)
    s, cells = p.shape
    g = cells - 1
    depth, nodes = tree_shape(g)
    leaves = np.zeros(2**depth)
    leaves[:cells] = p.mean(axis=0)
    scale = laplace_scale(2.0 * depth / s, epsilon, dim=nodes)  # all nodes
    j = np.arange(1, g + 1)
    noisy = np.zeros(g)
    for level in range(1, depth + 1):  # D levels (about log2 of the grid size)
        nodes = leaves.reshape(2**level, -1).sum(axis=1)
        nodes = laplace_release(nodes, scale=scale, random_state=rng)
        shift = depth - level
        use = ((j >> shift) & 1).astype(bool)
        noisy[use] += nodes[(j[use] >> shift) - 1]
    return TreeCDF(noisy, project_monotone(noisy), scale, depth)


# --- the general path's releases over subset estimates (dpuq.inference.general) ----------


def _em_value(values, candidates, epsilon, rng, half_width=None) -> float:
    """Exponential mechanism over ``candidates`` (sensitivity 1): the median of ``values``, or
    with ``half_width`` the candidate whose window ``c ± half_width`` holds the most values."""
    if half_width is None:
        u = median_utilities(values, candidates)
    else:
        u = window_count_utilities(values, candidates, half_width)
    return float(candidates[exponential_mechanism(u, epsilon=epsilon, sensitivity=1.0,
                                                  random_state=rng,
                                                  ledger=CALLER_CHARGED)])  # fmt: skip


def _em_quantile(values, candidates, level, epsilon, rng) -> float:
    """Exponential-mechanism ``level`` quantile: utility ``-|#{v < c} - level s|``, sens. 1."""
    v = np.sort(values)
    below = np.searchsorted(v, candidates, side="left")
    above = v.size - np.searchsorted(v, candidates, side="right")
    target = level * v.size
    u = -np.maximum(np.maximum(below - target, target - (v.size - above)), 0.0)
    return float(candidates[exponential_mechanism(u, epsilon=epsilon, sensitivity=1.0,
                                                  random_state=rng,
                                                  ledger=CALLER_CHARGED)])  # fmt: skip


def _tail_second_moment(theta, m: float, radius: float, epsilon: float, rng):
    """``mean_k min(|θ_k - m|/radius, 1)² + Laplace(1/(s ε))``: ε-DP (step 3c').

    In units of ``radius`` (no overflow, no underflow, whatever the bounds): each term lies in
    ``[0, 1]`` (no estimate, NaN: 1, the farthest), and ``m`` and ``radius`` are released
    before, so one subset replaced moves the mean by at most ``1/s``: the Laplace mechanism
    with that sensitivity (through :func:`_private_clamped_mean`, whose window is
    ``[0, 1]``). ``radius² × value`` estimates the mean squared deviation.
    """
    ratio = np.minimum(np.abs(np.asarray(theta, dtype=float) - m) / radius, 1.0)
    dev2 = np.where(np.isnan(ratio), 1.0, ratio * ratio)
    return _private_clamped_mean(dev2, epsilon=epsilon, half_width=0.5, center=0.5, rng=rng)


def _subsampling_coordinate(theta, lo, hi, n, b, alpha, eps, rng, max_candidates) -> dict:
    """``method="subsampling"`` of the general path, one coordinate: three exponential-mechanism
    quantiles (``α/2``, ``1/2``, ``1 - α/2``; ``ε/3`` each, sensitivity 1: one of the ``s``
    values replaced moves each rank count by at most 1) of the subset estimates over
    ``max_candidates`` public candidates, and the subsampling interval around the median."""
    cand = np.linspace(lo, hi, max_candidates)
    # no estimate: alternately the two bounds (public positions), which widens the quantiles
    # (conservative) where the centre of the bounds made an interval of failures look narrow
    ends = np.where(np.arange(theta.size) % 2 == 0, lo, hi)
    theta = np.where(np.isnan(theta), ends, theta)
    q_lo, m, q_hi = (_em_quantile(theta, cand, lv, eps / 3.0, rng)
                     for lv in (alpha / 2.0, 0.5, 1.0 - alpha / 2.0))  # fmt: skip
    r = math.sqrt(b / n)
    return {
        "lower": max(min(m - r * (q_hi - m), m), lo),
        "upper": min(max(m - r * (q_lo - m), m), hi),
        "estimate": m,
        "subset_quantiles": (q_lo, q_hi),
    }
