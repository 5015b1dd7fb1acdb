"""The documentation site's sources: every nav page exists, the planning page is current."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_every_page_in_the_nav_exists():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = re.findall(r":\s*([\w/.-]+\.md)\s*$", config, flags=re.MULTILINE)
    assert len(pages) > 20
    missing = [p for p in pages if not (DOCS / p).exists()]
    assert not missing, missing


def test_api_pages_name_modules_that_exist():
    for page in (DOCS / "reference").glob("*.md"):
        for module in re.findall(r"^::: ([\w.]+)", page.read_text(), flags=re.MULTILINE):
            assert importlib.util.find_spec(module) is not None, (page.name, module)


@pytest.mark.slow  # 98 auto_n_bins searches: about 5-10 s
def test_planning_page_is_generated_from_dpuq_plan():
    spec = importlib.util.spec_from_file_location("gen_planning", DOCS / "gen_planning.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (DOCS / "how-to" / "planning.md").read_text(encoding="utf-8") == gen.render(), (
        "docs/how-to/planning.md is stale: run `python docs/gen_planning.py`"
    )
