"""Issue 24: accuracy of the data-free recipe (only model, data, method, ε, δ given).

``fashion``: Fashion-MNIST (no MNIST ships on this machine), 20,000 training images,
``small_cnn``, ε = 1 under replace-one, δ = 1e-5, DP-SGD (and non-private SGD for reference),
tested on the 10,000 test images; wall time per run.
``demo``: the full ``dpuq demo`` (digits, ε = 3) per seed: accuracy, ECE and private set sizes
of each model, and the wall time.

``fashion-table1``: the same at docs/explanation/dpsgld.md's Table 1 setting (ε = 0.5), DP-SGD and
DP-SGLD.

Run: ``.venv/bin/python benchmarks/bench_recipe_accuracy.py fashion|fashion-table1|demo
[seeds]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time


def fashion(seeds: list[int], methods=("dpsgd", "sgd"), epsilon: float = 1.0) -> None:
    import numpy as np
    import torch

    from dpuq.data import load_fashion_mnist
    from dpuq.training import predict_proba, small_cnn, train_classifier

    torch.set_num_threads(1)
    train, test = load_fashion_mnist("train"), load_fashion_mnist("test")
    for method in methods:
        accs, times = [], []
        for seed in seeds:
            order = np.random.default_rng(seed).permutation(len(train.labels))[:20_000]
            x = train.images[order][:, None].astype(np.float32)
            torch.manual_seed(seed)
            kw = {} if method == "sgd" else {"epsilon": epsilon, "delta": 1e-5}
            start = time.perf_counter()
            model, _ = train_classifier(
                small_cnn(10), (x, train.labels[order]), method=method, random_state=seed,
                show_progress=False, **kw,
            )  # fmt: skip
            times.append(time.perf_counter() - start)
            probs = predict_proba(model, test.images[:, None].astype(np.float32))
            accs.append(float(np.mean(probs.argmax(1) == test.labels)))
            print(
                f"fashion {method} ε={epsilon:g} seed {seed}: acc {accs[-1]:.4f} {times[-1]:.0f} s",
                flush=True,
            )
        print(
            f"fashion {method}: median acc {statistics.median(accs):.4f}, "
            f"median {statistics.median(times):.0f} s"
        )


def demo(seeds: list[int]) -> None:
    from dpuq.experiments.demo import DemoConfig, run_demo, write_report

    for seed in seeds:
        start = time.perf_counter()
        result = run_demo(DemoConfig(seed=seed), show_progress=False)
        with tempfile.TemporaryDirectory() as tmp:
            write_report(result, f"{tmp}/report")
        wall = time.perf_counter() - start
        sizes = {
            p.model: p.result.metrics.summary()["size_mean"]
            for p in result.pipelines
            if p.calibration_privacy is not None
        }
        for name in result.accuracy:
            print(
                f"demo seed {seed} {name:<22} acc {result.accuracy[name]:.3f} "
                f"ECE {result.ece[name]:.4f} private-set size {sizes[name]:.2f}",
                flush=True,
            )
        for m in result.models:
            runs = m.info.get("accuracy over runs")
            if runs:
                each = ", ".join(f"{a:.3f}" for a in runs)
                print(f"demo seed {seed} {m.name:<22} accuracy of each training run on the "
                      f"held-out pool: {each}", flush=True)  # fmt: skip
        print(f"demo seed {seed}: {wall:.0f} s", flush=True)


if __name__ == "__main__":
    which = sys.argv[1]
    seeds = [int(s) for s in sys.argv[2:]] or [0, 1, 2]
    if (
        which == "fashion-table1"
    ):  # docs/explanation/dpsgld.md's setting: ε = 0.5, DP-SGD and DP-SGLD
        fashion(seeds, methods=("dpsgd", "dpsgld"), epsilon=0.5)
    else:
        {"fashion": fashion, "demo": demo}[which](seeds)
