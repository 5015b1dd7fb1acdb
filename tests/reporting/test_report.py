"""The HTML report: self-contained, escaped, and it opens in a real (headless) browser."""

import base64
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

from dpuq.privacy.report import PrivacyReport
from dpuq.reporting import MARKER, atomic_output_dir, check_output_dir
from dpuq.reporting.figures import coverage_size_histograms
from dpuq.reporting.html import Example, ReportPage, figure_png, image_png, render_page


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.tags, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "img":
            self.images.append(dict(attrs)["src"])

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture
def page_html():
    rng = np.random.default_rng(0)
    fig = coverage_size_histograms(
        [("a", rng.uniform(0.85, 0.95, 50), rng.uniform(1, 2, 50))], 0.1, "histograms"
    )
    page = ReportPage(
        title="Report <script>alert(1)</script>",
        intro=["Sets & lists: 90 % of cases"],
        privacy=["ε = 1"],
        table_header=["model", "coverage"],
        table_rows=[["<b>m</b>", "0.90"]],
        figures=[("Coverage", figure_png(fig), "caption")],
        examples=[Example(image_png(rng.uniform(size=(8, 8))), "3", [("DP-SGD", ["3", "8"])]),
                  Example(image_png(rng.uniform(size=(8, 8))), "5", [("DP-SGD", ["6"])])],
        examples_intro="examples",
        caveats=["average over cases"],
        details=[("report", "a < b")],
    )  # fmt: skip
    return render_page(page)


def test_every_image_is_an_embedded_png(page_html):
    parser = _Collect()
    parser.feed(page_html)
    assert len(parser.images) == 3
    for src in parser.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert not re.search(r"(src|href)=\"(?!data:)", page_html)  # nothing fetched from outside


def test_text_is_escaped(page_html):
    assert "<script>" not in page_html and "&lt;script&gt;" in page_html
    assert "<b>m</b>" not in page_html
    parser = _Collect()
    parser.feed(page_html)
    assert "script" not in parser.tags


def test_a_set_that_misses_the_truth_is_marked(page_html):
    assert page_html.count("misses the true label") == 1


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.skipif(_chromium() is None, reason="no headless Chromium installed")
def test_opens_in_a_headless_browser_without_errors(page_html, tmp_path):
    """Chromium loads the page; a probe script (added to a copy only) counts decoded images."""
    probe = (
        "<script>window.addEventListener('load',()=>{const i=[...document.images];"
        "document.title='LOADED '+i.filter(x=>x.complete&&x.naturalWidth>0).length+'/'+i.length"
        "});</script></body>"
    )
    path = tmp_path / "report.html"
    path.write_text(page_html.replace("</body>", probe), encoding="utf-8")
    proc = subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--virtual-time-budget=5000", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<title>LOADED 3/3</title>" in proc.stdout
    console_errors = [
        line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line
    ]
    assert console_errors == []


class TestOutputFolder:
    def test_replaces_its_own_output_only(self, tmp_path):
        out = tmp_path / "out"
        with atomic_output_dir(out) as tmp:
            (tmp / "a.txt").write_text("1")
        with atomic_output_dir(out) as tmp:
            (tmp / "b.txt").write_text("2")
        assert sorted(p.name for p in out.iterdir()) == [MARKER, "b.txt"]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]

    def test_error_inside_leaves_previous_output(self, tmp_path):
        out = tmp_path / "out"
        with atomic_output_dir(out) as tmp:
            (tmp / "a.txt").write_text("1")
        with pytest.raises(RuntimeError), atomic_output_dir(out) as tmp:
            (tmp / "half.txt").write_text("x")
            raise RuntimeError("boom")
        assert (out / "a.txt").read_text() == "1" and not (out / "half.txt").exists()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]

    def test_refuses_foreign_folders_and_files(self, tmp_path):
        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "x").write_text("keep")
        with pytest.raises(ValueError, match="not written by dpuq"):
            check_output_dir(tmp_path / "mine")
        (tmp_path / "f").write_text("file")
        with pytest.raises(ValueError, match="not a folder"):
            check_output_dir(tmp_path / "f")
        (tmp_path / "empty").mkdir()
        assert check_output_dir(tmp_path / "empty") == tmp_path / "empty"

    def test_write_experiment_writes_everything_or_nothing(self, tmp_path):
        from dpuq.reporting import write_experiment
        from dpuq.reporting.figures import reliability_panel, set_size_bars

        rng = np.random.default_rng(0)
        probs = rng.dirichlet(np.ones(3), size=60)
        figures = {
            "bars.png": set_size_bars([("a", np.array([1, 5, 2, 0]))], 3, "sizes"),
            "rel.png": reliability_panel([("m", probs)], probs.argmax(axis=1), "reliability"),
        }
        done = write_experiment(
            tmp_path / "out", figures=figures, files={"page.html": "<p>é</p>"}, title="T",
            command="dpuq x", seed=3, elapsed_s=1.0, body="body", data={"k": 1},
            arrays={"a": np.arange(3)},
        )  # fmt: skip
        names = sorted(p.name for p in done.iterdir())
        assert names == [MARKER, "bars.png", "page.html", "rel.png", "results.json", "splits.npz",
                         "summary.md"]  # fmt: skip
        assert (done / "bars.png").read_bytes()[:4] == b"\x89PNG"
        assert (done / "page.html").read_text(encoding="utf-8") == "<p>é</p>"
        summary = (done / "summary.md").read_text(encoding="utf-8")
        assert summary.startswith("# T\n") and "Seed: 3." in summary and summary.endswith("body\n")
        with pytest.raises(TypeError):  # a bad argument: nothing replaces the folder
            write_experiment(tmp_path / "out", figures={"x.png": figures["bars.png"]}, bogus=1)
        assert sorted(p.name for p in done.iterdir()) == names


