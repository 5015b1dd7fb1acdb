"""Timings of the private calibration core (issue 2). Prints medians; see
docs/explanation/benchmarks.md.

Run: ``./run.sh bench`` or ``.venv/bin/python benchmarks/bench_calibration.py``.
"""

from __future__ import annotations

import numpy as np
from _timing import median_time

import dpuq


def main() -> None:
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=30_000)
    rows = [
        ("auto_n_bins(30000, 0.1, 1.0)", lambda: dpuq.auto_n_bins(30_000, 0.1, 1.0), 0.25),
        (
            "auto_n_bins(30000, 0.1, 1.0, method='paper')",
            lambda: dpuq.auto_n_bins(30_000, 0.1, 1.0, method="paper"),
            0.25,
        ),
        (
            "auto_n_bins(10**6, 0.1, 1.0)",
            lambda: dpuq.auto_n_bins(10**6, 0.1, 1.0),
            None,
        ),
        (
            "calibrate(n=30000, n_bins=10**6)",
            lambda: dpuq.calibrate(scores, alpha=0.1, epsilon=1.0, n_bins=10**6, random_state=1),
            0.030,
        ),
        (
            "calibrate(n=30000, n_bins='auto')",
            lambda: dpuq.calibrate(scores, alpha=0.1, epsilon=1.0, random_state=1),
            None,
        ),
        (
            "private_quantile_distribution(n=30000, m=10**6)",
            lambda: dpuq.private_quantile_distribution(scores, 0.9, 1.0, 10**6),
            None,
        ),
    ]
    print(f"{'benchmark':<52}{'median':>10}{'target':>10}")
    for name, fn, target in rows:
        t = median_time(fn)
        shown = f"{target * 1e3:.0f} ms" if target else "-"
        print(f"{name:<52}{t * 1e3:>7.1f} ms{shown:>10}")


if __name__ == "__main__":
    main()
