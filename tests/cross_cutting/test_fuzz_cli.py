"""Property-based fuzzing of every ``dpuq`` command, in process (``dpuq.cli.main``).

Invariant: exit status 0 with a valid output file, or a non-zero status with exactly one
``dpuq <command>: error:`` line on stderr (``dpuq: warning:`` lines may precede it); never a
traceback.
Files are generated with byte-order marks, CRLF, headers, comments, junk, NaN, wrong shapes
and dtypes (``.npy`` with complex, bool or pickled objects).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
from _fuzz import make_tests
from hypothesis import strategies as st

from dpuq.cli import main

ALPHAS = ["0.1", "0.2", "0.5", "0", "-1", "nan", "inf", "abc", "1e-300", "0.7", ""]
EPSILONS = ["1", "0.5", "4", "100", "1e308", "0", "-1", "nan", "inf", "x", "5e-324", "101"]
BINS = ["auto", "10", "50", "1", "0", "-3", "1000000000", "x", "2.5"]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        with warnings.catch_warnings():
            warnings.simplefilter("always")  # shown as "dpuq: warning:" lines
            warnings.simplefilter("error", RuntimeWarning)  # numpy trouble is a failure
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse
                code = exc.code
    return int(code or 0), out.getvalue(), err.getvalue()


def _check_outcome(code: int, err: str) -> bool:
    """True for success; asserts the one-line error contract otherwise."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err
    if code == 0:  # warnings and progress bars may be on stderr, no error
        assert not any(re.match(r"dpuq( [a-z]+)?: error", line) for line in lines), err
        return True
    errors = [line for line in lines if not line.startswith("dpuq: warning:")]
    assert len(errors) == 1, err
    assert errors[0].startswith("dpuq") and "error" in errors[0], err
    return False


# --- file contents ------------------------------------------------------------------------------


@st.composite
def text_file(draw, columns: int = 1, kind: str = "unit"):
    """Bytes of a text table: mostly valid numbers, with encoding and layout variations."""
    n = draw(st.integers(0, 40))
    if kind == "labels":
        rows = [[str(draw(st.integers(0, columns - 1)))] for _ in range(n)]
    elif kind == "probs":
        rows = []
        for _ in range(n):
            raw = np.array(draw(st.lists(st.floats(0.01, 1.0), min_size=columns, max_size=columns)))
            rows.append([repr(float(v)) for v in raw / raw.sum()])
    else:
        lo, hi = (0.0, 1.0) if kind == "unit" else (-50.0, 50.0)
        rows = [[repr(draw(st.floats(lo, hi))) for _ in range(columns)] for _ in range(n)]
    junk = st.sampled_from(["nan", "inf", "", "abc", "1,2", "-0.5", "1.5", "0x1", "1e999", "#"])
    for _ in range(draw(st.integers(0, 2)) if n else 0):  # corrupt a few cells
        rows[draw(st.integers(0, n - 1))][0] = draw(junk)
    sep = draw(st.sampled_from([",", ",", "\t", " "]))
    eol = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    lines = [sep.join(r) for r in rows]
    if draw(st.booleans()):
        lines.insert(0, sep.join(f"c{k}" for k in range(columns)))
    if draw(st.booleans()) and lines:
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["", "# note", "  "])))
    data = eol.join(lines) + (eol if draw(st.booleans()) else "")
    raw = data.encode("utf-8")
    prefix = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\x00\x01"]))
    if prefix == b"\xff\xfe":
        raw = data.encode("utf-16-le")
    return prefix + raw


