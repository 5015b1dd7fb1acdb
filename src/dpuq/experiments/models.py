"""Train the demo's models three ways: non-private SGD, DP-SGD and DP-SGLD (same ε, δ).

Training itself lives in :mod:`dpuq.training` (PyTorch and Opacus, optional); this module
only calls it and keeps what the experiments need: each model's class probabilities on the
held-out people and its privacy report. Without PyTorch, only a non-private scikit-learn
model is trained and the private rows say why they are missing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpuq.ledger import CALLER_CHARGED
from dpuq.report import PrivacyReport

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
) -> list[TrainedModel]:
    """Train non-private, DP-SGD and DP-SGLD models; return their outputs on ``x_eval``.

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
    """
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
        x_train, y_train, x_eval, n_classes, epsilon, delta, epochs, seed, show_progress, quick
    )


@dataclass(frozen=True)
class TrainingPlan:
    """Hyperparameters of the three trainings for one data set (public, data-free)."""

    epochs: float
    batch_size: int
    dp_learning_rate: float
    sgld_initial_rate: float
    sgd_learning_rate: float = 0.1
    max_grad_norm: float = 1.0
    sgld_gamma: float = 0.55
    sgld_pre_noise: float = 0.0
    prior_std: float = 1.0


# tuned on digits at ε = 3 (acc. ~0.87 for both private)
SMALL_IMAGES = TrainingPlan(epochs=40, batch_size=64, dp_learning_rate=0.25, sgld_initial_rate=0.5)
# the settings of dpuq.experiments.dpsgld for Fashion-MNIST
LARGE_IMAGES = TrainingPlan(epochs=2, batch_size=256, dp_learning_rate=3.0, sgld_initial_rate=3.0)


def training_plan(n_train: int, image_size: int, epochs: float | None, quick: bool):
    """Settings used by :func:`train_three_ways`: small images (digits) or 28×28 ones."""
    plan = SMALL_IMAGES if image_size <= 16 else LARGE_IMAGES
    if epochs is not None:
        plan = replace(plan, epochs=float(epochs))
    elif quick:
        plan = replace(plan, epochs=max(1.0, plan.epochs / 4))
    return plan


def _train_torch(
    x_train, y_train, x_eval, n_classes, epsilon, delta, epochs, seed, show_progress, quick
) -> list[TrainedModel]:
    import torch

    from dpuq.training import PolynomialDecay

    side = int(x_train.shape[-1])
    if x_train.ndim != 3 or x_train.shape[1] != side:
        raise ValueError(f"expected square images (N, H, W), got shape {x_train.shape}")
    plan = training_plan(len(y_train), side, epochs, quick)
    xt = torch.as_tensor(x_train[:, None], dtype=torch.float32)
    yt = torch.as_tensor(y_train, dtype=torch.int64)
    xe = np.asarray(x_eval[:, None], dtype=np.float32)
    batch = min(plan.batch_size, len(y_train) // 2)
    steps = max(1, round(plan.epochs * len(y_train) / batch))
    decay_scale = 100.0 if side <= 16 else max(1.0, steps / 10)
    runs = [
        (NOT_PRIVATE, {"method": "sgd", "learning_rate": plan.sgd_learning_rate,
                       "momentum": 0.9}),
        (DP_SGD, {"method": "dpsgd", "epsilon": epsilon, "delta": delta,
                  "learning_rate": plan.dp_learning_rate, "max_grad_norm": plan.max_grad_norm}),
        (DP_SGLD, {"method": "dpsgld", "epsilon": epsilon, "delta": delta,
                   "learning_rate": PolynomialDecay(plan.sgld_initial_rate,
                                                    gamma=plan.sgld_gamma, scale=decay_scale),
                   "temperature": "auto", "pre_noise_scale": plan.sgld_pre_noise,
                   "prior_std": plan.prior_std, "max_grad_norm": plan.max_grad_norm}),
    ]  # fmt: skip
    models = []
    threads = torch.get_num_threads()
    # One intra-op thread: on a busy 2-core machine more threads made a 10-epoch digits run
    # 14x slower (42 s against 3 s) and a Fashion-MNIST DP-SGD run 3x slower.
    torch.set_num_threads(1)
    try:
        models = _run_all(runs, xt, yt, xe, side, n_classes, plan, batch, seed, show_progress)
    finally:
        torch.set_num_threads(threads)
    return models


def _run_all(runs, xt, yt, xe, side, n_classes, plan, batch, seed, show_progress):
    import torch

    from dpuq.training import predict_proba, small_cnn, train_classifier

    models = []
    for i, (name, kwargs) in enumerate(runs):
        torch.manual_seed(seed + i)
        start = time.perf_counter()
        net = small_cnn(n_classes, image_size=side)
        net, report = train_classifier(
            net,
            (xt, yt),
            epochs=plan.epochs,
            batch_size=batch,
            random_state=np.random.default_rng([seed, i]),
            show_progress=show_progress,
            ledger=CALLER_CHARGED,  # an experiment: a simulation, not a release
            **kwargs,
        )
        probs = predict_proba(net, xe)
        info = {
            "epochs": plan.epochs,
            "batch_size": batch,
            "method": kwargs["method"],
            "training seconds": round(time.perf_counter() - start, 1),
        }
        models.append(TrainedModel(name, probs, None if name == NOT_PRIVATE else report, info))
    return models
