"""The ledger's file: schema and migrations, history rows, composition, the SQLite plumbing.

Migrations only add (new tables, new columns with defaults); :data:`SCHEMA_VERSION` is the
newest one this dpuq knows, recorded in the file's ``schema_version`` table.
:class:`LedgerFile` opens the file (WAL journal, ``synchronous=FULL``), runs write
transactions that hold the lock from their start (``BEGIN IMMEDIATE``) and migrates; the
budgets and spends built on it are :class:`dpuq.privacy.ledger.Ledger`'s. The errors are those of
:mod:`dpuq.privacy.ledger`, where they are public.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "INSERT_COLUMNS",
    "MIGRATIONS",
    "RELEASE_COLUMNS",
    "SCHEMA_VERSION",
    "BudgetError",
    "BudgetExceededError",
    "LedgerFile",
    "Release",
    "Status",
    "compose_costs",
    "default_ledger_path",
    "now",
    "release_trail",
]

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

    @property
    def statement(self) -> dict[str, str]:
        """The privacy statement of the whole budget (``dpuq budget show``), in the words of
        :attr:`dpuq.privacy.report.PrivacyReport.statement`."""
        from dpuq.privacy.report import (
            OUTPUTS_COVERED,
            OUTPUTS_NOT_COVERED,
            PRIVACY_UNIT,
            Relation,
        )

        pure = self.budget_delta == 0.0
        return {
            "privacy unit": PRIVACY_UNIT,
            "neighbouring relation": Relation.coerce(self.relation).description,
            "measure": f"pure epsilon-DP (epsilon = {self.budget_epsilon:g} in total)"
            if pure
            else f"approximate (epsilon, delta)-DP (epsilon = {self.budget_epsilon:g}, "
            f"delta = {self.budget_delta:g} in total)",
            "accountant": "the ledger, a privacy filter: basic composition (epsilons and "
            "deltas add up) against a fixed budget, valid when each release's cost is chosen "
            "after seeing the earlier outputs (Rogers, Roth, Ullman, Vadhan 2016, 'Privacy "
            "odometers and filters'); each release's own accountant in its report",
            "outputs covered": OUTPUTS_COVERED + ", of every release recorded here",
            "outputs not covered": OUTPUTS_NOT_COVERED + "; releases made without this ledger",
            "tuning accounted": "only where a release says so in its report (private "
            "selection); settings chosen by looking at these data outside dpuq are not",
            "sampling assumption": "none by the ledger; a release that assumes one (DP-SGD's "
            "Poisson subsampling) says so in its report",
        }


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

    @classmethod
    def from_row(cls, r: tuple) -> Release:
        """The record of a row selected with :data:`RELEASE_COLUMNS`."""
        return cls(*r[:13], bool(r[13]), r[14], json.loads(r[15]) if r[15] else None, r[16])


#: The ``releases`` columns a :class:`Release` is read from, and those a new spend writes.
RELEASE_COLUMNS = ", ".join(Release.__dataclass_fields__)
INSERT_COLUMNS = ", ".join([*list(Release.__dataclass_fields__)[1:], "pid", "host"])


class BudgetError(ValueError):
    """A ledger refusal: no budget for the data set, or a bad budget."""

    __module__ = "dpuq.privacy.ledger"  # its public name (re-exported there), as tracebacks show it


class BudgetExceededError(BudgetError):
    """The release would exceed what is left of the data set's privacy budget."""

    __module__ = "dpuq.privacy.ledger"


