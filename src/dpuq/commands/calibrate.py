"""``dpuq calibrate``: release an ε-DP conformal threshold from a user's own files."""

from __future__ import annotations

import argparse
import sys

from dpuq.commands._args import (  # noqa: F401  (MAX_BINS: also re-exported)
    MAX_BINS,
    add_command,
    add_seed_argument,
    bins_arg,
    charged_release,
    float_arg,
    write_release,
)
from dpuq.commands._outputs import levels_arg, resolve_alpha
from dpuq.commands._scores import (  # noqa: F401  (re-exported for dpuq predict)
    calibration_scores,
    input_mode,
    read_probabilities,
)
from dpuq.conformal.release_io import (  # noqa: F401  (re-exported for dpuq predict)
    CALIBRATION_FORMAT,
    CALIBRATION_FORMAT_VERSION,
    CLASSIFICATION_SCORES,
    REGRESSION_SCORES,
)

SEEDED_LINE = (
    "seeded (--seed): this release is reproducible from the seed; it is private only while "
    "the seed stays secret"
)

HELP = "release an epsilon-DP conformal threshold from your calibration files"

DESCRIPTION = """\
Release a conformal threshold with epsilon-differential privacy from held-out calibration
data (data NOT used to train the model), and write it, with its privacy report, to a JSON
file that `dpuq predict` turns into prediction sets or intervals for new data.

Give exactly one kind of input:
  --scores FILE                        your own conformity scores in [0, 1], one per person
                                       (low = conforms); sets are {y : S(x, y) <= threshold}
  --probs FILE --labels FILE           classification: (n, K) class probabilities (rows sum
                                       to 1) and true class indices 0..K-1;
                                       --score lac|aps|raps|top_k
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


def register(subparsers) -> None:
    p = add_command(subparsers, "calibrate", HELP, DESCRIPTION, EPILOG)
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
        type=levels_arg,
        help="miscoverage level in (0, 0.5]: sets cover with probability >= 1 - alpha; a "
        "comma-separated list (e.g. 0.05,0.1,0.2) releases one threshold per level jointly, "
        "for the one --epsilon in total",
    )
    release.add_argument(
        "--confidence-level",
        type=levels_arg,
        metavar="LEVEL",
        help="instead of --alpha: the coverage 1 - alpha (e.g. 0.9, or 0.8,0.9,0.95)",
    )
    release.add_argument(
        "--epsilon", type=float_arg, required=True, help="privacy parameter > 0 (no default)"
    )
    release.add_argument(
        "--score",
        choices=CLASSIFICATION_SCORES + REGRESSION_SCORES,
        help="score: lac (default for --probs), aps, raps; absolute (default for "
        "--predictions) or cqr (two columns of quantiles: never inferred from the file)",
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
        "or 'paper' (Algorithm 3 of Angelopoulos et al. 2022); see docs/explanation/calibration.md",
    )
    release.add_argument(
        "--strict",
        action="store_true",
        help="refuse a release that public quantities alone decide (full sets whatever the "
        "data), before any charge; without it such a release charges nothing and says why",
    )
    add_seed_argument(release)
    from dpuq.commands.class_conditional import HELP as CLASS_CONDITIONAL_HELP

    release.add_argument("--class-conditional", action="store_true", help=CLASS_CONDITIONAL_HELP)
    from dpuq.commands.budget import add_release_output_arguments

    add_release_output_arguments(p)
    p.set_defaults(func=run)


# ----------------------------------------------------------------- the command
def run(args: argparse.Namespace) -> int:
    from dpuq._validation import check_epsilon
    from dpuq.conformal.calibration import calibrate
    from dpuq.conformal.release_io import calibration_record
    from dpuq.io import check_output_path

    # Everything that can fail is checked before the release: a failed write after it would
    # make the user run it again and spend epsilon twice.
    out = check_output_path(args.output, "-o", (".json",), force=args.force)
    alpha = resolve_alpha(args)
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    if isinstance(alpha, list):
        if getattr(args, "class_conditional", False):
            raise ValueError("--class-conditional takes one level, not a list")
        if args.method != "certified":
            raise ValueError("several levels need --method certified")
    if getattr(args, "class_conditional", False):
        from dpuq.commands.class_conditional import run_calibrate

        return run_calibrate(args, out, alpha, epsilon)
    scores, meta = calibration_scores(args)
    # Order: lock the output path (refused here if it exists or is being written), charge the
    # ledger (committed), release, write atomically; a failure after the charge keeps it.
    what = f"dpuq calibrate ({meta['task']}, score {meta['score']['name']})"
    seeded = args.seed is not None
    settings = {
        "alpha": alpha,
        "n": int(scores.shape[0]) if hasattr(scores, "shape") else None,
        "method": args.method,
        "score": meta["score"]["name"],
        "column": getattr(args, "column", None),
    }
    # deferred: the release charges what it costs (0 when public quantities decide it)
    with charged_release(out, args, epsilon, what, settings, deferred=True) as (pending, hook):
        cal = calibrate(
            scores,
            alpha=alpha,
            epsilon=epsilon,
            n_bins=args.bins,
            method=args.method,
            random_state=args.seed,
            ledger=hook,
            dataset=args.dataset,
            strict=args.strict,
        )
        record = {**calibration_record(cal, **meta), "seeded": seeded}
        write_release(pending, args, what, hook.receipt, record)
    if isinstance(alpha, list):
        _print_levels(cal, args, out, meta)
        return 0
    if not cal.informative:
        state = (
            "NOT informative: full sets / the whole line; public quantities alone decided "
            "it, so it cost epsilon = 0 and charged nothing"
        )
    elif cal.threshold >= 1.0:
        state = "informative level, but this draw is 1: full sets / the whole line"
    else:
        state = "informative"
    print(
        f"released threshold {cal.threshold:.6g} ({state}) from n = {cal.n} calibration "
        f"scores at alpha = {cal.alpha:g}, epsilon = {cal.epsilon:g} (pure DP, delta = 0)\n"
        f"score: {meta['score']['name']}\n"
        + (
            f"level q̃ = {cal.level:.4f}, bins m = {cal.n_bins}, gamma = {cal.gamma:.4g} "
            f"(method paper)\n"
            if cal.method == "paper"
            else f"target rank {cal.level * cal.n:.2f} of {cal.n}, bins m = {cal.n_bins}, "
            f"certified coverage {cal.certified_coverage:.4f} (method certified)\n"
        )
        + _in_units(cal.threshold, meta)
        + (f"{SEEDED_LINE}\n" if args.seed is not None else "")
        + f"wrote {out}",
        file=sys.stdout,
    )
    return 0


def _in_units(threshold: float, meta: dict) -> str:
    """Regression: the threshold in the outcome's units (``threshold * B``), as a line."""
    if meta["task"] != "regression":
        return ""
    if threshold >= 1.0:
        return "in outcome units: no bound (threshold 1: the whole line)\n"
    bound = meta["score"]["bound"]
    width = threshold * bound
    what = (
        f"intervals prediction +/- {width:.6g}"
        if meta["score"]["name"] == "absolute"
        else f"quantile band widened by {width:.6g} on each side"
    )
    return f"in outcome units: threshold x B = {threshold:.6g} x {bound:g} = {width:.6g}: {what}\n"


def _print_levels(cal, args, out, meta) -> None:
    """The summary of a joint release of several levels (released values only)."""
    lines = [
        f"released {len(cal.alpha)} thresholds jointly from n = {cal.n} calibration scores at "
        f"epsilon = {cal.epsilon:g} in total (pure DP, delta = 0), bins m = {cal.n_bins}",
        f"score: {meta['score']['name']}",
    ]
    for a, t, ok, c in zip(cal.alpha, cal.threshold, cal.informative, cal.certified_coverage,
                           strict=True):  # fmt: skip
        state = "informative" if ok else "NOT informative: full sets / the whole line"
        lines.append(f"  alpha = {a:g}: threshold {t:.6g} ({state}), certified coverage {c:.4f}")
        if meta["task"] == "regression":
            lines.append("    " + _in_units(t, meta).strip())
    if args.seed is not None:
        lines.append(SEEDED_LINE)
    lines.append(f"wrote {out}")
    print("\n".join(lines), file=sys.stdout)
