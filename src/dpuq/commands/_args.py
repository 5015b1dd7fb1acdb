"""What every sub-command shares: argument types with one-line errors, and parser registration.

Examples
--------
>>> import argparse
>>> parser = argparse.ArgumentParser(prog="dpuq")
>>> sub = parser.add_subparsers()
>>> p = add_command(sub, "hello", "say hello", "Say hello.", "")
>>> _ = p.add_argument("--epsilon", type=float_arg)
>>> parser.parse_args(["hello", "--epsilon", "0.5"]).epsilon
0.5
>>> bins_arg("auto"), bins_arg("200"), seed_arg("7")
('auto', 200, 7)
"""

from __future__ import annotations

import argparse
import math

__all__ = ["MAX_BINS", "add_command", "bins_arg", "float_arg", "seed_arg"]

MAX_BINS = 10_000_000


def add_command(subparsers, name: str, help: str, description: str, epilog: str):
    """Register sub-command ``name`` with its help, description and examples (kept as written)."""
    return subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _convert(text: str, kind, expected: str):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {expected}, got {text!r}") from None


def bins_arg(text: str) -> str | int:
    """``auto`` or an integer >= 2."""
    if text == "auto":
        return "auto"
    m = _convert(text, int, "'auto' or an integer >= 2")
    if not 2 <= m <= MAX_BINS:
        raise argparse.ArgumentTypeError(
            f"must be 'auto' or an integer from 2 to {MAX_BINS:,}, got {text!r}"
        )
    return m


def seed_arg(text: str) -> int:
    """A non-negative integer seed."""
    s = _convert(text, int, "a non-negative integer")
    if s < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return s


def float_arg(text: str) -> float:
    """A finite number."""
    value = _convert(text, float, "a number")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value
