"""``dpuq train``: train an (ε, δ)-DP model on a user's files (DPClassifier / DPRegressor).

The model file is the fitted estimator (released weights, declared settings, privacy report)
in a pickle container (:func:`dpuq.commands.outputs.load_model` reads it back): the released
model's outputs on other people then go to ``dpuq temperature``, ``dpuq calibrate`` and
``dpuq predict`` through ``dpuq outputs``.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
from pathlib import Path

from dpuq.commands._args import (
    add_command,
    add_seed_argument,
    charged_release,
    float_arg,
    ordered_pair,
    release_header,
    release_trail,
)

MODEL_FORMAT = "dpuq-model"
MODEL_FORMAT_VERSION = 1
MODEL_SUFFIXES = (".pkl",)

HELP = "train an (epsilon, delta)-DP model (DP-SGD or DP-SGLD) on your files"

DESCRIPTION = """\
Train a private classifier (--labels) or regressor (--targets) with DP-SGD or DP-SGLD on
your training people, one row per person, and write the model to a .pkl file. Every training
setting comes from dpuq's data-free recipe (docs/how-to/training.md), and --model auto picks
the network from public quantities only (the input shape, n, epsilon, delta, the classes):
a logistic (least-squares) model on tabular features, scattering features + a linear head
or a small CNN on images (--image-shape).

Privacy: (epsilon, delta)-DP for the training people (DP-SGD's per-example clipping and
Gaussian noise, PLD accounting), under replace-one neighbours with n public (the recipe and
the model choice read n; in Python, DPClassifier(relation="add/remove-one") is there too).
--dataset NAME (and --ledger PATH) charges (epsilon, delta) to
that data set's budget once every setting and input is checked, before training; a refused
setting costs nothing. Each run trains again and spends epsilon again.

Public inputs, never read off the data: --feature-bounds (each feature, or each pixel, is
clipped to them; without them the features are used as given and must already be on a
public scale), --target-bounds (regression), --n-classes (without it the classes are
0..max label, which treats the largest label as public, and the report says so).

Use the model on other people with `dpuq outputs` (logits or predictions: no privacy cost),
then `dpuq temperature`, `dpuq calibrate` and `dpuq predict` on people not trained on.
The .pkl file is a Python pickle: load only model files you made.

Files: .npy, .csv/.tsv/.txt (optional header line) or .parquet; features as a 2-d table
(images flattened row by row, with --image-shape H W or C H W).
"""

EPILOG = """\
examples:
  dpuq train --features train_x.csv --labels train_y.csv --feature-bounds 0 100 \\
      --epsilon 1 --delta 1e-5 --n-classes 3 --dataset clinic -o model.pkl
  dpuq outputs --model model.pkl --features cal_x.csv -o cal_logits.npy
  dpuq calibrate --logits cal_logits.npy --labels cal_y.csv --alpha 0.1 --epsilon 1 \\
      --dataset clinic-calibration -o calibration.json
  dpuq outputs --model model.pkl --features new_x.csv -o new_logits.npy
  dpuq predict --calibration calibration.json --logits new_logits.npy -o sets.csv
  dpuq train --features digits.npy --image-shape 28 28 --feature-bounds 0 255 \\
      --labels digits_y.npy --n-classes 10 --epsilon 1 --delta 1e-5 -o digits.pkl
