"""The ledger's file layout and records: schema and migrations, history rows, composition.

Migrations only add (new tables, new columns with defaults); :data:`SCHEMA_VERSION` is the
newest one this dpuq knows, recorded in the file's ``schema_version`` table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Release", "Status", "compose_costs", "now"]

SCHEMA_VERSION = 2
MIGRATIONS = {
    1: """
    CREATE TABLE datasets (
        name TEXT PRIMARY KEY,
        epsilon REAL NOT NULL,
        delta REAL NOT NULL,
        relation TEXT NOT NULL,
        created TEXT NOT NULL
    );
    CREATE TABLE releases (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        dataset TEXT NOT NULL REFERENCES datasets(name),
        what TEXT NOT NULL,
        epsilon REAL NOT NULL,
        delta REAL NOT NULL,
        relation TEXT NOT NULL,
        stated_epsilon REAL NOT NULL,
        stated_delta REAL NOT NULL,
        stated_relation TEXT NOT NULL,
        status TEXT NOT NULL,
        reserved_at TEXT NOT NULL,
        finished_at TEXT,
        output TEXT,
        seeded INTEGER NOT NULL,
        dpuq_version TEXT NOT NULL,
        pid INTEGER,
        host TEXT
    );
    CREATE INDEX releases_dataset ON releases(dataset);
    """,
    # the release's public settings (JSON: level, n, method, statistic, column, ...) and the
    # user's note; never a data value or a hash of the data
    2: """
    ALTER TABLE releases ADD COLUMN settings TEXT;
    ALTER TABLE releases ADD COLUMN note TEXT;
    """,
}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def compose_costs(costs: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """Total ``(ε, δ)`` of releases on the same data by basic composition (valid adaptively).

    >>> compose_costs([(0.5, 0.0), (1.0, 1e-6), (0.5, 1e-6)])
    (2.0, 2e-06)
    """
    costs = list(costs)
    return (
        math.fsum(e for e, _ in costs),
        min(1.0, math.fsum(d for _, d in costs)),
    )


@dataclass(frozen=True)
class Status:
    """A data set's budget and what is spent and left (a snapshot)."""

    dataset: str
    budget_epsilon: float
    budget_delta: float
    relation: str
    created: str
    spent_epsilon: float
    spent_delta: float
    remaining_epsilon: float
    remaining_delta: float
    n_releases: int
    composition: str = "basic (epsilon and delta add up; valid for adaptively chosen costs)"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Release:
    """One row of the history. ``epsilon``/``delta``/``relation`` are what was charged (under
    the budget's relation); ``stated_*`` what the release itself stated."""

    id: int
    dataset: str
    what: str
    epsilon: float
    delta: float
    relation: str
    stated_epsilon: float
    stated_delta: float
    stated_relation: str
    status: str
    reserved_at: str
    finished_at: str | None
    output: str | None
    seeded: bool
    dpuq_version: str
    settings: dict | None = None
    note: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)
