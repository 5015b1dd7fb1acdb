"""Exact Bernoulli decisions: the one primitive under every noise sampler in dpuq.

Every random choice a mechanism makes reduces to "is a uniform ``U`` in [0, 1) below a
probability ``p``?", where ``p = c exp(x)`` with ``c`` a positive rational and ``x <= 0`` a
rational (a difference of doubles, a ratio of integers). Floating point cannot form such a
``p`` exactly, yet the decision can be made exactly:

1. draw the first 64 bits ``u`` of ``U`` (``U`` lies in ``[u/2^64, (u+1)/2^64)``);
2. compare them with a certified float enclosure ``[lo, hi]`` of ``p`` (the caller proves a
   relative error bound for its float approximation): ``(u + 1)/2^64 <= lo`` decides
   ``U < p``, ``u/2^64 >= hi`` decides ``U >= p``; both comparisons are exact integer
   comparisons of ``u`` with ``floor(lo 2^64)`` and ``ceil(hi 2^64)``;
3. otherwise (probability at most ``hi - lo + 2^-64``, about ``2^-40`` here) resolve the
   comparison exactly: enclose ``c exp(x)`` in rationals with Python's :mod:`decimal`
   (whose ``exp`` is correctly rounded), extend ``U`` by 64 further fresh bits at a time and
   raise the precision until the enclosure of ``p`` and the interval of ``U`` separate. Each
   extension separates them unless ``U`` falls within a relative ``2^-64`` or so of ``p``, so
   this terminates with probability 1 (after one extension, almost always) and decides
   exactly ``U < p``.

The decision is therefore exactly Bernoulli(``p``) whatever the float rounding: floats only
decide when their certified bounds already do. Vectorised over draws: the fast path is three
numpy operations per decision; the exact path runs in Python, rarely.

Uniform bits come from ``rng.integers(0, 2**64 - 1, dtype=uint64, endpoint=True)`` (exactly
uniform 64-bit words from numpy's bit generator).
"""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

import numpy as np

__all__ = [
    "ABS_MARGIN",
    "bernoulli_certified",
    "bernoulli_constant",
    "enclose_exp",
    "uniform_below",
    "uniform_bits",
]

#: Absolute margin added to every enclosure: covers the error of subnormal intermediate results.
ABS_MARGIN = 2.0**-1000
_TWO64 = 2.0**64
_U64_MAX = np.iinfo(np.uint64).max
# Below this, exp(x) is split in two factors instead of being enclosed with decimal.
_FAR = -1.0e4


def uniform_bits(rng: np.random.Generator, size=None):
    """Exactly uniform 64-bit words, as ``uint64`` (an ``int`` when ``size`` is None).

    Examples
    --------
    >>> uniform_bits(np.random.default_rng(0), 3).dtype
    dtype('uint64')
    """
    if size is None:
        return int(rng.integers(0, _U64_MAX, dtype=np.uint64, endpoint=True))
    return rng.integers(0, _U64_MAX, size=size, dtype=np.uint64, endpoint=True)


def _decimal_context(digits: int, rounding: str) -> decimal.Context:
    return decimal.Context(
        prec=digits, rounding=rounding, Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX
    )


