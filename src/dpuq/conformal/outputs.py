"""What ``predict_set`` and ``predict_interval`` return: MAPIE 1.x's ``(y_pred, sets)`` pair.

MAPIE 1.x users type ``y_pred, y_pred_set = clf.predict_set(X)`` and
``y_pred, y_pred_interval = reg.predict_interval(X)``; dpuq's estimators return the same pair.
Before, they returned the boolean sets (or the intervals) alone. So that code written for that
keeps working for one more release, the pair also behaves as its second member wherever an
array is expected (``result.shape``, ``result.sum(axis=1)``, ``result[:, k]``,
``np.asarray(result)``), with a :class:`FutureWarning` that says how to update. Two uses cannot
be both: ``result[0]`` / ``result[1]`` and ``len(result)`` and iteration are the pair's
(MAPIE's). Write ``_, sets = clf.predict_set(X)`` (or ``result.sets``).
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np

__all__ = ["ConformalPrediction"]

_HINT = (
    "predict_set and predict_interval return (y_pred, sets) as in MAPIE 1.x; using the result "
    "as the sets array is deprecated and stops working in the next release: write "
    "`_, sets = est.predict_set(X)` (or `est.predict_set(X).sets`)"
)


def _warn() -> None:
    warnings.warn(_HINT, FutureWarning, stacklevel=3)


class _Pair(NamedTuple):
    y_pred: np.ndarray
    sets: np.ndarray


class ConformalPrediction(_Pair):
    """``(y_pred, sets)``: point predictions and the sets (classifier: boolean, shape
    ``(n, n_classes)`` or ``(n, n_classes, L)``) or intervals (regressor: ``(n, 2)`` or
    ``(n, 2, L)``). Unpacks as MAPIE 1.x's pair; array use is the deprecated old output.

    Examples
    --------
    >>> out = ConformalPrediction(np.array([1, 0]), np.array([[False, True], [True, True]]))
    >>> y_pred, sets = out
    >>> sets.sum(axis=1).tolist()
    [1, 2]
    """

    __slots__ = ()

    def __array__(self, dtype=None, copy=None):
        _warn()
        return np.asarray(self.sets, dtype=dtype)

    def __getitem__(self, key):
        if isinstance(key, int | slice) and not isinstance(key, bool):
            return tuple.__getitem__(self, key)  # the pair, as MAPIE's tuple
        _warn()
        return self.sets[key]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or not hasattr(np.ndarray, name):
            raise AttributeError(name)
        _warn()
        return getattr(self.sets, name)
