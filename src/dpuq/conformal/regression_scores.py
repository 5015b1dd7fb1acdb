"""Conformity scores for regression with a public bound, and the intervals they give .

The private threshold lives on the grid ``j/m`` of [0, 1], so a regression score must be mapped
to [0, 1]. Both scores here do it with a **public** bound ``B > 0``:

- absolute residual: ``s = min(|y - μ̂(x)| / B, 1)``;
- CQR (Romano, Patterson, Candès 2019): ``r = max(q̂_lo(x) - y, y - q̂_hi(x))``,
  ``s = (min(max(r, -B), B) + B) / (2B)``.

Both maps are monotone in the raw score, so for a released threshold ``t < 1`` the set
``{y : s(x, y) <= t}`` is exactly an interval:

- absolute residual: ``[μ̂(x) - tB, μ̂(x) + tB]``;
- CQR: ``[q̂_lo(x) - B(2t - 1), q̂_hi(x) + B(2t - 1)]`` (for ``t < 1/2`` the quantile band
  shrinks; if it shrinks past empty the interval has ``lower > upper``, an empty set).

A threshold of 1 (no informative release) is the whole line ``(-inf, inf)``: every score is
``<= 1``. Residuals beyond the bound all get score 1, so they are covered only by the whole line:
a bound that is too small widens intervals (more releases at 1) but never loses coverage.

Why the bound must be public: it is part of the score function, and it scales the released
interval width ``tB``. A bound computed from the calibration data (say, its largest residual)
is itself a release about those people that no privacy budget pays for, and is printed in every
interval. Take it from domain knowledge (the range of the outcome), or from data that are not
the calibration set (the training set, whose model is released anyway).
"""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import _as_float, as_real_array, check_array_1d

__all__ = [
    "absolute_residual_intervals",
    "absolute_residual_scores",
    "check_bound",
    "cqr_intervals",
    "cqr_scores",
    "residual_normalised_intervals",
    "residual_normalised_scores",
]


def check_bound(bound, name: str = "bound") -> float:
    """Return the public bound as a float; it must be finite and > 0."""
    if bound is None:
        raise TypeError(
            f"{name} is required: a public bound B > 0 on the residuals (see the docs on "
            "choosing it; it must not be computed from the calibration data)"
        )
    b = _as_float(bound, name)
    if not math.isfinite(b) or b <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {bound!r}")
    return b


def _check_threshold(threshold) -> float:
    t = _as_float(threshold, "threshold")
    if math.isnan(t) or t < 0:
        raise ValueError(f"threshold must be a number >= 0, got {threshold!r}")
    return t


def _check_pair(y_pred, y, name: str = "y_pred") -> tuple[np.ndarray, np.ndarray]:
    p = check_array_1d(y_pred, name)
    t = check_array_1d(y, "y")
    if p.size != t.size:
        raise ValueError(f"{name} has {p.size} entries but y has {t.size}")
    return p, t


def check_quantile_predictions(y_quantiles, name: str = "quantile predictions") -> np.ndarray:
    """Return an (n, 2) float array of finite ``[lower, upper]`` quantile predictions."""
    q = as_real_array(y_quantiles, name)
    if q.ndim != 2 or q.shape[1] != 2:
        raise ValueError(f"{name} must have shape (n, 2) (lower, upper), got {q.shape}")
    check_array_1d(q.ravel(), name)  # non-empty and finite (its errors, no count: data)
    return q


def absolute_residual_scores(y_pred, y, *, bound: float) -> np.ndarray:
    """Absolute-residual score ``min(|y - ŷ| / B, 1)`` with a public bound ``B``.

    Parameters
    ----------
    y_pred : array-like of shape (n,)
        Point predictions ``μ̂(x)``.
    y : array-like of shape (n,)
        True outcomes.
    bound : float
        Public bound ``B > 0``; residuals at or beyond it score 1.

    Returns
    -------
    ndarray of shape (n,), values in [0, 1]

    Examples
    --------
    >>> absolute_residual_scores([1.0, 2.0, 3.0], [1.5, 2.0, 9.0], bound=2.0).tolist()
    [0.25, 0.0, 1.0]
    """
    b = check_bound(bound)
    p, t = _check_pair(y_pred, y)
    with np.errstate(over="ignore"):  # a residual beyond the float range scores 1, exactly
        return np.minimum(np.abs(t - p) / b, 1.0)


def absolute_residual_intervals(y_pred, threshold: float, *, bound: float) -> np.ndarray:
    """Intervals ``[ŷ - tB, ŷ + tB]`` from a released threshold; ``t >= 1``: the whole line.

    Examples
    --------
    >>> absolute_residual_intervals([0.0, 10.0], 0.25, bound=4.0).tolist()
    [[-1.0, 1.0], [9.0, 11.0]]
    >>> absolute_residual_intervals([0.0], 1.0, bound=4.0).tolist()
    [[-inf, inf]]
    """
    b = check_bound(bound)
    t = _check_threshold(threshold)
    p = check_array_1d(y_pred, "y_pred")
    if t >= 1.0:
        return np.column_stack((np.full(p.size, -np.inf), np.full(p.size, np.inf)))
    half = t * b
    with np.errstate(over="ignore"):  # end points beyond the float range are ±inf
        return np.column_stack((p - half, p + half))


