"""Online private conformal estimators for a deployed model: sets that follow drift.

:class:`PrivateOnlineConformalClassifier` and :class:`PrivateOnlineConformalRegressor` wrap a
fitted model (scikit-learn style, the scores of :class:`~dpuq.PrivateConformalClassifier`
and :class:`~dpuq.PrivateConformalRegressor`). ``start`` charges ε once for the whole stream;
``predict_set`` / ``predict_interval`` use the current released threshold; ``update(X, y)``
feeds labelled outcomes in arrival order, and each completed block of ``block_size`` persons
releases its noisy error count and moves the threshold (the tracker of
:mod:`dpuq.mechanisms.online_counts`: ε-DP for every person over the whole stream, whatever
its length, so nothing is charged again).

State: the released threshold, the public counts of persons and blocks, and one unreleased
number, the error count of the current incomplete block. A pickle would write that number, so
pickling is refused until the block is complete.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dpuq._estimator import NotFittedError
from dpuq._validation import check_epsilon, check_probabilities, check_scores
from dpuq.conformal.classifier import PrivateConformalClassifier
from dpuq.conformal.online import check_online_settings, online_privacy_report
from dpuq.conformal.outputs import ConformalPrediction
from dpuq.conformal.regression_scores import absolute_residual_scores, cqr_scores
from dpuq.conformal.regressor import PrivateConformalRegressor
from dpuq.conformal.scores import score_function
from dpuq.mechanisms.online_counts import _OnlineTracker
from dpuq.mechanisms.randomness import (
    RandomState,
    check_estimator_random_state,
    check_random_state,
    derive_seed,
    derived_generator,
    release_generator,
)
from dpuq.planning.online import DEFAULT_INITIAL, DEFAULT_STEP

__all__ = ["PrivateOnlineConformalClassifier", "PrivateOnlineConformalRegressor"]


class _OnlineMixin:
    """``start``/``update`` and the tracker's state, shared by both estimators."""

    _what = "online conformal"

    def _online_settings(self):
        check_epsilon(self.epsilon)
        alpha = self._alpha()
        if isinstance(alpha, list):
            raise ValueError("confidence_level must be one number for the online estimators")
        return check_online_settings(alpha, self.epsilon, self.step, self.block_size, self.initial)

    def _check_model_settings(self) -> None:  # pragma: no cover - overridden
        """Settings of the scores, checked before the charge."""

    def start(self, *, ledger=None, dataset: str | None = None):
        """Charge ε for the whole stream (once) and set the first threshold; returns self.

        With ``ledger``/``dataset`` ε is charged to the data set's budget before any noise, or
        the start is refused. A second ``start`` is refused: it would restart the stream.
        """
        if hasattr(self, "tracker_"):
            raise RuntimeError(
                f"this {type(self).__name__} has already started its stream; make a new one "
                "(and pay its epsilon) to start another"
            )
        settings = self._online_settings()
        self._check_model_settings()
        check_estimator_random_state(self.random_state)
        report = online_privacy_report(settings, seeded=self.random_state is not None)
        release_generator(
            self.random_state,
            ledger,
            dataset,
            report,
            what=f"{type(self).__name__}.start",
            settings=settings.as_dict(),
        )
        self.tracker_ = _OnlineTracker(
            alpha=settings.alpha,
            epsilon=settings.epsilon,
            step=settings.step,
            block_size=settings.block_size,
            initial=settings.initial,
        )
        self.privacy_report_ = report
        self.block_size_ = settings.block_size
        return self

    @property
    def threshold_(self) -> float:
        """The current released threshold (the next person's)."""
        if not hasattr(self, "tracker_"):
            raise AttributeError("threshold_")  # so hasattr() says False before start
        return self.tracker_.threshold

    @property
    def n_seen_(self) -> int:
        """Persons fed to ``update`` so far."""
        return self._tracker().n_seen

    @property
    def n_released_(self) -> int:
        """Block counts released so far."""
        return self._tracker().n_blocks

    def _tracker(self) -> _OnlineTracker:
        if not hasattr(self, "tracker_"):
            raise NotFittedError(
                f"this {type(self).__name__} has not started: call start() (or update())"
            )
        return self.tracker_

    def _check_conformalized(self) -> None:
        self._tracker()

    def _root(self) -> int | None:
        seed = check_estimator_random_state(self.random_state)
        return None if seed is None else derive_seed(check_random_state(seed))

    def update(self, X, y):
        """Feed labelled outcomes in arrival order; returns self.

        Starts the stream (``start()`` without a ledger) if needed. Each person is compared
        with the threshold the tracker gives their position, i.e. the current threshold until
        the block is complete (the one ``predict_*`` used, when every label arrives before the
        next block's first prediction).
        """
        if not hasattr(self, "tracker_"):
            self.start()
        scores = check_scores(self._stream_scores(X, y), "scores of (X, y)")
        self.tracker_.observe(scores, root=self._root())
        return self

    def conformalize(self, *args: Any, **kwargs: Any):
        """Not for the online estimators: ``start()`` then ``update(X, y)`` as labels arrive."""
        raise TypeError(
            f"{type(self).__name__} has no calibration set: call start() and then "
            "update(X, y) as labelled outcomes arrive"
        )

    def __getstate__(self) -> dict:
        tracker = self.__dict__.get("tracker_")
        if tracker is not None and tracker.pending:
            raise TypeError(
                f"this {type(self).__name__} holds the unreleased error count of an "
                "incomplete block: pickle it when n_seen_ is a multiple of block_size_"
            )
        return super().__getstate__()


