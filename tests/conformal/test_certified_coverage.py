"""The certified method on shipped data over random splits: coverage, size, APS/RAPS full sets.

Margins are 3 standard errors of the mean over splits; every split is one exact ε-DP release.
"""

import numpy as np
import pytest

from dpuq.conformal.scores import aps_scores, raps_scores
from dpuq.experiments.calibration_comparison import digits_pool
from dpuq.experiments.common import Method, compare_methods
from dpuq.experiments.evaluation import ScorePool

ALPHA = 0.1


def _run(pool: ScorePool, n: int, eps: float, splits: int, seed: int, methods=("certified",)):
    ms = [Method("split")] + [Method(m, eps, calibration=m) for m in methods]
    rng = np.random.default_rng(seed)
    return [r.metrics for r in compare_methods(
        pool, ms, alpha=ALPHA, n_calibration=n, n_test=None, n_splits=splits,
        random_state=rng, show_progress=False)]  # fmt: skip


@pytest.fixture(scope="module")
def digits():
    return digits_pool()


@pytest.fixture(scope="module")
def confident():
    return digits_pool(30.0)


def _pool_of(matrix, labels):
    return ScorePool(matrix[np.arange(len(labels)), labels], np.sort(matrix, axis=1))


def test_certified_is_valid_and_close_to_split_conformal(digits):
    pool = ScorePool.from_probs(digits.probs, digits.labels)
    base, cert, paper = _run(pool, 1000, 1.0, 200, 1, methods=("certified", "paper"))
    se = cert.coverage.std(ddof=1) / np.sqrt(cert.coverage.size)
    assert cert.coverage.mean() >= 1 - ALPHA - 3 * se
    ratio = cert.mean_size.mean() / base.mean_size.mean()
    assert ratio <= 1.05  # the target at n = 1000, ε = 1
    assert cert.mean_size.mean() < paper.mean_size.mean()  # and better than Algorithm 3


def test_randomized_aps_and_raps_are_rarely_full(confident):
    rng = np.random.default_rng(4)
    for score in (aps_scores, raps_scores):
        matrix = score(confident.probs, randomized=True, random_state=rng)
        _, cert = _run(_pool_of(matrix, confident.labels), 1000, 1.0, 100, 5)
        assert np.mean(cert.thresholds >= 1.0) < 0.05
        se = cert.coverage.std(ddof=1) / np.sqrt(cert.coverage.size)
        assert cert.coverage.mean() >= 1 - ALPHA - 3 * se


def test_negative_control_deterministic_aps_of_a_confident_model_is_full(confident):
    # Almost all true-label APS scores of a confident model sit just below 1: no private
    # threshold separates them, and the release is the full set in most splits.
    _, cert = _run(_pool_of(aps_scores(confident.probs), confident.labels), 1000, 1.0, 40, 6)
    assert np.mean(cert.thresholds >= 1.0) > 0.5


@pytest.mark.slow
@pytest.mark.parametrize(("n", "eps"), [(200, 0.5), (200, 1.0), (500, 0.5), (1000, 0.5)])
def test_certified_coverage_other_settings(digits, n, eps):
    pool = ScorePool.from_probs(digits.probs, digits.labels)
    _, cert = _run(pool, n, eps, 300, n)
    se = cert.coverage.std(ddof=1) / np.sqrt(cert.coverage.size)
    assert cert.coverage.mean() >= 1 - ALPHA - 3 * se
