"""The main job: a private model and private prediction sets, end to end, with a report.

Steps (``dpuq demo``):

1. **Data.** sklearn's handwritten digits (embedded, the default), Fashion-MNIST (when the
   Debian package ``dataset-fashion-mnist`` or a folder of its IDX files is present), or a
   user's cached model outputs (``--probs``/``--labels``: no training then).
2. **People.** One random split into *training* people and *held-out* people; the held-out
   ones are split again, many times, into *calibration* and *test* people. Nobody is in two
   roles within a split.
3. **Models.** A model (family by a public rule) trained three ways on the training people:
   plain SGD (not private), DP-SGD and DP-SGLD at the same (ε, δ)
   (:mod:`dpuq.experiments.models`).
4. **Calibration.** Each model's threshold from the calibration people: the non-private
   split-conformal one and the ε-DP one (:func:`dpuq.calibrate`), on the same splits.
5. **Evaluation.** On the test people of every split: coverage, set sizes, singletons
   (vectorised over splits and people, :mod:`dpuq.experiments.evaluation`); accuracy and
   calibration error (ECE) of each model.
6. **Report.** A terminal table and ``dpuq-report/`` (PNG figures and one self-contained HTML
   page), written to a temporary folder and renamed when complete.

By default (``temperature_scaling=True``; ``dpuq demo --no-temperature-scaling`` turns it
off) some training people are held out (not trained on) and each private model's softmax
temperature is released by private temperature scaling on them
(:func:`dpuq.training.private_temperature_scaling`); the scaled models are extra rows.

Models (issues 24 and 35): the private ones are :class:`dpuq.DPClassifier` (``model="auto"``,
only the method, ε, δ, the declared pixel bounds and the labels passed), the non-private one
:func:`dpuq.training.train_classifier`; every setting comes from the data-free recipe, and the
model family from public quantities (:func:`dpuq.experiments.models.model_family`): fixed
features and a linear head when ``N·ε`` is small (Tramèr and Boneh 2021), a small CNN
otherwise.

Privacy of the whole pipeline: training, temperature scaling and calibration use disjoint
people, so parallel composition applies (:func:`dpuq.privacy.report.compose_disjoint`): each
person is protected by the guarantee of the one part their record is in. Every part is stated
under one relation, replace-one, so the pipeline is (max(ε_train, ε_T, ε_cal), δ_train) under it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpuq._progress import progress
from dpuq._validation import check_alpha, check_epsilon, check_positive_int
from dpuq.experiments.common import Method, compare_on_models
from dpuq.experiments.demo_results import DemoConfig, DemoResult, PipelineResult
from dpuq.experiments.evaluation import random_splits
from dpuq.experiments.models import TrainedModel, train_three_ways
from dpuq.mechanisms.randomness import check_random_state
from dpuq.privacy.ledger import CALLER_CHARGED
from dpuq.privacy.report import PrivacyReport, Relation, compose_disjoint

__all__ = ["DemoConfig", "DemoResult", "run_demo", "write_report"]


@dataclass
class DemoData:
    x_train: np.ndarray | None
    y_train: np.ndarray | None
    x_pool: np.ndarray | None
    y_pool: np.ndarray
    classes: list[str]
    name: str
    images: bool
    outputs: np.ndarray | None = None  # user's probabilities on the pool (no training)
    x_temperature: np.ndarray | None = None  # held out of training for temperature scaling
    y_temperature: np.ndarray | None = None


# ---------------------------------------------------------------------------------- data
def _load_data(config: DemoConfig, rng: np.random.Generator) -> DemoData:
    if config.data == "outputs" or config.probs_path or config.labels_path:
        from dpuq.experiments.reproduce_imagenet import load_outputs

        probs, labels, source = load_outputs(
            probs_path=config.probs_path, labels_path=config.labels_path
        )
        classes = [str(k) for k in range(probs.shape[1])]
        return DemoData(None, None, None, labels, classes, source, False, outputs=probs)
    if config.data == "digits":
        from dpuq.data.images import load_digits_images

        x, y = load_digits_images()
        x = x.astype(np.float64)  # exact: the pixels are k/16
        classes = [str(k) for k in range(10)]
        name = "sklearn handwritten digits (1797 images, 8×8 pixels, 10 classes)"
    elif config.data == "fashion-mnist":
        x, y, classes, name = _load_fashion_mnist(config)
    else:
        raise ValueError(f"--data must be digits or fashion-mnist, got {config.data!r}")
    n_cal, n_test = _sizes(config, y.size)
    order = rng.permutation(y.size)
    n_pool = n_cal + n_test
    train, pool = order[:-n_pool], order[-n_pool:]
    train_size = config.train_size
    if train_size is None and config.data == "fashion-mnist":
        train_size = 5_000 if config.quick else 20_000  # keeps the demo within minutes
    temp = train[:0]
    if config.temperature_scaling:
        n_temp = _n_temperature(config, train.size)
        train, temp = train[n_temp:], train[:n_temp]
    if train_size is not None:
        train = train[: check_positive_int(train_size, "train_size", minimum=10)]
    data = DemoData(x[train], y[train], x[pool], y[pool], classes, name, True)
    if config.temperature_scaling:
        data.x_temperature, data.y_temperature = x[temp], y[temp]
    return data


def _n_temperature(config: DemoConfig, n_train: int) -> int:
    n = config.n_temperature
    if n is None:
        n = 200 if config.data == "digits" else 2000
    n = check_positive_int(n, "n_temperature", minimum=10)
    if n > n_train - 50:
        raise ValueError(
            f"n_temperature = {n} leaves too few of the {n_train} training people for training"
        )
    return n


def _training_runs(config: DemoConfig) -> int:
    runs = config.training_runs
    if runs is None:
        runs = 1 if config.quick else 3
    return check_positive_int(runs, "training_runs")


def _accuracy_over_runs(models: list[TrainedModel], y_pool: np.ndarray) -> None:
    """Each model's accuracy on the pool people in every training run (measurement only)."""
    n = y_pool.size
    for m in models:
        runs = m.info.pop("run probs", None)
        if runs is not None:
            m.info["accuracy over runs"] = [float(np.mean(p[:n].argmax(1) == y_pool)) for p in runs]