class TestRelations:
    """dpuq.privacy.report: one closed type of neighbouring relation; conversion; composition."""

    @staticmethod
    def _r(eps, delta=0.0, relation="replace-one", seeded=False, name="m"):
        from dpuq.privacy.report import PrivacyReport

        return PrivacyReport(name, epsilon=eps, delta=delta, relation=relation, seeded=seeded)

    def test_relation_is_a_closed_type(self):
        from dpuq.privacy.report import Relation

        assert self._r(1.0, relation="add/remove-one").relation is Relation.ADD_REMOVE
        assert self._r(1.0, relation="REPLACE_ONE").relation is Relation.REPLACE_ONE
        with pytest.raises(ValueError, match="relation must be one of 'replace-one'"):
            self._r(1.0, relation="swap one")

    def test_add_remove_converts_to_replace_one_by_group_privacy(self):
        import math

        r = self._r(0.7, 1e-6, "add/remove-one").under("replace-one")
        assert r.relation == "replace-one"
        assert r.epsilon == pytest.approx(1.4)
        assert r.delta == pytest.approx((1 + math.exp(0.7)) * 1e-6)
        assert "group privacy" in r.notes[-1]
        pure = self._r(0.5, relation="add/remove-one").under("replace-one")
        assert pure.epsilon == 1.0 and pure.delta == 0.0
        same = self._r(0.5)
        assert same.under("replace-one") is same

    def test_replace_one_to_add_remove_is_refused(self):
        with pytest.raises(ValueError, match=r"replace-one to add/remove-one"):
            self._r(1.0).under("add/remove-one")

    @pytest.mark.parametrize("compose", ["compose_sequential", "compose_disjoint"])
    def test_mixed_composition_refused_with_both_relations_named(self, compose):
        from dpuq.privacy import report as rep

        parts = [self._r(1.0), self._r(0.5, 1e-5, "add/remove-one")]
        with pytest.raises(ValueError) as err:
            getattr(rep, compose)(parts, "pipeline")
        assert "add/remove-one" in str(err.value) and "replace-one" in str(err.value)
        with pytest.raises(ValueError, match="replace-one to add/remove-one"):
            getattr(rep, compose)(parts, "pipeline", relation="add/remove-one")

    def test_explicit_conversion_never_understates(self):
        import math

        from dpuq.privacy.report import compose_disjoint, compose_sequential

        cal, train = self._r(1.0), self._r(0.8, 1e-5, "add/remove-one")
        seq = compose_sequential([cal, train], "pipeline", relation="replace-one")
        assert seq.relation == "replace-one"
        assert seq.epsilon == pytest.approx(1.0 + 1.6)
        assert seq.delta == pytest.approx((1 + math.exp(0.8)) * 1e-5)
        par = compose_disjoint([cal, train], "pipeline", relation="replace-one")
        assert par.epsilon == pytest.approx(1.6)  # the converted training part, not 1.0
        for composed in (seq, par):
            assert composed.epsilon >= max(p.under("replace-one").epsilon for p in (cal, train))

    def test_like_with_like_adds(self):
        from dpuq.privacy.report import compose_disjoint, compose_sequential

        parts = [self._r(0.5), self._r(0.25), self._r(1.0, 1e-6)]
        assert compose_sequential(parts, "s").epsilon == pytest.approx(1.75)
        assert compose_sequential(parts, "s").delta == pytest.approx(1e-6)
        assert compose_disjoint(parts, "d").epsilon == 1.0

    @pytest.mark.parametrize("compose", ["compose_sequential", "compose_disjoint"])
    def test_seeded_propagates(self, compose):
        from dpuq.privacy import report as rep

        fresh = getattr(rep, compose)([self._r(1.0), self._r(1.0)], "p")
        assert not fresh.seeded and "seeded" not in str(fresh)
        seeded = getattr(rep, compose)([self._r(1.0), self._r(1.0, seeded=True)], "p")
        assert seeded.seeded and "seeded" in str(seeded)
        assert seeded.to_dict()["seeded"] is True

    def test_pickle_and_dict_keep_relation_and_seed(self):
        import pickle

        r = self._r(0.3, 1e-7, "add/remove-one", seeded=True)
        back = pickle.loads(pickle.dumps(r))
        assert back == r and back.relation == "add/remove-one" and back.seeded
        assert r.to_dict()["relation"] == "add/remove-one"
        assert "added or removed" in r.to_dict()["neighbouring"]
        assert PrivacyReport.from_dict(r.to_dict()) == r
        legacy = {k: v for k, v in r.to_dict().items() if k not in ("relation", "seeded")}
        old = PrivacyReport.from_dict(legacy, relation="add/remove-one")
        assert old.relation == "add/remove-one" and not old.seeded

    def test_training_report_composes_with_calibration_without_conversion(self):
        pytest.importorskip("opacus")
        import numpy as np

        from dpuq.privacy.report import compose_disjoint
        from dpuq.training import small_cnn, train_classifier

        rng = np.random.default_rng(0)
        x, y = rng.uniform(size=(80, 1, 8, 8)), rng.integers(0, 10, 80)
        _, train = train_classifier(
            small_cnn(10, image_size=8), (x, y), method="dpsgd", epsilon=1.0, delta=1e-5,
            epochs=1, batch_size=20, random_state=0, show_progress=False,
        )  # fmt: skip
        pipeline = compose_disjoint([train, self._r(0.5)], "train, then calibrate")
        assert pipeline.relation == "replace-one" and pipeline.seeded
        assert pipeline.epsilon == pytest.approx(train.epsilon)
