"""Chunk-wise sufficient statistics of conformity scores: validation and exact bin counts.

The private threshold (:mod:`dpuq.mechanisms.quantile`) depends on the scores only through
``n`` and the counts of the non-empty bins ``b(s) = searchsorted(edges, s, "left")``. This
module computes both one chunk at a time, with the bin rule of
:func:`dpuq.mechanisms.quantile.bin_index` (computed by its exact O(1) twin
``_bin_index_fast`` against the same edges array), so that a score on an edge falls in exactly
the bin it falls in when the whole array is in memory; integer counts add exactly, whatever
the chunking. Validation (non-finite values, values outside [0, 1]) is summed over chunks the
same way and raises the same errors as
:func:`dpuq._validation.check_scores`.

Nothing here is private: it is the data holder's side of the release. What leaves it is a
:class:`ScoreSummary` (``n`` and the non-empty bins with their counts); the exponential
mechanism then runs once on those counts, with the same code and the same random draws as the
in-memory release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from dpuq.mechanisms.quantile import _bin_index_fast, bin_edges

__all__ = [
    "ChunkedScores",
    "ScoreSummary",
    "merge_summaries",
    "summarize_chunk",
]

_NUMERIC_KINDS = "biuf"
#: Above ``_DENSE_FACTOR * chunk length`` bins, a chunk is counted by sorting, not bincount.
_DENSE_FACTOR = 4


@dataclass(frozen=True)
class ScoreSummary:
    """What one chunk (or many, merged) says about the scores.

    ``bins`` (sorted, 0-based) and ``counts`` (int64) list the non-empty bins; they are empty
    when the summary was made for validation only (``n_bins`` None). ``low`` and ``high`` are
    the smallest and largest finite values (for error messages, never released).
    """

    n: int
    nonfinite: int
    outside: int
    low: float
    high: float
    n_bins: int | None
    bins: np.ndarray
    counts: np.ndarray

    def check(self, name: str = "scores") -> ScoreSummary:
        """Raise the errors of :func:`dpuq._validation.check_scores`; return self."""
        if self.n == 0:
            raise ValueError(f"{name} is empty")
        check_score_flags(self.nonfinite, self.outside, name)
        return self


def check_score_flags(nonfinite, outside, name: str = "scores") -> None:
    """The errors of :func:`dpuq._validation.check_scores` from chunk-wise counts or flags of
    non-finite scores and of scores outside [0, 1] (no count is shown: it depends on the data)."""
    if nonfinite:
        raise ValueError(f"{name} has non-finite value(s) (NaN or inf)")
    if outside:
        raise ValueError(
            f"{name} must lie in [0, 1]; some values are outside (no count or extremes are "
            "shown: they depend on the data)"
        )


def check_numeric_dtype(dtype, name: str) -> None:
    """Scores must be stored as numbers (bool, integer or float)."""
    if np.dtype(dtype).kind not in _NUMERIC_KINDS:
        raise ValueError(f"{name} must be numeric: got dtype {np.dtype(dtype)}")


def _sparse_counts(bins: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    if bins.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if m <= _DENSE_FACTOR * bins.size:
        dense = np.bincount(bins, minlength=m)
        nz = np.flatnonzero(dense)
        return nz.astype(np.int64), dense[nz].astype(np.int64)
    b, c = np.unique(bins, return_counts=True)
    return b.astype(np.int64), c.astype(np.int64)


def summarize_chunk(values, n_bins: int | None = None) -> ScoreSummary:
    """Validation counts and (if ``n_bins``) the exact bin counts of one chunk of scores.

    Examples
    --------
    >>> s = summarize_chunk(np.array([0.0, 0.25, 0.26, 1.0]), n_bins=4)
    >>> s.n, s.bins.tolist(), s.counts.tolist()
    (4, [0, 1, 3], [2, 1, 1])
    """
    arr = np.asarray(values)
    check_numeric_dtype(arr.dtype, "scores")
    arr = arr.astype(float, copy=False).reshape(-1)
    finite = np.isfinite(arr)
    nonfinite = int(arr.size - np.count_nonzero(finite))
    good = arr if nonfinite == 0 else arr[finite]
    outside = int(np.count_nonzero((good < 0.0) | (good > 1.0)))
    low = float(good.min()) if good.size else np.inf
    high = float(good.max()) if good.size else -np.inf
    if n_bins is None or nonfinite or outside:
        empty = np.empty(0, np.int64)
        return ScoreSummary(arr.size, nonfinite, outside, low, high, n_bins, empty, empty)
    # _bin_index_fast: bin_index's exact result (same edges array) in O(1) per score
    bins, counts = _sparse_counts(_bin_index_fast(arr, bin_edges(n_bins)), n_bins)
    return ScoreSummary(arr.size, 0, 0, low, high, n_bins, bins, counts)


def merge_summaries(parts: Iterable[ScoreSummary]) -> ScoreSummary:
    """Add summaries of disjoint chunks: exact (integer) whatever the order.

    Examples
    --------
    >>> a = summarize_chunk([0.1, 0.9], 4); b = summarize_chunk([0.15, 0.5], 4)
    >>> m = merge_summaries([a, b]); m.bins.tolist(), m.counts.tolist()
    ([0, 1, 3], [2, 1, 1])
    """
    parts = list(parts)
    if not parts:
        raise ValueError("nothing to merge")
    n_bins = parts[0].n_bins
    if any(p.n_bins != n_bins for p in parts):
        raise ValueError("summaries made with different n_bins cannot be merged")
    bins = np.concatenate([p.bins for p in parts])
    counts = np.concatenate([p.counts for p in parts])
    if n_bins is not None and bins.size and n_bins <= _DENSE_FACTOR * bins.size:
        # dense addition; float64 holds every count exactly (a count <= n < 2^53)
        dense = np.bincount(bins, weights=counts, minlength=n_bins)
        bins = np.flatnonzero(dense)
        counts = dense[bins].astype(np.int64)
    elif bins.size:
        order = np.argsort(bins, kind="stable")
        bins, counts = bins[order], counts[order]
        starts = np.flatnonzero(np.concatenate(([True], bins[1:] != bins[:-1])))
        bins, counts = bins[starts], np.add.reduceat(counts, starts)
    return ScoreSummary(
        n=sum(p.n for p in parts),
        nonfinite=sum(p.nonfinite for p in parts),
        outside=sum(p.outside for p in parts),
        low=min(p.low for p in parts),
        high=max(p.high for p in parts),
        n_bins=n_bins,
        bins=bins,
        counts=counts,
    )


class _ScoreSource:
    """Scores that are not in memory: ``size`` is public, statistics come chunk-wise.

    Subclasses implement :meth:`summary`. :func:`dpuq.calibrate` accepts any instance.
    """

    name = "scores"

    @property
    def size(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def summary(self, n_bins: int | None) -> ScoreSummary:  # pragma: no cover - abstract
        raise NotImplementedError

    def validate(self) -> None:
        """One pass of chunk-wise checks: the errors of ``check_scores``."""
        self.summary(None).check(self.name)

    def bin_counts(self, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
        """Validated, exact counts of the non-empty bins (one pass over the chunks)."""
        s = self.summary(n_bins).check(self.name)
        if s.n != self.size:
            raise ValueError(f"{self.name}: read {s.n} values but expected {self.size}")
        return s.bins, s.counts


class ChunkedScores(_ScoreSource):
    """Scores read one chunk at a time (a memory-mapped array, a Parquet or CSV file ...).

    Parameters
    ----------
    chunks : callable
        Called once per pass; returns an iterator of 1-d numeric arrays whose concatenation
        is the scores. Each call must yield the same values.
    n : int
        The number of scores (public: from the file's metadata or a counting pass).
    name : str
        How errors name the input (e.g. ``"--scores 'big.parquet'"``).

    Examples
    --------
    >>> import dpuq
    >>> x = np.random.default_rng(0).uniform(size=10_000)
    >>> src = ChunkedScores(lambda: iter(np.array_split(x, 7)), n=x.size)
    >>> a = dpuq.calibrate(src, alpha=0.1, epsilon=1.0, random_state=3)
    >>> b = dpuq.calibrate(x, alpha=0.1, epsilon=1.0, random_state=3)
    >>> a.threshold == b.threshold
    True
    """

    def __init__(
        self,
        chunks: Callable[[], Iterator[np.ndarray]],
        n: int,
        name: str = "scores",
        progress: Callable[[Iterator], Iterator] | None = None,
    ) -> None:
        self._chunks = chunks
        self._n = int(n)
        self.name = name
        self._progress = progress

    @property
    def size(self) -> int:
        return self._n

    def summary(self, n_bins: int | None) -> ScoreSummary:
        it = self._chunks()
        if self._progress is not None:
            it = self._progress(it)
        total = None
        for chunk in it:
            part = summarize_chunk(chunk, n_bins)
            total = part if total is None else merge_summaries([total, part])
        if total is None:
            empty = np.empty(0, np.int64)
            return ScoreSummary(0, 0, 0, np.inf, -np.inf, n_bins, empty, empty)
        return total
