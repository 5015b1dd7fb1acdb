"""The command line with several levels, --confidence-level, ``-o -`` and predict's overwrite."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dpuq
from cli_helpers import run_cli


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.full(4, 0.5), size=1400)
    labels = (probs.cumsum(1) > rng.random((1400, 1))).argmax(1)
    np.save(tmp_path / "cal.npy", probs[:1000])
    np.savetxt(tmp_path / "labels.csv", labels[:1000], fmt="%d")
    np.save(tmp_path / "test.npy", probs[1000:])
    x = rng.normal(size=1200)
    np.savetxt(tmp_path / "pred.csv", x[:1000])
    np.savetxt(tmp_path / "y.csv", x[:1000] + rng.normal(size=1000))
    np.savetxt(tmp_path / "test_pred.csv", x[1000:])
    return tmp_path


def test_calibrate_and_predict_several_levels(files, capsys):
    cal = files / "c.json"
    with pytest.warns(UserWarning, match="seed"):
        code, out, _ = run_cli(capsys, "calibrate", "--probs", files / "cal.npy", "--labels",
                               files / "labels.csv", "--alpha", "0.05,0.1,0.2", "--epsilon", 1,
                               "--seed", 0, "-o", cal)  # fmt: skip
    rec = json.loads(cal.read_text())
    assert code == 0 and "3 thresholds jointly" in out
    assert rec["alpha"] == [0.05, 0.1, 0.2] and len(rec["threshold"]) == 3
    assert rec["confidence_level"] == pytest.approx([0.95, 0.9, 0.8])
    # the library's joint release with the same seed gives the same thresholds
    scores = dpuq.lac_scores(
        np.load(files / "cal.npy"), np.loadtxt(files / "labels.csv", dtype=int)
    )
    lib = dpuq.calibrate(scores, alpha=[0.05, 0.1, 0.2], epsilon=1.0, random_state=0)
    assert rec["threshold"] == lib.threshold.tolist()
    code, out, _ = run_cli(capsys, "predict", "--calibration", cal, "--probs",
                           files / "test.npy", "-o", files / "sets.npy")  # fmt: skip
    sets = np.load(files / "sets.npy")
    assert code == 0 and sets.shape == (400, 4, 3) and "3 levels" in out
    assert np.all(sets[..., 0] >= sets[..., 1]) and np.all(sets[..., 1] >= sets[..., 2])
    code, out, _ = run_cli(capsys, "predict", "--calibration", cal, "--probs",
                           files / "test.npy", "-o", files / "sets.csv")  # fmt: skip
    header = (files / "sets.csv").read_text().splitlines()[0].split(",")
    assert header[:2] == ["0@0.95", "1@0.95"] and len(header) == 12


def test_regression_levels_to_stdout(files, capsys):
    cal = files / "r.json"
    code, _, _ = run_cli(capsys, "calibrate", "--predictions", files / "pred.csv", "--targets",
                         files / "y.csv", "--bound", 5, "--confidence-level", "0.8,0.9",
                         "--epsilon", 1, "-o", cal)  # fmt: skip
    assert code == 0
    code, out, err = run_cli(capsys, "predict", "--calibration", cal, "--predictions",
                             files / "test_pred.csv", "-o", "-")  # fmt: skip
    lines = out.splitlines()
    assert code == 0 and lines[0] == "lower@0.8,upper@0.8,lower@0.9,upper@0.9"
    assert len(lines) == 201 and "wrote stdout" in err and "wrote" not in out
    code, out, _ = run_cli(capsys, "predict", "--calibration", cal, "--predictions",
                           files / "test_pred.csv", "-o", "-", "--format", "json")  # fmt: skip
    assert json.loads(out)["confidence_level"] == [0.8, 0.9]


def test_predict_overwrites_and_calibrate_refuses(files, capsys):
    cal = files / "c1.json"
    run_cli(capsys, "calibrate", "--probs", files / "cal.npy", "--labels", files / "labels.csv",
            "--confidence-level", 0.9, "--epsilon", 1, "-o", cal)  # fmt: skip
    out = files / "sets.csv"
    out.write_text("old")
    code, _, _ = run_cli(capsys, "predict", "--calibration", cal, "--probs", files / "test.npy",
                         "-o", out)  # fmt: skip
    assert code == 0 and out.read_text() != "old"
    code, _, err = run_cli(capsys, "calibrate", "--probs", files / "cal.npy", "--labels",
                           files / "labels.csv", "--alpha", 0.1, "--epsilon", 1,
                           "-o", cal)  # fmt: skip
    assert code != 0 and "--force" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--alpha", "0.1", "--confidence-level", "0.9"], "exactly one"),
        (["--alpha", "0.1,0.1"], "repeat"),
        (["--alpha", "0.1,0.2", "--method", "paper"], "certified"),
        (["--alpha", "0.1,x"], "comma-separated"),
        (["--confidence-level", "0.3"], "confidence-level"),
    ],
)
def test_bad_levels_are_one_line_errors(files, capsys, argv, match):
    out = files / "x.json"
    code, _, err = run_cli(capsys, "calibrate", "--probs", files / "cal.npy", "--labels",
                           files / "labels.csv", "--epsilon", 1, "-o", out, *argv)  # fmt: skip
    assert code != 0 and match in err and not out.exists()
