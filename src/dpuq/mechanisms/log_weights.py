"""Exact sampling from log-weights: ``P(j) = exp(a_j) / sum_k exp(a_k)`` for float ``a_j``.

The law is exactly proportional to ``exp(a_j)`` for the given doubles ``a_j`` (``-inf``:
probability 0); no candidate is lost to underflow, however small its weight (ratios of
``1e-300`` and far below are kept). Only the doubles ``a_j`` themselves are approximations
of the caller's real utilities: a deterministic, public function of the data.

Method (rejection from an integer proposal, exact acceptance)
--------------------------------------------------------------
With ``g_j = max a - a_j >= 0`` and ``m`` candidates, pick ``K = min(52, 61 - bitlength(m))``
and integer proposal weights ``W_j = max(1, ceil(e_j 2^K (1 + 2^-40)))`` with
``e_j = exp(-g_j)`` in floating point (``W_j = 0`` for ``a_j = -inf``). Then

1. draw ``v`` uniform on ``{0, ..., sum W - 1}`` (numpy's exact bounded integers) and take the
   ``j`` with ``cumsum(W)_{j-1} <= v < cumsum(W)_j``: ``P(j) = W_j / sum W`` exactly;
2. accept ``j`` with probability ``P_j = exp(-g_j) 2^K / W_j``, decided exactly by
   :func:`dpuq.mechanisms.exact.bernoulli_certified`; otherwise start again.

Each round releases ``j`` with probability ``∝ W_j P_j = 2^K exp(a_j - max a)``: the exact law.
``W_j >= 2^K exp(-g_j)`` (so ``P_j <= 1``) because ``e_j`` is within a relative ``2^-42`` of
``exp(-g_j)`` (see the error budget below) and the factor ``1 + 2^-40`` covers it; underflowed
weights get ``W_j = 1``, more than their true ``2^K exp(-g_j) < 1``. The sums stay below
``2^62`` (int64). A round accepts with probability at least ``1 / (1 + 2^-40 + m 2^-K)``,
so almost always one round: cost O(m) per draw.

Error budget of the float acceptance probability ``p_j = e_j 2^K / W_j`` (certified bound
``|P_j - p_j| <= 2^-41 p_j + 2^-1001``): the float gap ``fl(max a - a_j)`` has relative
error ``2^-53``, an error of at most ``745 * 2^-53 < 2^-43`` in ``exp`` where ``exp`` is
normal; ``numpy.exp`` is accurate to a few units in the last place (we assume ``2^-48``,
``32`` ulp, far above the documented errors of glibc and of numpy's SIMD kernels); the
division adds ``2^-53``; ``W_j <= 2^53`` is exact as a double. Subnormal or underflowed
``e_j`` err by at most ``2^-1070`` absolute, times ``2^K / W_j <= 2^52``: below ``2^-1001``.
Ties and ambiguous cases are decided in exact rational arithmetic from the doubles
``a_j, max a`` themselves (``x = a_j - max a`` as a :class:`fractions.Fraction`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpuq._validation import check_array_1d, check_epsilon, check_positive_finite
from dpuq.mechanisms.exact import bernoulli_certified, uniform_below, uniform_bits

__all__ = [
    "bernoulli_exp_neg",
    "sample_log_weights",
    "sample_log_weights_rows",
    "utility_log_weights",
]

_REL_ERR = 2.0**-41
_INFLATE = 1.0 + 2.0**-40


def utility_log_weights(utilities, epsilon, sensitivity, monotone: bool = False) -> np.ndarray:
    """Log-weights ``ε (u_r - max u) / (2Δu)`` of utilities (``ε (u_r - max u) / Δu`` if monotone).

    The exponent of the exponential mechanism and of permute-and-flip's acceptances, checked:
    finite utilities, ε > 0, ``Δu`` > 0 with ``ε/Δu`` finite. Their privacy arguments are at
    the top of :mod:`dpuq.mechanisms.exponential` and :mod:`dpuq.mechanisms.permute_and_flip`.
    Shifted by the largest utility (the law is unchanged): log-weights ``<= 0``, so huge
    utilities cannot lose the normaliser to rounding; a gap that overflows is weight 0.

    Examples
    --------
    >>> utility_log_weights([0.0, 1.0], 2.0, 1.0).tolist()
    [-1.0, 0.0]
    """
    u = check_array_1d(utilities, "utilities")
    eps = check_epsilon(epsilon)
    sens = check_positive_finite(sensitivity, "sensitivity")
    scale = eps / (sens if monotone else 2.0 * sens)
    if not math.isfinite(scale):
        raise ValueError(
            f"sensitivity={sensitivity!r} is too small: epsilon / sensitivity overflows"
        )
    with np.errstate(over="ignore"):
        return (u - u.max()) * scale


def _check_log_weights(log_weights, ndim: int) -> np.ndarray:
    lw = np.asarray(log_weights, dtype=float)
    if lw.ndim != ndim:
        raise ValueError(f"log_weights must be {ndim}-dimensional, got shape {lw.shape}")
    if lw.shape[-1] == 0:
        raise ValueError("log_weights must have at least one candidate")
    if np.isnan(lw).any() or np.isposinf(lw).any():
        raise ValueError("log_weights must not contain NaN or +inf")
    if lw.size and not np.isfinite(lw).any(axis=-1).all():
        raise ValueError("every row of log_weights needs a candidate with finite log-weight")
    return lw


def _proposal(lw: np.ndarray):
    """Top log-weight per row, ``K``, integer weights ``W`` and float acceptances ``p``."""
    m = lw.shape[1]
    k = min(52, 61 - m.bit_length())
    top = np.max(lw, axis=1)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        e = np.exp(-(top[:, None] - lw))  # -inf log-weight -> 0
        w = np.ceil(e * (2.0**k * _INFLATE))
    finite = np.isfinite(lw)
    weights = np.where(finite, np.maximum(w, 1.0), 0.0).astype(np.int64)
    with np.errstate(under="ignore"):
        p = np.where(finite, e * 2.0**k / np.maximum(weights, 1), 0.0)
    return top, k, weights, p


def sample_log_weights_rows(log_weights, rng: np.random.Generator) -> np.ndarray:
    """One independent draw per row: ``P(out[r] = j) ∝ exp(log_weights[r, j])``, exactly.

    Row by row the law is exactly that of :func:`sample_log_weights` (both are this sampler);
    the work is vectorised over rows (O(rows · m), a few passes over the array).

    Parameters
    ----------
    log_weights : array-like of shape (rows, m)
        Unnormalised log-probabilities; ``-inf`` marks an impossible candidate; each row needs
        one finite entry; no NaN or ``+inf``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (rows,)

    Raises
    ------
    ValueError
        If ``log_weights`` is not 2-D, has no columns, holds NaN or ``+inf``, or a row is all
        ``-inf``.

    Examples
    --------
    >>> lw = np.array([[0.0, -np.inf], [-np.inf, 5.0]])
    >>> sample_log_weights_rows(lw, np.random.default_rng(0)).tolist()
    [0, 1]
    """
    return _sample_rows(_check_log_weights(log_weights, 2), rng)


def _sample_rows(lw: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`sample_log_weights_rows` on validated log-weights."""
    rows = lw.shape[0]
    out = np.zeros(rows, dtype=np.int64)
    if rows == 0:
        return out
    top, k, weights, p = _proposal(lw)
    cum = np.cumsum(weights, axis=1)
    pending = np.arange(rows)
    while pending.size:
        v = rng.integers(0, cum[pending, -1])
        if pending.size == 1:
            j = np.searchsorted(cum[pending[0]], v, side="right")
        else:
            j = np.count_nonzero(cum[pending] <= v[:, None], axis=1)
        r_j = pending, j

        def exact(i, r_j=r_j):
            r, c = int(r_j[0][i]), int(r_j[1][i])
            x = Fraction(float(lw[r, c])) - Fraction(float(top[r]))
            return x, Fraction(2**k, int(weights[r, c]))

        accepted = bernoulli_certified(p[r_j], _REL_ERR, rng, exact)
        out[pending[accepted]] = j[accepted]
        pending = pending[~accepted]
    return out


