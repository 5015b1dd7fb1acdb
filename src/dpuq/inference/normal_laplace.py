"""The law of ``σ Z + Laplace(λ)``: a normal root with the known Laplace noise of a private
estimate folded in (Chadha et al. 2024, Proposition 2). Post-processing only: no data, no noise
drawn."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erfcx, log_ndtr

from dpuq.mechanisms.laplace import laplace_cdf

__all__ = [
    "normal_laplace_cdf",
    "normal_laplace_quantile",
]


def _log_mills(x: np.ndarray) -> np.ndarray:
    """``log(Φ(-x)/φ(x))``, stable for every real ``x`` (erfcx for x > 0)."""
    x = np.asarray(x, dtype=float)
    pos = np.maximum(x, 0.0)
    neg = np.minimum(x, 0.0)
    out_pos = np.log(erfcx(pos / math.sqrt(2.0))) + 0.5 * math.log(math.pi / 2.0)
    out_neg = log_ndtr(-neg) + 0.5 * neg * neg + 0.5 * math.log(2.0 * math.pi)
    return np.where(x > 0, out_pos, out_neg)


def normal_laplace_cdf(t, sigma: float, scale: float) -> np.ndarray:
    """CDF of ``sigma Z + L``, ``Z ~ N(0, 1)``, ``L ~ Laplace(0, scale)`` independent.

    ``Φ(t/σ) - ½ φ(t/σ) [M(σ/λ - t/σ) - M(σ/λ + t/σ)]`` with ``M(x) = Φ(-x)/φ(x)`` the Mills
    ratio where ``σ > λ`` (the textbook form ``½ e^{σ²/(2λ²) ∓ t/λ} Φ(±t/σ - σ/λ)`` cancels
    catastrophically for small ``λ``), and that textbook form where ``σ <= λ`` (the Mills form
    loses every digit once ``σ`` is tiny against ``t``: a private mean at ε = 1e-10 got a NaN
    after the charge); evaluated in log space.

    Examples
    --------
    >>> float(normal_laplace_cdf(0.0, 1.0, 0.5))
    0.5
    """
    t = np.asarray(t, dtype=float)
    if scale <= 0:
        return np.exp(log_ndtr(t / sigma))
    if sigma <= 0:
        return laplace_cdf(t, scale=scale)
    z, r = t / sigma, sigma / scale
    if r <= 1.0:
        # the Laplace part dominates: the textbook form, in log space. Its factor
        # e^{r²/2} <= e^{1/2} cannot overflow, and the Mills form below would subtract two
        # squares of z = t/σ, which lose every digit once σ is tiny against t
        left = np.exp(0.5 * r * r - t / scale + log_ndtr(z - r))
        right = np.exp(0.5 * r * r + t / scale + log_ndtr(-z - r))
    else:
        log_phi = -0.5 * z * z - 0.5 * math.log(2.0 * math.pi)
        left = np.exp(log_phi + _log_mills(r - z))
        right = np.exp(log_phi + _log_mills(r + z))
    return np.clip(np.exp(log_ndtr(z)) - 0.5 * left + 0.5 * right, 0.0, 1.0)


def normal_laplace_quantile(p: float, sigma: float, scale: float) -> float:
    """Quantile of ``sigma Z + Laplace(scale)`` (bisection on :func:`normal_laplace_cdf`)."""
    from scipy.optimize import brentq

    span = 10.0 * (sigma + scale) + 1e-300
    lo, hi = -span, span
    while normal_laplace_cdf(lo, sigma, scale) > p:
        lo *= 2.0
    while normal_laplace_cdf(hi, sigma, scale) < p:
        hi *= 2.0
    return float(
        brentq(lambda v: float(normal_laplace_cdf(v, sigma, scale)) - p, lo, hi, xtol=1e-12 * span)
    )
