"""Ready-made statistics for :func:`dpuq.private_confidence_interval` (``statistic=f``).

Each factory returns a **vectorised** ``f(rows, sample_weight)`` in the form the general path
calls (scikit-learn's ``sample_weight`` convention): ``rows`` is a subset's ``(b, p)`` table
(or ``(b,)`` for one column), ``sample_weight`` a weight vector ``(b,)`` or a stack ``(T, b)``
of them (then pass ``vectorized=True``: one call per subset instead of ``T``, the bootstrap
resamples computed together). The value is a float for ``(b,)`` weights, an array ``(T,)``
for ``(T, b)``.

They are the twelve statistics of the validity zoo (issue 33: coverage measured on 16 real
tables, ``docs/how-to/general_intervals.md``) written once, with weights applied exactly as
the full-data estimator would apply frequencies, and without the traps of hand-written ones:
they never modify their arguments (the general path hands every call fresh, read-only
arrays anyway), they use nothing but their arguments (no state carried between calls,
which the privacy argument needs), and where a subset leaves the statistic undefined (a
constant column, an empty group or 2×2 cell, a separated logistic fit) they return NaN or
±inf, which the release counts as **no estimate**, never a made-up number. A row of weight 0
is absent, whatever its value (NaN and ``inf`` included); a missing value (NaN) in a row with
weight makes that weight row's value NaN, never a 0 or a label read off it. Values beyond
about ``1e154`` overflow in squares: rescale such data first.

**Bounded influence** (:func:`clipped`, any statistic; ``x_bounds``/``y_bounds`` of
:func:`ols_slope`): clip the inputs to public bounds before computing the statistic. The
estimand becomes the statistic on clipped data, but no single
row can pull it far: on the held-out HMDA table, where one row of extreme leverage moves
the plain slope from 0.59 to 0.70, intervals for the plain slope covered 0.52 and for the
slope on ratios clipped to [0, 1] 0.90 (200 samples, ``benchmarks/bench_bounded_influence.py``,
which also clips two heavy-tailed SDs).

Examples
--------
>>> import numpy as np, dpuq
>>> rng = np.random.default_rng(0)
>>> x = rng.normal(size=4000)
>>> rows = np.column_stack([x, 1.0 + 2.0 * x + rng.normal(size=4000)])
>>> f = ols_slope(x=0, y=1)
>>> round(float(f(rows, np.ones(4000))), 2)  # np.polyfit(x, rows[:, 1], 1)[0] too
2.0
>>> ci = dpuq.private_confidence_interval(rows, statistic=f, statistic_bounds=(-10, 10),
...                                       vectorized=True, alpha=0.1, epsilon=1.0,
...                                       random_state=0)
>>> bool(ci.lower < 2.0 < ci.upper)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import expit

from dpuq._validation import check_in_open_unit
from dpuq.inference._weighted import (
    _bounds,
    _centred,
    _column,
    _get,
    _live,
    _named,
    _nan_where_missing,
    _out,
    _weights,
    _wmean,
)

__all__ = [
    "auc",
    "clipped",
    "correlation",
    "difference_of_means",
    "log_odds_ratio",
    "logistic_slope",
    "ols_slope",
    "ratio_of_means",
    "standard_deviation",
    "variance",
    "weighted_quantile",
]


def standard_deviation(column: int = 0) -> Callable:
    """Weighted standard deviation of one column (plug-in, ``ddof = 0``, as ``np.std``).

    Examples
    --------
    >>> f = standard_deviation()
    >>> float(f(np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4)))  # np.std: 1.118...
    1.118033988749895
    """
    col = _column(column, "column")

    def f(rows, sample_weight):
        w = _weights(sample_weight)
        d = _centred(w, _get(rows, col))
        return _out(np.sqrt((w * d**2).sum(axis=1) / w.sum(axis=1)), sample_weight)

    return _named("standard_deviation", f)


def variance(column: int = 0) -> Callable:
    """Weighted variance of one column (plug-in, ``ddof = 0``, as ``np.var``).

    Examples
    --------
    >>> float(variance()(np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4)))
    1.25
    """
    col = _column(column, "column")

    def f(rows, sample_weight):
        w = _weights(sample_weight)
        d = _centred(w, _get(rows, col))
        return _out((w * d**2).sum(axis=1) / w.sum(axis=1), sample_weight)

    return _named("variance", f)


def correlation(x: int = 0, y: int = 1) -> Callable:
    """Weighted Pearson correlation of columns ``x`` and ``y`` (NaN if one is constant).

    Examples
    --------
    >>> rows = np.array([[1.0, 2.0], [2.0, 4.1], [3.0, 5.9]])
    >>> round(float(correlation()(rows, np.ones(3))), 4)  # np.corrcoef: 0.99902
    0.999
    """
    cx, cy = _column(x, "x"), _column(y, "y")

    def f(rows, sample_weight):
        w = _weights(sample_weight)
        da, db = _centred(w, _get(rows, cx)), _centred(w, _get(rows, cy))
        num = (w * da * db).sum(axis=1)
        r = num / np.sqrt((w * da**2).sum(axis=1) * (w * db**2).sum(axis=1))
        return _out(r, sample_weight)

    return _named("correlation", f)


def ratio_of_means(numerator: int = 1, denominator: int = 0) -> Callable:
    """``mean(numerator) / mean(denominator)`` under the weights (e.g. cost per unit).

    Examples
    --------
    >>> rows = np.array([[1.0, 3.0], [3.0, 5.0]])
    >>> float(ratio_of_means()(rows, np.ones(2)))
    2.0
    """
    cn, cd = _column(numerator, "numerator"), _column(denominator, "denominator")

    def f(rows, sample_weight):
        w = _weights(sample_weight)
        return _out(_wmean(w, _get(rows, cn)) / _wmean(w, _get(rows, cd)), sample_weight)

    return _named("ratio_of_means", f)


def ols_slope(x: int = 0, y: int = 1, *, x_bounds=None, y_bounds=None) -> Callable:
    """Weighted least-squares slope of column ``y`` on column ``x`` (with an intercept).

    ``x_bounds``, ``y_bounds``: public ``(low, high)``; the columns are clipped to them first
    (:func:`clipped`: bounded influence, module docstring). NaN where ``x`` is constant.

    Examples
    --------
    >>> rows = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0], [30.0, 0.0]])
    >>> round(float(ols_slope()(rows, np.ones(4))), 3)  # the last row drives it (np.polyfit)
    -0.097
    >>> float(ols_slope(x_bounds=(0, 2))(rows, np.array([1.0, 1.0, 1.0, 0.0])))
    2.0
    """
    cx, cy = _column(x, "x"), _column(y, "y")
    xb, yb = _bounds(x_bounds, "x_bounds"), _bounds(y_bounds, "y_bounds")

    def f(rows, sample_weight):
        w = _weights(sample_weight)
        da, b = _centred(w, _get(rows, cx)), _live(w, _get(rows, cy))
        return _out((w * da * b).sum(axis=1) / (w * da**2).sum(axis=1), sample_weight)

    spec = {c: bd for c, bd in ((cx, xb), (cy, yb)) if bd is not None}
    return clipped(_named("ols_slope", f), spec) if spec else _named("ols_slope", f)


def clipped(statistic: Callable, bounds: dict) -> Callable:
    """``statistic`` on its rows with the given columns clipped to public bounds.

    Bounded influence: where a few extreme rows drive a statistic (the SD of a heavy-tailed
    income, a slope with one point of extreme leverage), no DP release can follow them, and
    the general path's subsets cannot either; clipped at bounds stated before seeing the data
    (domain knowledge: an income cap, a physiological range) no row moves the statistic far.
    The estimand changes to the statistic of the clipped population: say so when reporting it.

    Parameters
    ----------
    statistic : callable ``f(rows, sample_weight)``
    bounds : dict ``{column: (low, high)}``
        Public clipping bounds per column index (column 0 for one-column rows).

    Examples
    --------
    >>> income = np.array([1.0, 2.0, 3.0, 250.0])
    >>> sd = standard_deviation()
    >>> round(float(sd(income, np.ones(4))), 1), round(float(clipped(sd, {0: (0, 20)})(income,
    ...                                                                np.ones(4))), 2)
    (107.4, 7.83)
    """
    if not callable(statistic):
        raise TypeError("statistic must be callable: f(rows, sample_weight)")
    try:
        items = list(dict(bounds).items())
    except (TypeError, ValueError):
        raise ValueError("bounds must be a dict {column: (low, high)}") from None
    if not items:
        raise ValueError("bounds must name at least one column")
    spec = [(_column(c, "bounds' column"), _bounds(b, f"bounds[{c!r}]")) for c, b in items]

    def f(rows, sample_weight):
        r = np.array(rows, dtype=float)  # a copy: the caller's rows are never written to
        if r.ndim == 1:
            if any(c != 0 for c, _ in spec):
                raise ValueError("one-column rows have column 0 only")
            return statistic(np.clip(r, *spec[0][1]), sample_weight)
        for c, (lo, hi) in spec:
            r[:, c] = np.clip(r[:, c], lo, hi)
        return statistic(r, sample_weight)

    return _named(f"clipped {getattr(statistic, '__name__', 'statistic')}", f)


def logistic_slope(
    x: int = 0, z: int = 1, *, center: float = 0.0, scale: float = 1.0, iterations: int = 25
) -> Callable:
    """Slope of an unpenalised weighted logistic regression of the 0/1 column ``z`` on
    ``(x - center) / scale`` (Newton's method from 0; steps scaled down to at most 5 in any
    coordinate, their direction kept).

    ``center`` and ``scale`` must be public (domain knowledge), never the data's mean or SD.
    NaN (no estimate) where the slope is not defined: no event or no non-event among the
    rows with weight, ``x`` constant among them, or a fit that has not converged after
    ``iterations`` Newton steps (separation: the likelihood has no maximum and the slope runs
    off to infinity).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> xs = rng.normal(size=3000)
    >>> zs = (rng.random(3000) < 1 / (1 + np.exp(-(0.5 + 1.5 * xs)))).astype(float)
    >>> round(float(logistic_slope()(np.column_stack([xs, zs]), np.ones(3000))), 2)  # true 1.5
    1.43
    >>> separated = np.column_stack([[0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 1.0, 1.0]])
    >>> float(logistic_slope()(separated, np.ones(4)))
    nan
    """
    cx, cz = _column(x, "x"), _column(z, "z")
    c, s = float(center), float(scale)
    if not (math.isfinite(c) and math.isfinite(s) and s > 0):
        raise ValueError(f"center must be finite and scale finite and > 0, got {center}, {scale}")
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations must be an integer >= 1, got {iterations!r}")

    def f(rows, sample_weight):
        w = _weights(sample_weight)
        xs, zs = (_get(rows, cx) - c) / s, _get(rows, cz)
        # a non-finite x or a NaN label: no estimate where its row has weight, absent where
        # not (the fit runs on 0 there: its weight is 0, and 0 × inf would be NaN)
        missing = (np.where(np.isfinite(xs), xs, np.nan), zs)
        xs, zs = np.nan_to_num(missing[0]), np.nan_to_num(zs)
        design = np.column_stack([np.ones_like(xs), xs])
        outer = (design[:, :, None] * design[:, None, :]).reshape(-1, 4)
        beta = np.zeros((w.shape[0], 2))
        step = np.full_like(beta, np.inf)
        for _ in range(iterations):
            p = expit(beta @ design.T)
            grad = (w * (zs - p)) @ design
            hess = ((w * p * (1 - p)) @ outer).reshape(-1, 2, 2)
            trace = hess[:, 0, 0] + hess[:, 1, 1]  # relative (scale-free in the weights); 1
            ridge = 1e-9 * np.where(trace > 0, trace, 1.0)  # where no weight: never singular
            hess[:, [0, 1], [0, 1]] += ridge[:, None]
            step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
            # at most 5 in any coordinate, Newton's direction kept (clipping each coordinate
            # alone turned it, and near-separated fits that have a maximum cycled +5/-5)
            step = step * np.minimum(1.0, 5.0 / np.abs(step).max(axis=1, keepdims=True))
            beta = beta + step
            if not np.any(np.abs(step) > 1e-10):  # converged (or NaN) in every row
                break
        live = w > 0
        span = np.where(live, xs, -np.inf).max(axis=1) - np.where(live, xs, np.inf).min(axis=1)
        converged = np.all(np.abs(step) <= 1e-8 * np.maximum(1.0, np.abs(beta)), axis=1)
        defined = (w @ zs > 0) & (w @ (1.0 - zs) > 0) & (span > 0) & converged
        slope = _nan_where_missing(w, np.where(defined, beta[:, 1], np.nan), *missing)
        return _out(slope, sample_weight)

    return _named("logistic_slope", f)


def log_odds_ratio(outcome: int = 0, exposure: int = 1) -> Callable:
    """2×2 log odds ratio of two 0/1 columns from weighted counts, no continuity correction
    (a subset with an empty cell gives ±inf or NaN: no estimate; a correction of half a row
    would dominate small cells and bias the estimate towards 0 on subsets of tens of rows).

    Examples
    --------
    >>> rows = np.array([[1, 1], [1, 1], [0, 1], [1, 0], [0, 0], [0, 0]], dtype=float)
    >>> round(float(log_odds_ratio()(rows, np.ones(6))), 4)  # log((2*2)/(1*1))
    1.3863
    """
    co, ce = _column(outcome, "outcome"), _column(exposure, "exposure")

    def f(rows, sample_weight):
        w = _weights(sample_weight)
        zc, ec = _get(rows, co), _get(rows, ce)
        z, e = zc > 0.5, ec > 0.5
        a, b, c, d = (w @ ((z == zz) & (e == ee)) for zz in (True, False)
                      for ee in (True, False))  # fmt: skip
        lor = _nan_where_missing(w, np.log(a) + np.log(d) - np.log(b) - np.log(c), zc, ec)
        return _out(lor, sample_weight)

    return _named("log_odds_ratio", f)


def auc(score: int = 0, label: int = 1) -> Callable:
    """Weighted AUC of column ``score`` for the 0/1 column ``label``: the probability that a
    positive scores above a negative, ties counting one half (Mann-Whitney).

    Examples
    --------
    >>> rows = np.array([[0.1, 0], [0.4, 1], [0.35, 0], [0.8, 1]])
    >>> float(auc()(rows, np.ones(4)))
    1.0
    """
    cs, cl = _column(score, "score"), _column(label, "label")

    def f(rows, sample_weight):
        w = _weights(sample_weight)
        v, lab = _get(rows, cs), _get(rows, cl)
        missing = (v, lab)  # the columns as given (v is re-bound to its sorted copy below)
        order = np.argsort(v, kind="stable")
        v, pos = v[order], lab[order] > 0.5
        ws = w[:, order]
        wn = np.where(pos, 0.0, ws)
        _, start, counts = np.unique(v, return_index=True, return_counts=True)
        cum = np.cumsum(wn, axis=1)
        below = np.concatenate([np.zeros((w.shape[0], 1)), cum], axis=1)[:, start]
        tie = np.add.reduceat(wn, start, axis=1)
        group = np.repeat(np.arange(start.size), counts)
        credit = below[:, group] + tie[:, group] / 2.0
        num = (np.where(pos, ws, 0.0) * credit).sum(axis=1)
        value = num / (ws[:, pos].sum(axis=1) * wn.sum(axis=1))
        return _out(_nan_where_missing(w, value, *missing), sample_weight)

    return _named("auc", f)


def difference_of_means(y: int = 0, group: int = 1) -> Callable:
    """Weighted mean of column ``y`` where the 0/1 column ``group`` is 1, minus where it is 0
    (NaN where a subset has no row of a group).

    Examples
    --------
    >>> rows = np.array([[5.0, 1], [7.0, 1], [1.0, 0], [2.0, 0]])
    >>> float(difference_of_means()(rows, np.ones(4)))
    4.5
    """
    cy, cg = _column(y, "y"), _column(group, "group")

    def f(rows, sample_weight):
        w, v, gc = _weights(sample_weight), _get(rows, cy), _get(rows, cg)
        g, lv = gc > 0.5, _live(w, v)
        d = ((w[:, g] * lv[:, g]).sum(axis=1) / w[:, g].sum(axis=1)
             - (w[:, ~g] * lv[:, ~g]).sum(axis=1) / w[:, ~g].sum(axis=1))  # fmt: skip
        return _out(_nan_where_missing(w, d, v, gc), sample_weight)

    return _named("difference_of_means", f)


def weighted_quantile(q: float) -> Callable:
    """A vectorised ``f(rows, W)``: the ``q`` quantile of the first column under weights ``W``.

    Hazen's rule with weights: a row of weight ``w_i`` sits at cumulative probability
    ``(W_<i + w_i/2)/W_total`` and the quantile interpolates linearly between the rows
    with positive weight on either side of ``q`` (the end rows below the first and above the
    last). Its bias is far below the inverse CDF's ``O(1/b)`` on small subsets. ``W`` is
    ``(b,)`` or ``(T, b)``. The rule is scale-free in the weights (the general path weights
    every row ``n/b``); a row of integer weight ``k`` is one point at the middle of its block,
    so it is not Hazen's quantile of the rows repeated ``k`` times. NaN where no row has
    weight, or where a row with weight is NaN.

    Examples
    --------
    >>> f = weighted_quantile(0.5)
    >>> float(f(np.array([3.0, 1.0, 2.0]), np.ones(3)))
    2.0
    >>> f(np.array([3.0, 1.0, 2.0]), np.array([[1, 0, 0], [0, 5, 1]])).round(4).tolist()
    [3.0, 1.1667]
    """
    q = check_in_open_unit(q, "quantile")

    def f(rows, sample_weight):
        v = np.asarray(rows, dtype=float)
        v = v[:, 0] if v.ndim == 2 else v
        order = np.argsort(v, kind="stable")
        v = v[order]
        w = np.atleast_2d(np.asarray(sample_weight, dtype=float))[:, order]
        cum = np.cumsum(w, axis=1)
        pos = (cum - w / 2.0) / cum[:, -1:]
        idx = np.arange(v.size)
        live = w > 0
        below = np.where(live & (pos <= q), idx, -1).max(axis=1)
        above = np.where(live & (pos > q), idx, v.size).min(axis=1)
        lo_i, hi_i = np.maximum(below, 0), np.minimum(above, v.size - 1)
        rows_t = np.arange(w.shape[0])
        p_lo, p_hi = pos[rows_t, lo_i], pos[rows_t, hi_i]
        frac = np.where(p_hi > p_lo, (q - p_lo) / np.where(p_hi > p_lo, p_hi - p_lo, 1.0), 0.0)
        out = np.where(
            below < 0,
            v[hi_i],
            np.where(above >= v.size, v[lo_i], v[lo_i] + frac * (v[hi_i] - v[lo_i])),
        )
        # no weight at all, or a missing value among the rows with weight: no estimate
        out = _nan_where_missing(w, np.where(cum[:, -1] > 0, out, np.nan), v)
        return out if np.ndim(sample_weight) == 2 else out[0]

    return _named(f"weighted_quantile({q:g})", f)
