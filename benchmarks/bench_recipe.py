"""Issue 24: noise-calibration time and dpuq's training time against a plain Opacus loop.

1. ``calibrate_noise_multiplier`` (PLD, replace-one) on the settings the recipe produces
   (digits demo, 20,000 images at ε = 1) and on a small-σ case; median of 5 (warm imports).
2. Wall time of ``train_classifier(method="dpsgd")`` (noise calibrated by PLD, normalised
   clipping, Poisson sampling, the budget check) against a plain Opacus loop
   (``PrivacyEngine.make_private`` with a given σ, Poisson sampling, flat clipping) on the same
   ``small_cnn`` (28×28), the same data (random images), the same steps; median of 3
   interleaved rounds, one torch thread. The ratio is per run of 2 epochs (so the one-off
   calibration counts).

Run: ``.venv/bin/python benchmarks/bench_recipe.py``. Figures: docs/explanation/benchmarks.md.
"""

from __future__ import annotations

import statistics
import time
import warnings

from _opacus_loop import plain_opacus_loop
from _timing import median_time


def calibration() -> None:
    from dpuq.privacy.accounting import calibrate_noise_multiplier

    cases = [
        ("digits demo recipe (p=0.5, 400 steps, ε=3)", 0.5, 400, 3.0),
        ("20k images recipe (p=0.02, 1000 steps, ε=1)", 0.02, 1000, 1.0),
        ("Opacus MNIST-like (p=256/60000, 4688 steps, ε=3)", 256 / 60000, 4688, 3.0),
    ]
    calibrate_noise_multiplier(sample_rate=0.1, steps=10, epsilon=1.0, delta=1e-5)  # imports
    print(f"{'noise calibration (PLD, replace-one, δ=1e-5)':<52}{'σ':>8}{'median s':>10}")
    for name, p, k, eps in cases:
        holder = {}

        def run(p=p, k=k, eps=eps, holder=holder):
            holder["s"] = calibrate_noise_multiplier(
                sample_rate=p, steps=k, epsilon=eps, delta=1e-5
            )

        t = median_time(run, repeats=5)
        print(f"{name:<52}{holder['s']:>8.3f}{t:>10.3f}")


def training() -> None:
    import torch

    from dpuq.training import small_cnn, train_classifier

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    n, batch, epochs = 4000, 200, 2
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(n, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (n,), generator=gen)
    steps = epochs * n // batch

    def dpuq_run(clipping):
        torch.manual_seed(0)
        train_classifier(
            small_cnn(10), (x, y), method="dpsgd", epsilon=1.0, delta=1e-5, epochs=epochs,
            batch_size=batch, learning_rate=0.5, clipping=clipping, iterate_averaging=0,
            random_state=0, show_progress=False,
        )  # fmt: skip

    def opacus_run():
        torch.manual_seed(0)
        plain_opacus_loop(small_cnn(10), x, y, batch_size=batch, noise_multiplier=2.0, lr=0.5,
                          steps=steps, accountant="prv")  # fmt: skip

    runs = [
        ("plain Opacus loop (σ given, flat clipping)", opacus_run),
        ("dpuq train_classifier, flat clipping", lambda: dpuq_run("flat")),
        ("dpuq train_classifier, normalised clipping", lambda: dpuq_run("normalized")),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in runs}
    for _ in range(3):  # interleaved, so that a change in machine load hits all alike
        for name, fn in runs:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    rows = {name: statistics.median(t) for name, t in times.items()}
    ref = rows["plain Opacus loop (σ given, flat clipping)"]
    print(f"\n{'training, small_cnn 28x28, N=4000, B=200, 2 epochs':<52}{'s/epoch':>8}{'ratio':>8}")
    for name, t in rows.items():
        print(f"{name:<52}{t / epochs:>8.2f}{t / ref:>7.2f}x")


if __name__ == "__main__":
    calibration()
    training()
