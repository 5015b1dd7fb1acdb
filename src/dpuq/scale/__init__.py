"""Beyond one machine: chunked and Dask inputs (``pip install dpuq[dask]`` for Dask).

The private releases need only small sufficient statistics of the data: ``n`` and bin counts
for the conformal threshold, per-concept error counts for private ERM, per-subset bootstrap
statistics for the confidence intervals. This package computes them chunk by chunk, where the
data are, and hands them to the same private step as in memory, so that a release from a Dask
array equals the release from the same numbers in memory for the same ``random_state``.

Importing :mod:`dpuq` or this package never imports Dask; the Dask back end
(:mod:`dpuq.scale._dask`) is loaded when a Dask collection is first passed in.
"""

from __future__ import annotations

import sys

from dpuq.scale.counts import ChunkedScores, ScoreSummary, merge_summaries, summarize_chunk

__all__ = [
    "ChunkedScores",
    "ScoreSummary",
    "as_score_source",
    "is_dask_collection",
    "merge_summaries",
    "score_partitions",
    "summarize_chunk",
]


def is_dask_collection(x) -> bool:
    """True for a Dask array, Series, DataFrame or delayed object (without importing Dask).

    Examples
    --------
    >>> import numpy as np
    >>> is_dask_collection(np.zeros(3))
    False
    """
    if "dask" not in sys.modules:  # nothing can be a Dask collection before Dask is imported
        return False
    from dask.base import is_dask_collection as _is

    return bool(_is(x))


def as_score_source(scores, name: str = "scores"):
    """``scores`` as a chunk-wise source (Dask or :class:`ChunkedScores`), or None for
    in-memory array-likes (which the caller validates as usual)."""
    from dpuq.scale.counts import _ScoreSource

    if isinstance(scores, _ScoreSource):
        return scores
    if is_dask_collection(scores):
        from dpuq.scale._dask import DaskScores

        return DaskScores(scores, name)
    return None


def score_partitions(model, X, y, *, score: str | None = None, **score_params):
    """Calibration scores mapped over the row blocks of Dask ``X`` and ``y``; see
    :func:`dpuq.scale._dask.score_partitions`."""
    from dpuq.scale._dask import score_partitions as _score_partitions

    return _score_partitions(model, X, y, score=score, **score_params)
