"""Private models as scikit-learn estimators: :class:`DPClassifier` and :class:`DPRegressor`.

``DPClassifier(epsilon=1, delta=1e-5).fit(X, y)`` trains a model with DP-SGD (or DP-SGLD) by
:func:`dpuq.training.train_classifier` and its data-free recipe, on a network chosen from
public quantities (:mod:`dpuq.training.auto_model`), and exposes scikit-learn's interface:
``predict``, ``predict_proba``, ``predict_logits``, ``classes_``, ``get_params``/``set_params``,
``clone``. A fitted classifier is a prefit model for :class:`dpuq.PrivateConformalClassifier`.

Privacy
-------
The training people, under ``relation`` (default replace-one, ``N`` public): the model is
``(epsilon, delta)``-DP, by DP-SGD's per-example clipping, Gaussian noise and the accountant
(:mod:`dpuq.training.privacy`; the Gaussian noise is Opacus', in floating point, said in the
report). Everything else the estimator does is data-free or post-processing: the model choice
and the feature scaling use public quantities and declared bounds only (never a statistic of
the data); predictions are functions of the released weights. Two inputs are treated as
public, as ``N`` is: the input shape and the set of labels (``classes=`` declares it; without
it the labels present in ``y`` are read and the report says so, since which labels occur is
then not protected).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data
from torch import nn

from dpuq._estimator import NotFittedError, PrivateEstimator, RepeatedReleaseWarning
from dpuq._validation import check_epsilon, check_in_open_unit
from dpuq.mechanisms.randomness import check_estimator_random_state
from dpuq.report import Relation
from dpuq.training.auto_model import (
    check_feature_bounds,
    choose_model,
    image_inputs,
    input_note,
    scale_features,
)

__all__ = ["PRIVATE_METHODS", "DPClassifier", "DPRegressor"]

#: Training methods of the estimators (both private).
PRIVATE_METHODS = ("dpsgd", "dpsgld")
_PREDICT_BATCH = 4096


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
        return eps, delta, check_estimator_random_state(self.random_state)

    def _inputs(self, X, bounds) -> np.ndarray:
        """The network's input for ``X`` (already validated): scaled, then featurised."""
        images = X.ndim >= 3
        x = scale_features(X, bounds, images=images)
        if images:
            x = image_inputs(x, self.features_)
        return np.ascontiguousarray(x, dtype=np.float32)

    def _warn_if_fitted(self, eps: float) -> None:
        if hasattr(self, "model_"):  # the estimator's own state, never the data
            warnings.warn(
                f"this {type(self).__name__} already holds a trained model: fit again spends "
                f"epsilon = {eps:g} again on the training people (the costs add up)",
                RepeatedReleaseWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------------ fit
    def _fit(self, X, targets, n_outputs: int, ledger, dataset, notes: tuple[str, ...]):
        from dpuq.training.train import train_classifier

        eps, delta, seed = self._check_params()
        images = X.ndim >= 3
        if X.ndim > 4:
            raise ValueError(f"X must have 2 to 4 dimensions, got shape {X.shape}")
        bounds = check_feature_bounds(
            self.feature_bounds, int(np.prod(X.shape[1:]) if not images else 1), images=images
        )
        n = int(X.shape[0])
        if isinstance(self.model, nn.Module):
            network, name, self.features_ = copy.deepcopy(self.model), "user", "none"
            why = f"the user's torch module ({type(self.model).__name__})"
        else:
            choice = choose_model(
                self.model, X.shape[1:], n_samples=n, epsilon=eps, n_outputs=n_outputs, seed=seed
            )
            network, name, why, self.features_ = (
                choice.network, choice.name, choice.why, choice.features,
            )  # fmt: skip
        x = self._inputs(X, bounds)
        self._check_outputs(network, x[:1], n_outputs)
        extra = {}
        if self.device != "auto":  # issue 38's device= / world_size=, forwarded when set
            extra["device"] = self.device
        if self.world_size != 1:
            extra["world_size"] = self.world_size
        if self._task == "regression":
            extra.update(task="regression", averaging="weights")
        self._warn_if_fitted(eps)
        model, report = train_classifier(
            network, (x, targets), method=self.method, epsilon=eps, delta=delta,
            epochs=self.epochs, batch_size=self.batch_size, learning_rate=self.learning_rate,
            accountant=self.accountant, relation=self.relation, random_state=seed,
            show_progress=self.show_progress, ledger=ledger, dataset=dataset, **extra,
        )  # fmt: skip
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
            "it as dpuq's recipe does (docs/training.md)"
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


class DPClassifier(ClassifierMixin, _DPEstimator):
    """A differentially private classifier in scikit-learn's idiom (DP-SGD or DP-SGLD).

    ``fit`` trains the network that ``model`` names (``"auto"``: chosen from public
    quantities, :mod:`dpuq.training.auto_model`) with :func:`dpuq.training.train_classifier`
    and its data-free recipe. Privacy: ``(epsilon, delta)``-DP for the training people under
    ``relation`` (module docstring); the fitted object keeps only the released weights, the
    declared settings and the privacy report.

    Parameters
    ----------
    epsilon, delta : float
        The privacy of training (keyword-only, no defaults): ``epsilon > 0``, ``delta`` in
        (0, 1), e.g. below ``1/N``.
    method : {"dpsgd", "dpsgld"}, default "dpsgd"
    model : "auto", "linear", "mlp", "features", "cnn" or torch.nn.Module, default "auto"
        ``"auto"``: tabular ``X`` (N, d) gets a logistic regression; images (N, H, W) or
        (N, C, H, W) follow the recipe's image rule (scattering features + a linear head, or
        a small CNN). A module (outputs ``(batch, n_classes)`` logits) is copied and trained;
        the parameter itself is never modified. No batch norm (Opacus cannot train it).
    feature_bounds : None, (low, high) or array of shape (n_features, 2)
        Declared public bounds of the features (pixels: one pair): each value is clipped to
        them and mapped to [-1, 1] (tabular) or [0, 1] (images). Never derive them from the
        training data. None: inputs are used as given, assumed already on a public scale.
    classes : array-like, optional
        The public set of labels. None: the labels present in ``y`` (the report says that
        this set is then read from the data and treated as public).
    relation : {"replace-one", "add/remove-one"}, default "replace-one"
    accountant : {"pld", "rdp", "gdp"}, default "pld"
    epochs, batch_size, learning_rate : "auto" or a value
        Passed to :func:`~dpuq.training.train_classifier` (``"auto"``: the recipe).
        ``epochs`` bounds the training length (the recipe's compute knob).
    show_progress : bool, default True
        A bar on an interactive terminal, log lines (``dpuq.progress`` logger) otherwise.
    device, world_size : default "auto" and 1
        Forwarded to ``train_classifier`` only when set to something else.
    random_state : None or int
        Seeds the initialisation, batch sampling and noise. None (default): fresh OS
        entropy, for real releases; a seed marks the report ``seeded``.

    Attributes
    ----------
    classes_ : ndarray
    model_ : torch.nn.Module
        The trained network (its input is the scaled, featurised ``X``).
    model_name_ : str
        ``"linear"``, ``"mlp"``, ``"features"``, ``"cnn"`` or ``"user"``.
    privacy_report_ : PrivacyReport
        The training's guarantee; ``details["model (why)"]`` says why this model.
    n_features_in_ : int

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(600, n_features=5, n_informative=3, random_state=0)
    >>> clf = DPClassifier(epsilon=3.0, delta=1e-5, feature_bounds=(-4, 4), epochs=5,
    ...                    accountant="gdp", show_progress=False, random_state=0).fit(X, y)
    >>> clf.privacy_report_.epsilon <= 3.0, clf.model_name_, clf.predict_proba(X[:2]).shape
    (True, 'linear', (2, 2))
    >>> clf.score(X, y) > 0.7
    True
    """

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        method: str = "dpsgd",
        model="auto",
        feature_bounds=None,
        classes=None,
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
        super().__init__(
            epsilon=epsilon, delta=delta, method=method, model=model,
            feature_bounds=feature_bounds, relation=relation, accountant=accountant,
            epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
            show_progress=show_progress, device=device, world_size=world_size,
            random_state=random_state,
        )  # fmt: skip
        self.classes = classes

    def fit(self, X, y, *, ledger=None, dataset=None) -> DPClassifier:
        """Train with ``(epsilon, delta)``-DP on ``(X, y)``; returns self.

        ``ledger``/``dataset``: charge the budget before training (or refuse), as
        :func:`~dpuq.training.train_classifier`.

        Raises
        ------
        ValueError
            Bad settings (named), NaN or infinite ``X``, shapes that do not match, fewer
            than 2 samples or classes, labels outside ``classes``, batch norm layers.
        """
        self._check_params()
        X, y = validate_data(
            self, X, y, allow_nd=True, dtype=(np.float64, np.float32), ensure_min_samples=2
        )
        check_classification_targets(y)
        if self.classes is None:
            classes, index = np.unique(y, return_inverse=True)
            note = (
                "classes_ read from y (pass classes= to declare them): which labels occur "
                "is treated as public, like N."
            )
        else:
            classes = np.asarray(self.classes)
            if classes.ndim != 1 or np.unique(classes).size != classes.size:
                raise ValueError("classes must be a 1-d sequence of distinct labels")
            order = np.argsort(classes, kind="stable")
            pos = np.searchsorted(classes[order], y)
            pos = np.clip(pos, 0, classes.size - 1)
            if not np.all(classes[order][pos] == y):
                raise ValueError("y has labels that are not in classes")
            index, note = order[pos], "classes_ declared (classes=)."
        if classes.size < 2:
            raise ValueError(
                f"DPClassifier needs at least 2 classes, got {classes.size} class in y "
                "(or in classes=)"
            )
        self.classes_ = classes
        return self._fit(X, index.astype(np.int64), classes.size, ledger, dataset, (note,))

    def predict_logits(self, X) -> np.ndarray:
        """Logits, shape (n, n_classes): ``softmax`` of them is :meth:`predict_proba`.

        For an averaged model (DP-SGLD's posterior predictive) they are the log averaged
        probabilities. Use them with :func:`dpuq.training.private_temperature_scaling` and
        :meth:`dpuq.PrivateConformalClassifier.from_logits`.
        """
        return self._outputs(X)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n, n_classes), columns in the order of ``classes_``."""
        z = self.predict_logits(X)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row (a label of ``classes_``)."""
        z = self.predict_logits(X)
        return self.classes_[np.argmax(z, axis=1)]


