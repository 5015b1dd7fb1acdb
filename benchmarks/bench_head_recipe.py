"""Issue 35: the recipe's linear head on 28×28 scattering features against the Opacus loop.

``python benchmarks/bench_head_recipe.py [compare] [tune]`` (meant for a GPU; runs on a CPU
with small sizes, ``BENCH_N_TRAIN=500``):

``compare``
    Fashion-MNIST (``BENCH_FMNIST_DIR``, default Debian's folder), ``BENCH_N_TRAIN`` training
    images (20,000) drawn from the train split per seed, the 10,000 test images; ε = 3,
    δ = 1e-5, add/remove-one (Opacus' relation); the same linear head on the same features
    (:func:`dpuq.training.features.scatter_features`: kymatio, J = 2, L = 8, group
    normalisation): the Opacus tutorial loop (``bench_baseline.opacus_tutorial``: B 256, SGD
    lr 1, flat C = 1, 10 epochs) against ``train_classifier`` with every setting ``"auto"``
    (DP-SGD and DP-SGLD). Test accuracy per seed (``BENCH_SEEDS``, default 0 1).
``tune``
    The recipe's constants that matter for a large linear head — the learning rate under
    normalised clipping (:data:`dpuq.training.recipe.LEARNING_RATE`) and the number of steps
    (:data:`~dpuq.training.recipe.TARGET_STEPS`) — on **validation** data only: 5,000
    Fashion-MNIST *training* images that are not among the run's training images, and the
    public synthetic 28×28 glyphs (:func:`dpuq.training.features.synthetic_images`). The test
    split is never read by ``tune``.

Each run prints one line as it ends (``BENCH_DEADLINE`` seconds after the start, default 270,
the remaining runs are skipped and said so). Figures: docs/how-to/training.md.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from bench_baseline import DELTA, EPS, dpuq_auto, opacus_tutorial

N_TRAIN = int(os.environ.get("BENCH_N_TRAIN", "20000"))
N_VALID = int(os.environ.get("BENCH_N_VALID", "5000"))
SEEDS = tuple(int(s) for s in os.environ.get("BENCH_SEEDS", "0 1").split())
DEADLINE = float(os.environ.get("BENCH_DEADLINE", "270"))
LRS = tuple(float(v) for v in os.environ.get("BENCH_LRS", "0.5 1 2 4").split())
STEPS = tuple(int(v) for v in os.environ.get("BENCH_STEPS", "300 1000").split())
FLOORS = tuple(float(v) for v in os.environ.get("BENCH_FLOORS", "2 1").split())
START = time.perf_counter()


def device() -> str:
    import torch

    return os.environ.get("BENCH_DEVICE", "cuda" if torch.cuda.is_available() else "cpu")


def features(images: np.ndarray) -> np.ndarray:
    """:func:`scatter_features` on the bench's device (the same transform and normalisation)."""
    import torch
    import torch.nn.functional as F

    from dpuq.training.features import _groups, _scattering, scatter_features

    if device() == "cpu" or len(images) == 0:
        return scatter_features(images)
    transform = _scattering(28, 2, 8).to(device())
    out = []
    with torch.no_grad():
        for start in range(0, len(images), 4096):
            x = torch.as_tensor(np.asarray(images[start : start + 4096], dtype=np.float32))
            s = transform(x.to(device()))
            out.append(F.group_norm(s, _groups(s.shape[1])).flatten(1).cpu().numpy())
    return np.concatenate(out)


@functools.lru_cache(maxsize=1)
def fashion():
    from dpuq.data import load_fashion_mnist

    where = os.environ.get("BENCH_FMNIST_DIR")
    tr, te = (load_fashion_mnist(s, directory=where) for s in ("train", "test"))
    n_test = int(os.environ.get("BENCH_N_TEST", str(len(te.labels))))
    t0 = time.perf_counter()
    fte = features(te.images[:n_test])
    print(f"features of {len(fte)} test images: {time.perf_counter() - t0:.1f} s", flush=True)
    return tr.images, tr.labels, fte, te.labels[:n_test]


