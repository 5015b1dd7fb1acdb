"""`dpuq audit`: a steward's one-line verdict on a release given as an entry point or command."""

import sys
import textwrap

import numpy as np
import pytest

from cli_helpers import run_cli

RELEASES = """
import numpy as np
from dpuq.mechanisms.laplace import laplace_mechanism


def noiseless_mean(data, seed):
    return float(np.mean(data))


def honest_mean(data, seed):
    return laplace_mechanism(float(np.mean(data)), sensitivity=1.0 / len(data), epsilon=1.0,
                             random_state=seed)
"""


@pytest.fixture
def releases(tmp_path, monkeypatch):
    (tmp_path / "steward_releases.py").write_text(textwrap.dedent(RELEASES))
    monkeypatch.chdir(tmp_path)
    yield "steward_releases"
    sys.modules.pop("steward_releases", None)


def test_entry_point_violation_prints_two_lines_and_exits_1(capsys, releases):
    code, out, err = run_cli(
        capsys,
        "audit",
        "--entry-point",
        f"{releases}:noiseless_mean",
        "--generate",
        "rows",
        "--bounds",
        "0",
        "1",
        "--n",
        "20",
        "--samples",
        "100",
        "--claimed-epsilon",
        "1",
        "--seed",
        "0",
    )
    assert code == 1, err
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("epsilon >= ") and "95% confidence" in lines[0]
    assert "claimed epsilon 1: VIOLATED" in lines[0]


def test_entry_point_honest_release_is_not_contradicted(capsys, releases, tmp_path):
    np.save(tmp_path / "x.npy", np.full(20, 0.5))
    code, out, err = run_cli(
        capsys,
        "audit",
        "--entry-point",
        f"{releases}:honest_mean",
        "--data",
        "x.npy",
        "--neighbours",
        "rows",
        "--bounds",
        "0",
        "1",
        "--samples",
        "200",
        "--claimed-epsilon",
        "1",
        "--seed",
        "0",
    )
    assert code == 0, err
    assert "not contradicted" in out


def test_command_line_release(capsys, tmp_path):
    script = tmp_path / "release.py"
    script.write_text(  # no numpy, no noise: a fast, leaky release
        "import sys\n"
        "x = [float(v) for v in open(sys.argv[1]).read().split()]\n"
        "print('released:', sum(x) / len(x))\n"
    )
    (tmp_path / "one.csv").write_text("0.5\n")
    code, out, err = run_cli(
        capsys,
        "audit",
        "--command",
        f"{sys.executable} -S {script} {{data}} {{seed}}",
        "--data",
        tmp_path / "one.csv",
        "--samples",
        "40",
        "--claimed-epsilon",
        "1",
        "--neighbours",
        "scores",
        "--seed",
        "1",
    )
    assert code == 1, err
    assert "VIOLATED" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            ["--entry-point", "nosuchmodule_xyz:f", "--generate", "scores", "--samples", "100"],
            "nosuchmodule_xyz",
        ),
        (
            ["--entry-point", "nocolon", "--generate", "scores", "--samples", "100"],
            "MODULE:FUNCTION",
        ),
        (["--entry-point", "numpy:mean", "--generate", "rows", "--samples", "100"], "--bounds"),
        (["--entry-point", "numpy:mean", "--generate", "scores", "--samples", "5"], "--samples"),
        (["--command", "echo 1", "--generate", "scores", "--samples", "100"], "{data} and {seed}"),
    ],
)
def test_errors_are_one_line(capsys, argv, needle):
    code, _out, err = run_cli(capsys, "audit", *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpuq"), err
    assert needle in lines[0]
