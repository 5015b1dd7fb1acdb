"""The `dpuq` command line: demo and error handling (called as a user would)."""

import subprocess
import sys

from dpuq.cli import main


def test_demo_quick_prints_coverage_and_privacy(capsys):
    assert main(["demo", "--quick", "--seed", "1", "--splits", "5"]) == 0
    out = capsys.readouterr().out
    assert "coverage" in out and "mean size" in out
    assert "replace-one" in out and "ε = 1" in out


def test_bad_input_is_one_line_and_nonzero(capsys):
    assert main(["demo", "--epsilon", "-1", "--splits", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpuq: error:") and "epsilon" in err[0]


def test_unknown_option_is_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "dpuq.cli", "demo", "--bogus"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--bogus" in proc.stderr
