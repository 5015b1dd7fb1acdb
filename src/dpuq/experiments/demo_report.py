"""The demo's report folder: PNG figures, ``report.html`` (self-contained), ``summary.md``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpuq._progress import progress
from dpuq.experiments.common import markdown_table, write_results
from dpuq.experiments.output import atomic_output_dir
from dpuq.experiments.plots import COLOURS, grid_histograms, new_figure, save
from dpuq.experiments.report_html import Example, ReportPage, figure_png, image_png, render_page

__all__ = ["write"]


def _histograms(result):
    rows = []
    for model in result.models:
        series = [
            (p.calibration, p.result.metrics.coverage, p.result.metrics.mean_size)
            for p in result.pipelines
            if p.model == model.name
        ]
        rows.append((model.name, series))
    c = result.config
    return grid_histograms(
        rows,
        c.alpha,
        f"Coverage and mean set size over {c.n_splits} random calibration/test splits "
        f"(n = {result.n_calibration} calibration people)",
    )


def _size_shares(result):
    """Bar chart: share of sets with 0, 1, 2, ... labels, per pipeline."""
    fig = new_figure(11, 3.6)
    ax = fig.subplots()
    pipelines = result.pipelines
    k = len(result.classes)
    top = 1
    for p in pipelines:
        counts = p.result.metrics.size_counts
        nz = np.flatnonzero(counts)
        top = max(top, int(nz.max()) if nz.size else 1)
    top = min(k, max(top, 3))
    width = 0.8 / len(pipelines)
    x = np.arange(top + 1)
    for i, p in enumerate(pipelines):
        counts = p.result.metrics.size_counts[: top + 1]
        share = counts / max(1, p.result.metrics.size_counts.sum())
        ax.bar(
            x + (i - (len(pipelines) - 1) / 2) * width,
            share,
            width,
            color=COLOURS[i % len(COLOURS)],
            label=f"{p.model} + {p.calibration}",
        )
    ax.set_xticks(x)
    ax.set_xlabel("number of labels in the prediction set")
    ax.set_ylabel("share of test people")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(fontsize=7, frameon=False, ncols=2)
    fig.suptitle("How large are the sets? (0 = empty set, 1 = a single answer)")
    return fig


def _reliability(result):
    """Reliability diagrams of the models (dpuq.plotting), all on one panel, or None."""
    try:
        from dpuq.metrics.calibration import expected_calibration_error
        from dpuq.plotting import reliability_diagram
    except ImportError:
        return None
    fig = new_figure(5.6, 5.0)
    ax = fig.subplots()
    for model in result.models:
        ece = expected_calibration_error(model.probs, result.pool_labels)
        reliability_diagram(
            model.probs, result.pool_labels, label=f"{model.name} (ECE {ece:.3f})", ax=ax
        )
    ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle("When the model says 80 %, is it right 80 % of the time?")
    return fig


def _intro(result) -> list[str]:
    c = result.config
    level = round(100 * (1 - c.alpha))
    return [
        "For each new case the system does not give one answer but a short list of possible "
        f"answers: a prediction set. The sets are built so that, for {level} out of 100 new "
        "cases on average, the true answer is in the list.",
        "A list with a single answer means the model is confident; a longer list means it is "
        "unsure and the case deserves a closer look. The set never claims certainty it does "
        "not have: when the model is weak, the lists get longer rather than wrong more often.",
        "The threshold that decides which answers go into the list is learnt from "
        "calibration cases in a differentially private way: the published threshold reveals "
        "almost nothing about any one of those people (how much is measured by ε; smaller "
        "is more private).",
        f"This report compares {len(result.models)} model(s) on {result.data_name}, each "
        "calibrated without and with privacy.",
    ]


def _caveats(result) -> list[str]:
    c = result.config
    return [
        f"The {round(100 * (1 - c.alpha))} % is an average over cases (and over the random "
        "choice of calibration people), not a promise for each single case or for every "
        "subgroup of patients.",
        "It holds when new cases come from the same population as the calibration cases "
        "(exchangeability); after a change in population or equipment, recalibrate.",
        "The histograms show how much coverage varies from one calibration set to another: "
        "a single deployment lands somewhere in that spread.",
        "An empty set can happen when the model is very sure of an answer that falls just "
        "outside the threshold, or of none: read it as 'no answer is reliable here', not as "
        "'nothing is wrong'.",
        "The private threshold is deliberately a little conservative (it aims at a slightly "
        "higher level to absorb the privacy noise): its sets are slightly larger and cover "
        "slightly more than the target.",
    ]


def _class_details(result) -> list[tuple[str, str]]:
    """Per-class coverage and size, marginal vs class-conditional private sets."""
    from dpuq.experiments.class_conditional import format_class_table

    if not getattr(result, "class_table", None):
        return []
    title = f"Coverage class by class: marginal vs class-conditional ({result.models[-1].name})"
    return [(title, format_class_table(result.class_table))]


def write(result, out: str | Path, command: str, show_progress: bool = False) -> Path:
    """Write the report folder atomically; return the path of ``report.html``."""
    from dpuq.experiments.demo import TABLE_HEADER, format_demo, privacy_text, table_rows

    steps = progress(range(4), "report figures", disable=not show_progress)
    next(steps)
    figures = [
        (
            "Coverage and set size",
            _histograms(result),
            "Each histogram counts random calibration/test splits. Left: the share of test "
            "people whose set contains the truth (dashed line: the target). Right: the "
            "average number of labels per set. Rows: models; colours: calibration.",
            "coverage_size.png",
        ),
        (
            "Set sizes",
            _size_shares(result),
            "Share of test people whose set has 0, 1, 2, ... labels (all splits pooled).",
            "set_sizes.png",
        ),
    ]
    next(steps)
    rel = _reliability(result)
    next(steps)
    if rel is not None:
        figures.append(
            (
                "Reliability diagrams",
                rel,
                "Each point: the observed accuracy among test cases whose top answer got about "
                "that confidence (15 bins). On the dashed diagonal the stated confidence is "
                "honest; below it the model is over-confident, above it under-confident. ECE "
                "is the average gap.",
                "reliability.png",
            )
        )
    examples = []
    if result.pool_images is not None and result.examples:
        for ex in result.examples:
            img = result.pool_images[ex["index"]]
            side = round(float(np.sqrt(img.size)))
            examples.append(
                Example(
                    image_png(img.reshape(side, side), scale=max(2, 64 // side)),
                    ex["truth"],
                    ex["sets"],
                )
            )
    page = ReportPage(
        title="Private prediction sets: how often the list contains the truth, and how long it is",
        intro=_intro(result),
        privacy=privacy_text(result),
        table_header=TABLE_HEADER,
        table_rows=table_rows(result),
        figures=[(t, figure_png(f), cap) for t, f, cap, _ in figures],
        examples=examples,
        examples_intro=(
            "Test images of one split with the private set each model gives them (most likely "
            "label first). Picked to show the range: confident single answers, longer lists, "
            "and, when there is one, a set that misses the truth (about "
            f"{round(100 * result.config.alpha)} in 100 do)."
        ),
        caveats=_caveats(result),
        details=[
            ("Terminal summary", format_demo(result)),
            *_class_details(result),
            ("Command", command),
            *[
                (f"Privacy report: {m.name}", str(m.privacy))
                for m in result.models
                if m.privacy is not None
            ],
            *[
                (f"Privacy report: {p.model} + {p.calibration} (whole pipeline)", str(p.combined))
                for p in result.pipelines
                if p.combined is not None
            ],
        ],
    )
    next(steps, None)
    with atomic_output_dir(out) as tmp:
        for _, fig, _, name in figures:
            save(fig, tmp / name)
        (tmp / "report.html").write_text(render_page(page), encoding="utf-8")
        body = "\n".join(
            [
                f"Data: {result.data_name}. {result.n_train} training, {result.n_calibration} "
                f"calibration, {result.n_test} test people; {result.config.n_splits} splits.",
                "",
                markdown_table(TABLE_HEADER, table_rows(result)),
                "",
                *(f"- {t}" for t in privacy_text(result)),
                "",
                "Open `report.html` for the figures and examples.",
            ]
        )
        write_results(
            tmp,
            title="dpuq demo — private model and private prediction sets",
            command=command,
            seed=result.config.seed,
            elapsed_s=result.elapsed_s,
            body=body,
            data={
                "data": result.data_name,
                "accuracy": result.accuracy,
                "ece": result.ece,
                "pipelines": [
                    {
                        "model": p.model,
                        "calibration": p.calibration,
                        **p.result.row(),
                        "training_privacy": None
                        if p.training_privacy is None
                        else p.training_privacy.to_dict(),
                        "combined_privacy": None if p.combined is None else p.combined.to_dict(),
                    }
                    for p in result.pipelines
                ],
            },
        )
    return Path(out) / "report.html"
