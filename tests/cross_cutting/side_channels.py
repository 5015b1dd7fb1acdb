"""Side-channel harness: everything a release lets anyone observe must depend on the data only
through the released values.

For each case, the harness runs a releasing callable on two *neighbouring* data sets (replace
one record, ``n`` public; both inside the declared domain) with the same seed, and captures
everything observable:

- warnings (class and text), exceptions (class and text);
- log records of every logger (all levels: the harness enables them while it runs);
- stdout and stderr;
- the global random states after the call (Python's ``random``, NumPy's legacy ``np.random``,
  torch's generator when torch is imported), each set to a fixed state before the call;
- files written or changed under the case's working directory (names and contents; a ledger
  SQLite file is read as its history, a ``.pkl`` file as the unpickled object's state).

Then it asserts that the two observations are identical, except for what is computed from the
released values: each case names its released values (``released(outcome)``), and their text
renderings (and equal numbers in JSON files and pickles) are replaced by ``<R>`` before the
comparison. The working directory's path and ISO timestamps are masked too.

How to add a case (one entry of ``CASES`` in ``tests/cross_cutting/test_side_channels.py``)::

    Case("my_release", lambda x, d: my_release(x, epsilon=1.0, random_state=0),
         BOUNDED, released=lambda r: [r.value]),

``fn(data, workdir)`` runs the release (CLI: ``cli(["calibrate", ...])``); ``neighbours`` is a
list of neighbouring pairs (``BOUNDED``, ``CLIP``, ``SCORES``, ``LABELLED``... below, or your
own); ``setup(data, workdir)`` (optional) turns a data set into ``fn``'s input, e.g. writes it
to files (not observed); ``released(outcome, workdir)`` lists the released values (default:
none, so everything must be identical). Keep cases fast: small ``n``, fixed seeds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import json
import logging
import math
import pickle
import re
import sqlite3
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

TIMESTAMP = re.compile(rb"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?")


@dataclasses.dataclass
class Observed:
    """What one run let anyone see (the outcome itself is not compared)."""

    outcome: Any
    warnings: list
    exception: tuple | None
    logs: list
    stdout: str
    stderr: str
    files: dict
    global_rng: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Case:
    """One releasing callable and the neighbouring data sets to run it on."""

    name: str
    fn: Callable[[Any, Path], Any]
    neighbours: Sequence[tuple[Any, Any]]
    released: Callable[..., list] | None = None
    setup: Callable[[Any, Path], Any] | None = None

    def __str__(self) -> str:
        return self.name


# --------------------------------------------------------------------------- observing
def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm", "-journal"))
    }


def _ledger_history(path: Path) -> list:
    con = sqlite3.connect(path)
    try:
        con.row_factory = sqlite3.Row
        rows = [dict(r) for r in con.execute("SELECT * FROM releases ORDER BY id")]
        budgets = [dict(r) for r in con.execute("SELECT * FROM datasets ORDER BY name")]
    finally:
        con.close()
    for r in rows:  # which process wrote it: not about the data, differs between runs
        r.pop("pid", None)
        r.pop("host", None)
    return [budgets, rows]


def _global_rng_digest() -> list:
    """The global random states, as comparable text (torch's only when it is imported)."""
    import hashlib
    import random
    import sys

    states = [repr(random.getstate()), repr(np.random.get_state())]  # noqa: NPY002
    torch = sys.modules.get("torch")
    if torch is not None:
        states.append(torch.get_rng_state().numpy().tobytes().hex())
    return [hashlib.sha256(s.encode()).hexdigest() for s in states]


@contextlib.contextmanager
def _fixed_global_rng():
    """Set every global random state to a fixed one, and give the caller's back afterwards."""
    import random
    import sys

    saved = (random.getstate(), np.random.get_state())  # noqa: NPY002
    torch = sys.modules.get("torch")
    saved_torch = torch.get_rng_state() if torch is not None else None
    random.seed(0)
    np.random.seed(0)  # noqa: NPY002
    if torch is not None:
        torch.manual_seed(0)
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])  # noqa: NPY002
        if saved_torch is not None:
            torch.set_rng_state(saved_torch)


