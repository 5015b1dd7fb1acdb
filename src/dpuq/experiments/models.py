"""Train the demo's models three ways: non-private SGD, DP-SGD and DP-SGLD (same ε, δ).

The private models are :class:`dpuq.DPClassifier` fits (issue 35: the demo uses the estimators
users call), the non-private one a :func:`dpuq.training.train_classifier` run on the same
inputs.

Training itself lives in :mod:`dpuq.training` (PyTorch and Opacus, optional); this module
only calls it and keeps what the experiments need: each model's class probabilities on the
held-out people and its privacy report. Without PyTorch, only a non-private scikit-learn
model is trained and the private rows say why they are missing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpuq.privacy.ledger import CALLER_CHARGED
from dpuq.privacy.report import PrivacyReport

__all__ = ["TrainedModel", "train_three_ways"]

NOT_PRIVATE = "SGD (not private)"
DP_SGD = "DP-SGD"
DP_SGLD = "DP-SGLD"


@dataclass(frozen=True)
class TrainedModel:
    """One trained model's outputs on the held-out pool and its privacy.

    ``privacy`` is None for the non-private model (ε = ∞).
    """

    name: str
    probs: np.ndarray
    privacy: PrivacyReport | None
    info: dict[str, Any] = field(default_factory=dict)


def _sklearn_fallback(x_train, y_train, x_eval, n_classes: int, seed: int, why: str):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=3000, C=0.5, random_state=seed % 2**32)
    model.fit(x_train.reshape(len(x_train), -1), y_train)
    probs = np.zeros((len(x_eval), n_classes))
    probs[:, model.classes_] = model.predict_proba(x_eval.reshape(len(x_eval), -1))
    return TrainedModel(
        "logistic regression (not private)",
        probs,
        None,
        {"note": f"only a non-private model was trained: {why}"},
    )


def train_three_ways(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_eval: np.ndarray,
    *,
    n_classes: int,
    epsilon: float,
    delta: float,
    epochs: int | None = None,
    seed: int = 0,
    show_progress: bool = True,
    quick: bool = False,
    training_runs: int = 3,
) -> list[TrainedModel]:
    """Train non-private, DP-SGD and DP-SGLD models; return their outputs on ``x_eval``.

    Each private model is trained ``training_runs`` times (seeds ``[seed, i, r]``): the first
    run is the model returned; every run's outputs on ``x_eval`` are in
    ``info["run probs"]`` so that the caller can show how much one random run can vary.

    Parameters
    ----------
    x_train : ndarray of shape (N, ...)
        Training inputs (images (N, H, W) or feature rows (N, d)), scaled to [0, 1].
    y_train : ndarray of shape (N,)
    x_eval : ndarray
        The held-out people (calibration and test): never used for training.
    n_classes : int
    epsilon, delta : float
        The training privacy target shared by DP-SGD and DP-SGLD.
    epochs : int, optional
        Passes over the data (default: the trainer's choice).
    seed : int
    show_progress : bool
    quick : bool
        Fewer epochs (a smoke test).
    training_runs : int, default 3
        Trainings of each private model (the spread of a random run; issue 35).
    """
    from dpuq._validation import check_positive_int

    runs = check_positive_int(training_runs, "training_runs")
    try:
        import opacus  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        why = "DP-SGD and DP-SGLD need PyTorch and Opacus (pip install 'dpuq[torch]')"
        return [_sklearn_fallback(x_train, y_train, x_eval, n_classes, seed, why)]
    try:
        import dpuq.training  # noqa: F401
    except ImportError:
        why = "dpuq.training (DP-SGD, DP-SGLD) is not in this version"
        return [_sklearn_fallback(x_train, y_train, x_eval, n_classes, seed, why)]
    return _train_torch(
        x_train, y_train, x_eval, n_classes, epsilon, delta, epochs, seed, show_progress, quick,
        runs,
    )  # fmt: skip


def model_family(n_train: int, side: int, epsilon: float) -> tuple[str, str]:
    """The demo's model family from public quantities (N, image side, ε) and the reason.

    :func:`dpuq.training.features.choose_model_family` (Tramèr and Boneh 2021) picks fixed
    features + a linear head below ``N·ε = 500,000``; the features are
    :func:`dpuq.training.features.fixed_features` (second-order scattering; for images under
    16 pixels the pixels beside one-scale scattering).
    """
    from dpuq.training.features import SMALL_IMAGE_SIDE, choose_model_family

    family, why = choose_model_family(n_train, epsilon)
    if family == "features" and side < SMALL_IMAGE_SIDE:
        why += f" (a {side}×{side} image: its pixels beside one-scale scattering features)"
    return family, why


def _inputs(family: str, x: np.ndarray) -> np.ndarray:
    from dpuq.training.features import fixed_features

    if family == "features":
        return fixed_features(x)
    return np.asarray(x[:, None], dtype=np.float32)


def _train_torch(
    x_train, y_train, x_eval, n_classes, epsilon, delta, epochs, seed, show_progress, quick,
    training_runs=1,
) -> list[TrainedModel]:  # fmt: skip
    """The non-private model by :func:`train_classifier`, the private ones by
    :class:`dpuq.DPClassifier` (its ``model="auto"`` picks the same family as
    :func:`model_family`: one rule, :func:`dpuq.training.choose_model_family`)."""
    import torch

    side = int(x_train.shape[-1])
    if x_train.ndim != 3 or x_train.shape[1] != side:
        raise ValueError(f"expected square images (N, H, W), got shape {x_train.shape}")
    family, why = model_family(len(y_train), side, epsilon)
    threads = torch.get_num_threads()
    # One intra-op thread: on a busy 2-core machine more threads made a 10-epoch digits run
    # 14x slower (42 s against 3 s) and a Fashion-MNIST DP-SGD run 3x slower.
    torch.set_num_threads(1)
    extra = {}
    if epochs is not None:
        extra["epochs"] = float(epochs)
    elif quick and family == "cnn":
        extra["epochs"] = 2.0
    try:
        torch.manual_seed(seed + 1)
        models = [_non_private(x_train, y_train, x_eval, n_classes, family, why, extra, seed,
                               show_progress)]  # fmt: skip
        for i, (name, method) in enumerate(((DP_SGD, "dpsgd"), (DP_SGLD, "dpsgld")), start=1):
            repeats = [
                _private(name, method, x_train, y_train, x_eval, n_classes, epsilon, delta,
                         extra, _run_seed(seed, i, r), show_progress)
                for r in range(training_runs)
            ]  # fmt: skip
            first = repeats[0]
            first.info["run probs"] = [m.probs for m in repeats]
            models.append(first)
    finally:
        torch.set_num_threads(threads)
    return models


def _run_seed(seed: int, i: int, r: int) -> int:
    """The int seed of model ``i``'s run ``r`` (estimators take an int, never a Generator)."""
    key = [seed, i] if r == 0 else [seed, i, r]
    return int(np.random.SeedSequence(key).generate_state(1, np.uint64)[0] >> 1)


def _non_private(x_train, y_train, x_eval, n_classes, family, why, extra, seed, show_progress):
    import torch

    from dpuq.training import predict_proba, small_cnn, train_classifier

    side = int(x_train.shape[-1])
    xt = torch.as_tensor(_inputs(family, x_train))
    if family == "cnn":
        net = small_cnn(n_classes, image_size=side)
    else:
        net = torch.nn.Linear(xt.shape[1], n_classes)
    start = time.perf_counter()
    net, report = train_classifier(
        net, (xt, torch.as_tensor(y_train, dtype=torch.int64)), method="sgd",
        random_state=np.random.default_rng([seed, 0]), show_progress=show_progress,
        ledger=CALLER_CHARGED, **extra,
    )  # fmt: skip
    probs = predict_proba(net, _inputs(family, x_eval))
    info = _info(report.details, family, why, "sgd", time.perf_counter() - start)
    return TrainedModel(NOT_PRIVATE, probs, None, info)


def _private(name, method, x_train, y_train, x_eval, n_classes, epsilon, delta, extra, seed,
             show_progress) -> TrainedModel:  # fmt: skip
    """One private model by :class:`dpuq.DPClassifier` (pixels in [0, 1], declared)."""
    from dpuq.training.estimators import DPClassifier

    start = time.perf_counter()
    clf = DPClassifier(
        epsilon=epsilon, delta=delta, method=method, feature_bounds=(0.0, 1.0),
        classes=np.arange(n_classes), show_progress=show_progress, random_state=seed,
        **extra,
    )  # fmt: skip
    clf.fit(x_train, y_train, ledger=CALLER_CHARGED)  # an experiment: a simulation
    report = clf.privacy_report_
    d = report.details
    info = _info(d, clf.model_name_, d["model (why)"], method, time.perf_counter() - start)
    info["settings"] = "dpuq.DPClassifier: model='auto', data-free recipe (dpuq.training.recipe)"
    return TrainedModel(name, clf.predict_proba(x_eval), report, info)


def _info(details, family, why, method, seconds) -> dict[str, Any]:
    steps = float(details.get("steps", 0))
    epochs = steps * details["expected batch size"] / details["n_samples"]
    return {
        "model family": family,
        "why this family": why,
        "epochs": round(epochs, 1),
        "batch_size": int(details["expected batch size"]),
        "method": method,
        "settings": "data-free recipe (dpuq.training.recipe)",
        "training seconds": round(seconds, 1),
    }