@st.composite
def npy_file(draw, columns: int = 1, kind: str = "unit"):
    n = draw(st.integers(0, 30))
    shape = (n,) if columns == 1 and draw(st.booleans()) else (n, columns)
    size = int(np.prod(shape))
    if kind == "labels":
        arr = np.array(draw(st.lists(st.integers(0, columns - 1), min_size=size, max_size=size)))
        arr = arr.reshape(shape)
    else:
        arr = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size)))
        arr = arr.reshape(shape)
        if kind == "probs" and n:
            arr = (arr + 0.01) / (arr + 0.01).sum(axis=-1, keepdims=True)
    dtype = draw(st.sampled_from(["same"] * 5 + ["complex", "bool", "f4", "object", "str"]))
    if dtype == "complex":
        arr = arr.astype(complex)
    elif dtype == "bool":
        arr = arr > 0.5
    elif dtype == "f4":
        arr = arr.astype(np.float32)
    elif dtype == "object":
        arr = arr.astype(object)
    elif dtype == "str":
        arr = arr.astype(str)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _write(draw, folder: Path, stem: str, columns: int, kind: str) -> str:
    suffix = draw(st.sampled_from([".csv", ".csv", ".txt", ".tsv", ".npy", ".npy", ".json", ""]))
    if suffix == ".npy":
        data = draw(npy_file(columns, kind))
    else:
        data = draw(text_file(columns, kind))
    path = folder / f"{stem}{suffix}"
    if draw(st.integers(0, 15)) == 0:  # missing file
        return str(path)
    path.write_bytes(data)
    return str(path)


# --- commands -----------------------------------------------------------------------------------


def _calibrate(data):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        mode = data.draw(st.sampled_from(["scores", "classification", "regression"]))
        argv = ["calibrate"]
        if mode == "scores":
            argv += ["--scores", _write(data.draw, folder, "s", 1, "unit")]
        elif mode == "classification":
            k = data.draw(st.integers(2, 4))
            argv += ["--probs", _write(data.draw, folder, "p", k, "probs")]
            argv += ["--labels", _write(data.draw, folder, "y", k, "labels")]
            argv += ["--score", data.draw(st.sampled_from(["lac", "aps", "raps", "cqr", "x"]))]
        else:
            cols = data.draw(st.sampled_from([1, 2]))
            argv += ["--predictions", _write(data.draw, folder, "p", cols, "real")]
            argv += ["--targets", _write(data.draw, folder, "t", 1, "real")]
            argv += ["--bound", data.draw(st.sampled_from(["10", "0.5", "0", "-1", "inf", "x"]))]
        argv += ["--alpha", data.draw(st.sampled_from(ALPHAS))]
        argv += ["--epsilon", data.draw(st.sampled_from(EPSILONS))]
        if data.draw(st.booleans()):
            argv += ["--bins", data.draw(st.sampled_from(BINS))]
        if data.draw(st.booleans()):
            argv += ["--seed", data.draw(st.sampled_from(["0", "7", "-1", "x"]))]
        output = folder / data.draw(
            st.sampled_from(["cal.json", "cal.json", "cal.txt", "no/cal.json"])
        )
        argv += ["-o", str(output)]
        code, _, err = _run(argv)
        if _check_outcome(code, err):
            record = json.loads(output.read_text())
            assert 0.0 <= record["threshold"] <= 1.0


def _valid_calibration(folder: Path, kind: str) -> Path:
    rng = np.random.default_rng(0)
    path = folder / "cal.json"
    if kind == "classification":
        probs = rng.dirichlet(np.ones(3), size=300)
        np.save(folder / "cp.npy", probs)
        np.save(folder / "cy.npy", rng.integers(0, 3, 300))
        argv = ["--probs", str(folder / "cp.npy"), "--labels", str(folder / "cy.npy")]
    elif kind == "scores":
        np.save(folder / "cs.npy", rng.uniform(size=300))
        argv = ["--scores", str(folder / "cs.npy")]
    else:
        np.save(folder / "cp.npy", rng.normal(size=300))
        np.save(folder / "ct.npy", rng.normal(size=300))
        argv = ["--predictions", str(folder / "cp.npy"), "--targets", str(folder / "ct.npy")]
        argv += ["--bound", "5"]
    code, _, err = _run(["calibrate", *argv, "--alpha", "0.2", "--epsilon", "5", "-o", str(path)])
    assert code == 0, err
    return path