def _load_fashion_mnist(config: DemoConfig):
    from dpuq.data import FASHION_MNIST_CLASSES, load_fashion_mnist

    try:
        train = load_fashion_mnist("train", directory=config.data_dir)
        test = load_fashion_mnist("test", directory=config.data_dir)
    except FileNotFoundError as exc:
        raise ValueError(str(exc)) from None
    x = np.concatenate([train.images, test.images])
    y = np.concatenate([train.labels, test.labels])
    return x, y, list(FASHION_MNIST_CLASSES), "Fashion-MNIST (28×28 pixels, 10 classes)"


def _sizes(config: DemoConfig, n_total: int) -> tuple[int, int]:
    if config.data == "digits" or n_total < 5000:
        n_cal, n_test = 500, 500
    else:
        n_cal, n_test = 2000, 2000
    n_cal = config.n_calibration or n_cal
    n_test = config.n_test or n_test
    if n_cal + n_test >= n_total - 50:
        raise ValueError(
            f"n_calibration + n_test = {n_cal + n_test} leaves too few of the {n_total} "
            "people for training"
        )
    return n_cal, n_test


# ------------------------------------------------------------------------------ metrics
def _calibration_report(n: int, settings: dict) -> PrivacyReport:
    return PrivacyReport(
        mechanism="private split-conformal threshold (exponential mechanism over binned "
        "quantiles, rank utility at the certified level)",
        epsilon=settings["epsilon"],
        delta=0.0,
        relation=Relation.REPLACE_ONE,
        sensitivity="utility -max(L_j - rho, rho - C_j, 0) moves by at most 1",
        details={
            "n": n,
            "level (rho/n)": settings["level"],
            "n_bins": settings["n_bins"],
            "method": "certified",
        },
    )


def _combined(train: PrivacyReport | None, cal: PrivacyReport | None) -> PrivacyReport | None:
    """The whole pipeline under one relation, replace-one (every part is stated under it)."""
    if train is None or cal is None:
        return None  # a non-private part: the pipeline has no finite guarantee
    return compose_disjoint(
        [train, cal],
        "private training, then private calibration on other people",
        relation=Relation.REPLACE_ONE,
    )


