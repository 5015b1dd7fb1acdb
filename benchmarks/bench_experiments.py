"""Benchmarks of the experiment engine (issue 7): many private releases and splits at once.

Prints medians (seconds). Sizes are the paper's ImageNet design: 100 splits of 50,000 points
with 1000 classes into n = 30,000 calibration and 20,000 test points.

    .venv/bin/python benchmarks/bench_experiments.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from _timing import median_time

import dpuq
from dpuq.experiments.evaluation import (
    ScorePool,
    evaluate_thresholds,
    random_splits,
    split_conformal_thresholds,
)
from dpuq.experiments.synthetic_logits import softmax, synthetic_imagenet_logits
from dpuq.mechanisms.quantile import private_quantiles


def main() -> None:
    logits, labels = synthetic_imagenet_logits(50_000, 1000, random_state=0)
    pool = ScorePool.from_probs(softmax(logits), labels)
    del logits
    cal, test = random_splits(pool.n_points, 30_000, 20_000, 100, random_state=1)
    cal_scores = pool.true_scores[cal]
    m, _ = dpuq.auto_n_bins(30_000, 0.1, 1.0)
    q = dpuq.certified_level(30_000, 0.1, 1.0, m)
    rng = np.random.default_rng(2)

    rows = []
    t = median_time(lambda: private_quantiles(cal_scores, q, 1.0, m, random_state=rng))
    rows.append((f"private_quantiles: 100 releases, n = 30000, m* = {m}", t))
    t = median_time(lambda: private_quantiles(cal_scores, q, 1.0, 300_000, random_state=rng))
    rows.append(("private_quantiles: 100 releases, n = 30000, m = 300000", t))

    def loop_of_calibrate():
        for s in range(100):
            dpuq.calibrate(cal_scores[s], alpha=0.1, epsilon=1.0, n_bins=m,
                           random_state=rng)  # fmt: skip

    t = median_time(loop_of_calibrate, repeats=3)
    rows.append(("reference: 100 × dpuq.calibrate in a Python loop (same m, γ)", t))

    thresholds = split_conformal_thresholds(cal_scores, 0.1)
    t = median_time(lambda: evaluate_thresholds(pool, test, thresholds), repeats=5)
    rows.append(("evaluate_thresholds: 100 splits × 20000 test × 1000 classes", t))

    def dense_loop():
        for s in range(100):
            sets = pool.sorted_scores[test[s]] <= thresholds[s]
            sets.sum(axis=1).mean()

    t = median_time(dense_loop, repeats=3)
    rows.append(("reference: dense (20000 × 1000) comparison per split, Python loop", t))

    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "dpuq.cli", "reproduce", "epsilon", "--out", f"{d}/e"]
        cmd += ["--no-progress"]

        times = []
        for _ in range(3):  # no warm-up: a user runs it cold
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        t = statistics.median(times)
    rows.append(("`dpuq reproduce epsilon` at full size, end to end (4 ε + baseline)", t))

    width = max(len(r[0]) for r in rows)
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:8.3f} s")


if __name__ == "__main__":
    main()
