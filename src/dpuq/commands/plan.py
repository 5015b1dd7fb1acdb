"""``dpuq plan``: what a private calibration will give, before any data is touched."""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction

import numpy as np

from dpuq.commands._args import add_command, bins_arg, float_arg
from dpuq.commands._outputs import levels_arg, resolve_alpha

AUTO_NOTE = "  (auto: data-independent, no privacy cost)"
DEFAULT_N_GRID = (100, 200, 500, 1000, 2000, 5000, 10000)
DEFAULT_EPSILON_GRID = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)

#: ``--bound`` given without a value (it was a flag before ``--suggest-bound``).
_NO_VALUE = float("nan")

HELP = "what a private calibration will give at n, alpha, epsilon (no data needed)"

DESCRIPTION = """\
Plan a private calibration before touching any data: uses only the public n (number of
calibration points), alpha and epsilon, so it costs no privacy.

method certified (default): the private threshold targets the rank rho* of the calibration
scores, the smallest rank whose coverage certificate
cert(rho) = (1/(n+1)) sum_k 1/(1 + (m-1) exp(-(epsilon/2)(rho - k + 1))) reaches 1 - alpha;
the non-private rank is about (1-alpha)(n+1), the private one adds about (2/epsilon) log(m-1).
method paper (Algorithm 3 of Angelopoulos et al. 2022): the binned quantile at the inflated
level q̃ = (n+1)(1-alpha) / (n(1-gamma*alpha)) + 2 log(m/(gamma*alpha)) / (epsilon*n).
If no level is informative the sets are full (the whole line for regression). This command
shows the level, the number of bins m* that `dpuq calibrate` will use, the expected threshold
on uniform scores (how much larger the private sets are than non-private ones, in coverage
units), and the smallest n and epsilon that give informative sets. --table prints the level
over a grid of n and epsilon: "how many calibration points do I need?"
"""

EPILOG = """\
examples:
  dpuq plan --n 1000 --alpha 0.1 --epsilon 1
  dpuq plan --n 1000 --alpha 0.1 --epsilon 1 --method paper
  dpuq plan --alpha 0.1 --table
  dpuq plan --alpha 0.05 --table --n 500 1000 5000 --epsilon 0.5 1 2
  dpuq plan --n 199 --alpha 0.05,0.1,0.2 --epsilon 1
  dpuq plan --n 159 --alpha 0.1 --epsilon 1 --suggest-bound --predictions cv_pred.csv \
      --targets y_train.csv --held-out
  dpuq plan --n 159 --alpha 0.1 --epsilon 1 --bound 125 --predictions cv_pred.csv \
      --targets y_train.csv --held-out
"""


def register(subparsers) -> None:
    p = add_command(subparsers, "plan", HELP, DESCRIPTION, EPILOG)
    p.add_argument(
        "--n", type=int, nargs="+", metavar="N", help="number of calibration points (public)"
    )
    p.add_argument(
        "--alpha",
        type=levels_arg,
        help="miscoverage level in (0, 0.5]: sets cover with probability >= 1 - alpha; a "
        "comma-separated list (e.g. 0.05,0.1,0.2) plans the joint release of `dpuq calibrate "
        "--alpha` with several levels: per level, the n and epsilon that serve it",
    )
    p.add_argument(
        "--confidence-level",
        type=levels_arg,
        metavar="LEVEL",
        help="instead of --alpha: the coverage 1 - alpha (e.g. 0.9, or 0.8,0.9,0.95)",
    )
    p.add_argument(
        "--epsilon", type=float_arg, nargs="+", metavar="E", help="privacy parameter(s) > 0"
    )
    p.add_argument(
        "--bins",
        type=bins_arg,
        default="auto",
        metavar="auto|N",
        help="number of bins m: 'auto' (default, as `dpuq calibrate`) or an integer >= 2",
    )
    p.add_argument(
        "--method",
        choices=("certified", "paper"),
        default="certified",
        help="calibration method, as `dpuq calibrate --method` (default certified)",
    )
    p.add_argument(
        "--table",
        action="store_true",
        help="print q̃ over a grid of n (rows) and epsilon (columns); --n and --epsilon then "
        f"take lists (defaults {' '.join(map(str, DEFAULT_N_GRID))} and "
        f"{' '.join(f'{e:g}' for e in DEFAULT_EPSILON_GRID)})",
    )
    bound = p.add_argument_group(
        "regression bound: suggest (--suggest-bound) or check (--bound B) the public bound B "
        "from TRAINING residuals"
    )
    bound.add_argument(
        "--suggest-bound",
        action="store_true",
        help="suggest B as a quantile of training residuals (never the calibration data); with "
        "--n and --epsilon, the quantile that keeps whole-line releases at most 1%% likely",
    )
    bound.add_argument(
        "--bound",
        type=float_arg,
        nargs="?",
        const=_NO_VALUE,
        metavar="B",
        help="check a public bound B > 0 (as `dpuq calibrate --bound B`): the share of the "
        "training residuals it covers and, with --n and --epsilon, the planned whole-line "
        "probability",
    )
    bound.add_argument(
        "--predictions",
        metavar="FILE",
        help="predictions for the training people: (n,) points or (n, 2) quantiles (cqr); "
        "cross-validated or from a model that did not see them",
    )
    bound.add_argument("--targets", metavar="FILE", help="their true outcomes, (n,)")
    bound.add_argument(
        "--quantile",
        type=float_arg,
        help="residual quantile (default: aimed from --n and --epsilon, else 0.99)",
    )
    bound.add_argument(
        "--held-out",
        action="store_true",
        help="the predictions are held out (cross-validated, or people the model never saw); "
        "without it the residuals are taken as in-sample and a warning says B is likely small",
    )
    p.set_defaults(func=run)


