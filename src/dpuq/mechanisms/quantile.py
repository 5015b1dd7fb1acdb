"""The binned private quantile: its exact law and its sampler (paper and certified methods).

Privacy (the only privacy-critical code of the prediction sets)
----------------------------------------------------------------
Input: ``n`` conformity scores in [0, 1]; ``n``, the level, ``epsilon`` and the number of bins
``m`` are public. Neighbouring relation: replace-one (swap) with ``n`` public.
Bins: candidate thresholds ``e_j = j/m`` (j = 1..m), counts ``C_j = #{i : s_i <= e_j}``
(``C_0 = 0``, ``C_m = n``) and ``L_j = C_{j-1}``. Replacing one score moves every ``C_j`` and
every ``L_j`` by at most 1.

- ``utility="rank"`` (the certified method): target rank ``ρ = level · n`` in
  ``[0, n]``, ``u_j = -max(L_j - ρ, ρ - C_j, 0)`` (minus the distance from ρ to
  ``[L_j, C_j]``). Each argument of the max moves by at most 1 and the max is 1-Lipschitz, so
  the sensitivity is 1; ``P(J = j) ∝ exp(ε u_j / 2)``.
- ``utility="weighted"`` (the paper method, Angelopoulos et al. 2022 with the sensitivity
  normalisation of their Lemma 1): ``u_j = max((1-q) L_j, q (n - C_j))`` to minimise,
  sensitivity ``Δ = max(q, 1-q)``, ``P(J = j) ∝ exp(-ε u_j / (2Δ))``.

Both are the exponential mechanism with the stated sensitivity: ε-DP, δ = 0
(:mod:`dpuq.mechanisms.exponential`). A level above 1 (``>= 1`` for ``"weighted"``) means no
informative release: the constant 1.0, nothing sampled, no data used.

One law, one sampler: every release (single or batched) turns each calibration set into the
same candidate log-weights (:func:`_row_log_weights`: all m bins, or runs of empty bins grouped
exactly, since empty bins between two occupied ones share ``L_j = C_j``) and draws one per row
with :func:`dpuq.mechanisms.exponential.sample_log_weights_rows`, then a uniform bin inside a
chosen run (``Generator.integers``, exact). :func:`private_quantile` is the one-row case of
:func:`private_quantiles`. The exact law (:func:`private_quantile_log_distribution`) is
computed from the same utility function over all m bins. The public grid and the binning
(:func:`bin_edges`, :func:`bin_index`) are in :mod:`dpuq.mechanisms.bins`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from dpuq._validation import _as_float, check_epsilon, check_scores
from dpuq.mechanisms.bins import _bin_index_fast, bin_edges, bin_index
from dpuq.mechanisms.log_weights import sample_log_weights_rows
from dpuq.mechanisms.randomness import RandomState, release_generator

__all__ = [
    "UTILITIES",
    "bin_edges",
    "bin_index",
    "private_quantile",
    "private_quantile_distribution",
    "private_quantile_from_counts",
    "private_quantile_log_distribution",
    "private_quantiles",
]

#: The two utilities: the symmetric rank distance (certified method) and the paper's.
UTILITIES = ("rank", "weighted")
#: Rows per chunk in the batched sampler: a chunk holds about 2**22 candidates.
_BATCH_CANDIDATES = 1 << 22
#: Up to ``m <= _DENSE_FACTOR (n + 1)`` bins the law is built over all bins; above, runs of
#: empty bins are grouped (``2n + 1`` candidates per row, whatever m).
_DENSE_FACTOR = 4


def _check_utility(utility) -> str:
    if utility not in UTILITIES:
        raise ValueError(f"utility must be one of {UTILITIES}, got {utility!r}")
    return utility


def _check_level(level, utility: str) -> float:
    q = _as_float(level, "level")
    if utility == "rank" and not (math.isfinite(q) and q >= 0.0):
        raise ValueError(
            f"level must be a finite number >= 0 (rank rho = level * n), got {level!r}"
        )
    if utility == "weighted" and not (math.isfinite(q) and q > 0.0):
        raise ValueError(f"level must be a finite number > 0, got {level!r}")
    return q


def _uninformative(level: float, utility: str) -> bool:
    return level > 1.0 if utility == "rank" else level >= 1.0


def _log_weights(below, at_or_below, n: int, level: float, epsilon: float, utility: str):
    """Unnormalised log-probabilities from ``L_j`` and ``C_j`` (privacy-critical, vectorised).

    ``below`` and ``at_or_below`` are arrays of the same shape (any), ``n`` the public size.
    """
    if utility == "rank":
        rho = level * n
        distance = np.maximum(np.maximum(below - rho, rho - at_or_below), 0.0)
        return -0.5 * epsilon * distance
    utility_w = np.maximum((1.0 - level) * below, level * (n - at_or_below))
    return -epsilon * utility_w / (2.0 * max(level, 1.0 - level))


def private_quantile_log_distribution(
    scores, level: float, epsilon: float, n_bins: int, *, utility: str = "rank"
) -> tuple[np.ndarray, np.ndarray]:
    """Exact log output law of :func:`private_quantile` over all m bins.

    Returns
    -------
    thresholds : ndarray of shape (m,)
        ``e_1..e_m`` (or ``[1.0]`` for an uninformative level).
    log_probabilities : ndarray of shape (m,)
        Natural logs of the release probabilities; all finite.

    Examples
    --------
    >>> t, lp = private_quantile_log_distribution([0.1, 0.5, 0.9], 0.6, 1.0, 4)
    >>> bool(np.isclose(np.exp(lp).sum(), 1.0))
    True
    """
    utility = _check_utility(utility)
    s = check_scores(scores)
    q = _check_level(level, utility)
    eps = check_epsilon(epsilon)
    edges = bin_edges(n_bins)
    if _uninformative(q, utility):
        return np.array([1.0]), np.array([0.0])
    counts = np.bincount(bin_index(s, edges), minlength=edges.size)
    at_or_below = np.cumsum(counts)
    lw = _log_weights(at_or_below - counts, at_or_below, s.size, q, eps, utility)
    return edges, lw - logsumexp(lw)


def private_quantile_distribution(
    scores, level: float, epsilon: float, n_bins: int, *, utility: str = "rank"
) -> tuple[np.ndarray, np.ndarray]:
    """Exact output law of the ε-DP binned quantile (module docstring), for audits and tests.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Conformity scores in [0, 1].
    level : float
        ``"rank"``: target rank over n, ``ρ/n`` in [0, 1] (above 1: a point mass on 1.0).
        ``"weighted"``: quantile level ``q`` > 0 (``>= 1``: a point mass on 1.0).
    epsilon : float
        Privacy parameter > 0.
    n_bins : int
        Number of bins ``m`` >= 2.
    utility : {"rank", "weighted"}, default "rank"
        The certified method's symmetric rank utility, or the paper's weighted one.

    Returns
    -------
    thresholds : ndarray of shape (m,)
    probabilities : ndarray of shape (m,)
        ``P(release = e_j)``; use :func:`private_quantile_log_distribution` for tiny values.

    Examples
    --------
    >>> t, p = private_quantile_distribution(np.linspace(0, 1, 101), 0.9, 50.0, 20)
    >>> float(t[np.argmax(p)]), round(float(p.max()), 3)
    (0.9, 0.924)
    >>> t, p = private_quantile_distribution(
    ...     np.linspace(0, 1, 101), 0.9, 50.0, 20, utility="weighted")
    >>> float(t[np.argmax(p)]), round(float(p.max()), 3)
    (0.9, 0.941)
    """
    thresholds, log_p = private_quantile_log_distribution(
        scores, level, epsilon, n_bins, utility=utility
    )
    return thresholds, np.exp(log_p)


def _row_log_weights(bins: np.ndarray, m: int, level: float, eps: float, utility: str):
    """Candidate log-weights for each row of 0-based bins ``(rows, n)``: the one shared law.

    Dense (``m <= 4(n+1)``): the m bins themselves; returns ``(log_w, None)``.
    Grouped: rows sorted; candidate ``k < n`` is the bin ``sorted[:, k]`` (kept only at the
    first position of a run of equal bins), candidate ``n + k`` the run of empty bins just
    below it, candidate ``2n`` the empty bins above the largest; a run's weight is its length
    times one empty bin's weight. Returns ``(log_w, (sorted, gap_start, gap_len))``.
    """
    rows, n = bins.shape
    if m <= _DENSE_FACTOR * (n + 1):
        flat = (bins + m * np.arange(rows)[:, None]).ravel()
        counts = np.bincount(flat, minlength=rows * m).reshape(rows, m)
        at_or_below = np.cumsum(counts, axis=1)
        return _log_weights(at_or_below - counts, at_or_below, n, level, eps, utility), None
    b = np.sort(bins, axis=1)
    first = np.ones((rows, n), dtype=bool)
    first[:, 1:] = b[:, 1:] != b[:, :-1]
    last = np.ones((rows, n), dtype=bool)
    last[:, :-1] = b[:, :-1] != b[:, 1:]
    position = np.arange(n)
    run_end = np.minimum.accumulate(np.where(last, position, n)[:, ::-1], axis=1)[:, ::-1]
    below = np.broadcast_to(position, (rows, n)).astype(float)  # L at a run's first position
    lw_bin = _log_weights(below, run_end + 1.0, n, level, eps, utility)
    lw_gap = _log_weights(below, below, n, level, eps, utility)  # empty bins: L = C
    lw_top = _log_weights(np.full(rows, float(n)), np.full(rows, float(n)), n, level, eps, utility)
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
    log_w[:, :n] = np.where(first, lw_bin, -np.inf)
    log_w[:, n : 2 * n] = log_len[:, :n] + lw_gap
    log_w[:, 2 * n] = log_len[:, n] + lw_top
    return log_w, (b, gap_start, gap_len)


def _draw_bins(bins: np.ndarray, m: int, level, eps, utility, rng) -> np.ndarray:
    """One 0-based released bin per row of ``bins`` (rows, n), from the shared law."""
    log_w, grouped = _row_log_weights(bins, m, level, eps, utility)
    k = np.asarray(sample_log_weights_rows(log_w, rng), dtype=np.int64)
    if grouped is None:
        return k
    b, gap_start, gap_len = grouped
    n = b.shape[1]
    r = np.arange(k.size)
    j = b[r, np.minimum(k, n - 1)]
    in_gap = k >= n
    g = k[in_gap] - n
    j[in_gap] = gap_start[r[in_gap], g] + rng.integers(gap_len[r[in_gap], g])
    return j


def private_quantiles(
    scores,
    level: float,
    epsilon: float,
    n_bins: int,
    random_state: RandomState = None,
    *,
    utility: str = "rank",
    ledger=None,
    dataset: str | None = None,
) -> np.ndarray:
    """Independent ε-DP releases, one per row of ``scores`` (vectorised, the shared law).

    Row ``r`` is one calibration set; its draw has exactly the law
    :func:`private_quantile_distribution` gives for ``scores[r]``, independently across rows.
    For experiments over many random splits: no Python loop over rows.

    Privacy: each row's release is ε-DP for that row's scores (replace-one with ``n`` public);
    releases about the same people compose (their ε add up). With ``ledger``/``dataset`` the
    call is charged ε once: the rows must hold different people (parallel composition); rows
    about the same people need one call (and one charge) each.

    Parameters
    ----------
    scores : array-like of shape (n_rows, n)
        Each row: one calibration set's scores in [0, 1].
    level, epsilon, n_bins, random_state, utility, ledger, dataset :
        As for :func:`private_quantile`.

    Returns
    -------
    ndarray of shape (n_rows,)
        One released threshold ``j/m`` per row (1.0 everywhere for an uninformative level).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = private_quantiles(rng.uniform(size=(3, 1000)), 0.9, 5.0, 100, random_state=0)
    >>> t.shape, bool(np.all((0.85 < t) & (t < 0.95)))
    ((3,), True)
    """
    utility = _check_utility(utility)
    s = check_scores(scores, ndim=2)
    q = _check_level(level, utility)
    eps = check_epsilon(epsilon)
    edges = bin_edges(n_bins)
    rows, n = s.shape
    settings = {"level": q, "n": int(n), "rows": int(rows), "n_bins": int(edges.size)}
    rng = release_generator(
        random_state, ledger, dataset, eps, what="private_quantiles", settings=settings
    )
    if _uninformative(q, utility):
        return np.ones(rows)
    m = edges.size
    width = m if m <= _DENSE_FACTOR * (n + 1) else 2 * n + 1
    chunk = max(1, _BATCH_CANDIDATES // max(width, n))
    out = np.empty(rows)
    for start in range(0, rows, chunk):  # chunks bound memory; each is vectorised
        bins = _bin_index_fast(s[start : start + chunk], edges)
        out[start : start + chunk] = edges[_draw_bins(bins, m, q, eps, utility, rng)]
    return out


def private_quantile(
    scores,
    level: float,
    epsilon: float,
    n_bins: int,
    random_state: RandomState = None,
    *,
    utility: str = "rank",
    ledger=None,
    dataset: str | None = None,
) -> float:
    """One ε-DP release of a binned quantile of ``scores`` on the grid ``j/m``.

    Privacy: ε-DP under replace-one with ``n`` public (module docstring). An uninformative
    level returns 1.0 without sampling.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Conformity scores in [0, 1].
    level : float
        ``"rank"``: ``ρ/n`` with ρ the target rank in [0, n]; ``"weighted"``: the quantile
        level q (Angelopoulos et al.).
    epsilon : float
        Privacy parameter > 0.
    n_bins : int
        Number of bins ``m`` >= 2.
    utility : {"rank", "weighted"}, default "rank"
    random_state, ledger, dataset :
        Randomness (None: OS entropy, for releases) and budget (charged before any noise),
        as in :func:`~dpuq.mechanisms.randomness.release_generator`.

    Returns
    -------
    float
        One of ``j/m``, j = 1..m.

    Examples
    --------
    >>> private_quantile(np.linspace(0, 1, 101), 0.9, 100.0, 20, random_state=0)
    0.9
    """
    s = check_scores(scores)
    return float(
        private_quantiles(
            s[None, :],
            level,
            epsilon,
            n_bins,
            random_state,
            utility=utility,
            ledger=ledger,
            dataset=dataset,
        )[0]
    )


def private_quantile_from_counts(
    counts,
    level: float,
    epsilon: float,
    random_state: RandomState = None,
    *,
    utility: str = "rank",
    ledger=None,
    dataset: str | None = None,
) -> float:
    """One ε-DP release from the bin counts ``c_1..c_m`` of the scores on ``bin_edges(m)``.

    The same law as :func:`private_quantile` (``n = sum(counts)``, public), drawn by the same
    code (the counts are expanded back to the sorted bins of the scores); for callers that
    count the bins themselves (e.g. out-of-core data). Counts must come from
    :func:`bin_index` on :func:`bin_edges` (the coverage identity). ``ledger``/``dataset``:
    as for :func:`private_quantile`.

    Examples
    --------
    >>> private_quantile_from_counts([0, 5, 90, 5], 0.5, 50.0, random_state=0)
    0.75
    """
    utility = _check_utility(utility)
    c = np.asarray(counts)
    if c.ndim != 1 or c.size < 2 or not np.issubdtype(c.dtype, np.integer) or np.any(c < 0):
        raise ValueError("counts must be a 1-d array of >= 2 non-negative integers")
    if c.sum() == 0:
        raise ValueError("counts must not all be 0 (no scores)")
    q = _check_level(level, utility)
    eps = check_epsilon(epsilon)
    edges = bin_edges(c.size)
    n = int(c.sum())
    settings = {"level": q, "n": n, "n_bins": int(c.size)}
    rng = release_generator(
        random_state, ledger, dataset, eps, what="private_quantile_from_counts", settings=settings
    )
    if _uninformative(q, utility):
        return 1.0
    if c.size <= _DENSE_FACTOR * (n + 1):
        # the dense law straight from the counts: the log-weights and the draw of
        # _row_log_weights/_draw_bins, without expanding n scores (out-of-core callers)
        at_or_below = np.cumsum(c.astype(np.int64))[None, :]
        counts = c.astype(np.int64)[None, :]
        log_w = _log_weights(at_or_below - counts, at_or_below, n, q, eps, utility)
        j = np.asarray(sample_log_weights_rows(log_w, rng), dtype=np.int64)
        return float(edges[int(j[0])])
    occupied = np.flatnonzero(c)
    bins = np.repeat(occupied, c[occupied])[None, :]  # the scores' bins, sorted (n < m/4 here)
    j = _draw_bins(bins, c.size, q, eps, utility, rng)
    return float(edges[int(j[0])])
