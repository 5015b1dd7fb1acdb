"""Coverage and width of private intervals for clinicians' statistics
(docs/how-to/general_intervals.md).

Four statistics with known population values: an OLS slope (heteroscedastic errors), a
logistic-regression log odds ratio, an AUC and the 90th percentile of a lab value. For each
n in {1000, 5000, 20000} and ε in {0.5, 1, 3}: coverage and median width of
``dpuq.private_confidence_interval`` (method "ensemble", the default, and "subsampling", the
PrivSub-style comparison) against the non-private percentile bootstrap (200 resamples) on the
same simulated samples. Every statistic is written in the opt-in vectorised form
``f(rows, W)`` with ``W`` a ``(T, b)`` weight matrix.

Usage: ``python benchmarks/bench_general_intervals.py [--reps R] [--ns 1000 5000] [--seed S]``.
Prints a Markdown table (coverage with its binomial standard error) and the time per call.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from scipy import stats
from scipy.special import expit

import dpuq
from dpuq.inference import statistics

ALPHA = 0.1
EPSILONS = (0.5, 1.0, 3.0)


# --- the statistics: the library's (dpuq.inference.statistics), columns 0 and 1 ---------------
ols_slope = statistics.ols_slope(0, 1)
logit_slope = statistics.logistic_slope(0, 1)  # the log odds ratio of column 0
auc = statistics.auc(0, 1)
P90 = dpuq.weighted_quantile(0.9)


# --- data with known population values ----------------------------------------------------------


def draw(kind: str, n: int, rng):
    if kind == "OLS slope":
        x = rng.normal(size=n)
        return np.column_stack([x, 1 + 2 * x + (1 + 0.5 * np.abs(x)) * rng.normal(size=n)])
    if kind == "log odds ratio":
        x = rng.normal(size=n)
        return np.column_stack([x, rng.uniform(size=n) < expit(-1 + 0.7 * x)]).astype(float)
    if kind == "AUC":
        y = rng.uniform(size=n) < 0.3
        return np.column_stack([rng.normal(size=n) + y, y]).astype(float)
    return np.minimum(rng.lognormal(1.0, 0.5, size=n), 50.0)[:, None]


CASES = {
    "OLS slope": (ols_slope, (-10.0, 10.0), 2.0),
    "log odds ratio": (logit_slope, (-5.0, 5.0), 0.7),
    "AUC": (auc, (0.0, 1.0), float(stats.norm.cdf(1 / math.sqrt(2)))),
    "90th percentile": (P90, (0.0, 50.0), float(math.exp(1 + 0.5 * stats.norm.ppf(0.9)))),
}


def percentile_bootstrap(rows, f, n_boot, rng):
    n = rows.shape[0]
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)
    vals = f(rows, w)
    vals = vals[np.isfinite(vals)]
    return np.quantile(vals, [ALPHA / 2, 1 - ALPHA / 2])


def private(rows, kind, f, bounds, eps, method, rng):
    if kind == "90th percentile":
        return dpuq.private_confidence_interval(
            rows[:, 0], statistic="quantile", quantile=0.9, bounds=bounds, alpha=ALPHA,
            epsilon=eps, method=method, random_state=rng,
        )  # fmt: skip
    return dpuq.private_confidence_interval(
        rows, statistic=f, statistic_bounds=bounds, alpha=ALPHA, epsilon=eps, method=method,
        vectorized=True, random_state=rng,
    )  # fmt: skip


def run(reps: int, ns, seed: int, kinds) -> list[dict]:
    rows_out = []
    for kind in kinds:
        f, bounds, truth = CASES[kind]
        for n in ns:
            rng = np.random.default_rng([seed, n, len(kind)])
            res: dict = {("boot", None): []}
            times = []
            for _ in range(reps):
                data = draw(kind, n, rng)
                lo, hi = percentile_bootstrap(data, f, 200, rng)
                res["boot", None].append((lo <= truth <= hi, hi - lo))
                for eps in EPSILONS:
                    for method in ("ensemble", "subsampling"):
                        t0 = time.perf_counter()
                        ci = private(data, kind, f, bounds, eps, method, rng)
                        if method == "ensemble":
                            times.append(time.perf_counter() - t0)
                        hit = ci.lower <= truth <= ci.upper
                        res.setdefault((method, eps), []).append((hit, ci.width, ci.informative))
            boot_w = float(np.median([v[1] for v in res["boot", None]]))
            boot_c = float(np.mean([v[0] for v in res["boot", None]]))
            for (method, eps), vals in res.items():
                if method == "boot":
                    continue
                cov = float(np.mean([v[0] for v in vals]))
                width = float(np.median([v[1] for v in vals]))
                informative = float(np.mean([v[2] for v in vals]))
                rows_out.append({
                    "statistic": kind, "n": n, "epsilon": eps, "method": method,
                    "coverage": cov, "se": math.sqrt(max(cov * (1 - cov), 0.25 / reps) / reps),
                    "width": width, "boot_coverage": boot_c, "boot_width": boot_w,
                    "ratio": width / boot_w, "seconds": float(np.median(times)),
                    "informative": informative,
                })  # fmt: skip
            print(f"done {kind} n={n}", flush=True)
    return rows_out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--ns", type=int, nargs="+", default=[1000, 5000, 20000])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--kinds", nargs="+", default=list(CASES), choices=list(CASES))
    args = ap.parse_args()
    warnings.simplefilter("ignore", dpuq.UninformativeIntervalWarning)  # counted in the table
    out = run(args.reps, args.ns, args.seed, args.kinds)
    print(f"\nreps = {args.reps} per cell; nominal coverage {1 - ALPHA:g}; width: median")
    print("| statistic | n | ε | method | coverage (SE) | width | × bootstrap | informative "
          "| bootstrap coverage | s/call |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in out:
        print(
            f"| {r['statistic']} | {r['n']} | {r['epsilon']:g} | {r['method']} | "
            f"{r['coverage']:.2f} ({r['se']:.2f}) | {r['width']:.4g} | {r['ratio']:.2f} | "
            f"{r['informative']:.2f} | "
            f"{r['boot_coverage']:.2f} | {r['seconds']:.2f} |"
        )


if __name__ == "__main__":
    main()
