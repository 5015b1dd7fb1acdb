"""Exact Bernoulli decisions and the exact log-weight samplers (single and one-per-row).

Laws are checked with chi-square goodness-of-fit tests at a fixed false-positive rate (seeded,
p > 1e-3); the exact-arithmetic path, which floats almost never reach, is driven directly.
"""

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpuq.mechanisms import (
    exponential_mechanism_probabilities,
    sample_log_weights,
    sample_log_weights_rows,
)
from dpuq.mechanisms.exact import bernoulli_certified, enclose_exp, uniform_below
from dpuq.mechanisms.log_weights import bernoulli_exp_neg

P_MIN = 1e-3


def gof_pvalue(draws: np.ndarray, probs: np.ndarray) -> float:
    """Pearson chi-square; cells with expected count < 5 are pooled; draws on p = 0 fail."""
    observed = np.bincount(draws, minlength=probs.size).astype(float)
    assert observed[probs == 0].sum() == 0, "a draw landed on a candidate of probability 0"
    expected = probs * draws.size
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return float(stats.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue)


PROFILES = {
    "flat": np.zeros(7),
    "ties_and_impossible": np.array([0.0, 0.0, -np.inf, -0.5, -0.5, -np.inf, -3.0]),
    "steep": -np.arange(12.0) * 1.7,
    "huge_offset": 1e300 + np.zeros(4),  # equal weights at a huge log-weight
    "extreme_range": np.array([0.0, -1.0, -690.8, -1e5, -1e300, -2.0]),  # 1e-300 ratios
    "mixed_scale": np.log(np.array([1e-3, 0.2, 0.3, 0.1, 1e-9, 0.399])),
}


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_rows_sampler_fits_the_exponential_mechanism_law(name):
    lw = PROFILES[name]
    law = (
        exponential_mechanism_probabilities(lw, epsilon=2.0, sensitivity=1.0)
        if np.isfinite(lw).all()
        else np.exp(lw - np.logaddexp.reduce(lw))
    )
    if name == "huge_offset":
        law = np.full(lw.size, 1.0 / lw.size)
    rng = np.random.default_rng(7)
    draws = sample_log_weights_rows(np.tile(lw, (40_000, 1)), rng)
    assert gof_pvalue(draws, law) > P_MIN


def test_single_and_rows_samplers_have_one_law():
    """Row r of the rows sampler and the single sampler on row r: both fit the exact law."""
    rows = np.stack([PROFILES["steep"][:7], PROFILES["ties_and_impossible"], np.zeros(7)])
    rng = np.random.default_rng(11)
    batch = sample_log_weights_rows(np.repeat(rows, 6000, axis=0), rng).reshape(3, 6000)
    for r, lw in enumerate(rows):
        law = np.exp(lw - np.logaddexp.reduce(lw))
        single = np.array([sample_log_weights(lw, rng) for _ in range(3000)])
        assert gof_pvalue(batch[r], law) > P_MIN
        assert gof_pvalue(single, law) > P_MIN
        # two-sample homogeneity of the two samplers' draws
        table = np.stack(
            [np.bincount(batch[r][:3000], minlength=7), np.bincount(single, minlength=7)]
        )
        table = table[:, table.sum(axis=0) > 0]
        assert stats.chi2_contingency(table).pvalue > P_MIN


def test_large_range_of_candidates_binned_law():
    """m = 20 000 candidates spread over e^-700: draws fit the law aggregated into 20 bins."""
    m = 20_000
    lw = -np.linspace(0.0, 30.0, m)
    lw[::7] -= 650.0  # every 7th candidate is ~e^-650 lighter
    law = np.exp(lw - np.logaddexp.reduce(lw))
    bins = np.arange(m) * 20 // m
    rng = np.random.default_rng(3)
    draws = np.concatenate([sample_log_weights_rows(np.tile(lw, (500, 1)), rng) for _ in range(2)])
    assert gof_pvalue(bins[draws], np.bincount(bins, weights=law)) > P_MIN
    assert not np.any(draws % 7 == 0)  # their total mass is ~1e-283


