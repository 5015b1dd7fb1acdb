"""``dpuq demo``: the main job on the embedded default data set."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "demo",
        help="private prediction sets on sklearn's digits (the main job)",
        description="Train a classifier on sklearn's digits, release the conformal threshold "
        "with epsilon-DP from held-out calibration data, and report coverage, set size and the "
        "privacy guarantee over many random calibration/test splits.",
    )
    p.add_argument("--epsilon", type=float, default=1.0, help="privacy of calibration (1.0)")
    p.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (0.1)")
    p.add_argument("--n-calibration", type=int, default=500, help="calibration size (500)")
    p.add_argument("--splits", type=int, default=100, help="random splits (100)")
    p.add_argument(
        "--seed", type=int, default=None, help="seed for a reproducible run (default: OS entropy)"
    )
    p.add_argument("--quick", action="store_true", help="fewer splits, for a smoke test")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dpuq.experiments.demo import format_demo, run_demo

    splits = 20 if args.quick else args.splits
    result = run_demo(
        epsilon=args.epsilon,
        alpha=args.alpha,
        n_calibration=args.n_calibration,
        n_splits=splits,
        random_state=args.seed,
    )
    print(format_demo(result, args.alpha))
    return 0
