"""The demo's report folder: PNG figures, ``report.html`` (self-contained), ``summary.md``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dpuq._progress import progress
from dpuq.experiments.common import method_series
from dpuq.experiments.demo_results import (
    TABLE_HEADER,
    format_demo,
    gap_text,
    model_choice_text,
    privacy_text,
    spread_text,
    table_rows,
)
from dpuq.reporting import markdown_table, write_experiment
from dpuq.reporting.figures import grid_histograms, reliability_panel, set_size_bars
from dpuq.reporting.html import Example, ReportPage, figure_png, render_page, thumbnail_png

__all__ = ["write"]


def _histograms(result):
    rows = [
        (m.name, method_series([p.result for p in result.pipelines if p.model == m.name]))
        for m in result.models
    ]
    c = result.config
    return grid_histograms(
        rows,
        c.alpha,
        f"Coverage and mean set size over {c.n_splits} random calibration/test splits "
        f"(n = {result.n_calibration} calibration people)",
    )


def _intro(result) -> list[str]:
    c = result.config
    level = round(100 * (1 - c.alpha))
    return [
        "For each new case the system gives a short list of possible answers, a prediction "
        f"set, instead of a single answer. The lists are built so that, on average over new "
        f"cases, the true answer is in the list for at least {level} cases out of 100.",
        "A list with a single answer means the model is confident; a longer list means it is "
        "unsure, and the case deserves a closer look. A weaker model gets longer lists, not "
        "more wrong ones.",
        "The private models and the private threshold (the cut-off that decides which answers "
        "enter the list) were computed with differential privacy: this limits, but does not "
        "remove, what the published results reveal about any one person whose data were used "
        "(see 'Privacy, in plain words').",
        f"This report compares {_count(len(result.models), 'model')} on {result.data_name}, "
        "each with "
        "a threshold computed without and with privacy, measured on "
        f"{c.n_splits} random divisions of the people into calibration and test groups.",
    ]


def _count(n: int, noun: str) -> str:
    """``1 model``, ``5 models``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


#: Set sizes shown one by one in the conditional-coverage table; larger ones are pooled.
_SIZES_SHOWN = 4


def _conditional_table(result):
    """Coverage by set size (and its violation, SSCV) and the least covered class, per
    pipeline, all splits pooled; None when the metrics hold no per-size hits."""
    c = result.config
    target = 1 - c.alpha
    top = min(_SIZES_SHOWN, len(result.classes))
    header = ["model", "calibration", "SSCV", *(f"coverage, size {k}" for k in range(top))]
    header += [f"coverage, size ≥ {top}", "least covered class"]
    rows = []
    for p in result.pipelines:
        m = p.result.metrics
        if getattr(m, "size_hits", None) is None:
            return None
        cond = m.conditional(target)
        counts = [*m.size_counts[:top], m.size_counts[top:].sum()]
        hits = [*m.size_hits[:top], m.size_hits[top:].sum()]
        cells = [
            "–" if n == 0 else f"{h / n:.3f} ({_share(n, m.size_counts.sum())})"
            for h, n in zip(hits, counts, strict=True)
        ]
        by_class = cond["coverage_by_class"]
        worst = "–"
        if by_class is not None and np.any(np.isfinite(by_class)):
            j = int(np.nanargmin(by_class))
            worst = f"{result.classes[j]}: {by_class[j]:.3f}"
        rows.append([p.model, p.calibration, f"{cond['sscv']:.3f}", *cells, worst])
    caption = (
        "Coverage among the test people whose set has a given size (in brackets: the share of "
        "sets of that size), all splits pooled, and coverage class by class (the least covered "
        f"class). SSCV, the size-stratified coverage violation of Angelopoulos and Bates, is the "
        f"largest gap between those coverages and the target {_pct(target)}: the guarantee is "
        "on average over people, and sets of one size, or people of one class, can be covered "
        "less often. dpuq.classification_ssc, dpuq.size_stratified_coverage_violation and "
        "dpuq.coverage_by_group compute them for your own sets."
    )
    return ("Conditional coverage: by set size and by class", header, rows, caption)


