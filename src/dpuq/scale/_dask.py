"""Dask back end: chunk-wise statistics on the workers, only small results on the client.

Imported on first use by :mod:`dpuq.scale` (``pip install dpuq[dask]``). Every function here
builds a task graph whose per-chunk tasks run where the data are (with a
``dask.distributed.Client`` active: on its workers) and whose result is small: a
:class:`~dpuq.scale.counts.ScoreSummary` (``n`` and non-empty bin counts), per-concept error
counts, or per-subset bootstrap statistics. The private step then runs once, on the client,
with the same code as in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:
    import dask
    import dask.array as da
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("Dask support needs the dask extra: pip install 'dpuq[dask]'") from exc

from dpuq.scale.counts import (
    ScoreSummary,
    _ScoreSource,
    check_numeric_dtype,
    merge_summaries,
    summarize_chunk,
)

__all__ = [
    "DaskScores",
    "classifier_scores",
    "dask_error_counts",
    "map_scores",
    "regressor_scores",
    "to_dask_array",
    "tree_reduce",
]

#: Fan-in of the tree reductions: partial results merged at most this many at a time.
FAN_IN = 16


def tree_reduce(parts: Sequence[Any], combine: Callable[[list], Any], fan_in: int = FAN_IN):
    """Combine delayed ``parts`` in a tree of ``combine`` calls (each on <= ``fan_in`` items)."""
    level = list(parts)
    if not level:
        raise ValueError("nothing to reduce")
    while len(level) > 1:
        level = [
            dask.delayed(combine, pure=True)(level[i : i + fan_in])
            for i in range(0, len(level), fan_in)
        ]
    return level[0]


def _is_dataframe_like(x) -> bool:
    return hasattr(x, "to_dask_array") and hasattr(x, "map_partitions")


def to_dask_array(x, name: str, *, ndim: int | None = None):
    """A Dask array with known chunk sizes from a Dask array, Series or DataFrame."""
    if _is_dataframe_like(x):
        x = x.to_dask_array(lengths=True)
    if not isinstance(x, da.Array):
        raise TypeError(f"{name} must be a Dask array, Series or DataFrame, got {type(x).__name__}")
    if any(np.isnan(c) for dim in x.chunks for c in dim):
        x = x.compute_chunk_sizes()
    if ndim is not None and x.ndim != ndim:
        if ndim == 1 and x.ndim == 2 and x.shape[1] == 1:
            return x[:, 0]
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {x.shape}")
    return x


class DaskScores(_ScoreSource):
    """Conformity scores held in a 1-d Dask array (or a Dask Series / one-column frame).

    The scores are validated and binned chunk by chunk on the workers; the client receives one
    :class:`~dpuq.scale.counts.ScoreSummary`. :func:`dpuq.calibrate` wraps Dask input in this
    class by itself.

    Examples
    --------
    >>> import dask.array as da, dpuq
    >>> x = np.random.default_rng(0).uniform(size=5_000)
    >>> dx = da.from_array(x, chunks=1_000)
    >>> with dask.config.set(scheduler="synchronous"):
    ...     a = dpuq.calibrate(dx, alpha=0.1, epsilon=1.0, random_state=2)
    >>> a.threshold == dpuq.calibrate(x, alpha=0.1, epsilon=1.0, random_state=2).threshold
    True
    """

    def __init__(self, scores, name: str = "scores") -> None:
        arr = to_dask_array(scores, name)
        check_numeric_dtype(arr.dtype, name)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
        self.array = arr
        self.name = name

    @property
    def size(self) -> int:
        return int(self.array.shape[0])

    def summary(self, n_bins: int | None) -> ScoreSummary:
        parts = [
            dask.delayed(summarize_chunk, pure=True)(block, n_bins)
            for block in self.array.to_delayed().ravel()
        ]
        if not parts:
            empty = np.empty(0, np.int64)
            return ScoreSummary(0, 0, 0, np.inf, -np.inf, n_bins, empty, empty)
        (total,) = dask.compute(tree_reduce(parts, merge_summaries))
        return total


# ------------------------------------------------------------------ scoring on the workers
def _aligned(X, y, name_x: str, name_y: str):
    Xa = to_dask_array(X, name_x)
    if Xa.ndim == 1:
        Xa = Xa[:, None]
    if Xa.ndim != 2:
        raise ValueError(f"{name_x} must be 2-dimensional, got shape {Xa.shape}")
    ya = to_dask_array(y, name_y, ndim=1)
    if ya.shape[0] != Xa.shape[0]:
        raise ValueError(f"{name_x} has {Xa.shape[0]} rows but {name_y} has {ya.shape[0]}")
    if Xa.numblocks[1] != 1:
        Xa = Xa.rechunk({1: -1})
    ya = ya.rechunk((Xa.chunks[0],))
    return Xa, ya


def classifier_scores(est, X, y):
    """Scores of a :class:`~dpuq.conformal.PrivateConformalClassifier` on Dask ``X``, ``y``
    (lazy, one task per row block); see :func:`dpuq.scale.partitions.score_partitions`."""
    randomized = (est.score_params or {}).get("randomized", est.conformity_score in ("aps", "raps"))
    if randomized:  # APS/RAPS are randomized by default for private use
        raise ValueError(
            "randomized scores draw noise per point; they are not supported on Dask input "
            "(APS/RAPS are randomized by default: pass score_params={'randomized': False} "
            "to use the deterministic score, or use conformity_score='lac')"
        )
    if not hasattr(est, "classes_"):
        est._set_classes()
    if not hasattr(est, "classes_"):
        raise ValueError(
            "the classes are unknown: call fit(X, y) first or use an estimator with classes_"
        )
    return map_scores(_classification_block(est), X, y)


def regressor_scores(est, X, y):
    """Scores of a :class:`~dpuq.conformal.PrivateConformalRegressor` on Dask ``X``, ``y``."""
    _, _, bound = est._check_params()
    return map_scores(_regression_block(est, bound), X, y)


def map_scores(block_fn, X, y):
    """``block_fn(x_block, y_block)`` over the aligned row blocks of ``X`` and ``y``: a lazy
    1-d Dask array of scores (never gathered on the client)."""
    Xa, ya = _aligned(X, y, "X", "y")
    # y as an (n, 1) column so that its blocks pair with X's row blocks
    return da.map_blocks(
        lambda xb, yb: block_fn(xb, yb[:, 0]),
        Xa,
        ya[:, None],
        drop_axis=1,
        dtype=float,
        meta=np.empty(0),
    )


def _classification_block(est):
    def scores(xb: np.ndarray, yb: np.ndarray) -> np.ndarray:
        if xb.shape[0] == 0:
            return np.empty(0)
        return est._score_matrix(est._proba(xb), est._label_index(yb))

    return scores


def _regression_block(est, bound: float):
    from dpuq.conformal.regression_scores import absolute_residual_scores, cqr_scores

    def scores(xb: np.ndarray, yb: np.ndarray) -> np.ndarray:
        if xb.shape[0] == 0:
            return np.empty(0)
        yv = np.asarray(yb, dtype=float)
        if est.conformity_score == "absolute":
            return absolute_residual_scores(est._point(xb), yv, bound=bound)
        return cqr_scores(est._quantiles(xb), yv, bound=bound)

    return scores


# ------------------------------------------------------------------ private ERM
def _block_error_counts(cc, xb, yb) -> np.ndarray:
    if xb.shape[0] == 0:
        return np.zeros(cc.n_concepts, dtype=np.int64)
    xc, yc = cc.check_data(xb, yb)
    return cc._error_counts(xc, yc)


def _sum_counts(parts: list) -> np.ndarray:
    return np.sum(np.stack(parts), axis=0)


def dask_error_counts(cc, X, y) -> tuple[np.ndarray, int]:
    """Per-concept error counts ``#{i : c(x_i) != y_i}`` summed over row blocks, and ``n``.

    Integer counts add exactly, so the result equals ``cc.error_counts(X, y)`` in memory.
    """
    Xa, ya = _aligned(X, y, "X", "y")
    parts = [
        dask.delayed(_block_error_counts, pure=True)(cc, xb, yb)
        for xb, yb in zip(Xa.to_delayed().ravel(), ya.to_delayed().ravel(), strict=True)
    ]
    (counts,) = dask.compute(tree_reduce(parts, _sum_counts))
    return np.asarray(counts, dtype=np.int64), int(ya.shape[0])
