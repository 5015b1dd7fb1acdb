"""``dpuq predict``: prediction sets or intervals for new data from a released calibration."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from dpuq.commands._args import add_command, report_sets
from dpuq.commands._scores import new_class_scores

HELP = "prediction sets or intervals for new data from a calibration JSON"

DESCRIPTION = """\
Turn a calibration released by `dpuq calibrate` into prediction sets (classification, or
your own scores) or prediction intervals (regression) for new data. Uses only the released
values in the JSON file: no privacy cost, run it as often as you like.

Give the new data in the same form as at calibration:
  --probs FILE         classification: (n, K) class probabilities -> sets of classes
  --logits FILE        classification: (n, K) logits, turned into probabilities with the
                       calibration's softmax temperature (1 if it was calibrated from --probs)
  --scores FILE        your own scores: (n, K) matrix, entry [i, k] = S(x_i, candidate k)
                       -> the candidates k with S <= threshold
  --predictions FILE   regression: (n,) point predictions ('absolute') or (n, 2)
                       lower/upper quantiles ('cqr') -> intervals

Output by suffix: .csv (sets: a 0/1 column per class; intervals: columns lower,upper with
inf for unbounded), .json (sets: the list of classes in each set; intervals: lists) or .npy.
A calibration that was not informative (threshold 1) gives full sets / the whole line.
"""

EPILOG = """\
examples:
  dpuq predict --calibration calibration.json --probs test_probs.npy -o sets.csv
  dpuq predict --calibration calibration.json --predictions test_pred.csv -o intervals.csv