"""

MODELS = ("auto", "linear", "mlp", "features", "cnn")
#: Most classes the command line trains (a model's per-example gradients grow with K).
MAX_CLASSES = 1000


def add_input_arguments(group) -> None:
    """``--features FILE`` and ``--image-shape`` (shared with ``dpuq outputs``)."""
    group.add_argument(
        "--features", metavar="FILE", required=True, help="one row per person, (n, d)"
    )
    group.add_argument(
        "--image-shape",
        type=int,
        nargs="+",
        metavar="N",
        help="rows are images flattened row by row: H W (grey) or C H W",
    )


def register(subparsers) -> None:
    p = add_command(subparsers, "train", HELP, DESCRIPTION, EPILOG)
    inputs = p.add_argument_group("inputs")
    add_input_arguments(inputs)
    inputs.add_argument("--labels", metavar="FILE", help="class indices 0..K-1 (classifier)")
    inputs.add_argument("--targets", metavar="FILE", help="numeric outcomes (regressor)")
    model = p.add_argument_group("model and privacy")
    model.add_argument("--epsilon", type=float_arg, required=True, help="privacy of training")
    model.add_argument("--delta", type=float_arg, required=True, help="e.g. below 1/n")
    model.add_argument("--method", choices=["dpsgd", "dpsgld"], default="dpsgd")
    model.add_argument("--model", choices=MODELS, default="auto", help="the network (auto)")
    for flag, what in (("--feature-bounds", "every feature (pixel)"),
                       ("--target-bounds", "the targets (regressor)")):  # fmt: skip
        model.add_argument(flag, type=float_arg, nargs=2, metavar=("LO", "HI"),
                           help=f"public range of {what}; values are clipped to it")  # fmt: skip
    model.add_argument("--n-classes", type=int, metavar="K", help="the classes are 0..K-1")
    model.add_argument(
        "--epochs", type=int, metavar="E", help="bound the training length (default: recipe)"
    )
    add_seed_argument(model)
    out = p.add_argument_group("output")
    out.add_argument("-o", "--output", required=True, metavar="FILE.pkl", help="the model file")
    out.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    from dpuq.commands.budget import add_ledger_arguments

    add_ledger_arguments(p)
    p.set_defaults(func=run)


def read_features(path, image_shape):
    """The ``(n, ...)`` inputs of ``--features``, reshaped to ``--image-shape`` if given."""
    from dpuq.io import read_matrix

    x = read_matrix(path, "--features")
    if image_shape is None:
        return x
    shape = tuple(image_shape)
    if len(shape) not in (2, 3) or min(shape) < 1:
        raise ValueError(f"--image-shape must be H W or C H W (positive), got {list(shape)}")
    size = 1
    for s in shape:
        size *= s
    if x.shape[1] != size:
        raise ValueError(
            f"--image-shape {' '.join(map(str, shape))} needs {size} columns per row, "
            f"--features has {x.shape[1]}"
        )
    return x.reshape((x.shape[0], *shape))


def _pair(values, flag: str):
    return None if values is None else ordered_pair(values, flag)


def _estimator(args, n_classes):
    from dpuq._validation import check_epsilon, check_in_open_unit
    from dpuq.training.estimators import DPClassifier, DPRegressor

    common = {
        "epsilon": check_epsilon(args.epsilon, "--epsilon"),
        "delta": check_in_open_unit(args.delta, "--delta"),
        "method": args.method,
        "model": args.model,
        "feature_bounds": _pair(args.feature_bounds, "--feature-bounds"),
        "show_progress": sys.stderr.isatty(),
        "random_state": args.seed,
    }
    if args.epochs is not None:
        if args.epochs < 1:
            raise ValueError(f"--epochs must be >= 1, got {args.epochs}")
        common["epochs"] = args.epochs
    if n_classes is None:
        return DPRegressor(**common, target_bounds=_pair(args.target_bounds, "--target-bounds"))
    return DPClassifier(**common, classes=list(range(n_classes)))


#: The report's note when the classes are read from the labels (replaces the estimator's
#: "declared" note: the command passes them as 0..K-1 either way).
READ_CLASSES_NOTE = (
    "classes 0..K-1 with K = the largest label in --labels + 1: the largest label is treated "
    "as public, like N (--n-classes declares K)."
)


def _classes(args, labels) -> tuple[int, str]:
    """The number of classes and where it came from (declared, or the largest label)."""
    if args.n_classes is not None:
        if not 2 <= args.n_classes <= MAX_CLASSES:
            raise ValueError(f"--n-classes must be in 2..{MAX_CLASSES}, got {args.n_classes}")
        if labels.size and (labels.min() < 0 or labels.max() >= args.n_classes):
            raise ValueError(f"--labels must be class indices in 0..{args.n_classes - 1}")
        return int(args.n_classes), "declared (--n-classes)"
    if labels.min() < 0:
        raise ValueError("--labels must be class indices 0..K-1 (no negative values)")
    k = int(labels.max()) + 1
    if not 2 <= k <= MAX_CLASSES:
        raise ValueError(f"--labels: class indices 0..K-1 with K in 2..{MAX_CLASSES} expected")
    return k, "0..largest label in --labels (pass --n-classes to declare them)"


def run(args: argparse.Namespace) -> int:
    from dpuq.io import check_output_path, read_vector

    # every setting, then every input, is checked before the charge: a refusal is free
    out = check_output_path(args.output, "-o", MODEL_SUFFIXES, force=args.force)
    if (args.labels is None) == (args.targets is None):
        raise ValueError("give exactly one of --labels (a classifier) and --targets (a regressor)")
    if args.labels is not None and args.target_bounds is not None:
        raise ValueError("--target-bounds applies to --targets (a regressor) only")
    if args.targets is not None and args.n_classes is not None:
        raise ValueError("--n-classes applies to --labels (a classifier) only")
    _estimator(args, 2 if args.labels is not None else None)._check_params()
    x = read_features(args.features, args.image_shape)
    flag = "--labels" if args.labels is not None else "--targets"
    y = read_vector(getattr(args, flag[2:]), flag, integer=args.labels is not None)
    if y.size != x.shape[0]:
        raise ValueError(f"{flag} has {y.size} entries but --features has {x.shape[0]} rows")
    if x.shape[0] < 2:
        raise ValueError("--features needs at least 2 rows (people)")
    k, classes_from = _classes(args, y) if args.labels is not None else (None, None)
    est = _estimator(args, k)
    task = "classification" if k is not None else "regression"
    network = _model_name(args, x, k)  # public quantities only; refusals cost nothing
    what = f"dpuq train ({task}, {args.method}, model {network})"
    settings = {"n": int(x.shape[0]), "input shape": list(x.shape[1:]), "task": task,
                "method": args.method, "model": network, "delta": args.delta,
                "relation": "replace-one"}  # fmt: skip
    with charged_release(out, args, args.epsilon, what, settings, deferred=True) as (
        pending,
        hook,
    ):
        est.fit(x, y, ledger=hook, dataset=args.dataset)
        if args.labels is not None and args.n_classes is None:
            est.privacy_report_ = dataclasses.replace(est.privacy_report_, notes=tuple(
                READ_CLASSES_NOTE if note.startswith("classes_ declared") else note
                for note in est.privacy_report_.notes))  # fmt: skip
        report = est.privacy_report_
        record = {
            **release_header(MODEL_FORMAT, MODEL_FORMAT_VERSION),
            "task": task,
            "classes": classes_from,
            "estimator": est,
            "privacy": report.to_dict(),
            "dataset": args.dataset,
            **release_trail(args, what, hook.receipt),
        }
        pending.write_bytes(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
        pending.commit()
    print(
        f"trained {type(est).__name__} ({est.model_name_}, {args.method}) on n = {x.shape[0]} "
        f"people: epsilon = {report.epsilon:.4g}, delta = {report.delta:g}, "
        f"{report.relation.value}"
        + (" [seeded: not private if the seed is known]" if report.seeded else "")
        + f"\n  model: {report.details.get('model (why)', est.model_name_)}"
        + (f"\n  classes: {k}, {classes_from}" if k is not None else "")
        + f"\nwrote {out} (use it with: dpuq outputs --model {Path(out).name} ...)",
        file=sys.stdout,
    )
    return 0


def _model_name(args, x, k) -> str:
    """The network ``--model`` gives on these inputs (``choose_model``: public quantities),
    or a one-line refusal before anything is charged."""
    from dpuq.training.auto_model import choose_model

    try:
        choice = choose_model(args.model, x.shape[1:], n_samples=int(x.shape[0]),
                              epsilon=float(args.epsilon), n_outputs=k or 1, seed=0)  # fmt: skip
    except RuntimeError as exc:  # images too small for the network's layers
        from dpuq.training._dp_estimator import shape_refusal

        shape = " ".join(map(str, x.shape[1:]))
        what = f"--model {args.model} cannot take inputs of shape {shape} (--image-shape)"
        raise shape_refusal(exc, what) from None
    return choice.name