class DPRegressor(RegressorMixin, _DPEstimator):
    """A differentially private regressor in scikit-learn's idiom (DP-SGD or DP-SGLD).

    As :class:`DPClassifier`, with a network of one output trained on the squared error
    (``"auto"`` on tabular data: least squares on the scaled features), the late iterates'
    weights averaged. ``target_bounds=(low, high)`` (public) clips ``y`` to them and trains on
    ``y`` mapped to [-1, 1], predictions mapped back; None: ``y`` as given.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(800, 3))
    >>> y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=800)
    >>> reg = DPRegressor(epsilon=3.0, delta=1e-5, feature_bounds=(-1, 1), target_bounds=(-4, 4),
    ...                   accountant="gdp", show_progress=False, random_state=0).fit(X, y)
    >>> reg.score(X, y) > 0.8, reg.predict(X[:3]).shape
    (True, (3,))
    """

    _task = "regression"

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float,
        method: str = "dpsgd",
        model="auto",
        feature_bounds=None,
        target_bounds=None,
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
        super().__init__(
            epsilon=epsilon, delta=delta, method=method, model=model,
            feature_bounds=feature_bounds, relation=relation, accountant=accountant,
            epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
            show_progress=show_progress, device=device, world_size=world_size,
            random_state=random_state,
        )  # fmt: skip
        self.target_bounds = target_bounds

    def fit(self, X, y, *, ledger=None, dataset=None) -> DPRegressor:
        """Train with ``(epsilon, delta)``-DP on ``(X, y)``; returns self (see DPClassifier)."""
        self._check_params()
        X, y = validate_data(
            self, X, y, allow_nd=True, dtype=(np.float64, np.float32), ensure_min_samples=2,
            y_numeric=True,
        )  # fmt: skip
        target = check_feature_bounds(self.target_bounds, 1, name="target_bounds")
        if target is None:
            t, note = y.astype(np.float32), "targets used as given (no target_bounds declared)."
        else:
            lo, hi = float(target[0][0]), float(target[1][0])
            t = (2.0 * (np.clip(y, lo, hi) - lo) / (hi - lo) - 1.0).astype(np.float32)
            note = f"targets clipped to the declared target_bounds [{lo:g}, {hi:g}]."
        self.target_bounds_ = target
        return self._fit(X, t, 1, ledger, dataset, (note,))

    def predict(self, X) -> np.ndarray:
        """Predicted targets, shape (n,)."""
        out = self._outputs(X)[:, 0]
        if self.target_bounds_ is None:
            return out
        lo, hi = float(self.target_bounds_[0][0]), float(self.target_bounds_[1][0])
        return lo + (out + 1.0) * (hi - lo) / 2.0
