"""Sums of the class-conditional certificate's terms ``g(t)`` over runs of integers t.

``g(t) = 1 / (1 + (m-1) exp(-ε_c t / 2))`` (:mod:`dpuq.conformal.class_levels`). The rank
schedule compares sums ``Σ_{t=r-n}^{r} g(t)`` with ``(1 - α + slack)(n + 1)``; this module holds
the two ways they are computed, both data-free:

* :class:`PrefixSums`: prefix sums over a window of integers, exact up to float rounding, held
  as one carried value per block (memory O(window / block)).
* :func:`g_sum_lower_bound`: a closed-form lower bound, O(1) per sum whatever the length of the
  run, for the sparse knots at a tiny ε (where the run of t with ``0 < g(t) < 1`` spans about
  ``3360/ε`` integers). Euler-Maclaurin with two terms: for integers ``a <= b``,
  ``Σ_{t=a}^{b} g(t) = ∫_a^b g + (g(a) + g(b))/2 + (g'(b) - g'(a))/12 + R``,
  ``|R| <= (1/12) ∫ |g''|``. Here ``0 < g' <= c/4`` with ``c = ε_c/2`` and g' rises then falls
  once, so ``∫ |g''| <= c/2``: the last two terms together are at most ``c/48 + c/24 = c/16``
  in size. The bound subtracts ``c/8``. The integral is
  ``(b - a) + log(1 + expit(-x_a) expm1(-c (b - a))) / c`` with ``x_a = c a - log(m-1)``
  (softplus differences without their cancellation), so a sum of 10^8 terms loses no more than
  a few ulps relative: far below the slack, which is relative to ``n + 1``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, log_expit

__all__ = ["PrefixSums", "g", "g_sum_lower_bound"]

#: Terms of :class:`PrefixSums` per carried block.
SUM_BLOCK = 1 << 16


def g(t, epsilon_class: float, m: int):
    """``1 / (1 + (m-1) exp(-ε_c t / 2))``, computed as a logistic function.

    Arrays: ``expit`` is evaluated only where its value is not exactly 1.0 (argument >= 40:
    ``1 + e^-40`` rounds to 1) or 0.0 (argument <= -800: ``e^-800`` underflows), the same
    values at a fraction of the cost over long ranges of t."""
    x = epsilon_class * np.asarray(t, dtype=float) / 2.0 - math.log(m - 1)
    if x.ndim == 0:
        return expit(x)
    out = np.where(x >= 40.0, 1.0, 0.0)
    mid = (x > -800.0) & (x < 40.0)
    out[mid] = expit(x[mid])
    return out


def g_sum_lower_bound(first, last, epsilon_class: float, m: int) -> np.ndarray:
    """A lower bound (up to float rounding) on ``Σ_{t=first}^{last} g(t)`` (integers,
    elementwise), within
    ``3c/16`` and float rounding of the sum, ``c = ε_c/2`` (module docstring: ``c/8`` taken off,
    the remainder at most ``c/16``). Empty runs give 0.

    Examples
    --------
    >>> t = np.arange(-3000, 5001)
    >>> exact = float(np.sum(g(t, 0.01, 10)))
    >>> lower = float(g_sum_lower_bound(np.array([-3000]), np.array([5000]), 0.01, 10)[0])
    >>> 0.0 <= exact - lower <= 3 * 0.01 / 2 / 16
    True
    """
    a = np.asarray(first, dtype=np.int64)
    b = np.asarray(last, dtype=np.int64)
    c = epsilon_class / 2.0
    span = np.maximum(b - a, 0).astype(float)
    x = c * a.astype(float) - math.log(m - 1)
    p = expit(-x) * np.expm1(-c * span)  # in (-1, 0]
    # log(1 + p): log1p where p is small; else 1 + p = expit(x) + expit(-x) e^{-c span}, a sum of
    # two positive parts, in logs (no cancellation, no underflow)
    log_ratio = np.where(
        p > -0.5,
        np.log1p(np.maximum(p, -0.5)),
        np.logaddexp(log_expit(x), log_expit(-x) - c * span),
    )
    integral = span + log_ratio / c
    ends = (g(a, epsilon_class, m) + g(b, epsilon_class, m)) / 2.0
    return np.where(b >= a, np.maximum(integral + ends - c / 8.0, 0.0), 0.0)


class PrefixSums:
    """``G[i] = g(t0) + ... + g(t0 + i - 1)`` (``G[0] = 0``), summed left to right like
    ``np.cumsum`` (bit for bit), kept as one carried value per block of :data:`SUM_BLOCK`
    terms and expanded on demand."""

    def __init__(self, t0: int, length: int, eps_c: float, m: int) -> None:
        self.t0, self.length, self.eps_c, self.m = t0, length, eps_c, m
        carries, carry = [], 0.0
        for start in range(0, length, SUM_BLOCK):
            carries.append(carry)
            carry = float(self._block(start, carry)[-1])
        carries.append(carry)
        self.carries = carries

    def _block(self, start: int, carry: float) -> np.ndarray:
        """``G[start .. start + B]`` (B + 1 values, fewer at the end) from ``G[start]``."""
        stop = min(self.length, start + SUM_BLOCK)
        terms = g(np.arange(self.t0 + start, self.t0 + stop), self.eps_c, self.m)
        return np.cumsum(np.concatenate(([carry], terms)))

    def window(self, lo: int, hi: int) -> np.ndarray:
        """``G[lo:hi]`` for ``0 <= lo < hi <= length + 1``."""
        lo, hi = max(0, lo), min(self.length + 1, hi)
        k0, k1 = lo // SUM_BLOCK, (hi - 1) // SUM_BLOCK
        parts = [self._block(k * SUM_BLOCK, self.carries[k])[:SUM_BLOCK] for k in range(k0, k1)]
        parts.append(self._block(k1 * SUM_BLOCK, self.carries[k1]))
        full = np.concatenate(parts)
        return full[lo - k0 * SUM_BLOCK : hi - k0 * SUM_BLOCK]
