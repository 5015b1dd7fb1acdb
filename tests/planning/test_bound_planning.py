"""The public bound at the user's n and ε (issue 39, item 2)."""

import itertools

import numpy as np
import pytest
from scipy.stats import binom

import dpuq
from dpuq.mechanisms.quantile import private_quantile_log_distribution
from dpuq.planning.bins import auto_n_bins
from dpuq.planning.bound import aimed_residual_coverage, whole_line_probability
from dpuq.planning.levels import certified_level


def test_whole_line_probability_matches_the_exact_law_on_a_small_case():
    # normal residuals: given K beyond B, the others on the quantile lattice below B
    from scipy.special import ndtri

    n, alpha, eps, q = 40, 0.1, 2.0, 0.95
    m = auto_n_bins(n, alpha, eps)[0]
    level = certified_level(n, alpha, eps, m)
    z_q = ndtri(0.5 * (1 + q))
    total = 0.0
    for k in range(n + 1):
        u = (np.arange(n - k) + 0.5) / max(n - k, 1)  # lattice of the law below B
        below = ndtri(0.5 * (1 + u * q)) / z_q
        scores = np.concatenate([below, np.ones(k)])
        _, lp = private_quantile_log_distribution(scores, level, eps, m)
        total += binom.pmf(k, n, 1 - q) * np.exp(lp[-1])
    assert whole_line_probability(n, alpha, eps, q) == pytest.approx(total, abs=0.02)


def test_tighter_bound_more_whole_line_releases():
    p = [whole_line_probability(159, 0.1, 1.0, q) for q in (0.93, 0.95, 0.97, 0.99, 0.995)]
    assert all(a > b for a, b in itertools.pairwise(p))


def test_aimed_coverage_depends_on_n_and_epsilon():
    small = aimed_residual_coverage(159, 0.1, 1.0)
    large = aimed_residual_coverage(2000, 0.1, 1.0)
    assert large < small <= 0.999
    assert whole_line_probability(159, 0.1, 1.0, small) <= 0.01
    assert aimed_residual_coverage(20, 0.1, 1.0) == np.inf  # no B helps at n = 20


def test_public_bound_takes_n_and_epsilon_and_says_why():
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Ridge

    X, y = load_diabetes(return_X_y=True)
    plain = dpuq.public_bound(Ridge(alpha=0.1), X[:280], y[:280], random_state=0)
    aimed = dpuq.public_bound(
        Ridge(alpha=0.1), X[:280], y[:280], n_calibration=159, calibration_epsilon=1.0,
        random_state=0,
    )  # fmt: skip
    assert aimed.whole_line_probability is not None and aimed.whole_line_probability <= 0.01
    assert "n=159" in aimed.aim and "whole-line" in aimed.aim
    assert aimed.bound >= plain.bound  # the old 0.99 quantile is too tight at n = 159, ε = 1
    big = dpuq.public_bound(
        Ridge(alpha=0.1), X[:280], y[:280], n_calibration=1000, calibration_epsilon=1.0,
        random_state=0,
    )  # fmt: skip
    assert big.quantile < aimed.quantile and big.bound < aimed.bound
    with pytest.raises(ValueError, match="both n_calibration and calibration_epsilon"):
        dpuq.public_bound(Ridge(), X[:280], y[:280], n_calibration=159)
    with pytest.raises(ValueError, match="no bound B"):
        dpuq.public_bound(Ridge(), X[:280], y[:280], n_calibration=10, calibration_epsilon=1.0)
