"""Timings of `dpuq calibrate` on 10^6 scores (issue 6). Prints medians; see
docs/explanation/benchmarks.md.

The whole process is timed (interpreter start-up, imports, reading the file, the release,
writing the JSON), as a user runs it, then its parts in-process.

Run: ``./run.sh bench`` or ``.venv/bin/python benchmarks/bench_cli.py``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N = 10**6
REPEATS = 7


def median_time(fn, repeats: int = REPEATS) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def command(*args: str):
    argv = [sys.executable, "-m", "dpuq.cli", *args]

    def run() -> None:
        subprocess.run(argv, check=True, capture_output=True)

    return run


def main() -> None:
    import dpuq
    from dpuq.io import read_vector

    rng = np.random.default_rng(0)
    scores = rng.beta(2, 5, size=N)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        np.save(d / "scores.npy", scores)
        np.savetxt(d / "scores.csv", scores, fmt="%.17g", header="score", comments="")
        out = str(d / "cal.json")
        common = ["--alpha", "0.1", "--epsilon", "1", "-o", out, "--force"]
        rows = [
            ("`python -c pass` (interpreter start-up)", lambda: subprocess.run(
                [sys.executable, "-c", "pass"], check=True), None),
            ("`dpuq --version` (start-up + import dpuq)", command("--version"), None),
            ("`dpuq calibrate --scores scores.npy` (10^6)",
             command("calibrate", "--scores", str(d / "scores.npy"), *common), 3.0),
            ("`dpuq calibrate --scores scores.csv` (10^6)",
             command("calibrate", "--scores", str(d / "scores.csv"), *common), 3.0),
            ("  in-process: read .npy (10^6)",
             lambda: read_vector(d / "scores.npy", "--scores"), None),
            ("  in-process: read .csv (10^6)",
             lambda: read_vector(d / "scores.csv", "--scores"), None),
            ("  in-process: auto_n_bins(10^6, 0.1, 1.0)",
             lambda: dpuq.auto_n_bins(N, 0.1, 1.0), None),
            ("  in-process: calibrate(10^6 scores, n_bins='auto')",
             lambda: dpuq.calibrate(scores, alpha=0.1, epsilon=1.0), None),
        ]  # fmt: skip
        print(f"{'benchmark':<56}{'median':>10}{'target':>10}")
        for name, fn, target in rows:
            t = median_time(fn)
            shown = f"{target:.1f} s" if target else "-"
            print(f"{name:<56}{t * 1e3:>7.0f} ms{shown:>10}")


if __name__ == "__main__":
    main()
