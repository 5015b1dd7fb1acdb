"""Finite concept classes for private learning, with vectorised error counts.

A concept class is a finite, **public** set ``C`` of binary classifiers ``c: x -> {0, 1}``,
fixed before the data are seen (grids of thresholds come from public knowledge, never from the
private data). Each class computes the error counts ``n L_X(c) = #{i : c(x_i) != y_i}`` of all
its concepts at once, without a Python loop over concepts:

- :class:`Thresholds` — ``1{x_f > t}`` (or ``1{x_f <= t}``) for ``t`` on a public grid;
- :class:`DecisionStumps` — feature × public threshold grid × sign;
- :class:`Intervals` — ``1{g_i < x_f <= g_j}`` for grid points ``g_i < g_j``;
- :class:`ConceptList` — any finite list of user callables;
- :class:`TabulatedConcepts` — a precomputed predictions matrix over a finite public domain.

The threshold classes never build an ``n × |C|`` matrix: each point is put in the grid cell
that holds it (``searchsorted``), the cells are counted (``bincount``) and cumulative counts
give, for every grid point ``t``, how many points and how many positives lie at or below ``t``.
Cost ``O(n d log T + |C|)``.

Labels are binary, ``0`` or ``1`` (``bool`` and floats equal to 0 or 1 are accepted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpuq._validation import as_real_array, check_positive_int
from dpuq.learning.concept_base import (
    ConceptClass,
    _check_feature_index,
    _check_features,
    _check_grid,
    _counts_at_or_below,
    _threshold_errors_above,
    check_binary_labels,
)
from dpuq.learning.finite_concepts import ConceptList, TabulatedConcepts

__all__ = [
    "ConceptClass",
    "ConceptList",
    "DecisionStumps",
    "Intervals",
    "TabulatedConcepts",
    "Thresholds",
    "as_concept_class",
    "check_binary_labels",
]


# ---------------------------------------------------------------------------------------------
# thresholds, stumps, intervals
# ---------------------------------------------------------------------------------------------


class Thresholds(ConceptClass):
    """Thresholds on one feature over a public grid: ``c_t(x) = 1{x_f > t}``.

    Parameters
    ----------
    grid : array-like of shape (T,)
        Public thresholds, strictly increasing, fixed without looking at the private data.
    feature : int, default 0
        The column of ``X`` used (``X`` may also be 1-d when ``feature == 0``).
    positive : {"above", "below"}, default "above"
        ``"above"``: label 1 when ``x_f > t``; ``"below"``: label 1 when ``x_f <= t``.

    Examples
    --------
    >>> c = Thresholds([0.25, 0.5, 0.75])
    >>> c.error_counts([0.1, 0.6, 0.9], [0, 0, 1]).tolist()
    [1, 1, 0]
    """

    def __init__(self, grid, *, feature: int = 0, positive: str = "above") -> None:
        self.grid = _check_grid(grid, "grid")
        self.feature = _check_feature_index(feature)
        if positive not in ("above", "below"):
            raise ValueError(f"positive must be 'above' or 'below', got {positive!r}")
        self.positive = positive

    @property
    def n_concepts(self) -> int:
        return int(self.grid.size)

    def _check_X(self, X) -> np.ndarray:
        arr = _check_features(X)
        if arr.shape[1] <= self.feature:
            raise ValueError(
                f"X has {arr.shape[1]} feature(s) but the thresholds use feature {self.feature}"
            )
        return arr[:, self.feature]

    def _error_counts(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        above = _threshold_errors_above(x, y, self.grid)
        return above if self.positive == "above" else y.size - above

    def _predict(self, index: int, x: np.ndarray) -> np.ndarray:
        above = x > self.grid[index]
        return (above if self.positive == "above" else ~above).astype(np.int64)

    def describe(self, index: int) -> dict[str, Any]:
        i = self._index(index)
        return {
            "concept": "threshold",
            "feature": self.feature,
            "threshold": float(self.grid[i]),
            "positive": self.positive,
        }

    def __repr__(self) -> str:
        return f"Thresholds(T={self.grid.size}, feature={self.feature}, positive={self.positive!r})"


class DecisionStumps(ConceptClass):
    """Decision stumps: feature × public threshold grid × sign.

    Concept ``(f, t, s)`` labels ``x`` with ``1{x_f > t}`` when ``s = +1`` and ``1{x_f <= t}``
    when ``s = -1``. There are ``2 * sum_f T_f`` concepts: index ``k`` has sign ``+1`` for
    ``k < sum_f T_f``, then features in order, then thresholds in increasing order.

    Parameters
    ----------
    thresholds : array-like
        Public grids, fixed without looking at the private data: a 1-d array shared by all
        features (then ``n_features`` is required), a 2-d array ``(n_features, T)``, or a
        sequence of 1-d arrays, one per feature (lengths may differ). Each strictly increasing.
    n_features : int, optional
        Number of features when ``thresholds`` is one shared 1-d grid.

    Notes
    -----
    Errors of all stumps: one ``searchsorted`` of the data in the grids, one ``bincount``
    and cumulative counts per feature; ``O(n d log T + d T)`` time, no ``n × |C|`` matrix.

    Examples
    --------
    >>> import numpy as np
    >>> stumps = DecisionStumps([0.5], n_features=2)
    >>> X = np.array([[0.1, 0.9], [0.9, 0.1], [0.8, 0.2]])
    >>> stumps.error_counts(X, [0, 1, 1]).tolist()  # (+,f0) (+,f1) (-,f0) (-,f1)
    [0, 3, 3, 0]
    >>> stumps.describe(3)
    {'concept': 'stump', 'feature': 1, 'threshold': 0.5, 'sign': -1}
    """

    def __init__(self, thresholds, *, n_features: int | None = None) -> None:
        grids = _stump_grids(thresholds, n_features)
        self.thresholds = grids
        self.n_features = len(grids)
        sizes = np.array([g.size for g in grids], dtype=np.int64)
        self._sizes = sizes
        self._offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])  # start of feature f
        self._n_thresholds = int(sizes.sum())
        self._values = np.concatenate(grids)
        self._feature_of = np.repeat(np.arange(self.n_features), sizes)
        # cells: feature f owns cells base_f .. base_f + T_f (T_f + 1 cells)
        self._bases = self._offsets + np.arange(self.n_features)
        self._n_cells = self._n_thresholds + self.n_features
        within = np.arange(self._n_thresholds) - np.repeat(self._offsets, sizes)
        self._le_end = np.repeat(self._bases, sizes) + within + 1  # prefix end (exclusive)
        self._le_start = np.repeat(self._bases, sizes)
        self._shared = all(g.size == grids[0].size and np.array_equal(g, grids[0]) for g in grids)

    @property
    def n_concepts(self) -> int:
        return 2 * self._n_thresholds

    def _check_X(self, X) -> np.ndarray:
        arr = _check_features(X)
        if arr.shape[1] != self.n_features:
            raise ValueError(
                f"X has {arr.shape[1]} feature(s) but the stumps were built for {self.n_features}"
            )
        return arr

    def _cells(self, X: np.ndarray) -> np.ndarray:
        if self._shared:
            cells = np.searchsorted(self.thresholds[0], X, side="left")
        else:
            cells = np.empty(X.shape, dtype=np.intp)
            for f, grid in enumerate(self.thresholds):  # a loop over features, not concepts
                cells[:, f] = np.searchsorted(grid, X[:, f], side="left")
        cells += self._bases.astype(np.intp)
        return cells

    def _error_counts(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        total, positive = _counts_at_or_below(self._cells(X), y, self._n_cells)
        cum_total = np.concatenate([[0], np.cumsum(total)])
        cum_pos = np.concatenate([[0], np.cumsum(positive)])
        le_total = cum_total[self._le_end] - cum_total[self._le_start]
        le_pos = cum_pos[self._le_end] - cum_pos[self._le_start]
        n = y.size
        n_neg = n - int(np.count_nonzero(y))
        above = le_pos + (n_neg - (le_total - le_pos))
        return np.concatenate([above, n - above])

    def _parts(self, index: int) -> tuple[int, int, float]:
        sign = 1 if index < self._n_thresholds else -1
        k = index % self._n_thresholds
        return sign, int(self._feature_of[k]), float(self._values[k])

    def _predict(self, index: int, X: np.ndarray) -> np.ndarray:
        sign, f, t = self._parts(index)
        above = X[:, f] > t
        return (above if sign == 1 else ~above).astype(np.int64)

    def describe(self, index: int) -> dict[str, Any]:
        sign, f, t = self._parts(self._index(index))
        return {"concept": "stump", "feature": f, "threshold": t, "sign": sign}

    def __repr__(self) -> str:
        return (
            f"DecisionStumps(n_features={self.n_features}, "
            f"n_thresholds={self._n_thresholds}, n_concepts={self.n_concepts})"
        )


def _stump_grids(thresholds, n_features) -> list[np.ndarray]:
    if isinstance(thresholds, np.ndarray) or not isinstance(thresholds, Sequence):
        arr = as_real_array(thresholds, "thresholds")
        if arr.ndim == 2:
            rows = list(arr)
        elif arr.ndim == 1:
            rows = None
        else:
            raise ValueError(f"thresholds must be 1- or 2-dimensional, got shape {arr.shape}")
    else:
        items = list(thresholds)
        if not items:
            raise ValueError("thresholds is empty: the concept class would be empty")
        if all(np.ndim(item) == 0 for item in items):
            rows, arr = None, as_real_array(items, "thresholds")
        else:
            rows = items
    if rows is None:
        if n_features is None:
            raise ValueError(
                "thresholds is one shared 1-d grid: pass n_features (the number of columns)"
            )
        d = check_positive_int(n_features, "n_features")
        grid = _check_grid(arr, "thresholds")
        return [grid] * d
    if n_features is not None and check_positive_int(n_features, "n_features") != len(rows):
        raise ValueError(f"thresholds has {len(rows)} grids but n_features={n_features}")
    if not rows:
        raise ValueError("thresholds is empty: the concept class would be empty")
    return [_check_grid(g, f"thresholds[{f}]") for f, g in enumerate(rows)]


class Intervals(ConceptClass):
    """Intervals on one feature with public end points: ``c_ij(x) = 1{g_i < x_f <= g_j}``.

    One concept for every pair ``i < j`` of grid points: ``T (T - 1) / 2`` concepts, in
    row-major order of ``(i, j)``.

    Parameters
    ----------
    grid : array-like of shape (T,), T >= 2
        Public end points, strictly increasing, fixed without looking at the private data.
    feature : int, default 0
        The column of ``X`` used (``X`` may also be 1-d when ``feature == 0``).

    Examples
    --------
    >>> c = Intervals([0.0, 0.5, 1.0])
    >>> c.error_counts([0.2, 0.7, 0.9], [1, 0, 0]).tolist()  # (0,.5] (0,1] (.5,1]
    [0, 2, 3]
    """

    def __init__(self, grid, *, feature: int = 0) -> None:
        self.grid = _check_grid(grid, "grid")
        if self.grid.size < 2:
            raise ValueError("grid needs at least 2 points to define an interval")
        self.feature = _check_feature_index(feature)
        self._lo, self._hi = np.triu_indices(self.grid.size, k=1)

    @property
    def n_concepts(self) -> int:
        return int(self._lo.size)

    @property
    def endpoints(self) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` of every concept, each of shape ``(n_concepts,)``."""
        return self.grid[self._lo], self.grid[self._hi]

    _check_X = Thresholds._check_X

    def _error_counts(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        cells = np.searchsorted(self.grid, x, side="left")
        total, positive = _counts_at_or_below(cells, y, self.grid.size + 1)
        le_total = np.cumsum(total)[:-1]
        le_pos = np.cumsum(positive)[:-1]
        inside_total = le_total[self._hi] - le_total[self._lo]
        inside_pos = le_pos[self._hi] - le_pos[self._lo]
        n_pos = int(positive.sum())
        # positives outside are missed; negatives inside are false alarms
        return (n_pos - inside_pos) + (inside_total - inside_pos)

    def _predict(self, index: int, x: np.ndarray) -> np.ndarray:
        lo, hi = self.grid[self._lo[index]], self.grid[self._hi[index]]
        return ((x > lo) & (x <= hi)).astype(np.int64)

    def describe(self, index: int) -> dict[str, Any]:
        i = self._index(index)
        return {
            "concept": "interval",
            "feature": self.feature,
            "low": float(self.grid[self._lo[i]]),
            "high": float(self.grid[self._hi[i]]),
        }

    def __repr__(self) -> str:
        return f"Intervals(T={self.grid.size}, feature={self.feature})"


def as_concept_class(concepts) -> ConceptClass:
    """A :class:`ConceptClass` from a class, a list of callables or a predictions matrix.

    Examples
    --------
    >>> as_concept_class([lambda X: X]).n_concepts
    1
    """
    if isinstance(concepts, ConceptClass):
        return concepts
    if isinstance(concepts, np.ndarray):
        return TabulatedConcepts(concepts)
    if isinstance(concepts, Sequence) and not isinstance(concepts, str | bytes):
        if len(concepts) == 0:
            raise ValueError("concepts is empty: a concept class needs at least one concept")
        return ConceptList(concepts)
    raise TypeError(
        "concepts must be a ConceptClass (Thresholds, DecisionStumps, Intervals, ...), a list "
        f"of callables or a predictions matrix, got {type(concepts).__name__}"
    )
