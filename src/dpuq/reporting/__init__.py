"""Report rendering shared by the demo and ``dpuq reproduce``: one place for output files.

- :mod:`dpuq.reporting.files`: output folders written atomically, markdown and terminal
  tables, ``summary.md`` / ``results.json`` / ``splits.npz`` (:func:`write_experiment`);
- :mod:`dpuq.reporting.figures`: the coverage and set-size histograms (matplotlib figures, no
  pyplot state);
- :mod:`dpuq.reporting.html`: one self-contained HTML page (the demo's ``report.html``);
- :mod:`dpuq.reporting.reliability`: reliability diagrams (old path ``dpuq.plotting``).

It sits below :mod:`dpuq.experiments` (which decides *what* to say) and above the methods; it
computes nothing statistical.
"""

from dpuq.reporting.files import *  # noqa: F403 (the package's face)
from dpuq.reporting.files import __all__  # noqa: F401
