"""`dpuq calibrate --class-conditional` and `dpuq predict` on its release."""

import json

import numpy as np
import pytest

import dpuq
from cli_helpers import run_cli as _run

pytestmark = pytest.mark.filterwarnings("ignore:--seed makes the noise reproducible")


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.full(3, 0.4), size=3000)
    labels = (probs.cumsum(1) > rng.random((3000, 1))).argmax(1)
    np.save(tmp_path / "probs.npy", probs)
    np.savetxt(tmp_path / "labels.csv", labels, fmt="%d")
    np.save(tmp_path / "test.npy", rng.dirichlet(np.full(3, 0.4), size=50))
    return tmp_path, probs, labels


def test_calibrate_and_predict_class_conditional(capsys, files):
    d, probs, labels = files
    code, out, err = _run(
        capsys, "calibrate", "--probs", d / "probs.npy", "--labels", d / "labels.csv",
        "--alpha", 0.1, "--epsilon", 1, "--class-conditional", "--seed", 4, "-o", d / "c.json",
    )  # fmt: skip
    assert code == 0, err
    assert "3 class thresholds" in out
    record = json.loads((d / "c.json").read_text())
    assert record["class_conditional"] is True and len(record["thresholds"]) == 3
    assert "threshold" not in record  # no single threshold to misuse
    assert record["privacy_report"]["relation"] == "replace-one"
    assert record["seeded"] is True
    ref = dpuq.calibrate_by_class(
        dpuq.lac_scores(probs, labels), labels, 3, alpha=0.1, epsilon=1.0, random_state=4
    )
    assert record["thresholds"] == list(ref.thresholds)
    code, out, err = _run(
        capsys, "predict", "--calibration", d / "c.json", "--probs", d / "test.npy",
        "-o", d / "sets.npy",
    )  # fmt: skip
    assert code == 0, err
    sets = np.load(d / "sets.npy")
    expected = dpuq.lac_scores(np.load(d / "test.npy")) <= np.array(ref.thresholds)[None, :]
    np.testing.assert_array_equal(sets.astype(bool), expected)


def test_class_conditional_needs_labels_and_probs(capsys, files):
    d, _, _ = files
    np.save(d / "s.npy", np.random.default_rng(0).uniform(size=100))
    code, _, err = _run(
        capsys, "calibrate", "--scores", d / "s.npy", "--alpha", 0.1, "--epsilon", 1,
        "--class-conditional", "-o", d / "c.json",
    )  # fmt: skip
    assert code != 0 and "--class-conditional needs --probs" in err
    assert not (d / "c.json").exists()
    code, _, err = _run(
        capsys, "calibrate", "--probs", d / "probs.npy", "--alpha", 0.1, "--epsilon", 1,
        "--class-conditional", "-o", d / "c.json",
    )  # fmt: skip
    assert code != 0 and "--labels" in err


def test_predict_refuses_a_broken_class_conditional_file(capsys, files):
    d, _, _ = files
    bad = {
        "format": "dpuq-calibration", "task": "classification", "class_conditional": True,
        "n_classes": 3, "thresholds": [0.5, 2.0, 0.1], "score": {"name": "lac"},
    }  # fmt: skip
    (d / "bad.json").write_text(json.dumps(bad))
    code, _, err = _run(
        capsys, "predict", "--calibration", d / "bad.json", "--probs", d / "test.npy",
        "-o", d / "s.csv",
    )  # fmt: skip
    assert code != 0 and "thresholds must be a list of 3 numbers" in err
