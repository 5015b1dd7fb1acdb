"""User-facing texts (docstrings, messages, privacy reports, docs) carry no internal references
such as "SPEC A.7" (the project's internal specification is not something users can read)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(r"\bSPEC\b")


def _user_facing():
    for path in [*ROOT.joinpath("src", "dpuq").rglob("*.py"), *ROOT.joinpath("docs").rglob("*.md")]:
        yield path.relative_to(ROOT).as_posix(), path
    yield "README.md", ROOT / "README.md"


def test_no_internal_spec_references_in_user_facing_texts():
    found = [
        f"{rel}:{k}"
        for rel, path in _user_facing()
        for k, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if INTERNAL.search(line)
    ]
    assert not found, f"internal references in user-facing texts: {found[:20]}"