def _predict(data):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        kind = data.draw(st.sampled_from(["classification", "scores", "regression"]))
        cal = _valid_calibration(folder, kind)
        corrupt = data.draw(
            st.sampled_from([None] * 4 + ["truncate", "threshold", "format", "junk"])
        )
        if corrupt == "truncate":
            cal.write_text(cal.read_text()[:40])
        elif corrupt == "threshold":
            rec = json.loads(cal.read_text())
            rec["threshold"] = data.draw(st.sampled_from(["nan", -1, 2, None, "0.5", 1e308]))
            cal.write_text(json.dumps(rec))
        elif corrupt == "format":
            rec = json.loads(cal.read_text())
            rec.pop(data.draw(st.sampled_from(sorted(rec))))
            cal.write_text(json.dumps(rec))
        elif corrupt == "junk":
            cal.write_bytes(b"\xef\xbb\xbf[1, 2]")
        argv = ["predict", "--calibration", str(cal)]
        option = data.draw(st.sampled_from(["--probs", "--scores", "--predictions"]))
        cols = data.draw(st.sampled_from([1, 2, 3]))
        kind_in = (
            "probs" if option == "--probs" else ("real" if option == "--predictions" else "unit")
        )
        argv += [option, _write(data.draw, folder, "new", cols, kind_in)]
        output = folder / data.draw(
            st.sampled_from(["o.csv", "o.json", "o.npy", "o.txt", "x/o.csv"])
        )
        argv += ["-o", str(output)]
        code, _, err = _run(argv)
        if _check_outcome(code, err):
            assert output.exists()


def _plan(data):
    argv = ["plan", "--alpha", data.draw(st.sampled_from(ALPHAS))]
    ns = ["100", "1000", "20000", "0", "-5", "2.5", "x", "1e9", "10000000000000"]
    if data.draw(st.booleans()):
        argv += ["--n", *data.draw(st.lists(st.sampled_from(ns), min_size=1, max_size=2))]
    if data.draw(st.booleans()):
        argv += [
            "--epsilon",
            *data.draw(st.lists(st.sampled_from(EPSILONS), min_size=1, max_size=2)),
        ]
    if data.draw(st.booleans()):
        argv += ["--bins", data.draw(st.sampled_from(BINS))]
    if data.draw(st.booleans()):  # one cell: the full default table takes seconds
        argv += ["--table", "--n", data.draw(st.sampled_from(ns))]
        argv += ["--epsilon", data.draw(st.sampled_from(EPSILONS))]
    code, _, err = _run(argv)
    _check_outcome(code, err)


def _heavy_commands_refuse_bad_options(data):
    """demo and reproduce: only invalid values are drawn, so each run must fail fast."""
    bad = ["0", "-1", "nan", "inf", "x", "1e308", ""]
    command = data.draw(
        st.sampled_from(
            [
                ["demo", "--epsilon"],
                ["demo", "--alpha"],
                ["demo", "--splits"],
                ["demo", "--n-calibration"],
                ["demo", "--train-epsilon"],
                ["reproduce", "levels", "--alpha"],
                ["reproduce", "levels", "--points"],
                ["reproduce", "bins", "--splits"],
                ["reproduce", "epsilon", "--alpha"],
                ["reproduce", "medical", "--epsilon"],
                ["reproduce", "quadrants", "--epsilon"],
                ["reproduce", "nothing"],
            ]
        )
    )
    argv = [*command, data.draw(st.sampled_from(bad))] if command[-1].startswith("--") else command
    with tempfile.TemporaryDirectory() as tmp:
        code, _, err = _run([*argv, "--out", str(Path(tmp) / "out")])
    assert code != 0, f"{argv} was accepted"
    _check_outcome(code, err)


for _name, _prop in {
    "cli_calibrate": _calibrate,
    "cli_predict": _predict,
    "cli_plan": _plan,
    "cli_heavy_commands": _heavy_commands_refuse_bad_options,
}.items():
    make_tests(globals(), _name, _prop)
