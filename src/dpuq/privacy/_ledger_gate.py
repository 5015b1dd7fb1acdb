"""When a release must be charged: the ledger requirement, caller-charged draws, simulations.

:func:`dpuq.privacy.ledger.charge` consults these before charging: ``DPUQ_REQUIRE_LEDGER=1`` makes a
ledger mandatory for every release (:func:`ledger_required`), dpuq's own composite releases
pass :data:`CALLER_CHARGED` to the mechanisms they are built from (the composite charged its
total once), and dpuq's own experiments run inside :func:`_simulation`. Public through
:mod:`dpuq.privacy.ledger`.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

from dpuq.privacy._ledger_schema import BudgetError

__all__ = ["CALLER_CHARGED", "REQUIRE_LEDGER_ENV", "LedgerRequiredError", "ledger_required"]


class LedgerRequiredError(BudgetError):
    """``DPUQ_REQUIRE_LEDGER=1`` is set and a release was asked for without a ledger."""

    __module__ = "dpuq.privacy.ledger"  # its public name (re-exported there)


class _CallerCharged:
    """``ledger=CALLER_CHARGED``: the caller already charged this draw as part of a larger
    release (a composite release charges its total once), or runs it on synthetic data in a
    simulation; :func:`charge` then does nothing. Internal use only."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "CALLER_CHARGED"

    def __reduce__(self):
        return (_CallerCharged, ())


class _DeferredCharge:
    """``ledger=`` of a release whose caller (the command line) has locked the output and
    checked the requirement, and lets the release itself say what it costs: the release's
    :func:`dpuq.privacy.ledger.charge` is recorded in ``ledger`` (None: no ledger) under the
    caller's name, settings, note and output, or not at all when public quantities alone decided the
    release (it then charges nothing, and its file says epsilon 0). Internal use only."""

    def __init__(self, ledger, dataset, *, what, output, seeded, settings, note, status="reserved"):
        self.ledger, self.dataset, self.what = ledger, dataset, what
        self.output, self.seeded, self.settings, self.note = output, seeded, settings, note
        self.status, self.receipt = status, None

    def charge(self, epsilon: float, delta: float, relation):
        if self.ledger is None:
            return None
        self.receipt = self.ledger.reserve(
            self.dataset, epsilon, delta, relation, what=self.what, output=self.output,
            seeded=self.seeded, settings=self.settings, note=self.note, status=self.status,
        )  # fmt: skip
        return self.receipt

    def finish(self, status: str) -> None:
        if self.receipt is not None:
            self.receipt.finish(status)


#: Passed as ``ledger=`` by dpuq's own composite releases to the mechanisms they are built
#: from: the composite charged the total once, before any noise.
CALLER_CHARGED = _CallerCharged()

#: The environment variable that makes a ledger mandatory for every release.
REQUIRE_LEDGER_ENV = "DPUQ_REQUIRE_LEDGER"


_SIMULATION = contextvars.ContextVar("dpuq_simulation", default=False)


@contextlib.contextmanager
def _simulation() -> Iterator[None]:
    """Inside: dpuq's own experiments (``dpuq reproduce``, ``dpuq demo``), which repeat
    releases over random splits to measure them and publish none of them for use, run without
    a ledger even when one is required. An explicit ``ledger=`` is still charged. Internal: the
    requirement guards against forgetting the ledger, not against code that means to avoid it
    (which could as well unset the variable)."""
    token = _SIMULATION.set(True)
    try:
        yield
    finally:
        _SIMULATION.reset(token)


#: Inside a composite release that charged its total (e.g. ``private_selection``'s runs, user
#: code included): releases without a ledger are part of it and not refused. The same switch.
_within_charged_release = _simulation


def ledger_required() -> bool:
    """Whether ``$DPUQ_REQUIRE_LEDGER`` asks that every release be charged to a ledger
    (outside dpuq's own experiments)."""
    if _SIMULATION.get():
        return False
    value = os.environ.get(REQUIRE_LEDGER_ENV, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")
