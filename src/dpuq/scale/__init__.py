"""Beyond one machine: chunked and Dask inputs (``pip install dpuq[dask]`` for Dask).

The private releases need only small sufficient statistics of the data: ``n`` and bin counts
for the conformal threshold, per-concept error counts for private ERM, per-subset bootstrap
statistics for the confidence intervals. This package computes them chunk by chunk, where the
data are, and hands them to the same private step as in memory, so that a release from a Dask
array equals the release from the same numbers in memory for the same ``random_state``.

Importing :mod:`dpuq` or this package never imports Dask; the Dask back end
(:mod:`dpuq.scale._dask`) is loaded when a Dask collection is first passed in.

The methods call this package, never the reverse: the conformal estimators hand it their
block scoring functions (:func:`dpuq.score_partitions`, in :mod:`dpuq.conformal.partitions`),
and the Dask path of the confidence intervals lives with them (:mod:`dpuq.inference._dask`).
"""

from __future__ import annotations

from dpuq.scale.counts import ChunkedScores, ScoreSummary, merge_summaries, summarize_chunk
from dpuq.scale.sources import as_score_source, is_dask_collection

__all__ = [
    "ChunkedScores",
    "ScoreSummary",
    "as_score_source",
    "is_dask_collection",
    "merge_summaries",
    "summarize_chunk",
]
