"""Exact batched draws from exponential-mechanism laws whose mass sits in a known window.

Used to *simulate* a mechanism on many resamples at once (the private median folded into a
bootstrap law, :func:`dpuq.inference._resampling.simulate_em_median`); nothing here releases
anything, but every draw follows the mechanism's exact law, so the simulated law is the
mechanism's law.

Setting: ``R`` rows, each a law ``P_r(j) ∝ exp(ℓ_r(j))`` over candidates ``j = 0..G-1``. The
caller knows ``ℓ_r`` explicitly on a contiguous window ``[start_r, start_r + L_r)`` and a bound
``ℓ_r(j) <= bound_r`` for every candidate outside it, and can evaluate ``ℓ_r`` at any single
candidate. The draw is rejection sampling with the proposal ``q_r(j) ∝ exp(ℓ_r(j))`` inside
the window and ``∝ exp(bound_r)`` outside: a proposed outside candidate is accepted with
probability ``exp(ℓ_r(j) - bound_r) <= 1``, and a rejected row starts over. The accepted draw
follows ``P_r`` exactly. Cost: ``O(sum_r L_r)`` plus a geometric number of cheap rounds for the
rows that propose outside their window (rare when the bound is small).

Every draw is exact for the given doubles, with the samplers of
:mod:`dpuq.mechanisms.log_weights` (no floating-point exponential or Gumbel variates): a row's
proposal (its window's units and one "outside" entry of log-weight ``log(#outside) + bound``)
is drawn by :func:`~dpuq.mechanisms.log_weights.sample_log_weights_rows`, and Bernoulli(``e^{-a}``)
acceptances by :func:`~dpuq.mechanisms.exact.bernoulli_certified` (certified float bounds,
exact rationals for the rare undecided cases).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dpuq.mechanisms.exact import bernoulli_certified
from dpuq.mechanisms.log_weights import sample_log_weights_rows

__all__ = ["bernoulli_exp_neg", "sample_segments", "windowed_exponential_mechanism"]


def bernoulli_exp_neg(a, rng: np.random.Generator) -> np.ndarray:
    """Independent Bernoulli(``exp(-a_r)``) draws for ``a_r >= 0`` (``inf`` gives False), exact.

    Examples
    --------
    >>> import numpy as np
    >>> bernoulli_exp_neg(np.array([0.0, np.inf]), np.random.default_rng(0)).tolist()
    [True, False]
    """
    a = np.asarray(a, dtype=float)
    flat = a.reshape(-1)
    out = np.zeros(flat.size, dtype=bool)
    finite = np.flatnonzero(np.isfinite(flat))
    if finite.size:
        vals = flat[finite]
        with np.errstate(under="ignore"):
            p = np.exp(-vals)  # certified within 2^-41 relative (dpuq.mechanisms.log_weights)

        def exact(i):
            return -Fraction(float(vals[i])), Fraction(1)

        out[finite] = bernoulli_certified(p, 2.0**-41, rng, exact)
    return out.reshape(a.shape)


def _padded(log_weights: np.ndarray, lengths: np.ndarray, extra: int = 0) -> np.ndarray:
    """Segments as the rows of a ``-inf``-padded matrix (``extra`` more columns at the end)."""
    starts = np.cumsum(lengths) - lengths
    rows = np.repeat(np.arange(lengths.size), lengths)
    pos = np.arange(log_weights.size) - np.repeat(starts, lengths)
    grid = np.full((lengths.size, int(lengths.max(initial=0)) + extra), -np.inf)
    grid[rows, pos] = log_weights
    return grid


def sample_segments(log_weights, lengths, rng: np.random.Generator) -> np.ndarray:
    """One draw per segment: index ``i`` within segment ``r`` with probability ``∝ exp(ℓ_i)``.

    ``log_weights`` is the concatenation of the segments, ``lengths`` their sizes (each >= 1,
    each segment with at least one finite log-weight). Exact, vectorised over segments.

    Examples
    --------
    >>> import numpy as np
    >>> sample_segments(np.array([0.0, -np.inf, -np.inf, 0.0]), np.array([2, 2]),
    ...                 np.random.default_rng(0)).tolist()
    [0, 1]
    """
    lw = np.asarray(log_weights, dtype=float)
    lengths = np.asarray(lengths, dtype=np.int64)
    return sample_log_weights_rows(_padded(lw, lengths), rng)


def windowed_exponential_mechanism(
    log_weights_in,
    units_per_row,
    unit_first,
    unit_size,
    n_candidates: int,
    log_bound_out,
    outside_log_weight: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rng: np.random.Generator,
) -> np.ndarray:
    """Exact draws ``j_r ~ P_r(j) ∝ exp(ℓ_r(j))``, one per row (see the module docstring).

    Each row's window is given as consecutive *units*: runs of candidates of equal ``ℓ_r``
    (unit ``u`` covers ``unit_first[u] .. unit_first[u] + unit_size[u] - 1``), so a window of
    many tied candidates costs one entry. A unit is drawn with probability
    ``∝ unit_size exp(ℓ)``, then a candidate uniformly inside it.

    Parameters
    ----------
    log_weights_in : ndarray
        ``ℓ_r`` of each unit of each row's window, rows one after another.
    units_per_row : ndarray of shape (R,)
        Number of units (>= 1) of each row's window.
    unit_first, unit_size : ndarray
        First candidate index and number of candidates of each unit (same layout as
        ``log_weights_in``); a row's units are contiguous and in increasing order.
    n_candidates : int
        ``G``, the number of candidates of every row.
    log_bound_out : ndarray of shape (R,)
        ``bound_r >= ℓ_r(j)`` for every candidate ``j`` outside row ``r``'s window.
    outside_log_weight : callable
        ``outside_log_weight(rows, j)`` returns ``ℓ_rows(j)`` (arrays of equal shape).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (R,)
        The drawn candidate index of each row.

    Examples
    --------
    >>> import numpy as np
    >>> j = windowed_exponential_mechanism(  # one row, units {1} and {2, 3} of 5 candidates
    ...     np.array([0.0, -1.0]), np.array([2]), np.array([1, 2]), np.array([1, 2]), 5,
    ...     np.array([-np.inf]), lambda r, j: np.full(r.shape, -np.inf),
    ...     np.random.default_rng(0))
    >>> int(j[0]) in (1, 2, 3)
    True
    """
    first = np.asarray(unit_first, dtype=np.int64)
    size = np.asarray(unit_size, dtype=np.int64)
    counts = np.asarray(units_per_row, dtype=np.int64)
    with np.errstate(divide="ignore"):
        lw = np.asarray(log_weights_in, dtype=float) + np.log(size)
    bound = np.asarray(log_bound_out, dtype=float)
    row_first = np.cumsum(counts) - counts
    row_last = row_first + counts - 1
    start = first[row_first]
    length = first[row_last] + size[row_last] - start
    n_out = n_candidates - length
    with np.errstate(divide="ignore"):
        log_out = np.where(n_out > 0, np.log(np.maximum(n_out, 1)) + bound, -np.inf)
    # proposal per row: its window's units, then one entry for "outside the window"
    grid = _padded(lw, counts, extra=1)
    grid[:, -1] = log_out
    out = np.empty(counts.size, dtype=np.int64)
    pending = np.arange(counts.size)
    while pending.size:
        col = sample_log_weights_rows(grid[pending], rng)
        go_out = col == grid.shape[1] - 1
        rows_in = pending[~go_out]
        unit = row_first[rows_in] + col[~go_out]
        out[rows_in] = first[unit] + rng.integers(0, size[unit])  # uniform inside the unit
        rows = pending[go_out]
        if rows.size == 0:
            break
        u = rng.integers(0, n_out[rows])  # uniform over the candidates outside the window
        j = np.where(u < start[rows], u, u + length[rows])
        accept = bernoulli_exp_neg(bound[rows] - outside_log_weight(rows, j), rng)
        out[rows[accept]] = j[accept]
        pending = rows[~accept]  # rejected: draw the row's proposal again
    return out