def _temperature_scaled(
    models: list[TrainedModel], held_out: list[np.ndarray], data: DemoData, config: DemoConfig, rng
) -> list[TrainedModel]:
    """Each private model again, after private temperature scaling on the held-out people
    (``held_out``: each model's probabilities on them)."""
    from dpuq.training.temperature import private_temperature_scaling, softmax_with_temperature

    eps_t = config.temperature_epsilon if config.temperature_epsilon is not None else config.epsilon
    eps_t = check_epsilon(eps_t, "temperature_epsilon")
    tiny = np.finfo(float).tiny  # log of a probability that underflowed to 0
    scaled = []
    for m, probs_t in zip(models, held_out, strict=True):
        if m.privacy is None:
            continue
        t, report = private_temperature_scaling(
            np.log(np.maximum(probs_t, tiny)),
            data.y_temperature,
            epsilon=eps_t,
            random_state=rng if config.seed is not None else None,
            ledger=CALLER_CHARGED,  # the demo evaluates, it releases nothing for use
        )
        privacy = compose_disjoint(
            [m.privacy, report],
            f"{m.name}, then private temperature scaling on other people",
            relation=Relation.REPLACE_ONE,
        )
        probs = softmax_with_temperature(np.log(np.maximum(m.probs, tiny)), t)
        info = {**m.info, "temperature": t, "temperature_privacy": report}
        scaled.append(TrainedModel(f"{m.name} + private TS", probs, privacy, info))
    return scaled


# -------------------------------------------------------------------------------- demo
def run_demo(config: DemoConfig, *, show_progress: bool = True) -> DemoResult:
    """Run the whole demo (module docstring) and return its numbers (no files written)."""
    start = time.perf_counter()
    alpha = check_alpha(config.alpha)
    eps_cal = check_epsilon(config.epsilon)
    check_epsilon(config.train_epsilon, "train_epsilon")
    if not 0.0 < float(config.train_delta) < 1.0:
        raise ValueError(f"train_delta must be in (0, 1), got {config.train_delta!r}")
    check_positive_int(config.n_splits, "n_splits", minimum=2)
    # no seed: 128 bits of OS entropy (a 31-bit seed could be found by brute force)
    seed = config.seed if config.seed is not None else int(np.random.SeedSequence().entropy)
    rng = check_random_state(seed)
    notes: list[str] = []
    data = _load_data(config, rng)
    if data.outputs is not None:
        n_cal = config.n_calibration or data.y_pool.size // 2
        n_test = data.y_pool.size - n_cal
        declared = None
        if config.declared_training:  # reported as declared, never as verified
            declared = PrivacyReport(
                mechanism="the model's training, as declared by the user (not verified by dpuq)",
                epsilon=float(config.train_epsilon),
                delta=float(config.train_delta),
                relation=Relation.REPLACE_ONE,
                sensitivity="as declared by the user",
                notes=(
                    "declared by the user with --train-epsilon/--train-delta; dpuq did not "
                    "train this model and cannot verify its privacy",
                ),
            )
        name = config.model_name or "your model"
        source = config.dataset_name or data.name
        models = [TrainedModel(name, data.outputs, declared, {"source": source})]
        n_train = 0
    else:
        n_cal, n_test = _sizes(config, data.y_train.size + data.y_pool.size)
        n_train = int(data.y_train.size)
        x_eval = data.x_pool
        if data.x_temperature is not None:
            x_eval = np.concatenate([data.x_pool, data.x_temperature])
        models = train_three_ways(
            data.x_train,
            data.y_train,
            x_eval,
            n_classes=len(data.classes),
            epsilon=config.train_epsilon,
            delta=config.train_delta,
            epochs=config.epochs,
            seed=seed if config.seed is not None else seed >> 65,  # torch takes 63 bits
            show_progress=show_progress,
            quick=config.quick,
            training_runs=_training_runs(config),
        )
        _accuracy_over_runs(models, data.y_pool)
        if data.x_temperature is not None:
            n_pool = data.y_pool.size
            held_out = [m.probs[n_pool:] for m in models]
            models = [TrainedModel(m.name, m.probs[:n_pool], m.privacy, m.info) for m in models]
            models += _temperature_scaled(models, held_out, data, config, rng)
        for m in models:
            if m.info.get("note"):
                notes.append(m.info["note"])
    labels = data.y_pool
    splits = random_splits(labels.size, n_cal, n_test, config.n_splits, rng)
    methods = [
        Method("non-private threshold"),
        Method(f"private threshold (ε = {eps_cal:g})", eps_cal),
    ]
    by_model = compare_on_models(
        progress(models, "calibrating each model", disable=not show_progress),
        labels,
        methods,
        splits,
        alpha=alpha,
        random_state=rng,
        show_progress=False,
    )
    accuracy, ece, pipelines = {}, {}, []
    for model, (acc, model_ece, results) in zip(models, by_model.values(), strict=True):
        accuracy[model.name], ece[model.name] = acc, model_ece
        for method, res in zip(methods, results, strict=True):
            cal = None if method.epsilon is None else _calibration_report(n_cal, res.settings)
            combined = _combined(model.privacy, cal)
            pipelines.append(
                PipelineResult(model.name, method.label, res, model.privacy, cal, combined)
            )
    result = DemoResult(
        config=config,
        data_name=config.dataset_name or data.name,
        n_train=n_train,
        n_calibration=n_cal,
        n_test=int(n_test),
        classes=data.classes,
        models=models,
        accuracy=accuracy,
        ece=ece,
        pipelines=pipelines,
        notes=notes,
        elapsed_s=0.0,
        pool_images=data.x_pool if data.images else None,
        pool_labels=labels,
    )
    result.examples = _pick_examples(result, splits, rng)
    from dpuq.experiments.class_conditional import demo_class_table

    result.class_table = demo_class_table(
        models[-1].probs, labels, splits, alpha=alpha, epsilon=eps_cal, rng=rng,
        class_names=data.classes,
    )  # fmt: skip
    result.elapsed_s = time.perf_counter() - start
    return result


