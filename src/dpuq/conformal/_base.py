"""What the private conformal estimators share: parameter checks, randomness, stored state.

The estimators are scikit-learn meta-estimators (:class:`~dpuq._estimator.PrivateEstimator`):
``get_params``/``set_params``, ``clone`` and pickling work; ``__init__`` stores its arguments
unchecked; ``fit``/``conformalize`` check them. The wrapped model is used as given when
``prefit=True`` and cloned into ``estimator_`` and trained when ``prefit=False`` (the
``estimator`` parameter itself is never modified).
"""

from __future__ import annotations

import contextlib
import copy
import warnings

import numpy as np
from sklearn.base import MetaEstimatorMixin

from dpuq._estimator import NotFittedError, PrivateEstimator, RepeatedReleaseWarning
from dpuq._validation import alpha_from_confidence, check_alpha, check_n_bins


def _deprecated_score_alias(conformity_score, default: str, kwargs: dict):
    """``conformity_score``, or the deprecated ``score=`` alias (kept for one release).

    ``score`` is not a constructor parameter any more: it would shadow scikit-learn's
    ``score(X, y)``. Any other unknown keyword is a TypeError, as for a normal signature.
    """
    unknown = set(kwargs) - {"score"}
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {sorted(unknown)}")
    if "score" not in kwargs:
        return conformity_score
    if conformity_score != default:
        raise TypeError("pass conformity_score= only (score= is its deprecated alias)")
    warnings.warn(
        "score= is deprecated and will be removed in the next release: use conformity_score= "
        "(score(X, y) is now scikit-learn's method, the empirical coverage)",
        FutureWarning,
        stacklevel=3,
    )
    return kwargs["score"]


def _hide_deprecated_kwargs(init):
    """Give ``init`` the signature without its ``**deprecated`` catch-all (returns ``init``).

    scikit-learn reads the parameters from the signature; the catch-all only carries the
    deprecated ``score=`` alias and must not look like a parameter (``set_params`` and the
    estimator checks would pass values to it).
    """
    import inspect

    sig = inspect.signature(init)
    kept = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    init.__signature__ = sig.replace(parameters=kept)
    return init


def check_features(X, name: str = "X"):
    """``X`` unchanged, once it is an array of at least 2 dimensions (rows first) of numbers.

    Runs before the wrapped model sees ``X``, which is a person's features: a model's own
    error can quote them (scikit-learn's "Expected 2D array, got 1D array instead:
    array=[...]", or the string it could not convert), so those cases are refused here, by
    name, with the shape at most. Complex data are refused. Text and categories (an object or
    string array, a DataFrame with such columns) pass: a pipeline may encode them; the model's
    errors on them are hidden instead (:func:`model_errors_hidden`), since they can quote an
    entry. Finite values
    are not required (some models take NaN; theirs are not errors that quote values). Sparse
    matrices, torch tensors (shape only: a network may take images) and Dask collections
    (checked block by block, where the blocks are scored) pass through unconverted.

    Examples
    --------
    >>> check_features([[0.5, 1.0]])  # returned as given
    [[0.5, 1.0]]
    >>> check_features(np.array([0.2941234, 1.5]), "X_cal")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: X_cal must be 2-dimensional (n_samples, n_features), got shape (2,). Reshape ...
    """
    _holds_text(X, name)
    return X


def _holds_text(X, name: str) -> bool:
    """:func:`check_features`' checks; True where ``X`` holds entries that are not numbers
    (text, categories: an error of the model on them can quote one)."""
    from scipy import sparse

    from dpuq._validation import to_ndarray
    from dpuq.scale.sources import is_dask_collection

    if is_dask_collection(X) or sparse.issparse(X):
        return False
    torch_tensor = type(X).__module__.split(".")[0] == "torch" and hasattr(X, "is_complex")
    arr = X if torch_tensor else to_ndarray(X, name)
    if arr.ndim < 2:
        raise ValueError(
            f"{name} must be 2-dimensional (n_samples, n_features), got shape "
            f"{tuple(arr.shape)}. Reshape your data: {name}.reshape(-1, 1) for one feature, "
            f"{name}.reshape(1, -1) for one sample"
        )
    kind = "c" if torch_tensor and X.is_complex() else "f" if torch_tensor else arr.dtype.kind
    if kind == "c":
        raise ValueError(f"{name}: Complex data not supported; pass real numbers")
    if kind in "OUS":  # text or categories: the model decides (its errors are hidden)
        try:
            arr.astype(np.float64)
        except (TypeError, ValueError):
            return True
        return False
    if kind not in "biuf":
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    return False


