"""Privacy bookkeeping: the report of a release, composition, the budget ledger, accounting.

- :mod:`dpuq.privacy.report`: :class:`PrivacyReport` (what a release cost, under which
  relation), sequential and parallel composition;
- :mod:`dpuq.privacy.ledger`: the SQLite budget book (:class:`Ledger`) and
  :func:`~dpuq.privacy.ledger.charge`, called by every release after its settings are checked
  and before any noise (its gate and schema: ``_ledger_gate``, ``_ledger_schema``);
- :mod:`dpuq.privacy.accountants`: the accountants (GDP, PLD, RDP) for DP-SGD / DP-SGLD;
- :mod:`dpuq.privacy.accounting`: planning with them (steps, σ, temperature).

Nothing here draws noise (that is :mod:`dpuq.mechanisms`) or reads data. The old paths
``dpuq.report``, ``dpuq.ledger``, ``dpuq.accounting`` and ``dpuq.accountants`` still import
(aliases of these modules, see ``dpuq._moved``).
"""

from dpuq.privacy.ledger import BudgetExceededError, Ledger, charge
from dpuq.privacy.report import PrivacyReport, Relation, compose_disjoint, compose_sequential

__all__ = [
    "BudgetExceededError",
    "Ledger",
    "PrivacyReport",
    "Relation",
    "charge",
    "compose_disjoint",
    "compose_sequential",
]
