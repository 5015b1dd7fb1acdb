"""``dpuq pilot``: check on public data whether a statistic's private interval holds (not a
release: :func:`dpuq.inference.pilot.pilot_check`)."""

from __future__ import annotations

import argparse
import sys

from dpuq.commands._args import add_command, seed_arg
from dpuq.commands.interval import GENERAL, _general_statistic, add_statistic_arguments

HELP = "check on PUBLIC data whether a statistic's private interval holds (not a release)"

DESCRIPTION = """\
Before you spend epsilon on `dpuq interval` for one of the general path's statistics (sd,
variance, correlation, ratio-of-means, ols-slope, logistic-slope, log-odds-ratio, auc,
difference-of-means), check on PUBLIC or synthetic data like yours whether its interval's
assumptions hold at your n: a published table of the same kind, or a simulation.

The pilot treats --data as a population, draws --reps samples of --n rows from it, runs the
private interval on each (charged to no ledger: a simulation) and prints its coverage of the
statistic of --data, its width, and, measured without noise, the subsets' bias and spread
ratio and the coverage the release would have without noise (what to expect at a larger
epsilon). Where that is clearly short of nominal the statistic is OUTSIDE the assumptions:
a few extreme rows drive it (docs/how-to/general_intervals.md).

NOT PRIVATE: it reads --data directly and prints numbers that depend on it. Never point it
at the data you mean to release from. It writes no file and charges no ledger.
"""

EPILOG = """\
example:
  dpuq pilot --data public_cohort.csv --n 5000 --statistic ols-slope --columns age sbp \\
      --statistic-bounds -5 5 --alpha 0.1 --epsilon 1
"""

#: Default samples of a pilot (coverage's Monte Carlo SE about 0.03 at nominal 0.90).
DEFAULT_REPS = 100


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def register(subparsers) -> None:
    p = add_command(subparsers, "pilot", HELP, DESCRIPTION, EPILOG)
    release = add_statistic_arguments(
        p, "PUBLIC or synthetic data: the population the pilot samples from", GENERAL
    )
    release.add_argument("--n", type=_positive_int, required=True,
                         help="the size of the private data set the release will see")  # fmt: skip
    release.add_argument("--reps", type=_positive_int, default=DEFAULT_REPS,
                         help=f"samples drawn (default {DEFAULT_REPS})")  # fmt: skip
    release.add_argument("--seed", type=seed_arg, default=None,
                         help="seed of the samples and simulated releases (a pilot is not a "
                         "release: a seed is fine here)")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dpuq._validation import check_epsilon, check_in_open_unit
    from dpuq.inference.pilot import MAX_REPS, pilot_check

    alpha = check_in_open_unit(args.alpha, "--alpha")
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    if args.n < 4:
        raise ValueError(f"--n must be at least 4, got {args.n}")
    if not 2 <= args.reps <= MAX_REPS:
        raise ValueError(f"--reps must be in [2, {MAX_REPS}], got {args.reps}")
    rows, kw, _ = _general_statistic(args)
    pc = pilot_check(kw["statistic"], rows, statistic_bounds=kw["statistic_bounds"], n=args.n,
                     epsilon=epsilon, alpha=alpha, vectorized=True, reps=args.reps,
                     random_state=args.seed)  # fmt: skip
    print(f"{args.statistic}: {pc.summary()}", file=sys.stdout)
    return 0
