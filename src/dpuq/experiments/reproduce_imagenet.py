"""The paper's Figures 5 and 6 (Angelopoulos et al. 2022, §4.2-4.3) at ImageNet scale.

Design (as in the paper): a fixed classifier's outputs on 50,000 images of 1000 classes;
100 random splits into n = 30,000 calibration and 20,000 evaluation images; LAC scores;
α = 0.1.

- ``bins`` (Figure 5): ε = 1 and m ∈ {0.05, 0.1, 1, 10}·nε and the automatic m*.
- ``epsilon`` (Figure 6): ε ∈ {0.5, 1, 5, 10}, each with its own m*.

Each also runs the non-private split-conformal threshold on the same splits, as the
reference. Model outputs: a user's cached logits (or probabilities) and labels, e.g. a
ResNet-152's on the ImageNet validation set; otherwise the documented synthetic generator of
:mod:`dpuq.experiments.synthetic_logits` (ImageNet itself cannot be downloaded here).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpuq._validation import check_labels, check_probabilities
from dpuq.experiments.common import (
    Method,
    MethodResult,
    compare_methods,
    method_table,
    write_comparison,
)
from dpuq.experiments.evaluation import ScorePool
from dpuq.experiments.synthetic_logits import softmax, synthetic_imagenet_logits

__all__ = ["ImagenetConfig", "ImagenetResult", "load_outputs", "run_imagenet"]

BIN_FACTORS = (0.05, 0.1, 1.0, 10.0)
EPSILONS = (0.5, 1.0, 5.0, 10.0)


@dataclass(frozen=True)
class ImagenetConfig:
    """Sizes and settings; the defaults are the paper's."""

    experiment: str = "epsilon"  # "bins" or "epsilon"
    n_calibration: int = 30_000
    n_test: int = 20_000
    n_classes: int = 1000
    n_splits: int = 100
    alpha: float = 0.1
    epsilon: float = 1.0  # for "bins"
    epsilons: tuple[float, ...] = EPSILONS  # for "epsilon"
    bin_factors: tuple[float, ...] = BIN_FACTORS  # for "bins"
    seed: int | None = 0


@dataclass(frozen=True)
class ImagenetResult:
    config: ImagenetConfig
    source: str
    accuracy: float
    results: list[MethodResult]
    elapsed_s: float


def load_outputs(
    *, logits_path=None, probs_path=None, labels_path=None
) -> tuple[np.ndarray, np.ndarray, str]:
    """Read a user's cached model outputs: logits or probabilities (n, K) and labels (n,).

    Files are ``.npy``, ``.csv``/``.tsv``/``.txt`` or ``.parquet`` (:mod:`dpuq.io`). Logits
    are turned into probabilities with a softmax. Every problem (wrong shape, NaN or inf,
    labels out of range, probabilities that do not sum to 1) is one ``ValueError`` line.

    Returns probabilities, labels and a one-line description of the source.
    """
    from dpuq.io import read_matrix, read_vector

    if (logits_path is None) == (probs_path is None):
        raise ValueError("give exactly one of --logits or --probs (with --labels)")
    if labels_path is None:
        raise ValueError("--labels is required with --logits or --probs")
    if logits_path is not None:
        matrix = read_matrix(logits_path, "--logits")
        name, path = "--logits", logits_path
    else:
        matrix = read_matrix(probs_path, "--probs")
        name, path = "--probs", probs_path
    if matrix.shape[1] < 2:
        raise ValueError(
            f"{name} {str(path)!r}: expected one column per class (n_samples, n_classes >= 2), "
            f"got shape {matrix.shape}"
        )
    labels = read_vector(labels_path, "--labels", integer=True)
    try:
        labels = check_labels(labels, matrix.shape[1], matrix.shape[0], "--labels")
    except ValueError as exc:
        raise ValueError(f"{exc} (for {name} of shape {matrix.shape})") from None
    if logits_path is not None:
        probs = softmax(matrix)
    else:
        probs = check_probabilities(matrix, "--probs")
    source = f"{name} {Path(path).name} ({matrix.shape[0]} points, {matrix.shape[1]} classes)"
    return probs, labels, source


def _pool(config: ImagenetConfig, probs, labels, show_progress: bool) -> tuple[ScorePool, str]:
    if probs is None:
        n = config.n_calibration + config.n_test
        logits, labels = synthetic_imagenet_logits(
            n,
            config.n_classes,
            random_state=np.random.default_rng([config.seed or 0, 1]),
            show_progress=show_progress,
        )
        probs = softmax(logits)
        del logits
        source = (
            f"synthetic ResNet-152-like logits ({n} images, {config.n_classes} classes; "
            "dpuq.experiments.synthetic_logits)"
        )
    else:
        need = config.n_calibration + config.n_test
        if probs.shape[0] < need:
            raise ValueError(
                f"the model outputs have {probs.shape[0]} points; n_calibration + n_test = {need}"
            )
        source = ""
    return ScorePool.from_probs(probs, labels, show_progress=show_progress), source


