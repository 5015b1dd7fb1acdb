"""Calibration scores of any model on Dask data, computed where the data are.

The one part of :mod:`dpuq.scale` that knows the conformal estimators (it dispatches on
them); the estimators themselves call the block maps of :mod:`dpuq.scale._dask` directly, so
imports run one way.
"""

from __future__ import annotations

__all__ = ["score_partitions"]


def score_partitions(model, X, y, *, score: str | None = None, **score_params):
    """Calibration scores computed where the data are: a lazy 1-d Dask array.

    The model runs on every row block of ``X`` (``map_blocks``) on the workers; the scores
    never gather on the client. Pass the result to :func:`dpuq.calibrate`, or call the
    estimators' ``conformalize`` with Dask input, which does both.

    Parameters
    ----------
    model : PrivateConformalClassifier, PrivateConformalRegressor, or a classifier
        A dpuq conformal estimator scores with its own settings (score, bound, ...). Any other
        object is taken as a classifier with ``predict_proba`` (or a callable returning class
        probabilities) scored with ``score`` (default ``"lac"``) and ``score_params``; its
        ``classes_`` (or ``0..K-1``) must index the labels.
    X : Dask array (n, d) or Dask DataFrame
    y : Dask array (n,) or Dask Series
    score : str, optional
        Only for a plain classifier: ``"lac"``, ``"aps"`` or ``"raps"``.

    Returns
    -------
    dask.array.Array of shape (n,)
    """
    from dpuq.conformal.classifier import PrivateConformalClassifier
    from dpuq.conformal.regressor import PrivateConformalRegressor
    from dpuq.scale._dask import classifier_scores, regressor_scores

    if isinstance(model, PrivateConformalRegressor):
        if score is not None or score_params:
            raise ValueError("a PrivateConformalRegressor scores with its own score and bound")
        return regressor_scores(model, X, y)
    if isinstance(model, PrivateConformalClassifier):
        if score is not None or score_params:
            raise ValueError("a PrivateConformalClassifier scores with its own settings")
        est = model
    else:
        est = PrivateConformalClassifier(
            model, epsilon=1.0, conformity_score=score or "lac", score_params=score_params or None
        )
    return classifier_scores(est, X, y)
