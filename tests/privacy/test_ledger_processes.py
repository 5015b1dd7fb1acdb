"""The ledger and release files under real concurrent processes, SIGKILL and a full disk.

Every test starts real ``python -m dpuq.cli`` (or small Python) processes on a real SQLite file
and real files; nothing is mocked. A full disk is the kernel's file size limit
(``RLIMIT_FSIZE``): writes past it fail with ``EFBIG`` exactly where ``ENOSPC`` would.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from dpuq import (
    PrivateCalibration,
    PrivateConformalClassifier,
    PrivateConformalRegressor,
    calibrate,
    laplace_mechanism,
)
from dpuq.cli import main
from dpuq.privacy.ledger import BudgetExceededError, Ledger

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _env(tmp_path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    env.pop("DPUQ_LEDGER", None)
    env["OMP_NUM_THREADS"] = "1"
    return env


def _cli(*args) -> list[str]:
    return [sys.executable, "-m", "dpuq.cli", *map(str, args)]


def _run(tmp_path, *args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(_cli(*args), capture_output=True, text=True, env=_env(tmp_path), **kw)


def _popen(tmp_path, *args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE):
    return subprocess.Popen(
        _cli(*args), stdout=stdout, stderr=stderr, text=True, env=_env(tmp_path)
    )


def _main(*args) -> int:
    """The command in this process (same code as the processes above)."""
    return main([str(a) for a in args])


@pytest.fixture
def scores(tmp_path):
    path = tmp_path / "scores.npy"
    np.save(path, np.random.default_rng(7).uniform(size=1500))
    return path


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if "dpuq-tmp" in p.name or "lock" in p.name)


def test_concurrent_releases_stop_exactly_at_the_budget(tmp_path, scores):
    ledger = tmp_path / "team.sqlite"
    assert _run(tmp_path, "budget", "init", "--ledger", ledger, "--dataset", "icu",
                "--epsilon", 5).returncode == 0  # fmt: skip
    args = ["calibrate", "--scores", scores, "--alpha", 0.1, "--epsilon", 1, "--ledger", ledger,
            "--dataset", "icu"]  # fmt: skip
    procs = [_popen(tmp_path, *args, "-o", tmp_path / f"cal{i}.json") for i in range(8)]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for p in procs:
        p.stderr.close()
    ok = [i for i, (code, _) in enumerate(results) if code == 0]
    refused = [err for code, err in results if code != 0]
    assert len(ok) == 5, results
    assert all("budget" in err and err.count("\n") == 1 for err in refused), refused
    assert sorted(p.name for p in tmp_path.glob("cal*.json")) == [f"cal{i}.json" for i in ok]
    show = _run(tmp_path, "budget", "show", "--ledger", ledger, "--dataset", "icu", "--json")
    info = json.loads(show.stdout)
    assert info["spent_epsilon"] == 5.0 and info["remaining_epsilon"] == 0.0
    assert len(info["releases"]) == 5
    assert {r["status"] for r in info["releases"]} == {"released"}
    assert sorted(r["output"] for r in info["releases"]) == sorted(
        str((tmp_path / f"cal{i}.json").resolve()) for i in ok
    )
    # the same ledger refuses a Python release now (an informative one: at epsilon = 0.01 a
    # calibration is decided by public quantities and costs nothing, issue 34)
    with pytest.raises(BudgetExceededError, match="budget"):
        laplace_mechanism(0.5, sensitivity=1.0, epsilon=0.01, ledger=ledger, dataset="icu")
    history = _run(tmp_path, "budget", "history", "--ledger", ledger, "--dataset", "icu")
    assert history.returncode == 0 and history.stdout.count("\n") == 5
    assert _leftovers(tmp_path) == []


def test_concurrent_exclusive_creation_one_winner_one_spend(tmp_path, scores):
    ledger = tmp_path / "l.sqlite"
    Ledger(ledger).create_budget("icu", epsilon=100.0)
    out = tmp_path / "same.json"
    args = ["calibrate", "--scores", scores, "--alpha", 0.1, "--epsilon", 1, "-o", out,
            "--ledger", ledger, "--dataset", "icu"]  # fmt: skip
    procs = [_popen(tmp_path, *args) for _ in range(5)]
    codes = [p.wait(timeout=300) for p in procs]
    errors = [p.stderr.read() for p in procs]
    for p in procs:
        p.stderr.close()
    assert codes.count(0) == 1, (codes, errors)
    losers = [e for c, e in zip(codes, errors, strict=True) if c != 0]
    assert all("exists" in e or "another process" in e for e in losers), losers
    st = Ledger(ledger).status("icu")
    assert (st.spent_epsilon, st.n_releases) == (1.0, 1)  # losers refused before spending
    json.loads(out.read_text())
    assert _leftovers(tmp_path) == []


_RESERVE_AND_HANG = """
import sys, time
from dpuq.privacy.ledger import Ledger
with Ledger(sys.argv[1]).spend("icu", 1.0, what="killed release") as receipt:
    print("reserved", flush=True)
    time.sleep(600)
