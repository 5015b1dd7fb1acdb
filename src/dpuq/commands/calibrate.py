"""``dpuq calibrate``: release an ε-DP conformal threshold from a user's own files."""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from typing import Any

import numpy as np

from dpuq.conformal.release_io import (  # noqa: F401  (re-exported for dpuq predict)
    CALIBRATION_FORMAT,
    CALIBRATION_FORMAT_VERSION,
    CLASSIFICATION_SCORES,
    REGRESSION_SCORES,
)

#: Largest --bins accepted: the edges array of 10^7 bins takes 80 MB (auto never goes beyond).
MAX_BINS = 10_000_000
SEEDED_LINE = (
    "seeded (--seed): this release is reproducible from the seed; it is private only while "
    "the seed stays secret"
)

DESCRIPTION = """\
Release a conformal threshold with epsilon-differential privacy from held-out calibration
data (data NOT used to train the model), and write it, with its privacy report, to a JSON
file that `dpuq predict` turns into prediction sets or intervals for new data.

Give exactly one kind of input:
  --scores FILE                        your own conformity scores in [0, 1], one per person
                                       (low = conforms); sets are {y : S(x, y) <= threshold}
  --probs FILE --labels FILE           classification: (n, K) class probabilities (rows sum
                                       to 1) and true class indices 0..K-1; --score lac|aps|raps
  --logits FILE --labels FILE          classification from (n, K) logits: probabilities are
                                       softmax(logits / T), T = --temperature (default 1, public:
                                       never fitted on the calibration data)
  --predictions FILE --targets FILE --bound B
                                       regression: one column of point predictions (score
                                       'absolute': min(|y - pred| / B, 1)) or two columns of
                                       lower/upper quantile predictions (score 'cqr')

Files: .npy, .csv/.tsv/.txt (optional header line) or .parquet (needs pyarrow).

Privacy: epsilon-DP (delta = 0) for the calibration people, under replace-one neighbours with
n public. Each run is a fresh release: running it twice on the same people spends 2 epsilon;
--dataset NAME (and --ledger PATH) charges it to that data set's budget first and refuses it
when too little is left (see `dpuq budget`).
The regression bound B must be public (domain knowledge or training data), never computed
from the calibration data. Plan n and epsilon first with `dpuq plan`.
"""

EPILOG = """\
examples:
  dpuq plan --n 1000 --alpha 0.1 --epsilon 1
  dpuq calibrate --probs cal_probs.npy --labels cal_labels.csv --alpha 0.1 --epsilon 1 \\
      -o calibration.json
  dpuq calibrate --scores scores.csv --alpha 0.1 --epsilon 0.5 --bins 200 -o calibration.json
  dpuq calibrate --predictions cal_pred.csv --targets cal_y.csv --bound 50 --alpha 0.1 \\
      --epsilon 2 -o calibration.json
"""


# ----------------------------------------------------------------- argument types
def bins_arg(text: str) -> str | int:
    """``auto`` or an integer >= 2."""
    if text == "auto":
        return "auto"
    try:
        m = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'auto' or an integer >= 2, got {text!r}"
        ) from None
    if not 2 <= m <= MAX_BINS:
        raise argparse.ArgumentTypeError(
            f"must be 'auto' or an integer from 2 to {MAX_BINS:,}, got {text!r}"
        )
    return m


def seed_arg(text: str) -> int:
    try:
        s = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if s < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return s


def float_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="release an epsilon-DP conformal threshold from your calibration files",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inputs = p.add_argument_group("inputs (one kind)")
    inputs.add_argument("--scores", metavar="FILE", help="conformity scores in [0, 1], shape (n,)")
    inputs.add_argument(
        "--column",
        metavar="NAME",
        help="the --scores column of a .parquet or headed .csv file; with it (or for files "
        "of 64 MB and more) the file is read in chunks, never whole",
    )
    inputs.add_argument("--probs", metavar="FILE", help="class probabilities, shape (n, K)")
    inputs.add_argument(
        "--logits",
        metavar="FILE",
        help="class logits, shape (n, K): probabilities softmax(logits / --temperature)",
    )
    inputs.add_argument("--labels", metavar="FILE", help="true class indices 0..K-1, shape (n,)")
    inputs.add_argument(
        "--predictions",
        metavar="FILE",
        help="regression predictions: (n,) point predictions or (n, 2) lower/upper quantiles",
    )
    inputs.add_argument("--targets", metavar="FILE", help="true regression outcomes, shape (n,)")
    inputs.add_argument(
        "--bound",
        type=float_arg,
        metavar="B",
        help="public bound B > 0 on the regression residuals (never from the calibration data)",
    )
    release = p.add_argument_group("release")
    release.add_argument(
        "--alpha",
        type=float_arg,
        required=True,
        help="miscoverage level in (0, 0.5]: sets cover with probability >= 1 - alpha",
    )
    release.add_argument(
        "--epsilon", type=float_arg, required=True, help="privacy parameter > 0 (no default)"
    )
    release.add_argument(
        "--score",
        choices=CLASSIFICATION_SCORES + REGRESSION_SCORES,
        help="score: lac (default for --probs), aps, raps; absolute (default for one column of "
        "--predictions) or cqr (default for two columns)",
    )
    release.add_argument(
        "--temperature",
        type=float_arg,
        metavar="T",
        help="softmax temperature T > 0 for --logits (default 1); public: fixed in advance or "
        "fitted on other people, never on the calibration data",
    )
    release.add_argument("--lam", type=float_arg, help="RAPS penalty λ (default 0.01)")
    release.add_argument("--k-reg", type=int, help="RAPS ranks free of penalty (default 5)")
    release.add_argument(
        "--bins",
        type=bins_arg,
        default="auto",
        metavar="auto|N",
        help="number of bins m: 'auto' (default: data-independent choice, no privacy cost) "
        "or an integer >= 2",
    )
    release.add_argument(
        "--method",
        choices=("certified", "paper"),
        default="certified",
        help="calibration method: 'certified' (default: rank utility at the certified level) "
        "or 'paper' (Algorithm 3 of Angelopoulos et al. 2022); see docs/calibration.md",
    )
    release.add_argument(
        "--seed",
        type=seed_arg,
        default=None,
        help="seed for a reproducible run: experiments only, since anyone who knows the seed "
        "can undo the noise (default: fresh OS entropy); the output then says 'seeded'",
    )
    from dpuq.commands.class_conditional import HELP as CLASS_CONDITIONAL_HELP

    release.add_argument("--class-conditional", action="store_true", help=CLASS_CONDITIONAL_HELP)
    out = p.add_argument_group("output")
    out.add_argument(
        "-o", "--output", required=True, metavar="FILE.json", help="where to write the release"
    )
    out.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    from dpuq.commands.budget import add_ledger_arguments

    add_ledger_arguments(p)
    p.set_defaults(func=run)