@pytest.mark.slow
def test_a_million_candidates():
    m = 10**6
    lw = -np.linspace(0.0, 20.0, m)
    law = np.exp(lw - np.logaddexp.reduce(lw))
    bins = np.arange(m) * 20 // m
    rng = np.random.default_rng(4)
    draws = np.array([sample_log_weights(lw, rng) for _ in range(400)])
    assert gof_pvalue(bins[draws], np.bincount(bins, weights=law)) > P_MIN


def test_bad_log_weights_are_refused():
    rng = np.random.default_rng(0)
    for bad, match in [
        (np.zeros(3), "2-dimensional"),
        (np.zeros((2, 0)), "at least one"),
        (np.array([[0.0, np.nan]]), "NaN"),
        (np.array([[0.0, np.inf]]), "NaN or \\+inf"),
        (np.array([[0.0, 1.0], [-np.inf, -np.inf]]), "finite"),
    ]:
        with pytest.raises(ValueError, match=match):
            sample_log_weights_rows(bad, rng)
    with pytest.raises(ValueError, match="1-dimensional"):
        sample_log_weights(np.zeros((2, 2)), rng)


# ----------------------------------------------------------------- exact Bernoulli decisions


def test_enclosure_contains_exp_and_tightens():
    for x in [Fraction(0), Fraction(-1), Fraction(-1, 3), Fraction(-745), Fraction(-5000)]:
        lo, hi = enclose_exp(x, 30)
        lo2, hi2 = enclose_exp(x, 60)
        assert lo <= lo2 <= hi2 <= hi
        assert hi2 - lo2 <= hi2 * Fraction(1, 10**57)
        if x > -700:
            assert float(lo) <= np.exp(float(x)) * (1 + 1e-15)
            assert float(hi) >= np.exp(float(x)) * (1 - 1e-15)


@pytest.mark.parametrize(
    ("x", "c"),
    [(Fraction(-1), Fraction(1)), (Fraction(-1, 7), Fraction(3, 5)), (Fraction(0), Fraction(1, 3))],
)
def test_exact_path_has_the_exact_law(x, c):
    """With only 6 known bits the exact resolution decides most draws: P(True) = c e^x."""
    rng = np.random.default_rng(21)
    n = 4000
    hits = sum(uniform_below(int(rng.integers(64)), 6, x, c, rng) for _ in range(n))
    p = float(c) * np.exp(float(x))
    assert stats.binomtest(hits, n, p).pvalue > P_MIN


def test_far_tail_decisions():
    rng = np.random.default_rng(0)
    huge = Fraction(-(10**5))
    assert not uniform_below(1, 64, huge, Fraction(1), rng)  # U >= 2^-64 > e^-1e9
    # U = 0 exactly on all its bits is below every positive probability
    always_zero = type("Z", (), {"integers": lambda self, *a, **k: np.uint64(0)})()
    assert uniform_below(0, 64, huge, Fraction(1), always_zero)
    assert uniform_below(0, 64, Fraction(-3000), Fraction(1), always_zero)


def test_certified_bernoulli_fits_even_with_a_coarse_float():
    """A float off by 2^-31 relative is still decided exactly (ambiguity resolved exactly)."""
    rng = np.random.default_rng(5)
    true = np.exp(-0.3)
    approx = np.full(200_000, true * (1 + 2.0**-32))
    got = bernoulli_certified(approx, 2.0**-31, rng, lambda i: (Fraction(-3, 10), Fraction(1)))
    assert stats.binomtest(int(got.sum()), got.size, true).pvalue > P_MIN


def test_bernoulli_exp_neg_any_size():
    rng = np.random.default_rng(8)
    assert bernoulli_exp_neg(0.0, rng)
    assert not bernoulli_exp_neg(np.inf, rng)
    hits = sum(bernoulli_exp_neg(2.5, rng) for _ in range(20_000))
    assert stats.binomtest(hits, 20_000, np.exp(-2.5)).pvalue > P_MIN
    assert not any(bernoulli_exp_neg(900.0, rng) for _ in range(100))
    with pytest.raises(ValueError, match=">= 0"):
        bernoulli_exp_neg(-1.0, rng)