"""


def test_kill_after_reserving_keeps_the_spend(tmp_path):
    ledger = tmp_path / "l.sqlite"
    Ledger(ledger).create_budget("icu", epsilon=1.5)
    proc = subprocess.Popen([sys.executable, "-c", _RESERVE_AND_HANG, str(ledger)],
                            stdout=subprocess.PIPE, text=True, env=_env(tmp_path))  # fmt: skip
    assert proc.stdout.readline().strip() == "reserved"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
    led = Ledger(ledger)
    (row,) = led.releases("icu")
    assert (row.what, row.status, row.epsilon) == ("killed release", "reserved", 1.0)
    with pytest.raises(BudgetExceededError):
        led.reserve("icu", 1.0, what="next")
    con = sqlite3.connect(ledger)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def _check_no_release_unrecorded(tmp_path, ledger, outputs):
    rows = Ledger(ledger).releases("icu")
    recorded = {r.output for r in rows}
    for out in outputs:
        if out.exists():
            record = json.loads(out.read_text())  # complete, never torn
            assert record["format"] == "dpuq-calibration"
            assert str(out.resolve()) in recorded
    con = sqlite3.connect(ledger)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()
    return rows


@pytest.mark.parametrize("n_kills", [pytest.param(3), pytest.param(30, marks=pytest.mark.slow)])
def test_kill_at_random_moments_never_leaves_a_release_unrecorded(tmp_path, scores, n_kills):
    ledger = tmp_path / "l.sqlite"
    Ledger(ledger).create_budget("icu", epsilon=1000.0)
    # how long one release takes here, to spread the kills over its whole life
    t0 = time.monotonic()
    first = _run(tmp_path, "calibrate", "--scores", scores, "--alpha", 0.1, "--epsilon", 1,
                 "-o", tmp_path / "warm.json", "--ledger", ledger, "--dataset", "icu")  # fmt: skip
    assert first.returncode == 0
    life = time.monotonic() - t0
    delays = np.random.default_rng(2024).uniform(0.3 * life, 1.1 * life, n_kills)
    outputs = []
    for i, delay in enumerate(delays):
        out = tmp_path / f"k{i}.json"
        outputs.append(out)
        args = ["calibrate", "--scores", scores, "--alpha", 0.1, "--epsilon", 1, "-o", out,
                "--ledger", ledger, "--dataset", "icu"]  # fmt: skip
        proc = _popen(tmp_path, *args, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        _check_no_release_unrecorded(tmp_path, ledger, outputs)
    # a later writer of the same path cleans the temporary files a killed one left
    for out in outputs:
        if any(p.name.startswith(f".{out.name}.") for p in tmp_path.iterdir()):
            code = _main("calibrate", "--scores", scores, "--alpha", 0.1, "--epsilon", 1, "-o", out,
                         "--force", "--ledger", ledger, "--dataset", "icu")  # fmt: skip
            assert code == 0
    rows = _check_no_release_unrecorded(tmp_path, ledger, outputs)
    assert len(rows) >= 1 + sum(out.exists() for out in outputs)
    assert _leftovers(tmp_path) == []


_FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
{body}
"""


