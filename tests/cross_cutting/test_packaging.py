"""Packaging and hygiene: version in one place, typed marker, license, no prints, TTY-only bars."""

from __future__ import annotations

import ast
import io
import logging
import re
import sys
from pathlib import Path

import pytest

import dpuq
from dpuq import _progress
from dpuq.cli import main
from dpuq.commands import demo as demo_command

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "dpuq"


def test_version_comes_from_one_place():
    from dpuq._version import __version__

    assert dpuq.__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+)?", __version__)
    text = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text
    assert "dpuq._version.__version__" in text
    assert not re.search(r'^version\s*=\s*"', text, re.MULTILINE)


def test_typed_marker_license_and_changelog_ship():
    assert (SRC / "py.typed").exists()
    text = (ROOT / "pyproject.toml").read_text()
    assert '"py.typed"' in text and 'license = "MIT"' in text
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## 0.1.0" in changelog and "## 0.2.0" in changelog


def _prints_outside_entry_points(path: Path) -> list[int]:
    """Line numbers of print() calls not inside a function named main/run (entry points)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = []

    def visit(node, inside_entry):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside_entry = inside_entry or node.name in ("main", "run")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
            and not inside_entry
        ):
            bad.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, inside_entry)

    visit(tree, False)
    return bad


def test_library_code_does_not_print():
    offenders = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel == "cli.py" or rel.startswith("commands/"):
            continue  # the CLI's own output
        lines = _prints_outside_entry_points(path)
        if lines:
            offenders[rel] = lines
    assert not offenders, offenders


def test_the_package_logger_is_silent_by_default_and_logs_only_released_values(caplog):
    import numpy as np

    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("dpuq").handlers)
    scores = np.random.default_rng(0).uniform(size=500)
    with caplog.at_level(logging.DEBUG, logger="dpuq"):
        cal = dpuq.calibrate(scores, alpha=0.1, epsilon=1.0, random_state=0)
    text = caplog.text
    assert f"{cal.threshold:.6g}" in text
    assert f"{scores[0]:.6g}" not in text


def test_progress_bars_only_on_a_tty(monkeypatch):
    class FakeStream(io.StringIO):
        def __init__(self, tty):
            super().__init__()
            self.tty = tty

        def isatty(self):
            return self.tty

    pytest.importorskip("tqdm")
    for tty in (False, True):
        fake = FakeStream(tty)
        monkeypatch.setattr(sys, "stderr", fake)
        assert list(_progress.progress(range(3), "work")) == [0, 1, 2]
        assert bool(fake.getvalue()) == tty, tty


def test_demo_without_the_torch_extra_prints_the_install_command(capsys, monkeypatch, tmp_path):
    real = demo_command.importlib.util.find_spec

    def no_torch(name, *args):
        return None if name in ("torch", "opacus") else real(name, *args)

    monkeypatch.setattr(demo_command.importlib.util, "find_spec", no_torch)
    code = main(["demo", "--quick", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0
    assert len(err) == 1, err
    assert "torch, opacus" in err[0]
    assert demo_command.INSTALL_COMMAND in err[0]
    assert not (tmp_path / "r").exists()


def test_demo_output_says_seeded_only_when_seeded(tmp_path, capsys):
    import numpy as np

    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(3, 0.5), size=600)
    labels = np.array([rng.choice(3, p=p) for p in probs])
    np.save(tmp_path / "p.npy", probs)
    np.save(tmp_path / "y.npy", labels)
    base = ["demo", "--probs", str(tmp_path / "p.npy"), "--labels", str(tmp_path / "y.npy")]
    base += ["--splits", "5", "--no-report", "--no-progress"]
    assert main([*base, "--seed", "4"]) == 0
    assert "seeded run (--seed 4)" in capsys.readouterr().out
    assert main(base) == 0
    assert "seeded run" not in capsys.readouterr().out


def test_importing_dpuq_does_not_import_scikit_learn_or_torch():
    """Every CLI call imports dpuq: keep it light (the estimators load scikit-learn lazily)."""
    import subprocess

    code = "import sys, dpuq; print(sorted({'sklearn', 'torch', 'pandas'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
    assert dpuq.PrivateConformalClassifier.__module__ == "dpuq.conformal.classifier"
    assert "PrivateERMClassifier" in dpuq.__all__
