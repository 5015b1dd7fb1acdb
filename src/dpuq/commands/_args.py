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
import contextlib
import math
import warnings

__all__ = [
    "MAX_BINS",
    "add_command",
    "add_seed_argument",
    "bins_arg",
    "charged_release",
    "float_arg",
    "open_ledger",
    "ordered_pair",
    "release_header",
    "report_sets",
    "seed_arg",
    "warn_if_seeded",
    "write_release",
]

#: Largest --bins accepted: the edges array of 10^7 bins takes 80 MB (auto never goes beyond).
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


def ordered_pair(values, flag: str) -> tuple[float, float]:
    """A ``LO HI`` option (``nargs=2``) as ``(lo, hi)`` with ``lo < hi``; the error names
    ``flag``."""
    from dpuq.inference._data import check_bounds

    if not values[0] < values[1]:
        raise ValueError(f"{flag} must satisfy LO < HI, got {values[0]:g} {values[1]:g}")
    return check_bounds(tuple(values))


def add_seed_argument(parser) -> None:
    """``--seed`` of a release command (experiments only; :func:`warn_if_seeded`)."""
    parser.add_argument(
        "--seed",
        type=seed_arg,
        default=None,
        help="seed for a reproducible run: experiments only, since anyone who knows the seed "
        "can undo the noise (default: fresh OS entropy); the output then says 'seeded'",
    )


def warn_if_seeded(seed, stacklevel: int = 2) -> None:
    """Warn that ``--seed`` makes a release reproducible (experiments only)."""
    if seed is not None:
        warnings.warn(
            "--seed makes the noise reproducible: anyone who knows the seed can undo it; "
            "use it for experiments only, never for a release",
            UserWarning,
            stacklevel=stacklevel,
        )


def report_sets(out, sets, what: str, fmt: str | None = None) -> int:
    """Write prediction sets to ``out`` (``"-"``: stdout, then messages go to stderr), say
    how large they are, and return exit status 0."""
    import numpy as np

    from dpuq.commands._outputs import summary_stream, write_output

    write_output(out, "sets", sets, classes=list(range(sets.shape[1])), fmt=fmt)
    sizes = sets.sum(axis=1)
    print(
        f"{sets.shape[0]} {what}; mean size {sizes.mean():.3g} of {sets.shape[1]}, empty "
        f"{np.mean(sizes == 0):.1%}\nwrote {'stdout' if str(out) == '-' else out}",
        file=summary_stream(out),
    )
    return 0


def open_ledger(args, *, create: bool = False):
    """The ledger named by ``--ledger`` (or the default), or None when neither flag is given."""
    from dpuq.privacy.ledger import Ledger

    if getattr(args, "ledger", None) is None and getattr(args, "dataset", None) is None:
        return None
    if getattr(args, "dataset", None) is None:
        raise ValueError("--ledger needs --dataset NAME (the data set this release is about)")
    return Ledger(args.ledger, create=create)


@contextlib.contextmanager
def charged_release(out, args, epsilon: float, what: str, settings=None, *, deferred=False):
    """Every release's order: open the ledger of ``--ledger``/``--dataset`` (if any), warn if
    ``--seed`` is set (:func:`warn_if_seeded`), lock the output path ``out`` (refused if it
    exists or is being written, unless ``--force``), charge the ledger (committed: a failure
    later keeps the charge), run the block (the release, which writes to the pending file and
    commits it: :func:`write_release`).

    Yields ``(pending, receipt)``; ``receipt`` is None without a ledger. Without one, and with
    ``DPUQ_REQUIRE_LEDGER=1``, the release is refused here (before anything is written). The
    caller checks every setting and input before entering: a refused setting costs nothing.
    The block calls the Python release with ``ledger=CALLER_CHARGED`` (charged here).

    ``deferred=True``: nothing is charged on entry; the block gets a ledger hook in place of
    the receipt, passes it as ``ledger=`` to the Python release, which charges what it costs
    (nothing when public quantities alone decide it), and reads ``hook.receipt`` afterwards.
    """
    from dpuq.io._atomic import release_file
    from dpuq.privacy.ledger import charge

    ledger = open_ledger(args)
    warn_if_seeded(args.seed, stacklevel=4)  # at the command's line (past contextlib's frame)
    if ledger is None:
        charge(None, None, epsilon, what=what)  # refuses if a ledger is required
    if deferred:
        from dpuq.privacy._ledger_gate import _DeferredCharge

        hook = _DeferredCharge(
            ledger, args.dataset, what=what, output=out, seeded=args.seed is not None,
            settings=settings, note=getattr(args, "note", None),
        )  # fmt: skip
        with release_file(out, force=args.force, name="-o") as pending:
            try:
                yield pending, hook
            except BaseException:
                with contextlib.suppress(Exception):
                    hook.finish("failed")
                raise
            hook.finish("released")
        return
    with release_file(out, force=args.force, name="-o") as pending:
        spend = (
            ledger.spend(
                args.dataset,
                epsilon,
                what=what,
                output=out,
                seeded=args.seed is not None,
                settings=settings,
                note=getattr(args, "note", None),
            )
            if ledger is not None
            else contextlib.nullcontext()
        )
        with spend as receipt:
            yield pending, receipt


def release_trail(args, what: str, receipt) -> dict:
    """``{"trail": ...}`` for a release file (:func:`dpuq.privacy.ledger.release_trail`)."""
    from dpuq.privacy.ledger import release_trail as trail

    return {
        "trail": trail(
            receipt, what, dataset=getattr(args, "dataset", None), note=getattr(args, "note", None)
        )
    }


def release_header(fmt: str, version: int) -> dict:
    """The first fields of a release file: its format, format version and the dpuq version."""
    from dpuq._version import __version__

    return {"format": fmt, "format_version": version, "dpuq_version": __version__}


def write_release(pending, args, what: str, receipt, record: dict) -> None:
    """Write ``record`` and its ``"trail"`` (:func:`release_trail`) as JSON to the pending file
    of :func:`charged_release`, and commit it."""
    from dpuq.io import json_text

    pending.write_text(json_text({**record, **release_trail(args, what, receipt)}))
    pending.commit()
