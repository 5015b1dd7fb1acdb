"""``dpuq interval``: release an ε-DP confidence interval for a column of a user's file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpuq.commands._args import (
    add_command,
    add_seed_argument,
    charged_release,
    float_arg,
    release_header,
    write_release,
)

INTERVAL_FORMAT = "dpuq-interval"
INTERVAL_FORMAT_VERSION = 1
STATISTICS = ("mean", "median", "trimmed-mean", "quantile")

HELP = "release an epsilon-DP confidence interval for a statistic of one column"

DESCRIPTION = """\
Release a confidence interval for the mean, median, trimmed mean or a quantile of one column
of your data (one row per person) with epsilon-differential privacy, and write it, with its
privacy report, to a JSON file.

--bounds LO HI is a public range containing every value (domain knowledge, never read off
the data); a value outside it is an error. --epsilon is the total cost of the release
(delta = 0), under replace-one neighbours with n public; --dataset NAME (and --ledger PATH)
charges it to that data set's budget first and refuses it when too little is left.
Coverage is asymptotic for the mean and trimmed mean (the bootstrap's,
docs/how-to/private_bootstrap.md) and exact for the median and a quantile (two private
order statistics: at least 1 - alpha in finite samples for any distribution, ties included,
docs/how-to/general_intervals.md).
Estimators other than these four are in Python:
dpuq.private_confidence_interval(rows, statistic=f, statistic_bounds=(lo, hi), ...).

Files: .npy, .csv/.tsv/.txt (optional header line; --column NAME needs one) or .parquet.
"""

EPILOG = """\
examples:
  dpuq interval --data icu.csv --column los --statistic mean --bounds 0 120 \\
      --alpha 0.05 --epsilon 1 -o los_mean.json
  dpuq interval --data labs.parquet --column crp --statistic quantile --quantile 0.9 \\
      --bounds 0 500 --alpha 0.1 --epsilon 1 --dataset icu-2024 -o crp_p90.json
