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
    check_score_flags,
    merge_summaries,
    summarize_chunk,
)

__all__ = [
    "DaskClassCounts",
    "DaskScores",
    "dask_error_counts",
    "dask_loss_sums",
    "map_scores",
    "to_dask_array",
    "tree_reduce",
    "validate_lazy",
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
        # lengths below (compute_chunk_sizes): to_dask_array(lengths=True) can disagree with
        # the partitions that the optimiser keeps (e.g. small Parquet files combined)
        x = x.to_dask_array()
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
# The conformal estimators hand their per-block scoring function to ``map_scores``
# (``PrivateConformalClassifier._dask_scores``, ``PrivateConformalRegressor._dask_scores``):
# this module knows no estimator and no score.
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


def map_scores(block_fn, X, y, *, with_offset: bool = False, dtype=float):
    """``block_fn(x_block, y_block)`` over the aligned row blocks of ``X`` and ``y``: a lazy
    1-d Dask array of scores (never gathered on the client). ``with_offset=True`` passes the
    block's first row index too: ``block_fn(x_block, y_block, start)``."""
    Xa, ya = _aligned(X, y, "X", "y")
    if with_offset:

        def run(xb, yb, block_info=None):
            start = block_info[0]["array-location"][0][0] if block_info else 0
            return block_fn(xb, yb[:, 0], start)

    else:

        def run(xb, yb):
            return block_fn(xb, yb[:, 0])

    # y as an (n, 1) column so that its blocks pair with X's row blocks
    return da.map_blocks(run, Xa, ya[:, None], drop_axis=1, dtype=dtype, meta=np.empty(0, dtype))


# ------------------------------------------------------------------ class-conditional counts
def _class_chunk(
    scores: np.ndarray, labels: np.ndarray, k: int, n_bins: int | None, check_int: bool
):
    """Validation flags and the (K, m) counts of one chunk: one bincount over (class, bin).
    ``n_bins`` None: the flags only (a validation pass), with an empty (K, 0) table."""
    from dpuq.mechanisms.quantile import _bin_index_fast, bin_edges

    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels)
    nonfinite = bool(s.size) and not bool(np.isfinite(s).all())
    outside = not nonfinite and bool(np.count_nonzero((s < 0.0) | (s > 1.0)))
    whole = bool(np.all(np.isfinite(y)) and np.all(y == np.round(y)))
    not_int = check_int and not (whole and (not y.size or np.abs(y).max() <= 2**53))
    yi = y.astype(np.int64) if not not_int else np.zeros(y.shape, np.int64)
    out_of_range = bool(np.count_nonzero((yi < 0) | (yi >= k)))
    flags = np.array([nonfinite, outside, not_int, out_of_range])
    if flags.any() or n_bins is None:
        return flags, np.zeros((k, n_bins or 0), np.int64)
    flat = yi * n_bins + _bin_index_fast(s, bin_edges(n_bins))
    return flags, np.bincount(flat, minlength=k * n_bins).reshape(k, n_bins)


def _merge_class(parts: list):
    flags, counts = parts[0][0].copy(), parts[0][1].copy()
    for f, c in parts[1:]:  # one running sum: no stack of K x m tables
        flags |= f
        counts += c
    return flags, counts


