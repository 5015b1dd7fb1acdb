"""Neighbouring data sets for dpuq's data shapes, and data sets that make audits strong.

Every generator takes a data set and returns a list of :class:`Neighbours`, pairs ``(D, D')``
that differ in one record (replace-one, ``n`` public: dpuq's relation). They are fresh arrays;
the input is never modified. The records moved are chosen from public positions (ranks,
indices), so a generator can be run by a steward on any data set of the shape.

======================  ======================================  ==================================
generator               data shape                              the neighbour
======================  ======================================  ==================================
``scores``              scores in [0, 1], shape (n,)            one score moved to 0 or to 1
``labelled_scores``     ``(scores, labels)``                    one pair: score to 0/1, new label
``rows``                rows of a user statistic, (n,) / (n,d)  one row moved to a public bound
``losses``              loss matrix (n, m) of risk control      one row to all 0 or to all 1
``training_set``        ``(X, y)`` of a classifier              one example replaced by a canary
======================  ======================================  ==================================

:func:`worst_case_data` gives, per shape, small data sets on which neighbours move a release
the most (ties at one value, evenly spread values, two clusters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "GENERATORS",
    "Neighbours",
    "labelled_score_neighbours",
    "loss_neighbours",
    "row_neighbours",
    "score_neighbours",
    "training_set_neighbours",
    "worst_case_data",
]

#: Ranks (as quantiles of the sorted data) of the records the generators move by default.
DEFAULT_QUANTILES = (0.5, 0.9)


@dataclass(frozen=True)
class Neighbours:
    """Two data sets that differ in one record, and what was changed."""

    name: str
    data: Any
    neighbour: Any


def _ranked_indices(values: np.ndarray, quantiles: Sequence[float]) -> list[int]:
    order = np.argsort(values, kind="stable")
    picks = [int(order[min(values.size - 1, int(q * values.size))]) for q in quantiles]
    return list(dict.fromkeys(picks))


def _check_quantiles(quantiles) -> tuple[float, ...]:
    qs = tuple(float(q) for q in quantiles)
    if not qs or any(not 0.0 <= q <= 1.0 for q in qs):
        raise ValueError("quantiles must be a non-empty list of numbers in [0, 1]")
    return qs


def score_neighbours(scores, *, quantiles: Sequence[float] = DEFAULT_QUANTILES) -> list[Neighbours]:
    """Scores in [0, 1]: move the score at each rank quantile to 0 and to 1.

    Examples
    --------
    >>> [p.name for p in score_neighbours([0.2, 0.4, 0.6], quantiles=[0.5])]
    ['score of rank 0.5 -> 0', 'score of rank 0.5 -> 1']
    """
    s = np.asarray(scores, dtype=float).ravel()
    if s.size < 1 or np.any(~np.isfinite(s)) or np.any((s < 0) | (s > 1)):
        raise ValueError("scores must be a non-empty array of numbers in [0, 1]")
    out = []
    for q, i in zip(_check_quantiles(quantiles), _ranked_indices(s, quantiles), strict=False):
        for value in (0.0, 1.0):
            moved = s.copy()
            moved[i] = value
            out.append(Neighbours(f"score of rank {q:g} -> {value:g}", s.copy(), moved))
    return out


def labelled_score_neighbours(
    data, *, n_classes: int | None = None, quantiles: Sequence[float] = DEFAULT_QUANTILES
) -> list[Neighbours]:
    """``(scores, labels)`` pairs: one pair's score to 0 or 1 and its label to the next class.

    Examples
    --------
    >>> pairs = labelled_score_neighbours(([0.1, 0.9], [0, 1]), quantiles=[1.0])
    >>> pairs[0].neighbour[1].tolist()  # the pair of the largest score: label 1 -> 0
    [0, 0]
    """
    scores, labels = data
    s = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(labels).ravel().astype(np.int64)
    if s.size != y.size or s.size < 1:
        raise ValueError("scores and labels must be non-empty and of one length")
    k = int(n_classes) if n_classes is not None else int(y.max()) + 1
    out = []
    for q, i in zip(_check_quantiles(quantiles), _ranked_indices(s, quantiles), strict=False):
        for value in (0.0, 1.0):
            s2, y2 = s.copy(), y.copy()
            s2[i], y2[i] = value, (y[i] + 1) % max(k, 1)
            name = f"pair of rank {q:g} -> score {value:g}, next class"
            out.append(Neighbours(name, (s.copy(), y.copy()), (s2, y2)))
    return out


def row_neighbours(
    rows, *, bounds, quantiles: Sequence[float] = DEFAULT_QUANTILES
) -> list[Neighbours]:
    """Rows of a user statistic: the row at each rank (of its first column) to each bound.

    ``bounds = (low, high)`` are public (scalars or one value per column).

    Examples
    --------
    >>> [p.neighbour.tolist() for p in row_neighbours([1.0, 2.0, 3.0], bounds=(0, 5),
    ...                                               quantiles=[0.0])]
    [[0.0, 2.0, 3.0], [5.0, 2.0, 3.0]]
    """
    x = np.array(rows, dtype=float)
    if x.ndim not in (1, 2) or x.shape[0] < 1:
        raise ValueError("rows must have shape (n,) or (n, d) with n >= 1")
    low, high = bounds
    key = x if x.ndim == 1 else x[:, 0]
    out = []
    for q, i in zip(_check_quantiles(quantiles), _ranked_indices(key, quantiles), strict=False):
        for name, value in (("low", low), ("high", high)):
            moved = x.copy()
            moved[i] = value
            out.append(Neighbours(f"row of rank {q:g} -> {name} bound", x.copy(), moved))
    return out


def loss_neighbours(losses) -> list[Neighbours]:
    """Loss matrices (n, m): the first row to all zeros and to ones (0 at the last λ).

    Examples
    --------
    >>> loss_neighbours([[0.5, 0.0], [0.5, 0.0]])[1].neighbour.tolist()
    [[1.0, 0.0], [0.5, 0.0]]
    """
    x = np.array(losses, dtype=float)
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError("losses must have shape (n, m) with m >= 2")
    worst = np.ones(x.shape[1])
    worst[-1] = 0.0
    out = []
    for name, row in (("zero losses", np.zeros(x.shape[1])), ("full losses", worst)):
        moved = x.copy()
        moved[0] = row
        out.append(Neighbours(f"first row -> {name}", x.copy(), moved))
    return out


def training_set_neighbours(data, *, canary=None, canary_label: int | None = None):
    """``(X, y)``: the first example replaced by a canary (default: every feature at the
    data's maximum, labelled with the next class after the first example's).

    Examples
    --------
    >>> X, y = np.zeros((3, 2)), np.array([0, 1, 0])
    >>> p = training_set_neighbours((X, y), canary=np.ones(2))[0]
    >>> p.neighbour[0][0].tolist(), int(p.neighbour[1][0])
    ([1.0, 1.0], 1)
    """
    X, y = data
    X = np.array(X, dtype=np.float32)
    y = np.array(y).astype(np.int64)
    if X.shape[0] != y.shape[0] or X.shape[0] < 1:
        raise ValueError("X and y must be non-empty and of one length")
    c = np.full(X.shape[1:], X.max(), dtype=np.float32) if canary is None else canary
    label = (int(y[0]) + 1) % (int(y.max()) + 1 or 1) if canary_label is None else canary_label
    X2, y2 = X.copy(), y.copy()
    X2[0] = np.asarray(c, dtype=np.float32).reshape(X.shape[1:])
    y2[0] = label
    return [Neighbours("first example -> canary", (X.copy(), y.copy()), (X2, y2))]


GENERATORS: dict[str, Callable[..., list[Neighbours]]] = {
    "scores": score_neighbours,
    "labelled_scores": labelled_score_neighbours,
    "rows": row_neighbours,
    "losses": loss_neighbours,
    "training_set": training_set_neighbours,
}


def worst_case_data(kind: str, n: int, **options) -> list[Any]:
    """Small data sets of shape ``kind`` on which one record moves a release the most.

    ``scores``: all at 0.5 (ties), evenly spread, two clusters; ``labelled_scores``: the same
    with alternating labels of ``n_classes`` (default 2); ``rows``: the same shapes between
    ``bounds``; ``losses``: ``m`` grid values (default 10), rows of decreasing steps.

    Examples
    --------
    >>> [d.round(2).tolist() for d in worst_case_data("scores", 3)]
    [[0.5, 0.5, 0.5], [0.25, 0.5, 0.75], [0.2, 0.2, 0.8]]
    """
    if kind not in ("scores", "labelled_scores", "rows", "losses"):
        raise ValueError(f"kind must be scores, labelled_scores, rows or losses, got {kind!r}")
    if isinstance(n, bool) or int(n) != n or n < 2:
        raise ValueError(f"n must be an integer >= 2, got {n!r}")
    base = [
        np.full(n, 0.5),
        np.arange(1, n + 1) / (n + 1),
        np.where(np.arange(n) < (n + 1) // 2, 0.2, 0.8),
    ]
    if kind == "scores":
        return base
    if kind == "labelled_scores":
        k = int(options.get("n_classes", 2))
        return [(s, np.arange(n) % k) for s in base]
    if kind == "rows":
        low, high = options["bounds"]
        return [low + (high - low) * s for s in base]
    m = int(options.get("m", 10))
    steps = (np.arange(n)[:, None] % (m - 1)) < np.arange(m)[None, :]
    losses = np.where(steps, 0.0, 1.0)
    losses[:, -1] = 0.0
    return [losses, np.where(np.arange(m) < m - 1, 0.5, 0.0)[None, :].repeat(n, 0)]
