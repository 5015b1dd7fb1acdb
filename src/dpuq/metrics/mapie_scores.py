"""Coverage and width of prediction sets and intervals, under MAPIE's metric names.

Each takes one level, (n, K) sets or (n, 2) intervals, and returns a float; or several levels,
(n, K, L) sets or (n, 2, L) intervals (the shapes the estimators return for a sequence of
confidence levels), and returns an array of L values. The size-stratified coverage (``*_ssc``:
coverage among the rows whose set or interval has a given size; Angelopoulos & Bates, *A gentle
introduction to conformal prediction*, 2021, section 3) returns one row of bins per level, as
MAPIE's does, and ``*_ssc_score`` the worst bin per level.
"""

from __future__ import annotations

import numpy as np

from dpuq._validation import check_array_1d, check_labels

__all__ = [
    "classification_coverage_score",
    "classification_mean_width_score",
    "classification_ssc",
    "classification_ssc_score",
    "regression_coverage_score",
    "regression_mean_width_score",
    "regression_ssc",
    "regression_ssc_score",
]


def _sets(y_pred_set) -> np.ndarray:
    s = np.asarray(y_pred_set)
    if s.dtype != bool or s.ndim not in (2, 3) or s.shape[0] == 0:
        raise ValueError(f"y_pred_set must be boolean (n, K) or (n, K, L), got {s.dtype} {s.shape}")
    return s


def _intervals(y_intervals) -> np.ndarray:
    iv = np.asarray(y_intervals, dtype=float)
    if iv.ndim not in (2, 3) or iv.shape[0] == 0 or iv.shape[1] != 2:
        raise ValueError(f"y_intervals must have shape (n, 2) or (n, 2, L), got {iv.shape}")
    if np.any(np.isnan(iv)):
        raise ValueError("y_intervals must not hold NaN")
    return iv


def _out(values: np.ndarray, three_d: bool):
    return values if three_d else float(np.asarray(values).reshape(-1)[0])


def classification_coverage_score(y_true, y_pred_set):
    """Share of rows whose true label (``0..K-1``) is in its set; one value per level.

    Examples
    --------
    >>> classification_coverage_score([0, 1], [[True, False], [True, False]])
    0.5
    """
    s = _sets(y_pred_set)
    y = check_labels(y_true, s.shape[1], s.shape[0], "y_true")
    hit = s[np.arange(s.shape[0]), y]
    return _out(hit.mean(axis=0), s.ndim == 3)


def classification_mean_width_score(y_pred_set):
    """Mean set size; one value per level.

    Examples
    --------
    >>> classification_mean_width_score([[True, True], [True, False]])
    1.5
    """
    s = _sets(y_pred_set)
    return _out(s.sum(axis=1).mean(axis=0), s.ndim == 3)


def regression_coverage_score(y_true, y_intervals):
    """Share of outcomes inside their interval (bounds included); one value per level.

    Examples
    --------
    >>> regression_coverage_score([0.5, 3.0], [[0.0, 1.0], [0.0, 1.0]])
    0.5
    """
    iv = _intervals(y_intervals)
    y = check_array_1d(y_true, "y_true")
    if y.size != iv.shape[0]:
        raise ValueError(f"y_true has {y.size} entries but y_intervals has {iv.shape[0]} rows")
    t = y if iv.ndim == 2 else y[:, None]
    return _out(((iv[:, 0] <= t) & (t <= iv[:, 1])).mean(axis=0), iv.ndim == 3)


def regression_mean_width_score(y_intervals):
    """Mean width ``upper - lower`` (``inf`` when an interval is unbounded); one per level.

    Examples
    --------
    >>> regression_mean_width_score([[0.0, 1.0], [0.0, 3.0]])
    2.0
    """
    iv = _intervals(y_intervals)
    return _out((iv[:, 1] - iv[:, 0]).mean(axis=0), iv.ndim == 3)


def _hits(y_true, y_pred_set) -> tuple[np.ndarray, np.ndarray]:
    """Covered (n, L) and set sizes (n, L) of boolean sets (a 2-d input gets L = 1)."""
    s = _sets(y_pred_set)
    s3 = s if s.ndim == 3 else s[:, :, None]
    y = check_labels(y_true, s.shape[1], s.shape[0], "y_true")
    return s3[np.arange(s.shape[0]), y], s3.sum(axis=1)


