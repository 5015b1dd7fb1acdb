"""``dpuq outputs``: a trained model's logits, probabilities or predictions on new inputs.

Post-processing of a model released by ``dpuq train``: no privacy cost for the training
people. The people whose inputs are given are not protected by anything here: their outputs
are theirs, to be released privately by ``dpuq temperature`` or ``dpuq calibrate``.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

from dpuq.commands._args import add_command

HELP = "a trained model's logits or predictions for new inputs (no privacy cost)"

DESCRIPTION = """\
Run a model written by `dpuq train` on new inputs (one row per person, the same columns and
--image-shape as in training) and write its outputs: logits (n, K) for a classifier
(--probs: probabilities instead), predictions (n,) for a regressor. This is post-processing
of the released model: it costs the training people nothing. The outputs of calibration
people are theirs: release them only privately (`dpuq temperature`, `dpuq calibrate`).

The model file is a Python pickle: load only model files you made.
Output: .npy or .csv (one row per input).
"""

EPILOG = """\
examples:
  dpuq outputs --model model.pkl --features cal_x.csv -o cal_logits.npy
  dpuq outputs --model model.pkl --features new_x.csv --probs -o new_probs.csv
"""

OUTPUT_SUFFIXES = (".npy", ".csv")


def register(subparsers) -> None:
    from dpuq.commands.train import add_input_arguments

    p = add_command(subparsers, "outputs", HELP, DESCRIPTION, EPILOG)
    p.add_argument("--model", metavar="FILE.pkl", required=True, help="from dpuq train")
    add_input_arguments(p)
    p.add_argument("--probs", action="store_true", help="probabilities, not logits (classifier)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help=".npy or .csv")
    p.add_argument("--force", action="store_true", help="overwrite the output file if it exists")
    p.set_defaults(func=run)


def load_model(path) -> dict:
    """The record ``dpuq train`` wrote (``"estimator"``: the fitted DPClassifier/DPRegressor).

    A pickle: load only files you made (unpickling runs code)."""
    from dpuq.commands.train import MODEL_FORMAT, MODEL_FORMAT_VERSION

    p = Path(path)
    label = f"--model {str(p)!r}"
    if p.suffix.lower() != ".pkl":
        raise ValueError(f"{label}: a model file from dpuq train ends in .pkl")
    if not p.is_file():
        raise ValueError(f"{label}: no such file")
    try:
        with open(p, "rb") as fh:
            record = pickle.load(fh)  # the user's own model file (said in --help)
    except Exception as exc:  # truncated, not a pickle, a class that no longer exists ...
        raise ValueError(f"{label}: cannot read a dpuq model ({type(exc).__name__})") from None
    if not isinstance(record, dict) or record.get("format") != MODEL_FORMAT:
        raise ValueError(f"{label}: not a model file written by dpuq train")
    if record.get("format_version") != MODEL_FORMAT_VERSION:
        raise ValueError(
            f"{label}: model format version {record.get('format_version')!r}; this dpuq reads "
            f"version {MODEL_FORMAT_VERSION}"
        )
    from dpuq.training.estimators import DPClassifier, DPRegressor

    est, task = record.get("estimator"), record.get("task")
    kind = {"classification": DPClassifier, "regression": DPRegressor}.get(task)
    if kind is None or not isinstance(est, kind) or not hasattr(est, "model_"):
        raise ValueError(f"{label}: the file holds no fitted dpuq estimator for its task")
    return record


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from dpuq.commands._outputs import _csv_text
    from dpuq.commands.train import read_features
    from dpuq.io import check_output_path
    from dpuq.io._atomic import atomic_write

    out = check_output_path(args.output, "-o", OUTPUT_SUFFIXES, force=args.force)
    record = load_model(args.model)
    est, task = record["estimator"], record["task"]
    if args.probs and task != "classification":
        raise ValueError("--probs applies to a classifier; this model is a regressor")
    x = read_features(args.features, args.image_shape)
    shape = tuple(getattr(est, "input_shape_", x.shape[1:]))
    if tuple(x.shape[1:]) != shape:
        hint = " (pass the training's --image-shape)" if len(shape) > 1 else ""
        raise ValueError(
            f"--features: inputs of shape {tuple(x.shape[1:])}, the model was trained on "
            f"{shape}{hint}"
        )
    if task == "classification":
        values = est.predict_proba(x) if args.probs else est.predict_logits(x)
        kind = "probabilities" if args.probs else "logits"
        header = [f"class_{k}" for k in range(values.shape[1])]
    else:
        values, kind, header = est.predict(x)[:, None], "predictions", ["prediction"]

    def write(pending) -> None:
        if out.suffix.lower() == ".npy":
            pending.write_with(lambda tmp: np.save(tmp, values))
        else:
            pending.write_text(_csv_text(values, header, integer=False))

    atomic_write(out, write, force=args.force)
    print(
        f"wrote {kind} of {values.shape[0]} inputs ({values.shape[1]} column(s)) to {out}: "
        "post-processing of the released model, no privacy cost",
        file=sys.stdout,
    )
    return 0