"""


def register(subparsers) -> None:
    p = add_command(subparsers, "predict", HELP, DESCRIPTION, EPILOG)
    p.add_argument(
        "--calibration",
        required=True,
        metavar="FILE.json",
        help="the file written by `dpuq calibrate`",
    )
    p.add_argument("--probs", metavar="FILE", help="class probabilities of new data, (n, K)")
    p.add_argument("--logits", metavar="FILE", help="class logits of new data, (n, K)")
    p.add_argument("--scores", metavar="FILE", help="score matrix of new data, (n, K)")
    p.add_argument(
        "--predictions", metavar="FILE", help="regression predictions of new data, (n,) or (n, 2)"
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="where to write the sets or intervals (.csv, .json or .npy; '-' for stdout); "
        "an existing file is overwritten (predicting costs no privacy)",
    )
    p.add_argument(
        "--format",
        choices=("csv", "json"),
        default=None,
        help="the text format with -o - (default csv)",
    )
    p.add_argument("--force", action="store_true", help="accepted for compatibility (no effect)")
    p.set_defaults(func=run)


def _field(cal: dict, key: str, label: str):
    if key not in cal:
        raise ValueError(f"{label}: missing field {key!r}; was it written by `dpuq calibrate`?")
    return cal[key]


def load_calibration(path: str) -> dict[str, Any]:
    """Read and check a calibration JSON written by ``dpuq calibrate`` (or ``save``): format
    version, threshold on its grid, fields that agree (:mod:`dpuq.conformal.release_io`)."""
    from dpuq.conformal.release_io import CALIBRATION_FORMAT, read_calibration
    from dpuq.io import read_json

    label = f"--calibration {path!r}"
    raw = read_json(path, "--calibration")
    if isinstance(raw, dict) and raw.get("class_conditional"):
        if raw.get("format") != CALIBRATION_FORMAT:
            raise ValueError(f"{label}: not a dpuq calibration file (format {raw.get('format')!r})")
        from dpuq.commands.class_conditional import check_calibration

        return check_calibration(raw, label)
    return read_calibration(path, "--calibration")


def _expect(args, flag: str, task: str, score: str) -> str:
    given = [
        f
        for f in ("probs", "logits", "scores", "predictions")
        if getattr(args, f, None) is not None
    ]
    what = f"this calibration is for {task} (score {score})"
    if flag not in given:
        raise ValueError(f"{what}: pass --{flag} FILE")
    others = [g for g in given if g != flag]
    if others:
        raise ValueError(f"{what}: --{others[0]} does not apply, pass only --{flag} FILE")
    return getattr(args, flag)


def run(args: argparse.Namespace) -> int:
    from dpuq.commands._outputs import summary_stream, write_output
    from dpuq.conformal.regression_scores import absolute_residual_intervals, cqr_intervals
    from dpuq.conformal.sets import prediction_sets
    from dpuq.io import check_output_path, read_matrix

    to_stdout = args.output == "-"
    if args.format is not None and not to_stdout:
        raise ValueError("--format applies to -o - only (files take their format from the suffix)")
    out = (
        "-" if to_stdout else check_output_path(args.output, "-o", (".csv", ".json", ".npy"))
    )  # predicting costs no privacy: an existing file is overwritten
    cal = load_calibration(args.calibration)
    if isinstance(cal.get("threshold"), list):
        return _run_levels(args, cal, out)
    if cal.get("class_conditional"):
        from dpuq.commands.class_conditional import run_predict

        return run_predict(args, cal, out)
    task, score = cal["task"], cal["score"]
    name, threshold = score["name"], float(cal["threshold"])
    full = "" if cal.get("informative", threshold < 1.0) else " (uninformative release)"
    if task == "regression":
        path = _expect(args, "predictions", task, name)
        want = 1 if name == "absolute" else 2
        pred = read_matrix(path, "--predictions", columns=want)
        if name == "absolute":
            intervals = absolute_residual_intervals(pred[:, 0], threshold, bound=score["bound"])
        else:
            intervals = cqr_intervals(pred, threshold, bound=score["bound"])
        write_output(out, "intervals", intervals, fmt=args.format)
        width = intervals[:, 1] - intervals[:, 0]
        shown = "inf" if not np.all(np.isfinite(width)) else f"{np.mean(width):.6g}"
        print(
            f"{intervals.shape[0]} intervals at threshold {threshold:.6g}{full}; "
            f"mean width {shown}\nwrote {'stdout' if out == '-' else out}",
            file=summary_stream(out),
        )
        return 0
    matrix = _score_matrix(args, cal, task, score, name)
    sets = prediction_sets(matrix, threshold)
    what = f"prediction sets at threshold {threshold:.6g}{full}"
    return report_sets(out, sets, what, args.format)


def _run_levels(args: argparse.Namespace, cal: dict[str, Any], out) -> int:
    """``dpuq predict`` for a joint release of several levels: one set or interval per level."""
    from dpuq.commands._outputs import summary_stream, write_output
    from dpuq.conformal.regression_scores import absolute_residual_intervals, cqr_intervals
    from dpuq.conformal.sets import prediction_sets
    from dpuq.io import read_matrix

    task, score = cal["task"], cal["score"]
    name, thresholds, alphas = score["name"], cal["threshold"], cal["alpha"]
    shown = "stdout" if out == "-" else out
    if task == "regression":
        pred = read_matrix(
            _expect(args, "predictions", task, name), "--predictions",
            columns=1 if name == "absolute" else 2,
        )  # fmt: skip
        fn = absolute_residual_intervals if name == "absolute" else cqr_intervals
        arg = pred[:, 0] if name == "absolute" else pred
        arr = np.stack([fn(arg, float(t), bound=score["bound"]) for t in thresholds], axis=-1)
        write_output(out, "intervals", arr, levels=alphas, fmt=args.format)
        widths = arr[:, 1] - arr[:, 0]
        text = ", ".join(
            f"{1 - a:g}: {np.mean(w):.6g}" if np.all(np.isfinite(w)) else f"{1 - a:g}: inf"
            for a, w in zip(alphas, widths.T, strict=True)
        )
        print(f"{arr.shape[0]} intervals at {len(alphas)} levels; mean width {text}\n"
              f"wrote {shown}", file=summary_stream(out))  # fmt: skip
        return 0
    matrix = _score_matrix(args, cal, task, score, name)
    sets = np.stack([prediction_sets(matrix, float(t)) for t in thresholds], axis=-1)
    write_output(out, "sets", sets, classes=list(range(sets.shape[1])), levels=alphas,
                 fmt=args.format)  # fmt: skip
    sizes = sets.sum(axis=1).mean(axis=0)
    text = ", ".join(f"{1 - a:g}: {s:.3g}" for a, s in zip(alphas, sizes, strict=True))
    print(f"{sets.shape[0]} prediction sets at {len(alphas)} levels; mean size {text} of "
          f"{sets.shape[1]}\nwrote {shown}", file=summary_stream(out))  # fmt: skip
    return 0


def _score_matrix(args, cal: dict, task: str, score: dict, name: str):
    """The (n, K) score matrix of the new points, from --probs/--logits (checked against the
    release's recorded score input and classes) or from --scores."""
    from dpuq._validation import check_scores
    from dpuq.io import read_matrix

    if task == "classification":
        flag = "logits" if getattr(args, "logits", None) is not None else "probs"
        _expect(args, flag, task, name)
        return new_class_scores(args, cal, flag)
    path = _expect(args, "scores", task, name)
    return check_scores(read_matrix(path, "--scores"), f"--scores {path!r}", ndim=2)