def _residual_files(args, flag: str):
    """Predictions and targets of the training people, checked."""
    from dpuq.io import read_matrix, read_vector

    if args.predictions is None or args.targets is None:
        raise ValueError(f"{flag} needs --predictions FILE and --targets FILE")
    pred = read_matrix(args.predictions, "--predictions")
    y = read_vector(args.targets, "--targets")
    if pred.shape[1] not in (1, 2):
        raise ValueError(f"--predictions must have 1 or 2 columns, got {pred.shape[1]}")
    return pred, y, ("absolute" if pred.shape[1] == 1 else "cqr")


def _aim_settings(args, alpha) -> dict:
    """``--n`` and ``--epsilon`` as public_bound's intended calibration (both or neither)."""
    from dpuq._validation import check_epsilon, check_positive_int

    ns, eps = args.n or [], args.epsilon or []
    if not ns and not eps:
        return {}
    if len(ns) != 1 or len(eps) != 1:
        raise ValueError("give one --n and one --epsilon (the intended calibration), or neither")
    return {
        "n_calibration": check_positive_int(ns[0], "--n"),
        "calibration_epsilon": check_epsilon(eps[0], "--epsilon"),
        "confidence_level": 1 - alpha,
    }


def _warn_in_sample(args) -> None:
    import warnings

    if not args.held_out:
        warnings.warn(
            "--predictions are taken as in-sample (the model saw these people): their "
            "residuals understate new people's, so B is likely too small and the intervals may "
            "be the whole line; use cross-validated predictions and pass --held-out",
            UserWarning,
            stacklevel=1,
        )


def _suggest_bound(args, alpha: float) -> str:
    """``dpuq plan --suggest-bound``: B from a file of training predictions (dpuq.public_bound)."""
    from dpuq.conformal.bound import public_bound

    pred, y, score = _residual_files(args, "--suggest-bound")
    aim = _aim_settings(args, alpha)
    b = public_bound(
        lambda X: pred if score == "cqr" else pred[:, 0],
        np.zeros((y.size, 1)),
        y,
        score=score,
        quantile=args.quantile,
        cv=None,
        held_out=True,
        **aim,
    )
    _warn_in_sample(args)
    kind = "held-out" if args.held_out else "IN-SAMPLE"
    return (
        f"suggested public bound B = {b.bound:.6g} ({score} score): from {b.n} {kind} "
        f"training residuals; {b.aim}\n"
        "B is a non-private function of the training people: fine if they are not protected; "
        "otherwise use domain knowledge or dpuq.public_bound(..., epsilon=...)"
    )


