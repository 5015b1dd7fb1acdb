"""The HTML report reads in the right order and in plain words (results, then privacy)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from dpuq.experiments import demo_report
from dpuq.experiments.evaluation import SplitMetrics
from dpuq.reporting.html import ReportPage, render_page


def _page(**extra) -> str:
    return render_page(
        ReportPage(
            title="t",
            intro=["what a set means"],
            privacy=["full statement"],
            table_header=["model", "coverage"],
            table_rows=[["m", "0.90"]],
            caveats=["average over cases"],
            details=[("report", "x")],
            **extra,
        )
    )


def test_results_come_before_privacy_and_the_glossary_is_there():
    html = _page(
        summary=["the truth was in the list for 91 %"],
        table_notes=[("coverage", "share of lists with the truth")],
        privacy_intro=["odds change by at most e^ε"],
        glossary=[("ε", "privacy parameter")],
    )
    order = [
        html.index("<h2>Results</h2>"),
        html.index("the truth was in the list"),
        html.index("<table>"),
        html.index("Privacy, in plain words"),
        html.index("odds change by at most"),
        html.index("The privacy guarantee in full"),
        html.index("What the guarantee does not say"),
        html.index("<h2>Glossary</h2>"),
        html.index("Technical details"),
    ]
    assert order == sorted(order)


def test_without_a_plain_intro_the_full_statement_is_shown_directly():
    html = _page()
    assert "full statement" in html and "The privacy guarantee in full" not in html
    assert html.index("<h2>Results</h2>") < html.index("full statement")


def _fake_result(seed):
    rng = np.random.default_rng(0)
    k = 20

    def metrics(cov, size):
        return SplitMetrics(
            coverage=np.full(k, cov) + rng.normal(0, 0.01, k),
            mean_size=np.full(k, size),
            singleton=np.full(k, 0.3),
            empty=np.zeros(k),
            size_counts=np.array([0, 30, 50, 20]),
            thresholds=np.full(k, 0.8),
        )

    model = SimpleNamespace(name="DP-SGLD")
    private = SimpleNamespace(
        model="DP-SGLD",
        calibration="private threshold (ε = 2)",
        calibration_privacy=object(),
        result=SimpleNamespace(metrics=metrics(0.93, 2.3)),
    )
    plain = SimpleNamespace(
        model="DP-SGLD",
        calibration="non-private threshold",
        calibration_privacy=None,
        result=SimpleNamespace(metrics=metrics(0.90, 1.9)),
    )
    config = SimpleNamespace(
        alpha=0.1, epsilon=2.0, train_epsilon=3.0, train_delta=1e-5, seed=seed, n_splits=20
    )
    return SimpleNamespace(
        config=config, models=[model], pipelines=[plain, private], n_train=800,
        n_calibration=500, data_name="digits",
    )  # fmt: skip


def test_summary_states_coverage_size_and_the_non_private_comparison():
    (line,) = demo_report._summary(_fake_result(None))
    assert "DP-SGLD, private threshold" in line
    assert "target at least 90.0 %" in line and "2.30 answers" in line
    assert "non-private threshold: 90" in line and "1.90 answers" in line


def test_privacy_in_plain_words_gives_the_odds_factor_and_never_oversells():
    text = " ".join(demo_report._privacy_intro(_fake_result(None)))
    assert f"{math.exp(2.0):.3g}" in text and f"{math.exp(3.0):.3g}" in text
    assert "e^ε" in text and "not anonymity" in text
    for oversold in ("almost nothing", "nothing about", "anonymous", "guarantees privacy"):
        assert oversold not in text
    assert "seed" not in text
    seeded = " ".join(demo_report._privacy_intro(_fake_result(7)))
    assert "--seed 7" in seeded and "not a private release" in seeded
    intro = " ".join(demo_report._intro(SimpleNamespace(**vars(_fake_result(None)))))
    assert "almost nothing" not in intro and "does not remove" in intro
