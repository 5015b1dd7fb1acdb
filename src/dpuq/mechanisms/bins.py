"""The public grid of the binned quantiles: thresholds ``e_j = j/m`` and each score's bin.

Binning and prediction sets compare against one array, :func:`bin_edges`, so ``S <= e_k``
exactly when ``b(S) <= k`` (the identity the coverage proofs use). The grid depends on ``m``
only (public); the privacy argument of the release drawn over it is at the top of
:mod:`dpuq.mechanisms.quantile`.
"""

from __future__ import annotations

import numpy as np

from dpuq._validation import check_n_bins

__all__ = ["bin_edges", "bin_index"]


def bin_edges(n_bins: int) -> np.ndarray:
    """Candidate thresholds ``e_j = j / m`` for ``j = 1..m`` (``e_m`` is exactly 1.0).

    Binning (:func:`bin_index`) and prediction sets both compare against this one array, so
    ``S <= e_k`` exactly when ``b(S) <= k``: the identity the coverage proofs use.

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


def _bin_index_fast(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """:func:`bin_index` for any shape, without a binary search, with identical results.

    Starts from ``ceil(s m) - 1`` and corrects it against the same ``edges`` until
    ``edges[b-1] < s <= edges[b]`` holds exactly (the guess is off by at most one bin).
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
