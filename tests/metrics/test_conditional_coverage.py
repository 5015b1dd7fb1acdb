"""Conditional coverage metrics (issue 39, item 6): size-stratified and per-group coverage."""

import numpy as np
import pytest

import dpuq
from dpuq.metrics import (
    classification_ssc,
    classification_ssc_score,
    coverage_by_group,
    regression_ssc,
    regression_ssc_score,
    size_stratified_coverage_violation,
)


def _sets_with_size_dependent_coverage(rng, n=4000, k=5):
    """Sets of size 1 cover 70% of the time, of size 3 always: marginal ~0.85."""
    size = np.where(rng.random(n) < 0.5, 1, 3)
    y = rng.integers(k, size=n)
    covered = np.where(size == 1, rng.random(n) < 0.7, True)
    sets = np.zeros((n, k), dtype=bool)
    for s in (1, 3):  # build each set: the label (if covered) plus other labels
        rows = np.flatnonzero(size == s)
        offsets = np.arange(s)[None, :] + np.where(covered[rows], 0, 1)[:, None]
        sets[rows[:, None], (y[rows, None] + offsets) % k] = True
    return sets, y


def test_classification_ssc_by_direct_count():
    rng = np.random.default_rng(0)
    sets, y = _sets_with_size_dependent_coverage(rng)
    ssc = classification_ssc(y, sets)
    assert ssc.shape == (1, 6)
    size = sets.sum(axis=1)
    hit = sets[np.arange(y.size), y]
    for s in range(6):
        expected = hit[size == s].mean() if np.any(size == s) else np.nan
        np.testing.assert_allclose(ssc[0, s], expected)
    assert ssc[0, 1] == pytest.approx(0.7, abs=0.03) and ssc[0, 3] == 1.0
    assert classification_ssc_score(y, sets) == pytest.approx(ssc[0, 1])
    # two bins of sizes {0, 1, 2} and {3, 4, 5}
    np.testing.assert_allclose(classification_ssc(y, sets, num_bins=2)[0], [ssc[0, 1], 1.0])


def test_sscv_flags_size_dependent_coverage_and_not_exchangeable_sets():
    rng = np.random.default_rng(1)
    sets, y = _sets_with_size_dependent_coverage(rng)
    marginal = sets[np.arange(y.size), y].mean()
    sscv = size_stratified_coverage_violation(y, sets, marginal)
    assert sscv == pytest.approx(max(marginal - 0.7, 1 - marginal), abs=0.03) and sscv > 0.1
    # negative control: coverage independent of size gives a small violation
    size = np.where(rng.random(y.size) < 0.5, 1, 3)
    covered = rng.random(y.size) < 0.9
    fair = np.zeros_like(sets)
    for i in range(y.size):
        start = y[i] if covered[i] else y[i] + 1
        fair[i, [(start + j) % 5 for j in range(size[i])]] = True
    assert size_stratified_coverage_violation(y, fair, 0.9) < 0.03


def test_several_levels_one_value_per_level():
    rng = np.random.default_rng(2)
    a, y = _sets_with_size_dependent_coverage(rng, n=500)
    stacked = np.stack([a, np.ones_like(a)], axis=-1)
    assert classification_ssc(y, stacked).shape == (2, 6)
    v = size_stratified_coverage_violation(y, stacked, [0.85, 0.95])
    assert v.shape == (2,) and v[1] == pytest.approx(0.05)
    np.testing.assert_allclose(classification_ssc_score(y, stacked)[1], 1.0)


def test_regression_ssc_equal_count_width_groups():
    rng = np.random.default_rng(3)
    n = 3000
    width = rng.uniform(1, 3, size=n)
    y = rng.normal(size=n) * np.where(width > 2, 0.5, 2.0)  # narrow intervals under-cover
    iv = np.column_stack([-width / 2 * 1.5, width / 2 * 1.5])
    ssc = regression_ssc(y, iv, num_bins=3)
    order = np.argsort(iv[:, 1] - iv[:, 0], kind="stable")
    hit = (iv[:, 0] <= y) & (y <= iv[:, 1])
    expected = [hit[g].mean() for g in np.array_split(order, 3)]
    np.testing.assert_allclose(ssc[0], expected)
    assert ssc[0, 0] < ssc[0, 2] and regression_ssc_score(y, iv) == pytest.approx(min(expected))


def test_coverage_by_group_sets_and_intervals():
    sets = np.array([[True, False], [False, True], [True, True], [False, True]])
    g, n, cov = coverage_by_group([0, 0, 1, 1], sets, ["b", "a", "a", "b"])
    assert g.tolist() == ["a", "b"] and n.tolist() == [2, 2] and cov.tolist() == [0.5, 1.0]
    iv = np.stack([[[0.0, 1.0]] * 4, [[-9.0, 9.0]] * 4], axis=-1)
    g, n, cov = coverage_by_group([0.5, 2.0, 0.5, 0.5], iv, [0, 0, 1, 1])
    assert cov.shape == (2, 2) and cov[:, 0].tolist() == [0.5, 1.0] and np.all(cov[:, 1] == 1)
    with pytest.raises(ValueError, match="groups"):
        coverage_by_group([0, 0], sets[:2], [0])


def test_metrics_on_a_real_estimator():
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    X, y = load_digits(return_X_y=True)
    model = LogisticRegression(max_iter=2000).fit(X[:600], y[:600])
    clf = dpuq.PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
    clf.conformalize(X[600:1400], y[600:1400])
    _, sets = clf.predict_set(X[1400:])
    ssc = dpuq.classification_ssc(y[1400:], sets)
    counts = np.bincount(sets.sum(axis=1), minlength=11)
    assert np.all(np.isnan(ssc[0]) == (counts == 0))
    _, _, per_class = dpuq.coverage_by_group(y[1400:], sets, y[1400:])
    np.testing.assert_allclose(per_class, dpuq.coverage_by_class(sets, y[1400:])[1])
