"""A privacy budget ledger: an odometer with a filter, in one SQLite file.

Each named data set has a budget ``(ε, δ)`` under one neighbouring relation. Every release
about that data set is recorded with its cost *before* any noise is drawn, inside a transaction
that holds SQLite's write lock while it checks what is left (``BEGIN IMMEDIATE``); a release
that would exceed the budget is refused with :class:`BudgetExceededError`. A recorded spend is
never taken back: if the process dies after reserving, or the release fails, the cost stays
counted (conservative: never a release without its spend).

Composition (:func:`compose_costs`): pure ε adds; ``(ε, δ)`` parts compose by basic composition
(ε's add, δ's add). The ledger is a *privacy filter* (Rogers, Roth, Ullman, Vadhan 2016,
"Privacy odometers and filters", NeurIPS): the budget ``(ε_g, δ_g)`` is fixed in advance, each
release's cost may be chosen after seeing every earlier output, and a release is refused when
the sum would exceed the budget. Their basic-composition filter shows that the whole adaptive
interaction is then ``(ε_g, δ_g)``-DP: summing ε and δ is valid under adaptive choice with a
fixed budget (tested exactly on a small case in ``tests/test_ledger.py``). Tighter theorems
(advanced composition, PLD) do not all hold for adaptively chosen costs; the ledger does not
use them. A cost stated under add/remove-one is charged to a
replace-one budget converted by group privacy, ``(2ε, (1 + e^ε) δ)``
(:meth:`dpuq.privacy.report.PrivacyReport.under`), and the history keeps both; a replace-one cost is
refused by an add/remove-one budget (no conversion exists).

The file: WAL journal (readers never block the writer), ``synchronous=FULL`` (a committed spend
survives a power cut), a ``schema_version`` table, migrations that only add.
The file itself (schema, migrations, transactions) is :mod:`dpuq.privacy._ledger_schema`; when a
release must be charged (``DPUQ_REQUIRE_LEDGER``, caller-charged draws) is
:mod:`dpuq.privacy._ledger_gate`. The check of what is left and the recording of a spend share one
write transaction, in :meth:`Ledger.reserve`.

Examples
--------
>>> import os, tempfile
>>> ledger = Ledger(os.path.join(tempfile.mkdtemp(), "ledger.sqlite"))
>>> _ = ledger.create_budget("patients", epsilon=2.0)
>>> _ = ledger.reserve("patients", 1.5, what="calibration threshold")
>>> ledger.status("patients").remaining_epsilon
0.5
>>> ledger.reserve("patients", 1.0, what="another threshold")
Traceback (most recent call last):
...
dpuq.privacy.ledger.BudgetExceededError: privacy budget of data set 'patients' exceeded: ...
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dpuq._validation import check_random_state_setting
from dpuq.privacy._ledger_gate import (
    CALLER_CHARGED,
    REQUIRE_LEDGER_ENV,
    LedgerRequiredError,
    _DeferredCharge,
    ledger_required,
)
from dpuq.privacy._ledger_gate import _CallerCharged as _CallerCharged  # pickles made before 0.3
from dpuq.privacy._ledger_gate import (
    _simulation as _simulation,  # re-exported (dpuq reproduce, demo)
)
from dpuq.privacy._ledger_gate import (
    _within_charged_release as _within_charged_release,  # re-exported
)
from dpuq.privacy._ledger_schema import (
    INSERT_COLUMNS,
    RELEASE_COLUMNS,
    SCHEMA_VERSION,
    BudgetError,
    BudgetExceededError,
    LedgerFile,
    Release,
    Status,
    compose_costs,
    default_ledger_path,
    now,
    release_trail,
)
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = [
    "CALLER_CHARGED",
    "SCHEMA_VERSION",
    "BudgetError",
    "BudgetExceededError",
    "Ledger",
    "LedgerRequiredError",
    "Receipt",
    "Release",
    "Status",
    "charge",
    "compose_costs",
    "default_ledger_path",
    "ledger_required",
    "release_trail",
]

#: ``charge`` called without a ``random_state`` (a release whose caller states ``seeded``).
_NO_RANDOM_STATE = object()

#: Relative slack on the budget comparison (float sums of decimal costs; 5 x 0.2 == 1).
_SLACK = 1e-12


def _check_name(dataset) -> str:
    if not isinstance(dataset, str) or not dataset.strip():
        raise ValueError(f"dataset must be a non-empty name, got {dataset!r}")
    if len(dataset) > 200 or any(ord(c) < 32 for c in dataset):
        raise ValueError(f"dataset must be a printable name of at most 200 characters: {dataset!r}")
    return dataset


def _check_cost(epsilon, delta) -> tuple[float, float]:
    eps, dl = float(epsilon), float(delta)
    if math.isnan(eps) or eps < 0:
        raise ValueError(f"epsilon of a release must be >= 0, got {epsilon!r}")
    if math.isinf(eps):
        raise BudgetExceededError(
            "a non-private release (epsilon = inf) cannot be charged to a privacy budget"
        )
    if not 0.0 <= dl <= 1.0:
        raise ValueError(f"delta of a release must be in [0, 1], got {delta!r}")
    return eps, dl


def _settings_json(settings) -> str | None:
    if settings is None:
        return None
    if not isinstance(settings, dict):
        raise TypeError(f"settings must be a dict, got {type(settings).__name__}")
    return json.dumps(settings, sort_keys=True, default=str)


class Ledger(LedgerFile):
    """A privacy budget ledger in one SQLite file (created, with its schema, if missing).

    Parameters
    ----------
    path : str or path-like, optional
        The file; default :func:`default_ledger_path`.
    create : bool, default True
        Create the file if it does not exist (False: a missing file is an error).
    timeout : float, default 60
        Seconds to wait for another process's write lock.
    """

    # ------------------------------------------------------------------ budgets
    def create_budget(
        self,
        dataset: str,
        epsilon: float,
        delta: float = 0.0,
        relation: Relation | str = Relation.REPLACE_ONE,
    ) -> Status:
        """Give ``dataset`` a total budget ``(epsilon, delta)`` under ``relation``.

        A data set's budget is set once: an existing budget is never replaced.
        """
        dataset = _check_name(dataset)
        eps, dl = float(epsilon), float(delta)
        if not math.isfinite(eps) or eps <= 0:
            raise BudgetError(f"budget epsilon must be a finite number > 0, got {epsilon!r}")
        if not 0.0 <= dl < 1.0:
            raise BudgetError(f"budget delta must be in [0, 1), got {delta!r}")
        rel = Relation.coerce(relation)
        with self._write() as con:
            if con.execute("SELECT 1 FROM datasets WHERE name = ?", (dataset,)).fetchone():
                raise BudgetError(
                    f"data set {dataset!r} already has a privacy budget in {str(self.path)!r}; "
                    "a budget is set once"
                )
            con.execute(
                "INSERT INTO datasets VALUES (?, ?, ?, ?, ?)", (dataset, eps, dl, rel.value, now())
            )
        return self.status(dataset)

    def datasets(self) -> list[str]:
        """The names of the data sets with a budget."""
        with self._connect() as con:
            return [r[0] for r in con.execute("SELECT name FROM datasets ORDER BY name")]

    def status(self, dataset: str) -> Status:
        """Budget, spent and remaining ε and δ of ``dataset``."""
        dataset = _check_name(dataset)
        with self._connect() as con:
            con.execute("BEGIN")  # one consistent snapshot
            eps, dl, rel, created = self._budget_row(con, dataset)
            (s_eps, s_dl), count = self._spent(con, dataset)
            con.execute("COMMIT")
        return Status(
            dataset=dataset,
            budget_epsilon=eps,
            budget_delta=dl,
            relation=rel,
            created=created,
            spent_epsilon=s_eps,
            spent_delta=s_dl,
            remaining_epsilon=max(0.0, eps - s_eps),
            remaining_delta=max(0.0, dl - s_dl),
            n_releases=count,
        )

    def releases(self, dataset: str | None = None) -> list[Release]:
        """The history, oldest first (of one data set, or of all)."""
        query = f"SELECT {RELEASE_COLUMNS} FROM releases"
        params: tuple = ()
        if dataset is not None:
            query += " WHERE dataset = ?"
            params = (_check_name(dataset),)
        with self._connect() as con:
            rows = con.execute(query + " ORDER BY id", params).fetchall()
        return [Release.from_row(r) for r in rows]

    # ------------------------------------------------------------------ spending
    def reserve(
        self,
        dataset: str,
        epsilon: float,
        delta: float = 0.0,
        relation: Relation | str = Relation.REPLACE_ONE,
        *,
        what: str,
        output: str | os.PathLike | None = None,
        seeded: bool = False,
        status: str = "reserved",
        settings: dict | None = None,
        note: str | None = None,
    ) -> Receipt:
        """Record a release's cost, or refuse it, in one write-locked transaction.

        Call it before any noise is drawn. The spend is committed when this returns and is
        never taken back. Raises :class:`BudgetExceededError` if the total would exceed the
        budget, :class:`BudgetError` if ``dataset`` has no budget, :class:`ValueError` for a
        cost under replace-one charged to an add/remove-one budget. ``settings`` (the
        release's public settings: level, n, method, column, ...) and ``note`` are kept in the
        history; they must hold no data value.
        """
        from dpuq._version import __version__

        dataset = _check_name(dataset)
        s_eps, s_dl = _check_cost(epsilon, delta)
        s_rel = Relation.coerce(relation)
        settings_json = _settings_json(settings)
        if note is not None and not isinstance(note, str):
            raise TypeError(f"note must be a string, got {type(note).__name__}")
        with self._write() as con:
            b_eps, b_dl, b_rel, _ = self._budget_row(con, dataset)
            if s_rel.value == b_rel:
                eps, dl = s_eps, s_dl
            else:
                try:
                    conv = PrivacyReport(what, s_eps, s_dl, s_rel).under(b_rel)
                except ValueError as exc:
                    raise ValueError(
                        f"data set {dataset!r} has a budget under {b_rel}; {exc}"
                    ) from None
                eps, dl = conv.epsilon, conv.delta
            (t_eps, t_dl), _ = self._spent(con, dataset)
            new_eps, new_dl = compose_costs([(t_eps, t_dl), (eps, dl)])
            if new_eps > b_eps * (1 + _SLACK) or new_dl > b_dl * (1 + _SLACK):
                left = f"epsilon {max(0.0, b_eps - t_eps):.6g}"
                if b_dl > 0 or dl > 0:
                    left += f", delta {max(0.0, b_dl - t_dl):.3g}"
                asked = f"epsilon {eps:.6g}" + (f", delta {dl:.3g}" if b_dl > 0 or dl > 0 else "")
                if s_rel.value != b_rel:
                    asked += f" ({s_rel.value} cost converted to {b_rel})"
                raise BudgetExceededError(
                    f"privacy budget of data set {dataset!r} exceeded: {what} needs {asked} but "
                    f"only {left} is left (budget epsilon {b_eps:g}, delta {b_dl:g}); "
                    "nothing was released"
                )
            cur = con.execute(
                f"INSERT INTO releases ({INSERT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    dataset,
                    str(what),
                    eps,
                    dl,
                    b_rel,
                    s_eps,
                    s_dl,
                    s_rel.value,
                    status,
                    now(),
                    None,
                    None if output is None else str(Path(output).resolve()),
                    int(bool(seeded)),
                    __version__,
                    settings_json,
                    note,
                    os.getpid(),
                    socket.gethostname(),
                ),
            )
            rid = int(cur.lastrowid)
        return Receipt(self, rid, dataset, eps, dl, b_rel)

    @contextlib.contextmanager
    def spend(
        self,
        dataset: str,
        epsilon: float,
        delta: float = 0.0,
        relation: Relation | str = Relation.REPLACE_ONE,
        *,
        what: str,
        output: str | os.PathLike | None = None,
        seeded: bool = False,
        settings: dict | None = None,
        note: str | None = None,
    ) -> Iterator[Receipt]:
        """Reserve (committed on entry), run the block, record ``released`` or ``failed``.

        Examples
        --------
        >>> import os, tempfile
        >>> ledger = Ledger(os.path.join(tempfile.mkdtemp(), "l.sqlite"))
        >>> _ = ledger.create_budget("d", epsilon=1.0)
        >>> with ledger.spend("d", 0.25, what="a count") as receipt:
        ...     pass  # draw the noise and release here
        >>> [(r.what, r.epsilon, r.status) for r in ledger.releases("d")]
        [('a count', 0.25, 'released')]
        """
        receipt = self.reserve(
            dataset,
            epsilon,
            delta,
            relation,
            what=what,
            output=output,
            seeded=seeded,
            settings=settings,
            note=note,
        )
        try:
            yield receipt
        except BaseException:
            with contextlib.suppress(Exception):
                receipt.finish("failed")
            raise
        receipt.finish("released")


@dataclass
class Receipt:
    """A recorded spend; :meth:`attach` an output file, :meth:`finish` with its outcome."""

    ledger: Ledger
    id: int
    dataset: str
    epsilon: float
    delta: float
    relation: str
    _output: str | None = None

    def attach(self, output: str | os.PathLike) -> None:
        """Record where the release was written (at :meth:`finish`)."""
        self._output = str(Path(output).resolve())

    def finish(self, status: str = "released") -> None:
        """Record the outcome; the cost stays counted whatever it is."""
        self.ledger._finish(self.id, status, self._output)


def charge(
    ledger: Ledger | str | os.PathLike | None,
    dataset: str | None,
    cost: PrivacyReport | float,
    *,
    delta: float = 0.0,
    relation: Relation | str = Relation.REPLACE_ONE,
    what: str,
    seeded: bool = False,
    random_state=_NO_RANDOM_STATE,
    settings: dict | None = None,
    note: str | None = None,
) -> Receipt | None:
    """Charge a release to ``dataset``'s budget before its noise is drawn (if asked to).

    The one call every releasing function makes, after validating every setting and before
    drawing any noise. ``ledger=None, dataset=None``: no ledger, nothing happens, unless
    ``DPUQ_REQUIRE_LEDGER=1`` is set: then the release is refused with
    :class:`LedgerRequiredError` (before any noise). ``dataset`` alone: the default ledger
    (:func:`default_ledger_path`). ``cost`` is ε (with ``delta``, ``relation``) or a
    :class:`~dpuq.privacy.report.PrivacyReport`. ``settings``: the release's public settings, kept
    in the history (never a data value). ``ledger=CALLER_CHARGED``: charged by the caller.
    ``random_state``: the release's own, checked here first (a malformed one is refused before
    anything is recorded, whoever forgot to check it) and recorded as ``seeded`` when not None.

    Examples
    --------
    >>> charge(None, None, 1.0, what="a count") is None  # no ledger asked for
    True
    """
    if random_state is not _NO_RANDOM_STATE:
        seeded = seeded or check_random_state_setting(random_state) is not None
    if ledger is CALLER_CHARGED:
        return None
    if isinstance(ledger, _DeferredCharge):  # the command line's ledger, charged here
        if isinstance(cost, PrivacyReport):
            return ledger.charge(cost.epsilon, cost.delta, cost.relation)
        return ledger.charge(cost, delta, relation)
    if ledger is None and dataset is None:
        if ledger_required():
            raise LedgerRequiredError(
                f"{REQUIRE_LEDGER_ENV}=1 requires a privacy ledger for every release: pass "
                f"ledger= and dataset= to {what} (CLI: --ledger PATH --dataset NAME); "
                "nothing was released"
            )
        return None
    if dataset is None:
        raise ValueError("ledger= needs dataset= (the name of the data set being released)")
    if not isinstance(ledger, Ledger):
        ledger = Ledger(ledger, create=False) if ledger is not None else Ledger(create=False)
    if isinstance(cost, PrivacyReport):
        eps, delta, relation = cost.epsilon, cost.delta, cost.relation
        seeded = seeded or cost.seeded
    else:
        eps = cost
    return ledger.reserve(
        dataset,
        eps,
        delta,
        relation,
        what=what,
        seeded=seeded,
        status="spent",
        settings=settings,
        note=note,
    )