def test_full_disk_during_overwrite_keeps_the_old_release_and_the_budget(tmp_path, scores):
    ledger = tmp_path / "l.sqlite"
    Ledger(ledger).create_budget("icu", epsilon=10.0)
    out = tmp_path / "cal.json"
    first = _run(tmp_path, "calibrate", "--scores", scores, "--alpha", 0.1, "--epsilon", 1,
                 "-o", out, "--ledger", ledger, "--dataset", "icu")  # fmt: skip
    assert first.returncode == 0
    old = out.read_bytes()
    body = ("from dpuq.cli import main\n"
            "sys.exit(main(sys.argv[2:]))")  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", _FULL_DISK.format(body=body), "60000",
         "calibrate", "--scores", str(scores), "--alpha", "0.1", "--epsilon", "1",
         "-o", str(out), "--force", "--ledger", str(ledger), "--dataset", "icu"],
        capture_output=True, text=True, env=_env(tmp_path),
    )  # fmt: skip
    assert proc.returncode != 0
    assert proc.stderr.startswith("dpuq calibrate: error:") and "too large" in proc.stderr.lower()
    assert out.read_bytes() == old
    assert Ledger(ledger).status("icu").spent_epsilon == 1.0  # refused before the spend
    assert _leftovers(tmp_path) == []


def test_write_failing_after_the_release_keeps_the_old_file(tmp_path):
    """The space check passes, the write itself fails: the old file stays, no temp is left."""
    out = tmp_path / "big.json"
    out.write_text("old release\n")
    body = textwrap.dedent(f"""
        from dpuq.io._atomic import release_file
        with release_file({str(out)!r}, force=True, reserve=0) as f:
            f.write_text("x" * 50000)
            f.commit()
    """)
    proc = subprocess.run([sys.executable, "-c", _FULL_DISK.format(body=body), "20000"],
                          capture_output=True, text=True, env=_env(tmp_path))  # fmt: skip
    assert proc.returncode != 0 and "File too large" in proc.stderr
    assert "previous file, if any, is unchanged" in proc.stderr
    assert out.read_text() == "old release\n"
    assert _leftovers(tmp_path) == []


