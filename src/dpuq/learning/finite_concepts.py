"""User-supplied finite concept classes: a list of callables, or a table of predictions over a
finite public domain (:class:`ConceptList`, :class:`TabulatedConcepts`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpuq.learning.concept_base import ConceptClass, _n_rows, check_binary_labels

__all__ = [
    "ConceptList",
    "TabulatedConcepts",
]


# ---------------------------------------------------------------------------------------------
# user-supplied finite classes
# ---------------------------------------------------------------------------------------------


class ConceptList(ConceptClass):
    """Any finite list of user-supplied concepts (callables ``X -> labels in {0, 1}``).

    Each callable receives ``X`` as given and must return ``n`` labels 0/1. The callables are
    evaluated once each per call (a loop over concepts is unavoidable here); for large classes
    prefer a built-in class or :class:`TabulatedConcepts`.

    Examples
    --------
    >>> import numpy as np
    >>> c = ConceptList([lambda X: np.zeros(len(X)), lambda X: np.asarray(X)[:, 0] > 0])
    >>> c.error_counts(np.array([[-1.0], [2.0]]), [0, 1]).tolist()
    [1, 0]
    """

    def __init__(self, concepts: Sequence[Callable]) -> None:
        items = list(concepts)
        if not items:
            raise ValueError("concepts is empty: a concept class needs at least one concept")
        bad = [i for i, c in enumerate(items) if not callable(c)]
        if bad:
            raise TypeError(f"concepts must be callables; entries {bad[:5]} are not")
        self.concepts = items

    @property
    def n_concepts(self) -> int:
        return len(self.concepts)

    def _check_X(self, X):
        if not hasattr(X, "__len__"):
            raise ValueError("X must be a sequence or array of samples")
        if len(X) == 0:
            raise ValueError("X is empty")
        return X

    def _labels(self, index: int, X) -> np.ndarray:
        out = np.asarray(self.concepts[index](X))
        n = _n_rows(X)
        if out.shape != (n,):
            raise ValueError(f"concept {index} returned shape {out.shape}, expected ({n},)")
        return check_binary_labels(out, n, name=f"labels from concept {index}")

    def _error_counts(self, X, y: np.ndarray) -> np.ndarray:
        return np.array(
            [np.count_nonzero(self._labels(i, X) != y) for i in range(self.n_concepts)],
            dtype=np.int64,
        )

    _predict = _labels

    def released(self, index: int) -> tuple[ConceptList, int]:
        """Only the released callable."""
        i = self._index(index)
        return ConceptList([self.concepts[i]]), 0

    def describe(self, index: int) -> dict[str, Any]:
        i = self._index(index)
        fn = self.concepts[i]
        return {"concept": "user", "index": i, "name": getattr(fn, "__name__", repr(fn))}

    def __repr__(self) -> str:
        return f"ConceptList(n_concepts={self.n_concepts})"


class TabulatedConcepts(ConceptClass):
    """Concepts given by their labels on every point of a finite public domain.

    ``predictions[c, v]`` is the label (0/1) that concept ``c`` gives to domain point ``v``;
    samples are domain indices ``X[i]`` in ``0 .. n_domain - 1``. This is the lecture notes'
    finite data universe. Errors of all concepts at once: ``P @ (neg - pos) + n_pos`` with
    per-point label counts, ``O(n + |C| · n_domain)``.

    The domain must be **public** and fixed before the data are seen (e.g. the cells of a
    public grid, the answers of a questionnaire): ``X[i]`` says which domain point person
    ``i`` is. Never tabulate concepts on the training points themselves (columns indexed by
    training rows, ``X = np.arange(n)``): the table would then be a function of the training
    features, the concept class would not be public, the ε-DP argument of
    :class:`~dpuq.learning.PrivateERMClassifier` would not hold, and the table would reveal
    every person's features. A fitted learner keeps (and pickles) only the released row.

    Examples
    --------
    >>> import numpy as np
    >>> c = TabulatedConcepts(np.array([[0, 0, 1], [0, 1, 1]]))
    >>> c.error_counts([0, 1, 2, 2], [0, 1, 1, 1]).tolist()
    [1, 0]
    """

    def __init__(self, predictions) -> None:
        p = np.asarray(predictions)
        if p.ndim != 2:
            raise ValueError(
                f"predictions must be 2-dimensional (n_concepts, n_domain), got {p.shape}"
            )
        if p.shape[0] == 0:
            raise ValueError("predictions has no rows: a concept class needs at least one concept")
        if p.shape[1] == 0:
            raise ValueError("predictions has no columns: the domain is empty")
        if p.dtype.kind not in "biuf" or not np.all((p == 0) | (p == 1)):
            raise ValueError("predictions must hold binary labels 0/1")
        self.predictions = p.astype(np.int8)

    @property
    def n_concepts(self) -> int:
        return int(self.predictions.shape[0])

    def _check_X(self, X) -> np.ndarray:
        arr = np.asarray(X)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1:
            raise ValueError(f"X must be a 1-d array of domain indices, got shape {arr.shape}")
        if arr.size == 0:
            raise ValueError("X is empty")
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            raise ValueError(f"X must hold integer domain indices, got dtype {arr.dtype}")
        d = self.predictions.shape[1]
        bad = int(np.count_nonzero((arr < 0) | (arr >= d)))
        if bad:
            raise ValueError(f"X has index(es) outside the domain 0..{d - 1}")
        return arr.astype(np.intp)

    def _error_counts(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        d = self.predictions.shape[1]
        pos = np.bincount(x[y == 1], minlength=d)
        neg = np.bincount(x[y == 0], minlength=d)
        diff = (neg - pos).astype(np.float64)  # exact: counts are far below 2**53
        return np.rint(self.predictions @ diff).astype(np.int64) + int(pos.sum())

    def _predict(self, index: int, x: np.ndarray) -> np.ndarray:
        return self.predictions[index, x].astype(np.int64)

    def describe(self, index: int) -> dict[str, Any]:
        return {"concept": "tabulated", "index": self._index(index)}

    def released(self, index: int) -> tuple[TabulatedConcepts, int]:
        """Only the released concept's row (its labels on the public domain)."""
        i = self._index(index)
        return TabulatedConcepts(self.predictions[i : i + 1]), 0

    def __repr__(self) -> str:
        n, d = self.predictions.shape
        return f"TabulatedConcepts(n_concepts={n}, n_domain={d})"
