"""Dask at scale (issues 17, 28, 38): every release on a LocalCluster, the client's memory
bounded.

For each release (calibrate, calibrate_by_class, the mean / median / trimmed-mean intervals,
risk_control) and each size ``n``, a fresh client process connects to the cluster, generates
the data on the workers (``dask.array.random.default_rng``, chunks of 2^22, persisted there:
the client never holds them; ``risk_control`` gets ``n / 10`` rows of 50 losses, formed on
the workers from ``n / 10`` persisted uniforms), warms up on a small array, reads its resident
memory, runs the release and reads its peak memory: the difference is what the release costs
the client ("client growth").
Prints medians; figures in docs/explanation/benchmarks.md.

Run: ``OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dask.py [--sizes 1e7 1e8]
[--workers 2 1] [--numpy]`` (``--numpy``: also the in-memory release in a separate process,
its time, peak memory, and whether the two releases are equal).
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

CHUNK = 1 << 22
ALPHA, EPSILON, SEED, K = 0.1, 1.0, 7, 10
RELEASES = ("calibrate", "by_class", "mean", "median", "trimmed_mean", "risk_control")
#: risk_control: n / RISK_ROWS rows of RISK_LAMBDAS losses (10^8 -> 10^7 x 50)
RISK_ROWS, RISK_LAMBDAS = 10, 50


def _losses(u):
    """Miscoverage-like losses 1{u > λ_j} on λ = 0..1 (nonincreasing, 0 at λ = 1)."""
    import numpy as np

    lam = np.linspace(0.0, 1.0, RISK_LAMBDAS)
    if isinstance(u, np.ndarray):  # the in-memory comparison
        return (u[:, None] > lam[None, :]).astype(float)
    return u.map_blocks(
        lambda b: (b[:, None] > lam[None, :]).astype(float),
        new_axis=1,
        chunks=(u.chunks[0], (RISK_LAMBDAS,)),
        dtype=float,
    )


def _data(n: int, release: str):
    import dask.array as da

    rng = da.random.default_rng(2026)
    if release == "risk_control":  # the uniforms only: losses are formed per block (_input)
        return rng.uniform(size=n // RISK_ROWS, chunks=CHUNK // RISK_LAMBDAS)
    if release == "calibrate":
        return rng.uniform(size=n, chunks=CHUNK)
    if release == "by_class":
        labels = rng.integers(0, K, size=n, chunks=CHUNK)
        return rng.uniform(size=n, chunks=CHUNK) * (1 + labels) / K, labels
    return rng.beta(2.0, 5.0, size=n, chunks=CHUNK)


def _input(release: str, x):
    return _losses(x) if release == "risk_control" else x


def _release(release: str, x):
    import dpuq

    x = _input(release, x)
    if release == "risk_control":
        return dpuq.risk_control(x, alpha=ALPHA, epsilon=EPSILON, random_state=SEED)
    if release == "calibrate":
        return dpuq.calibrate(x, alpha=ALPHA, epsilon=EPSILON, random_state=SEED)
    if release == "by_class":
        return dpuq.calibrate_by_class(*x, K, alpha=ALPHA, epsilon=EPSILON, random_state=SEED)
    return dpuq.private_confidence_interval(
        x, alpha=0.05, epsilon=EPSILON, bounds=(0.0, 1.0), statistic=release, random_state=SEED
    )


def _key(out):
    if hasattr(out, "index"):
        return [out.index, out.lambda_]
    if hasattr(out, "thresholds"):
        return list(out.thresholds)
    if hasattr(out, "threshold"):
        return [out.threshold, out.n_bins]
    return [out.lower, out.upper, out.estimate]


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")  # pragma: no cover


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def dask_client(address: str, n: int, release: str, repeats: int) -> dict:
    """In a child process connected to the cluster: its memory is the client's."""
    import dask
    from dask.distributed import Client, wait

    warnings.simplefilter("ignore")
    client = Client(address)
    x = dask.persist(_data(n, release))[0]
    wait(x)
    _release(release, _data(200_000, release))  # warm-up: imports on client and workers
    base = _rss_mb()
    t, out = _timed(lambda: _release(release, x), repeats)
    peak = _peak_mb()
    client.close()
    return {"time": t, "growth_mb": peak - base, "base_mb": base, "release": _key(out)}


def in_memory(n: int, release: str, repeats: int) -> dict:
    """In a child process: compute the array locally, then time the NumPy release."""
    import dask

    with dask.config.set(scheduler="threads"):
        x = dask.compute(_data(n, release))[0]
    base = _rss_mb()
    t, out = _timed(lambda: _release(release, x), repeats)
    return {"time": t, "growth_mb": _peak_mb() - base, "release": _key(out)}


def _run_child(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e7])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--releases", nargs="+", default=list(RELEASES))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--numpy", action="store_true", help="also the in-memory release")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--client", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        n, release, reps = int(float(args.child[0])), args.child[1], int(args.child[2])
        print(json.dumps(in_memory(n, release, reps)))
        return
    if args.client:
        address, n, release, reps = args.client
        print(json.dumps(dask_client(address, int(float(n)), release, int(reps))))
        return
    try:
        from dask.distributed import LocalCluster
    except ImportError:
        print("bench_dask: skipped (needs the dask extra: pip install 'dpuq[dask]')")
        return

    warnings.simplefilter("ignore")
    print(
        f"{'release':<14}{'workers':>8}{'n':>8}{'dask s':>9}{'client +MB':>11}"
        f"{'numpy s':>9}{'numpy +MB':>10}  equal",
        flush=True,
    )
    for workers in args.workers:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit="7GiB",
        )
        for size in args.sizes:
            for release in args.releases:
                n = int(size)
                got = _run_child(
                    "--client", cluster.scheduler_address, str(n), release, str(args.repeats)
                )
                mem = {"time": float("nan"), "growth_mb": float("nan"), "release": None}
                if args.numpy and workers == max(args.workers):
                    mem = _run_child("--child", str(n), release, str(args.repeats))
                same = "-" if mem["release"] is None else str(got["release"] == mem["release"])
                print(
                    f"{release:<14}{workers:>8}{n:>8.0e}{got['time']:>9.1f}"
                    f"{got['growth_mb']:>11.0f}{mem['time']:>9.1f}{mem['growth_mb']:>10.0f}"
                    f"  {same}",
                    flush=True,
                )
        cluster.close()


if __name__ == "__main__":
    main()