def _share(n: int, total: int) -> str:
    return f"{100 * n / max(total, 1):.0f} %"


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def _summary(result) -> list[str]:
    """One sentence per model: coverage, spread and size of the private sets, vs non-private."""
    c = result.config
    target = 1 - c.alpha
    lines = []
    for model in result.models:
        mine = [p for p in result.pipelines if p.model == model.name]
        private = [p for p in mine if p.calibration_privacy is not None]
        plain = [p for p in mine if p.calibration_privacy is None]
        for p in private or mine:
            s = p.result.metrics.summary()
            text = (
                f"{model.name}, {p.calibration}: the true answer was in the list for "
                f"{_pct(s['coverage_mean'])} of test cases on average (target at least "
                f"{_pct(target)}; between {_pct(s['coverage_p5'])} and {_pct(s['coverage_p95'])} "
                f"in 90 % of the random divisions). Lists held {s['size_mean']:.2f} answers on "
                f"average; {_pct(s['singleton_share'])} held exactly one"
            )
            if s["empty_share"] > 0:
                text += f" and {_pct(s['empty_share'])} were empty"
            if plain and p not in plain:
                base = plain[0].result.metrics.summary()
                text += (
                    f". With the non-private threshold: {_pct(base['coverage_mean'])} and "
                    f"{base['size_mean']:.2f} answers"
                )
            lines.append(text + ".")
    return lines


def _table_notes() -> list[tuple[str, str]]:
    return [
        ("accuracy", "Share of test cases whose single most likely answer is right."),
        (
            "ECE",
            "Expected calibration error: the average gap between the confidence the model "
            "states and how often it is right (0 = honest confidence).",
        ),
        (
            "coverage mean [5%, 95%]",
            "Share of test cases whose list contains the true answer: the average over the "
            "random divisions, and the range that 90 % of them fall in.",
        ),
        ("mean set size", "Average number of answers per list."),
        ("singletons", "Share of lists with exactly one answer."),
        (
            "training (ε, δ)",
            "Privacy of the model for the people it was trained on (∞ = no privacy). For a "
            "temperature-scaled model: the training part, the temperature step (on other "
            "people) and their total, the larger of the two since no person is in both.",
        ),
        (
            "calibration ε",
            "Privacy of the threshold for the calibration people (∞ = no privacy).",
        ),
        (
            "whole pipeline (ε, δ)",
            "The guarantee of model and threshold together, stated for one notion of "
            "'one person's data changed' for everyone.",
        ),
    ]


def _privacy_intro(result) -> list[str]:
    c = result.config
    eps_cal, eps_train = c.epsilon, c.train_epsilon
    lines = [
        "Differential privacy bounds how much any single person's data can change what is "
        "published. Whatever an observer knew beforehand, seeing the published results can "
        "change the odds they give to any statement about one person (for example 'this "
        "patient was among the calibration cases', or 'this patient's label is 3') by a factor "
        f"of at most e^ε (e ≈ 2.718). Here the threshold uses ε = {eps_cal:g}: a factor of at "
        f"most {math.exp(eps_cal):.3g}; the private models use ε = {eps_train:g}: a factor of "
        f"at most {math.exp(eps_train):.3g}.",
        "Smaller ε is stronger. An ε of a few units is common in practice, but it is not "
        f"anonymity: a factor of {math.exp(max(eps_cal, eps_train)):.3g} in the odds is a real "
        "change. The bound holds against any observer, whatever else they know, and it covers "
        "everything computed from the published results.",
        f"δ = {c.train_delta:g} (training only) is the small probability allowed for the "
        f"training bound to fail; it is far below one in the number of training people "
        f"({result.n_train}). The threshold has δ = 0.",
        f"Who is protected: the {result.n_train} training people by the model's guarantee and "
        f"the {result.n_calibration} calibration people by the threshold's; each person is in "
        "one group only. The test people stand for new patients: their data are not "
        "published. A model or threshold without privacy (ε = ∞) gives its people no "
        "guarantee.",
    ]
    if getattr(c, "data", None) == "outputs":
        lines.append(
            f"The model's training privacy (ε = {c.train_epsilon:g}, δ = {c.train_delta:g}) is "
            "as declared by the user: dpuq did not train this model and cannot verify it."
            if getattr(c, "declared_training", False)
            else "The model's training privacy was not declared (--train-epsilon): it is "
            "reported as not private (ε = ∞)."
        )
    from dpuq._version import __version__
    from dpuq.privacy._ledger_schema import now

    lines.append(
        f"Paper trail: written {now()[:19]} UTC by dpuq {__version__}, from the data set "
        f"'{getattr(result, 'data_name', '?')}'. This demo repeats each release over random "
        "splits to measure it, so it charges no privacy ledger; a release for use is made "
        "once with `dpuq calibrate --ledger PATH --dataset NAME`, whose file records its "
        "ledger entry and the budget left."
    )
    if c.seed is not None:
        lines.append(
            f"This run used a fixed seed (--seed {c.seed}) so that it can be repeated: anyone "
            "who knows the seed can reproduce the random noise, so a seeded run is a "
            "demonstration, not a private release."
        )
    return lines


