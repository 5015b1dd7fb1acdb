"""The binned private quantile of Angelopoulos et al. (2022), made exactly ε-DP (SPEC A.3-A.4).

Privacy (the only privacy-critical code of the prediction sets)
----------------------------------------------------------------
Input: ``n`` conformity scores in [0, 1]; ``n``, ``alpha``, ``epsilon`` and the bin count are
public. Neighbouring relation: replace-one (swap) with ``n`` public.
Mechanism: ``m`` bins with candidate thresholds ``e_j = j/m`` (j = 1..m); counts ``c_j``,
``L_j = sum_{k<j} c_k`` and ``U_j = sum_{k>j} c_k``; utility to minimise at level ``q``:
``u_j = max((1 - q) L_j, q U_j)``. Replacing one score moves every ``L_j`` and ``U_j`` by at
most 1, so every ``u_j`` moves by at most ``Δ = max(q, 1 - q)``. Releasing ``e_J`` with
``P(J = j) ∝ exp(-ε u_j / (2Δ))`` is the exponential mechanism with sensitivity ``Δ``: ε-DP,
δ = 0 (:mod:`dpuq.mechanisms.exponential`). This is the paper's mechanism with
``w_j = u_j / (q(1-q))`` *and* the sensitivity normalisation its Lemma 1 uses; copying the
algorithm box literally (no normalisation, ``<=`` in the lower count) leaks up to ``ε/(1-q)``.
Running time: O(n log n + m) for the law; sampling groups runs of empty bins (equal weights)
and costs O(n log n) beyond building the edges.
For experiments over many calibration sets, :func:`private_quantiles` draws one release per
row of a score matrix, vectorised, with exactly the same per-row law (tested against
:func:`private_quantile_distribution`); each row's release is ε-DP for that row.

Level, gamma and bins (Algorithms 3 and 5) only use ``n``, ``alpha`` and ``epsilon``: they are
data-independent and cost no privacy. When ``q̃ >= 1`` no informative release is possible and
the threshold is the constant 1 (full sets): nothing is sampled and nothing leaks.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from dpuq._validation import (
    _as_float,
    check_alpha,
    check_epsilon,
    check_in_open_unit,
    check_n_bins,
    check_positive_int,
    check_scores,
)
from dpuq.mechanisms.exponential import (
    _LINEAR_FLOOR,
    _bernoulli_exp_neg,
    sample_log_weights,
)
from dpuq.mechanisms.randomness import RandomState, check_random_state

__all__ = [
    "auto_n_bins",
    "bin_edges",
    "bin_index",
    "inflated_level",
    "min_calibration_size",
    "min_epsilon",
    "optimal_gamma",
    "private_quantile",
    "private_quantile_distribution",
    "private_quantile_log_distribution",
    "private_quantiles",
]

#: Fallback gamma when the stationary point of q̃ is not in (0, 1) (SPEC A.4).
TINY_GAMMA = 1e-12
#: Simulated uniform score vectors used by :func:`auto_n_bins` and its fixed internal seed.
N_SIMULATIONS = 32
_SIMULATION_SEED = 20221109
_GRID_SIZE = 50
_MAX_BINS = 10_000_000


# --------------------------------------------------------------------------- bins
def bin_edges(n_bins: int) -> np.ndarray:
    """Candidate thresholds ``e_j = j / m`` for ``j = 1..m`` (``e_m`` is exactly 1.0).

    Binning (:func:`bin_index`) and prediction sets both compare against this one array, so
    ``S <= e_k`` exactly when ``b(S) <= k``: the identity the coverage proof uses.

    Examples
    --------
    >>> bin_edges(4).tolist()
    [0.25, 0.5, 0.75, 1.0]
    """
    m = check_n_bins(n_bins)
    return np.arange(1, m + 1, dtype=float) / m


def bin_index(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """0-based bin of each score: the smallest ``j`` with ``s <= edges[j]`` (0 goes to bin 0).

    Examples
    --------
    >>> bin_index(np.array([0.0, 0.25, 0.26, 1.0]), bin_edges(4)).tolist()
    [0, 0, 1, 3]
    """
    return np.searchsorted(edges, scores, side="left")


# ------------------------------------------------------------------ the mechanism
def _check_level(level) -> float:
    q = _as_float(level, "level")
    if not math.isfinite(q) or q <= 0.0:
        raise ValueError(f"level must be a finite number > 0, got {level!r}")
    return q


def _quantile_log_weights(counts: np.ndarray, level: float, epsilon: float) -> np.ndarray:
    """Unnormalised log-probabilities ``-ε u_j / (2Δ)`` from bin counts (privacy-critical)."""
    n = counts.sum(axis=-1, keepdims=True)
    at_or_below = np.cumsum(counts, axis=-1)
    below = at_or_below - counts  # L_j: strictly below bin j
    above = n - at_or_below  # U_j: strictly above bin j
    utility = np.maximum((1.0 - level) * below, level * above)
    sensitivity = max(level, 1.0 - level)
    return -epsilon * utility / (2.0 * sensitivity)


def _validated(scores, level, epsilon, n_bins):
    s = check_scores(scores)
    q = _check_level(level)
    eps = check_epsilon(epsilon)
    edges = bin_edges(n_bins)
    return s, q, eps, edges


def private_quantile_log_distribution(
    scores, level: float, epsilon: float, n_bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact log output law of :func:`private_quantile`.

    Returns
    -------
    thresholds : ndarray of shape (m,)
        ``e_1..e_m`` (or ``[1.0]`` when ``level >= 1``).
    log_probabilities : ndarray of shape (m,)
        Natural logs of the release probabilities; all finite.

    Examples
    --------
    >>> t, lp = private_quantile_log_distribution([0.1, 0.5, 0.9], 0.6, 1.0, 4)
    >>> bool(np.isclose(np.exp(lp).sum(), 1.0))
    True
    """
    s, q, eps, edges = _validated(scores, level, epsilon, n_bins)
    if q >= 1.0:
        return np.array([1.0]), np.array([0.0])
    counts = np.bincount(bin_index(s, edges), minlength=edges.size)
    lw = _quantile_log_weights(counts, q, eps)
    return edges, lw - logsumexp(lw)