class PrivateOnlineConformalClassifier(_OnlineMixin, PrivateConformalClassifier):
    """Online prediction sets for a deployed classifier, ε-DP over the whole label stream.

    Parameters
    ----------
    estimator : object with ``predict_proba``, or callable
        The fitted classifier (trained on other people, or privately).
    epsilon : float
        Privacy cost of the whole stream, > 0 (keyword-only).
    confidence_level : float, default 0.9
        Target long-run coverage ``1 - α``, ``α`` in (0, 0.5].
    conformity_score : {"lac", "aps", "raps", "top_k"}, default "lac"
    score_params : dict, optional
        Extra keyword arguments of the score (as in :class:`~dpuq.PrivateConformalClassifier`).
    step, block_size, initial :
        The tracker's public settings (:func:`dpuq.online_conformal_thresholds`).
    random_state : None or int
        None (default): fresh OS entropy for every block. An int: reproducible (experiments).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_digits(return_X_y=True)
    >>> model = LogisticRegression(max_iter=500).fit(X[:800], y[:800])
    >>> clf = PrivateOnlineConformalClassifier(model, epsilon=1.0, random_state=0).start()
    >>> _, sets = clf.predict_set(X[800:810])  # with the current threshold
    >>> clf = clf.update(X[800:1700], y[800:1700])  # labels arrive
    >>> sets.shape, clf.n_seen_, clf.n_released_
    ((10, 10), 900, 39)
    """

    _predict_verb = "predict_set"
    n_bins = "auto"
    method = "certified"
    class_conditional = False
    prefit = True

    def __init__(
        self,
        estimator: Any,
        *,
        epsilon: float,
        confidence_level: float = 0.9,
        conformity_score: str = "lac",
        score_params: dict | None = None,
        step: float = DEFAULT_STEP,
        block_size: int | str = "auto",
        initial: float = DEFAULT_INITIAL,
        random_state: RandomState = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.confidence_level = confidence_level
        self.conformity_score = conformity_score
        self.score_params = score_params
        self.step = step
        self.block_size = block_size
        self.initial = initial
        self.random_state = random_state

    def _check_model_settings(self) -> None:
        est = self._model()
        if not (hasattr(est, "predict_proba") or callable(est)):  # the model is a setting too
            raise TypeError("estimator must have predict_proba or be a callable")
        score_function(self.conformity_score)
        # the score's parameters, on a public dummy row (a bad one costs nothing)
        self._score_matrix(np.full((1, 2), 0.5), np.array([0]), np.random.default_rng(0))
        # the model's probabilities on a public row of zeros, as the regressor probes its
        # predictions: ones that every update would refuse are refused before the charge
        outputs = _on_a_row_of_zeros(
            [est], lambda m, row: m.predict_proba(row) if hasattr(m, "predict_proba") else m(row)
        )
        if outputs is not None:
            probs = np.asarray(outputs[0])
            if probs.ndim != 2 or probs.shape[0] != 1 or probs.shape[1] < 2:
                raise ValueError(
                    f"the estimator's probabilities on a public row of zeros have shape "
                    f"{probs.shape}; every update needs (n, n_classes) with n_classes >= 2"
                )
            check_probabilities(probs, "estimator's probabilities on a public row of zeros")

    def _stream_scores(self, X, y) -> np.ndarray:
        probs = self._proba(X)
        if not hasattr(self, "classes_"):
            self._set_classes(n_columns=probs.shape[1])
        if len(np.asarray(y)) != probs.shape[0]:
            raise ValueError("X and y have different numbers of rows")
        # randomised scores (APS, RAPS): a seed gives each update its own stream of uniforms
        seed = check_estimator_random_state(self.random_state)
        rng = (
            check_random_state(None)
            if seed is None
            else derived_generator(seed, self._tracker().n_seen)
        )
        return self._score_matrix(probs, self._label_index(y), rng)


def _on_a_row_of_zeros(models, call):
    """Each model's output on one public row of zeros, ``n_features_in_`` wide (a DataFrame
    with the model's ``feature_names_in_``): a probe before the charge, with no data in it.
    None where the models give no common width or cannot predict on zeros (not probed)."""
    widths = {getattr(m, "n_features_in_", None) for m in models} - {None}
    if len(widths) != 1:
        return None
    row = np.zeros((1, int(widths.pop())))
    names = getattr(models[0], "feature_names_in_", None)
    if names is not None:
        try:
            import pandas as pd

            row = pd.DataFrame(row, columns=list(names))
        except ImportError:
            pass
    with warnings.catch_warnings():  # the model's warnings about a row of zeros
        warnings.simplefilter("ignore")
        try:
            return [call(m, row) for m in models]
        except Exception:  # it cannot predict on zeros: not probed
            return None


class PrivateOnlineConformalRegressor(_OnlineMixin, PrivateConformalRegressor):
    """Online prediction intervals for a deployed regressor, ε-DP over the whole stream.

    Scores are those of :class:`~dpuq.PrivateConformalRegressor` with the public ``bound``;
    a threshold ``t >= 1`` gives the whole line, ``t < 0`` the empty interval (returned as
    ``lower = +inf > upper = -inf``).

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> X, y = load_diabetes(return_X_y=True)
    >>> model = Ridge(alpha=0.1).fit(X[:150], y[:150])
    >>> reg = PrivateOnlineConformalRegressor(model, epsilon=2.0, bound=300.0, random_state=0)
    >>> reg = reg.update(X[150:400], y[150:400])
    >>> reg.predict_interval(X[400:402]).sets.shape
    (2, 2)
    """

    _predict_verb = "predict_interval"
    n_bins = "auto"
    method = "certified"
    n_groups = None
    prefit = True

    def __init__(
        self,
        estimator: Any,
        *,
        epsilon: float,
        bound: float,
        confidence_level: float = 0.9,
        conformity_score: str = "absolute",
        step: float = DEFAULT_STEP,
        block_size: int | str = "auto",
        initial: float = DEFAULT_INITIAL,
        random_state: RandomState = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.bound = bound
        self.confidence_level = confidence_level
        self.conformity_score = conformity_score
        self.step = step
        self.block_size = block_size
        self.initial = initial
        self.random_state = random_state

    def _check_model_settings(self) -> None:
        self._check_params()
        models = list(self._model()) if self._is_pair() else [self._model()]
        if self.conformity_score == "absolute" and len(models) == 2:
            raise TypeError(
                "conformity_score='absolute' needs one estimator returning point predictions, "
                "not a pair"
            )
        if not all(hasattr(m, "predict") or callable(m) for m in models):
            raise TypeError("estimator(s) must have predict or be callable")
        self._probe_outputs(models)

    def _probe_outputs(self, models) -> None:
        """The output shape the score needs, on a public row of zeros, before the charge.

        As the classifier runs its score on a dummy row: nothing here is data. ``"cqr"`` needs
        (n, 2) from one model or (n,) from each of a pair, ``"absolute"`` (n,); a mismatch made
        every ``update`` and ``predict_interval`` fail after ``start`` had charged. The row is
        ``n_features_in_`` wide (a DataFrame with the model's ``feature_names_in_``); a model
        that gives no width, or cannot predict on zeros (e.g. an unknown category), is not
        probed, and its first rows show a mismatch.
        """
        outputs = _on_a_row_of_zeros(models, self._call)
        if outputs is None:
            return
        shapes = [np.shape(out) for out in outputs]
        one = self.conformity_score == "cqr" and len(models) == 1
        if shapes != ([(1, 2)] if one else [(1,)] * len(models)):
            need = "(n, 2) quantile predictions (lower, upper)" if one else "(n,) predictions"
            if one:
                hint = "pass a pair (lower, upper) of estimators or conformity_score='absolute'"
            elif self.conformity_score == "cqr":
                hint = "each of the pair (lower, upper) gives one prediction per row"
            else:
                hint = "use conformity_score='cqr' for an estimator of (n, 2) quantiles"
            raise ValueError(
                f"conformity_score={self.conformity_score!r} needs {need}; on a public row of "
                f"zeros the estimator(s) returned shape(s) {', '.join(map(str, shapes))}: {hint}"
            )

    @property
    def bound_(self) -> float:
        return self._check_params()[2]

    @property
    def score_(self) -> str:
        return self._check_score()

    def _multi_level(self) -> bool:
        return False

    def _stream_scores(self, X, y) -> np.ndarray:
        bound = self.bound_
        if self.conformity_score == "absolute":
            return absolute_residual_scores(self._point(X), y, bound=bound)
        return cqr_scores(self._quantiles(X), y, bound=bound)

    def predict_interval(self, X, groups=None) -> ConformalPrediction:
        """``(y_pred, intervals)``, intervals (n, 2) at the current threshold (class docstring)."""
        if groups is not None:
            raise ValueError("groups= is not supported by the online regressor")
        t = self._tracker().threshold
        if t >= 0.0:
            return super().predict_interval(X)
        y_pred = self.predict(X)
        n = y_pred.shape[0]
        return ConformalPrediction(
            y_pred, np.column_stack((np.full(n, np.inf), np.full(n, -np.inf)))
        )
