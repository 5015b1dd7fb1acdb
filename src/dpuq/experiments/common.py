"""Pieces shared by the demo and the reproductions: methods, one comparison, tables, summaries.

A *method* is one way of calibrating: the non-private split-conformal threshold, or the ε-DP
release with given bins. :func:`compare_methods` runs several methods on the **same** random
splits (a paired comparison) and returns their :class:`SplitMetrics`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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
from dpuq.reporting.files import markdown_table, text_table

__all__ = [
    "Method",
    "MethodResult",
    "compare_methods",
    "compare_on_models",
    "method_arrays",
    "method_histograms",
    "method_rows",
    "method_series",
    "method_table",
    "model_accuracy",
    "write_comparison",
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
    n_calibration: int | None = None,
    n_test: int | None = None,
    n_splits: int | None = None,
    random_state: RandomState,
    show_progress: bool = True,
    desc: str = "calibration methods",
    splits: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[MethodResult]:
    """Evaluate each method on the same ``n_splits`` random calibration/test splits.

    ``splits`` (calibration and test index arrays, as from
    :func:`dpuq.experiments.evaluation.random_splits`) replaces the random draw (and the
    sizes are then not needed).
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


def compare_on_models(
    models: list, labels: np.ndarray, methods: list[Method], splits, **kwargs: Any
) -> dict[str, tuple[float, float | None, list[MethodResult]]]:
    """Each model's accuracy, ECE and :func:`compare_methods` on the same ``splits``.

    ``models`` have ``name`` and ``probs`` (on the pool with ``labels``); ``kwargs`` go to
    :func:`compare_methods` (``alpha``, ``random_state``, ...). Models run in order, sharing
    the random state.
    """
    out = {}
    for model in models:
        pool = ScorePool.from_probs(model.probs, labels)
        results = compare_methods(pool, methods, splits=splits, **kwargs)
        out[model.name] = (*model_accuracy(model.probs, labels), results)
    return out


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


def method_series(results: list[MethodResult]) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(label, coverage per split, mean size per split) of each method, for the histograms."""
    return [(r.method.label, r.metrics.coverage, r.metrics.mean_size) for r in results]


def method_histograms(results: list[MethodResult], alpha: float, title: str):
    """Coverage and set-size histograms of the methods over the splits (one figure)."""
    from dpuq.reporting.figures import coverage_size_histograms

    return coverage_size_histograms(method_series(results), alpha, title)


def write_comparison(out, result, figure: str, figure_title: str, **results: Any):
    """The histograms of ``result.results`` (PNG file ``figure``), ``summary.md``,
    ``results.json`` and ``splits.npz`` into ``out``, atomically. ``result`` has ``config``
    (``alpha``, ``seed``), ``results`` and ``elapsed_s``; ``results`` (title, command, body,
    data) go to :func:`dpuq.reporting.write_experiment`."""
    from dpuq.reporting import write_experiment

    c = result.config
    fig = method_histograms(result.results, c.alpha, figure_title)
    arrays = method_arrays(result.results)
    return write_experiment(
        out,
        figures={figure: fig},
        seed=c.seed,
        elapsed_s=result.elapsed_s,
        arrays=arrays,
        **results,
    )


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
