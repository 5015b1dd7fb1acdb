"""The settings of :func:`dpuq.training.train_classifier`: the data-free recipe, then checks.

:func:`resolve_settings` turns what the user passed into the settings the training loop runs
with: every ``"auto"`` from the data-free recipe (:func:`dpuq.training.recipe.auto_recipe`, a
function of public quantities only) or, with the user's own learning rate, the classic defaults
(:data:`CLASSIC_DEFAULTS`); then every setting is checked, in a fixed order, before anything is
charged or trained. :func:`check_private_model` names the layers Opacus cannot train privately.
Nothing here reads a data value: only the number of examples, the model and the labels' range.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from torch import nn

from dpuq._validation import _as_float, check_epsilon, check_in_open_unit, check_positive_int
from dpuq.privacy import accounting
from dpuq.privacy.report import Relation
from dpuq.training.augment import check_multiplicity
from dpuq.training.averaging import AVERAGING
from dpuq.training.batches import TASKS, as_tensors, check_label_range, n_outputs
from dpuq.training.recipe import AUTO, CLIPPING, auto_recipe
from dpuq.training.schedules import as_schedule

__all__ = ["CLASSIC_DEFAULTS", "METHODS", "TrainingSettings", "check_private_model"]

#: Training methods of :func:`dpuq.training.train_classifier`.
METHODS = ("sgd", "dpsgd", "dpsgld")
#: What ``"auto"`` means for the optimiser settings when the learning rate is the user's.
CLASSIC_DEFAULTS = {
    "max_grad_norm": 1.0, "clipping": "flat", "momentum": 0.0, "iterate_averaging": 0,
    "averaging": "predictive", "averaging_start": 0.5, "prior_std": None,
}  # fmt: skip


@dataclass(frozen=True)
class TrainingSettings:
    """The checked settings a training run uses (names as in ``train_classifier``)."""

    private: bool
    epsilon: float | None
    delta: float | None
    relation: Relation
    accountant: str
    tensors: Any  # (X, y) tensors, or None for a torch Dataset
    n: int
    n_classes: int
    auto_keys: list[str]
    recipe_used: dict | None
    epochs: float
    batch_size: int
    max_grad_norm: float
    clipping: str
    momentum: float
    temperature: Any  # float, "auto" or None
    pre_noise_scale: float
    schedule: Any
    iterate_averaging: int
    averaging_start: float
    averaging: str
    prior_std: Any
    augmentation_multiplicity: int = 1
    task: str = "classification"


def check_private_model(model: nn.Module) -> None:
    """Raise ValueError naming every layer that Opacus cannot train privately.

    Runs Opacus' module validators (e.g. BatchNorm mixes examples of a batch, so per-example
    gradients do not exist) on every submodule, and rejects trainable layers with buffers.

    Examples
    --------
    >>> check_private_model(nn.Sequential(nn.Linear(2, 2)))
    >>> check_private_model(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)))
    Traceback (most recent call last):
    ...
    ValueError: model cannot be trained privately by Opacus: layer '1' (BatchNorm1d): ...
    """
    from opacus.validators import ModuleValidator

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    problems = []
    for name, module in model.named_modules():
        label = f"layer '{name or '<root>'}' ({type(module).__name__})"
        validator = ModuleValidator.VALIDATORS.get(type(module))
        if validator is not None:
            for err in validator(module):
                problems.append(f"{label}: {str(err).strip().splitlines()[0]}")
        has_params = any(p.requires_grad for p in module.parameters(recurse=False))
        if has_params and any(True for _ in module.buffers(recurse=False)):
            if validator is None:
                problems.append(f"{label}: trainable layer with buffers (not private)")
    if problems:
        raise ValueError(
            "model cannot be trained privately by Opacus: "
            + "; ".join(problems)
            + ". Replace such layers (e.g. BatchNorm by GroupNorm; "
            "opacus.validators.ModuleValidator.fix(model) does it)."
        )


def _check_epochs(epochs) -> float:
    """``epochs`` as a float, finite and > 0 (else a ValueError naming it)."""
    ep = _as_float(epochs, "epochs")
    if not math.isfinite(ep) or ep <= 0:
        raise ValueError(f"epochs must be finite and > 0, got {epochs!r}")
    return ep


def check_given_settings(*, epochs, batch_size, learning_rate, accountant) -> None:
    """The recipe's settings a user gives, checked before any data is read (``"auto"``
    passes; :func:`resolve_settings` checks them again with the data's shapes). A private
    estimator calls it first, so that a bad setting is refused before its inputs are
    featurised, in time that does not depend on them.

    >>> check_given_settings(epochs="auto", batch_size=64, learning_rate=0.5, accountant="pld")
    >>> check_given_settings(epochs=0, batch_size="auto", learning_rate="auto", accountant="pld")
    Traceback (most recent call last):
    ...
    ValueError: epochs must be finite and > 0, got 0
    """
    accounting._check_accountant(accountant)
    if not (isinstance(epochs, str) and epochs == AUTO):
        _check_epochs(epochs)
    if not (isinstance(batch_size, str) and batch_size == AUTO):
        check_positive_int(batch_size, "batch_size")
    if not (isinstance(learning_rate, str) and learning_rate == AUTO):
        as_schedule(learning_rate)


def resolve_settings(
    model: nn.Module,
    train_data,
    *,
    method: str,
    epsilon,
    delta,
    epochs,
    batch_size,
    learning_rate,
    max_grad_norm,
    clipping,
    noise_multiplier,
    temperature,
    pre_noise_scale,
    prior_std,
    iterate_averaging,
    averaging_start,
    averaging,
    momentum,
    accountant,
    relation,
    posterior_samples,
    burn_in,
    augmentation_multiplicity=AUTO,
    task="classification",
) -> TrainingSettings:
    """The settings :func:`dpuq.training.train_classifier` runs with, every one checked.

    Arguments as for ``train_classifier``; raises what it documents (``ValueError`` naming the
    argument), in the same order, before anything is charged or trained.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if posterior_samples is not None:
        warnings.warn(
            "posterior_samples is deprecated: use iterate_averaging (it applies to every method)",
            DeprecationWarning,
            stacklevel=3,
        )
        iterate_averaging = posterior_samples
    if burn_in is not None:
        warnings.warn(
            "burn_in is deprecated: use averaging_start", DeprecationWarning, stacklevel=3
        )
        averaging_start = burn_in
    if averaging not in (*AVERAGING, AUTO):
        raise ValueError(f"averaging must be one of {AVERAGING}, got {averaging!r}")
    relation = Relation.coerce(relation)
    private = method != "sgd"
    if private:
        if epsilon is None or delta is None:
            raise ValueError(f"method={method!r} needs epsilon and delta")
        epsilon = check_epsilon(epsilon)
        delta = check_in_open_unit(delta, "delta")
    elif epsilon is not None or delta is not None:
        raise ValueError("method='sgd' is not private: do not pass epsilon or delta")
    accountant = accounting._check_accountant(accountant)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if method == "dpsgld" and temperature is None:
        temperature = AUTO
    tensors = as_tensors(train_data, task)
    n = int(tensors[0].shape[0]) if tensors is not None else len(train_data)
    if n < 2:
        raise ValueError(f"train_data needs at least 2 examples, got {n}")
    settings = dict(
        epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
        max_grad_norm=max_grad_norm, clipping=clipping, momentum=momentum,
        iterate_averaging=iterate_averaging, averaging=averaging,
        averaging_start=averaging_start, prior_std=prior_std,
    )  # fmt: skip
    auto_keys = [k for k, v in settings.items() if isinstance(v, str) and v == AUTO]
    recipe_used = None
    if auto_keys:
        x1 = tensors[0][:1] if tensors is not None else train_data[0][0].unsqueeze(0)
        k_out = n_outputs(model, x1)
        recipe_used = auto_recipe(
            method,
            n_samples=n,
            epsilon=epsilon,
            delta=delta,
            relation=relation,
            n_params=sum(p.numel() for p in model.parameters() if p.requires_grad),
            # one output for regression: the recipe reads no class count beyond its check
            n_classes=max(2, k_out) if task == "regression" else k_out,
            task=task,
        ).as_kwargs()
        follow = isinstance(learning_rate, str) and learning_rate == AUTO
        for k in auto_keys:
            settings[k] = (
                recipe_used[k] if follow or k in ("epochs", "batch_size") else (CLASSIC_DEFAULTS[k])
            )
    epochs, batch_size, learning_rate = (
        settings["epochs"], settings["batch_size"], settings["learning_rate"]
    )  # fmt: skip
    max_grad_norm, clipping, momentum = (
        settings["max_grad_norm"], settings["clipping"], settings["momentum"]
    )  # fmt: skip
    iterate_averaging, averaging = settings["iterate_averaging"], settings["averaging"]
    averaging_start, prior_std = settings["averaging_start"], settings["prior_std"]
    if clipping not in CLIPPING:
        raise ValueError(f"clipping must be one of {CLIPPING} or 'auto', got {clipping!r}")
    ep = _check_epochs(epochs)
    bsz = check_positive_int(batch_size, "batch_size")
    clip = _as_float(max_grad_norm, "max_grad_norm")
    if not math.isfinite(clip) or clip <= 0:
        raise ValueError(f"max_grad_norm must be finite and > 0, got {max_grad_norm!r}")
    mom = _as_float(momentum, "momentum")
    if not (0 <= mom < 1):
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    if method == "dpsgld":
        if temperature is None:
            raise ValueError("method='dpsgld' needs a temperature > 0 (or 'auto')")
        if mom != 0:
            raise ValueError("method='dpsgld' needs momentum=0 (Langevin dynamics is plain SGD)")
    elif temperature is not None:
        raise ValueError(f"temperature is a DP-SGLD parameter; method={method!r}")
    if method != "dpsgd" and noise_multiplier is not None:
        raise ValueError("noise_multiplier is a DP-SGD parameter (DP-SGLD derives σ_t from T, η_t)")
    pre = _as_float(pre_noise_scale, "pre_noise_scale")
    if not math.isfinite(pre) or pre < 0:
        raise ValueError(f"pre_noise_scale must be finite and >= 0, got {pre_noise_scale!r}")
    if pre > 0 and method != "dpsgld":
        raise ValueError("pre_noise_scale is a DP-SGLD parameter")
    schedule = as_schedule(learning_rate)
    n_post = check_positive_int(iterate_averaging, "iterate_averaging", minimum=0)
    burn = _as_float(averaging_start, "averaging_start")
    if not (0 <= burn < 1):
        raise ValueError(f"averaging_start must be in [0, 1), got {averaging_start!r}")

    x1 = tensors[0][:1] if tensors is not None else train_data[0][0].unsqueeze(0)
    aug_k = check_multiplicity(augmentation_multiplicity, x1.ndim)

    if private:
        check_private_model(model)
    if bsz > n:
        raise ValueError(f"batch_size must be <= the number of examples ({n}), got {bsz}")
    n_classes = n_outputs(model, x1)
    if tensors is not None and task == "classification":
        check_label_range(tensors[1], n_classes)

    return TrainingSettings(
        private=private, epsilon=epsilon, delta=delta, relation=relation, accountant=accountant,
        tensors=tensors, n=n, n_classes=n_classes, auto_keys=auto_keys, recipe_used=recipe_used,
        epochs=ep, batch_size=bsz, max_grad_norm=clip, clipping=clipping, momentum=mom,
        temperature=temperature, pre_noise_scale=pre, schedule=schedule,
        iterate_averaging=n_post, averaging_start=burn, averaging=averaging, prior_std=prior_std,
        augmentation_multiplicity=aug_k, task=task,
    )  # fmt: skip
