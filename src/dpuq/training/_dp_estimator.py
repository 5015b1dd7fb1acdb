"""The fit and predict that :class:`~dpuq.training.estimators.DPClassifier` and
:class:`~dpuq.training.estimators.DPRegressor` share (privacy argument: that module).

``_DPEstimator`` checks every setting before the data is read, picks the network from public
quantities (:mod:`dpuq.training.auto_model`), scales the inputs by declared bounds, trains with
:func:`dpuq.training.train_classifier` (which charges the ledger) and keeps the released
weights, the declared settings and the privacy report; predictions run the released network.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import warnings

import numpy as np
import torch
from sklearn.utils.validation import validate_data
from torch import nn

from dpuq._estimator import NotFittedError, PrivateEstimator, RepeatedReleaseWarning
from dpuq._validation import check_epsilon, check_in_open_unit
from dpuq.mechanisms.randomness import check_estimator_random_state
from dpuq.privacy.report import Relation
from dpuq.training.auto_model import (
    check_feature_bounds,
    choose_model,
    image_inputs,
    input_note,
    scale_features,
)

__all__ = ["PRIVATE_METHODS"]

#: Training methods of the estimators (both private).
PRIVATE_METHODS = ("dpsgd", "dpsgld")
_PREDICT_BATCH = 4096


def shape_refusal(exc: RuntimeError, what: str) -> ValueError:
    """The one-line ``ValueError`` for a network or fixed features that cannot take an input
    shape (torch's ``RuntimeError``), ``what`` first; out of memory is not such a refusal and
    is raised again as it is."""
    if isinstance(exc, getattr(torch, "OutOfMemoryError", ())) or any(
        word in str(exc).lower() for word in ("alloc", "out of memory")
    ):
        raise exc
    return ValueError(f"{what}: {str(exc).splitlines()[0]}")


class _DPEstimator(PrivateEstimator):
    """Fit and predict shared by :class:`DPClassifier` and :class:`DPRegressor`."""

    _task = "classification"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        method: str = "dpsgd",
        model="auto",
        feature_bounds=None,
        relation: str = "replace-one",
        accountant: str = "pld",
        epochs="auto",
        batch_size="auto",
        learning_rate="auto",
        show_progress: bool = True,
        device: str = "auto",
        world_size: int = 1,
        random_state: int | None = None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.model = model
        self.feature_bounds = feature_bounds
        self.relation = relation
        self.accountant = accountant
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.show_progress = show_progress
        self.device = device
        self.world_size = world_size
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self) -> tuple[float, float, int | None]:
        """Every setting that needs no data, before anything is read, charged or trained."""
        eps = check_epsilon(self.epsilon)
        delta = check_in_open_unit(self.delta, "delta")
        if self.method not in PRIVATE_METHODS:
            raise ValueError(f"method must be one of {PRIVATE_METHODS}, got {self.method!r}")
        Relation.coerce(self.relation)
        if isinstance(self.model, nn.Module):
            from dpuq.training.settings import check_private_model

            check_private_model(self.model)
        elif not isinstance(self.model, str):
            raise TypeError(
                f"model must be 'auto', a model name or a torch.nn.Module, got "
                f"{type(self.model).__name__}"
            )
        from dpuq.training.settings import check_given_settings

        check_given_settings(
            epochs=self.epochs, batch_size=self.batch_size, learning_rate=self.learning_rate,
            accountant=self.accountant,
        )  # fmt: skip
        return eps, delta, check_estimator_random_state(self.random_state)

    def _inputs(self, X, bounds, features: str | None = None) -> np.ndarray:
        """The network's input for ``X`` (already validated): scaled, then featurised."""
        images = X.ndim >= 3
        x = scale_features(X, bounds, images=images)
        if images:
            x = image_inputs(x, self.features_ if features is None else features)
        return np.ascontiguousarray(x, dtype=np.float32)

    @contextlib.contextmanager
    def fitting(self):
        """Run a fit: if it raises (a refused setting or input, an exceeded budget), put the
        estimator's state back as it was (scikit-learn's input validation sets
        ``n_features_in_`` before training, and a half-updated estimator would pair an old
        model with new classes, bounds or features); once it is accepted and complete, warn
        if it replaced a trained model (after the estimator is whole: a warning turned into
        an error cannot undo a spent budget's model)."""
        state = dict(self.__dict__)
        try:
            yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(state)
            raise
        if "model_" in state:  # the estimator's own state, never the data
            warnings.warn(
                f"this {type(self).__name__} already held a trained model: this fit spent "
                f"epsilon = {self.privacy_report_.epsilon:g} again on the training people "
                "(the costs add up)",
                RepeatedReleaseWarning,
                stacklevel=4,
            )

    # ------------------------------------------------------------------ fit
    def _fit(self, X, targets, n_outputs: int, ledger, dataset, notes: tuple[str, ...],
             fitted: dict):  # fmt: skip
        """Train, then set the fitted attributes (``fitted`` and this fit's own) together:
        a refused fit leaves the estimator as it was (:meth:`fitting`)."""
        from dpuq.training.train import train_classifier

        eps, delta, seed = self._check_params()
        images = X.ndim >= 3
        if X.ndim > 4:
            raise ValueError(f"X must have 2 to 4 dimensions, got shape {X.shape}")
        bounds = check_feature_bounds(
            self.feature_bounds, int(np.prod(X.shape[1:]) if not images else 1), images=images
        )
        n = int(X.shape[0])
        refusal = f"model={self.model!r} cannot take examples of shape {X.shape[1:]}"
        if isinstance(self.model, nn.Module):
            network, name, features = copy.deepcopy(self.model), "user", "none"
            why = f"the user's torch module ({type(self.model).__name__})"
        else:
            try:
                choice = choose_model(self.model, X.shape[1:], n_samples=n, epsilon=eps,
                                      n_outputs=n_outputs, seed=seed)  # fmt: skip
            except RuntimeError as exc:  # e.g. images too small for the network's layers
                raise shape_refusal(exc, refusal) from None
            network, name, why, features = (
                choice.network, choice.name, choice.why, choice.features,
            )  # fmt: skip
        try:
            x = self._inputs(X, bounds, features)
        except RuntimeError as exc:  # the fixed features cannot take this shape
            raise shape_refusal(exc, refusal) from None
        self._check_outputs(network, x[:1], n_outputs)
        extra = {}
        if self.device != "auto":  # issue 38's device= / world_size=, forwarded when set
            extra["device"] = self.device
        if self.world_size != 1:
            extra["world_size"] = self.world_size
        if self._task == "regression":
            extra.update(task="regression", averaging="weights")
        model, report = train_classifier(
            network, (x, targets), method=self.method, epsilon=eps, delta=delta,
            epochs=self.epochs, batch_size=self.batch_size, learning_rate=self.learning_rate,
            accountant=self.accountant, relation=self.relation, random_state=seed,
            show_progress=self.show_progress, ledger=ledger, dataset=dataset, **extra,
        )  # fmt: skip
        for key, value in fitted.items():  # the fit is accepted: its attributes, together
            setattr(self, key, value)
        self.features_ = features
        self.model_ = model
        self.bounds_ = bounds
        self.input_shape_ = tuple(int(s) for s in X.shape[1:])
        self.model_name_ = name
        details = {
            **report.details,
            "model": name,
            "model (why)": why,
            "inputs": input_note(bounds, images),
            "n_samples (public)": n,
        }
        public_n = (
            "N is public under replace-one (the relation of this report)"
            if report.relation is Relation.REPLACE_ONE
            else "under add/remove-one N is not public: the model choice and the recipe read "
            "it as dpuq's recipe does (docs/how-to/training.md)"
        )
        self.privacy_report_ = dataclasses.replace(
            report,
            mechanism=f"{type(self).__name__}: {report.mechanism}",
            details=details,
            notes=(
                *report.notes,
                "The model is chosen from public quantities only (input shape, N, ε, δ, "
                f"outputs); {public_n}.",
                *notes,
            ),
        )
        return self

    @staticmethod
    def _check_outputs(network: nn.Module, x1: np.ndarray, n_outputs: int) -> None:
        network.eval()
        try:
            with torch.no_grad():
                out = network(torch.as_tensor(x1))
        except (RuntimeError, ValueError, TypeError) as exc:
            raise ValueError(
                f"model cannot take X's examples (network input shape {x1.shape[1:]}): {exc}"
            ) from None
        if out.ndim != 2 or out.shape[1] != n_outputs:
            raise ValueError(
                f"model must output shape (batch, {n_outputs}) for this y, got {tuple(out.shape)}"
            )

    # ------------------------------------------------------------------ predict
    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet: call fit(X, y) first"
            )

    def _outputs(self, X) -> np.ndarray:
        """The network's outputs on ``X``, float64, shape (n, outputs)."""
        self._check_fitted()
        X = validate_data(self, X, reset=False, allow_nd=True, dtype=(np.float64, np.float32))
        if tuple(X.shape[1:]) != self.input_shape_:
            raise ValueError(
                f"X: examples of shape {self.input_shape_} expected (as in fit), got "
                f"{tuple(X.shape[1:])}"
            )
        x = self._inputs(X, self.bounds_)
        net = self.model_
        dev = next((p.device for p in net.parameters()), torch.device("cpu"))
        net.eval()
        out = []
        with torch.no_grad():
            for start in range(0, x.shape[0], _PREDICT_BATCH):
                xb = torch.as_tensor(x[start : start + _PREDICT_BATCH], device=dev)
                out.append(net(xb).double().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 1))

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        if "model_" in state:  # a pickle holds the released weights on the CPU
            state["model_"] = copy.deepcopy(state["model_"]).cpu()
        return state