def sample_log_weights(log_weights, rng: np.random.Generator) -> int:
    """Draw index ``j`` with probability ``exp(log_weights[j]) / sum(exp(log_weights))``.

    Exact for the given doubles (see the module docstring for the method and its proof): no
    candidate with finite log-weight gets probability 0, neither through underflow nor through
    the resolution of a uniform draw. Expected cost O(R).

    Parameters
    ----------
    log_weights : ndarray of shape (R,)
        Unnormalised log-probabilities; ``-inf`` marks an impossible candidate.
    rng : numpy.random.Generator

    Returns
    -------
    int
        The drawn index.

    Examples
    --------
    >>> sample_log_weights(np.array([0.0, -np.inf]), np.random.default_rng(0))
    0
    """
    lw = _check_log_weights(log_weights, 1)
    return int(_sample_rows(lw[None, :], rng)[0])


def bernoulli_exp_neg(a: float, rng: np.random.Generator) -> bool:
    """True with probability exactly ``exp(-a)`` for the double ``a >= 0`` (any size).

    Examples
    --------
    >>> bernoulli_exp_neg(0.0, np.random.default_rng(0))
    True
    """
    a = float(a)
    if not a >= 0.0:
        raise ValueError("a must be >= 0")
    if a == np.inf:
        return False
    x = -Fraction(a)
    p = float(np.exp(-a))  # relative error below 2^-48 for a <= 745 (module docstring)
    if p == 0.0:  # a > 745: P < 2^-1074; one exact comparison decides it
        return uniform_below(uniform_bits(rng), 64, x, Fraction(1), rng)
    return bool(bernoulli_certified(np.array([p]), _REL_ERR, rng, lambda i: (x, Fraction(1)))[0])
