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
BINS: int | str = "auto"


def _data(n: int, kind: str):
    import dask.array as da

    rng = da.random.default_rng(2026)
    if kind == "scores":
        return rng.uniform(size=n, chunks=CHUNK)
    return rng.beta(2.0, 5.0, size=n, chunks=CHUNK)


def _calibrate(x):
    import dpuq

    return dpuq.calibrate(x, alpha=ALPHA, epsilon=EPSILON, n_bins=BINS, random_state=SEED)


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
    m = dpuq.auto_n_bins(int(x.shape[0]), ALPHA, EPSILON)[0] if BINS == "auto" else BINS
    t1 = time.perf_counter()
    bins, counts = DaskScores(x).bin_counts(m)
    t2 = time.perf_counter()
    from dpuq.mechanisms.quantile import private_quantile_from_counts
    from dpuq.planning import _certified_rho, _level_from_rho

    n = int(x.shape[0])
    dense = np.zeros(m, dtype=np.int64)
    dense[bins] = counts
    level = _level_from_rho(n, _certified_rho(n, ALPHA, EPSILON, m), ALPHA, EPSILON, m)
    private_quantile_from_counts(dense, level, EPSILON, np.random.default_rng(0))
    t3 = time.perf_counter()
    return {
        "bins (client)": t1 - t0,
        "count pass (workers)": t2 - t1,
        "sampling (client)": t3 - t2,
        "n_bins": m,
        "non-empty": bins.size,
    }


def dask_client(address: str, n: int, kind: str, repeats: int) -> dict:
    """Run in a child process connected to the cluster: its peak memory is the client's."""
    from dask.distributed import Client, wait

    warnings.simplefilter("ignore")
    client = Client(address)
    x = _data(n, kind).persist()
    wait(x)
    fn = _calibrate if kind == "scores" else _interval
    fn(_data(100_000, kind))  # warm-up: imports on the workers
    t, out = _timed(lambda: fn(x), repeats)
    phases = _phases(x) if kind == "interval" else _calibrate_phases(x)
    peak = _peak_mb()
    client.close()
    return {"time": t, "peak_mb": peak, "release": _key(out), "phases": phases}


def _run_child(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    global BINS
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", nargs="+", default=["scores", "interval"])
    parser.add_argument("--bins", default="auto", help="calibrate's n_bins (auto or an int)")
    parser.add_argument("--dask-only", action="store_true", help="skip the NumPy runs")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--client", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    BINS = args.bins if args.bins == "auto" else int(args.bins)
    if args.child:
        n, kind, repeats = int(float(args.child[0])), args.child[1], int(args.child[2])
        print(json.dumps(in_memory(n, kind, repeats)))
        return
    if args.client:
        address, n, kind, repeats = args.client[0], int(float(args.client[1])), *args.client[2:4]
        print(json.dumps(dask_client(address, n, kind, int(repeats))))
        return

    try:
        from dask.distributed import LocalCluster
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
    print(f"2-worker LocalCluster (1 thread each); calibrate n_bins={BINS}; chunks of {CHUNK}")
    print(
        f"{'benchmark':<30}{'n':>8}{'dask':>10}{'numpy':>10}{'client MB':>11}"
        f"{'numpy MB':>10}  equal"
    )
    for kind in args.kinds:
        for size in args.sizes:
            n = int(size)
            reps = str(args.repeats if n < 10**8 else 1)
            extra = ["--bins", str(BINS)]
            got = _run_child(*extra, "--client", cluster.scheduler_address, str(n), kind, reps)
            name = "calibrate" if kind == "scores" else "private mean interval"
            if args.dask_only:
                mem = {"time": float("nan"), "peak_mb": float("nan"), "release": None}
            else:
                mem = _run_child(*extra, "--child", str(n), kind, reps)
            same = "-" if mem["release"] is None else str(got["release"] == mem["release"])
            print(
                f"{name:<30}{n:>8.0e}{got['time']:>9.2f}s{mem['time']:>9.2f}s"
                f"{got['peak_mb']:>11.0f}{mem['peak_mb']:>10.0f}  {same}",
                flush=True,
            )
            print("   phases:", {k: round(v, 2) for k, v in got["phases"].items()}, flush=True)
    cluster.close()


if __name__ == "__main__":
    main()
