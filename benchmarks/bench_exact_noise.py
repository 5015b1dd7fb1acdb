"""Cost of exact noise (issue 12): exact Laplace vs numpy's floating-point Laplace, the exact
exponential-mechanism sampler, and a private confidence interval with exact noise. Prints
medians; see docs/explanation/benchmarks.md.

Run: ``.venv/bin/python benchmarks/bench_exact_noise.py`` (with ``--pci-only`` it times only
the confidence interval, so that the figure can be taken on an older checkout too).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
from _timing import median_time

import dpuq


def _row(name: str, seconds: float) -> None:
    unit, value = ("ms", seconds * 1e3) if seconds >= 1e-3 else ("µs", seconds * 1e6)
    print(f"| {name} | {value:.3g} {unit} |")


def pci() -> None:
    rng = np.random.default_rng(0)
    big = np.clip(rng.normal(0.0, 2.0, size=10**6), -3.0, 2.0)
    warnings.simplefilter("ignore", dpuq.UninformativeIntervalWarning)
    _row(
        "private_confidence_interval(mean, n=10**6, eps=1)",
        median_time(
            lambda: dpuq.private_confidence_interval(
                big, alpha=0.05, epsilon=1.0, bounds=(-3.0, 2.0), random_state=1
            )
        ),
    )


def main() -> None:
    from dpuq.mechanisms import laplace_noise, laplace_release, sample_log_weights_rows
    from dpuq.mechanisms.exponential import exponential_mechanism, sample_log_weights

    rng = np.random.default_rng(0)
    print("| benchmark | median |\n|---|---|")
    t_np = median_time(lambda: rng.laplace(0.0, 1.0, size=10**6))
    t_ex = median_time(lambda: laplace_noise(1.0, size=10**6, random_state=rng))
    _row("numpy `Generator.laplace`, 10^6 draws (floating point, not used)", t_np)
    _row("`laplace_noise(1.0, size=10**6)` (exact)", t_ex)
    print(f"| ratio exact / numpy, vector | {t_ex / t_np:.1f}× |")
    x = rng.uniform(size=10**6)
    _row(
        "`laplace_release(x, scale=1.0)`, 10^6 values (rounding + exact noise)",
        median_time(lambda: laplace_release(x, scale=1.0, random_state=rng)),
    )
    reps = 2000
    s_np = median_time(lambda: [rng.laplace(0.0, 1.0) for _ in range(reps)]) / reps
    s_ex = median_time(lambda: [laplace_noise(1.0, random_state=rng) for _ in range(reps)]) / reps
    _row("numpy `Generator.laplace`, one scalar draw", s_np)
    _row("`laplace_noise(1.0)`, one scalar draw (exact)", s_ex)
    for m in (100, 10**6):
        lw = -np.linspace(0.0, 50.0, m)
        _row(
            f"`sample_log_weights`, m = {m}", median_time(lambda lw=lw: sample_log_weights(lw, rng))
        )
    lw2 = -rng.exponential(5.0, size=(1000, 1000))
    _row(
        "`sample_log_weights_rows`, 1000 rows × 1000",
        median_time(lambda: sample_log_weights_rows(lw2, rng)),
    )
    u = rng.normal(size=15360)
    _row(
        "`exponential_mechanism`, 15,360 candidates",
        median_time(
            lambda: exponential_mechanism(u, epsilon=1.0, sensitivity=1.0, random_state=rng)
        ),
    )
    pci()


if __name__ == "__main__":
    if "--pci-only" in sys.argv:
        print("| benchmark | median |\n|---|---|")
        pci()
    else:
        main()