def observe(fn: Callable[[], Any], workdir: Path) -> Observed:
    """Run ``fn()`` and capture everything observable (see the module docstring)."""
    records: list = []

    def handle(self, record):  # every logger, every level
        records.append((record.name, record.levelname, record.getMessage()))

    before = _snapshot(workdir)
    out, err = io.StringIO(), io.StringIO()
    outcome, exception = None, None
    with (
        _fixed_global_rng(),
        warnings.catch_warnings(record=True) as caught,
        # every logger at every level, as a user may configure them (logging.disable, the
        # global switch a sealed release uses, still holds)
        mock.patch.object(
            logging.Logger, "isEnabledFor", lambda self, level: level > self.manager.disable
        ),
        mock.patch.object(logging.Logger, "handle", handle),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        warnings.simplefilter("always")
        try:
            outcome = fn()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # an exception is an observable (SystemExit too)
            exception = (type(exc).__name__, str(exc))
        global_rng = _global_rng_digest()
    files = {}
    for name, data in _snapshot(workdir).items():
        if before.get(name) == data:
            continue
        path = workdir / name
        if data[:16] == b"SQLite format 3\x00":
            files[name] = _ledger_history(path)
        elif name.endswith(".pkl"):
            files[name] = ("pickle", plain(pickle.loads(data)))
        else:
            files[name] = data
    return Observed(
        outcome=outcome,
        warnings=[(w.category.__name__, str(w.message)) for w in caught],
        exception=exception,
        logs=records,
        stdout=out.getvalue(),
        stderr=err.getvalue(),
        files=files,
        global_rng=global_rng,
    )


def plain(obj: Any, depth: int = 0) -> Any:
    """A JSON-like view of an object's state (for pickles): dicts, lists, numbers, strings."""
    if depth > 20:
        return "<deep>"
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, bytes):
        return obj.decode("latin-1")
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return {"ndarray": str(obj.dtype), "shape": list(obj.shape), "v": plain(obj.tolist())}
    if isinstance(obj, dict):
        return {str(k): plain(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set | frozenset):
        return [plain(v, depth + 1) for v in obj]
    if callable(obj) and not hasattr(obj, "__dict__"):
        return f"<callable {type(obj).__name__}>"
    state = obj.__getstate__() if hasattr(obj, "__getstate__") else vars(obj)
    if state is None and dataclasses.is_dataclass(obj):
        state = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return {"type": type(obj).__name__, "state": plain(state, depth + 1)}


# --------------------------------------------------------------------------- normalising
def _renderings(value) -> list[str]:
    """Common text renderings of a released value (longest first)."""
    out: set[str] = set()
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, bool | np.bool_):
        pass
    elif isinstance(value, int | np.integer):
        out.add(str(int(value)))
    elif isinstance(value, float | np.floating):
        v = float(value)
        if math.isfinite(v):
            out |= {repr(v), str(v), f"{v:g}", f"{v:.6g}", f"{v:.4g}", f"{v:.3g}", f"{v:.4f}"}
            out |= {f"{v:.3f}", f"{v:.2f}", f"{v:.1%}", f"{v:.2%}", f"{v:.8g}", f"{v:.10g}"}
    return sorted(out, key=len, reverse=True)


def _flatten(values) -> list:
    flat: list = []
    for v in values:
        if isinstance(v, np.ndarray | list | tuple):
            flat.extend(_flatten(list(np.asarray(v, dtype=object).ravel())))
        else:
            flat.append(v)
    return flat


def _scrub_text(text: str, released: list, workdir: Path) -> str:
    text = text.replace(str(workdir), "<DIR>")
    text = TIMESTAMP.sub(b"<TIME>", text.encode("utf-8", "surrogateescape")).decode(
        "utf-8", "surrogateescape"
    )
    for value in released:
        for r in _renderings(value):
            text = re.sub(rf"(?<![\w.]){re.escape(r)}(?![\w])", "<R>", text)
    return text


def _scrub(obj, released: list, workdir: Path):
    numbers = [float(v) for v in released if isinstance(v, int | float | np.number)]
    if isinstance(obj, str):
        return _scrub_text(obj, released, workdir)
    if isinstance(obj, bool) or obj is None:
        return obj
    if isinstance(obj, int | float):
        return "<R>" if any(float(obj) == v for v in numbers) else obj
    if isinstance(obj, dict):
        return {k: _scrub(v, released, workdir) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_scrub(v, released, workdir) for v in obj]
    if isinstance(obj, bytes):
        try:
            return ("json", _scrub(json.loads(obj), released, workdir))
        except (ValueError, UnicodeDecodeError):
            return _scrub_text(obj.decode("latin-1"), released, workdir)
    return obj


