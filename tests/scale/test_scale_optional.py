"""Dask stays optional: without it dpuq works and the Dask back end says what to install."""

from __future__ import annotations

import os
import subprocess
import sys

SRC = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "src")

_NO_DASK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "dask" or name.startswith("dask.") or name == "distributed":
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
import numpy as np
import dpuq
cal = dpuq.calibrate(np.linspace(0, 1, 2000), alpha=0.1, epsilon=1.0, random_state=0)
print("calibrated", cal.informative)
try:
    import dpuq.scale._dask
except ImportError as exc:
    print("error:", exc)
"""


def test_dpuq_works_without_dask_and_names_the_extra():
    out = subprocess.run(
        [sys.executable, "-c", _NO_DASK],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        check=True,
    )
    assert "calibrated True" in out.stdout
    assert "pip install 'dpuq[dask]'" in out.stdout
