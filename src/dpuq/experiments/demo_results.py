"""What the demo returns and how it reads: settings, results, the table and the privacy text.

Both the demo (:mod:`dpuq.experiments.demo`, which computes a :class:`DemoResult`) and its
report (:mod:`dpuq.experiments.demo_report`, which writes one) use this module; neither
imports the other's internals (the demo calls the report one way, to write it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpuq.experiments.common import MethodResult
from dpuq.experiments.models import TrainedModel
from dpuq.privacy.report import PrivacyReport
from dpuq.reporting import text_table

__all__ = [
    "TABLE_HEADER",
    "DemoConfig",
    "DemoResult",
    "PipelineResult",
    "format_demo",
    "privacy_text",
    "spread_text",
    "table_rows",
]


@dataclass(frozen=True)
class DemoConfig:
    """Settings of :func:`run_demo` (the CLI's options)."""

    data: str = "digits"  # "digits", "fashion-mnist" or "outputs"
    alpha: float = 0.1
    epsilon: float = 3.0  # calibration (the CLI's default: the training ε)
    train_epsilon: float = 3.0
    train_delta: float = 1e-5
    n_calibration: int | None = None  # default per data set
    n_test: int | None = None
    n_splits: int = 200
    epochs: int | None = None
    train_size: int | None = None
    quick: bool = False
    seed: int | None = None
    probs_path: str | None = None
    labels_path: str | None = None
    data_dir: str | None = None
    temperature_scaling: bool = True  # private models: private temperature scaling
    temperature_epsilon: float | None = None  # default: the calibration ε
    n_temperature: int | None = None  # held-out people for it (default per data set)
    training_runs: int | None = None  # trainings of each private model (default 3; quick: 1)
    model_name: str | None = None  # --probs: the user's name for the model
    dataset_name: str | None = None  # --probs: the user's name for the data set
    declared_training: bool = False  # --probs: train_epsilon/delta declared by the user


@dataclass
class PipelineResult:
    """One model with one calibration method."""

    model: str
    calibration: str
    result: MethodResult
    training_privacy: PrivacyReport | None
    calibration_privacy: PrivacyReport | None
    combined: PrivacyReport | None


@dataclass
class DemoResult:
    config: DemoConfig
    data_name: str
    n_train: int
    n_calibration: int
    n_test: int
    classes: list[str]
    models: list[TrainedModel]
    accuracy: dict[str, float]
    ece: dict[str, float | None]
    pipelines: list[PipelineResult]
    notes: list[str]
    elapsed_s: float
    examples: list[dict] = field(default_factory=list)
    pool_images: np.ndarray | None = None
    pool_labels: np.ndarray | None = None
    class_table: list[dict] = field(default_factory=list)  # per-class: marginal vs Mondrian


def _fmt(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _pair(r) -> str:
    return f"({r.epsilon:.3g}, {r.delta:.0e})" if r.delta else f"({r.epsilon:.3g}, 0)"


def _training_cell(p: PipelineResult, models) -> str:
    """The model's privacy; for a temperature-scaled model its parts and their total."""
    if p.training_privacy is None:
        return "∞ (not private)"
    model = next((m for m in models if m.name == p.model), None)
    t_report = None if model is None else model.info.get("temperature_privacy")
    base = next((m for m in models if t_report is not None and m.name != p.model
                 and p.model.startswith(m.name) and m.privacy is not None), None)  # fmt: skip
    if t_report is None or base is None:
        return _pair(p.training_privacy)
    return (
        f"training {_pair(base.privacy)}, temperature step {_pair(t_report)}: total "
        f"{_pair(p.training_privacy)}"
    )


def _privacy_cell(p: PipelineResult, models=()) -> str:
    train = _training_cell(p, models)
    cal = "∞" if p.calibration_privacy is None else f"{p.calibration_privacy.epsilon:g}"
    total = (
        "∞ (not private)"
        if p.combined is None
        else f"({p.combined.epsilon:.3g}, {p.combined.delta:.0e})"
    )
    return train, cal, total


TABLE_HEADER = [
    "model",
    "calibration",
    "accuracy",
    "ECE",
    "coverage mean [5%, 95%]",
    "mean set size",
    "singletons",
    "training (ε, δ)",
    "calibration ε",
    "whole pipeline (ε, δ)",
]


def table_rows(result: DemoResult) -> list[list[str]]:
    rows = []
    for p in result.pipelines:
        s = p.result.metrics.summary()
        train, cal, total = _privacy_cell(p, result.models)
        rows.append(
            [
                p.model,
                p.calibration,
                _fmt(result.accuracy[p.model]),
                _fmt(result.ece[p.model], 4),
                f"{s['coverage_mean']:.3f} [{s['coverage_p5']:.3f}, {s['coverage_p95']:.3f}]",
                f"{s['size_mean']:.2f}",
                f"{s['singleton_share']:.2f}",
                train,
                cal,
                total,
            ]
        )
    return rows


def privacy_text(result: DemoResult) -> list[str]:
    """Plain-language privacy statements for the terminal and the report."""
    c = result.config
    lines = []
    private_models = [m for m in result.models if m.privacy is not None]
    for m in private_models:
        p = m.privacy
        t_report = m.info.get("temperature_privacy")
        if t_report is not None:
            lines.append(
                f"Temperature scaling ({m.name}): T = {m.info['temperature']:.3g} released "
                f"with ε = {t_report.epsilon:g} (pure, δ = 0) for the "
                f"{t_report.details['n (public)']} held-out people (not trained on, not "
                "calibration people) by the exponential mechanism; neighbouring relation: "
                f"{t_report.neighbouring}."
            )
            continue
        accountant = p.details.get("accountant", p.mechanism)
        lines.append(
            f"Training ({m.name}): ({p.epsilon:.3g}, {p.delta:.0e})-differentially private for "
            f"the {result.n_train} training people, neighbouring relation: {p.neighbouring} "
            f"(target ({c.train_epsilon:g}, {c.train_delta:.0e}); accountant: {accountant})."
        )
    same = (
        " (the training ε: it costs nothing extra, see below)"
        if (private_models and c.epsilon == c.train_epsilon)
        else ""
    )
    lines.append(
        f"Calibration: the private threshold is ε = {c.epsilon:g}{same}-differentially private "
        f"(pure, δ = 0) for the {result.n_calibration} calibration people, neighbouring "
        "relation: one person's record replaced by another's, n public."
    )
    if private_models:
        combined = [
            p.combined
            for p in result.pipelines
            if p.combined is not None and p.calibration.startswith("private")
        ]
        whole = max(combined, key=lambda r: (r.epsilon, r.delta)) if combined else None
        parts = (
            "training, temperature scaling or calibration"
            if any("temperature_privacy" in m.info for m in private_models)
            else "training or calibration"
        )
        e_train = max(
            (m.privacy.epsilon for m in private_models if "temperature_privacy" not in m.info),
            default=0.0,
        )
        e_temp = max(
            (m.info["temperature_privacy"].epsilon for m in private_models
             if "temperature_privacy" in m.info),
            default=0.0,
        )  # fmt: skip
        if whole is not None:
            lines.append(
                f"Whole pipeline (private model + private threshold): ({whole.epsilon:.3g}, "
                f"{whole.delta:.0e})-differentially private under one neighbouring relation, "
                f"{whole.relation.value} (one person's record replaced by another's; part sizes "
                f"public). People are assigned to {parts} at random, before and independently "
                "of their data, and each record is used in one part only, so parallel "
                "composition applies (dpuq.report.compose_disjoint): the other parts' outputs "
                "depend on that record only through released values, and each person is "
                "protected by the guarantee of their own part, the largest being "
                f"max(ε) = {whole.epsilon:.3g}. Had the same people been used for all parts, "
                "sequential composition would add the ε instead: "
                f"{e_train + e_temp + c.epsilon:.3g}."
            )
    lines.append(
        "A non-private model or threshold gives its people no guarantee (ε = ∞), whatever "
        "the other part does. The test people are only used to measure; in use they are "
        "new patients whose data are not released. The demo repeats the calibration on "
        f"{c.n_splits} random splits to measure its behaviour: a deployment releases one."
    )
    return lines


def model_choice_text(result: DemoResult) -> str:
    """Technical details: the model family, why (public reasoning), and the recipe."""
    infos = [m.info for m in result.models if m.info.get("model family")]
    if not infos:
        return ""
    first = infos[0]
    lines = [
        f"Model family: {first['model family']}. Why: {first['why this family']}.",
        "Every training setting comes from dpuq's data-free recipe (dpuq.training.recipe: "
        "normalised clipping, batch and steps from N, ε, δ and the model size, late-iterate "
        "averaging; only the method, ε and δ were passed), computed from public quantities "
        "only, so choosing it costs no privacy.",
    ]
    for m in result.models:
        if m.info.get("model family"):
            lines.append(
                f"{m.name}: {m.info['epochs']:g} epochs, expected batch {m.info['batch_size']}, "
                f"{m.info['training seconds']:g} s."
            )
    return "\n".join(lines)


def gap_text(result: DemoResult) -> str:
    """Plainly: how the private models compare with the non-private one, and what would help."""
    plain = [m.name for m in result.models if m.privacy is None]
    private = [m.name for m in result.models if m.privacy is not None]
    if not plain or not private:
        return ""
    base = result.accuracy[plain[0]]
    best = max(private, key=lambda k: result.accuracy[k])
    gap = base - result.accuracy[best]
    eps = result.config.train_epsilon
    return (
        f"The non-private model is right {100 * base:.1f} % of the time; the best private one "
        f"({best}) {100 * result.accuracy[best]:.1f} %, {100 * gap:.1f} points less. That is "
        f"the price of protecting each of {result.n_train} training people at ε = {eps:g}: the "
        "noise that hides any one person is large next to what so few people teach the "
        "model. The gap closes with more people (the noise per person shrinks roughly as "
        "1/N), a larger ε (less noise, weaker protection), or a public pretrained backbone "
        "(features learned from public data cost no privacy; only a small head is trained "
        "privately, as Tramèr and Boneh 2021 and De et al. 2022 show). Private sets are "
        "larger by about as much as the model is weaker."
    )


def spread_text(result: DemoResult) -> str:
    """Plainly: each private row is one random training run, and how much runs vary."""
    parts = []
    for m in result.models:
        accs = m.info.get("accuracy over runs")
        if m.privacy is None or not accs or "+ private TS" in m.name:
            continue
        if len(accs) == 1:
            parts.append(f"{m.name} {100 * accs[0]:.1f} %")
        else:
            parts.append(
                f"{m.name} median {100 * float(np.median(accs)):.1f} % (range "
                f"{100 * min(accs):.1f}–{100 * max(accs):.1f} %)"
            )
    if not parts:
        return ""
    n = max(len(m.info.get("accuracy over runs") or []) for m in result.models)
    if n == 1:
        return (
            "Each private row is one random training run (one seed): another run on the same "
            "people can differ by several points. Accuracy: " + "; ".join(parts) + "."
        )
    return (
        f"Training is random: each private model was trained {n} times on the same people "
        "(other seeds); the table shows the first run. Accuracy over the runs: "
        + "; ".join(parts)
        + "."
    )


def format_demo(result: DemoResult) -> str:
    """The terminal summary."""
    c = result.config
    lines = [
        f"dpuq demo: {result.data_name}",
        f"{result.n_train} training, {result.n_calibration} calibration and {result.n_test} "
        f"test people; {c.n_splits} random calibration/test splits; target coverage "
        f"{1 - c.alpha:.2f} (α = {c.alpha:g})",
        "",
        text_table(TABLE_HEADER, table_rows(result)),
        "",
        "Privacy:",
        *(f"- {t}" for t in privacy_text(result)),
    ]
    gap = gap_text(result)
    if gap:
        lines += ["", "Private vs non-private: " + gap]
    spread = spread_text(result)
    if spread:
        lines += ["", spread]
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines)
