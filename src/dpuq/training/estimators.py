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

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from dpuq.training._dp_estimator import PRIVATE_METHODS, _DPEstimator
from dpuq.training.auto_model import check_feature_bounds

__all__ = ["PRIVATE_METHODS", "DPClassifier", "DPRegressor"]


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
            Bad settings (named), NaN or infinite ``X``, values beyond float32's range
            without ``feature_bounds``, shapes that do not match, fewer than 2 samples or
            classes, labels outside ``classes``, batch norm layers. A refused fit leaves
            the estimator as it was.
        """
        with self.fitting():  # a refused fit changes nothing
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
                if classes.size < 2:
                    raise ValueError(f"classes must declare at least 2 labels, got {classes.size}")
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
            return self._fit(X, index.astype(np.int64), classes.size, ledger, dataset, (note,),
                             {"classes_": classes})  # fmt: skip

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
    ``y`` mapped to [-1, 1], predictions mapped back and clipped to them; None: ``y`` as
    given.

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
        with self.fitting():  # a refused fit changes nothing
            self._check_params()
            X, y = validate_data(
                self, X, y, allow_nd=True, dtype=(np.float64, np.float32), ensure_min_samples=2,
                y_numeric=True,
            )  # fmt: skip
            target = check_feature_bounds(self.target_bounds, 1, name="target_bounds")
            if target is None:
                if np.abs(y).max() > np.finfo(np.float32).max:  # a cast would overflow, and warn
                    raise ValueError("y: values beyond float32's range; declare target_bounds")
                t, note = y.astype(np.float32), "targets used as given (no target_bounds declared)."
            else:
                lo, hi = float(target[0][0]), float(target[1][0])
                t = (2.0 * (np.clip(y, lo, hi) - lo) / (hi - lo) - 1.0).astype(np.float32)
                note = f"targets clipped to the declared target_bounds [{lo:g}, {hi:g}]."
            return self._fit(X, t, 1, ledger, dataset, (note,), {"target_bounds_": target})

    def predict(self, X) -> np.ndarray:
        """Predicted targets, shape (n,); within the declared ``target_bounds`` if any.

        With ``target_bounds`` the network's output is mapped back from [-1, 1] and clipped
        to the bounds: every target lies in them, so clipping never moves a prediction away
        from any of them (post-processing, no privacy cost).
        """
        out = self._outputs(X)[:, 0]
        if self.target_bounds_ is None:
            return out
        lo, hi = float(self.target_bounds_[0][0]), float(self.target_bounds_[1][0])
        return np.clip(lo + (out + 1.0) * (hi - lo) / 2.0, lo, hi)
