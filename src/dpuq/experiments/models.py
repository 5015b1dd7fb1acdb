"""Train the demo's models three ways: non-private SGD, DP-SGD and DP-SGLD (same ε, δ).

Training itself lives in :mod:`dpuq.training` (PyTorch and Opacus, optional); this module
only calls it and keeps what the experiments need: each model's class probabilities on the
held-out people and its privacy report. Without PyTorch, only a non-private scikit-learn
model is trained and the private rows say why they are missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

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

    model = LogisticRegression(max_iter=3000, C=0.5, random_state=seed)
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
        import torch  # noqa: F401
    except ImportError:
        why = "DP-SGD and DP-SGLD need PyTorch (pip install 'dpuq[train]')"
        return [_sklearn_fallback(x_train, y_train, x_eval, n_classes, seed, why)]
    try:
        from dpuq import training  # noqa: F401
    except ImportError:
        why = "dpuq.training (DP-SGD, DP-SGLD) is not in this version"
        return [_sklearn_fallback(x_train, y_train, x_eval, n_classes, seed, why)]
    return _train_torch(
        x_train,
        y_train,
        x_eval,
        n_classes=n_classes,
        epsilon=epsilon,
        delta=delta,
        epochs=epochs,
        seed=seed,
        show_progress=show_progress,
        quick=quick,
    )


def _train_torch(x_train, y_train, x_eval, **kwargs) -> list[TrainedModel]:  # pragma: no cover
    raise ImportError("dpuq.training is not available yet")
