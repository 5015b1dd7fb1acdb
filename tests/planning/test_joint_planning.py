"""Planning several levels (issue 39, item 1): per-level n and ε of a joint release."""

import warnings

import numpy as np
import pytest

import dpuq
from dpuq.conformal.multilevel import joint_plan
from dpuq.planning import joint_served, min_calibration_size, min_epsilon, plan

LEVELS = [0.2, 0.1, 0.05]  # confidence levels 0.8, 0.9, 0.95


def test_min_calibration_size_per_level_in_a_joint_release():
    need = min_calibration_size(LEVELS, 1.0)
    assert need.shape == (3,) and need.dtype.kind == "i"
    # a level needs more data in the joint release than alone
    for a, k in zip(LEVELS, need, strict=True):
        assert k >= min_calibration_size(a, 1.0)
    # exact: served at need, not at need - 1 (the most favourable bins, as for one level)
    for i, k in enumerate(need):
        assert joint_served(int(k), LEVELS, 1.0)[i]
        assert not joint_served(int(k) - 1, LEVELS, 1.0)[i]
    # the case: 0.95 alone from n = 103, jointly with 0.8 and 0.9 not at n = 199
    assert min_calibration_size(0.05, 1.0) == 103
    assert need[2] > 199


def test_min_epsilon_per_level_in_a_joint_release():
    eps = min_epsilon(199, LEVELS)
    assert eps.shape == (3,)
    for i, e in enumerate(eps):
        assert joint_served(199, LEVELS, e)[i]
        assert not joint_served(199, LEVELS, e * 0.99)[i]
    assert eps[2] > 1.0 > min_epsilon(199, 0.05)


def test_plan_of_several_levels_matches_the_release():
    p = plan(199, LEVELS, 1.0)
    m, level, _cover = joint_plan(199, LEVELS, 1.0)
    assert p.n_bins == m and p.served.tolist() == np.isfinite(level).tolist()
    assert p.served.tolist() == [True, True, False]
    assert np.all(p.certified_coverage[p.served] >= 1 - np.array(LEVELS)[p.served])


def test_auto_bins_serve_every_level_a_smaller_grid_can_serve():
    # at n = 250 the median level's choice (22 bins) set aside 0.95 although 10 bins serve it
    need = int(min_calibration_size(LEVELS, 1.0)[2])
    for n in (need, need + 20, 250):
        m, level, _ = joint_plan(n, LEVELS, 1.0)
        assert np.all(np.isfinite(level)), (n, m)


def test_several_levels_need_the_certified_method():
    with pytest.raises(ValueError, match="certified"):
        min_calibration_size(LEVELS, 1.0, method="paper")


def test_set_aside_level_is_labelled_and_said_as_typed():
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=199)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = dpuq.calibrate(scores, alpha=[0.2, 0.1, 1 - 0.95], epsilon=1.0, random_state=0)
    assert cal.set_aside == (1 - 0.95,)
    assert cal.threshold[2] == 1.0 and not cal.informative[2]
    assert cal.to_dict()["set_aside"] == [1 - 0.95]
    text = " ".join(str(w.message) for w in caught)
    assert "set aside alpha=[0.05]" in text and "0.050000000000000044" not in text
    need = int(min_calibration_size(LEVELS, 1.0)[2])
    assert f"needs n >= {need}" in text and "n >= 103 released alone" in text


def test_estimator_stores_the_levels_as_typed():
    from sklearn.dummy import DummyClassifier

    X = np.zeros((199, 1))
    y = np.arange(199) % 2
    est = dpuq.PrivateConformalClassifier(
        DummyClassifier().fit(X, y), epsilon=1.0, confidence_level=[0.8, 0.9, 0.95],
        random_state=0,
    )  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.conformalize(X, y)
    assert est.calibration_.alpha[2] == 0.05  # not 0.050000000000000044
    assert "0.050000000000000044" not in " ".join(str(w.message) for w in caught)
