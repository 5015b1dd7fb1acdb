"""The median's bootstrap simulation draws from the exponential mechanism's exact law.

:func:`simulate_em_median` runs the private median on every resample (windowed rejection
sampler, :mod:`dpuq.mechanisms.windowed`). Each test fixes a few resamples, repeats each one
``T`` times, and compares the draws with the exact law of
:func:`dpuq.inference.estimates.private_median_log_distribution` on the expanded resample
(chi-square at a fixed false-positive rate of 1e-3 per comparison).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import dpuq.inference._resampling as resampling
from dpuq.inference._resampling import Resamples, simulate_em_median
from dpuq.inference.estimates import private_median_log_distribution
from dpuq.mechanisms.windowed import windowed_exponential_mechanism

T = 6000


def _check_law(draws, cand, xs_row, w_row, epsilon, bounds):
    _, log_law = private_median_log_distribution(
        np.repeat(xs_row, w_row.astype(int)),
        epsilon=epsilon,
        bounds=bounds,
        n_candidates=cand.size,
    )
    idx = np.searchsorted(cand, draws)
    assert np.array_equal(cand[idx], draws)  # every draw is a candidate
    counts = np.bincount(idx, minlength=cand.size)
    expected = np.exp(log_law) * draws.size
    keep = expected >= 5
    assert counts[~keep].sum() <= 5 + 5 * expected[~keep].sum()  # rare candidates stay rare
    if keep.sum() >= 2:
        obs, exp = counts[keep], expected[keep] * counts[keep].sum() / expected[keep].sum()
        assert stats.chisquare(obs, exp).pvalue > 1e-3


def _resamples(xs, w):
    """Subsets ``xs`` (K, m, b) with one weight row per group repeated T times."""
    k = xs.shape[0]
    n = int(w[0].sum())
    weights = np.repeat(w[:, None, :], T, axis=1).astype(float)
    return Resamples(xs, weights, k * xs.shape[1], n)


@pytest.mark.parametrize("epsilon", [0.05, 0.7, 4.0, 60.0])
def test_simulated_median_law_over_groups_and_subsets(epsilon, monkeypatch):
    monkeypatch.setattr(resampling, "_EM_CHUNK", 3000)  # several chunks and pieces
    rng = np.random.default_rng(3)
    b = 6
    xs = np.sort(rng.uniform(0.1, 0.9, size=(2, 2, b)), axis=-1)
    xs[1, 1] = np.array([0.3, 0.3, 0.3, 0.5, 0.5, 0.7])  # ties, points on the grid
    w = np.array([[2, 0, 3, 1, 1, 2], [0, 4, 1, 0, 3, 1]])  # resamples of size 9
    cand = np.linspace(0, 1, 11)
    draws = simulate_em_median(_resamples(xs, w), cand, epsilon, np.random.default_rng(5))
    assert draws.shape == (4, T)
    for row in range(4):
        g, i = divmod(row, 2)
        _check_law(draws[row], cand, xs[g, i], w[g], epsilon, (0.0, 1.0))


def test_rejections_keep_the_law(monkeypatch):
    """A negative slack makes the window tiny and outside proposals frequent."""
    monkeypatch.setattr(resampling, "_EM_WINDOW_SLACK", -6.0)
    rng = np.random.default_rng(8)
    xs = np.sort(rng.uniform(size=(1, 1, 7)), axis=-1)
    w = np.array([[3, 0, 5, 1, 2, 4, 6]])
    cand = np.linspace(0, 1, 21)
    draws = simulate_em_median(_resamples(xs, w), cand, 0.8, np.random.default_rng(9))[0]
    _check_law(draws, cand, xs[0, 0], w[0], 0.8, (0.0, 1.0))


def test_data_between_two_grid_points():
    """Every candidate then has the worst score n: the law is uniform over the grid."""
    xs = np.full((1, 1, 4), 0.55)
    w = np.array([[1, 2, 0, 2]])
    cand = np.linspace(0, 1, 11)
    draws = simulate_em_median(_resamples(xs, w), cand, 2.0, np.random.default_rng(1))[0]
    _check_law(draws, cand, xs[0, 0], w[0], 2.0, (0.0, 1.0))


def test_windowed_mechanism_exact_law_with_outside_mass():
    """Known law over 8 candidates; window {2, 3, 4}, loose bound outside (many rejections)."""
    ell = np.array([-3.0, -1.0, 0.0, 0.5, -0.2, -2.0, -4.0, -1.5])
    rows = 20000
    lw = np.tile(ell[2:5], rows)
    first = np.tile(np.array([2, 3, 4]), rows)
    size = np.ones_like(first)
    bound = np.full(rows, -1.0)  # >= every outside log-weight

    def outside(r, j):
        return ell[j]

    draws = windowed_exponential_mechanism(
        lw, np.full(rows, 3), first, size, 8, bound, outside, np.random.default_rng(2)
    )
    p = np.exp(ell) / np.exp(ell).sum()
    counts = np.bincount(draws, minlength=8)
    assert stats.chisquare(counts, p * rows).pvalue > 1e-3


def test_negative_control_wrong_epsilon_is_detected():
    rng = np.random.default_rng(8)
    xs = np.sort(rng.uniform(size=(1, 1, 7)), axis=-1)
    w = np.array([[3, 0, 5, 1, 2, 4, 6]])
    cand = np.linspace(0, 1, 21)
    draws = simulate_em_median(_resamples(xs, w), cand, 1.6, np.random.default_rng(9))[0]
    with pytest.raises(AssertionError):
        _check_law(draws, cand, xs[0, 0], w[0], 0.8, (0.0, 1.0))
