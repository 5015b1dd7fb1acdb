"""Command-line helpers for several levels and for ``-o -``: level lists, outputs to stdout.

``--alpha 0.05,0.1,0.2`` (or ``--confidence-level 0.95,0.9,0.8``) asks for one joint release of
several levels; ``dpuq predict`` then writes one set or interval per level into one file:

- ``.npy``: the array, (n, K, L) sets or (n, 2, L) intervals;
- ``.csv``: columns ``class@confidence`` (sets, 0/1) or ``lower@confidence,upper@confidence``;
- ``.json``: ``{"confidence_level": [...], "sets": [per level: per row the classes]}`` or
  ``{"confidence_level": [...], "lower": [per level], "upper": [per level]}``.

``-o -`` writes the csv (or, with ``--format json``, the JSON) text to stdout; messages then go
to stderr, so stdout holds only the data.
"""

from __future__ import annotations

import argparse
import io
import sys

import numpy as np

__all__ = ["levels_arg", "resolve_alpha", "summary_stream", "write_output"]


def levels_arg(text: str) -> float | list[float]:
    """A number, or a comma-separated list of numbers (several levels)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number or a comma-separated list of numbers, got {text!r}"
        ) from None
    return values[0] if len(values) == 1 else values


def resolve_alpha(args) -> float | list[float]:
    """``--alpha``, or ``1 - --confidence-level`` (exactly one of them), checked."""
    from dpuq._validation import alpha_from_confidence, check_alpha

    alpha, level = getattr(args, "alpha", None), getattr(args, "confidence_level", None)
    if (alpha is None) == (level is None):
        raise ValueError("give exactly one of --alpha and --confidence-level")
    if level is not None:
        levels = level if isinstance(level, list) else [level]
        for v in levels:
            if not 0.5 <= v < 1.0:
                raise ValueError(f"--confidence-level must be in [0.5, 1), got {v!r}")
        alpha = (
            [alpha_from_confidence(v) for v in levels]
            if isinstance(level, list)
            else alpha_from_confidence(level)
        )
        name = "1 - --confidence-level"
    else:
        name = "--alpha"
    if isinstance(alpha, list):
        checked = [check_alpha(a, name) for a in alpha]
        if len(set(checked)) != len(checked):
            raise ValueError(f"{name} must not repeat a level, got {alpha}")
        return checked
    return check_alpha(alpha, name)


def summary_stream(out):
    """Where messages go: stderr when the data go to stdout (``-o -``)."""
    return sys.stderr if str(out) == "-" else sys.stdout


def _label(value: float) -> str:
    return f"{value:.6g}"


def _csv_text(arr: np.ndarray, header: list[str], integer: bool) -> str:
    buf = io.StringIO()
    fmt = "%d" if integer else "%.17g"
    np.savetxt(buf, arr, fmt=fmt, delimiter=",", header=",".join(header), comments="")
    return buf.getvalue()


def _render(kind: str, arr: np.ndarray, classes: list | None, levels, fmt: str):
    """csv or json text of sets (n, K[, L]) or intervals (n, 2[, L])."""
    from dpuq.io import json_text

    multi = arr.ndim == 3
    conf = [1.0 - a for a in levels] if multi else None
    if kind == "sets":
        if fmt == "json":
            names = np.asarray(classes)
            if not multi:
                return json_text({"classes": list(classes),
                                  "sets": [names[row].tolist() for row in arr]})  # fmt: skip
            per_level = [[names[row].tolist() for row in arr[:, :, k]] for k in range(arr.shape[2])]
            return json_text({"confidence_level": conf, "classes": list(classes),
                              "sets": per_level})  # fmt: skip
        if not multi:
            return _csv_text(arr.astype(np.int8), [str(c) for c in classes], True)
        header = [f"{c}@{_label(v)}" for v in conf for c in classes]
        flat = np.concatenate([arr[:, :, k] for k in range(arr.shape[2])], axis=1)
        return _csv_text(flat.astype(np.int8), header, True)
    if fmt == "json":
        if not multi:
            return json_text({"lower": arr[:, 0].tolist(), "upper": arr[:, 1].tolist()})
        lower = [arr[:, 0, k].tolist() for k in range(arr.shape[2])]
        upper = [arr[:, 1, k].tolist() for k in range(arr.shape[2])]
        return json_text({"confidence_level": conf, "lower": lower, "upper": upper})
    if not multi:
        return _csv_text(arr, ["lower", "upper"], False)
    header = [f"{side}@{_label(v)}" for v in conf for side in ("lower", "upper")]
    flat = np.concatenate([arr[:, :, k] for k in range(arr.shape[2])], axis=1)
    return _csv_text(flat, header, False)


def write_output(out, kind: str, arr: np.ndarray, *, classes=None, levels=None, fmt=None):
    """Write sets or intervals to the path ``out`` (by suffix) or to stdout (``"-"``)."""
    from dpuq.io import write_intervals, write_sets
    from dpuq.io._atomic import atomic_write

    if str(out) == "-":
        sys.stdout.write(_render(kind, arr, classes, levels, fmt or "csv"))
        sys.stdout.flush()
        return
    suffix = str(out).lower().rsplit(".", 1)[-1]
    if arr.ndim == 2:  # one level: the established writers
        if kind == "sets":
            write_sets(out, arr, classes)
        else:
            write_intervals(out, arr)
        return
    if suffix == "npy":
        atomic_write(out, lambda f: f.write_with(lambda t: np.save(t, arr)))
        return
    text = _render(kind, arr, classes, levels, "json" if suffix == "json" else "csv")
    atomic_write(out, lambda f: f.write_text(text))
