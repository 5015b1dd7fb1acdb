"""Exact Laplace noise: the discrete Laplace law on a power-of-two lattice, sampled exactly.

Why not floating point
----------------------
``Generator.laplace`` (inverse CDF of a float uniform) does not draw from the Laplace law:
its outputs sit on an irregular set of doubles that depends on the value it is added to, and
single outputs can tell neighbouring data sets apart (Mironov 2012, "On significance of the
least significant bits for differential privacy"). dpuq never uses it.

The law
-------
For a noise scale ``b`` (``scale``), let the lattice step be the power of two
``γ = 2^(floor(log2 b) - 40)`` (so ``b 2^-41 < γ <= b 2^-40``) and the integer
``t = ceil(b / γ)`` (in ``[2^40, 2^41]``). The noise is ``γ Z`` with ``Z`` discrete Laplace,

    ``P(Z = z) = (1 - q) / (1 + q) q^|z|``,  ``q = exp(-1/t)``,  ``z`` in the integers

(Canonne, Kamath and Steinke 2020, "The discrete Gaussian for differential privacy", who also
give the sampler below): the Laplace law of scale ``b_eff = t γ`` (``b <= b_eff <= b (1 +
2^-40)``) restricted to the lattice. Its CDF is within ``2^-40`` of the continuous
``Laplace(0, b)`` CDF everywhere, so noise-aware inference that uses the continuous law is off
by at most that. :func:`discrete_laplace_log_pmf` is the exact law.

Privacy of a release (rounding argument)
----------------------------------------
:func:`laplace_release` rounds each coordinate of ``f(X)`` to the lattice,
``r(x) = γ rint(x/γ)`` (``|r(x) - x| <= γ/2``), and adds ``γ Z`` independently per coordinate.
For neighbours, ``sum_i |r(f_i(X)) - r(f_i(X'))| <= Δ + k γ`` with ``k`` coordinates, and the
ratio of the lattice pmfs at every output is at most ``exp((Δ + k γ) / (t γ)) <=
exp((Δ + k γ)/b)`` (triangle inequality, as for the continuous mechanism). With
``b >= Δ / (ε - k 2^-40)`` (:func:`lattice_laplace_scale`, the scale every release in dpuq
uses) and ``γ <= b 2^-40`` this is at most ``exp(ε)``: ε-DP exactly, δ = 0. The sum
``r(x) + γ Z`` is a lattice point; the double returned is its correctly rounded value (exact
whenever it is representable), a deterministic function of the lattice point, i.e.
post-processing.

The sampler (exact, vectorised)
-------------------------------
``X = U + t V`` is geometric with ``P(X = x) ∝ q^x`` when ``U`` is uniform on ``{0, ..., t-1}``
accepted with probability ``exp(-U/t)`` and ``V`` counts successes of Bernoulli(``e^-1``)
before the first failure; a uniform sign, rejecting ``(-, 0)``, makes ``Z`` discrete Laplace
(CKS 2020, Algorithms 1-2). Uniform integers are numpy's exact bounded integers; each
Bernoulli is decided exactly by :mod:`dpuq.mechanisms.exact` (64-bit uniform words against
certified float bounds; the rare undecided cases, probability about ``2^-45`` each, in exact
rational arithmetic). About 1.6 candidates, 2 words and one ``exp`` per draw.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpuq._validation import _as_float, check_epsilon, check_positive_finite
from dpuq.mechanisms.exact import (
    ABS_MARGIN,
    bernoulli_certified,
    bernoulli_constant,
    uniform_below,
    uniform_bits,
)
from dpuq.mechanisms.randomness import RandomState, check_random_state

__all__ = [
    "MIN_LAPLACE_EPSILON",
    "check_laplace_epsilon",
    "discrete_laplace_log_pmf",
    "laplace_lattice",
    "laplace_noise",
    "laplace_release",
    "lattice_laplace_scale",
    "lattice_min_epsilon",
    "sample_discrete_laplace",
]

#: The lattice step is at most ``scale * 2^-LATTICE_BITS``.
LATTICE_BITS = 40
_RHO = 2.0**-LATTICE_BITS


def lattice_min_epsilon(dim: int = 1) -> float:
    """The ε at or below which :func:`lattice_laplace_scale` refuses (``2 dim 2^-40``, about
    1.8e-12 for one value): a public floor callers check before they charge a ledger.

    Examples
    --------
    >>> lattice_min_epsilon() == 2.0**-39
    True
    """
    return 2.0 * dim * _RHO


#: The smallest ε a release gives one exact Laplace value: the lattice's floor with a factor 2
#: of margin (about 3.6e-12), checked by the releases before they charge a ledger.
MIN_LAPLACE_EPSILON = 2.0 * lattice_min_epsilon()


def check_laplace_epsilon(epsilon: float, dim: int = 1, what: str = "epsilon") -> float:
    """``epsilon`` if a Laplace release of ``dim`` coordinates can spend it, else a ValueError.

    The floor is ``dim`` :data:`MIN_LAPLACE_EPSILON` (twice :func:`lattice_min_epsilon`):
    public, so every release checks each of its Laplace parts with it *before* it charges a
    ledger (at ε = 2e-12 a release had been charged and then refused by the sampler).

    Examples
    --------
    >>> check_laplace_epsilon(1e-3, dim=255)
    0.001
    >>> check_laplace_epsilon(1e-11, dim=50)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: epsilon is too small for exact Laplace noise: 1e-11 over 50 coordinates, ...
    """
    floor = dim * MIN_LAPLACE_EPSILON
    eps = _as_float(epsilon, what)
    if 0 < eps <= floor:
        over = f" over {dim} coordinates" if dim > 1 else ""
        raise ValueError(
            f"{what} is too small for exact Laplace noise: {eps:.3g}{over}, at or below the "
            f"floor {floor:.3g} (raise epsilon" + (" or use fewer coordinates)" if dim > 1 else ")")
        )
    return check_epsilon(eps, what)


# |exp(-U/t) - fl(exp(fl(-U/t)))| <= 2^-47 relative: 2^-53 from the division (argument in
# [-1, 0]), 2^-48 for exp (module log_weights), rounded up.
_REL_ERR_EXP_UNIT = 2.0**-46
_EXP_MINUS_ONE = math.exp(-1.0)
_TWO64 = 2.0**64


def laplace_lattice(scale: float) -> tuple[float, int]:
    """The lattice step ``γ`` (a power of two) and integer scale ``t`` for a noise ``scale``.

    Examples
    --------
    >>> g, t = laplace_lattice(1.0)
    >>> g == 2.0**-40, t == 2**40
    (True, True)
    """
    b = check_positive_finite(scale, "scale")
    if b < 2.0**-1000:  # its lattice step would underflow below the smallest float
        raise ValueError(f"scale must be at least 2^-1000 (a noise scale this small: {b!r})")
    _, exponent = math.frexp(b)  # b = mantissa 2^exponent, mantissa in [0.5, 1)
    gamma = math.ldexp(1.0, exponent - 1 - LATTICE_BITS)
    return gamma, math.ceil(b / gamma)  # b / gamma is exact (a power-of-two division)


def lattice_laplace_scale(sensitivity: float, epsilon: float, dim: int = 1) -> float:
    """The noise scale ``b`` that makes :func:`laplace_release` of ``dim`` coordinates ε-DP.

    ``b = Δ / (ε - dim 2^-40)``, rounded up: the rounding of each coordinate to the lattice
    costs at most ``2^-40`` of ε (module docstring). For ``dim = 1`` and ``ε = 0.1`` this is
    ``Δ/ε`` times ``1 + 9e-12``.

    Examples
    --------
    >>> b = lattice_laplace_scale(1.0, 0.5)
    >>> 2.0 < b < 2.0 * (1 + 1e-11)
    True
    """
    sens = check_positive_finite(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    if not (isinstance(dim, int | np.integer) and dim >= 1):
        raise ValueError(f"dim must be a positive int, got {dim!r}")
    slack = eps - dim * _RHO
    if not slack > 0.5 * eps:
        raise ValueError("epsilon is too small for the lattice of exact Laplace noise")
    scale = math.nextafter(math.nextafter(sens / slack, math.inf), math.inf)
    if scale < 2.0**-1000:  # the lattice step of so small a scale underflows
        raise ValueError("sensitivity / epsilon must be at least 2^-1000 (exact Laplace noise)")
    return scale


class _ExactUnit:
    """``exact(i)`` for the acceptance ``exp(-u_i/t)``: ``(x, c) = (-u_i/t, 1)``."""

    def __init__(self, u: np.ndarray, t: int) -> None:
        self.u, self.t = u, t

    def __call__(self, i: int) -> tuple[Fraction, Fraction]:
        return Fraction(-int(self.u[i]), self.t), Fraction(1)


def _below(p: float, rel_err: float, x: Fraction, rng: np.random.Generator) -> bool:
    """One exact Bernoulli(``exp(x)``) from a float ``p`` within ``rel_err`` (scalar path)."""
    u = uniform_bits(rng)
    if u < math.floor((p * (1.0 - 2.0 * rel_err) - ABS_MARGIN) * _TWO64):
        return True
    if u >= math.ceil((p * (1.0 + 2.0 * rel_err) + ABS_MARGIN) * _TWO64):
        return False
    return uniform_below(u, 64, x, Fraction(1), rng)


def _sample_one(t: int, rng: np.random.Generator) -> int:
    """One draw of :func:`sample_discrete_laplace` with Python scalars (same algorithm)."""
    while True:
        w = int(rng.integers(0, 2 * t))
        u = w >> 1
        if not _below(math.exp(-u / t), _REL_ERR_EXP_UNIT, Fraction(-u, t), rng):
            continue
        v = 0
        while _below(_EXP_MINUS_ONE, 2.0**-50, Fraction(-1), rng):
            v += 1
        x = u + t * v
        if w & 1 and x == 0:
            continue
        return -x if w & 1 else x


def sample_discrete_laplace(t: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` exact draws of ``Z`` with ``P(Z = z) ∝ exp(-|z|/t)``, ``t`` an integer >= 1.

    Returns int64 (an object array of Python ints in the astronomically rare case that a draw
    needs more than 62 bits).

    Examples
    --------
    >>> sample_discrete_laplace(10, 4, np.random.default_rng(0)).dtype
    dtype('int64')
    """
    t = int(t)
    if t < 1 or t >= 2**61:
        raise ValueError("t must be an integer in [1, 2^61)")
    if size <= 4:  # scalar path: the same algorithm without array overhead
        z = [_sample_one(t, rng) for _ in range(size)]
        big = any(abs(k) >= 2**62 for k in z)
        return np.array(z, dtype=object if big else np.int64)
    out = np.empty(size, dtype=np.int64)
    done = 0
    while done < size:
        need = size - done
        batch = need + need // 2 + 16
        w = rng.integers(0, 2 * t, size=batch)  # U = w >> 1 uniform on {0..t-1}, sign = w & 1
        u = w >> 1
        keep = bernoulli_certified(np.exp(-u / t), _REL_ERR_EXP_UNIT, rng, _ExactUnit(u, t))
        u, negative = u[keep], (w[keep] & 1).astype(bool)
        v = np.zeros(u.size, dtype=np.int64)
        alive = np.arange(u.size)
        while alive.size:  # V: successes of Bernoulli(e^-1) before the first failure
            ok = bernoulli_constant(
                _EXP_MINUS_ONE, 2.0**-50, alive.size, rng, Fraction(-1), Fraction(1)
            )
            alive = alive[ok]
            v[alive] += 1
        if v.size and int(v.max()) >= (2**62) // t - 1:  # would overflow int64: exact ints
            x = np.array([int(a) + t * int(b) for a, b in zip(u, v, strict=True)], dtype=object)
        else:
            x = u + t * v
        valid = ~(negative & (x == 0))  # (-, 0) is rejected: 0 would count twice
        z = np.where(negative, -x, x)[valid][:need]
        if z.dtype == object and out.dtype != object:
            out = out.astype(object)
        out[done : done + z.size] = z
        done += z.size
    return out


