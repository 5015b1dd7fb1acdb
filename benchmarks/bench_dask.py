"""Dask at scale (issue 17): calibrate and the private mean interval on a 2-worker LocalCluster
versus NumPy in memory on the same numbers. Prints medians; figures in docs/benchmarks.md.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dask.py [--sizes 1e6 1e7 1e8]``
(default 10^6 and 10^7; 10^8 needs about 6 GB for the in-memory comparison).

The data are generated on the workers (``dask.array.random.default_rng(seed)``, chunks of
2^22) and persisted there; the client never holds them. The in-memory runs happen in a
separate process that computes the same array locally, so that each process's peak memory
(``ru_maxrss``) is its own. Every row checks that both releases are equal.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

CHUNK = 1 << 22
ALPHA, EPSILON, SEED = 0.1, 1.0, 7


def _data(n: int, kind: str):
    import dask.array as da

    rng = da.random.default_rng(2026)
    if kind == "scores":
        return rng.uniform(size=n, chunks=CHUNK)
    return rng.beta(2.0, 5.0, size=n, chunks=CHUNK)


def _calibrate(x):
    import dpuq

    return dpuq.calibrate(x, alpha=ALPHA, epsilon=EPSILON, random_state=SEED)


def _interval(x):
    import dpuq

    return dpuq.private_confidence_interval(
        x, alpha=0.05, epsilon=EPSILON, bounds=(0.0, 1.0), random_state=SEED
    )


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def in_memory(n: int, kind: str, repeats: int) -> dict:
    """Run in a child process: compute the array locally, then time the NumPy release."""
    import dask

    with dask.config.set(scheduler="threads"):
        x = _data(n, kind).compute()
    base = _peak_mb()
    fn = _calibrate if kind == "scores" else _interval
    t, out = _timed(lambda: fn(x), repeats)
    return {
        "time": t,
        "peak_mb": _peak_mb(),
        "data_mb": x.nbytes / 2**20,
        "base_mb": base,
        "release": _key(out),
    }


def _key(out):
    if hasattr(out, "threshold"):
        return [out.threshold, out.n_bins]
    return [out.lower, out.upper, out.estimate]


def _phases(x) -> dict:
    """Where the Dask interval's time goes (same calls as private_confidence_interval)."""
    import math

    from dpuq.inference._data import resolve_n_subsets
    from dpuq.scale.intervals import DaskIntervalData

    t0 = time.perf_counter()
    d = DaskIntervalData(x, (0.0, 1.0), False)
    t1 = time.perf_counter()
    d.mean_variance()
    t2 = time.perf_counter()
    s = resolve_n_subsets("auto", d.size, EPSILON)
    d.subset_moments(s, 500, np.random.default_rng(0))
    t3 = time.perf_counter()
    return {
        "validate+sums": t1 - t0,
        "squared deviations": t2 - t1,
        "partition+moments": t3 - t2,
        "subsets": s,
        "subset_size": d.size // s,
        "log10n": math.log10(d.size),
    }


def _calibrate_phases(x) -> dict:
    """Where calibrate's time goes on Dask: the bin choice (client) and the counting pass."""
    import dpuq
    from dpuq.scale._dask import DaskScores

    t0 = time.perf_counter()
    m, _ = dpuq.auto_n_bins(int(x.shape[0]), ALPHA, EPSILON)
    t1 = time.perf_counter()
    bins, _ = DaskScores(x).bin_counts(m)
    t2 = time.perf_counter()
    return {"auto_n_bins": t1 - t0, "count pass": t2 - t1, "n_bins": m, "non-empty": bins.size}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, kind, repeats = int(float(args.child[0])), args.child[1], int(args.child[2])
        print(json.dumps(in_memory(n, kind, repeats)))
        return

    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print("bench_dask: skipped (needs the dask extra: pip install 'dpuq[dask]')")
        return

    warnings.simplefilter("ignore")
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        memory_limit="6GiB",
    )
    client = Client(cluster)
    print(f"client peak before: {_peak_mb():.0f} MB")
    print(
        f"{'benchmark':<34}{'n':>8}{'dask':>10}{'numpy':>10}{'client MB':>11}"
        f"{'numpy MB':>10}  equal"
    )
    for kind in ("scores", "interval"):
        for size in args.sizes:
            n = int(size)
            reps = args.repeats if n < 10**8 else 1
            x = _data(n, kind).persist()
            from dask.distributed import wait

            wait(x)
            fn = _calibrate if kind == "scores" else _interval
            fn(x)  # warm-up: imports on the workers
            t_dask, out = _timed(lambda x=x, fn=fn: fn(x), reps)
            child = subprocess.run(
                [sys.executable, __file__, "--child", str(n), kind, str(reps)],
                capture_output=True,
                text=True,
                check=True,
            )
            mem = json.loads(child.stdout.strip().splitlines()[-1])
            name = "calibrate (auto bins)" if kind == "scores" else "private mean interval"
            print(
                f"{name:<34}{n:>8.0e}{t_dask:>9.2f}s{mem['time']:>9.2f}s{_peak_mb():>11.0f}"
                f"{mem['peak_mb']:>10.0f}  {_key(out) == mem['release']}",
                flush=True,
            )
            phases = _phases(x) if kind == "interval" else _calibrate_phases(x)
            print("   phases:", {k: round(v, 2) for k, v in phases.items()}, flush=True)
            del x
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
