"""Timings of class-conditional private calibration (issue 14). Prints medians; see
docs/explanation/benchmarks.md.

Run: ``.venv/bin/python benchmarks/bench_class_conditional.py``.
"""

from __future__ import annotations

import numpy as np
from _timing import median_time

import dpuq
from dpuq.conformal.class_levels import auto_class_bins, class_rank_schedule


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for n, k in ((30_000, 10), (10**6, 10), (10**6, 1000)):
        labels = rng.integers(0, k, size=n)
        scores = rng.uniform(size=n)
        rows += [
            (f"auto_class_bins(n={n}, K={k})", lambda n=n, k=k: auto_class_bins(n, k, 0.1, 1.0)),
            (
                f"class_rank_schedule(0..{n}, m=100)",
                lambda n=n: class_rank_schedule(n, alpha=0.1, epsilon=1.0, n_bins=100),
            ),
            (
                f"calibrate_by_class(n={n}, K={k}, n_bins=100)",
                lambda s=scores, y=labels, k=k: dpuq.calibrate_by_class(
                    s, y, k, alpha=0.1, epsilon=1.0, n_bins=100, random_state=1
                ),
            ),
        ]
    print(f"{'benchmark':<52}{'median':>12}")
    for name, fn in rows:
        t = median_time(fn, repeats=5)
        print(f"{name:<52}{t * 1e3:>9.1f} ms")


if __name__ == "__main__":
    main()
