"""Private median and trimmed-mean intervals at n = 10^6 and 10^7 (issue 16): wall time and
peak memory, medians over repeats, each run in a fresh process (peak RSS is per process).
See docs/explanation/benchmarks.md.

Run: ``.venv/bin/python benchmarks/bench_robust_intervals.py [--repeats 3] [--sizes 6 7]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_CHILD = """
import json, resource, sys, time, warnings
import numpy as np
import dpuq
warnings.simplefilter("ignore", dpuq.UninformativeIntervalWarning)
n, stat, eps, seed = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
x = np.random.default_rng(seed).beta(2.0, 5.0, size=n)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
ci = dpuq.private_confidence_interval(
    x, alpha=0.05, epsilon=eps, bounds=(0.0, 1.0), statistic=stat, random_state=seed
)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "peak_gb": peak / 1e6, "data_gb": base / 1e6,
                  "width": ci.width}))
"""


def run_once(n: int, stat: str, eps: float, seed: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n), stat, str(eps), str(seed)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[6, 7])
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    print("| statistic | n | epsilon | median time | median peak RSS (process) | target |")
    print("|---|---|---|---|---|---|")
    for exponent in args.sizes:
        for stat in ("median", "trimmed_mean"):
            runs = [run_once(10**exponent, stat, args.epsilon, s) for s in range(args.repeats)]
            t = statistics.median(r["seconds"] for r in runs)
            mem = statistics.median(r["peak_gb"] for r in runs)
            target = "< 30 s, < 2 GB" if exponent == 7 else "–"
            print(
                f"| {stat} | 10^{exponent} | {args.epsilon:g} | {t:.2f} s | {mem:.2f} GB | "
                f"{target} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
