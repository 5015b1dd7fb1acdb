"""calibrate(), the released object, and input validation."""

import dataclasses
import math

import numpy as np
import pytest

import dpuq


@pytest.fixture
def scores():
    return np.random.default_rng(3).beta(1, 4, size=1500)


class TestCalibrate:
    def test_released_object_is_immutable_and_complete(self, scores):
        cal = dpuq.calibrate(scores, alpha=0.1, epsilon=1.0, random_state=0)
        with pytest.raises(dataclasses.FrozenInstanceError):
            cal.threshold = 0.0
        m, _ = dpuq.auto_n_bins(1500, 0.1, 1.0)
        assert (cal.method, cal.n_bins, cal.gamma, cal.n, cal.epsilon) == (
            "certified", m, None, 1500, 1.0)  # fmt: skip
        assert cal.level == dpuq.certified_level(1500, 0.1, 1.0, m)
        assert cal.certified_coverage == dpuq.coverage_certificate(1500, cal.level, 1.0, m)
        assert cal.certified_coverage >= 0.9
        assert cal.threshold in set(np.arange(1, m + 1) / m)
        assert cal.to_dict()["method"] == "certified"
        assert cal.privacy_report.seeded

    def test_paper_method_is_algorithm_3(self, scores):
        cal = dpuq.calibrate(scores, alpha=0.1, epsilon=1.0, method="paper", random_state=0)
        m, g = dpuq.auto_n_bins(1500, 0.1, 1.0, method="paper")
        assert (cal.method, cal.n_bins, cal.gamma, cal.n, cal.epsilon) == ("paper", m, g, 1500, 1.0)
        assert cal.level == pytest.approx(dpuq.inflated_level(1500, 0.1, 1.0, m, g))
        assert cal.threshold in set(np.arange(1, m + 1) / m)
        rep = cal.privacy_report
        assert rep.epsilon == 1.0 and rep.delta == 0.0
        assert "replace-one" in rep.neighbouring and "public" in rep.neighbouring
        assert "replace-one" in str(rep)

    def test_fixed_bins_and_gamma(self, scores):
        cal = dpuq.calibrate(
            scores, alpha=0.1, epsilon=2.0, n_bins=50, gamma=0.2, method="paper", random_state=0
        )
        assert cal.n_bins == 50 and cal.gamma == 0.2
        assert cal.level == pytest.approx(dpuq.inflated_level(1500, 0.1, 2.0, 50, 0.2))

    def test_holds_no_scores(self, scores):
        cal = dpuq.calibrate(scores, alpha=0.1, epsilon=1.0, random_state=0)
        values = {v for v in cal.to_dict().values() if isinstance(v, float)}
        assert not values & set(scores.tolist())

    @pytest.mark.parametrize("method", ["certified", "paper"])
    def test_threshold_is_near_the_level_quantile_at_large_epsilon(self, scores, method):
        cal = dpuq.calibrate(
            scores, alpha=0.1, epsilon=50.0, n_bins=1000, method=method, random_state=0
        )
        assert abs(cal.threshold - np.quantile(scores, cal.level)) < 0.01


BAD_CALIBRATE = [
    (dict(scores=[0.1, 1.2]), "scores must lie in \\[0, 1\\]; some values are outside"),
    (dict(scores=[0.1, -0.2, 2.0]), "^[^0-9]*\\[0, 1\\][^0-9]*$"),  # no count, no extremes
    (dict(scores=[0.1, np.nan]), "non-finite"),
    (dict(scores=[0.1, np.inf]), "non-finite"),
    (dict(scores=[]), "empty"),
    (dict(scores=[[0.1]]), "1-dimensional"),
    (dict(alpha=0.0), "alpha must be in \\(0, 0.5\\]"),
    (dict(alpha=0.6), "alpha"),
    (dict(alpha=float("nan")), "alpha"),
    (dict(epsilon=0.0), "epsilon must be a finite number > 0"),
    (dict(epsilon=-1.0), "epsilon"),
    (dict(epsilon=float("nan")), "epsilon"),
    (dict(epsilon=float("inf")), "epsilon"),
    (dict(n_bins=1), "n_bins must be an integer >= 2"),
    (dict(n_bins="many"), "n_bins must be 'auto'"),
    (dict(gamma=1.5), "gamma"),
    (dict(gamma=0.5), "gamma only applies to method='paper'"),
    (dict(gamma=1.5, method="paper"), "gamma"),
    (dict(method="fast"), "method must be one of"),
]


@pytest.mark.parametrize(("change", "match"), BAD_CALIBRATE)
def test_calibrate_bad_input(change, match):
    kwargs = dict(scores=[0.1, 0.5, 0.9], alpha=0.1, epsilon=1.0)
    kwargs.update(change)
    with pytest.raises(ValueError, match=match):
        dpuq.calibrate(kwargs.pop("scores"), **kwargs)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: dpuq.private_quantile([0.5], 0.0, 1.0, 10, utility="weighted"), "level"),
        (lambda: dpuq.private_quantile([0.5], -0.5, 1.0, 10), "level"),
        (lambda: dpuq.certified_level(0, 0.1, 1.0, 10), "n must be"),
        (lambda: dpuq.coverage_certificate(10, 0.5, 1.0, 1), "n_bins"),
        (lambda: dpuq.auto_n_bins(10, 0.1, 1.0, method="x"), "method"),
        (lambda: dpuq.private_quantile([0.5], 0.9, 1.0, 1), "n_bins"),
        (lambda: dpuq.private_quantile_distribution([1.5], 0.9, 1.0, 10), "scores"),
        (lambda: dpuq.auto_n_bins(0, 0.1, 1.0), "n must be"),
        (lambda: dpuq.optimal_gamma(100, 0.7, 1.0, 10), "alpha"),
        (lambda: dpuq.split_conformal_threshold([0.1, np.nan], 0.1), "non-finite"),
        (lambda: dpuq.split_conformal_threshold([0.1], 1.0), "alpha"),
        (lambda: dpuq.prediction_sets([[0.1, 2.0]], 0.5), "score_matrix"),
        (lambda: dpuq.prediction_sets([[0.1, 0.2]], float("nan")), "threshold"),
        (lambda: dpuq.exponential_mechanism([], epsilon=1, sensitivity=1), "utilities"),
        (lambda: dpuq.exponential_mechanism([1.0], epsilon=1, sensitivity=0), "sensitivity"),
        (lambda: dpuq.exponential_mechanism([np.inf], epsilon=1, sensitivity=1), "utilities"),
        (lambda: dpuq.coverage(np.ones((2, 2)), [0, 1]), "boolean"),
        (lambda: dpuq.coverage(np.ones((2, 2), bool), [0, 5]), "outside"),
    ],
)
def test_functional_core_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_random_state_type_error():
    with pytest.raises(TypeError, match="random_state"):
        dpuq.private_quantile([0.5], 0.9, 1.0, 10, random_state="seed")


def test_split_conformal_full_sets_when_n_too_small():
    assert dpuq.split_conformal_threshold([0.2] * 5, 0.1) == math.inf
    sets = dpuq.prediction_sets([[0.2, 1.0]], math.inf)
    assert sets.all()


class TestMetrics:
    def test_coverage_and_sizes(self):
        sets = np.array([[True, False, True], [False, False, False], [True, True, True]])
        assert dpuq.coverage(sets, [2, 0, 1]) == pytest.approx(2 / 3)
        assert dpuq.set_sizes(sets).tolist() == [2, 0, 3]
        assert dpuq.coverage_by_set_size(sets, [2, 0, 1]) == {0: (1, 0.0), 2: (1, 1.0), 3: (1, 1.0)}
