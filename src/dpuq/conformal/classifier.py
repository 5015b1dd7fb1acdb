"""``PrivateConformalClassifier``: scikit-learn style private prediction sets."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpuq._validation import check_epsilon, check_labels, check_probabilities
from dpuq.conformal._base import (
    _deprecated_score_alias,
    _hide_deprecated_kwargs,
    _PrivateConformalBase,
    model_errors_hidden,
)
from dpuq.conformal.class_conditional import class_prediction_sets
from dpuq.conformal.outputs import ConformalPrediction
from dpuq.conformal.scores import score_function
from dpuq.conformal.sets import prediction_sets
from dpuq.mechanisms.randomness import RandomState
from dpuq.scale.sources import is_dask_collection

__all__ = ["PrivateConformalClassifier"]


class PrivateConformalClassifier(_PrivateConformalBase):
    """Split-conformal prediction sets whose threshold is released with ε-DP.

    Wraps any fitted classifier with ``predict_proba`` (or a plain callable returning class
    probabilities). ``conformalize`` computes conformity scores on held-out calibration data
    and releases the threshold with :func:`dpuq.calibrate`; the fitted object then holds only
    released values (threshold, level, bins, privacy report), never calibration scores,
    features or labels, so it can be shared.

    Privacy: ε-DP for the calibration set, replace-one with ``n`` public. The model itself is
    not protected by this class: train it on other people, or privately (``dpuq.training``).

    Parameters
    ----------
    estimator : object with ``predict_proba``, or callable
        The classifier. If ``prefit=False`` it must also have ``fit``.
    epsilon : float
        Privacy parameter of the calibration release, > 0 (keyword-only, no default).
    confidence_level : float or sequence of float, default 0.9
        Target coverage ``1 - alpha``; ``alpha`` must be in (0, 0.5]. A sequence releases one
        threshold per level jointly for the same total ε (``dpuq.calibrate(alpha=[...])``),
        and ``predict_set``'s sets have shape (n, n_classes, L), as MAPIE's do.
    conformity_score : {"lac", "aps", "raps"}, default "lac"
        The conformity score (MAPIE's name for it). ``score=`` is a deprecated alias, kept
        for one release (it warns).
    n_bins : "auto" or int, default "auto"
    method : {"certified", "paper"}, default "certified"
        Calibration method of :func:`dpuq.calibrate` (the certified level, or Algorithm 3).
    prefit : bool, default True
        If False, ``fit(X, y)`` trains a clone of the estimator into ``estimator_`` (the
        ``estimator`` parameter itself is left untouched, as in scikit-learn).
    score_params : dict, optional
        Extra keyword arguments of the score (e.g. ``{"lam": 0.01, "k_reg": 5}`` for RAPS).
        APS and RAPS are randomized by default here (``{"randomized": False}`` turns it off):
        a confident model puts almost all deterministic APS scores in the top bin, where no
        private threshold can separate them (docs/explanation/calibration.md).
    random_state : None or int
        None (default) draws fresh OS entropy at every release: use it for real releases. An
        int seed gives the same release at every call on the same data (experiments and tests
        only; the report then says "seeded"). A Generator is refused: it would be copied into
        clones and pickles (see :mod:`dpuq._estimator`).
    class_conditional : bool, default False
        Release one threshold per class (:func:`dpuq.calibrate_by_class`): coverage
        ``>= confidence_level`` for every class, not only on average; still ε-DP under
        replace-one in total. Classes with few calibration points get large sets.

    Attributes
    ----------
    threshold_ : float, or ndarray of shape (n_classes,) when ``class_conditional``
    calibration_ : PrivateCalibration or ClassConditionalCalibration
    privacy_report_ : PrivacyReport
    classes_ : ndarray
    estimator_ : object
        The trained clone of ``estimator`` (``prefit=False`` only).

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_digits(return_X_y=True)
    >>> model = LogisticRegression(max_iter=2000).fit(X[:800], y[:800])
    >>> clf = PrivateConformalClassifier(model, epsilon=1.0, random_state=0)
    >>> clf = clf.conformalize(X[800:1600], y[800:1600])
    >>> y_pred, sets = clf.predict_set(X[1600:])  # as in MAPIE 1.x
    >>> y_pred.shape, sets.shape
    ((197,), (197, 10))
    """

    _predict_verb = "predict_set"
    _estimator_type = "classifier"

    @_hide_deprecated_kwargs
    def __init__(
        self,
        estimator: Any,
        *,
        epsilon: float,
        confidence_level: float = 0.9,
        conformity_score: str = "lac",
        n_bins: int | str = "auto",
        method: str = "certified",
        prefit: bool = True,
        score_params: dict | None = None,
        random_state: RandomState = None,
        class_conditional: bool = False,
        **deprecated: Any,
    ) -> None:  # ``**deprecated``: the ``score=`` alias only (hidden from the signature)
        self.estimator = estimator
        self.epsilon = epsilon
        self.confidence_level = confidence_level
        self.conformity_score = _deprecated_score_alias(conformity_score, "lac", deprecated)
        self.n_bins = n_bins
        self.method = method
        self.prefit = prefit
        self.score_params = score_params
        self.random_state = random_state
        self.class_conditional = class_conditional

    @classmethod
    def from_logits(
        cls, model: Any, *, temperature: float = 1.0, **params: Any
    ) -> PrivateConformalClassifier:
        """A private conformal classifier on a model that outputs logits.

        Probabilities are ``softmax(logits / temperature)``
        (:class:`~dpuq.conformal.logits.LogitsModel`): the model may be a torch ``nn.Module``,
        a scikit-learn model (``decision_function``) or any callable returning (n, K) logits.
        The temperature must be public: fixed in advance or fitted on other people than the
        calibration set. Other keyword arguments are those of the constructor.

        Examples
        --------
        >>> import numpy as np
        >>> logit_fn = lambda X: np.column_stack([X[:, 0], -X[:, 0]])
        >>> clf = PrivateConformalClassifier.from_logits(logit_fn, epsilon=1.0, random_state=0)
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(2000, 1))
        >>> y = (rng.random(2000) < 1 / (1 + np.exp(2 * X[:, 0]))).astype(int)
        >>> clf.conformalize(X, y).predict_set(X[:2]).sets.shape
        (2, 2)
        """
        from dpuq.conformal.logits import LogitsModel

        return cls(LogitsModel(model, temperature), **params)

    # ------------------------------------------------------------------ helpers
    def _proba(self, X, name: str = "X") -> np.ndarray:
        """The model's class probabilities on ``X`` (named ``name`` in errors), checked."""
        est = self._model()
        if not (hasattr(est, "predict_proba") or callable(est)):
            raise TypeError("estimator must have predict_proba or be a callable")
        with model_errors_hidden(X, name):  # X checked first: its errors can quote features
            probs = est.predict_proba(X) if hasattr(est, "predict_proba") else est(X)
        probs = check_probabilities(probs, "estimator's probabilities")
        if hasattr(self, "classes_") and probs.shape[1] != len(self.classes_):
            raise ValueError(
                f"estimator returned {probs.shape[1]} columns but there are "
                f"{len(self.classes_)} classes"
            )
        return probs

    def _score_matrix(self, probs: np.ndarray, labels=None, rng=None, uniforms=None):
        params = dict(self.score_params or {})
        if self.conformity_score in ("aps", "raps"):
            params.setdefault("randomized", True)
        if params.get("randomized") and uniforms is not None:  # a chunk of Dask rows
            params["uniforms"] = uniforms
        elif params.get("randomized"):
            params["random_state"] = self._rng() if rng is None else rng
        return score_function(self.conformity_score)(probs, labels, **params)

    def _label_index(self, y) -> np.ndarray:
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-dimensional, got shape {y.shape}")
        classes = self.classes_
        pos = np.searchsorted(classes, y)
        pos_clipped = np.minimum(pos, len(classes) - 1)
        bad = classes[pos_clipped] != y
        if bad.any():
            raise ValueError(
                f"y_cal has label(s) not among the classes {classes.tolist()} of the "
                "estimator (no count or value is shown: they depend on the data)"
            )
        return pos

    def _set_classes(self, y=None, n_columns: int | None = None) -> None:
        if hasattr(self._model(), "classes_"):
            self.classes_ = np.asarray(self._model().classes_)
        elif n_columns is not None:
            self.classes_ = np.arange(n_columns)
        elif y is not None:
            self.classes_ = np.unique(np.asarray(y))

    def _dask_scores(self, X, y, *, rng=None, labels: bool = False):
        """Scores on Dask ``X``, ``y``: lazy, one task per row block, never gathered.

        This estimator hands its block scoring function to :func:`dpuq.scale._dask.map_scores`
        (the scale layer knows no estimator). Randomised APS/RAPS draw their per-point ``U``
        on the workers: a seed is drawn from ``rng`` on the client
        (:func:`dpuq.mechanisms.randomness.derive_seed`, where the in-memory scoring draws it),
        and each row block draws its rows' uniforms from it
        (:func:`~dpuq.mechanisms.randomness.row_uniforms`), equal to the in-memory draws.
        ``labels=True`` also returns the lazy class indices (class-conditional calibration).
        """
        from dpuq.mechanisms.randomness import derive_seed, row_uniforms
        from dpuq.scale._dask import map_scores

        params = dict(self.score_params or {})
        randomized = params.get("randomized", self.conformity_score in ("aps", "raps"))
        if not hasattr(self, "classes_"):
            self._set_classes()
        if not hasattr(self, "classes_"):
            raise ValueError(
                "the classes are unknown: call fit(X, y) first or use an estimator with classes_"
            )
        seed = derive_seed(self._rng() if rng is None else rng) if randomized else None

        def block_scores(xb: np.ndarray, yb: np.ndarray, start: int) -> np.ndarray:
            if xb.shape[0] == 0:
                return np.empty(0)
            u = None if seed is None else row_uniforms(seed, start, start + xb.shape[0])
            probs = self._proba(xb, "X_cal")
            return self._score_matrix(probs, self._label_index(yb), uniforms=u)

        def block_labels(xb: np.ndarray, yb: np.ndarray) -> np.ndarray:
            return self._label_index(yb).astype(np.int64)

        scores = map_scores(block_scores, X, y, with_offset=True)
        if not labels:
            return scores
        return scores, map_scores(block_labels, X, y, dtype=np.int64)

    # ------------------------------------------------------------------ API
    def fit(self, X, y) -> PrivateConformalClassifier:
        """Train the estimator on training data when ``prefit=False``; returns self."""
        check_epsilon(self.epsilon)
        self._alpha()
        if not self.prefit:
            self._fit_model(X, y)
        self._set_classes(y=y)
        return self

    def _calibration_scores(self, X_cal, y_cal, rng) -> tuple[np.ndarray, np.ndarray]:
        probs = self._proba(X_cal, "X_cal")
        if not hasattr(self, "classes_"):
            self._set_classes(n_columns=probs.shape[1])
        if len(np.asarray(y_cal)) != probs.shape[0]:
            raise ValueError("X_cal and y_cal have different numbers of rows")
        labels = self._label_index(y_cal)
        return self._score_matrix(probs, labels, rng), labels

    def conformalize(
        self, X_cal, y_cal, *, ledger=None, dataset=None
    ) -> PrivateConformalClassifier:
        """Release the ε-DP threshold from calibration data; returns self.

        The calibration data and their scores are not kept. With ``ledger``/``dataset``
        (:class:`dpuq.Ledger` or its path, and a data set name) ε is charged to the data set's
        budget before any noise is drawn, or the release is refused.
        """
        epsilon = check_epsilon(self.epsilon)
        alpha = self._alpha()
        score_function(self.conformity_score)
        if self.class_conditional:  # settings errors before any charge
            self._check_grouped(alpha, "class_conditional=True")
        self._check_bins()
        self._warn_if_released(epsilon)
        rng = self._rng()  # one fresh generator per release, never stored
        if is_dask_collection(X_cal):  # scores (and labels) computed on the workers
            self._set_classes()
            if self.class_conditional:
                scores, labels = self._dask_scores(X_cal, y_cal, rng=rng, labels=True)
            else:
                scores, labels = self._dask_scores(X_cal, y_cal, rng=rng), None
        else:
            scores, labels = self._calibration_scores(X_cal, y_cal, rng)
        what = "PrivateConformalClassifier.conformalize"
        if labels is not None and self.class_conditional and not is_dask_collection(labels):
            check_labels(labels, len(self.classes_), labels.size, "y_cal")
        cal, receipt = self._charge_and_release(
            scores,
            labels if self.class_conditional else None,
            len(self.classes_),
            alpha,
            epsilon,
            rng,
            ledger=ledger,
            dataset=dataset,
            what=what,
            labels_name="y_cal",
            settings={
                "alpha": alpha,
                "n": int(np.shape(scores)[0]) if labels is not None else None,
                "method": self.method,
                "score": self.conformity_score,
                "class_conditional": bool(self.class_conditional),
            },
        )
        self._store_release(cal, self._seeded(cal.privacy_report), receipt, what)
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities of the wrapped estimator."""
        return self._proba(X)

    def predict(self, X) -> np.ndarray:
        """Point predictions: the most probable class."""
        return self._labels(self._proba(X))

    def predict_set(self, X) -> ConformalPrediction:
        """Point predictions and boolean prediction sets, ``(y_pred, sets)`` as in MAPIE 1.x.

        ``y_pred``: the most probable class, shape (n,). ``sets``: shape (n, n_classes),
        columns in ``classes_`` order; with several confidence levels (n, n_classes, L),
        levels in the order given. Write ``y_pred, sets = clf.predict_set(X)``. Using the
        result as the sets array (the output before MAPIE's pair) still works for one
        release, with a ``FutureWarning`` (:mod:`dpuq.conformal.outputs`).
        """
        self._check_conformalized()
        probs = self._proba(X)
        return ConformalPrediction(self._labels(probs), self._sets(probs))

    def _labels(self, probs: np.ndarray) -> np.ndarray:
        if not hasattr(self, "classes_"):
            self._set_classes(n_columns=probs.shape[1])
        return self.classes_[np.argmax(probs, axis=1)]

    def _sets(self, probs: np.ndarray) -> np.ndarray:
        """The boolean sets from class probabilities (no point predictions)."""
        matrix = self._score_matrix(probs)
        if self._multi_level():
            return np.stack([prediction_sets(matrix, t) for t in self.threshold_], axis=-1)
        if np.ndim(self.threshold_):  # class-conditional: column y against threshold_[y]
            return class_prediction_sets(matrix, self.threshold_)
        return prediction_sets(matrix, self.threshold_)

    def _covered(self, X, y) -> np.ndarray:
        """Whether each row's label is in its set: (n,) or (n, L)."""
        self._check_conformalized()
        sets = self._sets(self._proba(X))
        labels = self._label_index(y)
        if labels.size != sets.shape[0]:
            raise ValueError(f"X has {sets.shape[0]} rows but y has {labels.size}")
        return sets[np.arange(labels.size), labels]
