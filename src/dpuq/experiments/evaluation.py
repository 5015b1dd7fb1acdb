"""Evaluate prediction sets over many random calibration/test splits at once (vectorised).

The experiments (``dpuq demo``, ``dpuq reproduce``) all follow the same design: a pool of
labelled points with fixed model outputs is split at random, many times, into a calibration
part and a test part; each split's calibration part gives one threshold (non-private split
conformal, or the ε-DP release), and the test part measures coverage and set size.

Nothing here loops over test points or splits in Python:

- **coverage** needs only the true-label scores: ``S(x_i, y_i) <= t`` for every test point of
  every split is one comparison of an (n_splits, n_test) gather with the thresholds;
- **set sizes** ``#{k : S(x_i, k) <= t}`` come from each row's sorted scores by a vectorised
  binary search over all (split, test point) pairs at once (:func:`count_at_most`): about
  ``log2(K)`` gathers, exact (no float offsets that could merge a score with a threshold);
- **thresholds** for all splits: the non-private order statistic by one ``np.partition``, the
  private ones by :func:`dpuq.mechanisms.quantile.private_quantiles` (one exact ε-DP draw per
  split).

These are experiment tools: every split is a separate simulated release on overlapping
people. A deployment releases one threshold (one split), with the privacy stated for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpuq._progress import progress
from dpuq._validation import check_alpha, check_epsilon, check_positive_int
from dpuq.conformal.calibration import _order_statistic_rank, _resolve_bins_gamma
from dpuq.conformal.scores import lac_scores
from dpuq.mechanisms.quantile import private_quantiles
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.planning.levels import _certified_rho, _check_method, _level, _level_from_rho
from dpuq.privacy.ledger import CALLER_CHARGED

__all__ = [
    "PrivateThresholds",
    "ScorePool",
    "SplitMetrics",
    "count_at_most",
    "evaluate_thresholds",
    "private_thresholds",
    "random_splits",
    "split_conformal_thresholds",
]

#: Queries per chunk in :func:`count_at_most` and :func:`evaluate_thresholds`.
_CHUNK = 1 << 21


@dataclass(frozen=True)
class ScorePool:
    """LAC scores of a pool of labelled points: what evaluation needs, nothing more.

    Attributes
    ----------
    true_scores : ndarray of shape (N,)
        ``S(x_i, y_i) = 1 - p̂_{y_i}(x_i)``.
    sorted_scores : ndarray of shape (N, K)
        Each row's scores of every label, ascending.
    labels : ndarray of int, shape (N,), optional
        The true labels (for coverage class by class).
    """

    true_scores: np.ndarray
    sorted_scores: np.ndarray
    labels: np.ndarray | None = None

    @property
    def n_points(self) -> int:
        return int(self.true_scores.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.sorted_scores.shape[1])

    @classmethod
    def from_probs(cls, probs, labels, chunk: int = 4096, show_progress: bool = False) -> ScorePool:
        """Build the pool from class probabilities (n, K) and labels, ``chunk`` rows at a time.

        Examples
        --------
        >>> pool = ScorePool.from_probs([[0.7, 0.3], [0.2, 0.8]], [0, 0])
        >>> pool.true_scores.tolist(), pool.sorted_scores.tolist()
        ([0.30000000000000004, 0.8], [[0.30000000000000004, 0.7], [0.19999999999999996, 0.8]])
        """
        probs = np.asarray(probs)
        labels = np.asarray(labels)
        if probs.ndim != 2:
            raise ValueError(
                f"probs must be 2-dimensional (n_samples, n_classes), got {probs.shape}"
            )
        n = probs.shape[0]
        if labels.shape != (n,):
            raise ValueError(f"labels has shape {labels.shape}, expected ({n},)")
        true = np.empty(n)
        ordered = np.empty(probs.shape)
        starts = range(0, n, chunk)
        for start in progress(starts, "conformity scores", disable=not show_progress):
            part = slice(start, start + chunk)
            matrix = lac_scores(probs[part])
            true[part] = lac_scores(probs[part], labels[part])
            matrix.sort(axis=1)
            ordered[part] = matrix
        return cls(true, ordered, labels.astype(np.int64, copy=False))


def random_splits(
    n_points: int, n_calibration: int, n_test: int | None, n_splits: int, random_state: RandomState
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of ``n_splits`` independent random calibration/test splits of ``n_points``.

    Each split is a uniformly random permutation: its first ``n_calibration`` points calibrate,
    the next ``n_test`` (default: all the rest) test. Returns two int arrays of shapes
    (n_splits, n_calibration) and (n_splits, n_test).

    Examples
    --------
    >>> cal, test = random_splits(10, 4, None, 3, random_state=0)
    >>> cal.shape, test.shape, sorted(cal[0].tolist() + test[0].tolist()) == list(range(10))
    ((3, 4), (3, 6), True)
    """
    n_points = check_positive_int(n_points, "n_points", minimum=2)
    n_calibration = check_positive_int(n_calibration, "n_calibration")
    n_splits = check_positive_int(n_splits, "n_splits")
    if n_test is None:
        n_test = n_points - n_calibration
    n_test = check_positive_int(n_test, "n_test")
    if n_calibration + n_test > n_points:
        raise ValueError(
            f"n_calibration + n_test = {n_calibration + n_test} exceeds the {n_points} points"
        )
    rng = check_random_state(random_state)
    perm = rng.permuted(np.tile(np.arange(n_points, dtype=np.int64), (n_splits, 1)), axis=1)
    return perm[:, :n_calibration], perm[:, n_calibration : n_calibration + n_test]


