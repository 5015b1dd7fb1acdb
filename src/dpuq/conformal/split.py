"""The exact non-private split-conformal threshold: the baseline of every private release.

Not private (it reads the scores' order statistic directly): use it for comparisons and
tests, never on data whose privacy is at stake.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpuq._validation import check_alpha, check_array_1d

__all__ = ["split_conformal_threshold"]


def _order_statistic_rank(n: int, alpha: float) -> int:
    """``ceil((n+1)(1-alpha))`` in exact rational arithmetic, alpha read as its decimal repr."""
    a = Fraction(repr(float(alpha)))
    return math.ceil((n + 1) * (1 - a))


def split_conformal_threshold(scores, alpha: float) -> float:
    """Non-private split-conformal threshold: the ``ceil((n+1)(1-alpha))``-th smallest score.

    The rank is computed in exact rational arithmetic (``alpha`` read as the decimal it
    prints as), so it is never off by one through float rounding. If the rank exceeds ``n``
    the threshold is ``+inf`` (full sets). Not private: a baseline.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Finite calibration scores (any real range).
    alpha : float
        Miscoverage level in (0, 1).

    Examples
    --------
    >>> split_conformal_threshold([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], 0.3)
    0.7
    >>> split_conformal_threshold([0.1, 0.2], 0.1)
    inf
    """
    s = check_array_1d(scores, "scores")
    alpha = check_alpha(alpha, upper=1.0 - 1e-15)
    k = _order_statistic_rank(s.size, alpha)
    if k > s.size:
        return math.inf
    return float(np.partition(s, k - 1)[k - 1])
