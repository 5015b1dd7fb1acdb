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
    ordered_pair,
    release_header,
    write_release,
)

INTERVAL_FORMAT = "dpuq-interval"
INTERVAL_FORMAT_VERSION = 1
STATISTICS = ("mean", "median", "trimmed-mean", "quantile")
#: The general path's ready-made statistics (dpuq.inference.statistics): name -> the
#: factory's name and the roles of its columns (--column for one, --columns for two).
GENERAL = {
    "sd": ("standard_deviation", ("value",)),
    "variance": ("variance", ("value",)),
    "correlation": ("correlation", ("x", "y")),
    "ratio-of-means": ("ratio_of_means", ("numerator", "denominator")),
    "ols-slope": ("ols_slope", ("x", "y")),
    "logistic-slope": ("logistic_slope", ("x", "z")),
    "log-odds-ratio": ("log_odds_ratio", ("outcome", "exposure")),
    "auc": ("auc", ("score", "label")),
    "difference-of-means": ("difference_of_means", ("y", "group")),
}
#: Columns that must hold 0/1 (the second role of these statistics).
BINARY_ROLES = ("z", "outcome", "exposure", "label", "group")

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

Other statistics (the general path, docs/how-to/general_intervals.md; coverage asymptotic,
measured on 16 real tables): sd, variance (--column), correlation, ratio-of-means,
ols-slope, logistic-slope, log-odds-ratio, auc, difference-of-means (--columns A B, in
the order the statistic names them: x y, numerator denominator, x z, outcome exposure,
score label, y group; the second of the last four must be 0/1). They need
--statistic-bounds LO HI, a public range of the statistic itself (an AUC: 0 1; a slope: a
clinically possible range), not --bounds; logistic-slope takes a public --center and
--scale of x. --clip LO HI (and --clip-second LO HI, where the second column is not 0/1)
clips the first (second) column to a public range first: bounded influence, where a few
extreme rows would drive the statistic (the interval is then for the statistic of the
clipped population; docs/how-to/general_intervals.md). Any other estimator: in Python,
dpuq.private_confidence_interval(rows, statistic=f, statistic_bounds=(lo, hi), ...).

Files: .npy, .csv/.tsv/.txt (optional header line; --column NAME needs one) or .parquet;
--column/--columns take header names, or 0-based indices.
"""

EPILOG = """\
examples:
  dpuq interval --data icu.csv --column los --statistic mean --bounds 0 120 \\
      --alpha 0.05 --epsilon 1 -o los_mean.json
  dpuq interval --data labs.parquet --column crp --statistic quantile --quantile 0.9 \\
      --bounds 0 500 --alpha 0.1 --epsilon 1 --dataset icu-2024 -o crp_p90.json
  dpuq interval --data cohort.csv --statistic ols-slope --columns age sbp \
      --statistic-bounds -5 5 --alpha 0.1 --epsilon 1 -o sbp_per_year.json
  dpuq interval --data cohort.csv --statistic auc --columns crp sepsis \
      --statistic-bounds 0 1 --alpha 0.1 --epsilon 1 -o crp_auc.json