def enclose_exp(x: Fraction, digits: int) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= exp(x) <= hi`` with relative width about ``10^(2 - digits)``.

    ``x`` is bracketed by decimals rounded down and up, then ``exp`` of each end is taken with
    :meth:`decimal.Decimal.exp`, which is correctly rounded (Python documentation), so its
    result is within one unit in the last place, a relative ``10^(1 - digits)``.

    Examples
    --------
    >>> lo, hi = enclose_exp(Fraction(-1), 30)
    >>> float(lo) <= 0.36787944117144233 <= float(hi)
    True
    """
    if x == 0:
        return Fraction(1), Fraction(1)
    num, den = decimal.Decimal(x.numerator), decimal.Decimal(x.denominator)
    x_lo = _decimal_context(digits + 10, decimal.ROUND_FLOOR).divide(num, den)
    x_hi = _decimal_context(digits + 10, decimal.ROUND_CEILING).divide(num, den)
    ctx = _decimal_context(digits, decimal.ROUND_HALF_EVEN)
    rel = Fraction(1, 10 ** (digits - 1))
    return Fraction(ctx.exp(x_lo)) * (1 - rel), Fraction(ctx.exp(x_hi)) * (1 + rel)


def _log2_ceil(c: Fraction) -> int:
    """An integer ``L`` with ``c < 2^L`` (``c > 0``)."""
    return c.numerator.bit_length() - c.denominator.bit_length() + 1


def uniform_below(u: int, bits: int, x: Fraction, c: Fraction, rng: np.random.Generator) -> bool:
    """Decide exactly whether ``U < c exp(x)`` for a uniform ``U`` whose first bits are known.

    ``U`` is uniform on [0, 1) and its first ``bits`` binary digits are the integer ``u``;
    further digits are drawn from ``rng`` as needed. ``x <= 0`` and ``c > 0`` are rationals.
    For ``u`` uniform on ``[0, 2^bits)`` the result is True with probability exactly
    ``min(1, c exp(x))``.

    Far in the tail (``x < -10^4``) zero bits of ``U`` are read without arithmetic until one
    is 1; then ``c exp(x) < 2^-bits <= U`` decides False without forming ``exp(x)``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> uniform_below(0, 64, Fraction(-1), Fraction(1), rng)  # U < 2^-64 < e^-1
    True
    >>> uniform_below(2**64 - 1, 64, Fraction(-1), Fraction(1), rng)
    False
    """
    if c <= 0:
        return False
    if x > 0:
        raise ValueError("x must be <= 0")
    if x < _FAR:
        log2_c = _log2_ceil(c)
        # Far tail: p < 2^-14000. While U's known bits are all 0, read more (no big numbers).
        limit = log2_c - int(x * 1.4427) + 64  # beyond it 2^-bits may be below p
        while u == 0 and bits < limit:
            u, bits = uniform_bits(rng), bits + 64
        if u > 0 and x < -(bits + log2_c):  # p < 2^log2_c e^-(bits+log2_c) < 2^-bits <= U
            return False
    while True:
        # U's interval has relative width about 2^-bitlength(u): enclose p a little tighter.
        lo, hi = enclose_exp(x, 40 + (u.bit_length() * 3) // 10)
        scale = 1 << bits
        if (u + 1) <= c * lo * scale:  # U < (u + 1)/2^bits <= p
            return True
        if u >= c * hi * scale:  # U >= u/2^bits >= p
            return False
        u = (u << 64) | uniform_bits(rng)
        bits += 64


def bernoulli_certified(p, rel_err: float, rng: np.random.Generator, exact) -> np.ndarray:
    """Independent exact Bernoulli(``p_i``) decisions from float approximations of ``p_i``.

    Parameters
    ----------
    p : ndarray of float
        Approximations of the true probabilities ``P_i`` in [0, 1].
    rel_err : float
        A proven bound: ``|P_i - p_i| <= rel_err p_i + ABS_MARGIN / 2``; ``rel_err`` at most
        ``2^-30`` (this function doubles it to absorb its own rounding).
    rng : numpy.random.Generator
    exact : callable
        ``exact(i) -> (x, c)``, rationals with ``P_i = c exp(x)`` exactly, ``x <= 0``;
        called only for the rare undecided indices.

    Returns
    -------
    ndarray of bool
        True with probability exactly ``P_i``, independently.

    Examples
    --------
    >>> p = np.full(4, 0.5)
    >>> d = bernoulli_certified(p, 0.0, np.random.default_rng(0),
    ...                         lambda i: (Fraction(0), Fraction(1, 2)))
    >>> d.dtype, d.shape
    (dtype('bool'), (4,))
    """
    p = np.asarray(p, dtype=float)
    u = uniform_bits(rng, p.shape)
    margin = 2.0 * rel_err
    lo = p * (1.0 - margin) - ABS_MARGIN
    hi = p * (1.0 + margin) + ABS_MARGIN
    below_one = lo < 1.0
    # floor(lo 2^64) < 2^64 for lo < 1; exact scaling by 2^64, exact float -> uint64.
    t_lo = np.floor(np.where(below_one, np.maximum(lo, 0.0), 0.0) * _TWO64).astype(np.uint64)
    accept = (u < t_lo) | ~below_one
    hi_below_one = hi < 1.0
    t_hi = np.ceil(np.where(hi_below_one, hi, 0.0) * _TWO64).astype(np.uint64)
    reject = hi_below_one & (u >= t_hi)
    undecided = np.flatnonzero(~(accept | reject))
    for i in undecided:  # probability about 2 rel_err + 2^-64 each
        x, c = exact(int(i))
        accept.flat[i] = uniform_below(int(u.flat[i]), 64, x, c, rng)
    return accept


def bernoulli_constant(
    p: float, rel_err: float, size: int, rng: np.random.Generator, x: Fraction, c: Fraction
) -> np.ndarray:
    """``size`` independent exact Bernoulli(``P``) decisions, ``P = c exp(x)`` for all.

    As :func:`bernoulli_certified` with one probability (thresholds computed once); ``p`` is a
    float approximation of ``P`` with ``|P - p| <= rel_err p``.

    Examples
    --------
    >>> d = bernoulli_constant(0.25, 0.0, 5, np.random.default_rng(0), Fraction(0), Fraction(1, 4))
    >>> d.shape
    (5,)
    """
    lo = p * (1.0 - 2.0 * rel_err) - ABS_MARGIN
    hi = p * (1.0 + 2.0 * rel_err) + ABS_MARGIN
    if not (0.0 < lo and hi < 1.0):
        return bernoulli_certified(np.full(size, p), rel_err, rng, lambda i: (x, c))
    u = uniform_bits(rng, size)
    t_lo, t_hi = np.uint64(math.floor(lo * _TWO64)), np.uint64(math.ceil(hi * _TWO64))
    accept = u < t_lo
    for i in np.flatnonzero((u >= t_lo) & (u < t_hi)):  # probability about 2 rel_err p each
        accept[i] = uniform_below(int(u[i]), 64, x, c, rng)
    return accept
