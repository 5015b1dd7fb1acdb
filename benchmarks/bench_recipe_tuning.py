"""Issue 24: tuning the recipe and the demo's splits on PUBLIC surrogates (never digits).

Surrogate: :func:`dpuq.training.features.synthetic_images` (procedural glyphs, 8×8) at the
demo's shape: ``N`` training people, ``n_ts`` people for private temperature scaling and
1,000 test people, ε = 3, δ = 1e-5, replace-one, a linear head. Each row prints the median
over surrogate seeds of: DP-SGD / DP-SGLD test accuracy, ECE after private temperature scaling
(ε = 3, the "gap" utility), ECE after non-private TS on the same people and with an oracle
temperature fit on the test people, and the ECE of labels drawn from the model's own
probabilities (a perfectly calibrated model: the estimation floor of ECE at that test size).

``digits_demo`` is for MEASURING the ECE floor and checking a decision on the demo's own split,
never for choosing a setting (docs/how-to/training.md says which figure came from where).

Run: ``.venv/bin/python benchmarks/bench_recipe_tuning.py [name or row(...) expression ...]``,
names from :data:`EXPERIMENTS` (the rows behind docs/how-to/training.md's tables), e.g.
``... bench_recipe_tuning.py floor split augmentation`` or
``... "row('lr 1', 597, 200, LEARNING_RATE=1.0)"``.
"""

from __future__ import annotations

import statistics
import sys
from unittest.mock import patch

import numpy as np

EPS, DELTA, N_TEST = 3.0, 1e-5, 1000


def surrogate(n: int, seed: int, **kwargs):
    from dpuq.training.features import synthetic_images

    return synthetic_images(n, seed=seed, **{"side": 8, **kwargs})


def inputs(x: np.ndarray, how: str) -> np.ndarray:
    from dpuq.training.features import scatter_features

    flat = x.reshape(len(x), -1).astype(np.float32)
    if how == "pixels":
        return flat
    if how == "centred":  # public pixel range [0, 1]: centre at its midpoint
        return flat - 0.5
    if how == "scaled":  # public range [0, 1] -> [-1, 1]
        return 2 * flat - 1
    if how == "scatter":
        return scatter_features(x)
    if how == "pixels+scatter":  # both, each of unit scale per example
        return np.concatenate([flat, scatter_features(x) / np.sqrt(9.0)], axis=1)
    raise ValueError(how)


def ece_floor(probs: np.ndarray, rng: np.random.Generator, reps: int = 200) -> float:
    """Median ECE of a perfectly calibrated model: labels drawn from its own probabilities."""
    from dpuq.metrics.calibration import expected_calibration_error

    c = probs.cumsum(1)
    out = []
    for _ in range(reps):
        u = rng.random((len(probs), 1))
        y = np.minimum((u > c).sum(1), probs.shape[1] - 1)
        out.append(expected_calibration_error(probs, y))
    return float(np.median(out))


def debiased_l2_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> float:
    """sqrt of the debiased squared (ℓ2) top-label ECE of Kumar, Liang and Ma (NeurIPS 2019).

    ``Σ_b (n_b/n) [(ȳ_b − c̄_b)² − ȳ_b(1 − ȳ_b)/(n_b − 1)]``, equal-width bins, floored at 0:
    the within-bin sampling variance of the accuracy is subtracted, so a calibrated model
    scores ≈ 0 at any test size. Reported beside (never instead of) dpuq's ℓ1 ECE.
    """
    conf = probs.max(1)
    correct = (probs.argmax(1) == labels).astype(float)
    b = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    total = 0.0
    for k in np.unique(b):
        m = b == k
        nb = int(m.sum())
        if nb < 2:
            continue
        ybar, cbar = correct[m].mean(), conf[m].mean()
        total += nb / len(conf) * ((ybar - cbar) ** 2 - ybar * (1 - ybar) / (nb - 1))
    return float(np.sqrt(max(total, 0.0)))


