"""Prediction sets from a released threshold."""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import _as_float, check_scores

__all__ = ["prediction_sets"]


def prediction_sets(score_matrix, threshold: float) -> np.ndarray:
    """Boolean prediction sets ``S(x, y) <= threshold``.

    Uses the same comparison as calibration binning : a score equal to a bin edge
    is in the set exactly when its bin is at or below the released bin. A threshold >= 1
    (or ``inf`` from the non-private baseline) gives full sets.

    Parameters
    ----------
    score_matrix : array-like of shape (n, K)
        Scores of every label, in [0, 1].
    threshold : float
        Released threshold (not NaN).

    Returns
    -------
    ndarray of bool, shape (n, K)

    Examples
    --------
    >>> prediction_sets([[0.1, 0.5, 0.9]], 0.5).tolist()
    [[True, True, False]]
    """
    s = check_scores(score_matrix, "score_matrix", ndim=2)
    t = _as_float(threshold, "threshold")
    if math.isnan(t):
        raise ValueError("threshold is NaN")
    return s <= t
