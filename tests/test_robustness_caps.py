"""Extreme inputs from issue 16: a clear error naming the argument and its cap, before any
large allocation (checked with tracemalloc, which sees numpy's allocations), or a release."""

from __future__ import annotations

import numpy as np
import pytest

import dpuq
from dpuq._validation import MAX_EPSILON, as_real_array, check_labels

SCORES = np.random.default_rng(0).uniform(size=300)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: dpuq.calibrate(SCORES, alpha=0.1, epsilon=1.0, n_bins=10**9),
            "n_bins must be <= 10,000,000",
        ),
        (
            lambda: dpuq.private_confidence_interval(
                SCORES, alpha=0.1, epsilon=1.0, bounds=(0, 1), n_resamples=10**9
            ),
            "n_resamples must be <= 100,000",
        ),
        (
            lambda: dpuq.private_confidence_interval(
                SCORES,
                alpha=0.1,
                epsilon=1.0,
                bounds=(0, 1),
                statistic="median",
                n_candidates=10**9,
            ),
            "n_candidates must be <= 1,000,000",
        ),
        (
            lambda: dpuq.private_confidence_interval(
                SCORES,
                alpha=0.1,
                epsilon=1.0,
                bounds=(0, 1),
                method="ensemble_cdf",
                n_grid=10**9,
            ),
            "n_grid must be <= 100,000",
        ),
        (
            lambda: dpuq.private_confidence_interval(
                np.linspace(0, 1, 2000),
                alpha=0.1,
                epsilon=1.0,
                bounds=(0, 1),
                n_subsets=1000,
                n_resamples=100_000,
            ),
            "1,000 x 100,000 needs 100,000,000 cells",
        ),
        (lambda: dpuq.auto_n_bins(200, 0.1, 1e4), "epsilon must be <= 100"),
        (lambda: dpuq.calibrate(SCORES, alpha=0.1, epsilon=1e308), "epsilon must be <="),
        (
            lambda: dpuq.private_confidence_interval(
                SCORES, alpha=0.1, epsilon=1e308, bounds=(0, 1)
            ),
            "epsilon must be <=",
        ),
        (lambda: dpuq.expected_calibration_error(np.full((3, 2), 0.5), [0, 1, 0], 10**9), "n_bins"),
        (lambda: dpuq.calibrate(SCORES, alpha=0.1, epsilon=5e-324), "epsilon must be >="),
    ],
)
def test_refused_before_allocating(peak_bytes, call, message):
    def run():
        with pytest.raises(ValueError, match=message):
            call()

    assert peak_bytes(run) < 20_000_000


@pytest.mark.parametrize(
    "bad",
    [SCORES.astype(complex), SCORES > 0.5, SCORES.astype(str), np.array([0.1, None], dtype=object)],
    ids=["complex", "bool", "str", "object"],
)
def test_non_real_scores_are_refused_not_coerced(bad):
    with pytest.raises(TypeError, match="scores must hold real numbers"):
        dpuq.calibrate(bad, alpha=0.1, epsilon=1.0)
    with pytest.raises(TypeError, match="x must hold real numbers"):
        dpuq.private_confidence_interval(bad, alpha=0.1, epsilon=1.0, bounds=(0, 1))


def test_epsilon_at_the_cap_still_releases():
    cal = dpuq.calibrate(SCORES, alpha=0.1, epsilon=MAX_EPSILON, n_bins=100, random_state=0)
    assert 0.0 <= cal.threshold <= 1.0
    ci = dpuq.private_confidence_interval(
        SCORES, alpha=0.1, epsilon=MAX_EPSILON, bounds=(0, 1), statistic="median", random_state=0
    )
    assert 0.0 <= ci.lower <= ci.upper <= 1.0


def test_dtype_policy_for_labels_and_array_likes():
    assert check_labels(np.array([0.0, 2.0]), 3, 2).tolist() == [0, 2]  # integral floats
    with pytest.raises(ValueError, match="labels must be integer class indices"):
        check_labels(np.array([0.5, 1.0]), 3, 2)
    with pytest.raises(TypeError, match="labels must be integer"):
        check_labels(np.array([True, False]), 3, 2)
    pd = pytest.importorskip("pandas")
    assert as_real_array(pd.Series([0.25, 0.5]), "scores").tolist() == [0.25, 0.5]
    with pytest.raises(TypeError, match="ragged must be a rectangular array"):
        as_real_array([[0.1, 0.2], [0.3]], "ragged")
