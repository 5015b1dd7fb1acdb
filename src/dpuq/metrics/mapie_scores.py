"""Coverage and width of prediction sets and intervals, under MAPIE's metric names.

Each takes one level, (n, K) sets or (n, 2) intervals, and returns a float; or several levels,
(n, K, L) sets or (n, 2, L) intervals (the shapes the estimators return for a sequence of
confidence levels), and returns an array of L values.
"""

from __future__ import annotations

import numpy as np

from dpuq._validation import check_array_1d, check_labels

__all__ = [
    "classification_coverage_score",
    "classification_mean_width_score",
    "regression_coverage_score",
    "regression_mean_width_score",
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
    return values if three_d else float(values)


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