def default_ledger_path() -> Path:
    """``$DPUQ_LEDGER``, else ``$XDG_DATA_HOME/dpuq/ledger.sqlite``, else
    ``~/.local/share/dpuq/ledger.sqlite``."""
    if os.environ.get("DPUQ_LEDGER"):
        return Path(os.environ["DPUQ_LEDGER"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or os.path.join("~", ".local", "share")
    return Path(base).expanduser() / "dpuq" / "ledger.sqlite"


class LedgerFile:
    """The SQLite file of a ledger: opening, write transactions, migrations, budget rows.

    The base of :class:`dpuq.privacy.ledger.Ledger` (which documents the parameters); what a budget
    and a spend mean is there, how they are stored is here.
    """

    path: Path
    timeout: float

    def __init__(
        self, path: str | os.PathLike | None = None, *, create: bool = True, timeout: float = 60.0
    ) -> None:
        where = Path(path) if path is not None else default_ledger_path()
        self.path = where.expanduser().absolute()
        self.timeout = float(timeout)
        if not self.path.exists():
            if not create:
                raise BudgetError(
                    f"no ledger at {str(self.path)!r}: set a budget first with "
                    "`dpuq budget init --ledger PATH --dataset NAME --epsilon E`"
                )
            if path is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            elif not self.path.parent.is_dir():
                raise ValueError(f"ledger {str(self.path)!r}: directory does not exist")
        elif self.path.is_dir():
            raise ValueError(f"ledger {str(self.path)!r}: is a directory")
        self._migrate(create)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # ------------------------------------------------------------------ plumbing
    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise OSError(f"ledger {str(self.path)!r}: cannot open ({exc})") from None
        try:
            con.execute("PRAGMA synchronous=FULL")
            con.execute("PRAGMA foreign_keys=ON")
            yield con
        except sqlite3.DatabaseError as exc:
            raise OSError(f"ledger {str(self.path)!r}: {exc}") from None
        finally:
            con.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A transaction holding the write lock from its start (BEGIN IMMEDIATE)."""
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def _migrate(self, create: bool) -> None:
        with self._connect() as con:
            known = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
            if not known and not create:
                raise BudgetError(
                    f"{str(self.path)!r} is not a dpuq ledger (no schema_version table)"
                )
            if con.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                con.execute("PRAGMA journal_mode=WAL")
            if (
                known
                and con.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
                == SCHEMA_VERSION
            ):
                return
        with self._write() as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS schema_version "
                "(version INTEGER NOT NULL, applied TEXT NOT NULL)"
            )
            row = con.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = row[0] or 0
            if current > SCHEMA_VERSION:
                raise BudgetError(
                    f"ledger {str(self.path)!r} has schema version {current}, newer than this "
                    f"dpuq knows ({SCHEMA_VERSION}): upgrade dpuq"
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version].split(";"):
                    if statement.strip():
                        con.execute(statement)
                con.execute("INSERT INTO schema_version VALUES (?, ?)", (version, now()))

    @staticmethod
    def _budget_row(con: sqlite3.Connection, dataset: str):
        row = con.execute(
            "SELECT epsilon, delta, relation, created FROM datasets WHERE name = ?", (dataset,)
        ).fetchone()
        if row is None:
            raise BudgetError(
                f"no privacy budget for data set {dataset!r} in the ledger: set one with "
                f"`dpuq budget init --dataset {dataset} --epsilon E` or Ledger.create_budget"
            )
        return row

    @staticmethod
    def _spent(con: sqlite3.Connection, dataset: str) -> tuple[tuple[float, float], int]:
        rows = con.execute(
            "SELECT epsilon, delta FROM releases WHERE dataset = ?", (dataset,)
        ).fetchall()
        return compose_costs(rows), len(rows)

    def _finish(self, rid: int, status: str, output: str | None) -> None:
        with self._write() as con:
            con.execute(
                "UPDATE releases SET status = ?, finished_at = ?, output = COALESCE(?, output) "
                "WHERE id = ?",
                (status, now(), output, rid),
            )


def release_trail(
    receipt, what: str, *, dataset: str | None = None, note: str | None = None
) -> dict:
    """The paper trail of one release, for its file and report: what was released, when, by
    which dpuq, from which data set, which ledger entry paid for it (ε, δ, relation) and what is
    left of the budget (the ledger's own numbers), or that no ledger was used.

    Never a hash or fingerprint of the data: it would be a deterministic function of the data,
    not private.

    >>> release_trail(None, "a count")["ledger"] is None
    True
    """
    from dpuq._version import __version__

    trail = {
        "released": what,
        "released_at": now(),
        "dpuq_version": __version__,
        "dataset": receipt.dataset if receipt is not None else dataset,
        "note": note,
        "ledger": None,
    }
    if receipt is not None:
        status = receipt.ledger.status(receipt.dataset)
        trail["ledger"] = {
            "file": Path(receipt.ledger.path).name,  # its name only, never where it lives
            "entry": receipt.id,
            "charged epsilon": receipt.epsilon,
            "charged delta": receipt.delta,
            "relation": receipt.relation,
            "budget epsilon": status.budget_epsilon,
            "budget delta": status.budget_delta,
            "remaining epsilon": status.remaining_epsilon,
            "remaining delta": status.remaining_delta,
        }
    return trail
