"""`dpuq calibrate / predict / plan`, called as a user would, on files in a temp dir."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import dpuq
from cli_helpers import run_cli
from dpuq.cli import main

# Seeds are how these tests compare with the library; the warning itself is tested below.
pytestmark = pytest.mark.filterwarnings("ignore:--seed makes the noise reproducible")


def assert_one_line_error(code, err, *needles):
    lines = [line for line in err.strip().splitlines() if not line.startswith("dpuq: warning")]
    assert code != 0
    assert len(lines) == 1, err
    assert lines[0].startswith("dpuq"), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture
def data(tmp_path):
    """Calibration and test files in several formats."""
    rng = np.random.default_rng(7)
    k = 4
    probs = rng.dirichlet(np.full(k, 0.5), size=1500)
    labels = (probs.cumsum(1) > rng.random((1500, 1))).argmax(1)  # y ~ probs: calibrated
    scores = rng.uniform(size=3000)
    x = rng.normal(size=1200)
    y = 2 * x + rng.normal(size=1200)
    paths = {
        "scores_npy": tmp_path / "scores.npy",
        "scores_csv": tmp_path / "scores.csv",
        "probs": tmp_path / "probs.npy",
        "probs_csv": tmp_path / "probs.csv",
        "labels": tmp_path / "labels.csv",
        "pred": tmp_path / "pred.csv",
        "quant": tmp_path / "quant.npy",
        "targets": tmp_path / "y.txt",
    }
    np.save(paths["scores_npy"], scores)
    np.savetxt(paths["scores_csv"], scores, fmt="%.17g", header="score", comments="")
    np.save(paths["probs"], probs)
    np.savetxt(paths["probs_csv"], probs, fmt="%.17g", delimiter=",")
    np.savetxt(paths["labels"], labels, fmt="%d", header="label", comments="")
    np.savetxt(paths["pred"], 2 * x, fmt="%.17g")
    np.save(paths["quant"], np.column_stack((2 * x - 1.6, 2 * x + 1.6)))
    np.savetxt(paths["targets"], y, fmt="%.17g")
    return tmp_path, paths, {"probs": probs, "labels": labels, "scores": scores, "x": x, "y": y}


class TestCalibrate:
    def test_scores_file_gives_release_with_report_and_version(self, data, capsys):
        tmp, p, raw = data
        out = tmp / "cal.json"
        code, stdout, _ = run_cli(
            capsys, "calibrate", "--scores", p["scores_npy"], "--alpha", 0.1, "--epsilon", 1,
            "-o", out,
        )  # fmt: skip
        assert code == 0 and "wrote" in stdout
        cal = json.loads(out.read_text())
        assert cal["dpuq_version"] == dpuq.__version__
        assert cal["n"] == raw["scores"].size and cal["epsilon"] == 1.0 and cal["alpha"] == 0.1
        assert cal["informative"] is True
        assert 0.0 < cal["threshold"] <= 1.0
        m = cal["n_bins"]
        assert math.isclose(cal["threshold"] * m, round(cal["threshold"] * m))  # a bin edge j/m
        report = cal["privacy_report"]
        assert report["epsilon"] == 1.0 and report["delta"] == 0.0
        assert "replace-one" in report["neighbouring"]
        assert report["details"]["level (rho/n)"] == cal["level"]
        assert cal["method"] == "certified" and cal["certified_coverage"] >= 0.9

    def test_same_seed_same_release_as_library(self, data, capsys):
        tmp, p, raw = data
        out = tmp / "cal.json"
        run_cli(capsys, "calibrate", "--scores", p["scores_csv"], "--alpha", 0.1,
                "--epsilon", 0.5, "--seed", 11, "-o", out)  # fmt: skip
        cal = json.loads(out.read_text())
        lib = dpuq.calibrate(raw["scores"], alpha=0.1, epsilon=0.5, random_state=11)
        assert cal["threshold"] == lib.threshold and cal["n_bins"] == lib.n_bins
        assert cal["seeded"] is True

    def test_seed_warns_that_seeds_are_for_experiments(self, data, capsys):
        tmp, p, _ = data
        with pytest.warns(UserWarning, match="experiments only"):
            code, _, _ = run_cli(capsys, "calibrate", "--scores", p["scores_npy"],
                                 "--alpha", 0.1, "--epsilon", 1, "--seed", 1,
                                 "-o", tmp / "c.json")  # fmt: skip
        assert code == 0

    def test_warning_is_one_line_on_stderr_of_the_real_command(self, data):
        tmp, p, _ = data
        proc = subprocess.run(
            [sys.executable, "-m", "dpuq.cli", "calibrate", "--scores", str(p["scores_npy"]),
             "--alpha", "0.1", "--epsilon", "1", "--seed", "1", "-o", str(tmp / "c.json")],
            capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 0
        assert proc.stderr.startswith("dpuq: warning: --seed") and proc.stderr.count("\n") == 1

    def test_csv_and_npy_inputs_give_the_same_release(self, data, capsys):
        tmp, p, _ = data
        a, b = tmp / "a.json", tmp / "b.json"
        args = ["--alpha", 0.1, "--epsilon", 1, "--seed", 3, "--score", "raps"]
        run_cli(capsys, "calibrate", "--probs", p["probs"], "--labels", p["labels"], *args,
                "-o", a)  # fmt: skip
        run_cli(capsys, "calibrate", "--probs", p["probs_csv"], "--labels", p["labels"], *args,
                "-o", b)  # fmt: skip
        ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
        assert ja["threshold"] == jb["threshold"]
        assert ja["score"] == {"name": "raps", "lam": 0.01, "k_reg": 5, "randomized": True}
        assert ja["n_classes"] == 4 and ja["task"] == "classification"

    def test_parquet_input(self, data, capsys):
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        tmp, _, raw = data
        path = tmp / "scores.parquet"
        pq.write_table(pa.table({"score": raw["scores"]}), path)
        out = tmp / "c.json"
        code, _, _ = run_cli(capsys, "calibrate", "--scores", path, "--alpha", 0.1,
                             "--epsilon", 1, "--seed", 5, "-o", out)  # fmt: skip
        lib = dpuq.calibrate(raw["scores"], alpha=0.1, epsilon=1.0, random_state=5)
        assert code == 0 and json.loads(out.read_text())["threshold"] == lib.threshold

    def test_pandas_style_csv_files_read_as_written(self, data, capsys):
        """to_csv(index=False) heads columns 0..K-1; to_csv() adds an index column."""
        tmp, _, raw = data
        probs, k = raw["probs"], raw["probs"].shape[1]
        rows = [",".join(repr(float(v)) for v in row) for row in probs]
        names = ",".join(str(j) for j in range(k))
        (tmp / "no_index.csv").write_text(names + "\n" + "\n".join(rows) + "\n")
        indexed = [f"{i},{row}" for i, row in enumerate(rows)]
        (tmp / "index.csv").write_text("," + names + "\n" + "\n".join(indexed) + "\n")
        labels = "\n".join(f"{i},{v}" for i, v in enumerate(raw["labels"]))
        (tmp / "labels_index.csv").write_text(",0\n" + labels + "\n")
        args = ["--alpha", 0.1, "--epsilon", 1, "--seed", 2, "--force"]
        lib = dpuq.calibrate(
            dpuq.lac_scores(probs, raw["labels"]), alpha=0.1, epsilon=1.0, random_state=2
        )
        for probs_file in ("no_index.csv", "index.csv"):
            out = tmp / "c.json"
            code, _, err = run_cli(capsys, "calibrate", "--probs", tmp / probs_file, "--labels",
                                   tmp / "labels_index.csv", *args, "-o", out)  # fmt: skip
            assert code == 0, err
            assert json.loads(out.read_text())["threshold"] == lib.threshold

    def test_explicit_bins(self, data, capsys):
        tmp, p, _ = data
        out = tmp / "c.json"
        run_cli(capsys, "calibrate", "--scores", p["scores_npy"], "--alpha", 0.1,
                "--epsilon", 1, "--bins", 37, "-o", out)  # fmt: skip
        cal = json.loads(out.read_text())
        assert cal["n_bins"] == 37
        assert math.isclose(cal["threshold"] * 37, round(cal["threshold"] * 37))

    def test_uninformative_release_is_threshold_one_with_warning(self, tmp_path, capsys):
        path = tmp_path / "s.csv"
        np.savetxt(path, np.linspace(0, 1, 50))
        out = tmp_path / "c.json"
        with pytest.warns(dpuq.UninformativeReleaseWarning, match="n >="):
            code, stdout, _ = run_cli(capsys, "calibrate", "--scores", path, "--alpha", 0.1,
                                      "--epsilon", 1, "-o", out)  # fmt: skip
        cal = json.loads(out.read_text())
        assert code == 0 and cal["threshold"] == 1.0 and cal["informative"] is False
        assert "NOT informative" in stdout
        assert cal["privacy_report"]["notes"]

    def test_existing_output_is_not_overwritten_without_force(self, data, capsys):
        tmp, p, _ = data
        out = tmp / "c.json"
        out.write_text("keep me")
        code, _, err = run_cli(capsys, "calibrate", "--scores", p["scores_npy"], "--alpha", 0.1,
                               "--epsilon", 1, "-o", out)  # fmt: skip
        assert_one_line_error(code, err, "--force")
        assert out.read_text() == "keep me"
        code, _, _ = run_cli(capsys, "calibrate", "--scores", p["scores_npy"], "--alpha", 0.1,
                             "--epsilon", 1, "-o", out, "--force")  # fmt: skip
        assert code == 0 and json.loads(out.read_text())["format"] == "dpuq-calibration"


class TestPredict:
    def test_classification_sets_match_the_library(self, data, capsys):
        tmp, p, raw = data
        cal_path, sets_path = tmp / "c.json", tmp / "sets.csv"
        run_cli(capsys, "calibrate", "--probs", p["probs"], "--labels", p["labels"],
                "--score", "aps", "--alpha", 0.1, "--epsilon", 2, "-o", cal_path)  # fmt: skip
        code, stdout, _ = run_cli(capsys, "predict", "--calibration", cal_path, "--probs",
                                  p["probs_csv"], "-o", sets_path)  # fmt: skip
        assert code == 0 and "mean size" in stdout
        threshold = json.loads(cal_path.read_text())["threshold"]
        # randomized APS (the default for private use): U p_y with U in [0, 1], so the sets lie
        # between those of the deterministic score (U = 1) and of the mass above (U = 0)
        smallest = dpuq.prediction_sets(dpuq.aps_scores(raw["probs"]), threshold)
        mass_above = dpuq.aps_scores(raw["probs"]) - raw["probs"] / raw["probs"].sum(1)[:, None]
        largest = dpuq.prediction_sets(np.clip(mass_above - 1e-9, 0, 1), threshold)
        header = sets_path.read_text().splitlines()[0]
        assert header == "0,1,2,3"
        got = np.loadtxt(sets_path, delimiter=",", skiprows=1).astype(bool)
        assert np.all(smallest <= got) and np.all(got <= largest) and (got != smallest).any()

    def test_sets_json_lists_labels(self, data, capsys):
        tmp, p, raw = data
        cal_path, out = tmp / "c.json", tmp / "sets.json"
        run_cli(capsys, "calibrate", "--probs", p["probs"], "--labels", p["labels"],
                "--alpha", 0.1, "--epsilon", 2, "-o", cal_path)  # fmt: skip
        assert run_cli(capsys, "predict", "--calibration", cal_path, "--probs", p["probs"],
                       "-o", out)[0] == 0  # fmt: skip
        got = json.loads(out.read_text())
        threshold = json.loads(cal_path.read_text())["threshold"]
        mask = dpuq.prediction_sets(dpuq.lac_scores(raw["probs"]), threshold)
        assert got["sets"] == [np.flatnonzero(row).tolist() for row in mask]

    def test_user_score_matrix(self, data, capsys):
        tmp, p, _ = data
        cal_path, out = tmp / "c.json", tmp / "sets.npy"
        run_cli(capsys, "calibrate", "--scores", p["scores_npy"], "--alpha", 0.2,
                "--epsilon", 1, "-o", cal_path)  # fmt: skip
        matrix = np.random.default_rng(1).uniform(size=(30, 6))
        np.save(tmp / "m.npy", matrix)
        assert run_cli(capsys, "predict", "--calibration", cal_path, "--scores", tmp / "m.npy",
                       "-o", out)[0] == 0  # fmt: skip
        threshold = json.loads(cal_path.read_text())["threshold"]
        np.testing.assert_array_equal(np.load(out), matrix <= threshold)

    def test_regression_intervals_cover(self, data, capsys):
        tmp, _, raw = data
        cal_path, out = tmp / "c.json", tmp / "int.csv"
        # calibrate on the first 1000 rows, predict on the last 200
        np.savetxt(tmp / "pc.csv", 2 * raw["x"][:1000])
        np.savetxt(tmp / "yc.csv", raw["y"][:1000])
        np.savetxt(tmp / "pt.csv", 2 * raw["x"][1000:])
        run_cli(capsys, "calibrate", "--predictions", tmp / "pc.csv", "--targets",
                tmp / "yc.csv", "--bound", 5, "--alpha", 0.1, "--epsilon", 2,
                "-o", cal_path)  # fmt: skip
        code, stdout, _ = run_cli(capsys, "predict", "--calibration", cal_path, "--predictions",
                                  tmp / "pt.csv", "-o", out)  # fmt: skip
        assert code == 0 and "mean width" in stdout
        assert out.read_text().splitlines()[0] == "lower,upper"
        iv = np.loadtxt(out, delimiter=",", skiprows=1)
        cal = json.loads(cal_path.read_text())
        half = cal["threshold"] * 5
        np.testing.assert_allclose(iv[:, 1] - iv[:, 0], 2 * half)
        np.testing.assert_allclose(iv.mean(axis=1), 2 * raw["x"][1000:])

    def test_cqr_from_two_columns(self, data, capsys):
        tmp, p, _ = data
        cal_path, out = tmp / "c.json", tmp / "int.npy"
        run_cli(capsys, "calibrate", "--predictions", p["quant"], "--targets", p["targets"],
                "--score", "cqr", "--bound", 4, "--alpha", 0.1, "--epsilon", 5,
                "-o", cal_path)  # fmt: skip
        cal = json.loads(cal_path.read_text())
        assert cal["score"] == {"name": "cqr", "bound": 4.0}
        assert run_cli(capsys, "predict", "--calibration", cal_path, "--predictions",
                       p["quant"], "-o", out)[0] == 0  # fmt: skip
        expected = dpuq.cqr_intervals(np.load(p["quant"]), cal["threshold"], bound=4.0)
        np.testing.assert_array_equal(np.load(out), expected)

    def test_uninformative_regression_gives_whole_line(self, tmp_path, capsys):
        np.savetxt(tmp_path / "p.csv", np.zeros(40))
        np.savetxt(tmp_path / "y.csv", np.linspace(-1, 1, 40))
        cal_path, out = tmp_path / "c.json", tmp_path / "i.json"
        with pytest.warns(dpuq.UninformativeReleaseWarning):
            run_cli(capsys, "calibrate", "--predictions", tmp_path / "p.csv", "--targets",
                    tmp_path / "y.csv", "--bound", 2, "--alpha", 0.1, "--epsilon", 1,
                    "-o", cal_path)  # fmt: skip
        run_cli(capsys, "predict", "--calibration", cal_path, "--predictions",
                tmp_path / "p.csv", "-o", out)  # fmt: skip
        got = json.loads(out.read_text())
        assert set(got["lower"]) == {"-inf"} and set(got["upper"]) == {"inf"}


class TestPlan:
    def test_plan_shows_the_library_numbers(self, capsys):
        code, out, _ = run_cli(capsys, "plan", "--n", 1000, "--alpha", 0.1, "--epsilon", 1,
                               "--method", "paper")  # fmt: skip
        assert code == 0
        m, gamma = dpuq.auto_n_bins(1000, 0.1, 1.0, method="paper")
        q = dpuq.inflated_level(1000, 0.1, 1.0, m, gamma)
        assert f"{q:.4f}" in out and f" {m}" in out and f"{gamma:.4g}" in out
        assert "yes (q̃ < 1)" in out and "inflation +" in out
        assert f"n >= {dpuq.min_calibration_size(0.1, 1.0, method='paper')}" in out

    def test_plan_certified_shows_rank_and_certificate(self, capsys):
        code, out, _ = run_cli(capsys, "plan", "--n", 1000, "--alpha", 0.1, "--epsilon", 1)
        assert code == 0
        m, _ = dpuq.auto_n_bins(1000, 0.1, 1.0)
        level = dpuq.certified_level(1000, 0.1, 1.0, m)
        assert f"{level * 1000:.2f} of 1000" in out and f" {m}" in out
        assert f"{dpuq.coverage_certificate(1000, level, 1.0, m):.4f}" in out
        assert "yes (rho* <= n)" in out and "inflation +" in out
        assert f"n >= {dpuq.min_calibration_size(0.1, 1.0)}" in out

    def test_plan_says_when_sets_will_be_full(self, capsys):
        code, out, _ = run_cli(capsys, "plan", "--n", 40, "--alpha", 0.1, "--epsilon", 0.5)
        assert code == 0 and "NO (no rank is certified)" in out
        assert f"epsilon >= {dpuq.min_epsilon(40, 0.1):g}" in out
        code, out, _ = run_cli(capsys, "plan", "--n", 50, "--alpha", 0.1, "--epsilon", 0.5,
                               "--method", "paper")  # fmt: skip
        assert code == 0 and "NO (q̃ >= 1)" in out

    def test_expected_inflation_shrinks_with_n(self, capsys):
        def inflation(n):
            out = run_cli(capsys, "plan", "--n", n, "--alpha", 0.1, "--epsilon", 1)[1]
            return float(out.split("inflation ")[1].split()[0])

        small, large = inflation(500), inflation(20000)
        assert 0 < large < small

    def test_table_rows_columns_and_min_n(self, capsys):
        code, out, _ = run_cli(capsys, "plan", "--alpha", 0.1, "--table", "--n", 100, 1000,
                               "--epsilon", 0.5, 2, "--bins", 50, "--method", "paper")  # fmt: skip
        assert code == 0
        lines = out.splitlines()
        row = next(line for line in lines if line.split()[0] == "1000").split()
        g = dpuq.optimal_gamma(1000, 0.1, 2.0, 50)
        assert row[2] == f"{dpuq.inflated_level(1000, 0.1, 2.0, 50, g):.4f}"
        assert next(line for line in lines if line.split()[0] == "100").split()[1] == "full"
        min_row = next(line for line in lines if line.startswith("   min n")).split()
        assert min_row[2:] == [
            str(dpuq.min_calibration_size(0.1, 0.5, 50, method="paper")),
            str(dpuq.min_calibration_size(0.1, 2.0, 50, method="paper")),
        ]

    def test_certified_table(self, capsys):
        code, out, _ = run_cli(capsys, "plan", "--alpha", 0.1, "--table", "--n", 40, 1000,
                               "--epsilon", 0.5, 2, "--bins", 50)  # fmt: skip
        assert code == 0
        lines = out.splitlines()
        row = next(line for line in lines if line.split()[0] == "1000").split()
        assert row[2] == f"{dpuq.certified_level(1000, 0.1, 2.0, 50):.4f}"
        assert next(line for line in lines if line.split()[0] == "40").split()[1] == "full"


CALIBRATE_CASES = [
    (["calibrate", "--scores", "{d}/missing.csv"], "no such file"),
    (["calibrate", "--scores", "{d}/nan.csv"], "non-finite"),
    (["calibrate", "--scores", "{d}/range.csv"], "values are outside"),
    (["calibrate", "--scores", "{d}/text.csv"], "line 3, column 1: not a number"),
    (["calibrate", "--scores", "{d}/header_only.csv"], "no data"),
    (["calibrate", "--scores", "{d}/empty.csv"], "no data"),
    (["calibrate", "--scores", "{d}/ragged.csv"], "--scores"),
    (["calibrate", "--scores", "{d}/junk.npy"], "not a .npy file"),
    (["calibrate", "--scores", "{d}/strings.npy"], "wrong dtype"),
    (["calibrate", "--scores", "{d}/cube.npy"], "shape (2, 2, 2)"),
    (["calibrate", "--scores", "{d}/matrix.npy"], "one column"),
    (["calibrate", "--scores", "{d}/ok.xlsx"], "unsupported file type"),
    (["calibrate", "--scores", "{d}"], "unsupported file type"),
    (["calibrate", "--probs", "{d}/matrix.npy"], "--labels"),
    (
        ["calibrate", "--probs", "{d}/matrix.npy", "--labels", "{d}/frac_labels.csv"],
        "integer class indices",
    ),
    (
        ["calibrate", "--probs", "{d}/matrix.npy", "--labels", "{d}/labels_big.npy"],
        "outside the classes",
    ),
    (
        ["calibrate", "--probs", "{d}/unnormalised.npy", "--labels", "{d}/labels.npy"],
        "do not sum to 1",
    ),
    (["calibrate", "--probs", "{d}/matrix.npy", "--labels", "{d}/ok.npy"], "fractions"),
    (
        [
            "calibrate",
            "--probs",
            "{d}/matrix.npy",
            "--labels",
            "{d}/labels.npy",
            "--score",
            "cqr",
        ],
        "for regression",
    ),
    (
        [
            "calibrate",
            "--probs",
            "{d}/matrix.npy",
            "--labels",
            "{d}/labels.npy",
            "--lam",
            "0.1",
        ],
        "raps only",
    ),
    (["calibrate", "--scores", "{d}/ok.npy", "--probs", "{d}/matrix.npy"], "only one"),
    (["calibrate", "--scores", "{d}/ok.npy", "--labels", "{d}/labels.npy"], "--labels"),
    (["calibrate", "--scores", "{d}/ok.npy", "--score", "lac"], "--score"),
    (["calibrate", "--predictions", "{d}/ok.npy", "--targets", "{d}/ok.npy"], "--bound"),
    (["calibrate", "--predictions", "{d}/ok.npy", "--bound", "1"], "--targets"),
    (
        [
            "calibrate",
            "--predictions",
            "{d}/ok.npy",
            "--targets",
            "{d}/ok.npy",
            "--bound",
            "-1",
        ],
        "--bound",
    ),
    (
        [
            "calibrate",
            "--predictions",
            "{d}/matrix.npy",
            "--targets",
            "{d}/ok.npy",
            "--bound",
            "1",
        ],
        "1 column",
    ),
    (
        [
            "calibrate",
            "--predictions",
            "{d}/ok.npy",
            "--targets",
            "{d}/labels.npy",
            "--bound",
            "1",
        ],
        "5 entries",
    ),
    (["calibrate"], "give one input"),
]


class TestErrors:
    """Every bad input: one line on stderr starting with `dpuq`, non-zero exit, no traceback."""

    @pytest.fixture
    def bad(self, tmp_path):
        files = {
            "nan.csv": "0.1\nnan\n0.3\n",
            "range.csv": "0.1\n1.5\n-0.2\n",
            "text.csv": "score\n0.1\nabc\n",
            "header_only.csv": "score\n",
            "empty.csv": "",
            "ragged.csv": "0.1,0.2\n0.3\n",
            "frac_labels.csv": "0.5\n1\n",
        }
        for name, text in files.items():
            (tmp_path / name).write_text(text)
        (tmp_path / "junk.npy").write_bytes(b"not numpy")
        np.save(tmp_path / "strings.npy", np.array(["a", "b"]))
        np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
        np.save(tmp_path / "matrix.npy", np.full((5, 3), 1 / 3))
        np.save(tmp_path / "ok.npy", np.linspace(0, 1, 200))
        np.save(tmp_path / "labels.npy", np.arange(5) % 3)
        np.save(tmp_path / "labels_big.npy", np.array([0, 1, 2, 3, 9]))
        np.save(tmp_path / "unnormalised.npy", np.ones((5, 3)))
        (tmp_path / "cal_bad.json").write_text('{"format": "something else"}')
        (tmp_path / "cal_broken.json").write_text("{not json")
        (tmp_path / "cal_threshold.json").write_text(
            json.dumps(
                {
                    "format": "dpuq-calibration",
                    "threshold": 2,
                    "task": "scores",
                    "score": {"name": "user-supplied"},
                }
            )
        )
        return tmp_path

    @pytest.mark.parametrize(("argv", "needle"), CALIBRATE_CASES)
    def test_calibrate_bad_inputs(self, bad, capsys, argv, needle):
        argv = [a.format(d=bad) for a in argv]
        argv += ["--alpha", "0.1", "--epsilon", "1", "-o", str(bad / "out.json")]
        code, _, err = run_cli(capsys, *argv)
        assert_one_line_error(code, err, needle)
        assert not (bad / "out.json").exists()  # nothing released on bad input

    @pytest.mark.parametrize(
        ("extra", "needle"),
        [
            (["--alpha", "0.7", "--epsilon", "1"], "--alpha"),
            (["--alpha", "0", "--epsilon", "1"], "--alpha"),
            (["--alpha", "0.1", "--epsilon", "0"], "--epsilon"),
            (["--alpha", "0.1", "--epsilon", "nan"], "--epsilon"),
            (["--alpha", "0.1", "--epsilon", "one"], "--epsilon"),
            (["--alpha", "0.1"], "--epsilon"),
            (["--alpha", "0.1", "--epsilon", "1", "--bins", "1"], "--bins"),
            (["--alpha", "0.1", "--epsilon", "1", "--bins", "many"], "--bins"),
            (["--alpha", "0.1", "--epsilon", "1", "--seed", "-3"], "--seed"),
            (["--alpha", "0.1", "--epsilon", "1", "--score", "best"], "--score"),
            (["--alpha", "0.1", "--epsilon", "1", "--frobnicate"], "--frobnicate"),
        ],
    )
    def test_calibrate_bad_options(self, bad, capsys, extra, needle):
        argv = ["calibrate", "--scores", str(bad / "ok.npy"), *extra, "-o", str(bad / "o.json")]
        code, _, err = run_cli(capsys, *argv)
        assert_one_line_error(code, err, needle)

    @pytest.mark.parametrize(
        ("output", "needle"),
        [("o.txt", "must end in .json"), ("nowhere/o.json", "does not exist"), (".", "end in")],
    )
    def test_calibrate_bad_output(self, bad, capsys, output, needle):
        argv = ["calibrate", "--scores", str(bad / "ok.npy"), "--alpha", "0.1", "--epsilon", "1"]
        code, _, err = run_cli(capsys, *argv, "-o", str(bad / output))
        assert_one_line_error(code, err, needle)

    def test_predict_bad_inputs(self, bad, data, capsys):
        tmp, p, _ = data
        cal = tmp / "c.json"
        run_cli(capsys, "calibrate", "--probs", p["probs"], "--labels", p["labels"],
                "--alpha", 0.1, "--epsilon", 1, "-o", cal)  # fmt: skip
        cases = [
            (["--calibration", bad / "none.json", "--probs", p["probs"]], "no such file"),
            (["--calibration", bad / "cal_broken.json", "--probs", p["probs"]], "not valid JSON"),
            (["--calibration", bad / "cal_bad.json", "--probs", p["probs"]], "not a dpuq"),
            (["--calibration", bad / "cal_threshold.json", "--scores", bad / "matrix.npy"],
             "threshold"),
            (["--calibration", cal, "--predictions", p["pred"]], "pass --probs"),
            (["--calibration", cal], "pass --probs"),
            (["--calibration", cal, "--probs", bad / "matrix.npy"], "3 classes"),
            (["--calibration", cal, "--probs", bad / "nan.csv"], "non-finite"),
        ]  # fmt: skip
        for argv, needle in cases:
            code, _, err = run_cli(capsys, "predict", *argv, "-o", tmp / "sets.csv")
            assert_one_line_error(code, err, needle)
        code, _, err = run_cli(capsys, "predict", "--calibration", cal, "--probs", p["probs"],
                               "-o", tmp / "sets.xlsx")  # fmt: skip
        assert_one_line_error(code, err, "must end in")

    def test_plan_bad_inputs(self, capsys):
        cases = [
            (["--n", "0", "--alpha", "0.1", "--epsilon", "1"], "--n"),
            (["--n", "1.5", "--alpha", "0.1", "--epsilon", "1"], "--n"),
            (["--n", "100", "--alpha", "0.9", "--epsilon", "1"], "--alpha"),
            (["--n", "100", "--alpha", "0.1", "--epsilon", "-1"], "--epsilon"),
            (["--n", "100", "--alpha", "0.1"], "--epsilon"),
            (["--n", "100", "200", "--alpha", "0.1", "--epsilon", "1"], "--table"),
        ]
        for argv, needle in cases:
            code, _, err = run_cli(capsys, "plan", *argv)
            assert_one_line_error(code, err, needle)

    def test_entry_point_as_subprocess(self, tmp_path):
        proc = subprocess.run(
            [sys.executable, "-m", "dpuq.cli", "calibrate", "--scores", str(tmp_path / "x.npy"),
             "--alpha", "0.1", "--epsilon", "1", "-o", str(tmp_path / "c.json")],
            capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines() == [
            f"dpuq calibrate: error: --scores {str(tmp_path / 'x.npy')!r}: no such file"
        ]


class TestHelp:
    @pytest.mark.parametrize("command", ["calibrate", "predict", "plan"])
    def test_help_teaches(self, capsys, command):
        with pytest.raises(SystemExit) as exc:
            main([command, "--help"])
        out = capsys.readouterr().out
        assert exc.value.code == 0
        assert "examples:" in out and f"dpuq {command}" in out
        if command == "calibrate":
            assert "replace-one" in out and "2 epsilon" in out and "public" in out
        if command == "plan":
            assert "q̃" in out and "no privacy" in out
