"""The demo report without rough edges (issue 39, items 6 and 7): distinct set-size colours
(checked on the figure's artists and on a headless-Chromium screenshot), "5 models", the
temperature-scaled model's privacy in parts, and conditional coverage."""

from __future__ import annotations

import io
import itertools
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from dpuq.experiments import demo_report, demo_results
from dpuq.experiments.evaluation import ScorePool, evaluate_thresholds
from dpuq.privacy.report import PrivacyReport, compose_disjoint
from dpuq.reporting.figures import set_size_bars
from dpuq.reporting.html import ReportPage, figure_png, render_page

#: The smallest RGB distance (0-255) between two series colours that reads as "different".
MIN_DISTANCE = 60.0


def _ten_series():
    rng = np.random.default_rng(0)
    names = [f"model {i} + {c}" for i in range(5) for c in ("non-private", "private")]
    return [(name, rng.multinomial(1000, [0.05, 0.5, 0.3, 0.1, 0.05])) for name in names]


def _bar_colours(fig) -> list[tuple[float, ...]]:
    ax = fig.axes[0]
    return [tuple(c.patches[0].get_facecolor()[:3]) for c in ax.containers]


def _distances(colours) -> float:
    rgb = np.array(colours) * 255
    return min(np.linalg.norm(a - b) for a, b in itertools.combinations(rgb, 2))


def test_set_size_chart_colours_are_pairwise_distinct():
    fig = set_size_bars(_ten_series(), 10, "set sizes")
    colours = _bar_colours(fig)
    assert len(colours) == 10
    assert _distances(colours) >= MIN_DISTANCE  # was 8 colours cycled: two pairs identical


def _png_pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3).astype(float)


def _present(pixels: np.ndarray, colour, tol: float = 12.0) -> int:
    target = np.array(to_rgb(colour)) * 255
    return int((np.linalg.norm(pixels - target, axis=1) < tol).sum())


def test_set_size_chart_picture_shows_every_series_colour():
    fig = set_size_bars(_ten_series(), 10, "set sizes")
    pixels = _png_pixels(figure_png(fig))
    for colour in _bar_colours(fig):
        assert _present(pixels, colour) > 50  # each series' bars are visible in the PNG


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium installed")
def test_set_size_chart_is_readable_in_a_headless_browser(tmp_path):
    """The page as a browser paints it: every series colour is on screen, pairwise distinct."""
    fig = set_size_bars(_ten_series(), 10, "set sizes")
    page = ReportPage(
        title="t", intro=["i"], privacy=["p"], table_header=["a"], table_rows=[["b"]],
        figures=[("Set sizes", figure_png(fig), "caption")],
    )  # fmt: skip
    html = render_page(page).replace("<h2>Results</h2>", "").replace("<table>", "<table hidden>")
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--force-device-scale-factor=1", "--window-size=1280,1000",
         f"--screenshot={shot}", path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    pixels = _png_pixels(shot.read_bytes())
    colours = _bar_colours(fig)
    seen = [c for c in colours if _present(pixels, c, tol=20.0) > 20]
    assert len(seen) == len(colours)
    assert _distances(seen) >= MIN_DISTANCE


def _metrics(rng, k=10):
    probs = rng.dirichlet(np.ones(k) * 0.3, size=600)
    labels = np.array([rng.choice(k, p=p) for p in probs])
    pool = ScorePool.from_probs(probs, labels)
    test = np.array([rng.permutation(600)[:300] for _ in range(5)])
    return evaluate_thresholds(pool, test, np.full(5, 0.8)), pool, test


def _result(n_models: int, rng):
    training = PrivacyReport(mechanism="DP-SGLD", epsilon=2.94, delta=1e-5)
    temperature = PrivacyReport(mechanism="temperature", epsilon=3.0, delta=0.0)
    both = compose_disjoint([training, temperature], "DP-SGLD then TS")
    models = [SimpleNamespace(name="DP-SGLD", privacy=training, info={})]
    info = {"temperature_privacy": temperature, "temperature": 1.3}
    models.append(SimpleNamespace(name="DP-SGLD + private TS", privacy=both, info=info))
    models += [SimpleNamespace(name=f"m{i}", privacy=None, info={}) for i in range(n_models - 2)]
    metrics = _metrics(rng)[0]
    pipelines = [
        SimpleNamespace(model=m.name, calibration="private threshold (ε = 3)",
                        calibration_privacy=PrivacyReport(mechanism="q", epsilon=3.0),
                        training_privacy=m.privacy,
                        combined=None, result=SimpleNamespace(metrics=metrics))
        for m in models
    ]  # fmt: skip
    config = SimpleNamespace(alpha=0.1, epsilon=3.0, train_epsilon=3.0, train_delta=1e-5,
                             seed=None, n_splits=5)  # fmt: skip
    return SimpleNamespace(
        config=config, models=models, pipelines=pipelines, n_train=800, n_calibration=300,
        data_name="digits", classes=[str(c) for c in range(10)],
        accuracy={m.name: 0.9 for m in models}, ece={m.name: 0.01 for m in models},
    )  # fmt: skip


def test_intro_counts_models_in_plain_english():
    rng = np.random.default_rng(1)
    assert "compares 5 models on digits" in " ".join(demo_report._intro(_result(5, rng)))
    one = _result(2, rng)
    one.models = one.models[:1]
    assert "compares 1 model on digits" in " ".join(demo_report._intro(one))


def test_training_column_shows_the_parts_and_the_total_of_temperature_scaling():
    rows = demo_results.table_rows(_result(2, np.random.default_rng(2)))
    column = demo_results.TABLE_HEADER.index("training (ε, δ)")
    assert rows[0][column] == "(2.94, 1e-05)"
    cell = rows[1][column]
    assert "training (2.94, 1e-05)" in cell and "temperature step (3, 0)" in cell
    assert cell.endswith("total (3, 1e-05)")


def test_conditional_coverage_by_set_size_and_class():
    rng = np.random.default_rng(3)
    metrics, pool, test = _metrics(rng)
    # direct count over all splits
    sizes = np.concatenate([(pool.sorted_scores[t] <= 0.8).sum(axis=1) for t in test])
    hits = np.concatenate([pool.true_scores[t] <= 0.8 for t in test])
    labels = np.concatenate([pool.labels[t] for t in test])
    cond = metrics.conditional(0.9)
    for s in range(11):
        if np.any(sizes == s):
            assert cond["coverage_by_size"][s] == pytest.approx(hits[sizes == s].mean())
    for c in range(10):
        assert cond["coverage_by_class"][c] == pytest.approx(hits[labels == c].mean())
    seen = [hits[sizes == s].mean() for s in np.unique(sizes)]
    assert cond["sscv"] == pytest.approx(max(abs(v - 0.9) for v in seen))


def test_report_shows_conditional_coverage():
    result = _result(2, np.random.default_rng(4))
    title, header, rows, caption = demo_report._conditional_table(result)
    assert "SSCV" in header and "least covered class" in header and len(rows) == 2
    sscv = result.pipelines[0].result.metrics.conditional(0.9)["sscv"]
    assert rows[0][header.index("SSCV")] == f"{sscv:.3f}"
    page = ReportPage(title="t", intro=["i"], privacy=["p"], table_header=["a"],
                      table_rows=[["b"]], tables=[(title, header, rows, caption)])  # fmt: skip
    html = render_page(page)
    assert "Conditional coverage: by set size and by class" in html and "Angelopoulos" in html