def split_conformal_thresholds(cal_scores: np.ndarray, alpha: float) -> np.ndarray:
    """Non-private split-conformal threshold of each row (exact rank; ``inf`` when k > n).

    Row by row equal to :func:`dpuq.split_conformal_threshold`.

    Examples
    --------
    >>> split_conformal_thresholds(np.array([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]]), 0.3)
    array([0.7])
    """
    s = np.asarray(cal_scores, dtype=float)
    if s.ndim != 2 or s.size == 0:
        raise ValueError(f"cal_scores must be a non-empty 2-d array, got shape {s.shape}")
    alpha = check_alpha(alpha, upper=1.0 - 1e-15)
    k = _order_statistic_rank(s.shape[1], alpha)
    if k > s.shape[1]:
        return np.full(s.shape[0], math.inf)
    return np.partition(s, k - 1, axis=1)[:, k - 1].copy()


@dataclass(frozen=True)
class PrivateThresholds:
    """One ε-DP threshold per split and the public settings used for all of them."""

    thresholds: np.ndarray
    level: float
    n_bins: int
    gamma: float | None
    epsilon: float
    informative: bool
    method: str = "certified"


def private_thresholds(
    cal_scores: np.ndarray,
    *,
    alpha: float,
    epsilon: float,
    n_bins: int | str = "auto",
    gamma: float | str = "auto",
    method: str = "certified",
    random_state: RandomState = None,
) -> PrivateThresholds:
    """One independent ε-DP release (as :func:`dpuq.calibrate` with ``method``) per row.

    The level, bins (and γ for ``method="paper"``) depend only on (n, α, ε) and are shared;
    each row's threshold is one exact draw of the private quantile of that row
    (:func:`dpuq.mechanisms.quantile.private_quantiles`), or the constant 1.0 when no level
    is informative (full sets, nothing sampled).

    Examples
    --------
    >>> s = np.random.default_rng(0).uniform(size=(4, 2000))
    >>> r = private_thresholds(s, alpha=0.1, epsilon=1.0, random_state=0)
    >>> r.thresholds.shape, bool(np.all(r.thresholds >= 0.85)), r.informative
    ((4,), True, True)
    """
    s = np.asarray(cal_scores, dtype=float)
    if s.ndim != 2 or s.size == 0:
        raise ValueError(f"cal_scores must be a non-empty 2-d array, got shape {s.shape}")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    method = _check_method(method)
    n = s.shape[1]
    m, g = _resolve_bins_gamma(n, alpha, epsilon, n_bins, gamma, method)
    if method == "paper":
        q, utility = _level(n, alpha, epsilon, m, g), "weighted"
        informative = q < 1.0
    else:
        q = _level_from_rho(n, _certified_rho(n, alpha, epsilon, m), alpha, epsilon, m)
        utility, informative = "rank", math.isfinite(q)
    if informative:
        t = private_quantiles(  # a simulation on given scores, not a release about people
            s,
            q,
            epsilon,
            m,
            check_random_state(random_state),
            utility=utility,
            ledger=CALLER_CHARGED,
        )
    else:
        t = np.ones(s.shape[0])
    gamma_out = None if g is None else float(g)
    return PrivateThresholds(t, float(q), int(m), gamma_out, epsilon, bool(informative), method)


