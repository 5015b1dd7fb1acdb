"""`dpuq demo` as a user runs it: the table, the report folder, bad input, interruption."""

import contextlib
import io
import json
import subprocess
import sys

import numpy as np
import pytest

from dpuq.cli import main


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpuq demo: error:"), err
    return err[0]


def _sane(pipeline: dict, alpha: float = 0.1) -> None:
    """Coverage near 1 - α, and sizes consistent with it (a covered set has >= 1 label)."""
    assert pipeline["coverage_mean"] >= 1 - alpha - 0.03
    assert pipeline["coverage_p5"] <= pipeline["coverage_mean"] <= pipeline["coverage_p95"]
    assert pipeline["size_mean"] >= pipeline["coverage_mean"] - 1e-9
    assert pipeline["size_mean"] >= 1.0 or pipeline["empty_share"] > 0
    assert 0 <= pipeline["singleton_share"] <= 1


@pytest.fixture(scope="module")
def quick_demo(tmp_path_factory):
    """One `dpuq demo --quick` (trains the three models) shared by the tests below."""
    out = tmp_path_factory.mktemp("demo") / "dpuq-report"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["demo", "--quick", "--seed", "1", "--out", str(out), "--no-progress"])
    return code, out, printed.getvalue()


@pytest.fixture
def user_outputs(tmp_path):
    """A user's cached model outputs (a calibrated 4-class model): no training needed."""
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(4, 0.3), size=1200)
    labels = np.array([rng.choice(4, p=p) for p in probs])
    np.save(tmp_path / "probs.npy", probs)
    np.save(tmp_path / "labels.npy", labels)
    return tmp_path, probs, labels


class TestQuickDemo:
    def test_runs_and_writes_a_complete_report(self, quick_demo):
        code, out, _ = quick_demo
        assert code == 0
        for name in ("report.html", "coverage_size.png", "set_sizes.png", "summary.md"):
            assert (out / name).stat().st_size > 0, name
        assert not list(out.parent.glob(".dpuq-report.partial-*"))

    def test_numbers_are_sane(self, quick_demo):
        _, out, _ = quick_demo
        results = json.loads((out / "results.json").read_text())
        pipelines = results["pipelines"]
        calibrations = {p["calibration"] for p in pipelines}
        assert any(c.startswith("private") for c in calibrations)
        assert any(c.startswith("non-private") for c in calibrations)
        for p in pipelines:
            _sane(p)
            assert 0.5 < results["accuracy"][p["model"]] <= 1.0

    def test_private_pipelines_state_their_combined_guarantee(self, quick_demo):
        _, out, _ = quick_demo
        results = json.loads((out / "results.json").read_text())
        for p in results["pipelines"]:
            if p["training_privacy"] is not None and p["calibration"].startswith("private"):
                combined = p["combined_privacy"]
                train = p["training_privacy"]
                # one relation for the whole pipeline: add/remove converts to replace-one as 2ε
                eps_train = train["epsilon"] * (2 if train["relation"] == "add/remove-one" else 1)
                assert combined["relation"] == "replace-one"
                assert combined["epsilon"] == max(eps_train, 3.0)
                assert "parallel composition" in " ".join(combined["notes"])

    def test_report_html_is_self_contained(self, quick_demo):
        _, out, _ = quick_demo
        page = (out / "report.html").read_text()
        assert page.count("data:image/png;base64,") >= 3
        assert "http://" not in page and "https://" not in page and "<script" not in page
        assert "prediction set" in page and "ε" in page

    def test_trains_three_ways_at_the_same_privacy(self, quick_demo):
        pytest.importorskip("opacus")
        _, out, _ = quick_demo
        results = json.loads((out / "results.json").read_text())
        models = {p["model"]: p["training_privacy"] for p in results["pipelines"]}
        # private temperature scaling is on by default (issue 24): the scaled models are rows
        assert set(models) == {"SGD (not private)", "DP-SGD", "DP-SGLD", "DP-SGD + private TS",
                               "DP-SGLD + private TS"}  # fmt: skip
        assert models["SGD (not private)"] is None
        for name in ("DP-SGD", "DP-SGLD"):
            assert models[name]["epsilon"] <= 3.0 + 1e-9 and models[name]["delta"] == 1e-5

    def test_terminal_table_has_the_promised_columns(self, quick_demo):
        _, _, printed = quick_demo
        for word in (
            "accuracy",
            "ECE",
            "coverage mean [5%, 95%]",
            "mean set size",
            "singletons",
            "training (ε, δ)",
            "calibration ε",
            "whole pipeline (ε, δ)",
        ):
            assert word in printed, word  # fmt: skip
        assert "parallel composition" in printed and "calibration people" in printed


