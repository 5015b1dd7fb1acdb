"""The Laplace mechanism: documented scale, exact output law, exact privacy, bad input."""

import math

import numpy as np
import pytest
from scipy import stats

from dpuq.mechanisms import (
    laplace_cdf,
    laplace_log_density,
    laplace_mechanism,
    laplace_quantile,
    laplace_scale,
    laplace_tail_bound,
)

# --- the scale and the sampled law -------------------------------------------------------------


@pytest.mark.parametrize(("sens", "eps"), [(1.0, 1.0), (0.25, 2.0), (3.0, 0.1)])
def test_scale_is_sensitivity_over_epsilon(sens, eps):
    # Δ/ε, raised by the lattice rounding's price: Δ/(ε - 2^-40), rounded up
    b = laplace_scale(sens, eps)
    assert sens / eps < b <= sens / (eps - 2.0**-40) * (1 + 1e-15)


@pytest.mark.parametrize(("sens", "eps"), [(1.0, 1.0), (0.5, 4.0)])
def test_samples_follow_the_documented_law(sens, eps):
    # 20000 releases of the same value: the noise must be Laplace(0, sens/eps).
    # Seeded, so the KS test below has a fixed outcome; its level is 1e-3.
    draws = laplace_mechanism(np.full(20000, 2.0), sensitivity=sens, epsilon=eps, random_state=11)
    noise = draws - 2.0
    p = stats.kstest(noise, stats.laplace(scale=sens / eps).cdf).pvalue
    assert p > 1e-3
    # the wrong scale (twice as large) is rejected: the test has power
    assert stats.kstest(noise, stats.laplace(scale=2 * sens / eps).cdf).pvalue < 1e-6


def test_scalar_in_scalar_out_and_shapes_kept():
    assert isinstance(laplace_mechanism(1.0, sensitivity=1.0, epsilon=1.0, random_state=0), float)
    out = laplace_mechanism(np.zeros((3, 2)), sensitivity=1.0, epsilon=1.0, random_state=0)
    assert out.shape == (3, 2)


def test_seed_reproduces_and_none_uses_entropy():
    a = laplace_mechanism(0.0, sensitivity=1.0, epsilon=1.0, random_state=5)
    b = laplace_mechanism(0.0, sensitivity=1.0, epsilon=1.0, random_state=5)
    assert a == b
    c = {laplace_mechanism(0.0, sensitivity=1.0, epsilon=1.0) for _ in range(5)}
    assert len(c) == 5


# --- exact law helpers ---------------------------------------------------------------------------


def test_law_helpers_agree_with_scipy():
    y = np.linspace(-8, 9, 101)
    law = stats.laplace(loc=0.5, scale=1.7)
    np.testing.assert_allclose(laplace_log_density(y, loc=0.5, scale=1.7), law.logpdf(y))
    np.testing.assert_allclose(laplace_cdf(y, loc=0.5, scale=1.7), law.cdf(y), rtol=1e-12)
    p = np.array([1e-9, 0.01, 0.3, 0.5, 0.8, 1 - 1e-9])
    np.testing.assert_allclose(laplace_quantile(p, loc=0.5, scale=1.7), law.ppf(p), rtol=1e-9)


def test_cdf_keeps_precision_in_the_lower_tail():
    # e^-40/2 ~ 2e-18 is far below the resolution of 1 - x: it must not be computed that way
    assert laplace_cdf(-40.0, scale=1.0) == pytest.approx(0.5 * math.exp(-40.0), rel=1e-12)


def test_tail_bound_is_exact():
    u = laplace_tail_bound(2.0, 0.01)
    assert 2.0 * (1.0 - laplace_cdf(u, scale=2.0)) == pytest.approx(0.01, rel=1e-10)


# --- privacy, exactly ---------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_log_density_ratio_between_neighbours_is_at_most_epsilon(eps):
    sens = 0.7
    scale = laplace_scale(sens, eps)
    y = np.linspace(-20, 20, 4001)
    worst = 0.0
    for shift in np.linspace(-sens, sens, 15):  # every neighbouring value within Δ
        ratio = laplace_log_density(y, loc=0.0, scale=scale) - laplace_log_density(
            y, loc=shift, scale=scale
        )
        worst = max(worst, float(np.max(np.abs(ratio))))
    assert worst <= eps + 1e-12
    assert worst == pytest.approx(eps, rel=1e-9)  # attained at |shift| = Δ: the bound is tight


def test_vector_release_uses_the_l1_sensitivity():
    # f(X) and f(X') differ by (0.3, -0.2, 0.5): L1 distance 1.0 = Δ
    eps, sens = 1.5, 1.0
    scale = laplace_scale(sens, eps)
    f, f2 = np.array([1.0, 2.0, 3.0]), np.array([1.3, 1.8, 3.5])
    rng = np.random.default_rng(0)
    y = rng.uniform(-5, 10, size=(20000, 3))
    ratio = laplace_log_density(y, loc=f, scale=scale).sum(axis=1) - laplace_log_density(
        y, loc=f2, scale=scale
    ).sum(axis=1)
    assert np.max(np.abs(ratio)) <= eps + 1e-12


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf, math.nan])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError, match="epsilon"):
        laplace_mechanism(0.0, sensitivity=1.0, epsilon=eps)


@pytest.mark.parametrize("sens", [0.0, -2.0])
def test_bad_sensitivity(sens):
    with pytest.raises(ValueError, match="sensitivity"):
        laplace_mechanism(0.0, sensitivity=sens, epsilon=1.0)


def test_non_finite_value_and_bad_probability():
    with pytest.raises(ValueError, match="finite"):
        laplace_mechanism([0.0, np.nan], sensitivity=1.0, epsilon=1.0)
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        laplace_quantile(1.0, scale=1.0)
    with pytest.raises(TypeError, match="epsilon"):
        laplace_mechanism(0.0, sensitivity=1.0, epsilon="1")