def one_run(x, y, n_train, n_ts, method, how, seed, aug=None, cnn=False, **override):
    import torch

    from dpuq.metrics.calibration import expected_calibration_error as ece
    from dpuq.privacy.ledger import CALLER_CHARGED
    from dpuq.training import predict_proba, train_classifier
    from dpuq.training.temperature import (
        default_temperature_grid,
        private_temperature_scaling,
        softmax_with_temperature,
        temperature_utilities,
    )

    f = inputs(x, how)
    if aug is not None:  # augmentation multiplicity K: image-shaped inputs, flattened in the model
        f = f.reshape(x.shape)
    tr, ts, te = slice(0, n_train), slice(n_train, n_train + n_ts), slice(-N_TEST, None)
    torch.manual_seed(seed)
    net = torch.nn.Linear(f[0].size, int(y.max()) + 1)
    kw = {} if method == "sgd" else {"epsilon": EPS, "delta": DELTA}
    if cnn:  # the small CNN on (N, 1, side, side) images
        from dpuq.training import small_cnn

        f = f.reshape(len(x), 1, *x.shape[1:])
        net = small_cnn(int(y.max()) + 1, image_size=x.shape[-1])
    elif aug is not None:
        net = torch.nn.Sequential(torch.nn.Flatten(), net)
    if aug is not None:
        kw["augmentation_multiplicity"] = aug
    from dpuq.training import recipe

    with patch.dict(vars(recipe), override):
        net, _ = train_classifier(
            net, (torch.as_tensor(f[tr]), torch.as_tensor(y[tr])), method=method,
            random_state=seed, show_progress=False, ledger=CALLER_CHARGED, **kw,
        )  # fmt: skip
    p = predict_proba(net, np.concatenate([f[ts], f[te]]))
    lz = np.log(np.maximum(p, np.finfo(float).tiny))
    zts, zte = lz[:n_ts], lz[n_ts:]
    yte = y[te]
    acc = float(np.mean(zte.argmax(1) == yte))
    grid = default_temperature_grid()
    t_priv, _ = private_temperature_scaling(
        zts, y[ts], epsilon=EPS, random_state=seed, ledger=CALLER_CHARGED
    )
    t_np = grid[np.argmax(temperature_utilities(zts, y[ts]))]
    t_or = grid[np.argmax(temperature_utilities(zte, yte))]
    sc = {k: softmax_with_temperature(zte, t) for k, t in
          (("priv", t_priv), ("np", t_np), ("oracle", t_or))}  # fmt: skip
    return {
        "acc": acc,
        "ece_raw": ece(np.exp(zte), yte),
        "ece_privTS": ece(sc["priv"], yte),
        "ece_npTS": ece(sc["np"], yte),
        "ece_oracleTS": ece(sc["oracle"], yte),
        "ece_floor": ece_floor(sc["oracle"], np.random.default_rng(seed)),
        "dl2_privTS": debiased_l2_ece(sc["priv"], yte),
    }


def row(label, n_train, n_ts, how="pixels", seeds=(0, 1, 2), methods=("dpsgd", "dpsgld"),
        data=None, aug=None, cnn=False, **override):  # fmt: skip
    import time

    start = time.perf_counter()
    cells = []
    for method in methods:
        runs = []
        for s in seeds:
            x, y = (
                data(n_train + n_ts + N_TEST, s) if data else surrogate(n_train + n_ts + N_TEST, s)
            )
            runs.append(one_run(x, y, n_train, n_ts, method, how, s, aug, cnn, **override))
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        cells.append(
            f"{method} acc {med['acc']:.3f} ({min(r['acc'] for r in runs):.3f}–"
            f"{max(r['acc'] for r in runs):.3f}) ECE raw {med['ece_raw']:.3f} privTS "
            f"{med['ece_privTS']:.3f} npTS {med['ece_npTS']:.3f} oracle "
            f"{med['ece_oracleTS']:.3f} floor {med['ece_floor']:.3f} "
            f"dl2 {med['dl2_privTS']:.3f}"
        )
    runs_s = (time.perf_counter() - start) / (len(seeds) * len(methods))
    print(f"{label:<34} | " + " | ".join(cells) + f" | {runs_s:.1f} s/run", flush=True)