def test_cli_python_cli_round_trip_keeps_every_released_value(tmp_path, scores, capsys):
    from sklearn.linear_model import LinearRegression, LogisticRegression

    # scores: CLI -> Python -> CLI
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert _main("calibrate", "--scores", scores, "--alpha", 0.1, "--epsilon", 1, "-o", a) == 0
    cal = PrivateCalibration.load(a)
    cal.save(b)
    assert json.loads(a.read_text()) == json.loads(b.read_text())
    with pytest.raises(FileExistsError):
        cal.save(b)
    test = np.random.default_rng(1).uniform(size=(20, 4))
    np.save(tmp_path / "test.npy", test)
    sets = []
    for f in (a, b):
        o = tmp_path / f"sets_{f.stem}.npy"
        assert _main("predict", "--calibration", f, "--scores", tmp_path / "test.npy", "-o", o) == 0
        sets.append(np.load(o))
    np.testing.assert_array_equal(sets[0], sets[1])
    np.testing.assert_array_equal(sets[0], test <= cal.threshold)

    # classification: CLI -> estimator -> CLI
    gen = np.random.default_rng(3)
    X = gen.normal(size=(900, 4))
    y = (X[:, 0] + 0.5 * gen.normal(size=900) > 0).astype(int)
    model = LogisticRegression().fit(X[:300], y[:300])
    np.save(tmp_path / "p.npy", model.predict_proba(X[300:]))
    np.save(tmp_path / "y.npy", y[300:])
    c1, c2 = tmp_path / "c1.json", tmp_path / "c2.json"
    assert _main("calibrate", "--probs", tmp_path / "p.npy", "--labels", tmp_path / "y.npy",
                 "--score", "raps", "--alpha", 0.1, "--epsilon", 2, "-o", c1) == 0  # fmt: skip
    clf = PrivateConformalClassifier.load_release(c1, model)
    clf.save_release(c2)
    r1, r2 = json.loads(c1.read_text()), json.loads(c2.read_text())
    assert r2["classes"] == [0, 1]
    assert r1 == r2
    assert r1["score"]["randomized"] is True  # private RAPS randomizes its scores by default
    # sets: a deterministic score (LAC), so that Python and the CLI build the same sets
    c3, c4 = tmp_path / "c3.json", tmp_path / "c4.json"
    assert _main("calibrate", "--probs", tmp_path / "p.npy", "--labels", tmp_path / "y.npy",
                 "--score", "lac", "--alpha", 0.1, "--epsilon", 2, "-o", c3) == 0  # fmt: skip
    clf = PrivateConformalClassifier.load_release(c3, model)
    clf.save_release(c4)
    want = clf.predict_set(X[:50]).sets
    np.save(tmp_path / "pt.npy", model.predict_proba(X[:50]))
    assert _main("predict", "--calibration", c4, "--probs", tmp_path / "pt.npy",
                 "-o", tmp_path / "s.npy") == 0  # fmt: skip
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), want)

    # regression: estimator -> CLI -> estimator
    yr = X @ np.array([3.0, 1.0, 0.0, 0.0]) + gen.normal(size=900)
    reg = PrivateConformalRegressor(LinearRegression().fit(X[:300], yr[:300]), epsilon=2.0,
                                    bound=20.0, conformity_score="absolute")  # fmt: skip
    reg.conformalize(X[300:], yr[300:])
    r1p = tmp_path / "r1.json"
    reg.save_release(r1p)
    back = PrivateConformalRegressor.load_release(r1p, reg.estimator)
    assert back.calibration_ == reg.calibration_
    np.save(tmp_path / "pred.npy", reg.predict(X[:30]))
    assert _main("predict", "--calibration", r1p, "--predictions", tmp_path / "pred.npy",
                 "-o", tmp_path / "iv.npy") == 0  # fmt: skip
    np.testing.assert_array_equal(np.load(tmp_path / "iv.npy"), back.predict_interval(X[:30]).sets)


class TestTamperedFiles:
    @pytest.fixture
    def release(self, tmp_path):
        c = calibrate(np.random.default_rng(0).uniform(size=3000), alpha=0.1, epsilon=2.0,
                      n_bins=50, random_state=0)  # fmt: skip
        path = tmp_path / "c.json"
        c.save(path)
        return path, json.loads(path.read_text())

    @pytest.mark.parametrize(
        ("change", "needle"),
        [
            ({"format_version": 99}, "version"),
            ({"format_version": "1"}, "version"),
            ({"threshold": 0.913}, "not on its grid"),
            ({"n_bins": 7}, "not on its grid"),
            ({"confidence_level": 0.95}, "disagree"),
            ({"informative": False}, "disagree"),
            ({"epsilon": 1.0}, "disagree"),
            ({"format": "other"}, "not a dpuq calibration"),
        ],
    )
    def test_load_and_predict_refuse(self, tmp_path, release, change, needle, capsys):
        _, rec = release
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**rec, **change}))
        with pytest.raises(ValueError, match=needle):
            PrivateCalibration.load(bad)
        np.save(tmp_path / "t.npy", np.zeros((3, 2)))
        code = main(["predict", "--calibration", str(bad), "--scores", str(tmp_path / "t.npy"),
                     "-o", str(tmp_path / "o.npy")])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2 and needle in err and err.count("\n") == 1
        assert not (tmp_path / "o.npy").exists()

    def test_untampered_loads_equal(self, release):
        path, _ = release
        cal = PrivateCalibration.load(path)
        assert cal.threshold * cal.n_bins == round(cal.threshold * cal.n_bins)
        assert PrivateCalibration.load(path) == cal
