"""The paper's Figure 4 (§4.1), with a third model: which part of the pipeline costs what?

{non-private, DP-SGD, DP-SGLD} model × {non-private, private} calibration: histograms of
coverage and set size over 1000 random splits of the held-out images into n = 5000
calibration and the rest for evaluation, α = 0.1; models trained with (ε, δ) = (8, 1e-5). The
paper used CIFAR-10 and two models; here Fashion-MNIST (the Debian package
``dataset-fashion-mnist``; ``--data digits`` for a small run) and a DP-SGLD row, to ask
whether a better-calibrated private model gives smaller private sets.

Training is slow on a CPU; each model's outputs on the held-out images are cached (an
``.npz`` per configuration under ``--cache-dir``, keyed by every setting that changes them),
so reruns only redo the fast calibration part.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from dpuq._progress import progress
from dpuq.experiments.common import (
    METHOD_HEADER,
    Method,
    MethodResult,
    compare_on_models,
    method_rows,
    method_series,
)
from dpuq.experiments.evaluation import random_splits
from dpuq.experiments.models import TrainedModel, train_three_ways
from dpuq.privacy.report import PrivacyReport
from dpuq.reporting import markdown_table, text_table, write_experiment
from dpuq.reporting.figures import grid_histograms

__all__ = ["QuadrantsConfig", "QuadrantsResult", "run_quadrants"]

#: Bump when training changes in a way the cache key does not see.
CACHE_VERSION = 2  # 2: the data-free recipe (issue 24)


@dataclass(frozen=True)
class QuadrantsConfig:
    data: str = "fashion-mnist"
    data_dir: str | None = None
    alpha: float = 0.1
    epsilon: float = 8.0  # training
    delta: float = 1e-5
    calibration_epsilon: float = 8.0
    n_calibration: int = 5000
    n_splits: int = 1000
    epochs: int | None = None
    train_size: int | None = None
    seed: int | None = 0


@dataclass
class QuadrantsResult:
    config: QuadrantsConfig
    data_name: str
    n_train: int
    n_pool: int
    models: list[TrainedModel]
    accuracy: dict[str, float]
    ece: dict[str, float | None]
    rows: list[tuple[str, list[MethodResult]]]  # per model: its two calibrations
    cached: bool
    elapsed_s: float


def _data(config: QuadrantsConfig):
    """Training images and the held-out pool (the test set of the data set)."""
    if config.data == "digits":
        from dpuq.data.images import load_digits_images

        x, y = load_digits_images()
        x = x.astype(np.float64)  # exact: the pixels are k/16
        order = np.random.default_rng([config.seed or 0, 3]).permutation(y.size)
        n_pool = min(y.size // 2, 1000)
        train, pool = order[:-n_pool], order[-n_pool:]
        name = "sklearn digits (8×8)"
        x_train, y_train, x_pool, y_pool = x[train], y[train], x[pool], y[pool]
    elif config.data == "fashion-mnist":
        from dpuq.data import load_fashion_mnist

        try:
            train = load_fashion_mnist("train", directory=config.data_dir)
            test = load_fashion_mnist("test", directory=config.data_dir)
        except FileNotFoundError as exc:
            raise ValueError(str(exc)) from None
        x_train, y_train, x_pool, y_pool = train.images, train.labels, test.images, test.labels
        name = "Fashion-MNIST (60,000 training and 10,000 test images, 28×28)"
    else:
        raise ValueError(f"--data must be fashion-mnist or digits, got {config.data!r}")
    if config.train_size is not None:
        x_train, y_train = x_train[: config.train_size], y_train[: config.train_size]
    return x_train, y_train, x_pool, y_pool, name


def _cache_key(config: QuadrantsConfig, n_train: int) -> str:
    fields = {
        "v": CACHE_VERSION,
        "data": config.data,
        "epsilon": config.epsilon,
        "delta": config.delta,
        "epochs": config.epochs,
        "n_train": n_train,
        "seed": config.seed,
    }
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def _save_cache(path: Path, models: list[TrainedModel]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = [
        {
            "name": m.name,
            "privacy": None if m.privacy is None else m.privacy.to_dict(),
            "info": {k: v for k, v in m.info.items() if isinstance(v, str | int | float)},
        }
        for m in models
    ]
    tmp = path.with_suffix(".partial.npz")
    np.savez_compressed(
        tmp,
        meta=np.array(json.dumps(meta)),
        **{f"probs_{i}": m.probs for i, m in enumerate(models)},
    )
    tmp.replace(path)  # atomic: an interrupted save leaves no cache entry


def _load_cache(path: Path) -> list[TrainedModel] | None:
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as f:
        meta = json.loads(str(f["meta"]))
        models = []
        for i, m in enumerate(meta):
            p = m["privacy"]
            report = None if p is None else PrivacyReport.from_dict(p, relation="add/remove-one")
            models.append(TrainedModel(m["name"], f[f"probs_{i}"], report, m["info"]))
    return models


def run_quadrants(
    config: QuadrantsConfig, *, cache_dir: str | Path = ".dpuq-cache", show_progress: bool = True
) -> QuadrantsResult:
    """Train (or load from the cache) the three models, then calibrate on many splits."""
    start = time.perf_counter()
    x_train, y_train, x_pool, y_pool, name = _data(config)
    if config.n_calibration >= y_pool.size:
        raise ValueError(
            f"n_calibration = {config.n_calibration} leaves no evaluation images of the "
            f"{y_pool.size} held out"
        )
    path = Path(cache_dir) / f"quadrants-{_cache_key(config, y_train.size)}.npz"
    models = _load_cache(path)
    cached = models is not None
    if models is None:
        models = train_three_ways(
            x_train,
            y_train,
            x_pool,
            n_classes=int(max(y_train.max(), y_pool.max()) + 1),
            epsilon=config.epsilon,
            delta=config.delta,
            epochs=config.epochs,
            seed=config.seed or 0,
            show_progress=show_progress,
        )
        _save_cache(path, models)
    rng = np.random.default_rng([config.seed or 0, 4])
    splits = random_splits(y_pool.size, config.n_calibration, None, config.n_splits, rng)
    methods = [
        Method("non-private calibration"),
        Method(f"private calibration (ε = {config.calibration_epsilon:g})",
               config.calibration_epsilon),
    ]  # fmt: skip
    by_model = compare_on_models(
        progress(models, "calibrating each model", disable=not show_progress),
        y_pool,
        methods,
        splits,
        alpha=config.alpha,
        random_state=rng,
        show_progress=False,
    )
    accuracy = {name: v[0] for name, v in by_model.items()}
    ece = {name: v[1] for name, v in by_model.items()}
    rows = [(name, v[2]) for name, v in by_model.items()]
    return QuadrantsResult(
        config,
        name,
        int(y_train.size),
        int(y_pool.size),
        models,
        accuracy,
        ece,
        rows,
        cached,
        time.perf_counter() - start,
    )


def _table(result: QuadrantsResult) -> tuple[list[str], list[list[str]]]:
    header = ["model", "training (ε, δ)", "accuracy", "ECE", *METHOD_HEADER]
    out = []
    for model, (name, results) in zip(result.models, result.rows, strict=True):
        train = (
            "∞ (not private)"
            if model.privacy is None
            else f"({model.privacy.epsilon:.3g}, {model.privacy.delta:.0e})"
        )
        ece = result.ece[name]
        for row in method_rows(results):
            out.append(
                [name, train, f"{result.accuracy[name]:.3f}",
                 "–" if ece is None else f"{ece:.4f}", *row]
            )  # fmt: skip
    return header, out


def format_result(result: QuadrantsResult) -> str:
    c = result.config
    header, rows = _table(result)
    return "\n".join(
        [
            f"dpuq reproduce quadrants: {result.data_name}"
            + (" (models from the cache)" if result.cached else ""),
            f"{result.n_train} training images; {result.n_pool} held out: n = "
            f"{c.n_calibration} calibration, the rest evaluation; {c.n_splits} splits",
            "",
            text_table(header, rows),
        ]
    )


def _reading(result: QuadrantsResult) -> str:
    sizes = {
        name: (results[0].metrics.mean_size.mean(), results[1].metrics.mean_size.mean())
        for name, results in result.rows
    }
    parts = [
        f"{name}: mean set size {a:.2f} with non-private and {b:.2f} with private calibration "
        f"(+{b - a:.2f})"
        for name, (a, b) in sizes.items()
    ]
    text = "Reading: " + "; ".join(parts) + "."
    if "DP-SGD" in sizes and "DP-SGLD" in sizes:
        sgd, sgld = sizes["DP-SGD"][1], sizes["DP-SGLD"][1]
        acc = result.accuracy
        text += (
            f" With private calibration, DP-SGLD's sets are "
            f"{'smaller' if sgld < sgd else 'not smaller'} than DP-SGD's ({sgld:.2f} against "
            f"{sgd:.2f}); accuracy {acc['DP-SGLD']:.3f} against {acc['DP-SGD']:.3f}"
        )
        e_sgd, e_sgld = result.ece["DP-SGD"], result.ece["DP-SGLD"]
        if e_sgd is not None and e_sgld is not None:
            text += f", ECE {e_sgld:.4f} against {e_sgd:.4f}"
        text += "."
    return text


def _training_line(result: QuadrantsResult) -> str:
    parts = [
        f"{m.name} {m.info['training seconds']:.0f} s"
        for m in result.models
        if "training seconds" in m.info
    ]
    where = (
        "Model outputs read from the cache (trained by an earlier run of the same command"
        if result.cached
        else "Models trained in this run ("
    )
    if not parts:
        return where.rstrip(" (") + "."
    return where + ("; " if result.cached else "") + "training time " + ", ".join(parts) + ")."


def write_quadrants(result: QuadrantsResult, out: str | Path, command: str) -> Path:
    c = result.config
    header, rows = _table(result)
    fig = grid_histograms(
        [(name, method_series(results)) for name, results in result.rows],
        c.alpha,
        f"Figure 4: model × calibration, {result.data_name}\n"
        f"training (ε, δ) = ({c.epsilon:g}, {c.delta:g}), n = {c.n_calibration}, "
        f"{c.n_splits} splits",
    )
    body = [
        f"Data: {result.data_name}; {result.n_train} training images, "
        f"{result.n_pool} held out (n = {c.n_calibration} calibration, the rest "
        f"evaluation), {c.n_splits} random splits, α = {c.alpha:g}.",
        _training_line(result),
        f"Models trained with (ε, δ) = ({c.epsilon:g}, {c.delta:g}); calibration "
        f"ε = {c.calibration_epsilon:g}. Training and calibration use different "
        "people, so each person's guarantee is that of the part their record is in.",
        "",
        markdown_table(header, rows),
        "",
        "![Figure 4](figure4_quadrants.png)",
        "",
        _reading(result),
    ]
    return write_experiment(
        out,
        figures={"figure4_quadrants.png": fig},
        title="dpuq reproduce quadrants — the paper's Figure 4 with a DP-SGLD row",
        command=command,
        seed=c.seed,
        elapsed_s=result.elapsed_s,
        body="\n".join(body),
        data={
            "config": asdict(c),
            "data": result.data_name,
            "accuracy": result.accuracy,
            "ece": result.ece,
            "models_from_cache": result.cached,
            "training_privacy": {
                m.name: None if m.privacy is None else m.privacy.to_dict() for m in result.models
            },
            "methods": [
                {"model": name, **r.row()} for name, results in result.rows for r in results
            ],
        },
    )
