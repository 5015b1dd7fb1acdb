"""Logits in, probabilities out: a numerically stable softmax with a public temperature.

Most networks (every torch classifier) output logits, not probabilities. The conformal scores
need probabilities, so logits ``z`` become ``softmax(z / T)`` with a temperature ``T > 0``.

The temperature must be **public**: fixed in advance or fitted on data other than the
calibration people (e.g. on the training set or a separate validation set). A temperature
fitted on the calibration data would make every calibration score depend on every other
person, and the privacy guarantee of the calibration would no longer hold.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpuq._validation import _as_float, as_array

__all__ = ["LogitsModel", "check_temperature", "softmax"]


def check_temperature(temperature, name: str = "temperature") -> float:
    """Return the temperature as a float; it must be finite and > 0."""
    t = _as_float(temperature, name)
    if not math.isfinite(t) or t <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {temperature!r}")
    return t


def softmax(logits, temperature: float = 1.0, *, name: str = "logits") -> np.ndarray:
    """Class probabilities ``softmax(logits / temperature)`` row by row, shape (n, K).

    Numerically stable: each row is shifted by its maximum before exponentiating, so logits of
    any magnitude (1e4, -1e4) give finite probabilities that sum to 1 within rounding.
    Computed in float64 whatever the input dtype (numpy, torch, pandas/polars).

    Parameters
    ----------
    logits : array-like of shape (n, K)
        Unnormalised log-probabilities, K >= 2, finite.
    temperature : float, default 1.0
        ``T > 0``; larger T flattens the probabilities. Must be public (see the module).

    Examples
    --------
    >>> softmax([[0.0, 0.0], [1000.0, 0.0]]).round(6).tolist()
    [[0.5, 0.5], [1.0, 0.0]]
    >>> softmax([[2.0, 0.0]], temperature=2.0).round(4).tolist()
    [[0.7311, 0.2689]]
    """
    t = check_temperature(temperature)
    try:
        z = np.asarray(as_array(logits, name), dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric: {exc}") from None
    if z.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_samples, n_classes), got {z.shape}")
    if z.shape[0] == 0 or z.shape[1] < 2:
        raise ValueError(f"{name} needs at least one row and 2 classes, got shape {z.shape}")
    if not np.isfinite(z).all():  # no count: it depends on the data
        raise ValueError(f"{name} has non-finite value(s) (NaN or inf)")
    z = z / t
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _call_logits(model, X) -> Any:
    """The logits of ``model`` on ``X``: ``decision_function``, ``predict_logits`` or a call."""
    for method in ("predict_logits", "decision_function"):
        if hasattr(model, method):
            return getattr(model, method)(X)
    if not callable(model):
        raise TypeError("model must have decision_function/predict_logits or be a callable")
    if type(model).__module__.split(".")[0] == "torch" or _is_torch_module(model):
        import torch

        with torch.no_grad():
            x = X if isinstance(X, torch.Tensor) else torch.as_tensor(np.asarray(X))
            if x.is_floating_point():
                x = x.to(next(model.parameters(), torch.empty(0)).dtype)
            return model(x)
    return model(X)


def _is_torch_module(model) -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


class LogitsModel:
    """A classifier with ``predict_proba = softmax(logits / temperature)`` of a logit model.

    Wraps anything that gives logits: a scikit-learn model (``decision_function``), an object
    with ``predict_logits``, a torch ``nn.Module`` (called on a tensor under ``no_grad``) or a
    plain callable. Used by :meth:`PrivateConformalClassifier.from_logits`.

    Parameters
    ----------
    model : object or callable
        The logit model (already trained, on other people than the calibration set).
    temperature : float, default 1.0
        Public temperature ``T > 0`` (never fitted on the calibration data).

    Examples
    --------
    >>> m = LogitsModel(lambda X: np.asarray(X) * [1.0, -1.0])
    >>> m.predict_proba([[0.0, 0.0]]).tolist()
    [[0.5, 0.5]]
    """

    def __init__(self, model: Any, temperature: float = 1.0) -> None:
        self.model = model
        self.temperature = temperature

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters (scikit-learn's ``clone`` uses them)."""
        return {"model": self.model, "temperature": self.temperature}

    def set_params(self, **params: Any) -> LogitsModel:
        """Set constructor parameters; returns self."""
        for key, value in params.items():
            if key not in ("model", "temperature"):
                raise ValueError(f"invalid parameter {key!r} for LogitsModel")
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        return f"LogitsModel({self.model!r}, temperature={self.temperature!r})"

    @property
    def classes_(self) -> np.ndarray:
        if not hasattr(self.model, "classes_"):
            raise AttributeError("the wrapped model has no classes_")
        return np.asarray(self.model.classes_)

    def fit(self, X, y) -> LogitsModel:
        """Train the wrapped model (for ``prefit=False``); returns self."""
        if not hasattr(self.model, "fit"):
            raise TypeError("the wrapped logit model has no fit method")
        self.model.fit(X, y)
        return self

    def logits(self, X) -> np.ndarray:
        """The model's logits on ``X`` as a float array."""
        z = as_array(_call_logits(self.model, X), "model's logits")
        z = np.asarray(z, dtype=float)
        if z.ndim == 1:  # a binary scikit-learn decision_function: logit of class 1
            z = np.column_stack((np.zeros_like(z), z))
        return z

    def predict_proba(self, X) -> np.ndarray:
        """``softmax(logits / temperature)``, shape (n, K)."""
        return softmax(self.logits(X), self.temperature, name="model's logits")
