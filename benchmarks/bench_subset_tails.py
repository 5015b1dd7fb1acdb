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

``--known-spread`` adds a ceiling: the same release told the subset estimates' true standard
deviation (1) in place of the released spreads (no tail step), i.e. what a perfect private
spread would give at this ``s`` and ε. It is not a method (the spread of the data is not
public); it shows how much of the width is the spread's estimation and how much the clamped
mean's own noise, ``2 sqrt(2) κ / (sqrt(s) ε_mean)`` standard errors.

``--sweep`` runs the release's constants over a grid instead (``estimate_share``, ``KAPPA``,
``TAIL_RADIUS``, ``TAIL_SHARE`` and the first spread count's radius) and prints, per
setting, the lowest coverage over the laws and the normal law's half-width (issue 33's
eighth session: no setting narrower on the normal law kept the skewed laws' coverage).

Usage: ``python benchmarks/bench_subset_tails.py [--reps 400] [--subsets 100] [--epsilon 1]
[--known-spread] [--sweep]``. Prints coverage (nominal 0.90) and the median half-width in units of
``1.645/sqrt(s)`` (the non-private normal interval of the subsets' mean is 1).
"""

from __future__ import annotations

import argparse
import itertools
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


def run(law: str, s: int, epsilon: float, reps: int, seed: int,
        share: float = ESTIMATE_SHARE) -> tuple[float, float]:  # fmt: skip
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
                                       epsilon, share, rng)  # fmt: skip
        hits.append(out["lower"] <= 0.0 <= out["upper"])
        if out.get("informative", True):
            half.append((out["upper"] - out["lower"]) / 2.0 * math.sqrt(s) / 1.645)
    return float(np.mean(hits)), float(np.median(half)) if half else float("nan")


def sweep(s: int, epsilon: float, reps: int, seed: int) -> None:
    """The grid of ``--sweep``: lowest coverage over the laws, normal half-width."""
    from dpuq.inference import general_plan

    print("| estimate share | κ | tail radius | tail share | first radius | lowest coverage "
          "| normal half-width |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    saved = (general.KAPPA, general.TAIL_RADIUS, general.TAIL_SHARE, general.SPREAD_RADII)
    try:
        for share, kappa, radius, tail, first in itertools.product(
            (0.7, 0.8), (3.5, 4.0), (3.0, 4.0, 5.0), (0.2, 0.3), (1.0, 2.0)
        ):
            general.KAPPA, general.TAIL_RADIUS, general.TAIL_SHARE = kappa, radius, tail
            general.SPREAD_RADII = (first, general_plan.SPREAD_RADII[1])
            res = {law: run(law, s, epsilon, reps, seed, share) for law in LAWS}
            low = min(cov for cov, _ in res.values())
            print(f"| {share} | {kappa} | {radius} | {tail} | {first} | {low:.3f} | "
                  f"{res['normal'][1]:.2f} |", flush=True)  # fmt: skip
    finally:
        general.KAPPA, general.TAIL_RADIUS, general.TAIL_SHARE, general.SPREAD_RADII = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--subsets", type=int, default=100)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=2035)
    ap.add_argument(
        "--known-spread",
        action="store_true",
        help="add the ceiling: the true spread in place of the released ones",
    )
    ap.add_argument("--sweep", action="store_true", help="the constants' grid instead")
    args = ap.parse_args()
    if args.sweep:
        sweep(args.subsets, args.epsilon, args.reps, args.seed)
        return
    print(f"s = {args.subsets}, ε = {args.epsilon}, {args.reps} releases per cell")
    head = "| law | coverage, count only | half-width | coverage, with the tail | half-width |"
    print(head + (" coverage, spread known | half-width |" if args.known_spread else ""))
    print("|---|---|---|---|---|" + ("---|---|" if args.known_spread else ""))
    share, spread_from_count = general.TAIL_SHARE, general._spread_from_count
    for law in LAWS:
        row = []
        try:
            for tail in (0.0, share):
                general.TAIL_SHARE = tail
                row.extend(run(law, args.subsets, args.epsilon, args.reps, args.seed))
            if args.known_spread:  # the ceiling: the true spread, no tail step
                general.TAIL_SHARE = 0.0
                general._spread_from_count = lambda count, s, radius: 1.0
                row.extend(run(law, args.subsets, args.epsilon, args.reps, args.seed))
        finally:
            general.TAIL_SHARE = share
            general._spread_from_count = spread_from_count
        cells = " | ".join(f"{row[i]:.3f} | {row[i + 1]:.2f}" for i in range(0, len(row), 2))
        print(f"| {law} | {cells} |")


if __name__ == "__main__":
    main()
