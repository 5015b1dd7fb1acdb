"""The random number of runs of private selection, sampled exactly, and the other draws it makes.

Private selection (:mod:`dpuq.mechanisms.selection`) runs a private algorithm ``K`` times and
releases the best run; its guarantee rests on ``K`` having exactly the law the accounting
assumes. This module samples ``K`` exactly (no floating-point inverse CDF) and makes the other
random choices of the procedure: which candidate each run tries, how ties are broken.

Laws of ``K`` (Papernot & Steinke, ICLR 2022, Definition 1 and Section 3.3)
-----------------------------------------------------------------------------
- Truncated negative binomial ``D_{η,γ}``, ``η > -1``, ``γ`` in (0, 1), on ``k >= 1``:
  ``P(K = k) ∝ (1 - γ)^k ∏_{l=1}^{k-1} (l + η)/(l + 1)`` (the paper's
  ``(1-γ)^k/(γ^-η - 1) ∏_{l=0}^{k-1} (l+η)/(l+1)``, with its constant factor ``η`` dropped,
  which also covers ``η = 0``: the logarithmic law ``∝ (1 - γ)^k / k``). ``η = 1`` is the
  geometric law ``γ (1 - γ)^(k-1)`` (Liu & Talwar 2019's random stopping).
  ``E[K] = η (1 - γ) / (γ (1 - γ^η))`` (``η ≠ 0``), ``(1/γ - 1)/log(1/γ)`` (``η = 0``).
- Poisson(``μ``) on ``k >= 0`` (``K = 0``: nothing is run, nothing but "no result" released).

Exact samplers (rejection from a geometric proposal)
----------------------------------------------------
A geometric proposal ``G`` with ``P(G = k) = s (1 - s)^(k - k0)`` on ``k >= k0`` is drawn exactly
by counting successes of exact Bernoulli(``1 - s``) draws (:mod:`dpuq.mechanisms.exact`) before
the first failure. A proposal ``k`` is accepted with probability ``a_k = h(k)/h(k*)`` where
``h(k) = P(K = k)/P(G = k)`` up to a constant and ``k*`` maximises ``h``: then the accepted
value has law ``∝ P(G = k) h(k) ∝ P(K = k)``, exactly (von Neumann's rejection). Every ``a_k``
is a *rational* number computed exactly with :class:`fractions.Fraction` (``γ``, ``η``, ``μ``
are doubles, hence rationals), so each acceptance is an exact Bernoulli decision:

- TNB: ``s = γ`` for ``η <= 1`` (``h(k) = ∏_{l<k} (l+η)/(l+1)`` is non-increasing, ``k* = 1``),
  ``s = γ/η`` for ``η > 1`` (``h(k) = ρ^k ∏ (l+η)/(l+1)``, ``ρ = (1-γ)/(1-s) < 1``, with its
  maximum ``k*`` found by scanning the ratio ``ρ (k+η)/(k+1)``).
- Poisson: ``s = 1/(μ+1)`` on ``k >= 0``, ``h(k) = (μ+1)^k / k!``, maximal at
  ``k* = floor(μ + 1)``: ``a_k = (μ+1)^(k-k*) k*!/k!`` (the factor ``e^-μ`` cancels).

Uniform choices (which candidate a run tries; a tie among best scores) use numpy's exact
bounded integers. ``K`` itself is never returned by the selection: releasing it with the best
run would void the accounting (the best of a *known* number of runs is not covered).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpuq.mechanisms.exact import bernoulli_constant, uniform_below, uniform_bits

__all__ = [
    "DISTRIBUTIONS",
    "bernoulli_rational",
    "repetition_mean",
    "repetition_pgf",
    "repetition_pmf",
    "sample_repetitions",
    "tnb_gamma_for_mean",
    "uniform_index",
    "uniform_permutation",
]

#: Laws of the number of runs: the truncated negative binomial (shape ``η``), the geometric
#: (``η = 1``) and the Poisson.
DISTRIBUTIONS = ("truncated_negative_binomial", "geometric", "poisson")
_TWO64 = 2.0**64


def bernoulli_rational(p: Fraction, rng: np.random.Generator) -> bool:
    """One exact Bernoulli(``p``) decision for a rational ``p`` in [0, 1].

    Examples
    --------
    >>> bernoulli_rational(Fraction(1), np.random.default_rng(0))
    True
    """
    if p <= 0:
        return False
    if p >= 1:
        return True
    return uniform_below(uniform_bits(rng), 64, Fraction(0), Fraction(p), rng)


def _accept(a: float, n_roundings: int, exact, rng: np.random.Generator) -> bool:
    """Exact Bernoulli(``A``) for a rational ``A = exact()`` in [0, 1] known as a float ``a``.

    ``a`` is ``A`` computed with at most ``n_roundings`` roundings of relative ``2^-53`` each
    (products and quotients of exactly represented or once-rounded numbers), so
    ``|A - a| <= 2 n_roundings 2^-53 a`` (a generous bound). The 64-bit uniform word decides
    when it is clear of that interval; otherwise (rarely) ``exact()`` decides exactly.
    """
    u = uniform_bits(rng)
    if a > 1e-290:
        err = 2.0 * n_roundings * 2.0**-53
        if u + 1 <= math.floor(a * (1.0 - err) * _TWO64):
            return True
        if a * (1.0 + err) < 1.0 and u >= math.ceil(a * (1.0 + err) * _TWO64):
            return False
    p = exact()
    if p >= 1:
        return True
    return uniform_below(u, 64, Fraction(0), Fraction(p), rng)


def _geometric_failures(q: Fraction, rng: np.random.Generator) -> int:
    """Number of successes of exact Bernoulli(``q``) draws before the first failure."""
    qf = float(q)
    count = 0
    block = max(8, min(4096, int(4.0 / max(1.0 - qf, 1e-9))))
    while True:
        ok = bernoulli_constant(qf, 2.0**-52, block, rng, Fraction(0), q)
        fails = np.flatnonzero(~ok)
        if fails.size:
            return count + int(fails[0])
        count += block


def tnb_gamma_for_mean(mean: float, eta: float) -> float:
    """The ``γ`` of the truncated negative binomial with shape ``η`` and ``E[K] = mean``.

    Public (data-free) bisection; the sampler and the accounting then use this very ``γ``.

    Examples
    --------
    >>> tnb_gamma_for_mean(10.0, 1.0)
    0.1
    >>> abs(repetition_mean("truncated_negative_binomial", gamma=tnb_gamma_for_mean(10.0, 0.0),
    ...                     eta=0.0) - 10.0) < 1e-9
    True
    """
    if not (math.isfinite(mean) and mean > 1):
        raise ValueError(f"expected_runs must be finite and > 1, got {mean!r}")
    if eta == 1:
        return 1.0 / mean
    lo, hi = 1e-300, 1.0 - 1e-16  # E[K] decreases in γ: -> inf at 0, -> 1 at 1
    for _ in range(200):
        mid = math.sqrt(lo * hi) if hi / lo > 4 else 0.5 * (lo + hi)
        if repetition_mean("truncated_negative_binomial", gamma=mid, eta=eta) > mean:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    return hi


def repetition_mean(distribution: str, *, gamma: float = 0.0, eta: float = 0.0, mu: float = 0.0):
    """``E[K]`` of the law of the number of runs (module docstring).

    Examples
    --------
    >>> repetition_mean("geometric", gamma=0.25)
    4.0
    """
    if distribution == "poisson":
        return float(mu)
    if distribution == "geometric":
        eta = 1.0
    if eta == 0:
        return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
    return eta * (1.0 - gamma) / (gamma * -math.expm1(eta * math.log(gamma)))


def repetition_pmf(k, distribution: str, *, gamma: float = 0.0, eta: float = 0.0, mu: float = 0.0):
    """``P(K = k)`` (floats; for tests and documentation, not for sampling).

    Examples
    --------
    >>> float(repetition_pmf(1, "geometric", gamma=0.5))
    0.5
    """
    k = np.asarray(k, dtype=float)
    if distribution == "poisson":
        from scipy.stats import poisson

        return poisson.pmf(k, mu)
    if distribution == "geometric":
        eta = 1.0
    from scipy.special import gammaln

    # ∏_{l=0}^{k-1} (l+η)/(l+1) = Γ(k+η)/(Γ(η) k!); η = 0: the logarithmic law.
    with np.errstate(divide="ignore", invalid="ignore"):
        if eta == 0:
            out = (1 - gamma) ** k / (k * math.log(1.0 / gamma))
        else:
            log_w = gammaln(k + eta) - gammaln(eta) - gammaln(k + 1)
            sign = 1.0 if eta > 0 else -1.0
            out = sign * np.exp(log_w + k * math.log1p(-gamma)) / math.expm1(-eta * math.log(gamma))
            out = abs(out)
    return np.where(k >= 1, out, 0.0)


def repetition_pgf(x, distribution: str, *, gamma: float = 0.0, eta: float = 0.0, mu: float = 0.0):
    """``E[x^K]`` in closed form: the law of the best of ``K`` runs is ``P(best <= y) =
    pgf(F(y))`` with ``F`` the law of one run's score (exact laws in the tests).

    Examples
    --------
    >>> round(float(repetition_pgf(1.0, "truncated_negative_binomial", gamma=0.3, eta=0.5)), 12)
    1.0
    """
    x = np.asarray(x, dtype=float)
    if distribution == "poisson":
        return np.exp(mu * (x - 1.0))
    if distribution == "geometric":
        eta = 1.0
    if eta == 0:
        return np.log1p(-(1.0 - gamma) * x) / math.log(gamma)
    return ((1.0 - (1.0 - gamma) * x) ** (-eta) - 1.0) / (gamma ** (-eta) - 1.0)


def sample_repetitions(
    distribution: str,
    rng: np.random.Generator,
    *,
    gamma: float = 0.0,
    eta: float = 0.0,
    mu: float = 0.0,
) -> int:
    """One exact draw of the number of runs ``K`` (module docstring for the algorithm).

    Parameters
    ----------
    distribution : {"truncated_negative_binomial", "geometric", "poisson"}
    rng : numpy.random.Generator
    gamma, eta : float
        TNB parameters (``γ`` in (0, 1), ``η > -1``); geometric: ``γ`` only (``η = 1``).
    mu : float
        Poisson mean ``> 0``.

    Examples
    --------
    >>> k = sample_repetitions("geometric", np.random.default_rng(0), gamma=0.2)
    >>> isinstance(k, int) and k >= 1
    True
    """
    if distribution == "poisson":
        m = Fraction(mu)
        if not m > 0:
            raise ValueError(f"mu must be > 0, got {mu!r}")
        base = m + 1  # proposal: P(G = k) ∝ (μ/(μ+1))^k on k >= 0, h(k) = (μ+1)^k / k!
        k_star = math.floor(base)
        bf = float(base)
        while True:
            k = _geometric_failures(m / base, rng)
            # a_k = (μ+1)^(k-k*) k*!/k! <= 1, a product of |k - k*| factors
            if k >= k_star:
                a = math.prod(bf / j for j in range(k_star + 1, k + 1))
            else:
                a = math.prod(j / bf for j in range(k + 1, k_star + 1))

            def exact(k=k):
                return base ** (k - k_star) * Fraction(math.factorial(k_star), math.factorial(k))

            if _accept(a, 8 * (abs(k - k_star) + 1), exact, rng):
                return k
    if distribution == "geometric":
        eta = 1.0
    g, e = Fraction(gamma), Fraction(eta)
    if not (0 < g < 1):
        raise ValueError(f"gamma must be in (0, 1), got {gamma!r}")
    if not e > -1:
        raise ValueError(f"eta must be > -1, got {eta!r}")
    s = g if e <= 1 else g / e
    rho = (1 - g) / (1 - s)
    # h(k) = ρ^k ∏_{l=1}^{k-1} (l+η)/(l+1); its maximiser k* (1 when η <= 1)
    k_star = 1  # exact ratio test only (small fractions); h(k*) itself is needed exactly only
    while rho * (k_star + e) / (k_star + 1) > 1:  # in the rare undecided case (exact below)
        k_star += 1
    rf, ef = float(rho), float(eta)
    hf = math.prod(rf * (l_ + ef) / (l_ + 1) for l_ in range(1, k_star))
    h_star_cache: list[Fraction] = []

    def h_star() -> Fraction:
        if not h_star_cache:
            out = Fraction(1)
            for l_ in range(1, k_star):
                out *= rho * (l_ + e) / (l_ + 1)
            h_star_cache.append(out)
        return h_star_cache[0]

    while True:
        k = 1 + _geometric_failures(1 - s, rng)
        # a_k = h(k)/h(k*), h(k)/h(1) = ∏_{l=1}^{k-1} ρ (l+η)/(l+1)
        a = math.prod(rf * (l_ + ef) / (l_ + 1) for l_ in range(1, k)) / hf

        def exact(k=k):
            out = Fraction(1)
            for l_ in range(1, k):
                out *= rho * (l_ + e) / (l_ + 1)
            return out / h_star()

        if _accept(a, 8 * (k + k_star + 2), exact, rng):
            return k


def uniform_index(n: int, rng: np.random.Generator) -> int:
    """A uniform index in ``{0, ..., n-1}`` (numpy's exact bounded integers).

    Examples
    --------
    >>> 0 <= uniform_index(3, np.random.default_rng(0)) < 3
    True
    """
    return int(rng.integers(0, n))


def uniform_permutation(n: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random permutation of ``range(n)`` (data-free split of people).

    Examples
    --------
    >>> sorted(uniform_permutation(4, np.random.default_rng(0)).tolist())
    [0, 1, 2, 3]
    """
    return rng.permutation(n)
