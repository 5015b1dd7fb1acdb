"""Coverage and size of prediction sets."""

from __future__ import annotations

import numpy as np

from dpuq._validation import check_labels

__all__ = ["coverage", "coverage_by_set_size", "set_sizes"]


def _check_sets(sets) -> np.ndarray:
    arr = np.asarray(sets)
    if arr.dtype != bool:
        raise ValueError(f"sets must be a boolean array, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError(f"sets must have shape (n_samples, n_classes), got {arr.shape}")
    return arr


def coverage(sets, labels) -> float:
    """Fraction of rows whose set contains the true label.

    Examples
    --------
    >>> coverage([[True, False], [False, True]], [0, 0])
    0.5
    """
    s = _check_sets(sets)
    y = check_labels(labels, s.shape[1], s.shape[0])
    return float(s[np.arange(s.shape[0]), y].mean())


def set_sizes(sets) -> np.ndarray:
    """Number of labels in each set.

    Examples
    --------
    >>> set_sizes([[True, True], [False, True]]).tolist()
    [2, 1]
    """
    return _check_sets(sets).sum(axis=1)


def coverage_by_set_size(sets, labels) -> dict[int, tuple[int, float]]:
    """For each set size present: (number of rows, coverage among them).

    Examples
    --------
    >>> coverage_by_set_size([[True, True], [False, True], [True, False]], [0, 0, 0])
    {1: (2, 0.5), 2: (1, 1.0)}
    """
    s = _check_sets(sets)
    y = check_labels(labels, s.shape[1], s.shape[0])
    sizes = s.sum(axis=1)
    hit = s[np.arange(s.shape[0]), y]
    counts = np.bincount(sizes, minlength=s.shape[1] + 1)
    hits = np.bincount(sizes, weights=hit, minlength=s.shape[1] + 1)
    return {int(k): (int(counts[k]), float(hits[k] / counts[k])) for k in np.flatnonzero(counts)}