def laplace_noise(scale: float, size=None, *, random_state: RandomState = None):
    """Exact Laplace noise of scale ``scale`` on the lattice ``γ Z`` (module docstring).

    The law is :func:`discrete_laplace_log_pmf`: Laplace of scale ``t γ`` (``>= scale``, within
    a factor ``1 + 2^-40``) restricted to the lattice. Use :func:`laplace_release` to release a
    value (it rounds the value to the lattice first, which privacy needs); the noise alone is
    for simulations of a mechanism's noise (e.g. a parametric bootstrap).

    Parameters
    ----------
    scale : float
        The Laplace scale ``b > 0``.
    size : None, int or tuple of ints
        Output shape; None returns a float.
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> z = laplace_noise(2.0, size=5, random_state=0)
    >>> g, _ = laplace_lattice(2.0)
    >>> z.shape, bool(np.all(z / g == np.round(z / g)))
    ((5,), True)
    """
    gamma, t = laplace_lattice(scale)
    rng = check_random_state(random_state)
    shape = () if size is None else (size,) if isinstance(size, int | np.integer) else tuple(size)
    n = math.prod(shape)
    z = sample_discrete_laplace(t, n, rng)
    noise = (z.astype(float) * gamma).reshape(shape)
    return float(noise) if size is None else noise