def cqr_scores(y_quantiles, y, *, bound: float) -> np.ndarray:
    """CQR score ``max(q̂_lo - y, y - q̂_hi)`` mapped to [0, 1] with a public bound ``B``.

    ``s = (min(max(r, -B), B) + B) / (2B)``: 1/2 on the edge of the quantile band, below
    inside it, 1 at or beyond ``B`` outside it. Only the sets for thresholds ``t < 1`` are used,
    and for those the map changes no decision (module docstring).

    Parameters
    ----------
    y_quantiles : array-like of shape (n, 2)
        Lower and upper quantile predictions ``q̂_lo(x), q̂_hi(x)``.
    y : array-like of shape (n,)
        True outcomes.
    bound : float
        Public bound ``B > 0`` on ``|r|``.

    Examples
    --------
    >>> cqr_scores([[0.0, 2.0], [0.0, 2.0], [0.0, 2.0]], [1.0, 3.0, -9.0], bound=2.0).tolist()
    [0.25, 0.75, 1.0]
    """
    b = check_bound(bound)
    q = check_quantile_predictions(y_quantiles, "y_quantiles")
    t = check_array_1d(y, "y")
    if t.size != q.shape[0]:
        raise ValueError(f"y_quantiles has {q.shape[0]} rows but y has {t.size} entries")
    with np.errstate(over="ignore"):  # ±inf differences clip to ±b, exactly
        r = np.maximum(q[:, 0] - t, t - q[:, 1])
    return (np.clip(r, -b, b) + b) / (2.0 * b)


def cqr_intervals(y_quantiles, threshold: float, *, bound: float) -> np.ndarray:
    """Intervals ``[q̂_lo - B(2t-1), q̂_hi + B(2t-1)]`` from a released threshold.

    ``t >= 1`` gives the whole line. Rows with ``lower > upper`` are empty sets (possible when
    ``t < 1/2`` shrinks a narrow band).

    Examples
    --------
    >>> cqr_intervals([[0.0, 2.0]], 0.75, bound=2.0).tolist()
    [[-1.0, 3.0]]
    >>> cqr_intervals([[0.0, 2.0]], 1.0, bound=2.0).tolist()
    [[-inf, inf]]
    """
    b = check_bound(bound)
    t = _check_threshold(threshold)
    q = check_quantile_predictions(y_quantiles, "y_quantiles")
    if t >= 1.0:
        return np.column_stack((np.full(q.shape[0], -np.inf), np.full(q.shape[0], np.inf)))
    shift = b * (2.0 * t - 1.0)
    with np.errstate(over="ignore"):  # end points beyond the float range are ±inf
        return np.column_stack((q[:, 0] - shift, q[:, 1] + shift))


def _check_std(y_std, size: int) -> np.ndarray:
    sd = check_array_1d(y_std, "y_std")
    if sd.size != size:
        raise ValueError(f"y_std has {sd.size} entries but y_pred has {size}")
    if not np.all(np.isfinite(sd)) or np.any(sd <= 0):
        raise ValueError("y_std must be finite and > 0 (a public model's spread estimates)")
    return sd


def residual_normalised_scores(y_pred, y_std, y, *, bound: float) -> np.ndarray:
    """Normalised residual ``min(|y - μ̂(x)| / (σ̂(x) B), 1)`` (MAPIE's ResidualNormalisedScore).

    ``σ̂(x) > 0`` is a spread estimate from a model fitted on other people (public for the
    calibration set); ``B`` a public bound on the normalised residual. Intervals:
    :func:`residual_normalised_intervals`.

    Examples
    --------
    >>> residual_normalised_scores([0.0, 0.0], [1.0, 2.0], [1.0, 1.0], bound=4.0).tolist()
    [0.25, 0.125]
    """
    b = check_bound(bound)
    p, t = _check_pair(y_pred, y)
    sd = _check_std(y_std, p.size)
    with np.errstate(over="ignore"):
        return np.minimum(np.abs(t - p) / (sd * b), 1.0)


def residual_normalised_intervals(y_pred, y_std, threshold: float, *, bound: float) -> np.ndarray:
    """Intervals ``[μ̂ - tBσ̂, μ̂ + tBσ̂]`` from a released threshold; ``t >= 1``: the whole line.

    Examples
    --------
    >>> residual_normalised_intervals([0.0], [2.0], 0.25, bound=4.0).tolist()
    [[-2.0, 2.0]]
    """
    b = check_bound(bound)
    t = _check_threshold(threshold)
    p = check_array_1d(y_pred, "y_pred")
    sd = _check_std(y_std, p.size)
    if t >= 1.0:
        return np.column_stack((np.full(p.size, -np.inf), np.full(p.size, np.inf)))
    with np.errstate(over="ignore"):
        half = t * b * sd
        return np.column_stack((p - half, p + half))
