"""``dpuq audit``: an empirical lower bound on the ε of a release, for data stewards."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from dpuq.commands._args import add_command, float_arg, seed_arg

HELP = "an empirical lower bound on a release's epsilon (black-box privacy audit)"

DESCRIPTION = """\
Audit a release you cannot read: run it many times on neighbouring data sets (D and D'
differ in one record), choose an event on half of the runs, and bound epsilon from below
with Clopper-Pearson on the other half: if the release were (epsilon, delta)-DP for any
epsilon below the printed bound, what was seen would have had probability below
1 - confidence. A bound above the claimed epsilon proves the claim false; a bound below it
proves nothing (it is a lower bound, not an estimate). See docs/how-to/audit.md.

The release is either a Python entry point MODULE:FUNCTION with FUNCTION(data, seed)
returning a number or an array, or a command line (--command) with {data} (a file holding
the data set, in the format of --data) and {seed} in it, whose standard output holds the
released numbers (or a JSON object: --json-field picks the value).

Data: --data FILE (.npy, .csv, ...) or --generate KIND --n N (dpuq's worst-case data sets of
that shape: ties, evenly spread, two clusters). Neighbours: --neighbours KIND moves one
record as dpuq's generators do (scores: a score to 0 or 1; rows: a row to a --bounds end;
losses: a row of the loss matrix to all 0 or all 1). The bound holds jointly over all the
pairs tried (Bonferroni). Exit status 1 when the bound exceeds --claimed-epsilon.
"""

EPILOG = """\
examples:
  dpuq audit --entry-point mypackage.release:noisy_mean --generate rows --bounds 0 1 --n 50 \\
      --samples 20000 --claimed-epsilon 1
  dpuq audit --command "python my_release.py {data} {seed}" --data scores.npy --samples 2000
  dpuq audit --command "dpuq calibrate --scores {data} --alpha 0.1 --epsilon 1 --seed {seed} \\
      -o -" --json-field threshold --generate scores --n 50 --samples 1000 --claimed-epsilon 1
"""

KINDS = ("scores", "labelled_scores", "rows", "losses")
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan", re.IGNORECASE)


def register(subparsers) -> None:
    p = add_command(subparsers, "audit", HELP, DESCRIPTION, EPILOG)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--entry-point", metavar="MODULE:FUNCTION", help="release(data, seed)")
    what.add_argument(
        "--command", metavar="TEMPLATE", help="a release command line with {data} and {seed}"
    )
    p.add_argument("--json-field", metavar="NAME", help="with --command: the JSON field released")
    data = p.add_mutually_exclusive_group(required=True)
    data.add_argument("--data", metavar="FILE", help="the data set D (one array)")
    data.add_argument("--generate", choices=KINDS, help="dpuq's worst-case data sets of a shape")
    p.add_argument("--n", type=int, default=50, help="records of a generated data set (default 50)")
    p.add_argument(
        "--neighbours",
        choices=KINDS,
        help="how D' differs (default: --generate's kind, else scores)",
    )
    p.add_argument(
        "--bounds", type=float_arg, nargs=2, metavar=("LOW", "HIGH"), help="public bounds of rows"
    )
    p.add_argument("--samples", type=int, required=True, help="runs per data set (>= 40)")
    p.add_argument("--confidence", type=float_arg, default=0.95, help="default 0.95")
    p.add_argument(
        "--delta", type=float_arg, default=0.0, help="audit (epsilon, delta)-DP (default 0)"
    )
    p.add_argument(
        "--claimed-epsilon", type=float_arg, metavar="E", help="the epsilon the release claims"
    )
    p.add_argument(
        "--seed", type=seed_arg, default=None, help="the auditor's seed (reproducible audit)"
    )
    p.set_defaults(func=run)


def _entry_point(spec: str):
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError("--entry-point must be MODULE:FUNCTION")
    sys.path.insert(0, str(Path.cwd()))
    try:
        function = getattr(importlib.import_module(module), name, None)
    finally:
        sys.path.pop(0)
    if not callable(function):
        raise ValueError(f"--entry-point: {spec} is not a callable")

    def release(data, seed):
        try:
            return function(data, seed)
        except Exception as exc:  # user code: any failure becomes one line
            raise ValueError(f"--entry-point: the release raised {type(exc).__name__}") from exc

    return release


def _save(data, folder: Path, suffix: str, tag: str) -> Path:
    path = folder / f"{tag}{suffix}"
    arr = np.asarray(data, dtype=float)
    if suffix == ".npy":
        np.save(path, arr)
    else:
        np.savetxt(path, arr.reshape(arr.shape[0], -1), delimiter=",", fmt="%.17g")
    return path


def _command_release(template: str, field: str | None, suffix: str, folder: Path):
    """A release(data, seed) that runs ``template`` with the data saved to a file."""
    if "{data}" not in template or "{seed}" not in template:
        raise ValueError("--command must contain {data} and {seed}")
    saved: dict[tuple, Path] = {}

    def release(data, seed):
        # keyed by content: every draw gets a fresh copy of its data set, and id() is reused
        arr = np.ascontiguousarray(data)
        key = (arr.dtype.str, arr.shape, hashlib.sha256(arr.tobytes()).hexdigest())
        if key not in saved:
            saved[key] = _save(data, folder, suffix, f"data{len(saved)}")
        argv = [
            a.replace("{data}", str(saved[key])).replace("{seed}", str(seed))
            for a in shlex.split(template)
        ]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ValueError(f"--command exited with status {done.returncode}")
        if field is not None:
            return json.loads(done.stdout)[field]
        values = [float(t) for t in NUMBER.findall(done.stdout)]
        if not values:
            raise ValueError("--command printed no number")
        return np.array(values)

    return release


def _datasets(args):
    from dpuq.audit import worst_case_data
    from dpuq.io import read_array

    if args.data is not None:
        return [read_array(args.data, "--data")], Path(args.data).suffix or ".npy"
    options = {"bounds": tuple(args.bounds)} if args.generate == "rows" else {}
    return worst_case_data(args.generate, args.n, **options), ".npy"


def run(args: argparse.Namespace) -> int:
    from dpuq.audit import audit_release

    if args.samples < 40:
        raise ValueError("--samples must be >= 40")
    if args.generate is not None and args.n < 2:
        raise ValueError("--n must be >= 2")
    kind = args.neighbours or args.generate or "scores"
    if (kind == "rows" or args.generate == "rows") and args.bounds is None:
        raise ValueError("--bounds LOW HIGH is needed for rows")
    if kind == "labelled_scores":
        raise ValueError("--neighbours labelled_scores needs a Python entry point (two arrays)")
    datasets, suffix = _datasets(args)
    options = {"bounds": tuple(args.bounds)} if kind == "rows" else {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.entry_point is not None:
            release = _entry_point(args.entry_point)
        else:
            release = _command_release(args.command, args.json_field, suffix, Path(tmp))
        audit = audit_release(
            release,
            datasets,
            neighbours=kind,
            n_samples=args.samples,
            confidence=args.confidence,
            delta=args.delta,
            claimed_epsilon=args.claimed_epsilon,
            random_state=args.seed,
            neighbour_options=options,
        )
    print(audit)
    return 1 if audit.violated else 0
