"""Calibration metrics for probabilistic classifiers (numpy only).

A classifier is calibrated when, among the inputs to which it gives probability ``c`` for a class,
that class is the true one a fraction ``c`` of the time (Guo et al. 2017; Nixon et al. 2019).
Every metric here takes ``probs`` of shape ``(n_samples, n_classes)`` (rows summing to 1) and
integer ``labels`` in ``0..n_classes-1``.

- :func:`expected_calibration_error` (ECE): top-label confidence, equal-width bins.
- :func:`static_calibration_error` (SCE): every class, equal-width bins, averaged over classes.
- :func:`adaptive_calibration_error` (ACE): every class, equal-mass bins, averaged over classes
  and bins.
- :func:`reliability_curve`: the per-bin confidence and accuracy behind ECE (for diagrams).
- :func:`multiclass_auc`: one-vs-rest ROC AUC averaged over classes.

Bins are half-open on the left: with edges ``e_0 = 0 < e_1 < ... < e_M = 1``
(``numpy.linspace(0, 1, M + 1)``), bin ``b`` holds the values in ``(e_{b-1}, e_b]`` and the
first bin also holds 0.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dpuq._validation import check_labels, check_n_bins, check_probabilities

__all__ = [
    "ReliabilityCurve",
    "adaptive_calibration_error",
    "expected_calibration_error",
    "multiclass_auc",
    "reliability_curve",
    "static_calibration_error",
]


def _check(probs, labels, n_bins) -> tuple[np.ndarray, np.ndarray, int]:
    p = check_probabilities(probs, "probs")
    y = check_labels(labels, p.shape[1], p.shape[0], "labels")
    m = check_n_bins(n_bins, minimum=1)
    return p, y, m


def _equal_width_bins(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin index in ``0..n_bins-1`` of each value in [0, 1]; bins ``(e_{b-1}, e_b]``."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.searchsorted(edges, values, side="left") - 1
    return np.clip(idx, 0, n_bins - 1)  # value 0 -> bin 0; values are already in [0, 1]


def _top_label(probs, labels, n_bins):
    """Checked inputs to the top-label confidence ``max_k p_k(x)``, whether the top label is
    right (0/1), the confidence's equal-width bin, and the number of bins."""
    p, y, m = _check(probs, labels, n_bins)
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(float)
    return conf, correct, _equal_width_bins(conf, m), m


class ReliabilityCurve(NamedTuple):
    """Top-label reliability per equal-width bin.

    Attributes
    ----------
    bin_edges : ndarray of shape (n_bins + 1,)
    confidence : ndarray of shape (n_bins,)
        Mean top-label confidence in each bin (NaN where the bin is empty).
    accuracy : ndarray of shape (n_bins,)
        Fraction of correct top-label predictions in each bin (NaN where the bin is empty).
    counts : ndarray of shape (n_bins,)
        Number of samples in each bin.
    """

    bin_edges: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    counts: np.ndarray


def reliability_curve(probs, labels, n_bins: int = 15) -> ReliabilityCurve:
    """Mean confidence and accuracy of the top-label prediction in equal-width bins.

    Parameters
    ----------
    probs : array-like of shape (n_samples, n_classes)
        Predicted class probabilities (rows sum to 1).
    labels : array-like of shape (n_samples,)
        True classes, integers in ``0..n_classes-1``.
    n_bins : int, default 15
        Number of equal-width confidence bins on [0, 1].

    Returns
    -------
    ReliabilityCurve
        Empty bins have ``counts == 0`` and NaN confidence and accuracy (nothing to show).

    Examples
    --------
    >>> curve = reliability_curve([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]], [0, 1, 1], n_bins=2)
    >>> curve.counts.tolist(), curve.accuracy.tolist()
    ([0, 3], [nan, 0.6666666666666666])
    """
    conf, correct, b, m = _top_label(probs, labels, n_bins)
    counts = np.bincount(b, minlength=m)
    sum_conf = np.bincount(b, weights=conf, minlength=m)
    sum_acc = np.bincount(b, weights=correct, minlength=m)
    nonempty = counts > 0
    mean_conf = np.full(m, np.nan)
    mean_acc = np.full(m, np.nan)
    mean_conf[nonempty] = sum_conf[nonempty] / counts[nonempty]
    mean_acc[nonempty] = sum_acc[nonempty] / counts[nonempty]
    return ReliabilityCurve(np.linspace(0.0, 1.0, m + 1), mean_conf, mean_acc, counts)


def expected_calibration_error(probs, labels, n_bins: int = 15) -> float:
    """Expected calibration error (ECE) of the top-label prediction (Naeini et al. 2015).

    ``ECE = sum_b (|B_b| / n) |acc(B_b) - conf(B_b)|`` over equal-width bins ``B_b`` of the
    top-label confidence ``max_k p_k(x)``; ``acc`` is the fraction of those predictions that are
    right and ``conf`` their mean confidence. 0 is perfect; lower is better.

    Parameters
    ----------
    probs : array-like of shape (n_samples, n_classes)
        Predicted class probabilities (rows sum to 1).
    labels : array-like of shape (n_samples,)
        True classes, integers in ``0..n_classes-1``.
    n_bins : int, default 15

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    Two predictions at confidence 0.9 (bin (0.5, 1] with two bins), one right: accuracy 0.5.

    >>> expected_calibration_error([[0.9, 0.1], [0.1, 0.9]], [0, 0], n_bins=2)
    0.4
    """
    conf, correct, b, m = _top_label(probs, labels, n_bins)
    gap = np.bincount(b, weights=correct - conf, minlength=m)  # n_b (acc_b - conf_b)
    return float(np.abs(gap).sum() / conf.size)


