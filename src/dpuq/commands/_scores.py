"""Inputs to scores for ``dpuq calibrate``: which inputs were given, read them, score them.

Shared by the marginal release (:mod:`dpuq.commands.calibrate`), the class-conditional one
(:mod:`dpuq.commands.class_conditional`) and ``dpuq predict`` (probabilities from logits).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from dpuq.conformal.release_io import CLASSIFICATION_SCORES, REGRESSION_SCORES

__all__ = [
    "calibration_scores",
    "check_score_input",
    "input_mode",
    "new_class_scores",
    "read_probabilities",
    "regression_score_name",
]


def check_score_input(cal: dict, flag: str, label: str = "--calibration") -> float | None:
    """Refuse new data given as ``--probs``/``--logits`` when the release was calibrated on the
    other; returns the release's temperature for ``--logits``. Files written before the input
    was recorded (format version 1) hold ``"input": "logits"`` for logits and nothing for
    probabilities."""
    recorded = cal.get("input", "probabilities")
    given = "logits" if flag == "logits" else "probabilities"
    if recorded != given:
        if recorded == "logits":
            t = cal.get("temperature", 1.0)
            raise ValueError(
                f"{label}: this release was calibrated on logits (softmax temperature {t:g}): "
                "pass --logits FILE, not --probs"
            )
        raise ValueError(
            f"{label}: this release was calibrated on probabilities: pass --probs FILE, not "
            "--logits"
        )
    return float(cal.get("temperature", 1.0)) if given == "logits" else None


def _only(args, allowed: set[str], mode: str) -> None:
    given = {
        name
        for name in (
            "scores",
            "column",
            "probs",
            "logits",
            "labels",
            "predictions",
            "targets",
            "bound",
        )
        if getattr(args, name, None) is not None
    }
    extra = sorted(given - allowed)
    if extra:
        flags = ", ".join("--" + e for e in extra)
        raise ValueError(f"{flags} cannot be combined with {mode}")


def input_mode(args) -> str:
    """``scores``, ``classification`` or ``regression``, from which inputs were given."""
    modes = [
        name
        for name, flag in (
            ("scores", "scores"),
            ("classification", "probs"),
            ("classification", "logits"),
            ("regression", "predictions"),
        )
        if getattr(args, flag, None) is not None
    ]
    if not modes:
        raise ValueError(
            "give one input: --scores FILE, --probs FILE, --logits FILE or --predictions FILE"
        )
    if len(modes) > 1:
        raise ValueError("give only one of --scores, --probs, --logits, --predictions")
    return modes[0]


def regression_score_name(args, n_columns: int) -> str:
    """The regression score from ``--score`` (default absolute), checked against the
    predictions' shape. Never inferred from the shape: a one-column file with decimal commas
    read as two columns must not switch to CQR on its own; CQR needs ``--score cqr``."""
    if n_columns not in (1, 2):
        raise ValueError(
            "--predictions must have 1 column (point predictions) or 2 (lower and upper "
            f"quantiles), got {n_columns}"
        )
    if args.score is None and n_columns == 2:
        raise ValueError(
            "--predictions has 2 columns: for lower and upper quantiles (CQR) pass --score cqr; "
            "the score is never inferred from a file's shape (one column with decimal commas "
            "needs ';' as its delimiter)"
        )
    name = args.score or "absolute"
    if name not in REGRESSION_SCORES:
        raise ValueError(f"--score {name} is for classification; use absolute or cqr")
    want = 1 if name == "absolute" else 2
    if n_columns != want:
        raise ValueError(f"--score {name} needs {want} column(s) of --predictions, got {n_columns}")
    return name


def _classification_scores(args) -> tuple[np.ndarray, dict[str, Any]]:
    from dpuq.conformal.scores import score_function
    from dpuq.io import read_vector

    flag = "--logits" if getattr(args, "logits", None) is not None else "--probs"
    _only(args, {flag[2:], "labels"}, flag)
    if args.labels is None:
        raise ValueError(f"{flag} needs --labels FILE (the true class indices)")
    name = args.score or "lac"
    if name not in CLASSIFICATION_SCORES:
        raise ValueError(f"--score {name} is for regression; use lac, aps or raps with {flag}")
    probs, input_meta = read_probabilities(args)
    labels = read_vector(args.labels, "--labels", integer=True)
    params: dict[str, Any] = {}
    if name == "raps":
        params = {
            "lam": 0.01 if args.lam is None else args.lam,
            "k_reg": 5 if args.k_reg is None else args.k_reg,
        }
    elif args.lam is not None or args.k_reg is not None:
        raise ValueError("--lam and --k-reg apply to --score raps only")
    if name in ("aps", "raps"):  # randomized: deterministic APS piles up in the top bin
        params["randomized"] = True
    if labels.size != probs.shape[0]:
        raise ValueError(
            f"--labels has {labels.size} entries but --probs has {probs.shape[0]} rows"
        )
    from dpuq._validation import check_labels

    labels = check_labels(labels, probs.shape[1], probs.shape[0], "--labels")  # as typed
    seed = {"random_state": args.seed} if params.get("randomized") else {}
    scores = score_function(name)(probs, labels, **params, **seed)
    meta = {"task": "classification", "score": {"name": name, **params}, **input_meta}
    meta["n_classes"] = int(probs.shape[1])
    meta["classes"] = list(range(int(probs.shape[1])))  # columns are the classes 0..K-1
    return scores, meta


def read_probabilities(args, temperature: float | None = None) -> tuple[np.ndarray, dict]:
    """Class probabilities from ``--probs`` or ``softmax(--logits / T)``, and how they were made.

    ``temperature`` (from a calibration file) overrides ``args.temperature``.
    """
    from dpuq._validation import check_probabilities
    from dpuq.conformal.logits import check_temperature, softmax
    from dpuq.io import read_matrix

    logits = getattr(args, "logits", None)
    if logits is None:
        if getattr(args, "temperature", None) is not None:
            raise ValueError("--temperature applies to --logits only")
        raw = read_matrix(args.probs, "--probs", keep_float=True)
        return check_probabilities(raw, f"--probs {args.probs!r}"), {"input": "probabilities"}
    if temperature is None:
        given = getattr(args, "temperature", None)
        temperature = 1.0 if given is None else check_temperature(given, "--temperature")
    probs = softmax(read_matrix(logits, "--logits"), temperature, name=f"--logits {logits!r}")
    return probs, {"input": "logits", "temperature": temperature}


def new_class_scores(args, cal: dict, flag: str) -> np.ndarray:
    """The (n, K) scores of new points given as ``--probs``/``--logits`` (``flag``), for a
    classification release ``cal``: its recorded score input, temperature, number of classes
    and score (with its parameters) are those used. Shared by ``dpuq predict`` and its
    class-conditional side."""
    from dpuq.conformal.scores import score_function

    temperature = check_score_input(cal, flag)
    probs, _ = read_probabilities(args, temperature)
    if probs.shape[1] != cal["n_classes"]:
        raise ValueError(
            f"--{flag} {getattr(args, flag)!r} has {probs.shape[1]} classes but the calibration "
            f"has {cal['n_classes']}"
        )
    score = cal["score"]
    params = {k: v for k, v in score.items() if k != "name"}
    return score_function(score["name"])(probs, **params)


def _regression_scores(args) -> tuple[np.ndarray, dict[str, Any]]:
    from dpuq.conformal.regression_scores import (
        absolute_residual_scores,
        check_bound,
        cqr_scores,
    )
    from dpuq.io import read_matrix, read_vector

    _only(args, {"predictions", "targets", "bound"}, "--predictions")
    if args.targets is None:
        raise ValueError("--predictions needs --targets FILE (the true outcomes)")
    if args.bound is None:
        raise ValueError(
            "--predictions needs --bound B: a public bound on the residuals (domain knowledge "
            "or training data, never the calibration data)"
        )
    bound = check_bound(args.bound, "--bound")
    pred = read_matrix(args.predictions, "--predictions")
    name = regression_score_name(args, pred.shape[1])
    y = read_vector(args.targets, "--targets")
    if y.size != pred.shape[0]:
        raise ValueError(
            f"--targets has {y.size} entries but --predictions has {pred.shape[0]} rows"
        )
    if name == "absolute":
        scores = absolute_residual_scores(pred[:, 0], y, bound=bound)
    else:
        scores = cqr_scores(pred, y, bound=bound)
    return scores, {"task": "regression", "score": {"name": name, "bound": bound}}


def _user_scores(args) -> tuple[np.ndarray, dict[str, Any]]:
    from dpuq._validation import check_scores
    from dpuq.io import read_vector

    _only(args, {"scores", "column"}, "--scores")
    if args.score is not None:
        raise ValueError("--score names a built-in score; it cannot be used with --scores")
    column = getattr(args, "column", None)
    if column is not None or _is_large(args.scores):  # read in chunks, never whole
        from dpuq.scale.readers import open_scores

        scores = open_scores(args.scores, "--scores", column=column)
        return scores, {"task": "scores", "score": {"name": "user-supplied"}}
    scores = check_scores(read_vector(args.scores, "--scores"), f"--scores {args.scores!r}")
    return scores, {"task": "scores", "score": {"name": "user-supplied"}}


#: --scores files from this size on are read in chunks (dpuq.scale.readers).
CHUNKED_MIN_BYTES = 64 << 20


def _is_large(path) -> bool:
    try:
        return os.path.getsize(path) >= CHUNKED_MIN_BYTES
    except OSError:
        return False


def calibration_scores(args) -> tuple[np.ndarray, dict[str, Any]]:
    """The calibration scores in [0, 1] and what predict needs to know about them."""
    mode = input_mode(args)
    if mode == "classification":
        return _classification_scores(args)
    if mode == "regression":
        return _regression_scores(args)
    return _user_scores(args)
