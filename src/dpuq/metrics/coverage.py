"""Coverage and size of prediction sets; conditional coverage (by set size, by group)."""

from __future__ import annotations

import numpy as np

from dpuq._validation import check_labels

__all__ = [
    "coverage",
    "coverage_by_group",
    "coverage_by_set_size",
    "set_sizes",
    "size_stratified_coverage_violation",
]


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


def size_stratified_coverage_violation(
    y_true, y_pred_set, confidence_level, num_bins: int | None = None
):
    """Angelopoulos & Bates' size-stratified coverage violation (SSCV).

    ``max_j |coverage among the rows whose set size is in stratum j - confidence_level|`` over
    the nonempty strata (each size 0..K, or ``num_bins`` contiguous groups of sizes, as
    :func:`dpuq.metrics.classification_ssc`). 0 for sets that cover at the target for every
    size; large when, e.g., small sets under-cover and large ones over-cover. Reference: A. N.
    Angelopoulos and S. Bates, *A gentle introduction to conformal prediction and
    distribution-free uncertainty quantification* (2021), section 3.

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
    y_pred_set : ndarray of bool, shape (n, K) or (n, K, L)
    confidence_level : float, or sequence of L floats
    num_bins : int, optional

    Returns
    -------
    float, or ndarray of shape (L,) for (n, K, L) sets

    Examples
    --------
    >>> sets = np.array([[True, False], [True, True], [False, True], [True, True]])
    >>> size_stratified_coverage_violation([0, 1, 0, 0], sets, 0.9)
    0.4
    """
    from dpuq.metrics.mapie_scores import classification_ssc

    ssc = classification_ssc(y_true, y_pred_set, num_bins)  # (L, bins)
    target = np.atleast_1d(np.asarray(confidence_level, dtype=float))
    if target.size not in (1, ssc.shape[0]) or np.any((target <= 0) | (target >= 1)):
        raise ValueError(
            f"confidence_level must be in (0, 1), one per level ({ssc.shape[0]}), "
            f"got {confidence_level!r}"
        )
    worst = np.nanmax(np.abs(ssc - target[:, None]), axis=1)
    return worst if np.ndim(y_pred_set) == 3 else float(np.round(worst[0], 12))


def coverage_by_group(y_true, y_pred, groups):
    """Coverage per group: counts and coverage of each distinct value of ``groups``.

    ``y_pred`` is boolean sets (n, K) / (n, K, L) with integer labels ``y_true``, or
    intervals (n, 2) / (n, 2, L) with real outcomes ``y_true``. Marginal coverage can hide a
    group that is covered far less often (a site, a class, a subpopulation): this shows it.

    Returns
    -------
    values : ndarray, shape (G,)
        The distinct groups, sorted.
    counts : ndarray of int, shape (G,)
    coverage : ndarray, shape (G,) or (G, L)

    Examples
    --------
    >>> iv = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    >>> g, n, cov = coverage_by_group([0.5, 2.0, 0.2], iv, ["a", "b", "b"])
    >>> g.tolist(), n.tolist(), cov.tolist()
    (['a', 'b'], [1, 2], [1.0, 0.5])
    """
    from dpuq.metrics.mapie_scores import _hits, _intervals

    arr = np.asarray(y_pred)
    if arr.dtype == bool:
        hit, _ = _hits(y_true, arr)
    else:
        iv = _intervals(arr)
        y = np.asarray(y_true, dtype=float)
        if y.shape != (iv.shape[0],):
            raise ValueError(f"y_true must have shape ({iv.shape[0]},), got {y.shape}")
        iv3 = iv if iv.ndim == 3 else iv[:, :, None]
        hit = (iv3[:, 0] <= y[:, None]) & (y[:, None] <= iv3[:, 1])
    g = np.asarray(groups)
    if g.shape != (hit.shape[0],):
        raise ValueError(f"groups must have shape ({hit.shape[0]},), got {g.shape}")
    values, index = np.unique(g, return_inverse=True)
    counts = np.bincount(index, minlength=values.size)
    cov = (
        np.stack(
            [
                np.bincount(index, weights=hit[:, j], minlength=values.size)
                for j in range(hit.shape[1])
            ],
            axis=1,
        )
        / counts[:, None]
    )
    return values, counts, (cov if arr.ndim == 3 else cov[:, 0])
