"""Timings of private ERM (issue 4). Prints medians; see docs/explanation/benchmarks.md.

Run: ``./run.sh bench`` or ``.venv/bin/python benchmarks/bench_private_erm.py``.
"""

from __future__ import annotations

import numpy as np
from _timing import median_time

import dpuq
from dpuq.learning import DecisionStumps, Intervals


def main() -> None:
    rng = np.random.default_rng(0)
    n, d, t = 100_000, 30, 256
    X = rng.normal(size=(n, d))
    y = ((X[:, 4] > 0.3) ^ (rng.random(n) < 0.1)).astype(int)
    shared = DecisionStumps(np.linspace(-4, 4, t), n_features=d)
    per_feature = DecisionStumps(np.linspace(-4, 4, t)[None, :] + 0.01 * np.arange(d)[:, None])
    clf = dpuq.PrivateERMClassifier(shared, epsilon=1.0, random_state=1)
    clf_pf = dpuq.PrivateERMClassifier(per_feature, epsilon=1.0, random_state=1)
    x1 = X[:, 4]
    intervals = Intervals(np.linspace(-4, 4, t))
    clf_iv = dpuq.PrivateERMClassifier(intervals, epsilon=1.0, random_state=1)
    counts = shared.error_counts(X, y).astype(float)
    rows = [
        (
            f"fit: stumps {n} x {d} x {t} (shared grid, {shared.n_concepts} concepts)",
            lambda: clf.fit(X, y),
            1.0,
        ),
        (f"fit: stumps {n} x {d} x {t} (per-feature grids)", lambda: clf_pf.fit(X, y), 1.0),
        (f"error counts only: stumps {n} x {d} x {t}", lambda: shared.error_counts(X, y), None),
        (
            f"fit: intervals {n} x 1, {intervals.n_concepts} concepts",
            lambda: clf_iv.fit(x1, y),
            None,
        ),
        (
            f"selection_probabilities: stumps {n} x {d} x {t}",
            lambda: clf.selection_probabilities(X, y),
            None,
        ),
        (
            f"exponential_mechanism over {counts.size} candidates",
            lambda: dpuq.exponential_mechanism(
                -counts, epsilon=1.0, sensitivity=1.0, random_state=2
            ),
            None,
        ),
        (
            f"permute_and_flip over {counts.size} candidates",
            lambda: dpuq.permute_and_flip(-counts, epsilon=1.0, sensitivity=1.0, random_state=2),
            None,
        ),
    ]
    print(f"{'benchmark':<66}{'median':>11}{'target':>10}")
    for name, fn, target in rows:
        elapsed = median_time(fn)
        shown = f"{target * 1e3:.0f} ms" if target else "-"
        print(f"{name:<66}{elapsed * 1e3:>8.1f} ms{shown:>10}")


if __name__ == "__main__":
    main()
