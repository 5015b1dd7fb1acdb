"""Is an input in memory, chunked, or a Dask collection? (Never imports Dask to find out.)

The lowest part of :mod:`dpuq.scale`: the conformal, inference and learning modules import it
to route a Dask or chunked input to the chunk-wise path; it imports none of them.
"""

from __future__ import annotations

import sys

__all__ = ["as_score_source", "is_dask_collection"]


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