def _check_bound(args, alpha: float) -> str:
    """``dpuq plan --bound B``: what a given B covers, and its whole-line risk at n and ε."""
    from dpuq.conformal.bound import below_law_of, residuals_of
    from dpuq.conformal.regression_scores import check_bound
    from dpuq.planning.bound import whole_line_probability

    if math.isnan(args.bound):
        raise ValueError(
            "--bound takes a value B (as in `dpuq calibrate --bound B`); to suggest one, use "
            "--suggest-bound"
        )
    bound = check_bound(args.bound, "--bound")
    pred, y, score = _residual_files(args, "--bound B")
    res = residuals_of(pred if score == "cqr" else pred[:, 0], y, score)
    covered = float(np.mean(res <= bound))
    text = f"B = {bound:g} ({score} score) covers {covered:.4g} of {y.size} training residuals"
    aim = _aim_settings(args, alpha)
    if aim:
        q = min(max(covered, 1e-6), 1 - 1e-9)
        p = whole_line_probability(
            aim["n_calibration"], alpha, aim["calibration_epsilon"], q, below_law=below_law_of(res)
        )
        text += (
            f"; planned probability of whole-line intervals at n = {aim['n_calibration']}, "
            f"epsilon = {aim['calibration_epsilon']:g}, alpha = {alpha:g}: {p:.3g}"
        )
    _warn_in_sample(args)
    return text


def _plan(n: int, alpha: float, epsilon: float, bins, method: str):
    from dpuq.planning import plan

    return plan(n, alpha, epsilon, bins, method=method)


def _signed(x: float) -> str:
    return f"{x:+.4f}" if abs(x) >= 1e-3 or x == 0 else f"{x:+.2e}"


def _needs(n: int, alpha: float, epsilon: float, bins, method: str) -> str:
    from dpuq.planning import min_calibration_size, min_epsilon

    try:
        need = min_calibration_size(alpha, epsilon, bins, method=method)
        need_n = f"n >= {need} at epsilon = {epsilon:g}"
    except ValueError:
        need_n = f"no n at epsilon = {epsilon:g}"
    need_eps = min_epsilon(n, alpha, bins, method=method)
    eps_text = (
        f"epsilon >= {need_eps:g} at n = {n}"
        if math.isfinite(need_eps)
        else f"no epsilon at n = {n} (even non-private sets are full)"
    )
    return f"{need_n}; {eps_text}"


def _single(n: int, alpha: float, epsilon: float, bins, method: str) -> str:
    pl = _plan(n, alpha, epsilon, bins, method)
    lines = [
        f"plan: n = {n} calibration points, alpha = {alpha:g} (coverage >= {1 - alpha:.4g}), "
        f"epsilon = {epsilon:g}, method {method}",
        f"  bins m*             {pl.n_bins}" + (AUTO_NOTE * (bins == "auto")),
    ]
    if method == "paper":
        lines += [f"  gamma*              {pl.gamma:.4g}", f"  level q̃            {pl.level:.4f}"]
        yes, no = "yes (q̃ < 1)", "NO (q̃ >= 1)"
    else:
        rank = f"{pl.level * n:.2f} of {n}" if pl.informative else "none"
        lines.append(f"  target rank rho*    {rank}")
        if pl.informative:
            lines.append(f"  certified coverage  {pl.certified_coverage:.4f}")
        yes, no = "yes (rho* <= n)", "NO (no rank is certified)"
    if pl.informative:
        lines.append(f"  informative         {yes}")
        expected, baseline = pl.expected_threshold, pl.baseline
        if math.isfinite(baseline):
            lines.append(
                f"  expected threshold  {expected:.4f} on uniform scores vs {baseline:.4f} "
                f"non-private: inflation {_signed(expected - baseline)}"
            )
            lines.append(
                f"                      (private sets about as large as non-private ones at "
                f"{expected:.1%} coverage)"
            )
        else:
            lines.append(f"  expected threshold  {expected:.4f} on uniform scores")
    else:
        lines.append(f"  informative         {no}: the threshold will be 1, full sets / whole line")
    lines.append(f"  informative sets need {_needs(n, alpha, epsilon, bins, method)}")
    return "\n".join(lines)


