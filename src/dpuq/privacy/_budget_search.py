"""The one search behind the noise calibrations of :mod:`dpuq.privacy.accounting`.

DP-SGD's noise multiplier and DP-SGLD's temperature are each the smallest value of one scale
at which a schedule spends at most the budget (ε falls as the scale grows). Data-free: the
functions searched are accountants of public schedules.
"""

from __future__ import annotations

import math

__all__ = ["smallest_fitting", "smallest_true"]


def smallest_fitting(
    spent, start: float, eps: float, *, rtol: float, step: float, smallest: float,
    largest: float, too_large: str, enough: float = 0.0, f_start: float | None = None,
) -> float:  # fmt: skip
    """Smallest ``x`` (within ``rtol``) with ``spent(x) <= eps``, for ``spent`` falling in ``x``.

    Brackets from ``start`` by factors ``step``, then regula falsi (Illinois) on ``log ε``
    against ``log x``. The ``x`` returned is always one at which ``spent`` itself was found
    to be at most ``eps`` (the bracket's upper end), so nothing is under-stated; below
    ``smallest`` the last fitting ``x`` is returned, above ``largest`` ValueError(too_large).
    With ``enough > 0`` the search also stops at a fitting ``x`` whose ``log ε`` is within
    ``enough`` of ``log eps`` (the budget is spent; no need to narrow ``x`` further).
    ``f_start``: ``log spent(start) - log eps`` when already known.
    """
    lo = hi = float(start)
    f_hi = math.log(spent(hi)) - math.log(eps) if f_start is None else f_start
    if enough > 0 and -enough <= f_hi <= 0:
        return float(hi)
    f_lo = f_hi
    while f_hi > 0:
        lo, f_lo, hi = hi, f_hi, hi * step
        if hi > largest:
            raise ValueError(too_large)
        f_hi = math.log(spent(hi)) - math.log(eps)
    while lo == hi or f_lo <= 0:
        if lo < smallest:
            return float(hi)
        hi, f_hi = lo, f_lo
        lo = lo / step
        f_lo = math.log(spent(lo)) - math.log(eps)
    side = 0
    while hi / lo > 1.0 + rtol and f_hi < -enough:
        a, b = math.log(lo), math.log(hi)
        mid = math.exp(b - f_hi * (b - a) / (f_hi - f_lo))
        # keep the trial strictly inside the bracket, away from its ends
        mid = min(max(mid, lo * (1 + rtol / 4)), hi / (1 + rtol / 4))
        f_mid = math.log(spent(mid)) - math.log(eps)
        if f_mid <= 0:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo /= 2.0
            side = 1
        else:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi /= 2.0
            side = -1
    return float(hi)


def smallest_true(pred, start: float, rtol: float) -> float:
    """Smallest x > 0 (within rtol) with pred(x) True, for pred False below and True above."""
    lo = hi = float(start)
    while not pred(hi):
        lo, hi = hi, hi * 2.0
        if hi > 1e12:
            raise ValueError("no temperature <= 1e12 fits the budget")
    if lo == hi:
        while pred(lo):
            hi, lo = lo, lo / 2.0
            if lo < 1e-15:
                return hi
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if pred(mid) else (mid, hi)
    return float(hi)
