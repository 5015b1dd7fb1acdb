"""The statistics of dpuq.audit: Clopper–Pearson, the two-proportion bound, the one-run bound."""

import math

import numpy as np
import pytest
from scipy import stats

from dpuq.audit import (
    clopper_pearson,
    epsilon_from_counts,
    one_run_epsilon_lower_bound,
    one_run_p_value,
)


@pytest.mark.parametrize(("k", "n"), [(1, 10), (7, 10), (30, 200), (199, 200)])
def test_clopper_pearson_bounds_are_where_the_binomial_tails_equal_the_level(k, n):
    lo, hi = clopper_pearson(k, n, 0.975)
    assert stats.binom.sf(k - 1, n, float(lo)) == pytest.approx(0.025, rel=1e-6)  # P[X >= k]
    assert stats.binom.cdf(k, n, float(hi)) == pytest.approx(0.025, rel=1e-6)  # P[X <= k]


def test_clopper_pearson_edges():
    lo, hi = clopper_pearson([0, 10], [10, 10], 0.95)
    assert lo[0] == 0.0 and hi[1] == 1.0
    assert hi[0] == pytest.approx(1 - 0.05**0.1) and lo[1] == pytest.approx(0.05**0.1)


def test_two_proportion_bound_subtracts_delta_and_gives_zero_when_delta_is_larger():
    plain = float(epsilon_from_counts(400, 1000, 20, 1000))
    lo, _ = clopper_pearson(400, 1000, 0.975)
    _, hi = clopper_pearson(20, 1000, 0.975)
    assert plain == pytest.approx(math.log(float(lo) / float(hi)))
    with_delta = float(epsilon_from_counts(400, 1000, 20, 1000, delta=0.1))
    assert with_delta == pytest.approx(math.log((float(lo) - 0.1) / float(hi)))
    assert float(epsilon_from_counts(400, 1000, 20, 1000, delta=0.5)) == 0.0


def test_two_proportion_bound_holds_at_its_confidence_when_the_ratio_is_exactly_e_eps():
    """Counts from an event with P = e^ε P' exactly (the worst case): the bound exceeds ε in
    at most 5% of 4000 simulated audits (plus a binomial margin)."""
    rng = np.random.default_rng(0)
    eps, p_prime, n = 1.0, 0.05, 2000
    k = rng.binomial(n, math.exp(eps) * p_prime, size=4000)
    k2 = rng.binomial(n, p_prime, size=4000)
    over = np.mean(epsilon_from_counts(k, n, k2, n, confidence=0.95) > eps)
    assert over <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)
    assert np.median(epsilon_from_counts(k, n, k2, n)) > 0.5  # and it is not vacuous


def _p_value_by_the_theorem(m, r, v, eps, delta):
    """Theorem 3.1 of Steinke, Nasr, Jagielski (2023) written out term by term."""
    q = math.exp(eps) / (1 + math.exp(eps))
    pmf = [math.comb(r, j) * q**j * (1 - q) ** (r - j) for j in range(r + 1)]
    tail = sum(pmf[v:])
    window = max((sum(pmf[v - i : v]) / i for i in range(1, v + 1)), default=0.0)
    return min(tail + 2 * m * delta * window, 1.0)


@pytest.mark.parametrize(
    ("m", "r", "v", "eps", "delta"),
    [
        (100, 20, 15, 0.5, 0.0),
        (100, 20, 15, 0.5, 1e-3),
        (1000, 50, 45, 2.0, 1e-5),
        (10, 10, 3, 0.1, 0.01),
    ],
)
def test_one_run_p_value_is_the_theorem(m, r, v, eps, delta):
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(
        _p_value_by_the_theorem(m, r, v, eps, delta), rel=1e-9
    )


def test_one_run_bound_is_where_the_p_value_crosses_beta():
    for m, r, v, delta in [(1000, 100, 90, 0.0), (1000, 100, 90, 1e-5), (1000, 200, 130, 0.0)]:
        eps = one_run_epsilon_lower_bound(m, r, v, confidence=0.95, delta=delta)
        assert eps > 0
        assert (
            one_run_p_value(m, r, v, eps, delta)
            < 0.05
            <= one_run_p_value(m, r, v, eps + 1e-6, delta)
        )
    assert one_run_epsilon_lower_bound(1000, 100, 55) == 0.0


def test_one_run_bound_holds_for_randomised_response_the_worst_eps_dp_guesser():
    """ε-DP randomised response is the best possible guesser: v ~ Binomial(r, e^ε/(1+e^ε)).
    The bound exceeds ε in at most 5% of 150 runs (plus margin)."""
    rng = np.random.default_rng(1)
    eps, r = 1.0, 100
    v = rng.binomial(r, math.exp(eps) / (1 + math.exp(eps)), size=150)
    bounds = np.array([one_run_epsilon_lower_bound(1000, r, int(x)) for x in v])
    assert np.mean(bounds > eps) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 150)
    assert np.median(bounds) > 0.3


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="confidence"):
        epsilon_from_counts(1, 2, 1, 2, confidence=1.0)
    with pytest.raises(ValueError, match="delta"):
        epsilon_from_counts(1, 2, 1, 2, delta=-0.1)
    with pytest.raises(ValueError, match="n_correct <= n_guesses"):
        one_run_p_value(10, 5, 6, 1.0)
