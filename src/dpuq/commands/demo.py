"""``dpuq demo``: the main job (private model + private prediction sets + a report)."""

from __future__ import annotations

import argparse
import importlib.util
import shlex

#: The exact command that installs what the demo needs (torch first: the CPU wheel).
INSTALL_COMMAND = (
    "pip install torch --index-url https://download.pytorch.org/whl/cpu && "
    "pip install 'dpuq[demo,torch]'"
)
_TRAINING_MODULES = ("torch", "opacus", "dp_accounting")
_DEMO_MODULES = ("sklearn", "matplotlib")


def missing_modules(trains: bool) -> list[str]:
    """The modules the demo needs that are not installed (training needs the torch extra)."""
    wanted = _DEMO_MODULES + (_TRAINING_MODULES if trains else ())
    return [name for name in wanted if importlib.util.find_spec(name) is None]


def check_extras(args: argparse.Namespace) -> None:
    """Fail fast, in one line, with the install command, when an extra is missing."""
    trains = not (args.probs or args.labels)
    missing = missing_modules(trains)
    if missing:
        raise ImportError(
            f"dpuq demo needs {', '.join(missing)} (the demo/torch extras); install with: "
            f"{INSTALL_COMMAND}"
        )


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="private model + private prediction sets on sklearn's digits, with a report "
        "(the main job)",
        description="Train a model three ways (SGD, DP-SGD, DP-SGLD at the same "
        "(epsilon, delta)), calibrate each with the non-private and the epsilon-DP conformal "
        "threshold on other people, evaluate over many random calibration/test splits, print "
        "a table and write dpuq-report/ (figures and one self-contained HTML page).",
    )
    p.add_argument(
        "--data",
        choices=["digits", "fashion-mnist"],
        default="digits",
        help="digits (embedded, default) or fashion-mnist (Debian package dataset-fashion-mnist)",
    )
    p.add_argument("--data-dir", default=None, help="folder with Fashion-MNIST's IDX .gz files")
    p.add_argument("--probs", default=None, help="your model's probabilities (n, K) instead")
    p.add_argument("--labels", default=None, help="true labels (n,) for --probs")
    p.add_argument(
        "--epsilon",
        type=float,
        default=None,
        help="privacy of calibration (default: the training ε, which costs nothing extra: "
        "training and calibration use different people)",
    )
    p.add_argument(
        "--train-epsilon",
        type=float,
        default=None,
        help="privacy of training (3.0). With --probs: the ε your model was trained at, as you "
        "declare it (reported as declared, never verified; default: not private)",
    )
    p.add_argument(
        "--train-delta",
        type=float,
        default=None,
        help="δ of training (1e-5); with --probs: as you declare it",
    )
    p.add_argument("--model-name", default=None, help="with --probs: your model's name")
    p.add_argument(
        "--dataset-name", default=None, help="with --probs: the name of the data set (report)"
    )
    p.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (0.1)")
    p.add_argument("--n-calibration", type=int, default=None, help="calibration people")
    p.add_argument("--n-test", type=int, default=None, help="test people")
    p.add_argument("--splits", type=int, default=None, help="random splits (200; quick: 50)")
    p.add_argument("--epochs", type=int, default=None, help="training epochs")
    p.add_argument(
        "--train-size", type=int, default=None, help="use only this many training people"
    )
    p.add_argument(
        "--seed", type=int, default=None, help="seed for a reproducible run (default: OS entropy)"
    )
    p.add_argument(
        "--temperature-scaling",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="hold some training people out and release each private model's softmax "
        "temperature with ε-DP on them (private temperature scaling; extra rows; on by "
        "default, --no-temperature-scaling turns it off)",
    )
    p.add_argument(
        "--temperature-epsilon",
        type=float,
        default=None,
        help="privacy of temperature scaling (default: the calibration ε; other people, so it "
        "adds nothing to the pipeline's ε beyond the largest part)",
    )
    p.add_argument(
        "--n-temperature",
        type=int,
        default=None,
        help="held-out people for temperature scaling (digits 200, Fashion-MNIST 2000)",
    )
    p.add_argument(
        "--training-runs",
        type=int,
        default=None,
        help="trainings of each private model, to show how much one random run varies "
        "(3; quick: 1)",
    )
    p.add_argument("--out", default="dpuq-report", help="report folder (dpuq-report)")
    p.add_argument("--no-report", action="store_true", help="print the table only")
    p.add_argument("--quick", action="store_true", help="a smaller, faster run (under a minute)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.set_defaults(func=run)


def _command(args: argparse.Namespace) -> str:
    skip = {"func", "command", "no_progress"}
    parts = ["dpuq", "demo"]
    for key, value in vars(args).items():
        if key == "temperature_scaling":  # on by default: only its absence is news
            parts += [] if value else ["--no-temperature-scaling"]
            continue
        if key in skip or value is None or value is False:
            continue
        flag = f"--{key.replace('_', '-')}"
        parts += [flag] if value is True else [flag, str(value)]
    return shlex.join(parts)


def run(args: argparse.Namespace) -> int:
    """``dpuq demo``, an experiment (:func:`dpuq.commands.reproduce.run_as_experiment`)."""
    from dpuq.commands.reproduce import run_as_experiment

    return run_as_experiment(_run, args)


def _run(args: argparse.Namespace) -> int:
    from dpuq.commands._checks import check_options

    check_extras(args)
    from dpuq.experiments.demo import DemoConfig, run_demo, write_report
    from dpuq.experiments.demo_results import format_demo
    from dpuq.reporting import check_output_dir

    check_options(args)
    if not args.no_report:
        check_output_dir(args.out)
    splits = args.splits or (50 if args.quick else 200)
    own = bool(args.probs or args.labels)
    if not own and (args.model_name or args.dataset_name):
        raise ValueError("--model-name and --dataset-name apply to --probs/--labels only")
    if own and args.train_delta is not None and args.train_epsilon is None:
        raise ValueError("--train-delta needs --train-epsilon (the declared training privacy)")
    train_epsilon = 3.0 if args.train_epsilon is None else args.train_epsilon
    config = DemoConfig(
        data="outputs" if own else args.data,
        alpha=args.alpha,
        epsilon=args.epsilon if args.epsilon is not None else train_epsilon,
        train_epsilon=train_epsilon,
        train_delta=1e-5 if args.train_delta is None else args.train_delta,
        model_name=args.model_name,
        dataset_name=args.dataset_name,
        declared_training=own and args.train_epsilon is not None,
        n_calibration=args.n_calibration,
        n_test=args.n_test,
        n_splits=splits,
        epochs=args.epochs,
        train_size=args.train_size,
        quick=args.quick,
        seed=args.seed,
        probs_path=args.probs,
        labels_path=args.labels,
        data_dir=args.data_dir,
        temperature_scaling=args.temperature_scaling,
        temperature_epsilon=args.temperature_epsilon,
        n_temperature=args.n_temperature,
        training_runs=args.training_runs,
    )
    result = run_demo(config, show_progress=not args.no_progress)
    print(format_demo(result))
    if args.seed is not None:
        print(f"\nseeded run (--seed {args.seed}): reproducible by anyone who knows the seed")
    if not args.no_report:
        path = write_report(result, args.out, _command(args), show_progress=not args.no_progress)
        print(f"\nreport: {path} (open it in a browser); figures and summary.md beside it")
    return 0