def _methods(config: ImagenetConfig) -> list[Method]:
    methods = [Method("split conformal (not private)")]
    if config.experiment == "bins":
        n_eps = config.n_calibration * config.epsilon
        for f in config.bin_factors:  # the paper's Figure 5: its Algorithm 3 on fixed grids
            m = max(2, round(f * n_eps))
            methods.append(Method(f"private, m = {f:g}·nε = {m}", config.epsilon, m, "paper"))
        methods.append(Method("private, m = m* (auto)", config.epsilon, "auto", "paper"))
        methods.append(Method("private, certified, m* (auto)", config.epsilon, "auto"))
    elif config.experiment == "epsilon":
        for eps in config.epsilons:
            methods.append(Method(f"private, ε = {eps:g} (m*)", eps, "auto"))
    else:
        raise ValueError(f"experiment must be 'bins' or 'epsilon', got {config.experiment!r}")
    return methods


def run_imagenet(
    config: ImagenetConfig,
    *,
    probs: np.ndarray | None = None,
    labels: np.ndarray | None = None,
    source: str = "",
    show_progress: bool = True,
) -> ImagenetResult:
    """Run Figure 5 (``bins``) or 6 (``epsilon``) on given outputs, or on synthetic ones."""
    start = time.perf_counter()
    methods = _methods(config)
    pool, synthetic_source = _pool(config, probs, labels, show_progress)
    accuracy = float(np.mean(pool.true_scores <= pool.sorted_scores[:, 0]))
    results = compare_methods(
        pool,
        methods,
        alpha=config.alpha,
        n_calibration=config.n_calibration,
        n_test=config.n_test,
        n_splits=config.n_splits,
        random_state=np.random.default_rng([config.seed or 0, 2]),
        show_progress=show_progress,
    )
    return ImagenetResult(
        config, source or synthetic_source, accuracy, results, time.perf_counter() - start
    )


def format_result(result: ImagenetResult) -> str:
    """Terminal summary."""
    c = result.config
    return "\n".join(
        [
            f"dpuq reproduce {c.experiment}: {result.source}",
            f"top-1 accuracy {result.accuracy:.3f}; n = {c.n_calibration} calibration, "
            f"{c.n_test} test, {c.n_splits} splits, α = {c.alpha:g}",
            "",
            method_table(result.results),
        ]
    )


def write_imagenet(result: ImagenetResult, out: str | Path, command: str) -> Path:
    """Figure, ``summary.md``, ``results.json`` and ``splits.npz`` into ``out`` (atomically)."""
    c = result.config
    figure_no = 5 if c.experiment == "bins" else 6
    what = (
        f"the number of bins m (ε = {c.epsilon:g})"
        if c.experiment == "bins"
        else "the privacy level ε (m = m* for each ε)"
    )
    title = f"Figure {figure_no}: coverage and set size for different values of " + what
    name = f"figure{figure_no}_{c.experiment}.png"
    body = [
        f"Model outputs: {result.source}; top-1 accuracy {result.accuracy:.3f}.",
        f"n = {c.n_calibration} calibration and {c.n_test} evaluation points, "
        f"{c.n_splits} random splits, α = {c.alpha:g}, LAC scores. Every method uses "
        "the same splits.",
        "",
        method_table(result.results, markdown=True),
        "",
        f"![{title}]({name})",
        "",
        _reading(result),
    ]
    return write_comparison(
        out,
        result,
        name,
        f"{title}\n{result.source}; n = {c.n_calibration}, {c.n_splits} splits",
        title=f"dpuq reproduce {c.experiment} — the paper's {title}",
        command=command,
        body="\n".join(body),
        data={
            "config": c.__dict__,
            "source": result.source,
            "accuracy": result.accuracy,
            "methods": [r.row() for r in result.results],
        },
    )


def _reading(result: ImagenetResult) -> str:
    c = result.config
    base = result.results[0].metrics
    lines = [
        f"Reading: non-private split conformal covers {base.coverage.mean():.4f} on average "
        f"(target {1 - c.alpha:.2f}) with mean set size {base.mean_size.mean():.3f}."
    ]
    for r in result.results[1:]:
        m = r.metrics
        full = m.coverage.mean() > 0.9999 and m.mean_size.mean() > 0.999 * (m.size_counts.size - 1)
        if full:
            lines.append(
                f"{r.method.label}: full sets (threshold 1): the level "
                f"{r.settings['level']:.4f} rounds up to the last of only m = "
                f"{r.settings['n_bins']} bins, since m* is tuned for uniform scores and these "
                "concentrate near 1."
            )
        else:
            lines.append(
                f"{r.method.label}: coverage {m.coverage.mean():.4f}, size "
                f"{m.mean_size.mean():.3f} (+{m.mean_size.mean() - base.mean_size.mean():.3f} "
                "over non-private)."
            )
    lines.append(
        "The private threshold aims at a level above 1 - α (q̃ for the paper's method, ρ*/n "
        "for the certified one) to absorb the privacy "
        "noise, so it covers a little more than the target; the set-size cost of privacy is "
        "the gap to the non-private row."
    )
    return "\n\n".join(lines)