def _size_bins(n_classes: int, num_bins: int | None) -> list[np.ndarray]:
    """Contiguous groups of the sizes 0..K (one per size when ``num_bins`` is None)."""
    sizes = np.arange(n_classes + 1)
    if num_bins is None:
        return [sizes[i : i + 1] for i in sizes]
    if isinstance(num_bins, bool) or not isinstance(num_bins, int | np.integer) or num_bins < 1:
        raise ValueError(f"num_bins must be a positive integer or None, got {num_bins!r}")
    if num_bins > n_classes + 1:
        raise ValueError(f"num_bins must be at most n_classes + 1 = {n_classes + 1}")
    return np.array_split(sizes, num_bins)


def _binned_coverage(hit: np.ndarray, key: np.ndarray, groups) -> np.ndarray:
    """Coverage per group of ``key`` values (NaN for an empty group): shape (L, n_groups)."""
    out = np.full((hit.shape[1], len(groups)), np.nan)
    for b, members in enumerate(groups):  # a handful of bins: a loop over bins, not rows
        inside = np.isin(key, members)  # (n, L)
        count = inside.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, b] = np.where(count > 0, (hit & inside).sum(axis=0) / count, np.nan)
    return out


def classification_ssc(y_true, y_pred_set, num_bins: int | None = None) -> np.ndarray:
    """Size-stratified coverage: the coverage among the rows whose set has each size.

    Returns an array of shape (L, num_bins) (L = 1 for (n, K) sets): one column per size
    0..K when ``num_bins`` is None, else per contiguous group of sizes. NaN where no set has
    that size.

    Examples
    --------
    >>> sets = np.array([[True, False], [True, True], [False, True], [True, True]])
    >>> classification_ssc([0, 1, 0, 0], sets).tolist()
    [[nan, 0.5, 1.0]]
    """
    hit, size = _hits(y_true, y_pred_set)
    return _binned_coverage(hit, size, _size_bins(np.asarray(y_pred_set).shape[1], num_bins))


def classification_ssc_score(y_true, y_pred_set, num_bins: int | None = None):
    """The worst size-stratified coverage (minimum over nonempty bins); one value per level.

    Examples
    --------
    >>> sets = np.array([[True, False], [True, True], [False, True], [True, True]])
    >>> classification_ssc_score([0, 1, 0, 0], sets)
    0.5
    """
    ssc = classification_ssc(y_true, y_pred_set, num_bins)
    return _out(np.nanmin(ssc, axis=1), np.ndim(y_pred_set) == 3)


def regression_ssc(y_true, y_intervals, num_bins: int = 3) -> np.ndarray:
    """Size-stratified coverage of intervals: rows ranked by width, split into ``num_bins``
    groups of (nearly) equal count, the coverage of each; shape (L, num_bins).

    Examples
    --------
    >>> iv = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 5.0], [0.0, 5.0]])
    >>> regression_ssc([0.5, 2.0, 1.0, 3.0], iv, num_bins=2).tolist()
    [[0.5, 1.0]]
    """
    iv = _intervals(y_intervals)
    y = check_array_1d(y_true, "y_true")
    if y.size != iv.shape[0]:
        raise ValueError(f"y_true has {y.size} entries but y_intervals has {iv.shape[0]} rows")
    if isinstance(num_bins, bool) or not isinstance(num_bins, int | np.integer) or num_bins < 1:
        raise ValueError(f"num_bins must be a positive integer, got {num_bins!r}")
    if num_bins > y.size:
        raise ValueError(f"num_bins must be at most the number of rows ({y.size})")
    iv3 = iv if iv.ndim == 3 else iv[:, :, None]
    t = y[:, None]
    hit = (iv3[:, 0] <= t) & (t <= iv3[:, 1])  # (n, L)
    rank = np.argsort(np.argsort(iv3[:, 1] - iv3[:, 0], axis=0, kind="stable"), axis=0)
    groups = np.array_split(np.arange(y.size), num_bins)
    return _binned_coverage(hit, rank, groups)


def regression_ssc_score(y_true, y_intervals, num_bins: int = 3):
    """The worst size-stratified coverage of intervals; one value per level.

    Examples
    --------
    >>> iv = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 5.0], [0.0, 5.0]])
    >>> regression_ssc_score([0.5, 2.0, 1.0, 3.0], iv, num_bins=2)
    0.5
    """
    ssc = regression_ssc(y_true, y_intervals, num_bins)
    return _out(np.nanmin(ssc, axis=1), np.ndim(y_intervals) == 3)
