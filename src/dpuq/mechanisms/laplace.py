"""The Laplace mechanism (Dwork, McSherry, Nissim, Smith 2006), with its exact output law.

Privacy
-------
Input: a real query ``f(X)`` (a number or a vector of ``k`` numbers) of a data set ``X``.
Neighbouring relation: whatever relation the caller's sensitivity is stated for (in
:mod:`dpuq.inference`: replace-one with the sample size ``n`` public).
Sensitivity: the L1 sensitivity ``Δ = max_{X~X'} ||f(X) - f(X')||_1``, supplied by the caller.
Guarantee: releasing ``f(X) + (L_1, ..., L_k)`` with ``L_i`` i.i.d. ``Laplace(0, Δ/ε)`` is ε-DP
(δ = 0).
Argument: the output density is ``prod_i exp(-|y_i - f_i(X)| ε/Δ) / (2Δ/ε)``; between
neighbours the log-density moves by at most ``(ε/Δ) sum_i |f_i(X) - f_i(X')| <= ε`` (triangle
inequality), at every output ``y`` (Dwork and Roth 2014, Thm 3.6).
Running time: O(k).

Exact law: :func:`laplace_log_density` and :func:`laplace_cdf` give the output law of
:func:`laplace_mechanism` (location ``f(X)``, scale ``Δ/ε``); :func:`laplace_quantile` its
inverse CDF, for noise-aware inference (e.g. folding the noise of a released mean into a
confidence interval).

Exact noise: noise is never drawn in floating point (``Generator.laplace`` is vulnerable to
the low-order-bit attack of Mironov 2012). :func:`laplace_mechanism` rounds ``f(X)`` to a
power-of-two lattice of step ``γ <= b 2^-40`` and adds exact discrete Laplace noise on that
lattice (:mod:`dpuq.mechanisms.discrete_laplace`, Canonne, Kamath and Steinke 2020). The
rounding moves each coordinate by at most ``γ/2``, so the L1 sensitivity of the rounded query
is at most ``Δ + kγ``; :func:`laplace_scale` returns ``b = Δ/(ε - k 2^-40)`` (rounded up) so
that ``(Δ + kγ)/b <= ε``: the release is exactly ε-DP. The released law is the Laplace law of
scale ``b`` (up to a factor ``1 + 2^-40``) restricted to the lattice; the continuous helpers
below (:func:`laplace_cdf`, :func:`laplace_quantile`) describe it to within ``2^-40`` in CDF
and ``γ`` in location, and :func:`dpuq.mechanisms.discrete_laplace.discrete_laplace_log_pmf`
exactly.
"""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import as_real_array, check_epsilon, check_positive_finite
from dpuq.mechanisms.discrete_laplace import (
    discrete_laplace_log_pmf,
    laplace_lattice,
    laplace_noise,
    laplace_release,
    lattice_laplace_scale,
)
from dpuq.mechanisms.randomness import RandomState, release_generator

__all__ = [
    "discrete_laplace_log_pmf",
    "laplace_cdf",
    "laplace_lattice",
    "laplace_log_density",
    "laplace_mechanism",
    "laplace_noise",
    "laplace_quantile",
    "laplace_release",
    "laplace_scale",
    "laplace_tail_bound",
]


def _check_scale(scale) -> float:
    return check_positive_finite(scale, "scale")


def laplace_scale(sensitivity: float, epsilon: float, dim: int = 1) -> float:
    """The noise scale that makes the (exact, lattice) Laplace mechanism ε-DP.

    ``Δ/(ε - dim 2^-40)``, rounded up: ``Δ/ε`` up to a relative ``dim 2^-40 / ε``, the price
    of rounding ``dim`` coordinates to the noise lattice (module docstring).

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity ``Δ`` > 0 of the query, under the caller's neighbouring relation.
    epsilon : float
        Privacy parameter, > 0.
    dim : int, default 1
        Number of coordinates released with this scale.

    Returns
    -------
    float

    Examples
    --------
    >>> b = laplace_scale(2.0, 0.5)
    >>> 4.0 < b < 4.0 * (1 + 1e-11)
    True
    """
    check_positive_finite(sensitivity, "sensitivity")
    check_epsilon(epsilon)
    scale = lattice_laplace_scale(sensitivity, epsilon, dim)
    if not math.isfinite(scale):
        raise ValueError(f"sensitivity / epsilon overflows ({sensitivity!r} / {epsilon!r})")
    return scale