def _pick_examples(result: DemoResult, splits, rng, n: int = 8) -> list[dict]:
    """Test people of the first split with each model's private set (most likely first).

    Chosen to show the range honestly: confident singletons, larger sets, and (when there is
    one) a set that misses the true label.
    """
    test = splits[1][0]
    private = [p for p in result.pipelines if p.calibration.startswith("private")]
    by_model = {m.name: m for m in result.models}
    sets = {}
    for p in private:
        probs = by_model[p.model].probs[test]
        t = p.result.metrics.thresholds[0]
        sets[p.model] = (1.0 - probs) <= t
    first = sets[private[-1].model]
    y = result.pool_labels[test]
    size = first.sum(axis=1)
    hit = first[np.arange(test.size), y]
    groups = [
        np.flatnonzero((size == 1) & hit),
        np.flatnonzero(size >= 2),
        np.flatnonzero(~hit),
    ]
    quota = [n - 3, 2, 1]
    chosen = []
    for g, q in zip(groups, quota, strict=True):
        if g.size:
            chosen += rng.choice(g, size=min(q, g.size), replace=False).tolist()
    rest = np.setdiff1d(np.arange(test.size), chosen)
    if len(chosen) < n and rest.size:
        chosen += rng.choice(rest, size=min(n - len(chosen), rest.size), replace=False).tolist()
    examples = []
    for i in chosen:
        person = int(test[i])
        row = {"index": person, "truth": result.classes[int(y[i])], "sets": []}
        for p in private:
            probs = by_model[p.model].probs[person]
            order = np.argsort(-probs)
            members = [result.classes[k] for k in order if sets[p.model][i, k]]
            row["sets"].append((p.model, members))
        examples.append(row)
    return examples


def write_report(
    result: DemoResult, out: str | Path, command: str = "dpuq demo", show_progress: bool = False
) -> Path:
    """Figures and the HTML report into ``out`` (atomically); returns the report's path."""
    from dpuq.experiments import demo_report

    return demo_report.write(result, out, command, show_progress=show_progress)