class DaskClassCounts:
    """Scores and labels (class or group indices) in two aligned 1-d Dask collections.

    :func:`dpuq.calibrate_by_class` asks for :meth:`counts`: the (K, m) counts of scores per
    class and bin, validated and summed chunk by chunk on the workers (integers add exactly, so
    they equal the in-memory counts); the errors are those of the in-memory checks.
    """

    def __init__(self, scores, labels, name: str = "scores", labels_name: str = "labels"):
        arr = to_dask_array(scores, name, ndim=1)
        check_numeric_dtype(arr.dtype, name)
        if arr.shape[0] == 0:
            raise ValueError(f"{name} is empty")
        if not dask.is_dask_collection(labels):
            raise TypeError(f"{labels_name} must be a Dask collection when {name} is one")
        lab = to_dask_array(labels, labels_name, ndim=1)
        if lab.shape[0] != arr.shape[0]:
            raise ValueError(f"{labels_name} and {name} have different numbers of rows")
        if lab.dtype.kind not in "iuf":
            raise TypeError(f"{labels_name} must be integer class indices, got dtype {lab.dtype}")
        self.scores, self.labels = arr, lab.rechunk((arr.chunks[0],))
        self.name, self.labels_name = name, labels_name
        self.size = int(arr.shape[0])

    def counts(self, n_classes: int, n_bins: int) -> np.ndarray:
        """The validated (K, m) counts (one pass over the chunks)."""
        return self._checked(n_classes, n_bins)

    def validate(self, n_classes: int) -> None:
        """One pass of the same checks without the counts: the errors of :meth:`counts`."""
        self._checked(n_classes, None)

    def _checked(self, n_classes: int, n_bins: int | None) -> np.ndarray:
        check_int = self.labels.dtype.kind == "f"
        parts = [
            dask.delayed(_class_chunk, pure=True)(sb, yb, n_classes, n_bins, check_int)
            for sb, yb in zip(
                self.scores.to_delayed().ravel(), self.labels.to_delayed().ravel(), strict=True
            )
        ]
        ((flags, counts),) = dask.compute(tree_reduce(parts, _merge_class))
        check_score_flags(flags[0], flags[1], self.name)
        if flags[2]:
            raise ValueError(f"{self.labels_name} must be integer class indices")
        if flags[3]:
            raise ValueError(
                f"{self.labels_name}: value(s) outside the classes 0..{n_classes - 1} (no count "
                "or extremes are shown: they depend on the data)"
            )
        return np.asarray(counts, dtype=np.int64)


def validate_lazy(scores, labels=None, n_labels: int | None = None, *, labels_name="labels"):
    """Check lazy scores (and labels) before a ledger charge, as memory checks them.

    One chunk-wise pass computes the scores' task graph (so a model or label error inside a
    row block raises here, with the block function's own data-free message) and reduces it
    to validation flags only: non-finite scores, scores outside [0, 1], labels that are not
    integer indices in ``0..n_labels-1``. Nothing but flags reaches the client, and no
    message shows a value or a count. The release then computes the graph once more (the
    model runs twice on Dask input: the price of refusing before the charge). A model or
    source that is not deterministic can pass here and fail in the release, after the charge
    (still with a data-free message): give Dask a deterministic model.
    """
    if labels is None:
        DaskScores(scores).validate()
    else:
        DaskClassCounts(scores, labels, labels_name=labels_name).validate(int(n_labels))


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


# ------------------------------------------------------------------ risk control
def dask_loss_sums(losses, name: str = "losses") -> tuple[np.ndarray, int]:
    """The loss sums ``S_j`` of an (n, m) Dask matrix, validated chunk by chunk, and ``n``.

    Each row block returns its exact column sums (:mod:`dpuq.scale.sums`) and validation
    flags; the client adds them (integers) and rounds each column once: the same floats as
    :func:`dpuq.mechanisms.risk.loss_sums` in memory (``math.fsum``), whatever the chunks,
    and the errors of :func:`dpuq.mechanisms.risk.check_losses`. The client holds
    O(m · 2^11) integers, never the matrix.
    """
    from dpuq.mechanisms.risk import raise_loss_flags
    from dpuq.scale.sums import loss_chunk_sums, merge_column_sums

    arr = to_dask_array(losses, name)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real array of shape (n, m)")
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, m) with n >= 1 and m >= 2 grid values")
    if arr.numblocks[1] != 1:
        arr = arr.rechunk({1: -1})  # whole rows per block: the monotonicity check needs them
    parts = [dask.delayed(loss_chunk_sums, pure=True)(b) for b in arr.to_delayed().ravel()]
    (total,) = dask.compute(tree_reduce(parts, merge_column_sums))
    raise_loss_flags(*total.flags, name)
    return total.rounded(), int(arr.shape[0])
