"""Input checks shared by every public function.

Each check raises a :class:`ValueError` (or :class:`TypeError`) whose message names the
argument and says what was wrong. Nothing is ever clipped or silently changed.

Dtype policy (the one place it is decided)
------------------------------------------
- Scores, probabilities and data are *real numbers*: arrays of a float or integer dtype,
  converted to float64 (integers are exact reals; float16/32 are widened exactly). bool,
  complex, str, bytes, object (e.g. a list holding ``None``), datetime and structured arrays
  are a :class:`TypeError` naming the argument: they are never coerced.
- Labels are integers: integer dtypes, or floats whose values are all integral (labels read
  from a text file are floats); bool and everything else is a :class:`TypeError`.
- Array-likes: anything ``numpy.asarray`` accepts, plus objects with ``to_numpy()`` (pandas)
  or ``detach()``/``cpu()``/``numpy()`` (torch tensors); :func:`to_ndarray` is the extension
  point, and the dtype is checked *after* conversion, before any float cast.

Size caps
---------
Every size parameter (bins, resamples, subsets, candidates, grid points) is checked against a
cap before anything is allocated; :func:`check_size` puts the cap and its reason in the
message. ``epsilon`` is capped at :data:`MAX_EPSILON`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "MAX_BINS",
    "MAX_CANDIDATES",
    "MAX_COUNT",
    "MAX_EPSILON",
    "MAX_GRID",
    "MAX_MAGNITUDE",
    "MAX_RESAMPLES",
    "MAX_WORK",
    "MIN_PARAMETER",
    "MIN_SPAN",
    "NotFittedError",
    "as_array",
    "as_real_array",
    "check_alpha",
    "check_array_1d",
    "check_candidates",
    "check_count",
    "check_epsilon",
    "check_grid_size",
    "check_labels",
    "check_magnitude",
    "check_n_bins",
    "check_positive_finite",
    "check_positive_int",
    "check_probabilities",
    "check_random_state_setting",
    "check_scores",
    "check_size",
    "check_span",
    "check_work",
    "to_ndarray",
]


#: Largest ε accepted: e^100 > 10^43 bounds no likelihood ratio worth the name (a release at
#: a larger ε is not private), and larger values overflow e^ε in floating point.
MAX_EPSILON = 100.0
#: Smallest ε, level (alpha, gamma, beta, delta) accepted: below it products such as
#: ``gamma * alpha`` or ``epsilon * n`` underflow to 0 in the closed forms.
MIN_PARAMETER = 1e-12
#: Largest magnitude of data whose squares and sums must stay finite (bounds, bootstrap data).
MAX_MAGNITUDE = 1e150
#: Largest count (a number of points ``n``) the planning functions take: beyond 2^53 integers
#: are not exact in floating point, and a certificate's terms can no longer be told apart.
MAX_COUNT = 2**53
#: Narrowest public range (``upper - lower``) a release accepts: the noise scales are powers of
#: it over ``n ε`` (a variance's sensitivity ``R² / n``), and below about ``1e-150`` they fall
#: under the exact Laplace sampler's ``2^-1000``, an error that came only after the charge.
#: Rescaling the data (other units) costs nothing.
MIN_SPAN = 1e-100
#: Bins of a private quantile or a calibration metric (resolution 1e-7; 8 bytes per bin).
MAX_BINS = 10_000_000
#: Bootstrap resamples (per subset): the Monte Carlo error ~1/sqrt(T) is then < 0.3%.
MAX_RESAMPLES = 100_000
#: Candidates of a grid mechanism (e.g. the private median): resolution R/10^6.
MAX_CANDIDATES = 1_000_000
#: Points of an evaluation grid (CDF thresholds).
MAX_GRID = 100_000
#: Cells of the largest intermediate array a call may build (e.g. subsets x resamples).
MAX_WORK = 50_000_000


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
    """Return ``epsilon`` as a float; it must be finite, > 0 and at most :data:`MAX_EPSILON`."""
    eps = _as_float(epsilon, name)
    if not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}")
    if eps < MIN_PARAMETER:
        raise ValueError(
            f"{name} must be >= {MIN_PARAMETER:g} (smaller values underflow), got {epsilon!r}"
        )
    if eps > MAX_EPSILON:
        raise ValueError(
            f"{name} must be <= {MAX_EPSILON:g}, got {epsilon!r}: a likelihood-ratio bound "
            f"above e^{MAX_EPSILON:g} means no privacy; use the non-private method instead"
        )
    return eps


def check_random_state_setting(random_state, name: str = "random_state"):
    """``random_state`` is None, a non-negative int or a :class:`numpy.random.Generator`.

    Returned unchanged. The ledger's :func:`~dpuq.privacy.ledger.charge` runs this before it records
    a spend, so that a malformed ``random_state`` (``"42"``, ``-1``, ``1.5``, ``True``) costs
    nothing, at every release.
    """
    if random_state is None or isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if int(random_state) < 0:
            raise ValueError(f"{name} must be a non-negative int, got {random_state}")
        return random_state
    raise TypeError(
        f"{name} must be None, a non-negative int or a numpy.random.Generator, "
        f"got {type(random_state).__name__}"
    )


def check_positive_finite(value, name: str) -> float:
    """Return ``value`` as a finite float > 0 (a scale, a bound, a sensitivity)."""
    v = _as_float(value, name)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def check_alpha(alpha, name: str = "alpha", upper: float = 0.5) -> float:
    """Return the miscoverage level; it must lie in (0, upper] ."""
    a = _as_float(alpha, name)
    if not (0.0 < a <= upper) or math.isnan(a):
        raise ValueError(f"{name} must be in (0, {upper:g}], got {alpha!r}")
    if a < MIN_PARAMETER:
        raise ValueError(
            f"{name} must be >= {MIN_PARAMETER:g} (smaller values underflow), got {alpha!r}"
        )
    return a


def alpha_from_confidence(level: float) -> float:
    """``1 - level`` read as decimals, so that 0.95 gives 0.05, not 0.050000000000000044.

    Examples
    --------
    >>> alpha_from_confidence(0.95), 1 - 0.95
    (0.05, 0.050000000000000044)
    """
    from fractions import Fraction

    return float(1 - Fraction(repr(float(level))))


def check_in_open_unit(value, name: str) -> float:
    """Return ``value`` as a float in the open interval (0, 1)."""
    v = _as_float(value, name)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    if v < MIN_PARAMETER:
        raise ValueError(
            f"{name} must be >= {MIN_PARAMETER:g} (smaller values underflow), got {value!r}"
        )
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


def check_size(value, name: str, *, maximum: int, reason: str, minimum: int = 1) -> int:
    """Return a size parameter as an int in ``[minimum, maximum]``; the message gives the cap.

    Examples
    --------
    >>> check_size(10, "n_resamples", maximum=100, reason="enough")
    10
    """
    v = check_positive_int(value, name, minimum=minimum)
    if v > maximum:
        raise ValueError(f"{name} must be <= {maximum:,} ({reason}), got {v:,}")
    return v


def check_n_bins(n_bins, name: str = "n_bins", minimum: int = 2) -> int:
    """The number of bins, in ``[minimum, MAX_BINS]``."""
    return check_size(
        n_bins,
        name,
        minimum=minimum,
        maximum=MAX_BINS,
        reason="a resolution of 1e-7 on [0, 1]; each bin costs memory before any data is seen",
    )


def check_candidates(n_candidates, name: str = "n_candidates") -> int:
    """The number of candidates of a grid mechanism, in ``[2, MAX_CANDIDATES]``."""
    return check_size(
        n_candidates,
        name,
        minimum=2,
        maximum=MAX_CANDIDATES,
        reason="a resolution of 1e-6 of the public range; each candidate costs memory",
    )


def check_grid_size(n_grid, name: str = "n_grid") -> int:
    """The number of points of an evaluation grid, in ``[1, MAX_GRID]``."""
    return check_size(
        n_grid, name, maximum=MAX_GRID, reason="each grid point costs one array column"
    )


def check_magnitude(arr: np.ndarray, name: str) -> np.ndarray:
    """Refuse values beyond :data:`MAX_MAGNITUDE`, whose squares or sums would overflow."""
    if arr.size and float(np.abs(arr).max()) > MAX_MAGNITUDE:
        raise ValueError(
            f"{name} has values beyond ±{MAX_MAGNITUDE:g}: their squares and sums overflow; "
            "rescale the data"
        )
    return arr


def check_count(value, name: str = "n") -> int:
    """A number of points: an int in ``[1, MAX_COUNT]``, refused by name beyond it.

    Examples
    --------
    >>> check_count(10**6)
    1000000
    """
    return check_size(value, name, maximum=MAX_COUNT,
                      reason="beyond 2^53 integers are not exact in floating point")  # fmt: skip


def check_span(lower: float, upper: float, name: str) -> None:
    """Refuse a public range narrower than :data:`MIN_SPAN` (its noise scales would underflow).

    Data-free, so it runs before anything is read or charged.

    Examples
    --------
    >>> check_span(0.0, 1e-120, "bounds")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: bounds span 1e-120, narrower than 1e-100: ... rescale the data (other units)
    """
    if upper - lower < MIN_SPAN:
        raise ValueError(
            f"{name} span {upper - lower:g}, narrower than {MIN_SPAN:g}: the noise scales "
            "underflow; rescale the data (other units)"
        )


def check_work(cells: int, what: str, advice: str) -> None:
    """Refuse a computation whose largest intermediate array would exceed :data:`MAX_WORK`."""
    if cells > MAX_WORK:
        raise ValueError(
            f"{what} needs {cells:,} cells, more than the cap of {MAX_WORK:,} (memory); {advice}"
        )


_REAL_KINDS = "fiu"


def to_ndarray(x, name: str) -> np.ndarray:
    """:func:`as_array` (torch, pandas and polars converted first); a container numpy cannot
    make rectangular is a :class:`TypeError` naming ``name``.

    The extension point of the dtype policy: convert here, then check ``dtype.kind``.
    """
    try:
        return as_array(x, name)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise TypeError(f"{name} must be a rectangular array of numbers: {exc}") from None


def as_real_array(x, name: str) -> np.ndarray:
    """Return ``x`` as a float64 array, refusing non-real dtypes (module docstring: policy).

    Examples
    --------
    >>> as_real_array([1, 2.5], "x").tolist()
    [1.0, 2.5]
    >>> as_real_array([True, False], "x")
    Traceback (most recent call last):
    ...
    TypeError: x must hold real numbers (float or integer dtype), got dtype bool
    """
    arr = to_ndarray(x, name)
    if arr.dtype.kind not in _REAL_KINDS:
        raise TypeError(
            f"{name} must hold real numbers (float or integer dtype), got dtype {arr.dtype}"
        )
    return arr.astype(np.float64, copy=False)


def check_array_1d(x, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """Return a finite 1-d float array."""
    arr = as_real_array(x, name)
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

    Scores outside [0, 1], NaN or inf are an error ; the message carries no count
    or extreme value, which would be data-dependent and not released (issue 12).
    """
    arr = as_real_array(scores, name)
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
    probs = to_ndarray(probs, name)
    arr = as_real_array(probs, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_samples, n_classes), got {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if arr.shape[1] < 2:
        raise ValueError(f"{name} needs at least 2 classes, got shape {arr.shape}")
    nonfinite = int(np.count_nonzero(~np.isfinite(arr)))
    if nonfinite:
        raise ValueError(f"{name} has non-finite value(s) (NaN or inf)")  # no count: data
    dtype = np.dtype(getattr(probs, "dtype", np.float64))
    widened = atol is None and dtype.kind == "f" and dtype.itemsize < 8
    if atol is None:
        atol = probability_tolerance(dtype, arr.shape[1])
    # no counts, rows or values in these messages: they depend on the data (issue 12)
    if (arr < 0).any():
        raise ValueError(f"{name} has negative value(s); probabilities must be >= 0")
    if (arr > 1.0 + atol).any():
        raise ValueError(
            f"{name} has value(s) > 1: rows of probabilities lie in [0, 1] and sum to 1. Pass "
            "probabilities, not logits or scores."
        )
    sums = arr.sum(axis=1)
    if (np.abs(sums - 1.0) > atol).any():
        raise ValueError(
            f"{name}: some rows do not sum to 1 (within {atol:g}). Pass probabilities, not "
            "logits or scores."
        )
    if widened:
        arr = arr / sums[:, None]
    return arr


def check_labels(labels, n_classes: int, n_samples: int, name: str = "labels") -> np.ndarray:
    """Return integer labels in ``0..n_classes-1`` with ``n_samples`` entries."""
    arr = to_ndarray(labels, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise ValueError(f"{name} has {arr.shape[0]} entries but there are {n_samples} samples")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must be integer class indices")
        if arr.size and np.abs(arr).max() > 2**53:
            raise ValueError(f"{name} must be integer class indices")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer class indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    bad = int(np.count_nonzero((arr < 0) | (arr >= n_classes)))
    if bad:
        raise ValueError(
            f"{name}: value(s) outside the classes 0..{n_classes - 1} (no count or extremes "
            "are shown: they depend on the data)"
        )
    return arr


def first_nonpositive(values: np.ndarray) -> int | None:
    """Index of the first value that is not finite and > 0, or None when all are.

    >>> first_nonpositive(np.array([1.0, 0.5, -1.0, np.nan])), first_nonpositive(np.ones(3))
    (2, None)
    """
    bad = np.flatnonzero(~np.isfinite(values) | (values <= 0))
    return int(bad[0]) if bad.size else None
