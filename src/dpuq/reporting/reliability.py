"""Reliability diagrams (matplotlib, from the ``demo`` extra; imported only when called)."""

from __future__ import annotations

import numpy as np

from dpuq.metrics.calibration import reliability_curve

__all__ = ["plot_reliability", "reliability_diagram"]


def plot_reliability(confidence, accuracy, *, label: str | None = None, ax=None):
    """Plot accuracy against confidence per bin, with the diagonal of perfect calibration.

    Bins with NaN (empty) are skipped. Points below the diagonal are overconfident.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(4.6, 4.6))
    conf = np.asarray(confidence, dtype=float)
    acc = np.asarray(accuracy, dtype=float)
    keep = np.isfinite(conf) & np.isfinite(acc)
    if not ax.lines:
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect calibration")
    ax.plot(conf[keep], acc[keep], marker="o", ms=3, label=label)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence (top-label probability)")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=8, loc="upper left")
    return ax


def reliability_diagram(probs, labels, n_bins: int = 15, *, label: str | None = None, ax=None):
    """Reliability diagram of a classifier's top-label confidence (Guo et al. 2017).

    Parameters
    ----------
    probs : array-like of shape (n_samples, n_classes)
    labels : array-like of shape (n_samples,)
    n_bins : int, default 15
    label : str, optional
        Legend entry.
    ax : matplotlib.axes.Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> ax = reliability_diagram([[0.9, 0.1], [0.3, 0.7]], [0, 1], label="model")
    >>> ax.get_xlabel()
    'confidence (top-label probability)'
    """
    curve = reliability_curve(probs, labels, n_bins)
    return plot_reliability(curve.confidence, curve.accuracy, label=label, ax=ax)
