"""Top-K and normalised-residual scores, and the MAPIE-named coverage and width metrics."""

from __future__ import annotations

import numpy as np
import pytest

import dpuq


def test_top_k_scores_and_sets():
    probs = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    m = dpuq.top_k_scores(probs)
    np.testing.assert_allclose(m, [[1 / 3, 2 / 3, 1.0], [2 / 3, 2 / 3, 1 / 3]])
    assert dpuq.top_k_scores(probs, [2, 0]).tolist() == pytest.approx([1.0, 2 / 3])
    sets = dpuq.prediction_sets(m, 2 / 3)
    assert sets.sum(axis=1).tolist() == [2, 3]  # ties are kept together


def test_top_k_in_the_classifier(digits_model):
    X, y, model = digits_model
    clf = dpuq.PrivateConformalClassifier(
        model, epsilon=1.0, conformity_score="top_k", random_state=0
    ).conformalize(X[600:1500], y[600:1500])
    sets = clf.predict_set(X[1500:]).sets
    assert dpuq.classification_coverage_score(y[1500:], sets) >= 0.85
    assert len(np.unique(sets.sum(axis=1))) == 1  # one size for every x


def test_residual_normalised_scores_and_intervals():
    rng = np.random.default_rng(0)
    n = 4000
    sd = rng.uniform(0.5, 3.0, size=n)
    y = rng.normal(scale=sd)
    s = dpuq.residual_normalised_scores(np.zeros(n), sd, y, bound=5.0)
    assert s.min() >= 0 and s.max() <= 1
    cal = dpuq.calibrate(s[:2000], alpha=0.1, epsilon=1.0, random_state=0)
    iv = dpuq.residual_normalised_intervals(np.zeros(2000), sd[2000:], cal.threshold, bound=5.0)
    cov = dpuq.regression_coverage_score(y[2000:], iv)
    assert 0.88 <= cov <= 0.95
    widths = iv[:, 1] - iv[:, 0]
    assert np.corrcoef(widths, sd[2000:])[0, 1] > 0.99  # adaptive: width follows σ̂
    with pytest.raises(ValueError, match="y_std"):
        dpuq.residual_normalised_scores([0.0], [0.0], [1.0], bound=1.0)


def test_mapie_metrics_one_and_several_levels():
    sets = np.zeros((4, 3, 2), dtype=bool)
    sets[:, 0, :] = True
    sets[:2, 1, 1] = True
    y = [0, 1, 1, 2]
    assert dpuq.classification_coverage_score(y, sets).tolist() == [0.25, 0.5]
    assert dpuq.classification_mean_width_score(sets).tolist() == [1.0, 1.5]
    assert dpuq.classification_coverage_score(y, sets[..., 1]) == 0.5
    iv = np.array([[[0.0, -1.0], [1.0, 2.0]], [[0.0, -np.inf], [1.0, np.inf]]])  # (2, 2, 2)
    assert dpuq.regression_coverage_score([0.5, 1.5], iv).tolist() == [0.5, 1.0]
    assert dpuq.regression_mean_width_score(iv).tolist() == [1.0, np.inf]
    with pytest.raises(ValueError, match="y_intervals"):
        dpuq.regression_mean_width_score(np.zeros((3, 3)))
    n, cov, _ = dpuq.coverage_by_class(sets[..., 0], y)
    assert n.tolist() == [1, 2, 1] and cov.tolist() == [1.0, 0.0, 0.0]
    assert dpuq.coverage_by_set_size(sets[..., 1], y) == {1: (2, 0.0), 2: (2, 1.0)}
