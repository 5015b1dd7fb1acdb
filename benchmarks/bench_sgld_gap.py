"""Issue 35: DP-SGLD against DP-SGD at the digits demo's shape, on PUBLIC surrogates only.

Surrogates (never digits): **F8**, Fashion-MNIST *training-split* images cut to 24×24 and
averaged to 8×8; **E** and **H**, the glyphs of ``bench_recipe_tuning.py``. Each surrogate seed
draws 597 training and 1,000 test people; ``dpuq.DPClassifier(epsilon=3, delta=1e-5,
feature_bounds=(0, 1))`` with ``model="auto"`` (the demo's model choice and recipe) is trained
once per variant with the same training seed, so the variants are paired. Prints each
variant's test accuracy per seed, then the mean paired difference to the first variant with
its standard error.

Variants: ``dpsgld`` (the recipe), ``coarse-T`` (the temperature searched as before issue 35's
third session: σ_t grouped within 5 %, bisection to 1 % in T), ``flat`` (no prior),
``gamma0`` (constant rate), ``gamma0-flat`` (both: DP-SGD with a predictive average),
``weights`` (weights averaged), ``dpsgd``.

Run: ``.venv/bin/python benchmarks/bench_sgld_gap.py F8,E,H dpsgld,coarse-T,flat,dpsgd 10 22``
(surrogates, variants, first and last-plus-one seed); figures in docs/how-to/training.md.
"""

from __future__ import annotations

import math
import statistics
import sys
from contextlib import ExitStack
from unittest.mock import patch

import numpy as np

N_TRAIN, N_TEST, EPS, DELTA = 597, 1000, 3.0, 1e-5
VARIANTS = {
    "dpsgld": ("dpsgld", {}),
    "coarse-T": ("dpsgld", {}),
    "flat": ("dpsgld", {"SGLD_PRIOR_STD": None}),
    "gamma0": ("dpsgld", {"SGLD_DECAY_POWER": 0.0}),
    "gamma0-flat": ("dpsgld", {"SGLD_DECAY_POWER": 0.0, "SGLD_PRIOR_STD": None}),
    "weights": ("dpsgld", {"SGLD_AVERAGING": "weights"}),
    "dpsgd": ("dpsgd", {}),
}
_FASHION: tuple[np.ndarray, np.ndarray] | None = None


def surrogate(name: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    global _FASHION
    n = N_TRAIN + N_TEST
    if name == "F8":
        if _FASHION is None:
            from dpuq.data import load_fashion_mnist

            train = load_fashion_mnist("train")  # the training split only, never the test split
            x = train.images[:, 2:26, 2:26].reshape(-1, 8, 3, 8, 3).mean(axis=(2, 4))
            _FASHION = x.astype(np.float64), train.labels.astype(np.int64)
        x, y = _FASHION
        idx = np.random.default_rng([seed, 99]).permutation(len(y))[:n]
        return x[idx], y[idx]
    from dpuq.training.features import synthetic_images

    kw = {"max_shift": 0, "noise": 0.2, "jitter": 0.05} if name == "E" else {}
    return synthetic_images(n, seed=seed, side=8, **kw)


def coarse_temperature(*, learning_rates, batch_size, max_grad_norm, n_samples, epsilon, delta,
                       accountant="pld", relation="replace-one", rtol=1e-2):  # fmt: skip
    """The search before issue 35's third session (PLD, σ_t grouped within 5 %, 1 % in T)."""
    from dpuq.privacy import accounting as acc
    from dpuq.privacy._budget_search import smallest_true

    unit = np.atleast_1d(acc.dpsgld_noise_multiplier(
        batch_size=batch_size, max_grad_norm=max_grad_norm, temperature=1.0,
        learning_rate=np.asarray(learning_rates, dtype=float), n_samples=n_samples))  # fmt: skip
    p = batch_size / n_samples

    def gdp_fits(t):
        mu = acc.gdp_mu(p, math.sqrt(t) * unit, relation=relation)
        return acc.gdp_epsilon(mu, delta) <= epsilon

    def fits(t):
        sig = math.sqrt(t) * unit
        return acc.pld_epsilon(p, sig, delta, bucket_ratio=1.05, relation=relation) <= epsilon

    return smallest_true(fits, smallest_true(gdp_fits, 1.0, rtol), rtol)


def run(name: str, seed: int, variant: str) -> float:
    from dpuq.privacy import accounting
    from dpuq.privacy.ledger import CALLER_CHARGED
    from dpuq.training import recipe
    from dpuq.training.estimators import DPClassifier

    x, y = surrogate(name, seed)
    method, constants = VARIANTS[variant]
    with ExitStack() as stack:
        stack.enter_context(patch.dict(vars(recipe), constants))
        if variant == "coarse-T":
            stack.enter_context(
                patch.dict(vars(accounting), calibrate_temperature=coarse_temperature)
            )
        clf = DPClassifier(
            epsilon=EPS,
            delta=DELTA,
            method=method,
            feature_bounds=(0.0, 1.0),
            classes=np.arange(10),
            show_progress=False,
            random_state=1000 + seed,
        )
        clf.fit(x[:N_TRAIN], y[:N_TRAIN], ledger=CALLER_CHARGED)  # fmt: skip
    return float(np.mean(clf.predict(x[N_TRAIN:]) == y[N_TRAIN:]))


def main(names: list[str], variants: list[str], seeds: range) -> None:
    for name in names:
        acc = {v: [] for v in variants}
        for s in seeds:
            for v in variants:
                acc[v].append(run(name, s, v))
                print(f"{name} seed {s} {v}: {acc[v][-1]:.3f}", flush=True)
        base = np.array(acc[variants[0]])
        for v in variants[1:]:
            d = np.array(acc[v]) - base
            se = d.std(ddof=1) / math.sqrt(d.size) if d.size > 1 else float("nan")
            print(
                f"{name} {v:<12} median {statistics.median(acc[v]):.4f}  paired difference "
                f"to {variants[0]}: {d.mean():+.4f} ± {se:.4f} ({d.size} seeds)",
                flush=True,
            )


if __name__ == "__main__":
    import torch

    torch.set_num_threads(1)
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else ["F8", "E", "H"]
    variants = sys.argv[2].split(",") if len(sys.argv) > 2 else list(VARIANTS)
    first, stop = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (10, 22)
    main(names, variants, range(first, stop))
