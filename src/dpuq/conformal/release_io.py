"""Calibration release files: one JSON format for Python and the command line.

``dpuq calibrate -o FILE``, :meth:`PrivateCalibration.save` and the estimators'
``save_release`` all write the same object; ``dpuq predict``, :meth:`PrivateCalibration.load`
and ``load_release`` all read it through :func:`check_calibration_record`, which refuses a file
of another format version (an error saying "version"), a threshold off its own grid ``j/m``, or
fields that disagree (``confidence_level`` vs ``alpha``, the report's ε vs ``epsilon``, an
uninformative release whose threshold is not 1). The file holds released values only.

Fields: ``format`` ("dpuq-calibration"), ``format_version`` (2; 1 is still read),
``dpuq_version``, ``task`` ("scores", "classification" or "regression"), ``score`` (an object
with ``name`` and its public parameters), ``n_classes``, ``classes``, ``input``
("probabilities" or "logits") and ``temperature`` (classification), ``trail`` (optional: what
was released, when, from which data set, the ledger entry and the budget left; never a hash of
the data), ``confidence_level``, the fields of
:meth:`PrivateCalibration.to_dict` (``threshold``, ``level``, ``n_bins``, ``gamma``, ``epsilon``,
``alpha``, ``n``, ``informative``, ``privacy_report``) and ``seeded``.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

from dpuq.privacy.report import PrivacyReport

__all__ = [
    "CALIBRATION_FORMAT",
    "CALIBRATION_FORMAT_VERSION",
    "calibration_from_record",
    "calibration_record",
    "check_calibration_record",
    "read_calibration",
    "write_calibration",
]

CALIBRATION_FORMAT = "dpuq-calibration"
#: 2: classification releases record their score input (``"input"``: "probabilities" or
#: "logits", with ``"temperature"``) and may hold a ``"trail"`` (what, when, ledger entry).
#: Version 1 files are still read: there ``"input"`` was written for logits only.
CALIBRATION_FORMAT_VERSION = 2
CLASSIFICATION_SCORES = ("lac", "aps", "raps", "top_k")
REGRESSION_SCORES = ("absolute", "cqr")


def calibration_record(
    cal, *, task: str = "scores", score: dict | None = None, **extra: Any
) -> dict[str, Any]:
    """The JSON object of a release (``extra``: e.g. ``n_classes``, ``classes``)."""
    from dpuq._version import __version__

    return {
        "format": CALIBRATION_FORMAT,
        "format_version": CALIBRATION_FORMAT_VERSION,
        "dpuq_version": __version__,
        "task": task,
        "score": dict(score) if score is not None else {"name": "user-supplied"},
        **extra,
        "confidence_level": (
            [1.0 - a for a in cal.alpha] if isinstance(cal.alpha, tuple) else 1.0 - cal.alpha
        ),
        **cal.to_dict(),
        "seeded": bool(cal.privacy_report.seeded),
    }


def _number(rec: dict, key: str, label: str, lo: float, hi: float, *, lo_open=False) -> float:
    if key not in rec:
        raise ValueError(f"{label}: missing field {key!r}; was it written by `dpuq calibrate`?")
    v = rec[key]
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError(f"{label}: {key} must be a finite number, got {v!r}")
    if v < lo or v > hi or (lo_open and v == lo):
        bracket = "(" if lo_open else "["
        raise ValueError(f"{label}: {key} must be in {bracket}{lo:g}, {hi:g}], got {v!r}")
    return float(v)


def _integer(rec: dict, key: str, label: str, minimum: int) -> int:
    if key not in rec:
        raise ValueError(f"{label}: missing field {key!r}; was it written by `dpuq calibrate`?")
    v = rec[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise ValueError(f"{label}: {key} must be an integer >= {minimum}, got {v!r}")
    return v


def _check_task(rec: dict, label: str) -> None:
    task, score = rec.get("task"), rec.get("score")
    if task is None or score is None:
        raise ValueError(f"{label}: missing field 'task' or 'score'")
    if not isinstance(score, dict) or "name" not in score:
        raise ValueError(f"{label}: field 'score' must be an object with a 'name'")
    if task == "classification":
        if score["name"] not in CLASSIFICATION_SCORES:
            raise ValueError(f"{label}: unknown classification score {score['name']!r}")
        k = _integer(rec, "n_classes", label, 2)
        classes = rec.get("classes")
        if classes is not None and (not isinstance(classes, list) or len(classes) != k):
            raise ValueError(f"{label}: fields disagree: 'classes' does not list n_classes = {k}")
    elif task == "regression":
        if score["name"] not in REGRESSION_SCORES:
            raise ValueError(f"{label}: unknown regression score {score['name']!r}")
        b = score.get("bound")
        if isinstance(b, bool) or not isinstance(b, int | float) or not math.isfinite(b) or b <= 0:
            raise ValueError(f"{label}: score bound must be a number > 0, got {b!r}")
    elif task != "scores":
        raise ValueError(f"{label}: unknown task {task!r}")


def check_calibration_record(rec: Any, label: str = "calibration") -> dict[str, Any]:
    """Check a release object read from JSON; returns it. One-line :class:`ValueError`s."""
    if not isinstance(rec, dict):
        raise ValueError(f"{label}: expected a JSON object")
    if rec.get("format") != CALIBRATION_FORMAT:
        raise ValueError(f"{label}: not a dpuq calibration file (format {rec.get('format')!r})")
    version = rec.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{label}: missing or unknown format_version {version!r}")
    if version > CALIBRATION_FORMAT_VERSION:
        raise ValueError(
            f"{label}: format_version {version} is newer than this dpuq reads "
            f"({CALIBRATION_FORMAT_VERSION}): upgrade dpuq"
        )
    if isinstance(rec.get("threshold"), list):  # several levels from one joint release
        return _check_levels_record(rec, label)
    threshold = _number(rec, "threshold", label, 0.0, 1.0)
    m = _integer(rec, "n_bins", label, 2)
    j = round(threshold * m)
    if not (1 <= j <= m and j / m == threshold):
        raise ValueError(
            f"{label}: threshold {threshold!r} is not on its grid j/{m} (j = 1..{m}); "
            "the file was altered or is not a release"
        )
    alpha = _number(rec, "alpha", label, 0.0, 0.5, lo_open=True)
    epsilon = _number(rec, "epsilon", label, 0.0, math.inf, lo_open=True)
    _integer(rec, "n", label, 1)
    informative = rec.get("informative")
    if not isinstance(informative, bool):
        raise ValueError(f"{label}: informative must be true or false, got {informative!r}")
    if not informative and threshold != 1.0:
        raise ValueError(
            f"{label}: fields disagree: an uninformative release has threshold 1, got {threshold!r}"
        )
    if "confidence_level" in rec:
        cl = _number(rec, "confidence_level", label, 0.5, 1.0)
        if abs(cl - (1.0 - alpha)) > 1e-12:
            raise ValueError(
                f"{label}: fields disagree: confidence_level {cl!r} is not 1 - alpha ({alpha!r})"
            )
    report = rec.get("privacy_report")
    if report is not None:
        if not isinstance(report, dict):
            raise ValueError(f"{label}: privacy_report must be an object")
        r_eps = report.get("epsilon")
        free = not informative and r_eps == 0  # decided by public quantities: cost 0
        if not isinstance(r_eps, int | float) or (abs(r_eps - epsilon) > 1e-12 * epsilon
                                                  and not free):  # fmt: skip
            raise ValueError(
                f"{label}: fields disagree: privacy_report epsilon {r_eps!r} vs epsilon {epsilon!r}"
            )
    _check_task(rec, label)
    return rec


def calibration_from_record(rec: dict[str, Any], calibration_cls):
    """A ``calibration_cls`` (:class:`~dpuq.conformal.PrivateCalibration`) from a checked record.

    The class is passed in, so that this module does not import the one that imports it.
    """
    if isinstance(rec.get("threshold"), list):  # a joint release of several levels
        from dpuq.conformal.multilevel import MultiLevelCalibration

        calibration_cls = MultiLevelCalibration
    fields = {f.name for f in dataclasses.fields(calibration_cls)}
    values = {k: v for k, v in rec.items() if k in fields and k != "privacy_report"}
    r = rec.get("privacy_report") or {}
    values["privacy_report"] = PrivacyReport(
        mechanism=r.get("mechanism", "exponential mechanism (from a release file)"),
        epsilon=float(r.get("epsilon", rec["epsilon"])),
        delta=float(r.get("delta", 0.0)),
        relation=r.get("relation", "replace-one"),
        sensitivity=r.get("sensitivity", ""),
        details=r.get("details", {}),
        notes=tuple(r.get("notes", ())),
        seeded=bool(r.get("seeded", rec.get("seeded", False))),
    )
    for key in ("threshold", "level", "gamma", "epsilon", "alpha"):
        if isinstance(values.get(key), int):
            values[key] = float(values[key])
    if isinstance(values.get("threshold"), list):
        import numpy as np

        values["alpha"] = tuple(float(a) for a in values["alpha"])
        for key in ("threshold", "level", "certified_coverage"):
            values[key] = np.array([float(v) for v in values[key]])
        values["informative"] = np.array(values["informative"], dtype=bool)
    return calibration_cls(**values)


def read_calibration(path: str | os.PathLike, name: str = "calibration") -> dict[str, Any]:
    """Read and check a release file; returns the record."""
    from dpuq.io import read_json

    return check_calibration_record(read_json(path, name), f"{name} {str(path)!r}")


def write_calibration(
    path: str | os.PathLike, record: dict[str, Any], *, overwrite: bool = False
) -> None:
    """Write a record atomically; without ``overwrite`` an existing file is an error."""
    from dpuq.io import json_text
    from dpuq.io._atomic import release_file

    with release_file(path, force=overwrite, name="path") as pending:
        pending.write_text(json_text(record))
        pending.commit()


def estimator_record(est) -> dict[str, Any]:
    """The release record of a conformalized classifier or regressor."""
    est._check_conformalized()
    record = _estimator_record(est)
    if getattr(est, "release_trail_", None) is not None:
        record["trail"] = est.release_trail_
    return record


def _estimator_record(est) -> dict[str, Any]:
    if hasattr(est, "classes_"):
        classes = [c.item() if hasattr(c, "item") else c for c in est.classes_]
        score = {"name": est.conformity_score, **dict(est.score_params or {})}
        return calibration_record(
            est.calibration_,
            task="classification",
            score=score,
            n_classes=len(classes),
            classes=classes,
            input="probabilities",  # the estimator's predict_proba (or callable)
        )
    score = {"name": est.score_, "bound": float(est.bound_)}
    return calibration_record(est.calibration_, task="regression", score=score)


def restore_estimator(cls, rec: dict[str, Any], estimator, calibration_cls):
    """A conformal estimator of class ``cls`` wrapping ``estimator``, in its released state
    (its calibration a ``calibration_cls``, :class:`~dpuq.conformal.PrivateCalibration`)."""
    import numpy as np

    cal = calibration_from_record(rec, calibration_cls)
    params = {k: v for k, v in rec["score"].items() if k not in ("name", "bound")}
    level = [1.0 - a for a in cal.alpha] if isinstance(cal.alpha, tuple) else 1.0 - cal.alpha
    common = dict(epsilon=cal.epsilon, confidence_level=level, n_bins=cal.n_bins)
    if rec["task"] == "classification":
        if "bound" in rec["score"] or not hasattr(cls, "predict_set"):
            raise ValueError(f"a classification release cannot be loaded into {cls.__name__}")
        if rec.get("input", "probabilities") != "probabilities":
            raise ValueError(
                "this release was calibrated on logits (softmax temperature "
                f"{rec.get('temperature', 1.0):g}), but {cls.__name__} scores the estimator's "
                "probabilities: wrap a model whose probabilities are softmax(logits / T) and "
                "calibrate again, or predict with `dpuq predict --logits`"
            )
        est = cls(
            estimator, conformity_score=rec["score"]["name"], score_params=params or None, **common
        )
        classes = np.asarray(rec.get("classes", list(range(rec["n_classes"]))))
        own = getattr(estimator, "classes_", None)
        if own is not None and not np.array_equal(np.asarray(own), classes):
            raise ValueError("fields disagree: the estimator's classes_ differ from the release's")
        est.classes_ = classes
    elif rec["task"] == "regression":
        if not hasattr(cls, "predict_interval"):
            raise ValueError(f"a regression release cannot be loaded into {cls.__name__}")
        bound = float(rec["score"]["bound"])
        est = cls(estimator, conformity_score=rec["score"]["name"], bound=bound, **common)
        est.bound_, est.score_ = bound, rec["score"]["name"]
    else:
        raise ValueError(
            f"a release of task {rec['task']!r} is not an estimator's; use PrivateCalibration.load"
        )
    est.calibration_ = cal
    est.release_trail_ = rec.get("trail")
    est.threshold_ = cal.threshold
    est.privacy_report_ = cal.privacy_report
    est.n_calibration_ = cal.n
    return est


def _check_levels_record(rec: dict[str, Any], label: str) -> dict[str, Any]:
    """:func:`check_calibration_record` for a joint release of several levels (lists)."""
    m = _integer(rec, "n_bins", label, 2)
    _integer(rec, "n", label, 1)
    epsilon = _number(rec, "epsilon", label, 0.0, math.inf, lo_open=True)
    keys = ("threshold", "alpha", "informative", "confidence_level")
    lists = {k: rec.get(k) for k in keys}
    if any(not isinstance(v, list) or not v for v in lists.values()):
        raise ValueError(f"{label}: several levels need non-empty lists {', '.join(keys)}")
    if len({len(v) for v in lists.values()}) != 1:
        raise ValueError(f"{label}: fields disagree: the level lists differ in length")
    for k, (t, a, ok, cl) in enumerate(zip(*lists.values(), strict=True)):
        one = {"threshold": t, "alpha": a, "confidence_level": cl}
        t = _number(one, "threshold", f"{label} level {k}", 0.0, 1.0)
        a = _number(one, "alpha", f"{label} level {k}", 0.0, 0.5, lo_open=True)
        cl = _number(one, "confidence_level", f"{label} level {k}", 0.5, 1.0)
        j = round(t * m)
        if not (1 <= j <= m and j / m == t):
            raise ValueError(f"{label}: threshold {t!r} is not on its grid j/{m}")
        if not isinstance(ok, bool) or (not ok and t != 1.0) or abs(cl - (1.0 - a)) > 1e-12:
            raise ValueError(f"{label}: fields disagree at level {k}")
    report = rec.get("privacy_report")
    r_eps = report.get("epsilon") if isinstance(report, dict) else None
    free = r_eps == 0 and not any(lists["informative"])  # decided by public quantities
    if report is not None and (
        not isinstance(r_eps, int | float) or (abs(r_eps - epsilon) > 1e-12 * epsilon and not free)
    ):
        raise ValueError(f"{label}: fields disagree: privacy_report epsilon vs epsilon")
    _check_task(rec, label)
    return rec
