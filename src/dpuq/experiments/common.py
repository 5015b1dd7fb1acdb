"""Pieces shared by the demo and the reproductions: methods, one comparison, tables, summaries.

A *method* is one way of calibrating: the non-private split-conformal threshold, or the ε-DP
release with given bins. :func:`compare_methods` runs several methods on the **same** random
splits (a paired comparison) and returns their :class:`SplitMetrics`.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpuq._progress import progress
from dpuq.experiments.evaluation import (
    ScorePool,
    SplitMetrics,
    evaluate_thresholds,
    private_thresholds,
    random_splits,
    split_conformal_thresholds,
)
from dpuq.mechanisms.randomness import RandomState, check_random_state

__all__ = [
    "Method",
    "MethodResult",
    "compare_methods",
    "markdown_table",
    "method_arrays",
    "method_histograms",
    "method_rows",
    "method_table",
    "model_accuracy",
    "write_results",
]


@dataclass(frozen=True)
class Method:
    """A calibration method: ``epsilon=None`` is the non-private split-conformal threshold.

    ``calibration``: ``"certified"`` (default) or ``"paper"`` (see :func:`dpuq.calibrate`).
    """

    label: str
    epsilon: float | None = None
    n_bins: int | str = "auto"
    calibration: str = "certified"


@dataclass(frozen=True)
class MethodResult:
    """Metrics of one method over the splits, and the public settings it used."""

    method: Method
    metrics: SplitMetrics
    settings: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """A JSON-ready summary row."""
        return {"method": self.method.label, **self.settings, **self.metrics.summary()}


def compare_methods(
    pool: ScorePool,
    methods: list[Method],
    *,
    alpha: float,
    n_calibration: int,
    n_test: int | None,
    n_splits: int,
    random_state: RandomState,
    show_progress: bool = True,
    desc: str = "calibration methods",
    splits: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[MethodResult]:
    """Evaluate each method on the same ``n_splits`` random calibration/test splits.

    ``splits`` (calibration and test index arrays, as from
    :func:`dpuq.experiments.evaluation.random_splits`) replaces the random draw.
    """
    rng = check_random_state(random_state)
    if splits is None:
        splits = random_splits(pool.n_points, n_calibration, n_test, n_splits, rng)
    cal_idx, test_idx = splits
    cal_scores = pool.true_scores[cal_idx]
    results = []
    for method in progress(methods, desc, disable=not show_progress):
        if method.epsilon is None:
            t = split_conformal_thresholds(cal_scores, alpha)
            settings = {"epsilon": math.inf, "n_bins": None, "level": None}
        else:
            rel = private_thresholds(
                cal_scores,
                alpha=alpha,
                epsilon=method.epsilon,
                n_bins=method.n_bins,
                method=method.calibration,
                random_state=rng,
            )
            t = rel.thresholds
            settings = {
                "method": rel.method,
                "epsilon": rel.epsilon,
                "n_bins": rel.n_bins,
                "gamma": rel.gamma,
                "level": rel.level,
                "informative": rel.informative,
            }
        results.append(MethodResult(method, evaluate_thresholds(pool, test_idx, t), settings))
    return results


def model_accuracy(probs: np.ndarray, labels: np.ndarray) -> tuple[float, float | None]:
    """Top-1 accuracy and expected calibration error (None without scikit-learn's extras)."""
    accuracy = float(np.mean(probs.argmax(axis=1) == labels))
    try:
        from dpuq.metrics.calibration import expected_calibration_error
    except ImportError:
        return accuracy, None
    return accuracy, float(expected_calibration_error(probs, labels))


def method_arrays(results: list[MethodResult]) -> dict[str, np.ndarray]:
    """The per-split arrays of each method, keyed ``"{i}_{name}"`` (``splits.npz``)."""
    return {
        f"{i}_{k}": getattr(r.metrics, k)
        for i, r in enumerate(results)
        for k in ("coverage", "mean_size", "thresholds")
    }


def method_histograms(results: list[MethodResult], alpha: float, title: str):
    """Coverage and set-size histograms of the methods over the splits (one figure)."""
    from dpuq.experiments.plots import coverage_size_histograms

    series = [(r.method.label, r.metrics.coverage, r.metrics.mean_size) for r in results]
    return coverage_size_histograms(series, alpha, title)


def method_table(results: list[MethodResult], *, markdown: bool = False) -> str:
    """The methods' summary table (:data:`METHOD_HEADER`), for the terminal or markdown."""
    return (markdown_table if markdown else text_table)(METHOD_HEADER, method_rows(results))


def _fmt_eps(eps) -> str:
    return "∞ (not private)" if eps is None or eps == math.inf else f"{eps:g}"


def method_rows(results: list[MethodResult]) -> list[list[str]]:
    """Rows of strings: method, ε, bins m, level, coverage [5-95%], size [5-95%], singletons."""
    rows = []
    for r in results:
        s = r.metrics.summary()
        m = r.settings.get("n_bins")
        q = r.settings.get("level")
        rows.append(
            [
                r.method.label,
                _fmt_eps(r.settings.get("epsilon")),
                "–" if m is None else str(m),
                "–" if q is None else f"{q:.4f}",
                f"{s['coverage_mean']:.4f} [{s['coverage_p5']:.4f}, {s['coverage_p95']:.4f}]",
                f"{s['size_mean']:.3f} [{s['size_p5']:.3f}, {s['size_p95']:.3f}]",
                f"{s['singleton_share']:.3f}",
            ]
        )
    return rows


METHOD_HEADER = [
    "calibration",
    "ε (calibration)",
    "bins m",
    "level (ρ*/n or q̃)",
    "coverage mean [5%, 95%]",
    "mean set size [5%, 95%]",
    "singletons",
]


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub markdown table.

    Examples
    --------
    >>> print(markdown_table(["a", "b"], [["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain aligned table for the terminal.

    Examples
    --------
    >>> print(text_table(["a", "bb"], [["1", "2"]]))
    a  bb
    1  2
    """
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    out = []
    for row in [header, *rows]:
        out.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(out)


def write_results(
    directory: Path,
    *,
    title: str,
    command: str,
    seed: int | str | None,
    elapsed_s: float,
    body: str,
    data: dict[str, Any],
    arrays: dict[str, np.ndarray] | None = None,
) -> None:
    """Write ``summary.md`` (title, command, seed, time, ``body``), ``results.json`` and,
    when given, ``splits.npz`` (per-split arrays, to redraw the figures)."""
    from dpuq.io import write_json

    header = [
        f"# {title}",
        "",
        "Made by:",
        "",
        "```bash",
        command,
        "```",
        "",
        f"Seed: {'none (OS entropy)' if seed is None else seed}. "
        f"Run time: {elapsed_s:.1f} s on {_machine()}. "
        f"Written {time.strftime('%Y-%m-%d')} by dpuq.",
        "",
    ]
    (directory / "summary.md").write_text("\n".join(header) + body.rstrip() + "\n", "utf-8")
    write_json(directory / "results.json", {"title": title, "command": command, **data})
    if arrays:
        np.savez_compressed(directory / "splits.npz", **arrays)


def _machine() -> str:
    import os
    import platform

    return f"{os.cpu_count()} CPU core(s), Python {platform.python_version()}"


def dumps(obj: Any) -> str:
    """Compact JSON for logs."""
    return json.dumps(obj, default=float)
