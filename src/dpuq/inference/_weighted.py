"""Weighted-array helpers of the ready-made statistics (:mod:`dpuq.inference.statistics`).

Every statistic takes ``sample_weight`` of shape ``(b,)`` or ``(T, b)`` (the release's
vectorised form: one row of weights per fit) and works on ``(T, b)`` internally; a row with
weight 0 is absent, whatever its value. Not a release: plain arithmetic on one subset's rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def _column(index, name: str) -> int:
    if isinstance(index, bool) or not isinstance(index, int | np.integer) or index < 0:
        raise ValueError(f"{name} must be a column index >= 0, got {index!r}")
    return int(index)


def _bounds(bounds, name: str):
    if bounds is None:
        return None
    try:
        lo, hi = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be None or (low, high), got {bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"{name} must be finite with low < high, got {bounds!r}")
    return lo, hi


def _weights(sample_weight) -> np.ndarray:
    return np.atleast_2d(np.asarray(sample_weight, dtype=float))


def _get(rows, index: int) -> np.ndarray:
    """Column ``index`` of ``rows`` (a 1-d ``rows`` is column 0), as floats: a view where
    ``rows`` is already float (never written to)."""
    r = np.asarray(rows, dtype=float)
    if r.ndim == 1:
        if index != 0:
            raise ValueError(f"column {index} asked of one-column rows")
        return r
    return r[:, index]


def _out(values: np.ndarray, sample_weight):
    return values if np.ndim(sample_weight) == 2 else values[0]


def _live(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` per weight row ``(T, b)``, 0 where the weight is 0: a row without weight is
    absent, whatever its value (``0 × inf`` would be NaN)."""
    return np.where(w > 0, v[None, :] if v.ndim == 1 else v, 0.0)


def _nan_where_missing(w: np.ndarray, values: np.ndarray, *columns: np.ndarray) -> np.ndarray:
    """``values`` (one per weight row), NaN (no estimate) where a row with positive weight has
    a NaN in one of ``columns``: a missing value is not silently read as 0 or as a label."""
    missing = np.zeros(w.shape[1], dtype=bool)
    for c in columns:
        missing |= np.isnan(c)
    return np.where((w[:, missing] > 0).any(axis=1), np.nan, values)


def _wmean(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (w * _live(w, v)).sum(axis=1) / w.sum(axis=1)


def _centred(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``v`` minus its weighted mean, per weight row ``(T, b)`` (0 where the weight is 0):
    shifted first by its value at the row's first positively weighted position, so that a
    column constant among the rows with weight is exactly 0 there (a weighted mean of a
    constant such as 0.1 is not exactly 0.1, and its ~1e-17 deviations would make a slope of
    1e16 out of nothing)."""
    shifted = _live(w, v[None, :] - v[np.argmax(w > 0, axis=1)][:, None])
    return _live(w, shifted - ((w * shifted).sum(axis=1) / w.sum(axis=1))[:, None])


def _named(name: str, f: Callable) -> Callable:
    """``f`` under ``np.errstate(all="ignore")`` (undefined values are NaN or ±inf, silently:
    the release counts them as no estimate), named ``name`` (the released interval's name)."""

    def statistic(rows, sample_weight):
        with np.errstate(all="ignore"):
            return f(rows, sample_weight)

    statistic.__name__ = statistic.__qualname__ = name
    statistic.__doc__ = f.__doc__
    return statistic
