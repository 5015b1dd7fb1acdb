"""Timings of private bootstrap confidence intervals (issue 5). Prints medians; see
docs/explanation/benchmarks.md.

Run: ``./run.sh bench`` or ``.venv/bin/python benchmarks/bench_private_bootstrap.py``.
"""

from __future__ import annotations

import warnings

import numpy as np
from _timing import median_time

import dpuq


def main() -> None:
    rng = np.random.default_rng(0)
    big = np.clip(rng.normal(0.0, 2.0, size=10**6), -3.0, 2.0)
    peer = np.clip(rng.normal(0.0, 2.0, size=2000), -3.0, 2.0)
    mid = np.clip(rng.normal(0.0, 2.0, size=10**5), -3.0, 2.0)
    b = (-3.0, 2.0)
    warnings.simplefilter("ignore", dpuq.UninformativeIntervalWarning)
    rows = [
        (
            "private_confidence_interval(mean, n=10**6, eps=1)",
            lambda: dpuq.private_confidence_interval(
                big, alpha=0.05, epsilon=1.0, bounds=b, random_state=1
            ),
            2.0,
        ),
        (
            "private_confidence_interval(mean, n=2000, eps=5)",
            lambda: dpuq.private_confidence_interval(
                peer, alpha=0.05, epsilon=5.0, bounds=b, random_state=1
            ),
            None,
        ),
        (
            "private_confidence_interval(median, n=2000, eps=5)",
            lambda: dpuq.private_confidence_interval(
                peer, alpha=0.05, epsilon=5.0, bounds=b, statistic="median", random_state=1
            ),
            None,
        ),
        (
            "private_confidence_interval(trimmed, n=2000, eps=5)",
            lambda: dpuq.private_confidence_interval(
                peer,
                alpha=0.05,
                epsilon=5.0,
                bounds=b,
                statistic="trimmed_mean",
                random_state=1,
            ),
            None,
        ),
        (
            "private_confidence_interval(ensemble_cdf, n=10**6)",
            lambda: dpuq.private_confidence_interval(
                big, alpha=0.5, epsilon=10.0, bounds=b, method="ensemble_cdf", random_state=1
            ),
            None,
        ),
        (
            "private_bootstrap_cdf(mean, n=10**5, one t)",
            lambda: dpuq.private_bootstrap_cdf(mid, 0.5, epsilon=1.0, bounds=b, random_state=1),
            None,
        ),
        (
            "private_bootstrap_cdf_grid(mean, n=10**5, 127 t)",
            lambda: dpuq.private_bootstrap_cdf_grid(mid, epsilon=1.0, bounds=b, random_state=1),
            None,
        ),
        (
            "percentile_bootstrap_interval(n=2000, B=1000)",
            lambda: dpuq.percentile_bootstrap_interval(peer, alpha=0.05, random_state=1),
            None,
        ),
    ]
    print(f"{'benchmark':<54}{'median':>10}{'target':>10}")
    for name, fn, target in rows:
        t = median_time(fn)
        shown = f"{target:.1f} s" if target else "-"
        print(f"{name:<54}{t * 1e3:>7.0f} ms{shown:>10}")


if __name__ == "__main__":
    main()
