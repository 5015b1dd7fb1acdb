"""Old import paths of modules that moved into packages: ``import dpuq.ledger`` still works.

The privacy bookkeeping moved into :mod:`dpuq.privacy`, the file helpers into :mod:`dpuq.io`,
the reliability diagrams into :mod:`dpuq.reporting` and the paper's bin simulation into
:mod:`dpuq.planning` (0.x, issue 40). Each old dotted name below is an *alias* of its new
module, not a copy: ``import dpuq.ledger`` binds the very module object
``dpuq.privacy.ledger``, so ``dpuq.ledger.Ledger is dpuq.privacy.ledger.Ledger``, ``from
dpuq.report import PrivacyReport`` works, patches made through the old name reach the code
that runs, and pickles written before the move (which name ``dpuq.ledger``, ``dpuq.report``,
...) load. Aliases are resolved on first import, so moving a module costs nothing at ``import
dpuq``. New code imports the new paths (a test holds
``src/`` to that).

Examples
--------
>>> import dpuq.ledger, dpuq.privacy.ledger
>>> dpuq.ledger is dpuq.privacy.ledger
True
>>> from dpuq.report import PrivacyReport
>>> PrivacyReport.__module__
'dpuq.privacy.report'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

#: Old dotted name -> the module it now is.
MOVED = {
    "dpuq.accounting": "dpuq.privacy.accounting",
    "dpuq.accountants": "dpuq.privacy.accountants",
    "dpuq.report": "dpuq.privacy.report",
    "dpuq.ledger": "dpuq.privacy.ledger",
    "dpuq._ledger_gate": "dpuq.privacy._ledger_gate",
    "dpuq._ledger_schema": "dpuq.privacy._ledger_schema",
    "dpuq._io_text": "dpuq.io._text",
    "dpuq._atomic": "dpuq.io._atomic",
    "dpuq.plotting": "dpuq.reporting.reliability",
    "dpuq._bin_simulation": "dpuq.planning._bin_simulation",
}


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system the moved module itself (no second copy is executed)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system stamped the alias's spec on the module: give it its own back, so
        # that reload, inspection and multiprocessing see the module's real home
        module.__spec__ = self._own_spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(MOVED[fullname]))


def install() -> None:
    """Put the alias finder on ``sys.meta_path`` once (idempotent)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())


install()  # on `import dpuq`, before any other submodule is imported
