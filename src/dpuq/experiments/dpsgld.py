"""The seed paper's Table 1 design: SGD vs DP-SGD vs DP-SGLD, accuracy and calibration.

Run (needs the ``torch`` extra; Fashion-MNIST from Debian's ``dataset-fashion-mnist``)::

    python -m dpuq.experiments.dpsgld                       # Fashion-MNIST and digits -> docs/
    python -m dpuq.experiments.dpsgld --dataset digits --seeds 0 1 2 --out /tmp/x
    python -m dpuq.experiments.dpsgld --quick                # a one-minute smoke run

Writes ``dpsgld_<dataset>.json`` (every run), ``dpsgld_<dataset>_table.md`` (means and
standard deviations over seeds) and ``dpsgld_<dataset>_reliability.png`` into ``--out``.
One CPU thread; about 20 minutes for Fashion-MNIST on a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dpuq.metrics.calibration import (
    adaptive_calibration_error,
    expected_calibration_error,
    multiclass_auc,
    reliability_curve,
    static_calibration_error,
)

__all__ = ["CONFIGS", "Config", "main", "run_config"]


@dataclass(frozen=True)
class Config:
    """One training method with its hyperparameters (a row of the table)."""

    name: str
    method: str
    kwargs: dict = field(default_factory=dict)
    private: bool = True


def _configs(dataset: str, steps: int) -> list[Config]:
    from dpuq.training import PolynomialDecay

    lr = 3.0 if dataset == "fashion-mnist" else 1.0
    decay = PolynomialDecay(lr, gamma=0.55, scale=max(1.0, steps / 10))
    return [
        Config("SGD", "sgd", {"learning_rate": 0.1, "momentum": 0.9}, private=False),
        Config("DP-SGD", "dpsgd", {"learning_rate": lr}),
        Config(  # one run gives two rows: its last iterate and its posterior average
            "DP-SGLD",
            "dpsgld",
            {
                "learning_rate": decay,
                "temperature": "auto",
                "prior_std": 1.0,
                "posterior_samples": 20,
                "burn_in": 0.5,
            },
        ),
        Config(
            "DP-SGLD + pre-noise",
            "dpsgld",
            {
                "learning_rate": decay,
                "temperature": "auto",
                "prior_std": 1.0,
                "pre_noise_scale": 1e-3,
            },
        ),
    ]


#: Names of the configurations run by default (see :func:`_configs`).
CONFIGS = ("SGD", "DP-SGD", "DP-SGLD", "DP-SGLD + pre-noise")
_ROWS = (*CONFIGS[:3], "DP-SGLD + posterior average", CONFIGS[3])


def _load(dataset: str, seed: int):
    from dpuq.data import load_digits_images, load_fashion_mnist

    if dataset == "fashion-mnist":
        tr, te = load_fashion_mnist("train"), load_fashion_mnist("test")
        return tr.images[:, None], tr.labels, te.images[:, None], te.labels
    d = load_digits_images()
    rng = np.random.default_rng(1000 + seed)  # a fresh train/test split per seed
    perm = rng.permutation(d.labels.size)
    tr, te = perm[:1300], perm[1300:]
    return d.images[tr, None], d.labels[tr], d.images[te, None], d.labels[te]


def run_config(
    cfg: Config,
    dataset: str,
    *,
    epsilon: float | None,
    delta: float,
    seed: int,
    epochs: float,
    batch_size: int,
    show_progress: bool = True,
) -> dict:
    """Train one configuration with one seed; return rows of metrics, privacy and timing.

    A configuration with ``posterior_samples`` gives two rows from one run: the last iterate
    (under the configuration's name) and the posterior average (``+ posterior average``).
    """
    import torch

    from dpuq.training import small_cnn, train_classifier

    x, y, xt, yt = _load(dataset, seed)
    torch.manual_seed(seed)
    model = small_cnn(10, image_size=x.shape[-1])
    kw = dict(cfg.kwargs)
    if cfg.private:
        kw.update(epsilon=epsilon, delta=delta)
    start = time.perf_counter()
    model, report = train_classifier(
        model,
        (x, y),
        method=cfg.method,
        epochs=epochs,
        batch_size=batch_size,
        random_state=seed,
        show_progress=show_progress,
        **kw,
    )
    seconds = time.perf_counter() - start
    from dpuq.training import PosteriorAverage

    if isinstance(model, PosteriorAverage):
        out = [(cfg.name, model.members[-1]), (cfg.name + " + posterior average", model)]
    else:
        out = [(cfg.name, model)]
    return [_row(name, m, xt, yt, cfg, report, epsilon, seed, seconds) for name, m in out]


def _row(name, model, xt, yt, cfg, report, epsilon, seed, seconds) -> dict:
    from dpuq.training import predict_proba

    probs = predict_proba(model, xt)
    curve = reliability_curve(probs, yt)
    det = report.details
    return {
        "config": name,
        "method": cfg.method,
        "epsilon_target": epsilon,
        "seed": seed,
        "accuracy": float(np.mean(probs.argmax(axis=1) == yt)),
        "auc": multiclass_auc(probs, yt),
        "ece": expected_calibration_error(probs, yt),
        "sce": static_calibration_error(probs, yt),
        "ace": adaptive_calibration_error(probs, yt),
        "mean_confidence": float(probs.max(axis=1).mean()),
        "epsilon_pld": report.epsilon if cfg.private else None,
        "epsilon_gdp": det.get("epsilon (GDP CLT)"),
        "steps": det.get("steps"),
        "planned_steps": det.get("planned steps", det.get("steps")),
        "temperature": det.get("temperature"),
        "sigma_min": det.get("noise multiplier min"),
        "sigma_max": det.get("noise multiplier max"),
        "seconds": seconds,
        "reliability": {
            "confidence": np.nan_to_num(curve.confidence, nan=-1).tolist(),
            "accuracy": np.nan_to_num(curve.accuracy, nan=-1).tolist(),
            "counts": curve.counts.tolist(),
        },
    }


def _table(rows: list[dict]) -> str:
    keys = ["accuracy", "auc", "ece", "sce", "ace", "mean_confidence"]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["epsilon_target"] or 0.0, r["config"]), []).append(r)
    lines = [
        "| ε (target) | method | accuracy | AUC | ECE | SCE | ACE | mean conf. | ε PLD | ε GDP "
        "| steps | seeds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {name: i for i, name in enumerate(_ROWS)}
    for (eps, name), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1]))):
        cells = []
        for k in keys:
            v = np.array([r[k] for r in rs])
            cells.append(f"{v.mean():.3f} ± {v.std(ddof=1) if v.size > 1 else 0:.3f}")
        pld = [r["epsilon_pld"] for r in rs if r["epsilon_pld"] is not None]
        gdp = [r["epsilon_gdp"] for r in rs if r["epsilon_gdp"] is not None]
        steps = sorted({f"{r['steps']}/{r['planned_steps']}" for r in rs})
        privacy = f" {max(pld):.3f} | {max(gdp):.3f} |" if pld else " – | – |"
        eps_cell = f"{eps:g}" if eps else "∞"
        lines.append(
            f"| {eps_cell} | {name} | "
            + " | ".join(cells)
            + " |"
            + privacy
            + f" {', '.join(steps)} | {len(rs)} |"
        )
    return "\n".join(lines)


def _plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpuq.plotting import plot_reliability

    epsilons = sorted({r["epsilon_target"] for r in rows if r["epsilon_target"]})
    fig, axes = plt.subplots(1, len(epsilons), figsize=(5.2 * len(epsilons), 4.6), squeeze=False)
    for ax, eps in zip(axes[0], epsilons, strict=True):
        shown = [r for r in rows if r["seed"] == min(x["seed"] for x in rows)]
        for r in shown:
            if r["epsilon_target"] not in (None, eps):
                continue
            rel = r["reliability"]
            conf = np.where(np.array(rel["counts"]) > 0, rel["confidence"], np.nan)
            acc = np.where(np.array(rel["counts"]) > 0, rel["accuracy"], np.nan)
            plot_reliability(conf, acc, label=f"{r['config']} (ECE {r['ece']:.3f})", ax=ax)
        ax.set_title(f"{title}, ε = {eps:g} (seed {shown[0]['seed']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dpuq.experiments.dpsgld", description=__doc__)
    ap.add_argument("--dataset", choices=["fashion-mnist", "digits", "both"], default="both")
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 2.0])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epochs", type=float, default=None, help="default: 2 (FMNIST), 20 (digits)")
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--out", type=Path, default=Path("docs"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="digits, one seed, few epochs")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    datasets = ["fashion-mnist", "digits"] if args.dataset == "both" else [args.dataset]
    if args.quick:
        datasets, args.seeds, args.epochs = ["digits"], args.seeds[:1], 5.0
    args.out.mkdir(parents=True, exist_ok=True)
    for ds in datasets:
        epochs = args.epochs or (2.0 if ds == "fashion-mnist" else 20.0)
        batch = 256 if ds == "fashion-mnist" else 64
        n_train = 60000 if ds == "fashion-mnist" else 1300
        configs = [
            c for c in _configs(ds, round(epochs * n_train / batch)) if c.name in args.configs
        ]
        rows = []
        for seed in args.seeds:
            for cfg in configs:
                for eps in args.epsilons if cfg.private else [None]:
                    new = run_config(
                        cfg,
                        ds,
                        epsilon=eps,
                        delta=args.delta,
                        seed=seed,
                        epochs=epochs,
                        batch_size=batch,
                        show_progress=False,
                    )
                    rows.extend(new)
                    for r in new:
                        print(
                            f"{ds} seed {seed} {r['config']:28s} ε={eps} acc {r['accuracy']:.3f} "
                            f"ECE {r['ece']:.4f} SCE {r['sce']:.4f} ACE {r['ace']:.4f} "
                            f"conf {r['mean_confidence']:.3f} steps {r['steps']} "
                            f"T {r['temperature']} ({r['seconds']:.0f}s)",
                            flush=True,
                        )
                    (args.out / f"dpsgld_{ds}.json").write_text(json.dumps(rows, indent=1))
        table = _table(rows)
        (args.out / f"dpsgld_{ds}_table.md").write_text(table + "\n")
        _plot(rows, args.out / f"dpsgld_{ds}_reliability.png", ds)
        print(table)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