def private_quantile_distribution(
    scores, level: float, epsilon: float, n_bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact output law of the ε-DP binned quantile (SPEC A.3), for audits and tests.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Conformity scores in [0, 1].
    level : float
        Quantile level ``q`` > 0; ``level >= 1`` gives a point mass on 1.0 (full sets).
    epsilon : float
        Privacy parameter > 0.
    n_bins : int
        Number of bins ``m`` >= 2.

    Returns
    -------
    thresholds : ndarray of shape (m,)
        Candidate thresholds ``e_j = j/m``.
    probabilities : ndarray of shape (m,)
        ``P(release = e_j)``; use :func:`private_quantile_log_distribution` for tiny values.

    Examples
    --------
    >>> t, p = private_quantile_distribution(np.linspace(0, 1, 101), 0.9, 50.0, 20)
    >>> float(t[np.argmax(p)]), round(float(p.max()), 3)
    (0.9, 0.941)
    """
    thresholds, log_p = private_quantile_log_distribution(scores, level, epsilon, n_bins)
    return thresholds, np.exp(log_p)


def private_quantile(
    scores, level: float, epsilon: float, n_bins: int, random_state: RandomState = None
) -> float:
    """One ε-DP release of the ``level`` quantile of ``scores`` on the grid ``j/m``.

    Privacy: ε-DP under replace-one with ``n`` public (module docstring). When
    ``level >= 1`` returns 1.0 without sampling.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Conformity scores in [0, 1].
    level : float
        Quantile level ``q`` > 0.
    epsilon : float
        Privacy parameter > 0.
    n_bins : int
        Number of bins ``m`` >= 2.
    random_state : None, int or numpy.random.Generator
        None (default): OS entropy, for releases. A seed: for experiments only.

    Returns
    -------
    float
        One of ``j/m``, j = 1..m.

    Examples
    --------
    >>> private_quantile(np.linspace(0, 1, 101), 0.9, 100.0, 20, random_state=0)
    0.9
    """
    s, q, eps, edges = _validated(scores, level, epsilon, n_bins)
    if q >= 1.0:
        return 1.0
    bins, counts = np.unique(bin_index(s, edges), return_counts=True)
    j = _sample_bin(bins, counts, edges.size, q, eps, check_random_state(random_state))
    return float(edges[j])


def _segment_log_weights(bins: np.ndarray, counts: np.ndarray, m: int, q: float, eps: float):
    """The law of :func:`private_quantile` grouped into runs of bins with equal weight.

    Between two non-empty bins every empty bin has the same ``L_j`` and ``U_j``, hence the same
    weight. Returns the log-weights of the r non-empty bins followed by the r + 1 gaps (a gap's
    weight is its length times one bin's weight; empty gaps get ``-inf``), the gap starts and
    lengths. Exact; O(r) where r <= n is the number of non-empty bins, whatever m.
    """
    n = counts.sum()
    below = np.cumsum(counts) - counts
    gap_start = np.concatenate(([0], bins + 1))
    gap_len = np.concatenate((bins, [m])) - gap_start
    gap_below = np.concatenate(([0], below + counts))
    scale = eps / (2.0 * max(q, 1.0 - q))
    u_bin = np.maximum((1.0 - q) * below, q * (n - below - counts))
    u_gap = np.maximum((1.0 - q) * gap_below, q * (n - gap_below))
    log_len = np.full(gap_len.shape, -np.inf)
    np.log(gap_len, out=log_len, where=gap_len > 0)
    return np.concatenate((-scale * u_bin, log_len - scale * u_gap)), gap_start, gap_len


def _sample_bin(bins, counts, m: int, q: float, eps: float, rng: np.random.Generator) -> int:
    """Draw a 0-based bin from the exact law: a run by its log-weight, then a bin within it."""
    log_w, gap_start, gap_len = _segment_log_weights(bins, counts, m, q, eps)
    k = sample_log_weights(log_w, rng)
    if k < bins.size:
        return int(bins[k])
    g = k - bins.size
    return int(gap_start[g] + rng.integers(gap_len[g]))


# ------------------------------------------------------- many releases at once (experiments)
#: Rows per chunk in :func:`private_quantiles`, so that a chunk holds about 2**22 candidates.
_BATCH_CANDIDATES = 1 << 22
#: Up to ``m <= _DENSE_FACTOR (n + 1)`` bins the batched law is built over all bins from counts;
#: above, runs of empty bins are grouped (``2n + 1`` candidates per row, whatever m).
_DENSE_FACTOR = 4


def _bin_index_fast(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """:func:`bin_index` (``searchsorted(edges, s, "left")``) without a binary search.

    Starts from ``ceil(s m) - 1`` and corrects it against the same ``edges`` array until
    ``edges[b-1] < s <= edges[b]`` holds exactly, so the result is identical to
    :func:`bin_index` (the identity ``S <= e_k`` iff ``b(S) <= k`` is kept). The guess is off
    by at most one bin (rounding of ``s m`` and of ``j/m``), so the loops run at most once or
    twice, vectorised. Scores must lie in [0, 1].
    """
    m = edges.size
    b = np.ceil(scores * m).astype(np.int64) - 1
    np.clip(b, 0, m - 1, out=b)
    while True:
        up = (scores > edges[b]) & (b < m - 1)
        if not up.any():
            break
        b[up] += 1
    while True:
        down = (b > 0) & (scores <= edges[np.maximum(b - 1, 0)])
        if not down.any():
            break
        b[down] -= 1
    return b


def _batched_candidate_log_weights(sorted_bins: np.ndarray, m: int, q: float, eps: float):
    """:func:`_segment_log_weights` for many rows at once, padded to a fixed width.

    ``sorted_bins`` is (S, n), each row the sorted 0-based bins of one calibration set. Every
    row gets ``2n + 1`` candidates: position k is the bin ``sorted_bins[:, k]`` (kept only at
    the first position of each run of equal bins, else ``-inf``), position ``n + k`` is the gap
    of empty bins just below it (kept only at a run's first position and when not empty), and
    position ``2n`` is the gap above the largest bin. Weights are exactly those of
    :func:`_segment_log_weights`; padding candidates have weight 0 (log ``-inf``).

    Returns the log-weights (S, 2n+1), the gap starts (S, n+1) and the gap lengths (S, n+1).
    """
    rows, n = sorted_bins.shape
    b = sorted_bins
    first = np.ones((rows, n), dtype=bool)
    first[:, 1:] = b[:, 1:] != b[:, :-1]
    last = np.ones((rows, n), dtype=bool)
    last[:, :-1] = b[:, :-1] != b[:, 1:]
    position = np.arange(n)
    run_end = np.where(last, position, n)
    run_end = np.minimum.accumulate(run_end[:, ::-1], axis=1)[:, ::-1]
    below = np.broadcast_to(position, (rows, n)).astype(float)  # L at a run's first position
    above = (n - 1 - run_end).astype(float)  # U: strictly above the run
    scale = eps / (2.0 * max(q, 1.0 - q))
    u_bin = np.maximum((1.0 - q) * below, q * above)
    u_gap = np.maximum((1.0 - q) * below, q * (n - below))
    previous = np.empty_like(b)
    previous[:, 0] = -1
    previous[:, 1:] = b[:, :-1]
    gap_start = np.empty((rows, n + 1), dtype=np.int64)
    gap_start[:, :n] = previous + 1
    gap_start[:, n] = b[:, -1] + 1
    gap_len = np.empty((rows, n + 1), dtype=np.int64)
    gap_len[:, :n] = np.where(first, b - gap_start[:, :n], 0)
    gap_len[:, n] = m - gap_start[:, n]
    log_len = np.full(gap_len.shape, -np.inf)
    np.log(gap_len, out=log_len, where=gap_len > 0)
    log_w = np.empty((rows, 2 * n + 1))
    log_w[:, :n] = np.where(first, -scale * u_bin, -np.inf)
    log_w[:, n : 2 * n] = log_len[:, :n] - scale * u_gap
    log_w[:, 2 * n] = log_len[:, n] - scale * (1.0 - q) * n
    return log_w, gap_start, gap_len


def _sample_rows(log_w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row with probability ``∝ exp(log_w[r, j])``: :func:`sample_log_weights`
    for every row at once, with the same exact tiny-mass branch.

    Candidates within ``e^700`` of a row's largest weight are drawn by inverse CDF; the others
    form the row's tiny group, chosen with probability exactly its share ``exp(-a)`` through
    the same factorised Bernoulli as :func:`dpuq.mechanisms.exponential.sample_log_weights`
    (a first step of ``min(a, 30)``, then the rest), and then drawn within by that function.
    The largest weight is 1 after shifting and every tiny weight is below ``e^-700``, so
    ``a >= 700 - log(row length) > 30``: the first step is exactly 30 for every row with a
    tiny group, decided for all rows at once; the few rows that pass it (probability ``e^-30``
    each) finish row by row.
    """
    rows = log_w.shape[0]
    rel = log_w - log_w.max(axis=1, keepdims=True)
    linear = rel > _LINEAR_FLOOR
    w = np.exp(np.where(linear, rel, -np.inf))
    cdf = np.cumsum(w, axis=1)
    x = rng.random(rows) * cdf[:, -1]
    out = np.count_nonzero(cdf <= x[:, None], axis=1)
    overflow = out >= cdf.shape[1]
    if overflow.any():  # u * total rounded up to the total: take the last candidate with weight
        out[overflow] = w.shape[1] - 1 - np.argmax(w[overflow, ::-1] > 0, axis=1)
    tiny = ~linear & np.isfinite(rel)
    has_tiny = np.flatnonzero(tiny.any(axis=1))
    if has_tiny.size:
        assert math.log(rel.shape[1]) < -_LINEAR_FLOOR - 30.0  # so that a > 30 (docstring)
        passed = has_tiny[rng.random(has_tiny.size) < math.exp(-30.0)]
        for r in passed:  # rare: probability e^-30 per row
            idx = np.flatnonzero(tiny[r])
            log_tiny = float(logsumexp(rel[r, idx]))
            log_total = float(np.logaddexp(math.log(float(w[r].sum())), log_tiny))
            if _bernoulli_exp_neg(log_total - log_tiny - 30.0, rng):
                out[r] = idx[sample_log_weights(rel[r, idx], rng)]
    return out


def private_quantiles(
    scores, level: float, epsilon: float, n_bins: int, random_state: RandomState = None
) -> np.ndarray:
    """Independent draws of :func:`private_quantile`, one per row of ``scores`` (vectorised).

    Row ``r`` is one calibration set; its draw has exactly the law of
    ``private_quantile(scores[r], level, epsilon, n_bins)``, independently across rows: the
    law is built from each row's bin counts over all m bins when ``m <= 4 (n + 1)``, and from
    runs of empty bins otherwise (as :func:`private_quantile` does), and sampled with the same
    exact tiny-mass branch. For experiments that simulate many calibration sets (random
    splits) at once: O(rows · (n + m)) or O(rows · n log n) work, no Python loop over rows.

    Privacy: each row's release is ε-DP with respect to that row's scores (replace-one with
    ``n`` public), as for :func:`private_quantile`. Releases from rows that share people
    compose: releasing several rows about the same people costs the sum of their ε.

    Parameters
    ----------
    scores : array-like of shape (n_rows, n)
        Each row: one calibration set's scores in [0, 1].
    level, epsilon, n_bins, random_state :
        As for :func:`private_quantile`.

    Returns
    -------
    ndarray of shape (n_rows,)
        One released threshold ``j/m`` per row (1.0 everywhere when ``level >= 1``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = private_quantiles(rng.uniform(size=(3, 1000)), 0.9, 5.0, 100, random_state=0)
    >>> t.shape, bool(np.all((0.85 < t) & (t < 0.95)))
    ((3,), True)
    """
    s = check_scores(scores, ndim=2)
    q = _check_level(level)
    eps = check_epsilon(epsilon)
    edges = bin_edges(n_bins)
    rng = check_random_state(random_state)
    rows, n = s.shape
    if q >= 1.0:
        return np.ones(rows)
    out = np.empty(rows)
    m = edges.size
    if m <= _DENSE_FACTOR * (n + 1):  # the law over all m bins, from batched counts
        chunk = max(1, _BATCH_CANDIDATES // m)
        for start in range(0, rows, chunk):
            bins = _bin_index_fast(s[start : start + chunk], edges)
            r = bins.shape[0]
            flat = (bins + m * np.arange(r)[:, None]).ravel()
            counts = np.bincount(flat, minlength=r * m).reshape(r, m)
            j = _sample_rows(_quantile_log_weights(counts, q, eps), rng)
            out[start : start + chunk] = edges[j]
        return out
    chunk = max(1, _BATCH_CANDIDATES // (2 * n + 1))  # runs of empty bins grouped (m >> n)
    for start in range(0, rows, chunk):
        sorted_bins = np.sort(_bin_index_fast(s[start : start + chunk], edges), axis=1)
        log_w, gap_start, gap_len = _batched_candidate_log_weights(sorted_bins, m, q, eps)
        k = _sample_rows(log_w, rng)
        r = np.arange(k.size)
        j = sorted_bins[r, np.minimum(k, n - 1)]
        in_gap = k >= n
        g = k[in_gap] - n
        j[in_gap] = gap_start[r[in_gap], g] + rng.integers(gap_len[r[in_gap], g])
        out[start : start + chunk] = edges[j]
    return out


# ------------------------------------------------------ level, gamma, bins (public)
def _check_plan(n, alpha, epsilon, n_bins):
    return (
        check_positive_int(n, "n"),
        check_alpha(alpha),
        check_epsilon(epsilon),
        check_n_bins(n_bins),
    )


def _level(n: int, alpha: float, epsilon: float, m: int, gamma: float) -> float:
    return (n + 1) * (1 - alpha) / (n * (1 - gamma * alpha)) + 2 * math.log(m / (gamma * alpha)) / (
        epsilon * n
    )


def inflated_level(n: int, alpha: float, epsilon: float, n_bins: int, gamma: float) -> float:
    """The inflated quantile level q̃ of SPEC A.4 (Algorithm 3), unclipped.

    ``q̃ = (n+1)(1-α) / (n(1-γα)) + 2 log(m/(γα)) / (ε n)``. A value >= 1 means that no
    informative threshold can be released: the prediction sets are full.

    Parameters
    ----------
    n : int
        Number of calibration points (public).
    alpha : float
        Miscoverage level in (0, 0.5].
    epsilon : float
        Privacy parameter > 0.
    n_bins : int
        Number of bins ``m`` >= 2.
    gamma : float
        Split of ``alpha`` between privacy and sampling error, in (0, 1).

    Examples
    --------
    >>> round(inflated_level(1000, 0.1, 1.0, 100, 0.1), 4)
    0.9284
    """
    n, alpha, epsilon, m = _check_plan(n, alpha, epsilon, n_bins)
    gamma = check_in_open_unit(gamma, "gamma")
    return _level(n, alpha, epsilon, m, gamma)


def _gamma_star(n: int, alpha: float, epsilon: float, m: int) -> float:
    # d q̃ / dγ = 0  <=>  α² γ² − (α(1−α)ε(n+1)/2 + 2α) γ + 1 = 0; smaller root, stably.
    a = alpha * alpha
    b = -(alpha * (1 - alpha) * epsilon * (n + 1) / 2 + 2 * alpha)
    disc = b * b - 4 * a
    root = 2.0 / (-b + math.sqrt(max(disc, 0.0)))
    # SPEC's tiny fallback, and gamma just below 1: when the root is not in (0, 1), q̃ decreases
    # on all of (0, 1) and is >= 1 there (uninformative); 1 - 1e-9 then reports its infimum.
    candidates = [TINY_GAMMA, 1.0 - 1e-9]
    if 0.0 < root < 1.0:
        candidates.append(root)
    return min(candidates, key=lambda g: _level(n, alpha, epsilon, m, g))


def optimal_gamma(n: int, alpha: float, epsilon: float, n_bins: int) -> float:
    """γ* minimising q̃ over (0, 1) (SPEC A.4), from the stable smaller root.

    Examples
    --------
    >>> g = optimal_gamma(1000, 0.1, 1.0, 100)
    >>> bool(0 < g < 1)
    True
    """
    n, alpha, epsilon, m = _check_plan(n, alpha, epsilon, n_bins)
    return _gamma_star(n, alpha, epsilon, m)


def _bin_grid(n: int, epsilon: float) -> np.ndarray:
    top = int(min(_MAX_BINS, max(1000.0, 10.0 * n * epsilon)))
    grid = np.unique(np.round(np.geomspace(10, top, _GRID_SIZE)).astype(np.int64))
    return grid


def _sorted_uniforms(n: int) -> np.ndarray:
    """``N_SIMULATIONS`` sorted uniform vectors of length n (fixed seed), via exponential gaps."""
    rng = np.random.default_rng(_SIMULATION_SEED)
    gaps = rng.standard_exponential((N_SIMULATIONS, n + 1))
    cums = np.cumsum(gaps, axis=1)
    return cums[:, :n] / cums[:, n:]


class _NotCovered(Exception):
    """A windowed simulation was asked for a count it does not hold."""


class _FullUniforms:
    """All ``N_SIMULATIONS`` sorted uniform vectors of length n: counts at any point."""

    def __init__(self, n: int) -> None:
        s = _sorted_uniforms(n)
        self.v, self.n = s.shape
        self._offsets = 2.0 * np.arange(self.v)[:, None]
        self._flat = (s + self._offsets).ravel()

    def counts(self, edges: np.ndarray) -> np.ndarray:
        """``#{i : U_i <= e}`` for every vector (rows) and edge (columns)."""
        c = np.searchsorted(self._flat, (edges[None, :] + self._offsets).ravel(), side="right")
        return c.reshape(self.v, -1) - self.n * np.arange(self.v)[:, None]


class _WindowedUniforms:
    """``N_SIMULATIONS`` uniform samples of size n, known only where :func:`auto_n_bins` looks.

    Exact in law, deterministic (fixed seed), and O(number of points + n (b - a)) instead of
    O(n): the counts ``F(x) = #{i : U_i <= x}`` at the sorted ``points`` and at ``a``, ``b`` are
    one multinomial draw over the gaps between them; given its count ``K`` in ``(a, b]``, the
    sample inside the dense interval is ``K`` independent uniforms there, kept sorted, so that
    ``F`` is known at every ``x`` in ``(a, b]`` too. ``points`` must lie outside ``[a, b]``.
    """

    def __init__(self, n: int, points: np.ndarray, dense: tuple[float, float] | None) -> None:
        rng = np.random.default_rng(_SIMULATION_SEED)
        self.v, self.n = N_SIMULATIONS, n
        extra = [] if dense is None else list(dense)
        self._cuts = np.unique(np.concatenate((points, extra)))
        probs = np.diff(np.concatenate(([0.0], self._cuts, [1.0])))
        gaps = rng.multinomial(n, probs, size=self.v)
        self._at_cuts = np.cumsum(gaps[:, :-1], axis=1)
        self._dense = dense
        if dense is not None:
            a, b = dense
            i_a = int(np.searchsorted(self._cuts, a))
            self._below_a = self._at_cuts[:, i_a]
            inside = gaps[:, i_a + 1]  # (a, b]: b is the cut right after a
            values = np.minimum(a + (b - a) * (1.0 - rng.random(int(inside.sum()))), b)
            seg = np.repeat(np.arange(self.v), inside)
            self._flat = np.sort(values + 2.0 * seg)
            self._starts = np.concatenate(([0], np.cumsum(inside)[:-1]))

    def counts(self, edges: np.ndarray) -> np.ndarray:
        """Like :meth:`_FullUniforms.counts`; raises ``_NotCovered`` outside what is known."""
        out = np.empty((self.v, edges.size), dtype=np.int64)
        pos = np.minimum(np.searchsorted(self._cuts, edges), self._cuts.size - 1)
        at_cut = self._cuts[pos] == edges
        out[:, at_cut] = self._at_cuts[:, pos[at_cut]]
        rest = ~at_cut
        if rest.any():
            if self._dense is None:
                raise _NotCovered
            a, b = self._dense
            e = edges[rest]
            if np.any((e <= a) | (e > b)):
                raise _NotCovered
            shifted = e[None, :] + 2.0 * np.arange(self.v)[:, None]
            c = np.searchsorted(self._flat, shifted.ravel(), side="right").reshape(self.v, -1)
            out[:, rest] = self._below_a[:, None] + c - self._starts[:, None]
        return out


def _bin_window(n: int, q: float, epsilon: float, m: int) -> tuple[int, int]:
    """Bins ``lo..hi`` (1-based) outside which the law of the release has negligible mass."""
    scale = epsilon / (2 * max(q, 1 - q))
    cut = (math.log(m) + 30.0) / scale  # utility gap that makes the outside mass negligible
    sd = math.sqrt(q * (1 - q) / n)
    x_lo = q - 7 * sd - (cut / q + 2) / n - 2.0 / m
    x_hi = q + 7 * sd + (cut / (1 - q) + 2) / n + 2.0 / m
    return max(1, math.floor(x_lo * m)), min(m, math.ceil(x_hi * m))


def _window_edges(lo_j: int, hi_j: int, m: int) -> np.ndarray:
    return np.arange(lo_j - 1, hi_j + 1) / m  # includes e_{lo-1} for L at the first bin


#: Up to this n the simulation holds the full sorted vectors (the original, exact-count path);
#: above it, only the windows that :func:`auto_n_bins` looks at (:class:`_WindowedUniforms`).
_FULL_SIMULATION_MAX_N = 100_000
#: Windows with more edges than this are served by the dense interval of the windowed path.
_SPARSE_MAX_EDGES = 256


def _simulated_uniforms(n: int, plan) -> _FullUniforms | _WindowedUniforms:
    """The simulated uniform samples for ``plan`` (pairs ``(m, q)`` that will be evaluated)."""
    if n <= _FULL_SIMULATION_MAX_N:
        return _FullUniforms(n)
    sparse, dense_lo, dense_hi = [np.array([0.0])], math.inf, -math.inf
    windows = [(m, *_bin_window(n, q, eps, m)) for m, q, eps in plan]
    for m, lo_j, hi_j in windows:
        if hi_j - lo_j + 2 > _SPARSE_MAX_EDGES:
            dense_lo = min(dense_lo, (lo_j - 1) / m)
            dense_hi = max(dense_hi, hi_j / m)
    dense = (dense_lo, dense_hi) if dense_lo < dense_hi else None
    for m, lo_j, hi_j in windows:
        e = _window_edges(lo_j, hi_j, m)
        if dense is not None:
            e = e[(e < dense_lo) | (e > dense_hi)]
        sparse.append(e)
    return _WindowedUniforms(n, np.unique(np.concatenate(sparse)), dense)


def _expected_threshold(sims, q: float, epsilon: float, m: int) -> float:
    """Mean over the simulated vectors of ``E[e_J]`` under the exact law, on a bin window.

    Bins outside the window carry relative mass below 1e-12 in total (checked from bounds on
    ``u_j`` outside the window; otherwise the window grows to all bins).
    """
    n = sims.n
    scale = epsilon / (2 * max(q, 1 - q))
    lo_win, hi_win = _bin_window(n, q, epsilon, m)
    for lo_j, hi_j in ((lo_win, hi_win), (1, m)):
        edges = _window_edges(lo_j, hi_j, m)
        at_or_below = sims.counts(edges)
        below = at_or_below[:, :-1]
        above = n - at_or_below[:, 1:]
        utility = np.maximum((1 - q) * below, q * above)
        u_min = utility.min(axis=1)
        if lo_j == 1 and hi_j == m:
            break
        outside = np.minimum(
            q * above[:, 0] if lo_j > 1 else np.inf,
            (1 - q) * below[:, -1] if hi_j < m else np.inf,
        )
        if np.all(math.log(m) - scale * (outside - u_min) < math.log(1e-12)):
            break
    w = np.exp(-scale * (utility - u_min[:, None]))
    return float(np.mean((w @ edges[1:]) / w.sum(axis=1)))


def auto_n_bins(n: int, alpha: float, epsilon: float) -> tuple[int, float]:
    """Deterministic choice of the number of bins m* and its γ* (SPEC A.4, Algorithm 5).

    For each m on a grid of about 50 log-spaced integers from 10 to ``max(1000, 10 n ε)``,
    computes the expected released threshold ``E[e_J]`` (exact, from the output law) averaged
    over 32 simulated uniform score vectors (fixed internal seed), and keeps the m with the
    smallest value (ties: the smaller m). Uses only ``n``, ``alpha`` and ``epsilon``: no
    privacy cost, and the same inputs always give the same answer.

    Returns
    -------
    n_bins : int
    gamma : float

    Examples
    --------
    >>> auto_n_bins(1000, 0.1, 1.0) == auto_n_bins(1000, 0.1, 1.0)
    True
    """
    n = check_positive_int(n, "n")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    grid = _bin_grid(n, epsilon)
    gammas = [_gamma_star(n, alpha, epsilon, int(m)) for m in grid]
    levels = [_level(n, alpha, epsilon, int(m), g) for m, g in zip(grid, gammas, strict=True)]
    if levels[0] >= 1.0:  # q̃ grows with m: nothing on the grid is informative
        return int(grid[0]), gammas[0]
    plan = [(int(m), q, epsilon) for m, q in zip(grid, levels, strict=True) if q < 1.0]
    sims = _simulated_uniforms(n, plan)
    try:
        found = {m: _expected_threshold(sims, q, eps, m) for m, q, eps in plan}
    except _NotCovered:  # a window the windowed simulation does not hold: simulate in full
        sims = _FullUniforms(n)
        found = {m: _expected_threshold(sims, q, eps, m) for m, q, eps in plan}
    expected = [found.get(int(m), 1.0) for m in grid]
    best = int(np.argmin(expected))
    return int(grid[best]), gammas[best]


# ------------------------------------------------------------------- planning
def _min_level(n: int, alpha: float, epsilon: float, n_bins) -> float:
    m = int(_bin_grid(n, epsilon)[0]) if n_bins == "auto" else int(n_bins)
    return _level(n, alpha, epsilon, m, _gamma_star(n, alpha, epsilon, m))


def min_calibration_size(alpha: float, epsilon: float, n_bins: int | str = "auto") -> int:
    """Smallest n for which q̃ < 1, i.e. the private sets can be informative.

    With ``n_bins="auto"`` the answer is for the smallest grid value (10 bins), which has the
    smallest q̃; :func:`auto_n_bins` never picks an uninformative m when an informative one
    exists.

    Examples
    --------
    >>> n = min_calibration_size(0.1, 1.0)
    >>> inflated_level(n, 0.1, 1.0, 10, optimal_gamma(n, 0.1, 1.0, 10)) < 1
    True
    """
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    if n_bins != "auto":
        n_bins = check_positive_int(n_bins, "n_bins", minimum=2)
    lo, hi = 1, 2
    while _min_level(hi, alpha, epsilon, n_bins) >= 1.0:
        lo, hi = hi, hi * 2
        if hi > 10**15:
            raise ValueError("no calibration size gives informative sets at these settings")
    while hi - lo > 1:  # invariant: level(lo) >= 1 or lo == 1, level(hi) < 1
        mid = (lo + hi) // 2
        if _min_level(mid, alpha, epsilon, n_bins) >= 1.0:
            lo = mid
        else:
            hi = mid
    return hi if _min_level(lo, alpha, epsilon, n_bins) >= 1.0 else lo


def min_epsilon(n: int, alpha: float, n_bins: int | str = "auto") -> float:
    """Smallest ε (to 3 significant digits, rounded up) for which q̃ < 1 at this n.

    Returns ``inf`` when no ε suffices (then ``n < (1 - α)/α``: even the non-private
    split-conformal threshold is infinite).

    Examples
    --------
    >>> e = min_epsilon(1000, 0.1)
    >>> inflated_level(1000, 0.1, e, 10, optimal_gamma(1000, 0.1, e, 10)) < 1
    True
    """
    n = check_positive_int(n, "n")
    alpha = check_alpha(alpha)
    if n_bins != "auto":
        n_bins = check_positive_int(n_bins, "n_bins", minimum=2)
    if _min_level(n, alpha, 1e12, n_bins) >= 1.0:
        return math.inf
    lo, hi = -12.0, 12.0  # log10 epsilon
    for _ in range(80):
        mid = (lo + hi) / 2
        if _min_level(n, alpha, 10**mid, n_bins) >= 1.0:
            lo = mid
        else:
            hi = mid
    eps = 10**hi
    digits = 2 - math.floor(math.log10(eps))
    rounded = math.ceil(eps * 10**digits) / 10**digits
    return rounded if _min_level(n, alpha, rounded, n_bins) < 1.0 else eps