def split(seed: int, set_name: str, valid: bool = True):
    """(x_train, y_train, x_valid, y_valid, x_test, y_test) of one seed (test None: glyphs).

    Fashion-MNIST: ``N_TRAIN`` training and ``N_VALID`` validation images drawn from the
    train split by the seed (features of those only), the test images as they are.
    """
    from dpuq.training.features import synthetic_images

    if set_name == "glyphs28":
        x, y = synthetic_images(N_TRAIN + N_VALID, side=28, seed=200 + seed)
        f = features(x)
        return f[:N_TRAIN], y[:N_TRAIN], f[N_TRAIN:], y[N_TRAIN:], None, None
    itr, ytr, fte, yte = fashion()
    o = np.random.default_rng(seed).permutation(len(ytr))
    tr, va = o[:N_TRAIN], o[N_TRAIN : N_TRAIN + (N_VALID if valid else 0)]
    return features(itr[tr]), ytr[tr], features(itr[va]), ytr[va], fte, yte


def timed_out(what: str) -> bool:
    if time.perf_counter() - START > DEADLINE:
        print(f"skipped (past {DEADLINE:g} s): {what}", flush=True)
        return True
    return False


def run(label, fn, x, y, evals, seed, *extra):
    t0 = time.perf_counter()
    try:
        predict, steps = fn(x, y, 10, seed, *extra)
    except Exception as exc:  # a bench: report, try the CPU once, go on
        print(f"  {label}: FAILED {type(exc).__name__}: {exc}", flush=True)
        if extra[-1] == "cpu":
            return
        return run(label + " (CPU)", fn, x, y, evals, seed, *extra[:-1], "cpu")
    accs = "  ".join(f"{k} {np.mean(predict(v[0]) == v[1]):.4f}" for k, v in evals.items())
    print(f"  {label:<34} seed {seed}: {accs}  ({steps} steps, {time.perf_counter() - t0:.1f} s)",
          flush=True)  # fmt: skip


def compare() -> None:
    dev = device()
    print(f"compare: Fashion-MNIST N = {N_TRAIN}, ε = {EPS:g}, δ = {DELTA:g}, add/remove-one, "
          f"device {dev}", flush=True)  # fmt: skip
    for seed in SEEDS:
        xtr, ytr, _, _, xte, yte = split(seed, "fashion-mnist", valid=False)
        for label, fn, extra in (
            ("Opacus tutorial loop", opacus_tutorial, (EPS, dev)),
            ("dpuq DP-SGD (auto)", dpuq_auto, ("dpsgd", EPS, dev)),
            ("dpuq DP-SGLD (auto)", dpuq_auto, ("dpsgld", EPS, dev)),
        ):
            only = os.environ.get("BENCH_RUNS")  # e.g. "dpuq": a subset
            if not timed_out(f"{label} seed {seed}") and (not only or only in label):
                run(label, fn, xtr, ytr, {"test": (xte, yte)}, seed, *extra)


def tune() -> None:
    from dpuq.privacy import accounting
    from dpuq.training import recipe

    dev = device()
    # the noise depends on (N, B, T, ε, δ) only: calibrate once per schedule, not per rate
    accounting.calibrate_noise_multiplier = functools.lru_cache(maxsize=64)(
        accounting.calibrate_noise_multiplier
    )
    print(f"tune (validation only): N = {N_TRAIN}, rates {LRS}, steps {STEPS}, σ floors "
          f"{FLOORS}", flush=True)  # fmt: skip
    default = recipe.TARGET_STEPS, recipe.LEARNING_RATE, recipe.MIN_NOISE_MULTIPLIER
    for seed, set_name in itertools.product(SEEDS, ("fashion-mnist", "glyphs28")):
        xtr, ytr, xva, yva, _, _ = split(seed, set_name)
        print(f"{set_name} seed {seed}", flush=True)
        for steps, floor, lr in itertools.product(STEPS, FLOORS, LRS):
            label = f"DP-SGD T = {steps}, σ >= {floor:g}, lr = {lr:g}"
            if timed_out(f"{set_name} seed {seed} {label}"):
                return
            recipe.TARGET_STEPS, recipe.LEARNING_RATE, recipe.MIN_NOISE_MULTIPLIER = (
                steps, lr, floor,
            )  # fmt: skip
            run(label, dpuq_auto, xtr, ytr, {"valid": (xva, yva)}, seed, "dpsgd", EPS, dev)
    recipe.TARGET_STEPS, recipe.LEARNING_RATE, recipe.MIN_NOISE_MULTIPLIER = default


if __name__ == "__main__":
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "1")))
    args = sys.argv[1:] or ["compare"]
    if "compare" in args:
        compare()
    if "tune" in args:
        tune()
    print(f"total {time.perf_counter() - START:.0f} s", flush=True)