def static_calibration_error(probs, labels, n_bins: int = 15) -> float:
    """Static calibration error (SCE, Nixon et al. 2019): ECE over every class, averaged.

    ``SCE = (1/K) sum_k sum_b (n_bk / n) |acc(b, k) - conf(b, k)|`` where, for class ``k``, all
    ``n`` predicted probabilities ``p_k(x_i)`` are put in equal-width bins; ``acc(b, k)`` is the
    fraction of the bin's samples whose label is ``k`` and ``conf(b, k)`` their mean ``p_k``.

    Parameters
    ----------
    probs : array-like of shape (n_samples, n_classes)
    labels : array-like of shape (n_samples,)
    n_bins : int, default 15

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> static_calibration_error([[0.9, 0.1], [0.1, 0.9]], [0, 0], n_bins=2)
    0.5
    """
    p, y, m = _check(probs, labels, n_bins)
    n, k = p.shape
    onehot = np.zeros_like(p)
    onehot[np.arange(n), y] = 1.0
    cell = _equal_width_bins(p, m) + m * np.arange(k)  # (n, K): class k's bins at k*m..
    gap = np.bincount(cell.ravel(), weights=(onehot - p).ravel(), minlength=k * m)
    return float(np.abs(gap).sum() / (n * k))


def adaptive_calibration_error(probs, labels, n_bins: int = 15) -> float:
    """Adaptive calibration error (ACE, Nixon et al. 2019): equal-mass bins, every class.

    For each class ``k`` the ``n`` predicted probabilities ``p_k(x_i)`` are sorted (stable sort)
    and cut into ``R = n_bins`` ranges of equal size (sizes differ by at most one: sample of
    rank ``i`` goes to range ``floor(i R / n)``). Then
    ``ACE = (1 / (K R)) sum_k sum_r |acc(r, k) - conf(r, k)|``, with ``acc`` the fraction of the
    range's samples labelled ``k`` and ``conf`` their mean ``p_k``.

    Parameters
    ----------
    probs : array-like of shape (n_samples, n_classes)
    labels : array-like of shape (n_samples,)
    n_bins : int, default 15
        Number of ranges per class; at most ``n_samples``.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        If ``n_bins > n_samples`` (some ranges would be empty).

    Examples
    --------
    >>> adaptive_calibration_error([[0.9, 0.1], [0.1, 0.9]], [0, 0], n_bins=2)
    0.5
    """
    p, y, m = _check(probs, labels, n_bins)
    n, k = p.shape
    if m > n:
        raise ValueError(f"n_bins must be <= n_samples for equal-mass bins, got {m} > {n}")
    onehot = np.zeros_like(p)
    onehot[np.arange(n), y] = 1.0
    order = np.argsort(p, axis=0, kind="stable")  # (n, K): rows of rank 0..n-1 per class
    rng_of_rank = (np.arange(n) * m) // n  # range index of each rank
    cell = rng_of_rank[:, None] + m * np.arange(k)  # (n, K) cell of the rank-i sample
    cols = np.arange(k)
    diff = onehot[order, cols] - p[order, cols]
    gap = np.bincount(cell.ravel(), weights=diff.ravel(), minlength=k * m)
    sizes = np.bincount(cell.ravel(), minlength=k * m)
    return float(np.mean(np.abs(gap) / sizes))


def multiclass_auc(probs, labels) -> float:
    """One-vs-rest ROC AUC, macro-averaged over classes.

    For class ``k`` the AUC is the probability that a random sample of class ``k`` gets a
    higher ``p_k`` than a random sample of another class (ties count one half), computed
    from average ranks (Mann-Whitney). The result is the mean over classes.

    Parameters
    ----------
    probs : array-like of shape (n_samples, n_classes)
    labels : array-like of shape (n_samples,)

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        If some class has no sample in ``labels`` (its AUC is undefined).

    Examples
    --------
    >>> multiclass_auc([[0.8, 0.2], [0.6, 0.4], [0.3, 0.7]], [0, 1, 1])
    1.0
    """
    from scipy.stats import rankdata

    p = check_probabilities(probs, "probs")
    n, k = p.shape
    y = check_labels(labels, k, n, "labels")
    n_pos = np.bincount(y, minlength=k)
    missing = np.flatnonzero((n_pos == 0) | (n_pos == n))
    if missing.size:
        raise ValueError(
            f"labels: class(es) {missing.tolist()} have no positive or no negative sample; "
            "their one-vs-rest AUC is undefined"
        )
    ranks = rankdata(p, axis=0)  # average ranks for ties
    onehot = np.zeros_like(p, dtype=bool)
    onehot[np.arange(n), y] = True
    rank_sum = np.where(onehot, ranks, 0.0).sum(axis=0)
    n_neg = n - n_pos
    auc = (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return float(auc.mean())