class TestUserOutputs:
    @pytest.fixture
    def files(self, user_outputs):
        return user_outputs

    def test_cached_probabilities_run_without_training(self, files, capsys):
        d, _, _ = files
        code = main(
            ["demo", "--probs", str(d / "probs.npy"), "--labels", str(d / "labels.npy"),
             "--seed", "0", "--splits", "20", "--out", str(d / "r"), "--no-progress"]
        )  # fmt: skip
        assert code == 0
        results = json.loads((d / "r" / "results.json").read_text())
        assert [p["model"] for p in results["pipelines"]] == ["your model"] * 2
        for p in results["pipelines"]:
            _sane(p)

    def test_names_and_declared_training_privacy(self, files, capsys):
        d, _, _ = files
        code = main(
            ["demo", "--probs", str(d / "probs.npy"), "--labels", str(d / "labels.npy"),
             "--model-name", "ResNet-ICU", "--dataset-name", "icu-2024", "--train-epsilon", "2",
             "--train-delta", "1e-6", "--seed", "0", "--splits", "5", "--out", str(d / "r"),
             "--no-progress"]
        )  # fmt: skip
        assert code == 0
        out = capsys.readouterr().out
        assert "ResNet-ICU" in out
        html = (d / "r" / "report.html").read_text()
        assert "ResNet-ICU" in html and "icu-2024" in html
        assert "as declared by the user" in html

    @pytest.mark.parametrize(
        ("mutate", "match"),
        [
            (lambda p, y: (p[:, 0], y), "class"),  # wrong shape: one column
            (lambda p, y: (np.where(np.arange(p.size).reshape(p.shape) == 5, np.nan, p), y),
             "non-finite"),
            (lambda p, y: (p, np.where(np.arange(y.size) == 3, 7, y)), "outside the classes"),
            (lambda p, y: (p, y[:-1]), "entries"),
            (lambda p, y: (p * 2, y), "sum to 1"),
        ],
    )  # fmt: skip
    def test_bad_files_give_one_clear_line(self, files, capsys, mutate, match):
        d, probs, labels = files
        p, y = mutate(probs, labels)
        np.save(d / "bad_p.npy", p)
        np.save(d / "bad_y.npy", y)
        code = main(
            ["demo", "--probs", str(d / "bad_p.npy"), "--labels", str(d / "bad_y.npy"),
             "--out", str(d / "r"), "--no-progress"]
        )  # fmt: skip
        assert code == 2
        assert match in _one_error_line(capsys)
        assert not (d / "r").exists()


def test_probabilities_without_labels_is_one_line(user_outputs, capsys):
    d, _, _ = user_outputs
    assert main(["demo", "--probs", str(d / "probs.npy"), "--no-report", "--no-progress"]) == 2
    assert "--labels" in _one_error_line(capsys)


def test_bad_option_value_is_one_line(capsys):
    assert main(["demo", "--epsilon", "-1", "--splits", "2", "--no-report"]) == 2
    assert "epsilon" in _one_error_line(capsys)


def test_unknown_option_is_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "dpuq.cli", "demo", "--bogus"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--bogus" in proc.stderr


def test_never_overwrites_a_folder_it_did_not_write(tmp_path, capsys):
    mine = tmp_path / "my-folder"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    assert main(["demo", "--quick", "--out", str(mine), "--no-progress"]) == 2
    assert "not written by dpuq" in _one_error_line(capsys)
    assert (mine / "notes.txt").read_text() == "precious"


def test_interrupted_report_leaves_nothing_that_looks_complete(user_outputs, monkeypatch, capsys):
    """Ctrl-C while the report is being written: no report folder, no leftovers; a previous
    complete report stays as it was."""
    from dpuq.reporting import figures

    d, _, _ = user_outputs
    tmp_path = d / "reports"
    tmp_path.mkdir()
    out = tmp_path / "dpuq-report"
    args = ["demo", "--probs", str(d / "probs.npy"), "--labels", str(d / "labels.npy")]
    args += ["--seed", "3", "--splits", "5", "--out", str(out), "--no-progress"]
    calls = {"n": 0}
    real_save = figures.save

    def save_then_interrupt(fig, path, *a, **k):
        real_save(fig, path, *a, **k)
        calls["n"] += 1
        raise KeyboardInterrupt

    monkeypatch.setattr(figures, "save", save_then_interrupt)
    assert main(args) == 130
    assert calls["n"] == 1 and not out.exists()
    assert list(tmp_path.iterdir()) == []

    monkeypatch.setattr(figures, "save", real_save)
    assert main(args) == 0
    before = (out / "report.html").read_text()
    monkeypatch.setattr(figures, "save", save_then_interrupt)
    assert main(args) == 130
    assert (out / "report.html").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dpuq-report"]
    capsys.readouterr()
