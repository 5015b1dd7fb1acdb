"""Calibration scores of any model on Dask data, computed where the data are.

The estimators score each row block themselves (their ``_dask_scores`` hands a block
function to :func:`dpuq.scale._dask.map_scores`); this module only picks the estimator, so
imports run one way: the methods call the scale layer, never the reverse.
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

    if isinstance(model, PrivateConformalClassifier | PrivateConformalRegressor):
        if score is not None or score_params:
            raise ValueError(f"a {type(model).__name__} scores with its own settings")
        return model._dask_scores(X, y)
    est = PrivateConformalClassifier(
        model, epsilon=1.0, conformity_score=score or "lac", score_params=score_params or None
    )
    return est._dask_scores(X, y)
