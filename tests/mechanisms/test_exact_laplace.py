"""Exact Laplace noise: the lattice law, its sampler, exact privacy of the lattice release."""

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpuq.mechanisms.discrete_laplace as dl
from dpuq.mechanisms import (
    discrete_laplace_log_pmf,
    laplace_lattice,
    laplace_mechanism,
    laplace_noise,
    laplace_release,
    laplace_scale,
)

P_MIN = 1e-3


def discrete_laplace_pmf(z, t):
    q = np.exp(-1.0 / t)
    return (1 - q) / (1 + q) * q ** np.abs(z)


@pytest.mark.parametrize(("t", "batch"), [(1, 60_000), (3, 60_000), (10, 60_000), (3, 3)])
def test_sampler_fits_the_discrete_laplace_law(t, batch):
    """Vectorised path (large batches) and scalar path (batches of at most 4)."""
    rng = np.random.default_rng(t + batch)
    z = np.concatenate([dl.sample_discrete_laplace(t, batch, rng) for _ in range(60_000 // batch)])
    support = np.arange(-12 * t, 12 * t + 1)
    p = discrete_laplace_pmf(support, t)
    obs = np.array([np.count_nonzero(z == k) for k in support])
    assert obs.sum() + np.count_nonzero(np.abs(z) > 12 * t) == z.size
    tail = z.size - obs.sum()
    exp = np.append(p * z.size, (1 - p.sum()) * z.size)
    obs = np.append(obs, tail)
    keep = exp >= 5
    obs = np.append(obs[keep], obs[~keep].sum())
    exp = np.append(exp[keep], exp[~keep].sum())
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > P_MIN


def test_lattice_noise_fits_the_laplace_law_at_real_scale():
    """At the real lattice (t ~ 2^40) the law is Laplace(b) within 2^-40 in CDF: KS test."""
    noise = laplace_noise(2.5, size=50_000, random_state=3)
    assert stats.kstest(noise, stats.laplace(scale=2.5).cdf).pvalue > P_MIN
    assert stats.kstest(noise, stats.laplace(scale=2.5 * 1.1).cdf).pvalue < 1e-6
    g, _ = laplace_lattice(2.5)
    assert np.all(np.round(noise / g) == noise / g)


def test_matches_opendp_discrete_laplace():
    """Two-sample test against OpenDP's exact discrete Laplace sampler (a reference)."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    m = dp.space_of(int) >> dp.m.then_laplace(scale=4.0)
    ref = np.array([m(0) for _ in range(4000)])
    ours = dl.sample_discrete_laplace(4, 4000, np.random.default_rng(9))
    cells = np.clip(np.concatenate([ref, ours]), -20, 20)
    table = np.stack([np.bincount(c + 20, minlength=41) for c in (cells[:4000], cells[4000:])])
    table = table[:, table.sum(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > P_MIN


def test_release_is_a_lattice_point_whatever_the_low_bits_of_the_value():
    """Mironov's attack reads low-order bits; a lattice release has none to read."""
    g, _ = laplace_lattice(1.0)
    a = laplace_release(0.1, scale=1.0, random_state=1)
    b = laplace_release(0.1 + 2.0**-50, scale=1.0, random_state=1)  # rounds to the same point
    assert a == b and a / g == np.round(a / g)
    y = laplace_release(np.full(1000, 1 / 3), scale=1e-3, random_state=2)
    g3, _ = laplace_lattice(1e-3)
    assert np.all(y / g3 == np.round(y / g3))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("dim", [1, 3])
def test_lattice_release_is_exactly_epsilon_dp(eps, dim):
    """Exact privacy by the law: worst neighbouring pairs, with rounding in the worst way.

    The log pmf ratio at every output is at most ``|r(x) - r(x')|_1 / (t γ)``, attained far out
    in the tail; it is checked in exact rational arithmetic on adversarial pairs, and the law
    itself (:func:`discrete_laplace_log_pmf`) at a tail output.
    """
    sens = 0.7
    b = laplace_scale(sens, eps, dim=dim)
    g, t = laplace_lattice(b)
    rng = np.random.default_rng(0)
    worst = Fraction(0)
    for _ in range(200):
        x = rng.uniform(-5, 5, dim)
        x = np.round(x / g) * g + 0.5 * g * (1 - 2.0**-20)  # just below a rounding midpoint
        d = rng.dirichlet(np.ones(dim)) * sens
        x2 = x + d + 0.5 * g * 2.0**-20  # just above: rounding adds almost γ per coordinate
        r1, r2 = dl._round_to_lattice(x, g), dl._round_to_lattice(x2, g)
        l1 = sum(abs(Fraction(a) - Fraction(c)) for a, c in zip(r1, r2, strict=True))
        assert l1 <= Fraction(sens) + dim * Fraction(g) * (1 + Fraction(1, 2**30))
        worst = max(worst, l1 / (t * Fraction(g)))
    assert worst <= Fraction(eps)
    # the law at an output beyond both values attains the ratio |r1 - r2| / (t γ)
    y = r2 + np.round(50 * b / g) * g
    ratio = np.sum(discrete_laplace_log_pmf(y, loc=r2, scale=b)) - np.sum(
        discrete_laplace_log_pmf(y, loc=r1, scale=b)
    )
    assert ratio <= eps * (1 + 1e-9)
    # negative control: the plain scale Δ/ε with rounding can exceed ε
    g0, t0 = laplace_lattice(sens / eps)
    x = np.array([0.5 * g0 * (1 - 2.0**-20)])
    x2 = x + sens + 0.5 * g0 * 2.0**-20
    l1 = abs(Fraction(dl._round_to_lattice(x2, g0)[0]) - Fraction(dl._round_to_lattice(x, g0)[0]))
    assert l1 / (t0 * Fraction(g0)) > Fraction(eps) * (1 - Fraction(1, 2**45))


def test_huge_noise_values_are_added_exactly(monkeypatch):
    """A draw beyond 2^53 (probability e^-4096) is added in exact arithmetic, then rounded."""
    huge = np.array([2**60 + 1], dtype=object)
    monkeypatch.setattr(dl, "sample_discrete_laplace", lambda t, n, rng: huge)
    g, _ = laplace_lattice(1.0)
    y = laplace_release(np.array([0.25]), scale=1.0, random_state=0)
    assert y[0] == float(Fraction(0.25) + Fraction(g) * (2**60 + 1))


def test_mechanism_uses_the_lattice_and_the_seed():
    a = laplace_mechanism([1.0, 2.0], sensitivity=1.0, epsilon=1.0, random_state=4)
    b = laplace_mechanism([1.0, 2.0], sensitivity=1.0, epsilon=1.0, random_state=4)
    np.testing.assert_array_equal(a, b)
    g, _ = laplace_lattice(laplace_scale(1.0, 1.0, dim=2))
    assert np.all(a / g == np.round(a / g))


def test_scalar_noise_and_bad_arguments():
    assert isinstance(laplace_noise(1.0, random_state=0), float)
    assert laplace_noise(1.0, size=(2, 3), random_state=0).shape == (2, 3)
    with pytest.raises(ValueError, match="scale"):
        laplace_noise(0.0)
    with pytest.raises(ValueError, match="dim"):
        laplace_scale(1.0, 1.0, dim=0)
    with pytest.raises(ValueError, match="underflow"):  # the epsilon floor (issue 16)
        laplace_scale(1.0, 1e-13)
