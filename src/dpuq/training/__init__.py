"""DP-SGD and DP-SGLD training on Opacus (optional extra ``dpuq[torch]``).

Importing this package is cheap: ``torch`` and ``opacus`` are imported on first use of a
name that needs them (:class:`DPClassifier`, :class:`DPRegressor`, :func:`train_classifier`,
:class:`DPSGLDOptimizer`, :func:`small_cnn`, :func:`predict_proba`,
:func:`check_private_model`). The schedules and
:func:`private_temperature_scaling` need numpy only.
"""

from __future__ import annotations

import importlib

from dpuq.mechanisms.selection import SelectionResult, private_selection
from dpuq.training.schedules import ConstantLR, PolynomialDecay, learning_rates
from dpuq.training.temperature import (
    TemperatureScalingResult,
    private_temperature_scaling,
    softmax_with_temperature,
)

__all__ = [
    "METHODS",
    "ConstantLR",
    "DPClassifier",
    "DPRegressor",
    "DPSGDOptimizer",
    "DPSGLDOptimizer",
    "IterateAverage",
    "PolynomialDecay",
    "PosteriorAverage",
    "SelectionResult",
    "TemperatureScalingResult",
    "TrainingResult",
    "auto_recipe",
    "backbone_features",
    "check_private_model",
    "choose_model_family",
    "fixed_features",
    "learning_rates",
    "predict_proba",
    "private_selection",
    "private_temperature_scaling",
    "scatter_features",
    "select_and_train",
    "small_cnn",
    "softmax_with_temperature",
    "train_classifier",
]

_LAZY = {
    "METHODS": "dpuq.training.train",
    "TrainingResult": "dpuq.training.train",
    "PosteriorAverage": "dpuq.training.train",
    "IterateAverage": "dpuq.training.train",
    "check_private_model": "dpuq.training.train",
    "predict_proba": "dpuq.training.train",
    "train_classifier": "dpuq.training.train",
    "DPSGLDOptimizer": "dpuq.training.optimizer",
    "DPClassifier": "dpuq.training.estimators",
    "DPRegressor": "dpuq.training.estimators",
    "DPSGDOptimizer": "dpuq.training.optimizer",
    "auto_recipe": "dpuq.training.recipe",
    "choose_model_family": "dpuq.training.features",
    "scatter_features": "dpuq.training.features",
    "fixed_features": "dpuq.training.features",
    "backbone_features": "dpuq.training.backbones",
    "small_cnn": "dpuq.training.models",
    "select_and_train": "dpuq.training.selection",
}


def __getattr__(name: str):
    if name in _LAZY:
        try:
            module = importlib.import_module(_LAZY[name])
        except ImportError as exc:
            raise ImportError(
                f"dpuq.training.{name} needs torch and opacus: pip install 'dpuq[torch]' "
                f"(with torch installed first: pip install torch) ({exc})"
            ) from exc
        return getattr(module, name)
    raise AttributeError(f"module 'dpuq.training' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