"""


def register(subparsers) -> None:
    p = add_command(subparsers, "interval", HELP, DESCRIPTION, EPILOG)
    release = add_statistic_arguments(p, "the data file", [*STATISTICS, *GENERAL])
    add_seed_argument(release)
    from dpuq.commands.budget import add_release_output_arguments

    add_release_output_arguments(p)
    p.set_defaults(func=run)


def add_statistic_arguments(p, data_help: str, statistics) -> argparse._ArgumentGroup:
    """``--data``, the columns, ``--statistic`` (one of ``statistics``) and its settings,
    ``--alpha`` and ``--epsilon``: shared by ``dpuq interval`` and ``dpuq pilot``. Returns the
    "release" group."""
    inputs = p.add_argument_group("input")
    inputs.add_argument("--data", metavar="FILE", required=True, help=data_help)
    inputs.add_argument(
        "--column",
        metavar="NAME",
        help="the column (a header name or a 0-based index; default: the file's only column)",
    )
    inputs.add_argument(
        "--columns",
        nargs=2,
        metavar=("A", "B"),
        help="the two columns of a two-column statistic (names or 0-based indices)",
    )
    release = p.add_argument_group("release")
    release.add_argument("--statistic", choices=list(statistics), required=True,
                         help="the statistic")  # fmt: skip
    release.add_argument(
        "--quantile",
        type=float_arg,
        metavar="Q",
        help="the level in (0, 1) of --statistic quantile",
    )
    release.add_argument(
        "--trim",
        type=float_arg,
        help="proportion cut at each end for --statistic trimmed-mean (default 0.1)",
    )
    release.add_argument(
        "--bounds",
        type=float_arg,
        nargs=2,
        metavar=("LO", "HI"),
        help="public range of the values, for mean, median, trimmed-mean and quantile "
        "(never computed from the data)",
    )
    general = p.add_argument_group("other statistics (the general path)")
    for flag, what in (
        ("--statistic-bounds", "public range of the statistic itself (required for these)"),
        ("--clip", "public range the first column is clipped to (bounded influence)"),
        ("--clip-second", "public range the second column is clipped to (not a 0/1 one)"),
    ):
        general.add_argument(flag, type=float_arg, nargs=2, metavar=("LO", "HI"), help=what)
    general.add_argument("--center", type=float_arg, help="logistic-slope: public centre of x")
    general.add_argument("--scale", type=float_arg, help="logistic-slope: public scale of x")
    release.add_argument(
        "--alpha", type=float_arg, required=True, help="miscoverage in (0, 1): coverage 1 - alpha"
    )
    release.add_argument(
        "--epsilon", type=float_arg, required=True, help="total privacy cost > 0 (no default)"
    )
    return release


def read_column(path, column: str | None, name: str = "--data", flag: str = "--column"):
    """One numeric column of ``path`` as a float array; errors never quote the file's values.

    ``column``: a header name, or a 0-based index where no column has that name (a ``.npy``
    file's columns are indices only); None: the file's only column. ``flag`` is the option
    that named it, for errors.
    """
    return _read_column_and_key(path, column, name, flag)[0]


def _read_column_and_key(path, column: str | None, name: str, flag: str):
    """:func:`read_column`'s array and the column it resolved to (a position, or a parquet
    column's name): a name and an index of the same column resolve to the same key."""
    import numpy as np

    from dpuq.io import check_read_suffix, read_vector

    p = Path(path)
    label = f"{name} {str(path)!r}"
    if column is None:
        return read_vector(path, name).astype(float), None
    suffix = check_read_suffix(p, label)
    index = int(column) if column.isascii() and column.isdigit() else None

    def out_of_range(width: int) -> ValueError:
        return ValueError(f"{flag} {column}: no such column ({label} has {width} column(s))")

    if suffix == ".npy":
        from dpuq.io import read_matrix

        if index is None:
            raise ValueError(f"{flag} {column!r}: a .npy file's columns are 0-based indices")
        table = read_matrix(path, name)
        if index >= table.shape[1]:
            raise out_of_range(table.shape[1])
        arr, key = table[:, index], index
    elif suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError(f"{label}: reading .parquet needs pyarrow") from None
        try:
            names = pq.ParquetFile(p).schema_arrow.names
        except Exception:
            raise ValueError(f"{label}: cannot read as .parquet") from None
        if column not in names:
            if index is None:
                raise ValueError(f"{flag}: no column {column!r} in {label}; columns are {names}")
            if index >= len(names):
                raise out_of_range(len(names))
            column = names[index]
        key = column
        col = pq.read_table(p, columns=[column]).column(0)
        if col.null_count:
            raise ValueError(f"{label}: column {column!r} has missing values")
        values = col.to_numpy(zero_copy_only=False)
        if values.dtype.kind not in "biuf":
            raise ValueError(f"{label}: column {column!r} is not numeric")
        arr = values.astype(float)
    else:
        from dpuq.io._text import (
            check_file_header_width,
            header_column,
            is_data_line,
            text_layout,
            with_decimal_points,
        )

        delimiter, skip, usecols = text_layout(p, label)  # usecols: without pandas' index
        check_file_header_width(p, label, delimiter, skip)  # names over the right columns
        with open(p, encoding="utf-8-sig") as fh:
            lines = [line for line in fh.readlines()[skip:] if is_data_line(line)]
        lines = with_decimal_points(lines, delimiter)  # `;` files: decimal commas, as dpuq.io
        first = (lines[0].split(delimiter) if delimiter else lines[0].split()) if lines else []
        data_columns = list(usecols) if usecols is not None else list(range(len(first)))
        try:  # a header name first; an index (of the data columns) where none has that name
            position = header_column(p, label, column, delimiter, skip, flag)
        except ValueError as exc:
            if index is None or "more than once" in str(exc):
                raise
            if index >= len(data_columns):
                raise out_of_range(len(data_columns)) from None
            position = data_columns[index]
        key = position
        try:
            arr = np.loadtxt(lines, delimiter=delimiter, usecols=[position], ndmin=1)
        except ValueError:
            raise ValueError(
                f"{label}: column {column!r} has an entry that is not a number"
            ) from None
        arr = arr.astype(float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{label}: column {column!r} has missing or non-finite values")
    return arr, key


GENERAL_ONLY = ("columns", "statistic_bounds", "clip", "clip_second", "center", "scale")


def _data_statistic(args):
    """Mean, median, trimmed mean, quantile of one column: ``(data, kw, record fields)``."""
    import numpy as np

    from dpuq._validation import check_in_open_unit

    for name in GENERAL_ONLY:
        if getattr(args, name) is not None:
            raise ValueError(f"--{name.replace('_', '-')} applies to the other statistics only")
    if args.bounds is None:
        raise ValueError(f"--bounds LO HI (the values' public range) is required with "
                         f"--statistic {args.statistic}")  # fmt: skip
    bounds = ordered_pair(args.bounds, "--bounds")
    statistic = args.statistic.replace("-", "_")
    kw: dict = {"statistic": statistic, "bounds": bounds}
    if statistic == "quantile":
        if args.quantile is None:
            raise ValueError("--quantile Q is required with --statistic quantile")
        kw["quantile"] = check_in_open_unit(args.quantile, "--quantile")
    elif args.quantile is not None:
        raise ValueError("--quantile applies to --statistic quantile only")
    if statistic == "trimmed_mean":
        trim = 0.1 if args.trim is None else args.trim
        if not 0.0 <= trim < 0.5:
            raise ValueError(f"--trim must be in [0, 0.5), got {trim!r}")
        kw["trim"] = trim
    elif args.trim is not None:
        raise ValueError("--trim applies to --statistic trimmed-mean only")
    data = read_column(args.data, args.column)
    if np.any((data < bounds[0]) | (data > bounds[1])):
        raise ValueError(
            f"--data: values lie outside --bounds [{bounds[0]:g}, {bounds[1]:g}]; widen the "
            "public bounds"
        )
    return data, kw, {"column": args.column, "bounds": list(bounds)}


def _same_column(a: str, b: str) -> bool:
    """The same column named twice (``age age``, ``0 00``), caught before any file is read; a
    name and an index of the same column (``age 0``) are caught once both are resolved
    (public: the header, not the data)."""
    digits = a.isascii() and a.isdigit() and b.isascii() and b.isdigit()
    return a == b or (digits and int(a) == int(b))


def _general_statistic(args):
    """A ready-made statistic of :mod:`dpuq.inference.statistics` on one or two columns."""
    import numpy as np

    from dpuq.inference import statistics

    factory, roles = GENERAL[args.statistic]
    stat = args.statistic
    if args.bounds is not None:
        raise ValueError("--bounds is the values' range for mean, median, trimmed-mean and "
                         f"quantile; --statistic {stat} takes --statistic-bounds")  # fmt: skip
    if args.quantile is not None:
        raise ValueError("--quantile applies to --statistic quantile only")
    if args.trim is not None:
        raise ValueError("--trim applies to --statistic trimmed-mean only")
    if args.statistic_bounds is None:
        raise ValueError(f"--statistic-bounds LO HI (a public range of the {stat}) is required "
                         f"with --statistic {stat}")  # fmt: skip
    statistic_bounds = ordered_pair(args.statistic_bounds, "--statistic-bounds")
    if len(roles) == 1:
        if args.columns is not None:
            raise ValueError(f"--statistic {stat} takes one column: --column NAME, not --columns")
        columns = [args.column]
    else:
        if args.column is not None or args.columns is None:
            raise ValueError(f"--statistic {stat} takes two columns: --columns "
                             f"{' '.join(r.upper() for r in roles)}")  # fmt: skip
        columns = list(args.columns)
        if _same_column(*columns):
            raise ValueError(f"--columns: --statistic {stat} needs two different columns, got "
                             f"{columns[0]!r} twice")  # fmt: skip
    kw: dict = {}
    if (args.center is None) != (args.scale is None) or (
        args.center is not None and stat != "logistic-slope"
    ):
        raise ValueError("--center and --scale go together, with --statistic logistic-slope")
    if stat == "logistic-slope":
        if args.center is None:
            raise ValueError("--statistic logistic-slope needs a public --center and --scale "
                             "of x (domain knowledge, never the data's mean and SD)")  # fmt: skip
        if not (np.isfinite(args.center) and np.isfinite(args.scale) and args.scale > 0):
            raise ValueError("--center must be finite and --scale finite and > 0")
        kw = {"center": args.center, "scale": args.scale}
    clip = {}
    for j, flag in enumerate(("clip", "clip_second")):
        if getattr(args, flag) is not None:
            name = "--" + flag.replace("_", "-")
            if j >= len(roles) or roles[j] in BINARY_ROLES:
                raise ValueError(f"{name}: --statistic {stat} has no continuous column {j + 1}")
            clip[j] = ordered_pair(getattr(args, flag), name)
    f = getattr(statistics, factory)(*range(len(roles)), **kw)
    if clip:
        f = statistics.clipped(f, clip)
    f.__name__ = stat  # the released interval's name
    flag = "--column" if len(roles) == 1 else "--columns"
    read = [_read_column_and_key(args.data, c, "--data", flag) for c in columns]
    if len(read) == 2 and read[0][1] == read[1][1]:
        raise ValueError(f"--columns: {columns[0]!r} and {columns[1]!r} are the same column "
                         f"of --data; --statistic {stat} needs two different columns")  # fmt: skip
    rows = np.column_stack([arr for arr, _ in read])
    for j, role in enumerate(roles):
        if role in BINARY_ROLES and not np.all((rows[:, j] == 0) | (rows[:, j] == 1)):
            raise ValueError(f"--columns: the {role} column of --statistic {stat} must hold "
                             "0 and 1 only")  # fmt: skip
    kw = {"statistic": f, "statistic_bounds": statistic_bounds, "vectorized": True}
    fields = {"column" if len(roles) == 1 else "columns": columns[0] if len(roles) == 1 else
              columns, "statistic_bounds": list(statistic_bounds)}  # fmt: skip
    if clip:  # the estimand: the statistic of the clipped columns (public bounds)
        fields["clip"] = {str(columns[j]): list(b) for j, b in clip.items()}
    return rows, kw, fields


def run(args: argparse.Namespace) -> int:
    from dpuq._validation import check_epsilon, check_in_open_unit
    from dpuq.inference.intervals import private_confidence_interval
    from dpuq.io import check_output_path

    # every setting, then the data, are checked before the charge: a refused setting is free
    out = check_output_path(args.output, "-o", (".json",), force=args.force)
    alpha = check_in_open_unit(args.alpha, "--alpha")
    epsilon = check_epsilon(args.epsilon, "--epsilon")
    general = args.statistic in GENERAL
    data, kw, fields = (_general_statistic if general else _data_statistic)(args)
    if data.shape[0] < 4:
        raise ValueError("--data needs at least 4 values for an interval")
    where = fields.get("columns") or [fields.get("column") or "-"]
    what = f"dpuq interval ({args.statistic}, column {' '.join(map(str, where))})"
    settings = {"alpha": alpha, "n": int(data.shape[0]), "statistic": args.statistic, **fields}
    # deferred: the release charges what it costs (0 when public quantities decide it)
    with charged_release(out, args, epsilon, what, settings, deferred=True) as (pending, hook):
        ci = private_confidence_interval(data, alpha=alpha, epsilon=epsilon,
                                         random_state=args.seed, ledger=hook,
                                         dataset=args.dataset, **kw)  # fmt: skip
        record = {
            **release_header(INTERVAL_FORMAT, INTERVAL_FORMAT_VERSION),
            "data": Path(args.data).name,
            **fields,
            "dataset": args.dataset,
            "statistic": ci.statistic,
            "confidence_level": 1.0 - alpha,
            "alpha": alpha,
            "lower": ci.lower,
            "upper": ci.upper,
            "estimate": ci.estimate,
            "informative": ci.informative,
            "method": ci.method,
            "n": int(data.shape[0]),
            "privacy": ci.privacy_report.to_dict(),
            "seeded": bool(ci.privacy_report.seeded),
        }
        write_release(pending, args, what, hook.receipt, record)
    # the release's own reason (public or released values); it was "public quantities decided
    # it" for every string statistic, which is false where released ends decided it
    why = (ci.details or {}).get("reason") or (
        "the whole of --statistic-bounds" if general else "the whole of --bounds"
    )
    print(
        f"{100 * (1 - alpha):g}% interval for the {ci.statistic}: [{ci.lower:.6g}, "
        f"{ci.upper:.6g}] (estimate {ci.estimate:.6g}; n = {data.shape[0]}, epsilon = "
        f"{ci.privacy_report.epsilon:g}, delta = 0{', seeded' if args.seed is not None else ''})"
        + ("" if ci.informative else f"; uninformative: {why}")
        + f"; wrote {out}",
        file=sys.stdout,
    )
    return 0
