"""``dpuq plan`` with several levels, and one meaning of ``--bound`` (issue 39, items 1 and 4)."""

import numpy as np
import pytest

from dpuq.cli import main
from dpuq.planning import min_calibration_size, min_epsilon


def test_plan_several_levels_per_level_n_and_epsilon(capsys):
    assert main(["plan", "--n", "199", "--alpha", "0.05,0.1,0.2", "--epsilon", "1"]) == 0
    out = capsys.readouterr().out
    need = min_calibration_size([0.05, 0.1, 0.2], 1.0)
    eps = min_epsilon(199, [0.05, 0.1, 0.2])
    assert "alpha = 0.05 (coverage >= 0.95): SET ASIDE" in out
    assert f"served jointly from n >= {need[0]} at epsilon = 1, or epsilon >= {eps[0]:g}" in out
    assert "released alone from n >= 103" in out
    assert "alpha = 0.1 (coverage >= 0.9): served" in out


def test_plan_confidence_levels_print_as_typed(capsys):
    argv = ["plan", "--n", "300", "--confidence-level", "0.8,0.9,0.95", "--epsilon", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "alpha = 0.05 (coverage >= 0.95)" in out and "0.0500000" not in out


def test_plan_several_levels_refuses_table(capsys):
    assert main(["plan", "--alpha", "0.05,0.1", "--table"]) == 2
    assert "several --alpha levels" in capsys.readouterr().err


@pytest.fixture
def residual_files(tmp_path):
    rng = np.random.default_rng(0)
    y = rng.normal(size=400) * 10
    np.savetxt(tmp_path / "p.csv", np.zeros_like(y))
    np.savetxt(tmp_path / "y.csv", y)
    return ["--predictions", str(tmp_path / "p.csv"), "--targets", str(tmp_path / "y.csv")]


def test_bound_takes_a_value_in_plan_as_in_calibrate(residual_files, capsys):
    argv = ["plan", "--n", "159", "--alpha", "0.1", "--epsilon", "1", "--held-out"]
    assert main([*argv, "--bound", "25", *residual_files]) == 0
    out = capsys.readouterr().out
    assert "B = 25 (absolute score) covers" in out and "whole-line intervals" in out
    # a tighter B: more whole-line releases
    assert main([*argv, "--bound", "15", *residual_files]) == 0
    tight = capsys.readouterr().out
    p_loose = float(out.rsplit(":", 1)[1])
    p_tight = float(tight.rsplit(":", 1)[1])
    assert p_tight > p_loose
    # the old flag form is refused with a pointer to --suggest-bound
    assert main(["plan", "--alpha", "0.1", "--bound", *residual_files]) == 2
    assert "--suggest-bound" in capsys.readouterr().err
    assert main([*argv, "--suggest-bound", *residual_files]) == 0
    assert "suggested public bound B" in capsys.readouterr().out


def test_calibrate_prints_the_threshold_in_outcome_units(residual_files, tmp_path, capsys):
    out_json = str(tmp_path / "c.json")
    argv = ["calibrate", *residual_files, "--bound", "50", "--alpha", "0.1", "--epsilon", "1"]
    assert main([*argv, "--seed", "0", "-o", out_json]) == 0
    out = capsys.readouterr().out
    import json

    with open(out_json) as f:
        t = json.load(f)["threshold"]
    assert f"threshold x B = {t:.6g} x 50 = {t * 50:.6g}" in out
