"""`dpuq online`: the threshold sequence of a score file, settings errors before the charge."""

import numpy as np
import pytest

import dpuq
from cli_helpers import run_cli as _run
from dpuq.privacy.ledger import Ledger

pytestmark = pytest.mark.filterwarnings("ignore:--seed makes the noise reproducible")


@pytest.fixture
def stream(tmp_path):
    rng = np.random.default_rng(0)
    s = np.clip(rng.beta(1, 6, size=3000) * np.linspace(1, 3, 3000), 0, 1)
    np.savetxt(tmp_path / "s.csv", s, header="score", comments="")
    return tmp_path, s


def test_writes_the_same_thresholds_as_the_function(capsys, stream):
    d, s = stream
    code, out, err = _run(
        capsys, "online", "--scores", d / "s.csv", "--alpha", 0.1, "--epsilon", 1,
        "--seed", 3, "--out", d / "t.csv",
    )  # fmt: skip
    assert code == 0, err
    assert "3000 thresholds" in out
    t = np.loadtxt(d / "t.csv", skiprows=1)
    assert np.array_equal(t, dpuq.online_conformal_thresholds(s, 0.1, 1.0, random_state=3))
    assert abs(np.mean(s > t) - 0.1) < 0.03


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--alpha", "0.7"], "--alpha"),
        (["--alpha", "0"], "--alpha"),
        (["--step", "-1"], "--step"),
        (["--block-size", "0"], "--block-size"),
        (["--block-size", "x"], "--block-size"),
        (["--initial", "2"], "--initial"),
        (["--epsilon", "0"], "--epsilon"),
    ],
)
def test_bad_settings_one_line_error_and_no_charge(capsys, stream, extra, flag):
    d, _ = stream
    Ledger(d / "l.sqlite", create=True).create_budget("s", epsilon=5.0)
    argv = ["online", "--scores", d / "s.csv", "--epsilon", 1, "-o", d / "t.csv"]
    code, _, err = _run(capsys, *argv, *extra, "--ledger", d / "l.sqlite", "--dataset", "s")
    assert code == 2
    assert flag in err and len(err.strip().splitlines()) == 1
    assert not (d / "t.csv").exists()
    assert Ledger(d / "l.sqlite").status("s").spent_epsilon == 0.0


def test_nan_and_out_of_range_scores_are_refused(capsys, tmp_path):
    np.savetxt(tmp_path / "bad.csv", [0.1, np.nan, 0.3])
    np.savetxt(tmp_path / "big.csv", [0.1, 1.5, 0.3])
    np.savetxt(tmp_path / "two.csv", np.ones((3, 2)) / 2, delimiter=",")
    for name in ("bad.csv", "big.csv", "two.csv"):
        code, _, err = _run(
            capsys, "online", "--scores", tmp_path / name, "--epsilon", 1, "-o",
            tmp_path / "t.csv",
        )  # fmt: skip
        assert code == 2 and "--scores" in err
    assert not (tmp_path / "t.csv").exists()


def test_charges_the_ledger_once(capsys, stream):
    d, _ = stream
    Ledger(d / "l.sqlite", create=True).create_budget("s", epsilon=1.5)
    argv = ["online", "--scores", d / "s.csv", "--epsilon", 1, "--ledger", d / "l.sqlite"]
    code, _, err = _run(capsys, *argv, "--dataset", "s", "-o", d / "t.csv")
    assert code == 0, err
    assert Ledger(d / "l.sqlite").status("s").spent_epsilon == pytest.approx(1.0)
    code, _, err = _run(capsys, *argv, "--dataset", "s", "-o", d / "t2.csv")
    assert code != 0 and not (d / "t2.csv").exists()


def test_a_block_as_long_as_the_stream_charges_nothing_and_says_so(capsys, stream):
    """--block-size >= the stream's length: every threshold is --initial (no count is
    released); the run costs epsilon = 0 and says so. One person more than the block: charged."""
    d, _ = stream
    Ledger(d / "l.sqlite", create=True).create_budget("s", epsilon=1.5)
    argv = ["online", "--scores", d / "s.csv", "--epsilon", 1, "--ledger", d / "l.sqlite",
            "--dataset", "s", "--initial", 0.4]  # fmt: skip
    with pytest.warns(dpuq.UninformativeReleaseWarning, match="block_size=3000"):
        code, out, err = _run(capsys, *argv, "--block-size", 3000, "-o", d / "t.csv")
    assert code == 0, err
    assert "NOT informative" in out and "epsilon = 0" in out
    assert np.array_equal(np.loadtxt(d / "t.csv", skiprows=1), np.full(3000, 0.4))
    ledger = Ledger(d / "l.sqlite")
    assert [r.epsilon for r in ledger.releases("s")] == [0.0]
    code, out, err = _run(capsys, *argv, "--block-size", 2999, "-o", d / "t2.csv")
    assert code == 0, err
    assert "epsilon = 1" in out
    assert ledger.status("s").spent_epsilon == pytest.approx(1.0)
