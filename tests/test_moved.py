"""Old import paths of the modules moved into ``dpuq.privacy`` and ``dpuq.io`` keep working:
the top-level names, ``import dpuq.ledger``, ``from dpuq.report import ...``, the lazy
``dpuq.accounting``, patches through an old name, and pickles written before the move."""

import pickle
import subprocess
import sys

import pytest

import dpuq
from dpuq._moved import MOVED


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_an_old_path_is_the_new_module_itself(old, new):
    import importlib

    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new  # its real home
    assert getattr(dpuq, old.split(".")[1]) is module


def test_old_from_imports_give_the_same_objects():
    from dpuq.accountants import rdp_curve
    from dpuq.accounting import calibrate_noise_multiplier
    from dpuq.ledger import BudgetExceededError, Ledger, charge
    from dpuq.report import PrivacyReport, compose_sequential

    from dpuq.privacy import accountants, accounting, ledger, report

    assert Ledger is dpuq.Ledger is ledger.Ledger
    assert BudgetExceededError is dpuq.BudgetExceededError
    assert charge is ledger.charge
    assert PrivacyReport is dpuq.PrivacyReport is report.PrivacyReport
    assert compose_sequential is report.compose_sequential
    assert rdp_curve is accountants.rdp_curve
    assert calibrate_noise_multiplier is accounting.calibrate_noise_multiplier
    from dpuq.io import read_vector
    from dpuq.io.files import read_vector as read_vector_files

    assert read_vector is read_vector_files


def test_old_paths_work_in_a_fresh_interpreter_without_importing_dpuq_first():
    code = (
        "import dpuq.ledger, dpuq.report, dpuq.privacy.ledger, sys;"
        "assert dpuq.ledger is dpuq.privacy.ledger;"
        "from dpuq.accounting import calibrate_noise_multiplier;"
        "from dpuq._atomic import release_file;"
        "print(dpuq.report.PrivacyReport.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "dpuq.privacy.report"


def test_a_patch_through_an_old_name_reaches_the_running_code(monkeypatch):
    import dpuq.ledger

    import dpuq.privacy.ledger

    monkeypatch.setattr(dpuq.ledger, "charge", "patched")
    assert dpuq.privacy.ledger.charge == "patched"


def test_pickles_written_before_the_move_load():
    report = dpuq.PrivacyReport(mechanism="test", epsilon=0.5)
    new = pickle.dumps(report, protocol=2)
    assert b"cdpuq.privacy.report\n" in new  # protocol 2 names classes by module and name
    old = new.replace(b"cdpuq.privacy.report\n", b"cdpuq.report\n")
    assert old != new
    assert pickle.loads(old) == report
    from dpuq.privacy.ledger import _CallerCharged

    gate = pickle.dumps(_CallerCharged, protocol=2)
    old_gate = gate.replace(b"cdpuq.privacy._ledger_gate\n", b"cdpuq.ledger\n")
    assert old_gate != gate and pickle.loads(old_gate) is _CallerCharged


def test_an_unknown_name_is_still_an_error():
    import importlib

    with pytest.raises(ImportError):  # retired: its names live in mechanisms and planning
        importlib.import_module("dpuq.quantile")
    with pytest.raises(AttributeError, match="no attribute 'ledgers'"):
        dpuq.ledgers  # noqa: B018
