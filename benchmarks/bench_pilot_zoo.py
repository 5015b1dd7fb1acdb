"""Does :func:`dpuq.pilot_check` pick out the cells where the general interval undercovers?

For each general-path statistic of the validity zoo's tables (``--held-out``: the tables kept
out of every decision), runs the pilot with the table as its own public population (the
best case for a pilot: public data drawn from the same law) and prints its verdict next to
the zoo's own measured coverage (``docs/assets/zoo/*.json``, 100-200 samples per cell).

Usage::

    python benchmarks/bench_pilot_zoo.py --held-out --reps 100
    python benchmarks/bench_pilot_zoo.py --populations NMES1988 spam7 --reps 100

Prints a markdown table; ``--json`` writes the rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import validity_zoo as zoo
from dpuq.inference.pilot import pilot_check

ROOT = Path(__file__).resolve().parents[1]

#: The statistics that go through the general path (the others are exact or closed-form).
GENERAL = ("SD", "correlation", "ratio of means", "OLS slope", "logistic slope",
           "log odds ratio", "AUC", "difference of means")  # fmt: skip
#: The zoo's measured coverage per cell: the newest run of each table set.
MEASURED = ("zoo_general_statistics_module.json", "zoo_held_out_statistics_module.json",
            "zoo_fresh_held_out.json")  # fmt: skip


def measured() -> dict:
    out = {}
    for name in MEASURED:
        path = ROOT / "docs" / "assets" / "zoo" / name
        if path.exists():
            for row in json.loads(path.read_text()):
                out[row["population"], row["statistic"]] = row["coverage"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--populations", nargs="+")
    ap.add_argument("--held-out", action="store_true")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--json")
    args = ap.parse_args()
    pops = args.populations or (zoo.HELD_OUT if args.held_out else zoo.POPULATIONS)
    zoo_cov = measured()
    rows = []
    print(f"n = {args.n}, epsilon = {args.epsilon:g}, {args.reps} pilot samples per cell")
    print("| table | statistic | zoo coverage | pilot coverage | coverage without noise | "
          "bias (SE) | spread ratio | verdict |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for pop in pops:
        table = zoo.population(pop)
        for stat in GENERAL:
            c = zoo.cell(pop, stat)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pc = pilot_check(c.f, table, statistic_bounds=c.bounds, n=args.n,
                                 epsilon=args.epsilon, alpha=zoo.ALPHA, vectorized=True,
                                 reps=args.reps, random_state=args.seed)  # fmt: skip
            verdict = "holds" if pc.assumptions_hold[0] else "OUTSIDE"
            cov = zoo_cov.get((pop, stat))
            rows.append({"population": pop, "statistic": stat, "zoo_coverage": cov,
                         "pilot_coverage": float(pc.coverage[0]),
                         "coverage_without_noise": float(pc.coverage_without_noise[0]),
                         "coverage_without_noise_se": float(pc.coverage_without_noise_se[0]),
                         "bias": float(pc.bias[0]), "spread_ratio": float(pc.spread_ratio[0]),
                         "holds": bool(pc.assumptions_hold[0]),
                         "seconds": time.perf_counter() - t0})  # fmt: skip
            print(f"| {pop} | {stat} | {'-' if cov is None else f'{cov:.3f}'} | "
                  f"{pc.coverage[0]:.2f} | {pc.coverage_without_noise[0]:.2f} "
                  f"({pc.coverage_without_noise_se[0]:.2f}) | {pc.bias[0]:+.2f} | "
                  f"{pc.spread_ratio[0]:.2f} | {verdict} |", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
