"""Choosing the public regression bound ``B`` from training data, with held-out residuals.

Private regression intervals (:class:`~dpuq.PrivateConformalRegressor`) map residuals to scores
in [0, 1] with a public bound ``B``: ``min(|y - ŷ| / B, 1)``. Every calibration residual beyond
``B`` scores 1, so if ``B`` is below the residual quantile the release needs (about the
``1 - α`` quantile, inflated for privacy), the released threshold is 1 and the intervals are
the whole line. Residuals of a model on the data it was trained on are smaller than on new
people (over-fitting), so a ``B`` from in-sample residuals is too small exactly when it
matters: :func:`public_bound` uses cross-validated (held-out) residuals and warns otherwise.

Privacy: ``B`` must not depend on the calibration people. Computed here from the *training*
people, it is a non-private function of them: fine when the training data are not protected
(or already public), otherwise release it privately with ``epsilon=`` (an ε-DP quantile of the
residuals capped at a public ``upper``, charged to the training people's budget) or take it
from domain knowledge.
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpuq._validation import (
    alpha_from_confidence,
    as_array,
    check_array_1d,
    check_epsilon,
    check_in_open_unit,
)
from dpuq.mechanisms.randomness import RandomState
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = ["InSampleResidualsWarning", "PublicBound", "public_bound"]


class InSampleResidualsWarning(UserWarning):
    """The residuals come from the data the model was trained on: B is likely too small."""


@dataclass(frozen=True)
class PublicBound:
    """A suggested public bound ``B`` and how it was obtained (``float(b)`` gives ``B``).

    Attributes
    ----------
    bound : float
        The suggested ``B > 0``.
    quantile : float
        The residual quantile it is.
    n : int
        Number of residuals used.
    held_out : bool
        True if the residuals were held out (cross-validation or data the model never saw).
    privacy_report : PrivacyReport or None
        The ε-DP release of ``B`` (``epsilon=``), or None: then ``B`` is a non-private function
        of the training data.
    aim : str
        What residual coverage ``B`` aims for and why (in words).
    whole_line_probability : float or None
        With ``n_calibration`` and ``calibration_epsilon``: the planned probability that the
        calibration at those settings gives whole-line intervals with this ``B``, if the
        calibration residuals behave as the held-out training ones.
    """

    bound: float
    quantile: float
    n: int
    held_out: bool
    privacy_report: PrivacyReport | None = None
    aim: str = ""
    whole_line_probability: float | None = None

    def __float__(self) -> float:
        return self.bound


def _predict(est, X) -> np.ndarray:
    if hasattr(est, "predict"):
        return np.asarray(as_array(est.predict(X), "predictions"), dtype=float)
    if callable(est):
        return np.asarray(as_array(est(X), "predictions"), dtype=float)
    raise TypeError("estimator must have a predict method or be a callable")


def _clone(est):
    from sklearn.base import clone

    return clone(est) if hasattr(est, "get_params") else copy.deepcopy(est)


def _held_out_predictions(estimator, X, y, cv: int, random_state) -> np.ndarray:
    """Cross-validated predictions: each row predicted by a model that never saw it."""
    from sklearn.model_selection import KFold

    models = list(estimator) if isinstance(estimator, tuple | list) else [estimator]
    for model in models:
        if not hasattr(model, "fit"):
            raise TypeError("cross-validation (cv=k) needs estimator(s) with a fit method")
    folds = KFold(n_splits=cv, shuffle=True, random_state=random_state)
    X = np.asarray(X) if not hasattr(X, "iloc") else X
    out = np.empty((len(y), len(models)))
    for train, test in folds.split(np.zeros(len(y))):
        Xtr = X.iloc[train] if hasattr(X, "iloc") else X[train]
        Xte = X.iloc[test] if hasattr(X, "iloc") else X[test]
        for k, model in enumerate(models):
            fitted = _clone(model)
            fitted.fit(Xtr, y[train])
            pred = _predict(fitted, Xte)
            out[test, k] = pred if pred.ndim == 1 else pred[:, k]
    return out


def residuals_of(pred: np.ndarray, y: np.ndarray, score: str) -> np.ndarray:
    if score == "absolute":
        if pred.ndim == 2:
            pred = pred[:, 0]
        return np.abs(y - pred)
    lo, hi = pred[:, 0], pred[:, 1]
    return np.maximum(np.maximum(lo - y, y - hi), 0.0)  # distance outside the band


def public_bound(
    estimator: Any,
    X,
    y,
    *,
    score: str = "absolute",
    quantile: float | None = None,
    n_calibration: int | None = None,
    calibration_epsilon: float | None = None,
    confidence_level: float = 0.9,
    whole_line_risk: float = 0.01,
    cv: int | None = 5,
    held_out: bool = False,
    epsilon: float | None = None,
    upper: float | None = None,
    n_bins: int = 1000,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> PublicBound:
    """Suggest the public bound ``B`` of a private regression calibration from training data.

    ``B`` is the ``quantile`` of held-out residuals: with ``cv=k`` (default 5) each training
    row is predicted by a clone of the model fitted on the other folds; ``|y - ŷ|`` for
    ``score="absolute"``, the distance outside the quantile band for ``score="cqr"``. Never
    pass the calibration data.

    Trade-off: the calibration needs ``B`` above the inflated ``1 - α`` quantile of the
    calibration residuals (else the threshold is 1 and the intervals the whole line), so
    ``quantile`` should sit well above ``1 - α``. A tighter ``B`` gives narrower intervals
    (finer steps of ``B / n_bins``) but more whole-line releases; a larger one costs nothing in
    coverage. How far above depends on the calibration's n and ε: give them
    (``n_calibration``, ``calibration_epsilon``, ``confidence_level``) and ``B`` aims at the
    smallest residual coverage ``q`` whose planned whole-line probability at those settings is
    at most ``whole_line_risk`` (:func:`dpuq.planning.bound.aimed_residual_coverage`, with
    the held-out residuals as the law below ``B``), and takes the order statistic of the
    training residuals that covers ``q`` with 95% confidence (the training quantile is itself
    noisy). Without them, ``q = 0.99``. ``result.aim`` says which, and why.

    Parameters
    ----------
    estimator : object or callable, or a (lower, upper) pair for CQR
        The model as it will be used (unfitted is fine with ``cv``: clones are fitted).
    X, y : training data (not the calibration data)
    score : {"absolute", "cqr"}
    quantile : float, optional
        Residual quantile in (0, 1); overrides the aim (default: aimed from the settings
        below, or 0.99 without them).
    n_calibration, calibration_epsilon : int and float, optional
        The intended calibration size and ε (public; give both or neither).
    confidence_level : float, default 0.9
        The intended coverage of the intervals.
    whole_line_risk : float, default 0.01
        The planned probability of whole-line intervals that ``B`` aims to stay under.
    cv : int or None, default 5
        Folds of cross-validation. ``None`` uses ``estimator`` as fitted: the residuals are
        then in-sample unless ``(X, y)`` were held out from its training (say so with
        ``held_out=True``); in-sample residuals raise :class:`InSampleResidualsWarning`.
    held_out : bool, default False
        With ``cv=None``: ``(X, y)`` were not used to train ``estimator``.
    epsilon : float, optional
        Release ``B`` with ε-DP (replace-one over the rows of ``(X, y)``): the exponential
        mechanism quantile of :func:`dpuq.private_quantile` on residuals capped at ``upper``.
        Needs ``cv=None`` and a model that does not depend on ``(X, y)`` (fitted on other
        people, or privately), so that each residual depends on its own row only; with
        cross-validation one row moves the residuals of a whole fold and the quantile's
        sensitivity argument fails.
    upper : float, optional
        Public cap on the residuals, needed with ``epsilon``.
    n_bins : int, default 1000
        Grid of the private release: ``B`` is a multiple of ``upper / n_bins``.
    random_state : None, int or numpy.random.Generator
        For the private release (and the fold shuffle). None: OS entropy.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        With ``epsilon``: charge ε to the *training* data set's budget before any noise is
        drawn (:func:`dpuq.privacy.ledger.charge`). Without ``epsilon`` nothing is released
        privately and nothing is charged (``B`` is then a non-private function of ``(X, y)``).

    Returns
    -------
    PublicBound
        ``float(result)`` is ``B``.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> X, y = load_diabetes(return_X_y=True)
    >>> b = public_bound(Ridge(alpha=0.1), X[:300], y[:300], random_state=0)
    >>> 100 < float(b) < 300 and b.held_out
    True
    >>> b = public_bound(Ridge(alpha=0.1), X[:280], y[:280], n_calibration=159,
    ...                  calibration_epsilon=1.0, random_state=0)
    >>> bool(b.quantile > 0.99 and b.whole_line_probability < 0.01)
    True
    """
    if score not in ("absolute", "cqr"):
        raise ValueError(f"score must be 'absolute' or 'cqr', got {score!r}")
    settings = _check_aim(n_calibration, calibration_epsilon, confidence_level, whole_line_risk)
    q = 0.99 if quantile is None else check_in_open_unit(quantile, "quantile")
    target = check_array_1d(y, "y")
    if epsilon is not None and cv is not None:
        raise ValueError(
            "epsilon= needs cv=None and a model not fitted on (X, y): cross-validated "
            "residuals depend on other rows, so their quantile is not ε-DP at this sensitivity"
        )
    if cv is not None:
        if isinstance(cv, bool) or not isinstance(cv, int) or cv < 2:
            raise ValueError(f"cv must be an integer >= 2 or None, got {cv!r}")
        if target.size < 2 * cv:
            raise ValueError(f"y has {target.size} rows: too few for cv={cv} folds")
        pred = _held_out_predictions(estimator, X, target, cv, random_state)
        if score == "absolute":
            pred = pred[:, 0]
        is_held_out = True
    else:
        if isinstance(estimator, tuple | list):
            pred = np.column_stack([_predict(e, X) for e in estimator])
        else:
            pred = _predict(estimator, X)
        is_held_out = bool(held_out)
        if epsilon is not None and not is_held_out:
            raise ValueError(
                "epsilon= needs held_out=True: a model fitted on (X, y) makes every residual "
                "depend on every row"
            )
        if not is_held_out:
            warnings.warn(
                "public_bound: residuals of the model on its own training data (cv=None) are "
                "smaller than on new people, so B is likely too small and the private "
                "intervals may be the whole line; use cv=5 or held-out data (held_out=True)",
                InSampleResidualsWarning,
                stacklevel=2,
            )
    if pred.shape[0] != target.size:
        raise ValueError(f"X gave {pred.shape[0]} predictions but y has {target.size}")
    if score == "cqr" and (pred.ndim != 2 or pred.shape[1] != 2):
        raise ValueError("score='cqr' needs a (lower, upper) pair or (n, 2) predictions")
    res = residuals_of(pred, target, score)
    if settings is not None and quantile is None:
        q = _aimed_quantile(res, *settings)
    if epsilon is None:
        bound = (
            _covering_order_statistic(res, q)
            if settings
            else float(np.quantile(res, q, method="higher"))
        )
        report = None
    else:
        bound, report = _private_bound(
            res, q, epsilon, upper, n_bins, random_state, ledger, dataset
        )
    if not math.isfinite(bound) or bound <= 0:
        raise ValueError(
            "the residual quantile is 0 (a perfect fit on these data): choose B from domain "
            "knowledge"
        )
    aim, p_whole = _explain(res, bound, q, quantile, settings)
    return PublicBound(bound, q, int(target.size), is_held_out, report, aim, p_whole)


def _check_aim(n, eps, confidence_level, risk):
    """The intended calibration settings, or None; both n and ε, or neither."""
    from dpuq._validation import check_positive_int

    if (n is None) != (eps is None):
        raise ValueError("give both n_calibration and calibration_epsilon, or neither")
    if n is None:
        return None
    level = check_in_open_unit(confidence_level, "confidence_level")
    if level < 0.5:
        raise ValueError(f"confidence_level must be in [0.5, 1), got {confidence_level!r}")
    return (
        check_positive_int(n, "n_calibration"),
        check_epsilon(eps, "calibration_epsilon"),
        alpha_from_confidence(level),
        check_in_open_unit(risk, "whole_line_risk"),
    )


def below_law_of(res: np.ndarray):
    """``q -> CDF of |r|/B given |r| < B`` from the held-out residuals (B their q quantile)."""
    ordered = np.sort(res)

    def law(q: float):
        b = float(np.quantile(ordered, q, method="higher"))
        below = ordered[ordered < b]
        if below.size == 0 or b <= 0:
            return lambda t: np.ones_like(t)
        return lambda t: np.searchsorted(below, t * b, side="right") / below.size

    return law


def _aimed_quantile(res: np.ndarray, n: int, eps: float, alpha: float, risk: float) -> float:
    from dpuq.planning.bound import aimed_residual_coverage

    q = aimed_residual_coverage(n, alpha, eps, risk, below_law=below_law_of(res))
    if not math.isfinite(q):
        raise ValueError(
            f"no bound B makes the calibration informative at n_calibration={n}, "
            f"calibration_epsilon={eps:g}, confidence_level={1 - alpha:.12g}: plan n and epsilon "
            "first (dpuq.planning.min_calibration_size)"
        )
    return q


def _covering_order_statistic(res: np.ndarray, q: float) -> float:
    """The smallest order statistic that is at least the ``q`` quantile of the residual law
    with 95% confidence: the k-th, ``k = ppf(0.95; Binomial(N, q)) + 1`` (the largest if N
    is too small for that)."""
    from scipy.stats import binom

    ordered = np.sort(res)
    k = int(binom.ppf(0.95, ordered.size, q)) + 1
    return float(ordered[min(k, ordered.size) - 1])


def _explain(res, bound, q, quantile, settings) -> tuple[str, float | None]:
    if settings is None:
        why = "given" if quantile is not None else "the default without n_calibration"
        return f"the {q:g} quantile of the residuals ({why})", None
    from dpuq.planning.bound import whole_line_probability

    n, eps, alpha, risk = settings
    covered = float(np.mean(res <= bound))
    p = whole_line_probability(n, alpha, eps, min(max(covered, 1e-6), 1 - 1e-9),
                               below_law=below_law_of(res))  # fmt: skip
    if quantile is not None:
        why = "given"
    elif p <= risk:
        why = f"the smallest coverage whose whole-line probability is <= {risk:g}"
    else:
        why = (
            f"no quantile of these {res.size} residuals keeps the whole-line probability "
            f"<= {risk:g}: a larger B from domain knowledge, or more calibration people, would"
        )
    return (
        f"B covers {100 * covered:.1f} % of the {res.size} held-out residuals, aiming at {q:g} "
        f"({why}) "
        f"for a calibration of n={n} at epsilon={eps:g}, confidence_level={1 - alpha:.12g}: "
        f"planned whole-line probability {p:.3g} if the calibration residuals behave as these; "
        "a smaller B gives narrower intervals but more whole-line releases",
        p,
    )


def _private_bound(res, q, epsilon, upper, n_bins, random_state, ledger=None, dataset=None):
    """ε-DP quantile of residuals that each depend on their own row only (replace-one)."""
    from dpuq._validation import check_positive_int
    from dpuq.mechanisms.quantile import private_quantile
    from dpuq.privacy.ledger import CALLER_CHARGED, charge

    eps = check_epsilon(epsilon)
    if upper is None:
        raise ValueError("epsilon= needs upper=: a public cap on the residuals")
    cap = float(upper)
    if not math.isfinite(cap) or cap <= 0:
        raise ValueError(f"upper must be a finite number > 0, got {upper!r}")
    m = check_positive_int(n_bins, "n_bins", minimum=2)
    scores = np.minimum(res / cap, 1.0)
    charge(
        ledger,
        dataset,
        eps,
        what="public_bound: private residual quantile (training people)",
        random_state=random_state,
        settings={"quantile": q, "n": int(res.size), "upper": cap, "n_bins": m},
    )
    level = private_quantile(scores, q, eps, m, random_state, ledger=CALLER_CHARGED)
    report = PrivacyReport(
        mechanism="exponential mechanism over binned quantiles (public regression bound)",
        epsilon=eps,
        relation=Relation.REPLACE_ONE,
        sensitivity="utility max((1-q)L_j, q U_j) moves by at most max(q, 1-q)",
        details={"n": int(res.size), "quantile": q, "upper (public)": cap, "n_bins": m},
        notes=("charged to the training people's budget, not the calibration people's",),
        seeded=random_state is not None,
    )
    return level * cap, report