def laplace_mechanism(
    value,
    *,
    sensitivity: float,
    epsilon: float,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
):
    """Release ``value + Laplace(0, Δ/ε)`` noise, i.i.d. per coordinate; ε-DP.

    Privacy: ε-DP (δ = 0) when ``sensitivity`` bounds the L1 distance between the values of
    neighbouring data sets (for a vector, the sum over coordinates). See the module
    docstring for the argument and the exact lattice noise.

    Parameters
    ----------
    value : float or array-like
        The exact query answer ``f(X)``; finite.
    sensitivity : float
        L1 sensitivity ``Δ`` > 0 of ``f`` under the caller's neighbouring relation.
    epsilon : float
        Privacy parameter, > 0.
    random_state, ledger, dataset :
        Randomness (None: OS entropy, for releases) and budget (charged before any noise),
        as in :func:`~dpuq.mechanisms.randomness.release_generator`.

    Returns
    -------
    float or ndarray
        The noisy answer, a float for a scalar ``value``, else an array of its shape.

    Examples
    --------
    >>> y = laplace_mechanism(3.0, sensitivity=1.0, epsilon=1.0, random_state=0)
    >>> isinstance(y, float)
    True
    """
    arr = as_real_array(value, "value")
    scale = laplace_scale(sensitivity, epsilon, max(1, arr.size))
    if not np.all(np.isfinite(arr)):
        raise ValueError("value must be finite")
    settings = {"size": int(arr.size), "sensitivity": float(sensitivity)}
    rng = release_generator(
        random_state, ledger, dataset, float(epsilon), what="laplace_mechanism", settings=settings
    )
    return laplace_release(arr, scale=scale, random_state=rng)


def laplace_log_density(y, *, loc, scale: float) -> np.ndarray:
    """Log-density of ``Laplace(loc, scale)`` at ``y``: the exact output law of the mechanism.

    For the mechanism, ``loc = f(X)`` and ``scale = Δ/ε``.

    Examples
    --------
    >>> float(laplace_log_density(0.0, loc=0.0, scale=1.0)) == -math.log(2.0)
    True
    """
    b = _check_scale(scale)
    return -np.abs(np.asarray(y, dtype=float) - np.asarray(loc, dtype=float)) / b - math.log(
        2.0 * b
    )


def laplace_cdf(y, *, loc=0.0, scale: float) -> np.ndarray:
    """CDF of ``Laplace(loc, scale)`` at ``y``, computed without cancellation in either tail.

    Examples
    --------
    >>> float(laplace_cdf(0.0, scale=2.0))
    0.5
    """
    b = _check_scale(scale)
    z = (np.asarray(y, dtype=float) - np.asarray(loc, dtype=float)) / b
    half = 0.5 * np.exp(-np.abs(z))
    return np.where(z < 0, half, 1.0 - half)


def laplace_quantile(p, *, loc=0.0, scale: float) -> np.ndarray:
    """Inverse CDF of ``Laplace(loc, scale)``; ``p`` in (0, 1).

    Examples
    --------
    >>> float(laplace_quantile(0.5, loc=1.0, scale=3.0))
    1.0
    """
    b = _check_scale(scale)
    q = np.asarray(p, dtype=float)
    if np.any(~((q > 0.0) & (q < 1.0))):
        raise ValueError("p must lie in (0, 1)")
    z = np.where(q < 0.5, np.log(2.0 * q), -np.log(2.0 * (1.0 - q)))
    return np.asarray(loc, dtype=float) + b * z


def laplace_tail_bound(scale: float, beta: float) -> float:
    """The ``u`` with ``P(|Laplace(0, scale)| > u) = beta`` exactly: ``scale * ln(1/beta)``.

    Examples
    --------
    >>> round(laplace_tail_bound(1.0, math.exp(-2.0)), 12)
    2.0
    """
    from dpuq._validation import check_in_open_unit

    return -_check_scale(scale) * math.log(check_in_open_unit(beta, "beta"))