# ----------------------------------------------------------------- inputs to scores
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
    """The regression score from ``--score`` and the predictions' shape (checked)."""
    if n_columns not in (1, 2):
        raise ValueError(
            "--predictions must have 1 column (point predictions) or 2 (lower and upper "
            f"quantiles), got {n_columns}"
        )
    default = "absolute" if n_columns == 1 else "cqr"
    name = args.score or default
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
    seed = {"random_state": args.seed} if params.get("randomized") else {}
    scores = score_function(name)(probs, labels, **params, **seed)
    meta = {"task": "classification", "score": {"name": name, **params}, **input_meta}
    meta["n_classes"] = int(probs.shape[1])
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
        return check_probabilities(raw, f"--probs {args.probs!r}"), {}
    if temperature is None:
        given = getattr(args, "temperature", None)
        temperature = 1.0 if given is None else check_temperature(given, "--temperature")
    probs = softmax(read_matrix(logits, "--logits"), temperature, name=f"--logits {logits!r}")
    return probs, {"input": "logits", "temperature": temperature}


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


# ----------------------------------------------------------------- the command
def run(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from dpuq._atomic import release_file
    from dpuq._validation import check_alpha, check_epsilon
    from dpuq.commands.budget import open_ledger
    from dpuq.conformal.calibration import calibrate
    from dpuq.conformal.release_io import calibration_record
    from dpuq.io import check_output_path, json_text

    # Everything that can fail is checked before the release: a failed write after it would
    # make the user run it again and spend epsilon twice.
    out = check_output_path(args.output, "-o", (".json",), force=args.force)
    alpha = check_alpha(args.alpha, "--alpha")
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    if getattr(args, "class_conditional", False):
        from dpuq.commands.class_conditional import run_calibrate

        return run_calibrate(args, out, alpha, epsilon)
    scores, meta = calibration_scores(args)
    ledger = open_ledger(args)
    if args.seed is not None:
        warnings.warn(
            "--seed makes the noise reproducible: anyone who knows the seed can undo it; "
            "use it for experiments only, never for a release",
            UserWarning,
            stacklevel=1,
        )
    # Order: lock the output path (refused here if it exists or is being written), charge the
    # ledger (committed), release, write atomically; a failure after the charge keeps it.
    what = f"dpuq calibrate ({meta['task']}, score {meta['score']['name']})"
    seeded = args.seed is not None
    with release_file(out, force=args.force, name="-o") as pending:
        spend = (
            ledger.spend(args.dataset, epsilon, what=what, output=out, seeded=seeded)
            if ledger is not None
            else nullcontext()
        )
        with spend:
            cal = calibrate(
                scores,
                alpha=alpha,
                epsilon=epsilon,
                n_bins=args.bins,
                method=args.method,
                random_state=args.seed,
            )
            record = {**calibration_record(cal, **meta), "seeded": seeded}
            pending.write_text(json_text(record))
            pending.commit()
    if not cal.informative:
        state = "NOT informative: full sets / the whole line"
    elif cal.threshold >= 1.0:
        state = "informative level, but this draw is 1: full sets / the whole line"
    else:
        state = "informative"
    print(
        f"released threshold {cal.threshold:.6g} ({state}) from n = {cal.n} calibration "
        f"scores at alpha = {cal.alpha:g}, epsilon = {cal.epsilon:g} (pure DP, delta = 0)\n"
        + (
            f"level q̃ = {cal.level:.4f}, bins m = {cal.n_bins}, gamma = {cal.gamma:.4g} "
            f"(method paper)\n"
            if cal.method == "paper"
            else f"target rank {cal.level * cal.n:.2f} of {cal.n}, bins m = {cal.n_bins}, "
            f"certified coverage {cal.certified_coverage:.4f} (method certified)\n"
        )
        + (f"{SEEDED_LINE}\n" if args.seed is not None else "")
        + f"wrote {out}",
        file=sys.stdout,
    )
    return 0