def _glossary() -> list[tuple[str, str]]:
    return [
        ("prediction set (list)", "The answers the system considers plausible for one case."),
        (
            "coverage",
            "How often the list contains the true answer, on average over cases.",
        ),
        (
            "calibration cases / people",
            "Held-out cases with known answers, used only to set the threshold.",
        ),
        (
            "threshold",
            "The cut-off on the model's scores that decides which answers enter the list.",
        ),
        (
            "differential privacy, ε (epsilon)",
            "A guarantee that one person's data change the published results' odds by a "
            "factor of at most e^ε (smaller ε: more private).",
        ),
        ("δ (delta)", "A small probability with which the ε bound may fail."),
        (
            "DP-SGD, DP-SGLD",
            "Ways of training a network with differential privacy: each step clips every "
            "person's influence and adds random noise (DP-SGLD also averages late models).",
        ),
        (
            "SGD (not private)",
            "Ordinary training, shown for comparison: no privacy for its training people.",
        ),
        (
            "random division (split)",
            "One random assignment of people to calibration and test; results are shown over "
            "many of them to show their spread.",
        ),
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
        "An empty list means that no answer reached the threshold: read it as 'no answer is "
        "reliable here, look at this case', not as 'nothing is wrong'.",
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
            set_size_bars(
                [
                    (f"{p.model} + {p.calibration}", p.result.metrics.size_counts)
                    for p in result.pipelines
                ],
                len(result.classes),
                "How large are the sets? (0 = empty set, 1 = a single answer)",
            ),
            "Share of test people whose set has 0, 1, 2, ... labels (all splits pooled).",
            "set_sizes.png",
        ),
    ]
    next(steps)
    rel = reliability_panel(
        [(m.name, m.probs) for m in result.models],
        result.pool_labels,
        "When the model says 80 %, is it right 80 % of the time?",
    )
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
    if result.pool_images is not None:
        images = result.pool_images
        examples = [
            Example(thumbnail_png(images[ex["index"]]), ex["truth"], ex["sets"])
            for ex in result.examples
        ]
    page = ReportPage(
        title=f"Prediction sets with a privacy guarantee: {result.data_name}",
        intro=_intro(result),
        privacy=privacy_text(result),
        table_header=TABLE_HEADER,
        table_rows=table_rows(result),
        figures=[(t, figure_png(f), cap) for t, f, cap, _ in figures],
        examples=examples,
        examples_intro=(
            "Test images of one random division with the list each model gives them under the "
            "private rule (most likely answer first). Picked to show the range: confident "
            "single answers, longer lists, and, when there is one, a list that misses the truth "
            f"(about {round(100 * result.config.alpha)} in 100 may)."
        ),
        caveats=_caveats(result),
        summary=_summary(result) + [t for t in (gap_text(result), spread_text(result)) if t],
        table_notes=_table_notes(),
        privacy_intro=_privacy_intro(result),
        glossary=_glossary(),
        tables=[t for t in [_conditional_table(result)] if t is not None],
        details=[
            ("Terminal summary", format_demo(result)),
            *(
                [("Model choice and training settings", model_choice_text(result))]
                if model_choice_text(result)
                else []
            ),
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
    body = [
        f"Data: {result.data_name}. {result.n_train} training, {result.n_calibration} "
        f"calibration, {result.n_test} test people; {result.config.n_splits} splits.",
        "",
        markdown_table(TABLE_HEADER, table_rows(result)),
        "",
        *(f"- {t}" for t in privacy_text(result)),
        "",
        "Open `report.html` for the figures and examples.",
    ]
    pipelines = [
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
    ]
    write_experiment(
        out,
        figures={name: fig for _, fig, _, name in figures},
        files={"report.html": render_page(page)},
        title="dpuq demo — private model and private prediction sets",
        command=command,
        seed=result.config.seed,
        elapsed_s=result.elapsed_s,
        body="\n".join(body),
        data={
            "data": result.data_name,
            "accuracy": result.accuracy,
            "ece": result.ece,
            "pipelines": pipelines,
        },
    )
    return Path(out) / "report.html"
