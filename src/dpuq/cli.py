"""The ``dpuq`` command line. Errors print one line on stderr and exit with status 2."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import warnings

#: Sub-command modules under ``dpuq.commands``; each defines ``register(subparsers)``.
COMMANDS = [
    "demo",
    "train",
    "outputs",
    "calibrate",
    "predict",
    "interval",
    "pilot",
    "plan",
    "reproduce",
    "temperature",
    "online",
    "budget",
    "audit",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage + message
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from dpuq import __version__

    parser = _Parser(
        prog="dpuq",
        description="Differentially private uncertainty quantification.",
    )
    parser.add_argument("--version", action="version", version=f"dpuq {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        importlib.import_module(f"dpuq.commands.{name}").register(sub)
    return parser


#: A negative number in exponent notation (``-1e200``, ``-1.5E-3``): argparse takes only
#: ``-5`` and ``-0.5`` for numbers and reads these as unknown options.
_NEGATIVE_EXPONENT = re.compile(r"^-([0-9]+\.?[0-9]*|\.[0-9]+)[eE][+-]?[0-9]+$")
#: A token that starts like a number (signed or not), and one that starts like a negative one.
_NUMBER_START, _NEGATIVE_START = re.compile(r"^[+-]?[0-9.]"), re.compile(r"^-[0-9.]")
#: The options whose values are numbers (a test checks this against the parsers): only their
#: values are rewritten, so a file or data set named ``-1e3`` stays a string.
NUMERIC_OPTIONS = frozenset({
    "--alpha", "--bound", "--bounds", "--center", "--claimed-epsilon", "--clip",
    "--clip-second", "--confidence", "--confidence-level", "--delta", "--epsilon",
    "--feature-bounds", "--grid", "--initial", "--lam", "--quantile", "--scale",
    "--statistic-bounds", "--step", "--target-bounds", "--temperature",
    "--temperature-epsilon", "--train-delta", "--train-epsilon", "--trim",
})  # fmt: skip


def _positional_negatives(argv: list[str]) -> list[str]:
    """The values of :data:`NUMERIC_OPTIONS` written as ``-1e200`` put in positional notation
    (``-1000…0``), which argparse reads as a number: the same float, exactly (the shortest
    digits that round-trip). Every other token is left as it is."""
    import numpy as np

    out, numeric = [], False
    for a in argv:
        if _NEGATIVE_EXPONENT.match(a):
            if numeric:  # a value of the current numeric option (pairs: both)
                a = np.format_float_positional(float(a), trim="-")
        elif a.startswith("-") and not _NEGATIVE_START.match(a):
            numeric = a in NUMERIC_OPTIONS  # an option: do its values take numbers?
        elif not _NUMBER_START.match(a):
            numeric = False  # a word: no option's numbers follow it
        out.append(a)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_positional_negatives(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    warnings.formatwarning = lambda msg, cat, *a, **k: f"dpuq: warning: {msg}\n"
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("dpuq: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, OSError, KeyError, ImportError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        # one style for every error: argparse's own say "dpuq <command>: error:" too
        print(f"dpuq {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