def _table(ns, epsilons, alpha: float, bins, method: str) -> str:
    from dpuq._progress import progress
    from dpuq.planning import min_calibration_size

    cells = {}
    pairs = [(n, e) for n in ns for e in epsilons]
    for n, e in progress(pairs, "planning", disable=len(pairs) < 10):
        pl = _plan(n, alpha, e, bins, method)
        cells[n, e] = pl.level if pl.informative else None
    width = 9
    head = f"{'n':>8} " + "".join(f"{f'ε={e:g}':>{width}}" for e in epsilons)
    what = "inflated level q̃" if method == "paper" else "certified level rho*/n"
    lines = [
        f"{what} (bins: {bins}, method {method}) at alpha = {alpha:g}; 'full' = no informative "
        "sets",
        head,
    ]
    for n in ns:
        row = "".join(
            f"{'full' if cells[n, e] is None else f'{cells[n, e]:.4f}':>{width}}" for e in epsilons
        )
        lines.append(f"{n:>8} {row}")

    def min_n(e: float) -> str:
        try:
            return str(min_calibration_size(alpha, e, bins, method=method))
        except ValueError:
            return "none"

    lines.append(f"{'min n':>8} " + "".join(f"{min_n(e):>{width}}" for e in epsilons))
    a = Fraction(repr(alpha))
    lines.append(f"non-private split conformal needs n >= {math.ceil((1 - a) / a)}")
    return "\n".join(lines)


def _joint(n: int, alphas: list, epsilon: float, bins) -> str:
    """Several levels: what the joint release serves, and the n and ε that serve each."""
    from dpuq.planning import plan

    pl = plan(n, alphas, epsilon, bins)
    lines = [
        f"plan: joint release of {len(alphas)} levels, n = {n} calibration points, "
        f"epsilon = {epsilon:g} in total, method certified",
        f"  bins m*  {pl.n_bins}" + (AUTO_NOTE * (bins == "auto")),
    ]
    for i, a in enumerate(alphas):
        alone = f"n >= {pl.min_n_alone[i]}" if pl.min_n_alone[i] > 0 else "no n"
        need_eps = (
            f"epsilon >= {pl.min_epsilon[i]:g} at n = {n}"
            if math.isfinite(pl.min_epsilon[i])
            else f"no epsilon at n = {n}"
        )
        head = f"  alpha = {a:g} (coverage >= {1 - a:.12g}): "
        if pl.served[i]:
            state = (
                f"served, target rank {pl.level[i] * n:.2f} of {n}, certified coverage "
                f"{pl.certified_coverage[i]:.4f}"
            )
        else:
            state = "SET ASIDE: threshold 1, full sets / the whole line"
        lines.append(head + state)
        lines.append(
            f"      served jointly from n >= {pl.min_n[i]} at epsilon = {epsilon:g}, or "
            f"{need_eps}; released alone from {alone}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from dpuq._validation import check_epsilon, check_positive_int

    alpha = resolve_alpha(args)
    wants_bound = args.suggest_bound or args.bound is not None
    if wants_bound and isinstance(alpha, list):
        raise ValueError("--suggest-bound and --bound take one --alpha, not a list")
    if args.suggest_bound and args.bound is not None:
        raise ValueError("give --suggest-bound or --bound B, not both")
    if args.suggest_bound:
        print(_suggest_bound(args, alpha), file=sys.stdout)
        return 0
    if args.bound is not None:
        print(_check_bound(args, alpha), file=sys.stdout)
        return 0
    if args.predictions is not None or args.targets is not None:
        raise ValueError("--predictions and --targets apply to --suggest-bound and --bound only")
    if args.bins != "auto":
        check_positive_int(args.bins, "--bins", minimum=2)
    ns = [check_positive_int(n, "--n") for n in (args.n or [])]
    epsilons = [check_epsilon(e, "--epsilon") for e in (args.epsilon or [])]
    if isinstance(alpha, list) and (args.table or args.method != "certified"):
        raise ValueError("several --alpha levels need --method certified and no --table")
    if args.table:
        text = _table(
            ns or list(DEFAULT_N_GRID),
            epsilons or list(DEFAULT_EPSILON_GRID),
            alpha,
            args.bins,
            args.method,
        )
    else:
        if len(ns) != 1 or len(epsilons) != 1:
            raise ValueError(
                "give one --n and one --epsilon (or --table for a grid of several values)"
            )
        if isinstance(alpha, list):
            text = _joint(ns[0], alpha, epsilons[0], args.bins)
        else:
            text = _single(ns[0], alpha, epsilons[0], args.bins, args.method)
    print(text, file=sys.stdout)
    return 0
