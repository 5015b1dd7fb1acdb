"""Shared machinery of the property-based (hypothesis) fuzz suites.

The invariant of every public entry point: a ``ValueError``/``TypeError`` whose message names
one of the function's arguments, or a valid result; never another exception, a NaN, a numpy
warning, or a silently coerced non-real input. :func:`make_tests` turns one property into a
fast default test (profile ``dpuq-fuzz``) and a larger run under ``@pytest.mark.slow``
(profile ``dpuq-fuzz-slow``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpuq.conformal import UninformativeReleaseWarning
from dpuq.inference import ClippingWarning, UninformativeIntervalWarning

_COMMON = {
    "deadline": None,
    "derandomize": True,  # the default suite is reproducible; the slow profile explores
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "database": None,
}
settings.register_profile("dpuq-fuzz", max_examples=25, **_COMMON)
settings.register_profile("dpuq-fuzz-slow", max_examples=300, **{**_COMMON, "derandomize": False})
FAST = settings.get_profile("dpuq-fuzz")
SLOW = settings.get_profile("dpuq-fuzz-slow")

#: Warnings a release may give the caller (documented, not numpy's).
ALLOWED_WARNINGS = (UninformativeReleaseWarning, UninformativeIntervalWarning, ClippingWarning)


def make_tests(namespace: dict, name: str, prop) -> None:
    """Register ``test_fuzz_<name>`` (fast) and ``test_fuzz_<name>_slow`` in ``namespace``."""
    fast = FAST(given(data=st.data())(prop))
    slow = pytest.mark.slow(SLOW(given(data=st.data())(prop)))
    fast.__name__, slow.__name__ = f"test_fuzz_{name}", f"test_fuzz_{name}_slow"
    namespace[fast.__name__] = fast
    namespace[slow.__name__] = slow


class Refused(Exception):
    """Marker: the call raised the documented ValueError/TypeError."""


def call(fn, *args, names=(), **kwargs):
    """Run ``fn``; return its result, or :class:`Refused` when it raised a clear error.

    Every warning except :data:`ALLOWED_WARNINGS` is an error; a ValueError/TypeError must
    name one of ``names`` (default: the keyword arguments) and be one line.
    """
    names = tuple(names) or tuple(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for category in ALLOWED_WARNINGS:
            warnings.simplefilter("ignore", category)
        try:
            return fn(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            if isinstance(exc, Warning):  # a warning turned into an error is a failure
                raise
            message = str(exc)
            assert any(n in message for n in names), f"no argument named in {message!r}"
            return Refused


def is_nonreal(value) -> bool:
    """True for an array-like whose dtype the policy refuses (bool, complex, str, object)."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fiu"
    return False


def assert_finite(*values) -> None:
    for v in values:
        arr = np.asarray(v, dtype=float)
        assert np.all(np.isfinite(arr)), f"non-finite result {v!r}"


def in_range(value, lo: float, hi: float) -> bool:
    return lo <= float(value) <= hi and not math.isnan(float(value))


# --- strategies ---------------------------------------------------------------------------------

HOSTILE_SCALARS = [
    math.nan,
    math.inf,
    -math.inf,
    0.0,
    -0.0,
    -1.0,
    1e308,
    5e-324,
    -1e-300,
    True,
    "0.5",
    None,
    1 + 1j,
    10**12,
    [0.1],
]


def scalar(valid: st.SearchStrategy, hostile=HOSTILE_SCALARS) -> st.SearchStrategy:
    """Mostly a valid value, sometimes a hostile one."""
    return st.one_of(valid, valid, valid, st.sampled_from(hostile))


_FLOAT_ELEMENTS = st.one_of(
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.sampled_from([math.nan, math.inf, -math.inf, -1e-12, 1.0 + 1e-12, 1e308, -5e-324, 5e-324]),
)


@st.composite
def arrays(draw, *, ndim: int = 1, max_n: int = 40, min_n: int = 0, columns=None, elements=None):
    """Arrays of the given ndim (sometimes another), mostly float64 in [0, 1], sometimes
    another dtype (float32, int, bool, complex, str, object), empty, or holding NaN/inf."""
    kind = draw(
        st.sampled_from(["f8"] * 8 + ["f4", "i8", "bool", "complex", "str", "object", "list"])
    )
    nd = draw(st.sampled_from([ndim] * 6 + [0, 1, 2, 3]))
    n = draw(st.integers(min_n, max_n))
    if nd == 0:
        shape = ()
    elif nd == 1:
        shape = (n,)
    else:
        k = columns if columns is not None and draw(st.booleans()) else draw(st.integers(0, 5))
        shape = (n, k) + (2,) * (nd - 2)
    size = int(np.prod(shape))
    values = np.array(
        draw(
            st.lists(
                _FLOAT_ELEMENTS if elements is None else elements, min_size=size, max_size=size
            )
        )
    )
    values = values.reshape(shape)
    if kind == "f4":
        with np.errstate(over="ignore"):
            return values.astype(np.float32)
    if kind == "i8":
        return np.nan_to_num(values, nan=0, posinf=2, neginf=-2).clip(-5, 5).astype(np.int64)
    if kind == "bool":
        return np.nan_to_num(values) > 0.5
    if kind == "complex":
        return values.astype(complex) + 1j
    if kind == "str":
        return values.astype(str)
    if kind == "object":
        out = values.astype(object)
        if out.size:
            out.flat[0] = None
        return out
    if kind == "list":
        return values.tolist()
    return values


@st.composite
def probabilities(draw, max_n: int = 30, max_k: int = 5):
    """Mostly valid (n, K) probability matrices (rows sum to 1), sometimes broken ones."""
    if draw(st.integers(0, 3)) == 0:
        return draw(arrays(ndim=2, max_n=max_n))
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(2, max_k))
    raw = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=n * k, max_size=n * k)))
    raw = raw.reshape(n, k) + 1e-3
    return raw / raw.sum(axis=1, keepdims=True)


@st.composite
def labels_for(draw, n: int, k: int):
    """Mostly valid integer labels in 0..k-1, sometimes wrong dtypes, values or lengths."""
    if draw(st.integers(0, 3)) == 0:
        return draw(arrays(ndim=1, max_n=n + 2))
    return np.array(draw(st.lists(st.integers(0, max(k - 1, 0)), min_size=n, max_size=n)))


POSITIVE_EPSILON = st.floats(1e-3, 20.0)
ALPHA = st.floats(0.01, 0.5)
SEEDS = st.integers(0, 2**32 - 1)
