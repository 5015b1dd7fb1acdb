"""Private training in one process vs k processes (issue 38): the same ε, the same accuracy.

Fashion-MNIST (60 000 training images, 28x28, flattened; a linear softmax model), DP-SGD at
ε = 3, δ = 10^-5 (replace-one), 5 epochs of expected batch 1 000, every other setting from
the data-free recipe. For each seed, :func:`dpuq.training.train_classifier` runs with
``world_size=1`` and with ``world_size=k`` (gloo on the CPU, k spawned processes); prints ε
and the test accuracy on the 10 000 test images, and their medians over the seeds.

Run: ``.venv/bin/python benchmarks/bench_distributed_training.py [--world-size 2]
[--seeds 0 1 2] [--epochs 5] [--device cpu]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def main() -> None:
    import numpy as np
    import torch

    from dpuq.data.images import fashion_mnist_available, load_fashion_mnist
    from dpuq.training import predict_proba, train_classifier

    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=float, default=5.0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if not fashion_mnist_available():
        print("bench_distributed_training: skipped (apt-get install dataset-fashion-mnist)")
        return
    warnings.simplefilter("ignore")
    train, test = load_fashion_mnist("train"), load_fashion_mnist("test")
    X, y = train.images.reshape(len(train.images), -1), train.labels
    Xt, yt = test.images.reshape(len(test.images), -1), test.labels
    rows = {1: [], args.world_size: []}
    print(f"{'seed':>4}{'processes':>10}{'epsilon':>10}{'accuracy':>10}{'time s':>8}", flush=True)
    for seed in args.seeds:
        for k in rows:
            torch.manual_seed(seed)
            model = torch.nn.Linear(X.shape[1], 10)
            t = time.perf_counter()
            model, report = train_classifier(
                model, (X, y), method="dpsgd", epsilon=3.0, delta=1e-5, epochs=args.epochs,
                batch_size=1000, random_state=seed, show_progress=False, world_size=k,
                device=args.device,
            )  # fmt: skip
            took = time.perf_counter() - t
            acc = float(np.mean(predict_proba(model, Xt).argmax(1) == yt))
            rows[k].append((report.epsilon, acc, took))
            print(f"{seed:>4}{k:>10}{report.epsilon:>10.4f}{acc:>10.4f}{took:>8.0f}", flush=True)
    for k, r in rows.items():
        eps, acc, took = (statistics.median(c) for c in zip(*r, strict=True))
        print(f"median {k} process(es): epsilon {eps:.4f}, accuracy {acc:.4f}, {took:.0f} s")


if __name__ == "__main__":
    main()