def count_at_most(sorted_scores: np.ndarray, rows: np.ndarray, thresholds: np.ndarray):
    """``#{k : sorted_scores[rows[i], k] <= thresholds[i]}`` for every i, exactly.

    A binary search run for all queries at once: ``ceil(log2(K + 1))`` rounds of one gather
    each, so O(Q log K) work for Q queries, never an (Q, K) comparison.

    Examples
    --------
    >>> s = np.array([[0.1, 0.5, 0.9], [0.2, 0.2, 0.3]])
    >>> count_at_most(s, np.array([0, 0, 1, 1]), np.array([0.5, 0.05, 0.2, 1.0])).tolist()
    [2, 0, 2, 3]
    """
    k = sorted_scores.shape[1]
    flat = sorted_scores.reshape(-1)
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    t = np.asarray(thresholds, dtype=float).reshape(-1)
    lo = np.zeros(rows.size, dtype=np.int64)
    hi = np.full(rows.size, k, dtype=np.int64)
    base = rows * k
    for _ in range(int(k).bit_length()):
        mid = (lo + hi) >> 1
        go = flat[base + np.minimum(mid, k - 1)] <= t
        go &= lo < hi
        lo = np.where(go, mid + 1, lo)
        hi = np.where(go, hi, mid)
    return lo


@dataclass(frozen=True)
class SplitMetrics:
    """Coverage and set size of one calibration method over many splits.

    Attributes
    ----------
    coverage, mean_size, singleton, empty : ndarray of shape (n_splits,)
        Per split: share of test points covered, mean set size, share of sets with exactly one
        label, share of empty sets.
    size_counts : ndarray of shape (K + 1,)
        Number of test sets of each size, pooled over all splits.
    thresholds : ndarray of shape (n_splits,)
    size_hits : ndarray of shape (K + 1,), optional
        Number of those sets that contain the true label (size-stratified coverage:
        ``size_hits / size_counts``).
    class_counts, class_hits : ndarray of shape (K,), optional
        Test points of each true class and how many of them were covered, pooled over splits.
    """

    coverage: np.ndarray
    mean_size: np.ndarray
    singleton: np.ndarray
    empty: np.ndarray
    size_counts: np.ndarray
    thresholds: np.ndarray
    size_hits: np.ndarray | None = None
    class_counts: np.ndarray | None = None
    class_hits: np.ndarray | None = None

    def conditional(self, confidence_level: float) -> dict:
        """Size-stratified coverage (NaN for sizes never seen), its violation (Angelopoulos &
        Bates' SSCV: the largest gap to ``confidence_level`` over the sizes seen) and
        coverage class by class, all splits pooled (:mod:`dpuq.metrics`)."""
        if self.size_hits is None:
            raise ValueError("these metrics were computed without per-size hits")
        with np.errstate(invalid="ignore", divide="ignore"):
            by_size = np.where(self.size_counts > 0, self.size_hits / self.size_counts, np.nan)
            by_class = (
                None
                if self.class_counts is None
                else np.where(self.class_counts > 0, self.class_hits / self.class_counts, np.nan)
            )
        return {
            "coverage_by_size": by_size,
            "sscv": float(np.nanmax(np.abs(by_size - confidence_level))),
            "coverage_by_class": by_class,
        }

    def summary(self) -> dict[str, float]:
        """Means over splits and the 5th/95th percentiles of coverage and size."""
        c5, c95 = np.percentile(self.coverage, [5, 95])
        s5, s95 = np.percentile(self.mean_size, [5, 95])
        return {
            "coverage_mean": float(self.coverage.mean()),
            "coverage_p5": float(c5),
            "coverage_p95": float(c95),
            "size_mean": float(self.mean_size.mean()),
            "size_p5": float(s5),
            "size_p95": float(s95),
            "singleton_share": float(self.singleton.mean()),
            "empty_share": float(self.empty.mean()),
            "n_splits": int(self.coverage.size),
        }


