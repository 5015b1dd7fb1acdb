"""No floating-point Laplace, exponential or Gumbel draw anywhere in src/ (issue 12).

All noise is drawn in ``dpuq.mechanisms`` by exact samplers; the only exception listed here
is a data-independent simulation that releases nothing.
"""

import re
from pathlib import Path

import dpuq

SRC = Path(dpuq.__file__).parent
FORBIDDEN = re.compile(
    r"\.(laplace|exponential|standard_exponential|gumbel|standard_gumbel|logistic|wald)\("
    r"|distributions\.(Laplace|Exponential|Gumbel)"
)
# (file relative to src/dpuq, forbidden call): why it is not noise of a mechanism
ALLOWED = {
    ("mechanisms/randomness.py", "standard_exponential"): "planning simulation of uniform order "
    "statistics with a fixed public seed (auto_n_bins); data-independent, releases nothing",
}


def offending_lines():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for m in FORBIDDEN.finditer(line):
                name = m.group(1) or m.group(2)
                if (rel, name) not in ALLOWED:
                    found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_floating_point_noise_in_src():
    assert offending_lines() == []


def test_the_check_can_fail(tmp_path, monkeypatch):
    (tmp_path / "bad.py").write_text("y = x + rng.laplace(0.0, 1.0)\nz = rng.gumbel(size=3)\n")
    monkeypatch.setattr(__import__(__name__), "SRC", tmp_path)
    assert len(offending_lines()) == 2
