"""Conformity scores (SPEC A.6)."""

import numpy as np
import pytest

import dpuq

P = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])


class TestLAC:
    def test_hand_values(self):
        np.testing.assert_allclose(dpuq.lac_scores(P, [0, 2]), [0.5, 0.2])
        np.testing.assert_allclose(dpuq.lac_scores(P), 1 - P)


class TestAPS:
    def test_hand_values_non_randomised(self):
        # row 0: order 0 (0.5), 1 (0.3), 2 (0.2): cumulative 0.5, 0.8, 1.0
        np.testing.assert_allclose(dpuq.aps_scores(P)[0], [0.5, 0.8, 1.0])
        # row 1: order 2 (0.8), then ties 0, 1 by index: 0.8, 0.9, 1.0
        np.testing.assert_allclose(dpuq.aps_scores(P)[1], [0.9, 1.0, 0.8])
        np.testing.assert_allclose(dpuq.aps_scores(P, [1, 1]), [0.8, 1.0])

    def test_randomised_lies_between_mass_above_and_mass_including(self):
        full = dpuq.aps_scores(P)
        rnd = dpuq.aps_scores(P, randomized=True, random_state=0)
        np.testing.assert_array_less(rnd, full + 1e-12)
        np.testing.assert_array_less(full - P - 1e-12, rnd)

    def test_sets_are_greedy_top_classes(self):
        probs = np.random.default_rng(0).dirichlet(np.ones(6), size=50)
        sets = dpuq.prediction_sets(dpuq.aps_scores(probs), 0.7)
        order = np.argsort(-probs, axis=1, kind="stable")
        for s, o in zip(sets, order, strict=True):
            k = s.sum()
            assert set(np.flatnonzero(s)) == set(o[:k])

    def test_scores_in_unit_interval_despite_rounding(self):
        probs = np.random.default_rng(1).dirichlet(np.ones(100) * 0.1, size=200)
        s = dpuq.aps_scores(probs)
        assert s.min() >= 0 and s.max() <= 1


class TestRAPS:
    def test_penalty_and_public_rescaling(self):
        lam, k = 0.5, 1
        raw = dpuq.aps_scores(P) + lam * np.maximum(0, np.array([[1, 2, 3], [2, 3, 1]]) - k)
        np.testing.assert_allclose(dpuq.raps_scores(P, lam=lam, k_reg=k), raw / (1 + lam * 2))
        assert dpuq.raps_scores(P, lam=lam, k_reg=k).max() <= 1.0

    def test_rejects_negative_lambda(self):
        with pytest.raises(ValueError, match="lam"):
            dpuq.raps_scores(P, lam=-1)


class TestBadProbabilities:
    @pytest.mark.parametrize(
        ("probs", "match"),
        [
            ([[0.5, 0.6]], "do not sum to 1"),
            ([[-0.1, 1.1]], "negative"),
            ([[np.nan, 1.0]], "non-finite"),
            ([0.5, 0.5], "2-dimensional"),
            (np.zeros((0, 3)), "empty"),
            ([[1.0]], "at least 2 classes"),
        ],
    )
    @pytest.mark.parametrize("score", [dpuq.lac_scores, dpuq.aps_scores, dpuq.raps_scores])
    def test_clear_errors(self, score, probs, match):
        with pytest.raises(ValueError, match=match):
            score(probs)

    @pytest.mark.parametrize(
        ("labels", "match"),
        [
            ([0, 3], "outside the classes"),
            ([0], "2 samples"),
            ([0.5, 1], "integer"),
            (["a", "b"], "integer"),
        ],
    )
    def test_bad_labels(self, labels, match):
        with pytest.raises((ValueError, TypeError), match=match):
            dpuq.lac_scores(P, labels)
