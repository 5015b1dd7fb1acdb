"""Coverage and size of prediction sets class by class (for class-conditional guarantees)."""

from __future__ import annotations

import numpy as np

__all__ = ["class_coverage_table", "coverage_by_class"]


def coverage_by_class(sets, labels, n_classes: int | None = None):
    """Per true class: number of test points, coverage and mean set size.

    Parameters
    ----------
    sets : ndarray of bool, shape (n, K)
    labels : array-like of int, shape (n,)
        True classes ``0..K-1``.
    n_classes : int, optional
        Defaults to ``K``, the number of columns.

    Returns
    -------
    counts : ndarray of int, shape (K,)
    coverage : ndarray of float, shape (K,)
        NaN for a class with no test point.
    mean_size : ndarray of float, shape (K,)
        Mean size of the sets of the points of that class (NaN if none).

    Examples
    --------
    >>> sets = np.array([[True, False], [True, True], [False, False]])
    >>> n, cov, size = coverage_by_class(sets, [0, 1, 1])
    >>> n.tolist(), cov.tolist(), size.tolist()
    ([1, 2], [1.0, 0.5], [1.0, 1.0])
    """
    s = np.asarray(sets)
    if s.dtype != bool or s.ndim != 2:
        raise ValueError(f"sets must be a 2-d boolean array, got {s.dtype} {s.shape}")
    k = s.shape[1] if n_classes is None else int(n_classes)
    y = np.asarray(labels)
    if y.shape != (s.shape[0],) or y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= k:
        raise ValueError(f"labels must be {s.shape[0]} integers in 0..{k - 1}")
    counts = np.bincount(y, minlength=k)
    hits = np.bincount(y, weights=s[np.arange(y.size), y], minlength=k)
    sizes = np.bincount(y, weights=s.sum(axis=1), minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return counts, hits / counts, sizes / counts


def class_coverage_table(
    labels, class_names=None, **sets_by_method
) -> list[dict[str, float | int | str]]:
    """Rows of per-class coverage and size for several methods side by side, then "all".

    Parameters
    ----------
    labels : array-like of int, shape (n,)
    class_names : sequence of str, optional
    **sets_by_method : ndarray of bool, shape (n, K)
        e.g. ``marginal=..., class_conditional=...``.

    Returns
    -------
    list of dict
        One per class (``class``, ``n``, and ``<method> coverage`` / ``<method> size``), then a
        row ``all`` with the marginal figures.

    Examples
    --------
    >>> a = np.array([[True, False], [False, True]])
    >>> rows = class_coverage_table([0, 0], marginal=a, full=np.ones((2, 2), bool))
    >>> rows[0]["marginal coverage"], rows[0]["full size"], rows[-1]["class"]
    (0.5, 2.0, 'all')
    """
    y = np.asarray(labels)
    k = next(iter(sets_by_method.values())).shape[1]
    names = [str(c) for c in (class_names if class_names is not None else range(k))]
    rows: list[dict] = [{"class": names[c]} for c in range(k)] + [{"class": "all"}]
    for method, sets in sets_by_method.items():
        n, cov, size = coverage_by_class(sets, y, k)
        for c in range(k):
            rows[c]["n"] = int(n[c])
            rows[c][f"{method} coverage"] = float(cov[c])
            rows[c][f"{method} size"] = float(size[c])
        rows[k]["n"] = int(y.size)
        rows[k][f"{method} coverage"] = float(np.mean(sets[np.arange(y.size), y]))
        rows[k][f"{method} size"] = float(np.mean(sets.sum(axis=1)))
    return rows