"""


def register(subparsers) -> None:
    p = add_command(subparsers, "interval", HELP, DESCRIPTION, EPILOG)
    inputs = p.add_argument_group("input")
    inputs.add_argument("--data", metavar="FILE", required=True, help="the data file")
    inputs.add_argument(
        "--column",
        metavar="NAME",
        help="the column of a .parquet or headed .csv file (default: the file's only column)",
    )
    release = p.add_argument_group("release")
    release.add_argument("--statistic", choices=STATISTICS, required=True, help="the statistic")
    release.add_argument(
        "--quantile",
        type=float_arg,
        metavar="Q",
        help="the level in (0, 1) of --statistic quantile",
    )
    release.add_argument(
        "--trim",
        type=float_arg,
        default=0.1,
        help="proportion cut at each end for --statistic trimmed-mean (default 0.1)",
    )
    release.add_argument(
        "--bounds",
        type=float_arg,
        nargs=2,
        metavar=("LO", "HI"),
        required=True,
        help="public range of the values (never computed from the data)",
    )
    release.add_argument(
        "--alpha", type=float_arg, required=True, help="miscoverage in (0, 1): coverage 1 - alpha"
    )
    release.add_argument(
        "--epsilon", type=float_arg, required=True, help="total privacy cost > 0 (no default)"
    )
    add_seed_argument(release)
    from dpuq.commands.budget import add_release_output_arguments

    add_release_output_arguments(p)
    p.set_defaults(func=run)


def read_column(path, column: str | None, name: str = "--data"):
    """One numeric column of ``path`` as a float array; errors never quote the file's values."""
    import numpy as np

    from dpuq.io import check_read_suffix, read_vector

    p = Path(path)
    label = f"{name} {str(path)!r}"
    if column is None:
        return read_vector(path, name).astype(float)
    suffix = check_read_suffix(p, label)
    if suffix == ".npy":
        raise ValueError(f"--column applies to .parquet and headed .csv files, not {suffix}")
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError(f"{label}: reading .parquet needs pyarrow") from None
        try:
            names = pq.ParquetFile(p).schema_arrow.names
        except Exception:
            raise ValueError(f"{label}: cannot read as .parquet") from None
        if column not in names:
            raise ValueError(f"--column: no column {column!r} in {label}; columns are {names}")
        col = pq.read_table(p, columns=[column]).column(0)
        if col.null_count:
            raise ValueError(f"{label}: column {column!r} has missing values")
        values = col.to_numpy(zero_copy_only=False)
        if values.dtype.kind not in "biuf":
            raise ValueError(f"{label}: column {column!r} is not numeric")
        arr = values.astype(float)
    else:
        from dpuq.io._text import header_column, is_data_line, text_layout, with_decimal_points

        delimiter, skip, _ = text_layout(p, label)
        index = header_column(p, label, column, delimiter, skip)
        with open(p, encoding="utf-8-sig") as fh:
            lines = [line for line in fh.readlines()[skip:] if is_data_line(line)]
        lines = with_decimal_points(lines, delimiter)  # `;` files: decimal commas, as dpuq.io
        try:
            arr = np.loadtxt(lines, delimiter=delimiter, usecols=[index], ndmin=1).astype(float)
        except ValueError:
            raise ValueError(
                f"{label}: column {column!r} has an entry that is not a number"
            ) from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{label}: column {column!r} has missing or non-finite values")
    return arr


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from dpuq._validation import check_epsilon, check_in_open_unit
    from dpuq.inference._data import check_bounds
    from dpuq.inference.intervals import private_confidence_interval
    from dpuq.io import check_output_path

    # every setting, then the data, are checked before the charge: a refused setting is free
    out = check_output_path(args.output, "-o", (".json",), force=args.force)
    alpha = check_in_open_unit(args.alpha, "--alpha")
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    if not args.bounds[0] < args.bounds[1]:
        raise ValueError(
            f"--bounds must satisfy LO < HI, got {args.bounds[0]:g} {args.bounds[1]:g}"
        )
    bounds = check_bounds(tuple(args.bounds))
    statistic = args.statistic.replace("-", "_")
    kw: dict = {"statistic": statistic}
    if statistic == "quantile":
        if args.quantile is None:
            raise ValueError("--quantile Q is required with --statistic quantile")
        kw["quantile"] = check_in_open_unit(args.quantile, "--quantile")
    elif args.quantile is not None:
        raise ValueError("--quantile applies to --statistic quantile only")
    if statistic == "trimmed_mean":
        if not 0.0 <= args.trim < 0.5:
            raise ValueError(f"--trim must be in [0, 0.5), got {args.trim!r}")
        kw["trim"] = args.trim
    data = read_column(args.data, args.column)
    if np.any((data < bounds[0]) | (data > bounds[1])):
        raise ValueError(
            f"--data: values lie outside --bounds [{bounds[0]:g}, {bounds[1]:g}]; widen the "
            "public bounds"
        )
    if data.size < 4:
        raise ValueError("--data needs at least 4 values for an interval")
    what = f"dpuq interval ({args.statistic}, column {args.column or '-'})"
    settings = {
        "alpha": alpha,
        "n": int(data.size),
        "statistic": args.statistic,
        "column": args.column,
        "bounds": [float(v) for v in bounds],
    }
    # deferred: the release charges what it costs (0 when public quantities decide it)
    with charged_release(out, args, epsilon, what, settings, deferred=True) as (pending, hook):
        ci = private_confidence_interval(
            data,
            alpha=alpha,
            epsilon=epsilon,
            bounds=bounds,
            random_state=args.seed,
            ledger=hook,
            dataset=args.dataset,
            **kw,
        )
        record = {
            **release_header(INTERVAL_FORMAT, INTERVAL_FORMAT_VERSION),
            "data": Path(args.data).name,
            "column": args.column,
            "dataset": args.dataset,
            "statistic": ci.statistic,
            "bounds": list(bounds),
            "confidence_level": 1.0 - alpha,
            "alpha": alpha,
            "lower": ci.lower,
            "upper": ci.upper,
            "estimate": ci.estimate,
            "informative": ci.informative,
            "method": ci.method,
            "n": int(data.size),
            "privacy": ci.privacy_report.to_dict(),
            "seeded": bool(ci.privacy_report.seeded),
        }
        write_release(pending, args, what, hook.receipt, record)
    print(
        f"{100 * (1 - alpha):g}% interval for the {ci.statistic}: [{ci.lower:.6g}, "
        f"{ci.upper:.6g}] (estimate {ci.estimate:.6g}; n = {data.size}, epsilon = "
        f"{ci.privacy_report.epsilon:g}, delta = 0{', seeded' if args.seed is not None else ''})"
        + ("" if ci.informative else "; uninformative: public quantities decided it")
        + f"; wrote {out}",
        file=sys.stdout,
    )
    return 0
