"""Timing helper shared by the benchmark scripts (run as scripts: this folder is on sys.path)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], repeats: int = 7) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs, after one warm-up run."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