def _round_to_lattice(x: np.ndarray, gamma: float) -> np.ndarray:
    """``γ rint(x/γ)``; doubles with ``|x| >= 2^52 γ`` are already lattice points."""
    big = np.abs(x) >= 2.0**52 * gamma
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(big, x, np.rint(np.where(big, 0.0, x) / gamma) * gamma)


def laplace_release(value, *, scale: float, random_state: RandomState = None):
    """Release ``r(value) + γ Z`` per coordinate: exact Laplace noise, ε-DP (module docstring).

    ε-DP when ``scale >= lattice_laplace_scale(Δ, ε, dim=value.size)`` with ``Δ`` the L1
    sensitivity of the value under the caller's neighbouring relation.

    Parameters
    ----------
    value : float or array-like
        The exact query answer; finite.
    scale : float
        Noise scale ``b > 0``.
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments.

    Returns
    -------
    float or ndarray
        A float for a scalar ``value``, else an array of its shape.

    Examples
    --------
    >>> y = laplace_release(0.1, scale=1.0, random_state=0)
    >>> y == round(y * 2**40) / 2**40  # a lattice point: no low-order bits of 0.1 survive
    True
    """
    gamma, t = laplace_lattice(scale)
    x = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("value must be finite")
    rng = check_random_state(random_state)
    z = sample_discrete_laplace(t, x.size, rng).reshape(x.shape)
    base = _round_to_lattice(x, gamma)
    if z.dtype != object and np.all(np.abs(z) < 2**53):
        y = base + z * gamma  # both exact doubles: the sum is correctly rounded
    else:  # astronomically rare: the exact lattice point, then correct rounding
        y = np.array(
            [
                float(Fraction(b) + Fraction(gamma) * int(k))
                for b, k in zip(base.flat, z.flat, strict=True)
            ]
        ).reshape(x.shape)
    return float(y) if y.ndim == 0 else y


def discrete_laplace_log_pmf(y, *, loc=0.0, scale: float) -> np.ndarray:
    """Exact log-pmf of ``loc + laplace_noise(scale)`` at the lattice points ``y``.

    ``loc`` and ``y`` must be lattice points (multiples of ``γ``, e.g. outputs of
    :func:`laplace_release` and the rounded value); other ``y`` get ``-inf``.

    Examples
    --------
    >>> g, t = laplace_lattice(1.0)
    >>> lp = discrete_laplace_log_pmf(np.array([0.0, g]), scale=1.0)
    >>> bool(abs(lp[0] - lp[1] - 1 / t) < 1e-15)
    True
    """
    gamma, t = laplace_lattice(scale)
    k = (np.asarray(y, dtype=float) - np.asarray(loc, dtype=float)) / gamma
    on = k == np.round(k)
    log_norm = math.log(-math.expm1(-1.0 / t)) - math.log1p(math.exp(-1.0 / t))
    return np.where(on, log_norm - np.abs(k) / t, -np.inf)