def evaluate_thresholds(
    pool: ScorePool, test_idx: np.ndarray, thresholds: np.ndarray
) -> SplitMetrics:
    """Coverage and set sizes of the sets ``{y : S(x, y) <= t_s}`` on each split's test points.

    Parameters
    ----------
    pool : ScorePool
    test_idx : ndarray of shape (n_splits, n_test)
        Test point indices of each split (e.g. from :func:`random_splits`).
    thresholds : ndarray of shape (n_splits,)
        One threshold per split (``inf`` gives full sets).

    Examples
    --------
    >>> pool = ScorePool.from_probs([[0.7, 0.3], [0.4, 0.6], [0.9, 0.1]], [0, 0, 0])
    >>> m = evaluate_thresholds(pool, np.array([[0, 1, 2]]), np.array([0.5]))
    >>> m.coverage.tolist(), m.mean_size.tolist(), m.size_counts.tolist()
    ([0.6666666666666666], [1.0], [0, 3, 0])
    """
    test_idx = np.asarray(test_idx, dtype=np.int64)
    t = np.asarray(thresholds, dtype=float)
    if test_idx.ndim != 2 or t.shape != (test_idx.shape[0],):
        raise ValueError(
            f"test_idx must be (n_splits, n_test) and thresholds (n_splits,); got "
            f"{test_idx.shape} and {t.shape}"
        )
    if np.isnan(t).any():
        raise ValueError("thresholds contain NaN")
    n_splits, n_test = test_idx.shape
    k = pool.n_classes
    covered = np.empty(n_splits)
    mean_size = np.empty(n_splits)
    singleton = np.empty(n_splits)
    empty = np.empty(n_splits)
    size_counts = np.zeros(k + 1, dtype=np.int64)
    size_hits = np.zeros(k + 1, dtype=np.int64)
    labelled = pool.labels is not None
    class_counts = np.zeros(k, dtype=np.int64) if labelled else None
    class_hits = np.zeros(k, dtype=np.int64) if labelled else None
    step = max(1, _CHUNK // n_test)
    for start in range(0, n_splits, step):
        part = slice(start, start + step)
        idx = test_idx[part]
        ts = t[part, None]
        hit = pool.true_scores[idx] <= ts
        covered[part] = hit.mean(axis=1)
        sizes = count_at_most(pool.sorted_scores, idx, np.broadcast_to(ts, idx.shape))
        sizes = sizes.reshape(idx.shape)
        size_hits += np.bincount(sizes.ravel(), weights=hit.ravel(), minlength=k + 1).astype(
            np.int64
        )
        if labelled:
            y = pool.labels[idx].ravel()
            class_counts += np.bincount(y, minlength=k)
            class_hits += np.bincount(y, weights=hit.ravel(), minlength=k).astype(np.int64)
        mean_size[part] = sizes.mean(axis=1)
        singleton[part] = (sizes == 1).mean(axis=1)
        empty[part] = (sizes == 0).mean(axis=1)
        size_counts += np.bincount(sizes.ravel(), minlength=k + 1)
    return SplitMetrics(
        covered, mean_size, singleton, empty, size_counts, t.copy(), size_hits, class_counts,
        class_hits,
    )  # fmt: skip
