"""Private online conformal thresholds (issue 37): time per stream and per person, batch and
incremental, and the non-private ACI baseline. Prints medians; see docs/explanation/benchmarks.md.

Run: ``.venv/bin/python benchmarks/bench_online.py``
"""

from __future__ import annotations

import numpy as np
from _timing import median_time

import dpuq
from dpuq.mechanisms.online_counts import _OnlineTracker


def _row(name: str, seconds: float, target: str = "–") -> None:
    unit, value = ("s", seconds) if seconds >= 1 else ("ms", seconds * 1e3)
    print(f"| {name} | {value:.3g} {unit} | {target} |")


def main() -> None:
    rng = np.random.default_rng(0)
    print("| benchmark | median | target |\n|---|---|---|")
    for n, target in ((10**4, "–"), (10**5, "–"), (10**6, "≤ 10 s")):
        s = np.clip(rng.beta(1, 6, size=n) * np.linspace(1, 3, n), 0, 1)
        t = median_time(
            lambda s=s: dpuq.online_conformal_thresholds(s, 0.1, 1.0, random_state=1),
            repeats=5 if n < 10**6 else 3,
        )
        _row(f"`online_conformal_thresholds`, T = {n:,} (ε = 1, blocks of 23)", t, target)
    s = rng.uniform(size=10**5)

    def incremental(root):
        tr = _OnlineTracker(alpha=0.1, epsilon=1.0, step=0.01, block_size=23, initial=0.5)
        for lo in range(0, s.size, 100):
            tr.observe(s[lo : lo + 100], root=root)

    for root, how in ((1, "seeded"), (None, "fresh entropy per block")):
        t = median_time(lambda root=root: incremental(root), repeats=3)
        _row(f"`_OnlineTracker.observe`, 10^5 persons in batches of 100 ({how})", t)
        print(f"| per person, incremental ({how}) | {t / s.size * 1e6:.2g} µs | O(1) |")
    s4 = s[: 10**4]
    _row("`aci_thresholds` (non-private baseline), T = 10,000", median_time(
        lambda: dpuq.aci_thresholds(s4, 0.1), repeats=3))  # fmt: skip


if __name__ == "__main__":
    main()
