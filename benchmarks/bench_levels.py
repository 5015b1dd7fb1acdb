"""Several levels from one release against the ε/L split and single levels, on the same splits.

Set sizes over non-private split conformal (ratio of mean sizes), α = 0.05 / 0.1 / 0.2, LAC
scores, n = 1000, ε = 1: the joint release (``dpuq.calibrate(alpha=[...])``), three releases
at ε/3 each (the naive split), and one release per level at the full ε (for reference: that
would cost 3ε in total). Pools: Fashion-MNIST (logistic regression) when installed, else digits.
Run: ``python benchmarks/bench_levels.py [n_splits]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import dpuq
from dpuq.experiments.calibration_comparison import load_pools

ALPHAS = (0.05, 0.1, 0.2)


def run(pool, n_splits: int, n: int = 1000, epsilon: float = 1.0, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    matrix = dpuq.lac_scores(pool.probs)
    true = matrix[np.arange(len(pool.labels)), pool.labels]
    names = ("split conformal", "joint", "eps/L split", "single, full eps")
    sizes = {k: np.zeros((n_splits, len(ALPHAS))) for k in names}
    covers = np.zeros((n_splits, len(ALPHAS)))
    start = time.perf_counter()
    for r in range(n_splits):
        perm = rng.permutation(true.size)
        cal, test = perm[:n], perm[n:]

        def size(t, test=test):
            return (matrix[test] <= t).sum(axis=1).mean()

        s = true[cal]
        joint = dpuq.calibrate(s, alpha=list(ALPHAS), epsilon=epsilon, random_state=rng)
        for k, a in enumerate(ALPHAS):
            sizes["split conformal"][r, k] = size(dpuq.split_conformal_threshold(s, a))
            sizes["joint"][r, k] = size(joint.threshold[k])
            third = dpuq.calibrate(s, alpha=a, epsilon=epsilon / len(ALPHAS), random_state=rng)
            sizes["eps/L split"][r, k] = size(third.threshold)
            full = dpuq.calibrate(s, alpha=a, epsilon=epsilon, random_state=rng)
            sizes["single, full eps"][r, k] = size(full.threshold)
            covers[r, k] = (true[test] <= joint.threshold[k]).mean()
    took = time.perf_counter() - start
    base = sizes["split conformal"].mean(axis=0)
    print(f"\n{pool.name}: n = {n}, epsilon = {epsilon}, {n_splits} splits ({took:.0f} s)")
    print("| method | " + " | ".join(f"α = {a:g}" for a in ALPHAS) + " |")
    print("|---|" + "---|" * len(ALPHAS))
    for name, arr in sizes.items():
        cells = [f"{m:.3f}" if name == "split conformal" else f"×{m / b:.3f}"
                 for m, b in zip(arr.mean(axis=0), base, strict=True)]  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("| joint coverage | " + " | ".join(f"{c:.3f}" for c in covers.mean(axis=0)) + " |")
    wins = (sizes["joint"] < sizes["eps/L split"]).mean(axis=0)
    print("| joint smaller than split (share of splits) | "
          + " | ".join(f"{w:.0%}" for w in wins) + " |")  # fmt: skip


if __name__ == "__main__":
    splits = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    for p in load_pools(fashion=True):
        run(p, splits)
