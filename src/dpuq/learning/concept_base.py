"""What every finite concept class shares: label and feature checks, the :class:`ConceptClass`
interface (error counts of all concepts at once), and the counting helpers of the grids."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpuq._validation import as_real_array, check_positive_int, to_ndarray

__all__ = [
    "ConceptClass",
    "check_binary_labels",
]


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


def check_binary_labels(y, n_samples: int | None = None, name: str = "y") -> np.ndarray:
    """Return labels as an int64 array of 0s and 1s; anything else is a ``ValueError``.

    Examples
    --------
    >>> check_binary_labels([True, False, 1.0]).tolist()
    [1, 0, 1]
    """
    arr = to_ndarray(y, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(f"X has {n_samples} samples but {name} has {arr.shape[0]} labels")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if arr.dtype.kind not in "biuf":  # bool is accepted here: True is the label 1
        raise TypeError(f"{name} must hold binary labels 0/1, got dtype {arr.dtype}")
    bad = ~((arr == 0) | (arr == 1))
    if bad.any():  # no count and no value: both depend on the data
        raise ValueError(
            f"{name} must hold binary labels 0/1 (this concept class is binary); some are not"
        )
    return arr.astype(np.int64)


def _check_features(X, name: str = "X") -> np.ndarray:
    arr = as_real_array(X, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_samples, n_features), got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ValueError(f"{name} has non-finite value(s) (NaN or inf)")  # no count: data
    return arr


def _check_grid(grid, name: str) -> np.ndarray:
    g = as_real_array(grid, name)
    if g.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {g.shape}")
    if g.size == 0:
        raise ValueError(f"{name} is empty: the concept class would be empty")
    if not np.all(np.isfinite(g)):
        raise ValueError(f"{name} has non-finite values")
    if g.size > 1 and not np.all(np.diff(g) > 0):
        raise ValueError(f"{name} must be strictly increasing (sorted, no repeats)")
    return g


def _check_feature_index(feature, name: str = "feature") -> int:
    return check_positive_int(feature, name, minimum=0)


# ---------------------------------------------------------------------------------------------
# the interface
# ---------------------------------------------------------------------------------------------


class ConceptClass:
    """A finite public set of binary classifiers, indexed ``0 .. n_concepts - 1``.

    Subclasses implement ``n_concepts``, ``_check_X``, ``_error_counts``, ``_predict`` and
    ``describe``. The class holds only public parameters (grids, callables), never data.
    """

    @property
    def n_concepts(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def __len__(self) -> int:
        return self.n_concepts

    def _check_X(self, X) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _error_counts(self, X, y: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict(self, index: int, X) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self, index: int) -> dict[str, Any]:  # pragma: no cover - abstract
        """The parameters of concept ``index`` as a dict of plain Python values."""
        raise NotImplementedError

    def check_data(self, X, y) -> tuple[Any, np.ndarray]:
        """Validate features and binary labels together; returns ``(X, y)``."""
        Xc = self._check_X(X)
        return Xc, check_binary_labels(y, _n_rows(Xc))

    def error_counts(self, X, y) -> np.ndarray:
        """``#{i : c(x_i) != y_i}`` for every concept, shape ``(n_concepts,)``, int64."""
        Xc, yc = self.check_data(X, y)
        return self._error_counts(Xc, yc)

    def empirical_errors(self, X, y) -> np.ndarray:
        """Empirical errors ``L_X(c)`` in [0, 1] for every concept."""
        Xc, yc = self.check_data(X, y)
        return self._error_counts(Xc, yc) / yc.size

    def _index(self, index) -> int:
        i = check_positive_int(index, "index", minimum=0)
        if i >= self.n_concepts:
            raise ValueError(f"index must be < n_concepts = {self.n_concepts}, got {i}")
        return i

    def predict(self, index: int, X) -> np.ndarray:
        """Labels (0/1, int64) that concept ``index`` gives to the rows of ``X``."""
        return self._predict(self._index(index), self._check_X(X))

    def released(self, index: int) -> tuple[ConceptClass, int]:
        """What a fitted learner keeps of the class: ``(class, position)`` such that
        ``class.predict(position, X)`` is concept ``index``. The default keeps the class (a
        public grid); classes given as tables or callables keep only the released concept."""
        return self, self._index(index)


def _n_rows(X) -> int:
    return int(X.shape[0]) if hasattr(X, "shape") else len(X)


def _counts_at_or_below(cells: np.ndarray, y: np.ndarray, n_cells: int):
    """Totals and positives per cell (``cells`` is ``(n,)`` or ``(n, d)``, same rows as y)."""
    total = np.bincount(cells.ravel(), minlength=n_cells)
    positive = np.bincount(cells[y == 1].ravel(), minlength=n_cells)
    return total, positive


def _threshold_errors_above(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Errors of ``1{x > t}`` for every ``t`` in grid (one feature)."""
    cells = np.searchsorted(grid, x, side="left")  # x <= grid[j]  <=>  cell <= j
    total, positive = _counts_at_or_below(cells, y, grid.size + 1)
    le_total = np.cumsum(total)[:-1]
    le_pos = np.cumsum(positive)[:-1]
    n_neg = y.size - int(positive.sum())
    # positives at or below t are missed; negatives above t are false alarms
    return le_pos + (n_neg - (le_total - le_pos))
