"""``dpuq budget``: set and read the privacy budgets of named data sets (see
docs/how-to/ledger.md)."""

from __future__ import annotations

import argparse
import json
import sys

from dpuq.commands._args import add_command, float_arg, open_ledger  # noqa: F401  (re-exported)

HELP = "privacy budgets of data sets: init, show, history"

DESCRIPTION = """\
Keep count of the privacy spent on each data set. A ledger is one SQLite file; in it each named
data set (e.g. "icu-2024") has a budget epsilon (and delta), and every release about it
(`dpuq calibrate --dataset NAME`, or Python functions called with ledger=, dataset=) is
recorded with its cost before it runs. A release that would exceed what is left is refused.

  dpuq budget init     give a data set its total budget (once)
  dpuq budget show     what is spent and left (--json for programs)
  dpuq budget history  every release: when, what, its cost, where it was written

Ledger file: --ledger PATH, else $DPUQ_LEDGER, else $XDG_DATA_HOME/dpuq/ledger.sqlite
(~/.local/share/dpuq/ledger.sqlite).
"""

EPILOG = """\
examples:
  dpuq budget init --ledger team.sqlite --dataset icu-2024 --epsilon 5
  dpuq calibrate --probs p.npy --labels y.csv --alpha 0.1 --epsilon 1 -o cal.json \\
      --ledger team.sqlite --dataset icu-2024
  dpuq budget show --ledger team.sqlite --dataset icu-2024
  dpuq budget history --ledger team.sqlite --json
"""


def add_ledger_arguments(parser, *, required_dataset: bool = False) -> None:
    """``--ledger PATH`` and ``--dataset NAME`` (shared with the releasing commands)."""
    group = parser.add_argument_group("privacy budget")
    group.add_argument(
        "--ledger",
        metavar="PATH",
        help="the ledger file (default: $DPUQ_LEDGER or ~/.local/share/dpuq/ledger.sqlite)",
    )
    group.add_argument(
        "--dataset",
        metavar="NAME",
        required=required_dataset,
        help="the data set whose budget pays for this"
        + ("" if required_dataset else " (charged before the release runs)"),
    )
    if not required_dataset:  # a releasing command
        group.add_argument(
            "--note",
            metavar="TEXT",
            help="a note kept with the ledger entry (e.g. the purpose); never put data in it",
        )


def add_release_output_arguments(parser) -> None:
    """The options every releasing command shares: ``-o FILE.json``, ``--force`` and the
    ledger's ``--ledger/--dataset/--note``."""
    out = parser.add_argument_group("output")
    out.add_argument(
        "-o", "--output", required=True, metavar="FILE.json", help="where to write the release"
    )
    out.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    add_ledger_arguments(parser)


def register(subparsers) -> None:
    p = add_command(subparsers, "budget", HELP, DESCRIPTION, EPILOG)
    sub = p.add_subparsers(dest="budget_command", metavar="ACTION", parser_class=type(p))

    from dpuq.privacy.report import Relation

    init = sub.add_parser("init", help="give a data set its total budget (once)")
    add_ledger_arguments(init, required_dataset=True)
    init.add_argument("--epsilon", type=float_arg, required=True, help="total epsilon > 0")
    init.add_argument(
        "--delta", type=float_arg, default=0.0, help="total delta in [0, 1) (default 0: pure DP)"
    )
    init.add_argument(
        "--relation",
        choices=[r.value for r in Relation],
        default=Relation.REPLACE_ONE.value,
        help="neighbouring relation of the budget (default replace-one)",
    )
    init.set_defaults(func=run_init)

    show = sub.add_parser("show", help="what is spent and left")
    add_ledger_arguments(show, required_dataset=True)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(func=run_show)

    hist = sub.add_parser("history", help="every release recorded")
    add_ledger_arguments(hist)
    hist.add_argument("--json", action="store_true", help="print JSON")
    hist.set_defaults(func=run_history)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _ledger(args, create: bool = False):
    from dpuq.privacy.ledger import Ledger

    return Ledger(args.ledger, create=create)


def run_init(args: argparse.Namespace) -> int:
    ledger = _ledger(args, create=True)
    st = ledger.create_budget(args.dataset, args.epsilon, args.delta, args.relation)
    delta = f", delta = {st.budget_delta:g}" if st.budget_delta else " (pure DP, delta = 0)"
    print(
        f"data set {st.dataset!r}: budget epsilon = {st.budget_epsilon:g}{delta} under "
        f"{st.relation}\nledger {ledger.path}",
        file=sys.stdout,
    )
    return 0


def _show_dict(ledger, dataset: str) -> dict:
    st = ledger.status(dataset)
    return {
        "ledger": str(ledger.path),
        **st.to_dict(),
        "statement": st.statement,
        "releases": [r.to_dict() for r in ledger.releases(dataset)],
    }


def run_show(args: argparse.Namespace) -> int:
    ledger = _ledger(args)
    info = _show_dict(ledger, args.dataset)
    if args.json:
        print(json.dumps(info, indent=2), file=sys.stdout)
        return 0
    d = info["budget_delta"]
    print(
        f"data set {info['dataset']!r} (ledger {info['ledger']})\n"
        f"  budget     epsilon {info['budget_epsilon']:g}"
        + (f", delta {d:g}" if d else " (pure DP)")
        + f" under {info['relation']}\n"
        f"  spent      epsilon {info['spent_epsilon']:g}"
        + (f", delta {info['spent_delta']:g}" if d else "")
        + f" in {info['n_releases']} release(s)\n"
        f"  remaining  epsilon {info['remaining_epsilon']:g}"
        + (f", delta {info['remaining_delta']:g}" if d else "")
        + f"\n  composition: {info['composition']}\n  privacy statement:\n"
        + "\n".join(f"    {key}: {value}" for key, value in info["statement"].items()),
        file=sys.stdout,
    )
    return 0


def run_history(args: argparse.Namespace) -> int:
    ledger = _ledger(args)
    rows = ledger.releases(args.dataset)
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2), file=sys.stdout)
        return 0
    if not rows:
        print("no releases recorded", file=sys.stdout)
        return 0
    for r in rows:
        cost = f"eps {r.epsilon:g}" + (f" delta {r.delta:.3g}" if r.delta else "")
        if r.stated_relation != r.relation:
            cost += f" (stated {r.stated_epsilon:g}, {r.stated_delta:.3g} {r.stated_relation})"
        seeded = " SEEDED" if r.seeded else ""
        out = f" -> {r.output}" if r.output else ""
        settings = (
            "; " + ", ".join(f"{k} {v}" for k, v in r.settings.items() if v is not None)
            if r.settings
            else ""
        )
        note = f"; note: {r.note}" if r.note else ""
        print(
            f"#{r.id} {r.reserved_at} {r.dataset}: {r.what}; {cost} {r.relation}; {r.status}"
            f"{seeded}; dpuq {r.dpuq_version}{settings}{note}{out}",
            file=sys.stdout,
        )
    return 0