def normalised(obs: Observed, released: list, workdir: Path) -> dict:
    """The observation with the released values, the working directory and times masked."""
    return {
        "warnings": _scrub(obs.warnings, released, workdir),
        "exception": _scrub(obs.exception, released, workdir),
        "logs": _scrub(obs.logs, released, workdir),
        "stdout": _scrub(obs.stdout, released, workdir),
        "stderr": _scrub(obs.stderr, released, workdir),
        "files": {k: _scrub(v, released, workdir) for k, v in obs.files.items()},
        "global_rng": obs.global_rng,
    }


# --------------------------------------------------------------------------- asserting
def run_case(case: Case, data, workdir: Path) -> tuple[Observed, dict]:
    workdir.mkdir(parents=True, exist_ok=True)
    arg = case.setup(data, workdir) if case.setup is not None else data
    obs = observe(lambda: case.fn(arg, workdir), workdir)
    released = []
    if case.released is not None and obs.exception is None and obs.outcome is not None:
        takes_dir = len(inspect.signature(case.released).parameters) > 1
        released = case.released(obs.outcome, workdir) if takes_dir else case.released(obs.outcome)
    return obs, normalised(obs, _flatten(released), workdir)


def assert_no_side_channel(case: Case, tmp_path: Path) -> None:
    """Run every neighbouring pair of ``case``; observations must agree up to released values."""
    # a warm-up run, not compared: first-call effects (lazy imports and their log records)
    # are not about the data; a data-dependent cache would still show between A and B
    run_case(case, case.neighbours[0][0], tmp_path / "warm-up")
    for i, (a, b) in enumerate(case.neighbours):
        _, na = run_case(case, a, tmp_path / f"{i}a")
        _, nb = run_case(case, b, tmp_path / f"{i}b")
        for key in na:
            assert na[key] == nb[key], (
                f"{case.name}, neighbours #{i}: {key} differ beyond the released values:\n"
                f"  A: {na[key]!r}\n  B: {nb[key]!r}"
            )


def cli(argv: list) -> int:
    """Run ``dpuq ARGV`` in-process (its stdout/stderr are captured by :func:`observe`)."""
    from dpuq.cli import main

    try:
        return main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        return int(exc.code or 0)


# --------------------------------------------------------------------------- neighbours
def replace_one(base: np.ndarray, index: int, value) -> np.ndarray:
    out = np.array(base, copy=True)
    out[index] = value
    return out


_RNG = np.random.default_rng(20260101)
_BASE = _RNG.uniform(0.2, 0.8, size=40)

#: data in the public bounds [0, 1]: edge values, -0.0, a subnormal, ties
BOUNDED = [
    (_BASE, replace_one(_BASE, 0, 0.0)),
    (_BASE, replace_one(_BASE, 3, 1.0)),
    (replace_one(_BASE, 0, -0.0), replace_one(_BASE, 0, 5e-324)),
    (np.full(40, 0.5), replace_one(np.full(40, 0.5), 7, 1.0)),
]

#: valid only with clip=True: out-of-range and extreme records against in-range ones
CLIP = [
    (_BASE, replace_one(_BASE, 0, 1.5)),
    (_BASE, replace_one(_BASE, 5, 1e300)),
    (replace_one(_BASE, 2, -1e300), replace_one(_BASE, 2, 0.5)),
    (np.full(40, 0.5), replace_one(np.full(40, 0.5), 0, -0.25)),
]

_SCORES = _RNG.uniform(size=200)
#: calibration scores in [0, 1]: extremes, a subnormal, ties
SCORES = [
    (_SCORES, replace_one(_SCORES, 0, 1.0)),
    (replace_one(_SCORES, 1, 0.0), replace_one(_SCORES, 1, 5e-324)),
    (np.full(200, 0.5), replace_one(np.full(200, 0.5), 9, 1.0)),
]


def _labelled(n: int = 150, k: int = 3):
    y = _RNG.integers(0, k - 1, size=n)  # classes 0..k-2 only: class k-1 empty in the base
    p = _RNG.dirichlet(np.ones(k), size=n)
    return p, y


_P, _Y = _labelled()
#: (probabilities, labels) with K = 3: an empty class that one record fills, a one-hot row
LABELLED = [
    ((_P, _Y), (_P, replace_one(_Y, 0, 2))),
    ((_P, _Y), (replace_one(_P, 4, [1.0, 0.0, 0.0]), _Y)),
]

_X = _RNG.uniform(-1, 1, size=(120, 2))
_T = _X[:, 0] + 0.1 * _RNG.normal(size=120)
#: regression (X, y): an extreme outcome, a tie with the prediction
REGRESSION = [
    ((_X, _T), (_X, replace_one(_T, 0, 1e300))),
    ((_X, _T), (_X, replace_one(_T, 1, _X[1, 0]))),
]
