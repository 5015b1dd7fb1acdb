"""``dpuq online``: the threshold of every person of a score stream, ε-DP over the stream."""

from __future__ import annotations

import argparse
import sys

from dpuq.commands._args import add_command, add_seed_argument, charged_release, float_arg

HELP = "epsilon-DP online conformal thresholds for a score stream (drift-adaptive)"

DESCRIPTION = """\
Read conformity scores in [0, 1] (low = conforms) in arrival order, one per person, and
write the threshold each person gets: person i's set is {y : S(x_i, y) <= t_i}, t_i computed
from earlier people only. The thresholds follow drift (a quantile tracker on error counts of
blocks of people, released with exact Laplace noise): for ANY score sequence the long-run
miscoverage is within a stated bound of --alpha (docs/how-to/online.md). A threshold >= 1 is the
full set, < 0 the empty set.

Privacy: epsilon-DP (delta = 0) for each person over the whole written sequence, replace-one
neighbours with the stream length public, however long the stream. Each run is a fresh
release and spends epsilon again, except when --block-size is at least the stream's length:
then no count is released, every threshold is --initial, and the run costs epsilon = 0 (the
ledger records 0) and says so.
"""

EPILOG = """\
examples:
  dpuq online --scores stream.csv --alpha 0.1 --epsilon 1 -o thresholds.csv
  dpuq online --scores stream.npy --epsilon 0.5 --step 0.02 -o thresholds.csv \\
      --ledger ledger.sqlite --dataset clinic-stream
"""

_FLAGS = {"alpha": "--alpha", "epsilon": "--epsilon", "step": "--step"}
_FLAGS.update({"block_size": "--block-size", "initial": "--initial"})


def _block_arg(text: str):
    if text == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer, got {text!r}") from None


def register(subparsers) -> None:
    p = add_command(subparsers, "online", HELP, DESCRIPTION, EPILOG)
    p.add_argument("--scores", metavar="FILE", required=True, help="scores in arrival order")
    p.add_argument("--alpha", type=float_arg, default=0.1, help="target miscoverage (0.1)")
    p.add_argument("--epsilon", type=float_arg, required=True, help="privacy of the stream")
    p.add_argument("--step", type=float_arg, default=0.01, help="tracker step per person (0.01)")
    p.add_argument(
        "--block-size", type=_block_arg, default="auto", help="persons per released count"
    )
    p.add_argument("--initial", type=float_arg, default=0.5, help="first threshold (0.5)")
    add_seed_argument(p)
    p.add_argument(
        "-o", "--output", "--out", required=True, metavar="FILE.csv", help="the thresholds"
    )
    p.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    from dpuq.commands.budget import add_ledger_arguments

    add_ledger_arguments(p)
    p.set_defaults(func=run)


def _settings(args):
    from dpuq.conformal.online import check_online_settings

    try:
        return check_online_settings(
            args.alpha, args.epsilon, args.step, args.block_size, args.initial
        )
    except (TypeError, ValueError) as exc:
        text = str(exc)
        name = text.split(" ", 1)[0]
        if name in _FLAGS:
            text = _FLAGS[name] + text[len(name) :]
        raise type(exc)(text) from None


def run(args: argparse.Namespace) -> int:
    from dpuq._validation import check_scores
    from dpuq.conformal.online import online_conformal_thresholds, online_privacy_report
    from dpuq.io import check_output_path, read_vector

    # everything that can fail is checked before the charge (a refused setting costs nothing)
    out = check_output_path(args.output, "-o", (".csv", ".txt"), force=args.force)
    settings = _settings(args)
    scores = check_scores(read_vector(args.scores, "--scores"), "--scores")
    what = "dpuq online (conformal thresholds of a stream)"
    record = {**settings.as_dict(), "n": int(scores.size)}
    # deferred: the release charges what it costs (0 when no block completes: public n, B)
    with charged_release(out, args, settings.epsilon, what, record, deferred=True) as (
        pending,
        hook,
    ):
        t = online_conformal_thresholds(
            scores,
            settings.alpha,
            settings.epsilon,
            step=settings.step,
            block_size=settings.block_size,
            initial=settings.initial,
            random_state=args.seed,
            ledger=hook,
            dataset=args.dataset,
        )
        report = online_privacy_report(settings, seeded=args.seed is not None, n=t.size)
        lines = "\n".join(map(repr, t.tolist()))  # shortest round-trip text
        pending.write_text("threshold\n" + lines + "\n")
        pending.commit()
    if report.epsilon == 0.0:
        state = (
            f"NOT informative: every threshold is --initial {settings.initial:g}, no block of "
            f"{settings.block_size} completes in a stream of {t.size}; public settings alone "
            "decided it, so it cost epsilon = 0 and charged nothing"
        )
    else:
        state = (
            f"at epsilon = {report.epsilon:g} for the whole stream (pure DP, delta = 0, "
            f"replace-one, event-level; blocks of {settings.block_size})"
            + (" [seeded: not private if the seed is known]" if report.seeded else "")
        )
    print(f"released {t.size} thresholds {state}\nwrote {out}", file=sys.stdout)
    return 0
