"""Rank schedules as knots (issue 38): the mechanism's checks, the planning's knots, and the
class-conditional release on more than 2^16 points (where the knots are sparse)."""

import numpy as np
import pytest

import dpuq
from dpuq.conformal.class_levels import (
    class_rank_knots,
    class_rank_schedule,
    padded_coverage_certificate,
)
from dpuq.mechanisms.class_thresholds import RankKnots, check_rank_schedule, rank_at


def _knots(sizes, ranks):
    return RankKnots(np.asarray(sizes), np.asarray(ranks))


@pytest.mark.parametrize(
    ("sizes", "ranks", "pad", "match"),
    [
        ([0, 2, 2], [1, 2, 3], 1, "increase strictly"),
        ([1, 2], [1, 2], 1, "start at 0"),
        ([0, 2], [-1, 0], 1, ">= 0"),
        ([0, 2], [3, 2], 3, "nondecreasing"),
        ([0, 2], [1, 4], 3, "steps of at most 1"),  # a step of 3 over a gap of 2
        ([0, 5], [2, 7], 1, "n \\+ pad"),
        ([0.0, 2.0], [1, 2], 1, "integers"),
        ([0, 1], [1], 1, "same length"),
    ],
)
def test_bad_knots_are_refused(sizes, ranks, pad, match):
    with pytest.raises(ValueError, match=match):
        check_rank_schedule(_knots(sizes, ranks), pad)


def test_knots_interpolate_to_a_valid_dense_schedule():
    """Random valid knots: the interpolated ρ passes the dense check (nondecreasing,
    1-Lipschitz, <= n + pad) and equals the knots at the knots."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        gaps = rng.integers(1, 9, size=12)
        sizes = np.concatenate(([0], np.cumsum(gaps)))
        ranks = np.concatenate(([rng.integers(0, 4)], rng.integers(0, gaps + 1))).cumsum()
        pad = int(max(0, (ranks - sizes).max()))
        knots = check_rank_schedule(_knots(sizes, ranks), pad)[0]
        dense = rank_at(knots, np.arange(sizes[-1] + 20))
        check_rank_schedule(dense, pad)
        assert np.array_equal(dense[sizes], ranks)


def test_knots_agree_with_the_dense_schedule_and_keep_the_certificate():
    n, alpha, eps, m = 300_000, 0.1, 1.0, 1000
    knots, pad = class_rank_knots(n, alpha=alpha, epsilon=eps, n_bins=m)
    check_rank_schedule(knots, pad)
    assert knots.sizes.size < n // 2  # sparse beyond 2^16
    dense, pad_dense = class_rank_schedule(n, alpha=alpha, epsilon=eps, n_bins=m)
    assert pad == pad_dense
    assert np.array_equal(knots.ranks, dense[knots.sizes])  # ρ* itself at the knots
    between = rank_at(knots, np.arange(n + 1)) - dense
    assert between.min() >= 0 and between.max() <= 3  # an upper bound, a few ranks above
    for size in (0, 70_001, 150_003, n):  # the certificate at sizes between knots
        rank = int(rank_at(knots, [size])[0])
        assert padded_coverage_certificate(size, rank, epsilon=eps, n_bins=m) >= 1 - alpha


def test_small_releases_use_the_dense_schedule_unchanged():
    knots, _ = class_rank_knots(5_000, alpha=0.1, epsilon=1.0, n_bins=50)
    dense, _ = class_rank_schedule(5_000, alpha=0.1, epsilon=1.0, n_bins=50)
    assert np.array_equal(knots.sizes, np.arange(5_001))
    assert np.array_equal(knots.ranks, dense)


def test_release_beyond_the_dense_head_equals_the_law_sampled_row_by_row():
    """On 2·10^5 points (sparse knots): the release is a draw from the exact law, and a
    large class's threshold is near its quantile."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, size=200_000)
    scores = rng.uniform(size=labels.size)
    cal = dpuq.calibrate_by_class(scores, labels, 2, alpha=0.1, epsilon=1.0, random_state=5)
    assert all(0.89 < t < 0.92 for t in cal.thresholds)
