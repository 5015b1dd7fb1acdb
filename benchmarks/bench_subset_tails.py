"""The tail-sensitive spread of the general path on synthetic subset-estimate laws (issue 33).

The general path (:mod:`dpuq.inference.general`) aggregates ``s`` subset estimates ``θ_k``. Its
count-based spread measures their *core*: where the ``θ_k`` are skewed (the SD of a
heavy-tailed variable on 50-row subsets) it was about half their standard deviation, and the
mean's window, ``κ`` of those spreads, clipped their tail. Step 3c' adds the ``θ_k``'s clamped
second moment. This script runs the release's own coordinate step
(``general._ensemble_coordinate``, the real mechanisms) on ``θ_k`` drawn from public laws
with mean 0 and standard deviation 1, so that coverage of 0 and width can be read without
any data set, with and without step 3c' (``TAIL_SHARE = 0``, the estimator before it).
These laws, not the validity zoo, chose ``TAIL_SHARE`` and ``TAIL_RADIUS``.

The locating subsets (``s_0 = 200`` of half the rows) draw from the same law scaled by
``sqrt(2)``; their bootstrap scales are ``u sqrt(2)`` times a lognormal(0, 0.2) factor, with
``u`` the ratio of the subsets' own bootstrap to the between-subset spread measured on the
zoo's tables (about 0.8-1 on smooth statistics, 0.25-0.5 on the heavy-tailed SDs).

Usage: ``python benchmarks/bench_subset_tails.py [--reps 400] [--subsets 100] [--epsilon 1]``.
Prints coverage (nominal 0.90) and the median half-width in units of ``1.645/sqrt(s)``
(the non-private normal interval of the subsets' mean is 1).
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np

from dpuq.inference import general
from dpuq.inference.general import ESTIMATE_SHARE, _ensemble_coordinate

#: Laws of the subset estimates (mean 0, standard deviation 1) and their bootstrap ratio u.
LAWS = {
    "normal": 0.9,
    "t3": 0.8,
    "lognormal(0.5)": 0.6,
    "lognormal(1)": 0.3,
    "core+tail mixture": 0.3,
}


def draw(law: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of a public law standardised to mean 0 and standard deviation 1."""
    if law == "normal":
        return rng.normal(size=size)
    if law == "t3":
        return rng.standard_t(3, size=size) / math.sqrt(3.0)
    if law.startswith("lognormal"):
        sg = float(law[10:-1])
        mean, var = math.exp(sg * sg / 2), (math.exp(sg * sg) - 1) * math.exp(sg * sg)
        return (rng.lognormal(0.0, sg, size=size) - mean) / math.sqrt(var)
    # 90 % a tight core, 10 % an exponential tail: most of the variance in a few values
    x = np.where(rng.random(size) < 0.1, rng.exponential(3.0, size), rng.normal(0, 0.5, size))
    return (x - 0.3) / math.sqrt(0.9 * 0.25 + 0.1 * 18.0 - 0.09)


def run(law: str, s: int, epsilon: float, reps: int, seed: int) -> tuple[float, float]:
    """Coverage of 0 and the median half-width (units of ``1.645/sqrt(s)``) over ``reps``."""
    rng = np.random.default_rng(seed)
    u, hits, half = LAWS[law], [], []
    for _ in range(reps):
        theta0 = math.sqrt(2.0) * draw(law, 200, rng)
        sd0 = u * math.sqrt(2.0) * np.exp(rng.normal(0.0, 0.2, 200))
        theta = draw(law, s, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _ensemble_coordinate((theta0, sd0, 25), theta, -50.0, 50.0, 50, 0.1,
                                       epsilon, ESTIMATE_SHARE, rng)  # fmt: skip
        hits.append(out["lower"] <= 0.0 <= out["upper"])
        if out.get("informative", True):
            half.append((out["upper"] - out["lower"]) / 2.0 * math.sqrt(s) / 1.645)
    return float(np.mean(hits)), float(np.median(half)) if half else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--subsets", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=2035)
    args = ap.parse_args()
    print(f"s = {args.subsets}, ε = {args.epsilon}, {args.reps} releases per cell")
    print("| law | coverage, count only | half-width | coverage, with the tail | half-width |")
    print("|---|---|---|---|---|")
    share = general.TAIL_SHARE
    for law in LAWS:
        row = []
        try:
            for tail in (0.0, share):
                general.TAIL_SHARE = tail
                row.extend(run(law, args.subsets, args.epsilon, args.reps, args.seed))
        finally:
            general.TAIL_SHARE = share
        print(f"| {law} | {row[0]:.3f} | {row[1]:.2f} | {row[2]:.3f} | {row[3]:.2f} |")


if __name__ == "__main__":
    main()
