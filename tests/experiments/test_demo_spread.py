"""Issue 35: the demo says that a private row is one random training run, and shows the spread."""

from __future__ import annotations

import numpy as np

from dpuq.experiments.demo import _accuracy_over_runs
from dpuq.experiments.demo_results import DemoConfig, DemoResult, spread_text
from dpuq.experiments.models import TrainedModel, model_family, train_three_ways
from dpuq.privacy.report import PrivacyReport


def _report():
    return PrivacyReport(mechanism="DP-SGD", epsilon=3.0, delta=1e-5, relation="replace-one",
                         sensitivity="C")  # fmt: skip


def _result(models):
    return DemoResult(DemoConfig(), "toy", 10, 5, 5, ["a", "b"], models, {}, {}, [], [], 0.0)


def test_accuracy_over_runs_and_the_sentence():
    y = np.array([0, 1, 1, 0])
    right, wrong = np.eye(2)[y], np.eye(2)[1 - y]
    extra = np.zeros((3, 2))  # temperature-scaling people beyond the pool: not counted
    probs = [np.vstack([p, extra]) for p in (right, wrong, right)]
    m = TrainedModel("DP-SGD", probs[0], _report(), {"run probs": probs})
    plain = TrainedModel("SGD (not private)", probs[0], None, {"run probs": probs[:1]})
    _accuracy_over_runs([m, plain], y)
    assert m.info["accuracy over runs"] == [1.0, 0.0, 1.0] and "run probs" not in m.info
    text = spread_text(_result([plain, m]))
    assert "trained 3 times" in text and "median 100.0 % (range 0.0–100.0 %)" in text
    one = TrainedModel("DP-SGD", probs[0], _report(), {"accuracy over runs": [0.5]})
    assert "one random training run" in spread_text(_result([one]))


def test_digits_sized_data_gets_features_not_a_cnn():
    assert model_family(597, 8, 3.0)[0] == "features"
    assert model_family(20_000, 28, 1.0)[0] == "features"  # was "cnn" (N·ε >= 10,000)


def test_the_demo_trains_its_private_models_with_the_estimator():
    """Issue 35: the demo's private rows come from dpuq.DPClassifier (model="auto"), the
    non-private row from train_classifier; the report names the estimator."""
    from dpuq.training.features import synthetic_images

    x, y = synthetic_images(160, side=8, seed=4)
    models = train_three_ways(x[:120], y[:120], x[120:], n_classes=10, epsilon=3.0,
                              delta=1e-5, epochs=2, seed=0, show_progress=False,
                              training_runs=2)  # fmt: skip
    names = [m.name for m in models]
    assert names == ["SGD (not private)", "DP-SGD", "DP-SGLD"]
    for m in models[1:]:
        assert m.privacy.mechanism.startswith("DPClassifier:")
        assert m.info["model family"] == "features" and "DPClassifier" in m.info["settings"]
        assert m.probs.shape == (40, 10) and len(m.info["run probs"]) == 2
        assert not np.array_equal(*m.info["run probs"])  # other seeds: other runs
    assert models[0].privacy is None
