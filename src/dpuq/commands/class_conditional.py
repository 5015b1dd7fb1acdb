"""``dpuq calibrate --class-conditional`` and its ``dpuq predict`` side: one threshold per class.

Kept apart from :mod:`dpuq.commands.calibrate` and :mod:`dpuq.commands.predict`, which call in
here through one line each.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dpuq.commands._args import charged_release, report_sets, write_release

HELP = (
    "release one threshold per class (Mondrian sets: coverage >= 1 - alpha for every class, "
    "epsilon-DP in total); needs --probs and --labels"
)


def run_calibrate(args: argparse.Namespace, out, alpha: float, epsilon: float) -> int:
    """The body of ``dpuq calibrate --class-conditional`` (inputs checked before the release)."""
    from dpuq._validation import check_labels
    from dpuq.commands._scores import calibration_scores, input_mode
    from dpuq.conformal.class_conditional import calibrate_by_class
    from dpuq.conformal.release_io import calibration_record
    from dpuq.io import read_vector

    if input_mode(args) != "classification":
        raise ValueError("--class-conditional needs --probs FILE and --labels FILE")
    if getattr(args, "method", "certified") != "certified":
        raise ValueError("--class-conditional uses the certified method: drop --method paper")
    scores, meta = calibration_scores(args)
    labels = read_vector(args.labels, "--labels", integer=True)
    check_labels(labels, meta["n_classes"], scores.shape[0], "--labels")  # before the charge
    seeded = args.seed is not None
    what = f"dpuq calibrate --class-conditional (classification, score {meta['score']['name']})"
    # lock the output, release, write; deferred: charged by the release after its own checks
    # (bins, the work cap on n_classes x n_bins, the schedule), so a refused setting costs nothing
    settings = {
        "alpha": alpha,
        "n": int(scores.shape[0]),
        "n_classes": meta["n_classes"],
        "method": "certified (class-conditional)",
        "score": meta["score"]["name"],
    }
    with charged_release(out, args, epsilon, what, settings, deferred=True) as (pending, hook):
        cal = calibrate_by_class(
            scores,
            labels,
            meta["n_classes"],
            alpha=alpha,
            epsilon=epsilon,
            n_bins=args.bins,
            random_state=args.seed,
            ledger=hook,
            dataset=args.dataset,
        )
        record = {**calibration_record(cal, **meta), "seeded": seeded}
        write_release(pending, args, what, hook.receipt, record)
    shown = ", ".join(f"{t:.4g}" for t in cal.thresholds)
    print(
        f"released {cal.n_classes} class thresholds [{shown}] from n = {cal.n} calibration "
        f"scores at alpha = {cal.alpha:g} per class, epsilon = {cal.epsilon:g} in total "
        f"(replace-one, pure DP)\nbins m = {cal.n_bins}, padding P = {cal.pad}; a threshold of "
        f"1 puts that class in every set\nwrote {out}",
        file=sys.stdout,
    )
    return 0


def check_calibration(cal: dict[str, Any], label: str) -> dict[str, Any]:
    """Check the class-conditional fields of a calibration JSON; returns it."""
    if cal.get("task") != "classification":
        raise ValueError(f"{label}: class-conditional calibrations are for classification")
    k = cal.get("n_classes")
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ValueError(f"{label}: n_classes must be an integer >= 2, got {k!r}")
    t = cal.get("thresholds")
    if (
        not isinstance(t, list)
        or len(t) != k
        or any(isinstance(v, bool) or not isinstance(v, int | float) for v in t)
        or not all(0.0 <= v <= 1.0 for v in t)
    ):
        raise ValueError(f"{label}: thresholds must be a list of {k} numbers in [0, 1]")
    return cal


def run_predict(args: argparse.Namespace, cal: dict[str, Any], out) -> int:
    """Prediction sets from a class-conditional calibration: label y against ``thresholds[y]``."""
    from dpuq.conformal.class_conditional import class_prediction_sets
    from dpuq.conformal.release_io import CLASSIFICATION_SCORES

    score = cal.get("score", {})
    name = score.get("name") if isinstance(score, dict) else None
    if name not in CLASSIFICATION_SCORES:
        raise ValueError(f"--calibration: unknown classification score {name!r}")
    given = [f for f in ("probs", "logits") if getattr(args, f, None) is not None]
    if len(given) != 1 or args.scores is not None or args.predictions is not None:
        raise ValueError(
            f"this calibration is class-conditional (score {name}): pass --probs FILE "
            "(or --logits FILE if it was calibrated on logits)"
        )
    from dpuq.commands._scores import new_class_scores

    sets = class_prediction_sets(new_class_scores(args, cal, given[0]), cal["thresholds"])
    return report_sets(out, sets, "class-conditional prediction sets")