def digits_demo(n: int, seed: int):
    """MEASUREMENT ONLY (never tuning): the demo's own split of digits for ``seed``, ordered
    [training people, temperature-scaling people, 1,000 pool people]."""
    from dpuq.experiments.demo import DemoConfig, _load_data
    from dpuq.mechanisms.randomness import check_random_state

    d = _load_data(DemoConfig(seed=seed), check_random_state(seed))
    x = np.concatenate([d.x_train, d.x_temperature, d.x_pool])
    y = np.concatenate([d.y_train, d.y_temperature, d.y_pool])
    assert len(y) == n, (len(y), n)
    return x, y


E = "data=lambda n, s: surrogate(n, s, noise=0.2, jitter=0.05, max_shift=0)"
H = "data=lambda n, s: surrogate(n, s)"
S5 = "seeds=(0, 1, 2, 3, 4)"
EXPERIMENTS = {
    "floor": ["row('digits (measure) 597/200', 597, 200, methods=('sgd', 'dpsgd', 'dpsgld'), "
              "data=digits_demo)"],
    "split": [f"row('E {a}/{b}', {a}, {b}, {S5}, {E})"
              for a, b in ((597, 200), (647, 150), (697, 100), (722, 75), (747, 50))]
    + [f"row('H {a}/{b}', {a}, {b}, {S5}, {H})" for a, b in ((597, 200), (697, 100))],
    "recipe": [f"row('E {k}', 597, 200, {v}, {E})" for k, v in (
        ("lr 0.25", "LEARNING_RATE=0.25"), ("lr 1", "LEARNING_RATE=1.0"),
        ("lr 2", "LEARNING_RATE=2.0"), ("T 1000", "TARGET_STEPS=1000"),
        ("T 100", "TARGET_STEPS=100"), ("sigma floor 1", "MIN_NOISE_MULTIPLIER=1.0"),
        ("max rate 1", "MAX_SAMPLE_RATE=1.0"), ("avg from 75%", "AVERAGING_START=0.75"),
        ("avg 50", "AVERAGED_ITERATES=50"), ("sgld gamma 0", "SGLD_DECAY_POWER=0.0"),
        ("sgld weights", "SGLD_AVERAGING='weights'"), ("dpsgd prior 1", "DPSGD_PRIOR_STD=1.0"),
    )]
    + [f"row('E epochs {e}', 597, 200, MAX_EPOCHS={e}.0, MIN_EPOCHS=1.0, {S5}, {E})"
       for e in (100, 50, 20)]
    + [f"row('H epochs {e}', 597, 200, MAX_EPOCHS={e}.0, MIN_EPOCHS=1.0, {S5}, {H})"
       for e in (50, 20)]
    + [f"row('E N4000 {k}', 4000, 1000, {v}, {E})" for k, v in (
        ("base", "LEARNING_RATE=0.5"), ("lr 1", "LEARNING_RATE=1.0"),
        ("T 1000", "TARGET_STEPS=1000"), ("epochs 50", "MAX_EPOCHS=50.0"))],
    "inputs": [f"row('E {h}', 597, 200, how='{h}', {E})"
               for h in ("pixels", "centred", "scaled", "scatter")]
    + [f"row('H5 centred', 597, 200, how='centred', {S5}, {H})"],
    # augmentation multiplicity K (De et al. 2022, Section 3): one-pixel translations
    "augmentation": [f"row('{d} 597 K{k}', 597, 200, {S5}, aug={k}, {v})"
                     for d, v in (("H", H), ("E", E)) for k in (1, 4, 8, 16)]
    + [f"row('{d} 4000 K{k}', 4000, 1000, aug={k}, {v})"
       for d, v in (("H", H), ("E", E)) for k in (1, 4, 16)]
    + [f"row('H 4000 cnn K{k}', 4000, 1000, methods=('dpsgd',), aug={k}, cnn=True, {H})"
       for k in (1, 4)]
    + ["row('digits (measure) K1', 597, 200, aug=1, data=digits_demo)",
       "row('digits (measure) K8', 597, 200, aug=8, data=digits_demo)"],
}  # fmt: skip


if __name__ == "__main__":
    import torch

    torch.set_num_threads(1)
    for w in sys.argv[1:] or ["floor"]:
        for expression in EXPERIMENTS.get(w, [w]):
            exec(expression)  # a row(...) call: this benchmark's own experiment list
