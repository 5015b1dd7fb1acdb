"""Input checks shared by every public function.

Each check raises a :class:`ValueError` (or :class:`TypeError`) whose message names the
argument and says what was wrong. Nothing is ever clipped or silently changed.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "NotFittedError",
    "as_array",
    "check_alpha",
    "check_array_1d",
    "check_epsilon",
    "check_labels",
    "check_positive_int",
    "check_probabilities",
    "check_scores",
]


class NotFittedError(ValueError, AttributeError):
    """Raised when a method needs a fitted or conformalized estimator.

    Subclasses ``ValueError`` and ``AttributeError`` like scikit-learn's error of the same name;
    the estimators raise a subclass that is also scikit-learn's (``dpuq._estimator``).
    """


def as_array(x, name: str = "x") -> np.ndarray:
    """``x`` as a numpy array, converting the containers users hold at the boundary.

    Accepts numpy arrays and anything :func:`numpy.asarray` takes, torch tensors (detached and
    moved to the CPU; their dtype is kept, so float16/float32 tolerances still apply), pandas
    and polars Series/DataFrames (``to_numpy()``). Only the container changes: values and
    dtypes are checked by the caller.

    Examples
    --------
    >>> as_array([[0.2, 0.8]]).shape
    (1, 2)
    """
    if isinstance(x, np.ndarray):
        return x
    module = type(x).__module__.split(".")[0]
    if module == "torch" and hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    if module in ("pandas", "polars") and hasattr(x, "to_numpy"):
        try:
            return np.asarray(x.to_numpy())
        except Exception as exc:  # e.g. missing values in a nullable column
            raise ValueError(f"{name}: cannot convert the {type(x).__name__}: {exc}") from None
    return np.asarray(x)


def probability_tolerance(dtype, n_classes: int) -> float:
    """How far from 1 a row of ``n_classes`` probabilities of ``dtype`` may sum: 1e-6 or more.

    A row stored in float16/float32 sums to 1 only within its own precision: each of the
    ``K`` entries carries a rounding error up to half an ulp, so the sum is within
    ``K · eps(dtype)`` of 1 (with a factor 2 of headroom for the summation).

    Examples
    --------
    >>> probability_tolerance(np.float64, 10)
    1e-06
    >>> float(probability_tolerance(np.float16, 10)) > 1e-3
    True
    """
    kind = np.dtype(dtype)
    if kind.kind != "f" or kind.itemsize >= 8:
        return 1e-6
    return max(1e-6, float(n_classes) * float(np.finfo(kind).eps))


def _as_float(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real | np.floating | np.integer):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    return float(value)


def check_epsilon(epsilon, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float; it must be finite and > 0."""
    eps = _as_float(epsilon, name)
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    return eps


def check_alpha(alpha, name: str = "alpha", upper: float = 0.5) -> float:
    """Return the miscoverage level; it must lie in (0, upper] (SPEC A.1: (0, 0.5])."""
    a = _as_float(alpha, name)
    if not (0.0 < a <= upper) or math.isnan(a):
        raise ValueError(f"{name} must be in (0, {upper:g}], got {alpha!r}")
    return a


def check_in_open_unit(value, name: str) -> float:
    """Return ``value`` as a float in the open interval (0, 1)."""
    v = _as_float(value, name)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return v


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float | np.floating) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {v}")
    return v


def check_array_1d(x, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """Return a finite 1-d float array."""
    try:
        arr = np.asarray(as_array(x, name), dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty")
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ValueError(f"{name} has non-finite value(s) (NaN or inf)")  # no count: data
    return arr


def check_scores(scores, name: str = "scores", *, ndim: int | None = 1) -> np.ndarray:
    """Return conformity scores as a float array; every score must lie in [0, 1].

    Scores outside [0, 1], NaN or inf are an error (SPEC A.2); the message carries no count
    or extreme value, which would be data-dependent and not released (issue 12).
    """
    try:
        arr = np.asarray(as_array(scores, name), dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    nonfinite = int(np.count_nonzero(~np.isfinite(arr)))
    if nonfinite:
        raise ValueError(f"{name} has non-finite value(s) (NaN or inf)")  # no count: data
    outside = int(np.count_nonzero((arr < 0.0) | (arr > 1.0)))
    if outside:
        raise ValueError(
            f"{name} must lie in [0, 1]; some values are outside (no count or extremes are "
            "shown: they depend on the data)"
        )
    return arr


def check_probabilities(probs, name: str = "probs", *, atol: float | None = None) -> np.ndarray:
    """Return an (n, K) array of class probabilities, rows >= 0 summing to 1 within ``atol``.

    ``atol=None`` (default) is 1e-6, widened for float16/float32 input to its own precision
    (:func:`probability_tolerance`); such rows are returned in float64 divided by their sums,
    which removes only their rounding, so later checks at 1e-6 accept them. Torch tensors and
    pandas/polars frames are accepted.
    """
    try:
        probs = as_array(probs, name)
        arr = np.asarray(probs, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_samples, n_classes), got {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if arr.shape[1] < 2:
        raise ValueError(f"{name} needs at least 2 classes, got shape {arr.shape}")
    nonfinite = int(np.count_nonzero(~np.isfinite(arr)))
    if nonfinite:
        raise ValueError(f"{name} has non-finite value(s) (NaN or inf)")  # no count: data
    negative = int(np.count_nonzero(arr < 0))
    if negative:
        raise ValueError(f"{name} has {negative} negative value(s); probabilities must be >= 0")
    sums = arr.sum(axis=1)
    dtype = np.dtype(getattr(probs, "dtype", np.float64))
    widened = atol is None and dtype.kind == "f" and dtype.itemsize < 8
    if atol is None:
        atol = probability_tolerance(dtype, arr.shape[1])
    off = np.abs(sums - 1.0) > atol
    if off.any():
        i = int(np.argmax(off))
        raise ValueError(
            f"{name}: {int(off.sum())} row(s) do not sum to 1 (within {atol:g}); "
            f"row {i} sums to {sums[i]:.8g}. Pass probabilities, not logits or scores."
        )
    if widened:
        arr = arr / sums[:, None]
    return arr


def check_labels(labels, n_classes: int, n_samples: int, name: str = "labels") -> np.ndarray:
    """Return integer labels in ``0..n_classes-1`` with ``n_samples`` entries."""
    arr = as_array(labels, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise ValueError(f"{name} has {arr.shape[0]} entries but there are {n_samples} samples")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must be integer class indices")
    elif arr.dtype.kind not in "iub":
        raise ValueError(f"{name} must be integer class indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    bad = int(np.count_nonzero((arr < 0) | (arr >= n_classes)))
    if bad:
        raise ValueError(
            f"{name}: value(s) outside the classes 0..{n_classes - 1} (no count or extremes "
            "are shown: they depend on the data)"
        )
    return arr