@contextlib.contextmanager
def model_errors_hidden(X, name: str = "X"):
    """Around the wrapped model's call on ``X``, after :func:`check_features`' checks: where
    ``X`` holds text or categories, an error the model raises is replaced by its type (its
    message can quote an entry, which is data, e.g. "could not convert string to float:
    '...'"). Numeric ``X`` passes through as is.

    Examples
    --------
    >>> with model_errors_hidden(np.array([["a", "SECRET"]]), "X"):  # doctest: +ELLIPSIS
    ...     float("SECRET")
    Traceback (most recent call last):
    ValueError: the estimator raised ValueError on X; its message is not shown: ...
    """
    text = _holds_text(X, name)
    try:
        yield
    except Exception as exc:
        if not text:
            raise
        raise ValueError(
            f"the estimator raised {type(exc).__name__} on {name}; its message is not shown: "
            f"it may quote {name}'s entries, which are data (encode text and categories in a "
            "pipeline the estimator runs, or check the model on public rows)"
        ) from None


def _clone_model(est):
    """An unfitted copy of ``est``: scikit-learn's ``clone`` or a deep copy."""
    from sklearn.base import clone

    return clone(est) if hasattr(est, "get_params") else copy.deepcopy(est)


class _PrivateConformalBase(MetaEstimatorMixin, PrivateEstimator):
    """Base for estimators with ``confidence_level``, ``random_state`` and ``threshold_``."""

    #: what ``_check_conformalized`` tells the user to call conformalize before
    _predict_verb = "predicting"
    #: "classifier" or "regressor" (scikit-learn's estimator type)
    _estimator_type = "classifier"

    def _alpha(self) -> float | list[float]:
        """``1 - confidence_level``; a list for a sequence of levels (one joint release)."""
        cl = self.confidence_level
        if isinstance(cl, list | tuple | np.ndarray):
            if len(cl) == 0:
                raise ValueError("confidence_level must hold at least one level")
            alphas = [self._one_alpha(c) for c in cl]
            if len(set(alphas)) != len(alphas):
                raise ValueError(f"confidence_level must not repeat a level, got {list(cl)}")
            return alphas
        return self._one_alpha(cl)

    @staticmethod
    def _one_alpha(cl) -> float:
        if isinstance(cl, bool) or not isinstance(cl, int | float | np.floating):
            raise TypeError(f"confidence_level must be a number or a sequence, got {cl!r}")
        if not 0.5 <= float(cl) < 1.0:
            raise ValueError(f"confidence_level must be in [0.5, 1), got {cl!r}")
        return check_alpha(alpha_from_confidence(cl), "1 - confidence_level")

    def _multi_level(self) -> bool:
        """True when the release holds several levels (outputs get a last axis of size L)."""
        from dpuq.conformal.multilevel import MultiLevelCalibration

        return isinstance(getattr(self, "calibration_", None), MultiLevelCalibration)

    def score(self, X, y, sample_weight=None) -> float | np.ndarray:
        """Empirical coverage of the prediction sets or intervals on ``(X, y)``.

        The share of rows whose label is in its set (classifier) or whose outcome is in its
        interval (regressor), weighted by ``sample_weight``. One confidence level: a float
        (scikit-learn's scorer convention). Several levels: an array with one coverage per
        level, in the order given, as MAPIE's coverage metrics return; scikit-learn's model
        selection needs one number, so use one level there (or a scorer that picks one).
        Before ``conformalize`` there are no sets: the wrapped model's
        own ``score(X, y)`` is returned (accuracy, R²), so scikit-learn's model selection
        works on ``fit`` alone. Not private: evaluate on data whose privacy is not at stake
        (test data), never on the calibration set.
        """
        if not hasattr(self, "threshold_"):
            model = self._model()
            if not hasattr(model, "score"):
                raise TypeError(
                    f"{type(self).__name__} is not conformalized and its estimator has no "
                    "score method: call conformalize(X_cal, y_cal) first"
                )
            with model_errors_hidden(X):
                return float(model.score(X, y, sample_weight=sample_weight))
        covered = self._covered(X, y)  # (n,) or (n, L)
        if covered.ndim == 2:
            return np.average(covered, axis=0, weights=sample_weight)
        return float(np.average(covered, weights=sample_weight))

    def _rng(self) -> np.random.Generator:
        """A fresh generator for one release (derived from ``random_state``, never cached)."""
        return self._release_rng()

    def _check_bins(self) -> None:
        """``n_bins`` checked before the charge (a refused setting costs nothing)."""
        if isinstance(self.n_bins, str):
            if self.n_bins != "auto":
                raise ValueError(f"n_bins must be 'auto' or an integer >= 2, got {self.n_bins!r}")
        else:
            check_n_bins(self.n_bins)

    def _check_grouped(self, alpha, what: str) -> None:
        """Grouped (Mondrian) calibration takes one level and the certified rank method:
        refused before any charge, naming ``what`` (the setting that asked for groups)."""
        if isinstance(alpha, list):
            raise ValueError(f"{what} takes one confidence_level, not several")
        if self.method != "certified":
            raise ValueError(
                f"{what} uses the certified rank method; "
                f"method={self.method!r} is not available for it"
            )

    def _warn_if_released(self, epsilon: float, stacklevel: int = 3) -> None:
        """Warn that a second ``conformalize`` spends ε again (the estimator's state only)."""
        if hasattr(self, "threshold_"):
            warnings.warn(
                f"this {type(self).__name__} already holds a release: conformalize again "
                f"spends epsilon = {epsilon:g} again on the calibration people (the privacy "
                "costs of the two releases add up)",
                RepeatedReleaseWarning,
                stacklevel=stacklevel,
            )

    def _record_trail(self, receipt, what: str) -> None:
        """Keep the paper trail of the release just made (public: the ledger's numbers)."""
        from dpuq.privacy.ledger import release_trail

        self.release_trail_ = release_trail(receipt, what)

    def _release_charged(self, release, epsilon, ledger, dataset, what, settings):
        """``release(ledger, dataset)`` (a dpuq release function's call) charged by that
        release itself, after all its own checks, under this estimator's name and settings (ε,
        or 0 when public quantities alone decide the release). Returns it and the receipt."""
        from dpuq.privacy._ledger_gate import _DeferredCharge
        from dpuq.privacy.ledger import CALLER_CHARGED, Ledger, charge

        if ledger is None and dataset is None:
            charge(None, None, epsilon, what=what, random_state=self.random_state)  # required?
            return release(CALLER_CHARGED, None), None
        if dataset is None:
            raise ValueError("ledger= needs dataset= (the name of the data set being released)")
        if not isinstance(ledger, Ledger):
            ledger = Ledger(ledger, create=False) if ledger is not None else Ledger(create=False)
        hook = _DeferredCharge(
            ledger, dataset, what=what, output=None, seeded=self.random_state is not None,
            settings=settings, note=None, status="spent",
        )  # fmt: skip
        return release(hook, dataset), hook.receipt

    def _charge_and_release(
        self,
        scores,
        labels,
        n_labels,
        alpha,
        epsilon,
        rng,
        *,
        ledger,
        dataset,
        what,
        settings,
        labels_name="labels",
    ):
        """Validate lazy input, then release, charged by the release after its own checks: the
        steps both estimators share.

        ``labels`` None: one marginal threshold (:func:`dpuq.calibrate`, one or several
        levels); otherwise one threshold per class or group (:func:`dpuq.calibrate_by_class`
        with ``n_labels`` classes). The caller has checked every setting and every in-memory
        input; lazy (Dask) scores and labels are checked here, chunk-wise, before the charge
        (:func:`dpuq.scale._dask.validate_lazy`): a malformed label costs no ε on Dask either.
        The release's own data-free checks (bins, the work cap, the class schedule) also come
        before the charge. Returns the release and the ledger's receipt.
        """
        from dpuq.conformal.calibration import calibrate
        from dpuq.conformal.class_conditional import calibrate_by_class
        from dpuq.scale.sources import is_dask_collection

        if is_dask_collection(scores):
            from dpuq.scale._dask import validate_lazy

            validate_lazy(scores, labels, n_labels, labels_name=labels_name)

        def release(charged, name):
            if labels is None:  # charges what it costs: 0 when public quantities decide
                return calibrate(
                    scores, alpha=alpha, epsilon=epsilon, n_bins=self.n_bins,
                    method=self.method, random_state=rng, ledger=charged, dataset=name,
                )  # fmt: skip
            return calibrate_by_class(
                scores, labels, n_labels, alpha=alpha, epsilon=epsilon, n_bins=self.n_bins,
                random_state=rng, ledger=charged, dataset=name,
            )  # fmt: skip

        return self._release_charged(release, epsilon, ledger, dataset, what, settings)

    def _store_release(self, cal, report, receipt, what: str) -> None:
        """Keep the release (with its final privacy report) and its paper trail: the fitted
        attributes ``calibration_``, ``threshold_`` (an array for several levels, classes or
        groups), ``privacy_report_``, ``n_calibration_`` and ``release_trail_``."""
        import dataclasses

        self.calibration_ = dataclasses.replace(cal, privacy_report=report)
        self.threshold_ = (
            self.calibration_.threshold_array()
            if hasattr(self.calibration_, "threshold_array")
            else self.calibration_.threshold
        )
        self.privacy_report_ = report
        self.n_calibration_ = self.calibration_.n
        self._record_trail(receipt, what)

    def _model(self):
        """The model in use: the trained clone ``estimator_`` if ``fit`` made one."""
        return getattr(self, "estimator_", self.estimator)

    def _fit_model(self, X, y) -> None:
        """``prefit=False``: train a clone of each wrapped model into ``estimator_``."""
        est = self.estimator
        pair = isinstance(est, tuple | list) and len(est) == 2
        models = list(est) if pair else [est]
        for model in models:
            if not hasattr(model, "fit"):
                raise TypeError("prefit=False needs estimator(s) with a fit method")
        fitted = [_clone_model(model) for model in models]
        for model in fitted:
            model.fit(X, y)
        self.estimator_ = type(est)(fitted) if pair else fitted[0]

    def _check_conformalized(self) -> None:
        if not hasattr(self, "threshold_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not conformalized yet: call "
                f"conformalize(X_cal, y_cal) before {self._predict_verb}"
            )

    def save_release(self, path, *, overwrite: bool = False) -> None:
        """Write the released state (threshold, settings, privacy report; not the model) to
        ``path`` in the JSON format of ``dpuq calibrate -o``, atomically; ``dpuq predict``
        reads it. Without ``overwrite`` an existing file is an error."""
        from dpuq.conformal.release_io import estimator_record, write_calibration

        write_calibration(path, estimator_record(self), overwrite=overwrite)

    @classmethod
    def load_release(cls, path, estimator):
        """The estimator wrapping ``estimator`` (the model) in the released state read from
        ``path`` (written by :meth:`save_release` or ``dpuq calibrate -o``); no privacy cost."""
        from dpuq.conformal.calibration import PrivateCalibration
        from dpuq.conformal.release_io import read_calibration, restore_estimator

        return restore_estimator(cls, read_calibration(path, "path"), estimator, PrivateCalibration)

    @property
    def n_features_in_(self) -> int:
        """Number of features the wrapped model was trained on (when it says so)."""
        model = getattr(self, "estimator_", self.estimator if self.prefit else None)
        if model is None or not hasattr(model, "n_features_in_"):
            raise AttributeError(f"{type(self).__name__} has no n_features_in_ (not fitted?)")
        return model.n_features_in_

    def __sklearn_tags__(self):
        """Tags of a classifier/regressor whose inputs are those of the wrapped model."""
        from sklearn.utils import ClassifierTags, RegressorTags, get_tags

        tags = super().__sklearn_tags__()
        tags.estimator_type = self._estimator_type
        if self._estimator_type == "classifier":
            tags.classifier_tags = ClassifierTags()
        else:
            tags.regressor_tags = RegressorTags()
        if hasattr(self.estimator, "__sklearn_tags__"):
            tags.input_tags = get_tags(self.estimator).input_tags
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "estimator_") or hasattr(self, "threshold_") or bool(self.prefit)
