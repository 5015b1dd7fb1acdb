"""One ε-DP conformal threshold per class (Mondrian sets), class sizes kept private.

Privacy (the only privacy-critical code of the class-conditional sets)
----------------------------------------------------------------------
Input: scores ``s_i`` in [0, 1] with labels ``y_i`` in ``0..K-1``. Public: ``K``, ``epsilon``,
the bins ``e_j = j/m`` (j = 1..m), a padding count ``P >= 0`` and a *rank schedule* ``ρ``: a
function of the class size with integer values, ``ρ(0) >= 0``, nondecreasing and 1-Lipschitz
(``ρ(n+1) - ρ(n)`` in {0, 1}). It is given on a window ``0..W`` and extended by
``ρ(n) = ρ(W) + (n - W)`` beyond, which keeps both properties; or by *knots*
(:class:`RankKnots`: sizes ``0 = s_0 < s_1 < ...`` and ranks ``R_i``, with
``0 <= R_{i+1} - R_i <= s_{i+1} - s_i``) and ``ρ(n) = min(R_{i+1}, R_i + n - s_i)`` between
``s_i`` and ``s_{i+1}``: a minimum of a constant and a slope-1 line, equal to ``R_i`` and
``R_{i+1}`` at the ends, so again nondecreasing and 1-Lipschitz, and ``<= n + P`` when every
``R_i <= s_i + P`` (a dense window is the knots ``0..W``). Knots hold O(#knots) numbers, not
O(n): the planning of a release on 10^8 points stays small. :func:`check_rank_schedule`
enforces these properties before anything is computed. The class sizes ``n_y`` are *not*
public.

Mechanism, for each class y separately, with ``ε_c = ε / 2``: pad the ``n_y`` real scores of
the class with ``P`` pseudo-scores equal to 1 (they fall in bin m); ``C_j`` = number of padded
scores ``<= e_j`` and ``L_j = C_{j-1}`` (``C_0 = 0``); target rank ``ρ = ρ(n_y)``; utility
``u_j = -max(L_j - ρ, ρ - C_j, 0)`` (minus the distance from ρ to ``[L_j, C_j]``); release
``e_J`` with ``P(J = j) ∝ exp(ε_c u_j / 2)``. The class size enters only through ``ρ(n_y)``
inside the utility: no branch, no level, nothing else depends on it.

Claim 1 (one class, add/remove within the class): ε_c-DP. Adding one real score ``s`` to the
class raises ``n_y`` by 1, so ``ρ`` rises by ``δ`` in {0, 1}; every ``C_j`` and ``L_j`` rises by
``a_j`` in {0, 1} (1 for the bins at or above ``s``'s bin). Then ``L_j - ρ`` and ``ρ - C_j``
each move by ``a_j - δ`` or ``δ - a_j``, in [-1, 1], and ``x, y -> max(x, y, 0)`` is
1-Lipschitz in the max norm: every ``u_j`` moves by at most 1. The exponential mechanism with
sensitivity 1 at ``ε_c`` is ``ε_c``-DP (:mod:`dpuq.mechanisms.exponential`). Removal is the
converse.

Claim 2 (all classes, the release): the classes' releases use disjoint data and independent
randomness. Adding or removing one person touches one class: ``ε_c = ε/2`` under add/remove
(parallel composition). Replacing one person ``(x, y)`` by ``(x', y')`` is a removal from
class y followed by an addition to class y' (the same class when ``y = y'``): at most two
``ε_c`` steps, so ε-DP under replace-one, whatever the labels. No sequential composition over
classes is needed. (With ``n`` public, a schedule, bins and padding computed from ``n`` are
public constants of the pair of neighbours.)

Coverage (what ρ and P are for; proof in ``docs/how-to/class_conditional.md``): for a new point of
class y, ``P(S <= T_y | n_y) >= cert(n_y, ρ(n_y))`` with
``cert(n, ρ) = (1/(n+1)) Σ_{k=1..n+1} 1 / (1 + (m-1) exp(-(ε_c/2)(ρ - k + 1)))``, valid for
``0 <= ρ <= n + P``; :func:`dpuq.conformal.class_levels.class_rank_knots` (or
:func:`~dpuq.conformal.class_levels.class_rank_schedule`, dense) builds ρ and P.

Exact law: :func:`class_threshold_log_distribution` (for audits and tests); sampling: one exact
draw per class with :func:`dpuq.mechanisms.exponential.sample_log_weights`. Running time
O(n log m + K m).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from dpuq._validation import (
    check_epsilon,
    check_labels,
    check_n_bins,
    check_positive_int,
    check_scores,
    check_work,
)
from dpuq.mechanisms.bins import bin_edges, bin_index
from dpuq.mechanisms.log_weights import sample_log_weights
from dpuq.mechanisms.randomness import RandomState, release_generator

__all__ = [
    "RankKnots",
    "check_class_table",
    "check_rank_schedule",
    "class_threshold_log_distribution",
    "class_thresholds",
    "rank_at",
]


@dataclass(frozen=True)
class RankKnots:
    """A rank schedule given by knots: ``ρ(s_i) = R_i``, ``ρ(n) = min(R_{i+1}, R_i + n - s_i)``
    between knots and ``R_last + (n - s_last)`` beyond (see the module docstring).

    ``sizes``: strictly increasing int64 from 0; ``ranks``: int64 of the same length.
    Validate with :func:`check_rank_schedule` (the mechanism does).

    Examples
    --------
    >>> k = RankKnots(np.array([0, 4, 10]), np.array([2, 4, 9]))
    >>> rank_at(k, [0, 1, 3, 4, 6, 10, 12]).tolist()
    [2, 3, 4, 4, 6, 9, 11]
    """

    sizes: np.ndarray
    ranks: np.ndarray


def check_rank_schedule(schedule, pad):
    """Validate a rank schedule and padding count (the assumptions of the privacy proof).

    Raises ``ValueError`` unless ``schedule`` is a non-empty 1-d array of integers with
    ``schedule[0] >= 0``, steps in {0, 1} (nondecreasing, 1-Lipschitz) and
    ``schedule[n] <= n + pad`` (the coverage certificate's domain), and ``pad`` an int >= 0;
    or :class:`RankKnots` with sizes from 0 strictly increasing, ``R_0 >= 0``,
    ``0 <= R_{i+1} - R_i <= s_{i+1} - s_i`` and ``R_i <= s_i + pad`` (the same properties for
    the interpolated schedule). Returns the schedule as int64 (or knots) and ``pad``.

    Examples
    --------
    >>> check_rank_schedule([2, 3, 3, 4], 2)[0].tolist()
    [2, 3, 3, 4]
    """
    p = check_positive_int(pad, "pad", minimum=0)
    if isinstance(schedule, RankKnots):
        return _check_knots(schedule, p), p
    s = np.asarray(schedule)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"schedule must be a non-empty 1-d array, got shape {s.shape}")
    if s.dtype.kind not in "iu":
        raise ValueError(f"schedule must hold integers, got dtype {s.dtype}")
    s = s.astype(np.int64, copy=False)
    if s[0] < 0:
        raise ValueError(f"schedule[0] must be >= 0, got {s[0]}")
    for lo in range(0, s.size, _CHECK_CHUNK):  # in chunks: schedules can have 10^8 entries
        part = s[lo : lo + _CHECK_CHUNK + 1]
        steps = np.diff(part)
        if np.any((steps < 0) | (steps > 1)):
            raise ValueError("schedule must be nondecreasing with steps of at most 1")
        if np.any(part > np.arange(lo, lo + part.size) + p):
            raise ValueError("schedule[n] must be <= n + pad for every n")
    return s, p


#: Entries of a rank schedule checked at a time (bounded temporaries).
_CHECK_CHUNK = 1 << 20


def _check_knots(knots: RankKnots, pad: int) -> RankKnots:
    s, r = np.asarray(knots.sizes), np.asarray(knots.ranks)
    if s.ndim != 1 or s.size == 0 or r.shape != s.shape:
        raise ValueError("knots must be two non-empty 1-d arrays of the same length")
    if s.dtype.kind not in "iu" or r.dtype.kind not in "iu":
        raise ValueError("knot sizes and ranks must hold integers")
    s, r = s.astype(np.int64), r.astype(np.int64)
    gaps, steps = np.diff(s), np.diff(r)
    if s[0] != 0 or np.any(gaps <= 0):
        raise ValueError("knot sizes must start at 0 and increase strictly")
    if r[0] < 0:
        raise ValueError(f"schedule[0] must be >= 0, got {r[0]}")
    if np.any((steps < 0) | (steps > gaps)):
        raise ValueError("schedule must be nondecreasing with steps of at most 1")
    if np.any(r > s + pad):
        raise ValueError("schedule[n] must be <= n + pad for every n")
    return RankKnots(s, r)


def rank_at(schedule, sizes) -> np.ndarray:
    """``ρ(n)`` for each size: the schedule on its window, ``ρ(W) + (n - W)`` beyond; for
    :class:`RankKnots`, ``min(R_{i+1}, R_i + n - s_i)`` between knots.

    Examples
    --------
    >>> rank_at(np.array([2, 3, 3]), [0, 2, 5]).tolist()
    [2, 3, 6]
    """
    n = np.asarray(sizes, dtype=np.int64)
    if isinstance(schedule, RankKnots):
        s, r = schedule.sizes, schedule.ranks
        i = np.searchsorted(s, n, side="right") - 1
        line = r[i] + (n - s[i])
        return np.where(i + 1 < s.size, np.minimum(r[np.minimum(i + 1, s.size - 1)], line), line)
    last = schedule.size - 1
    return np.where(n <= last, schedule[np.minimum(n, last)], schedule[last] + (n - last))


def _class_counts(scores, labels, n_classes: int, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Bin edges ``j/m`` and the (K, m) counts of real scores per class and bin."""
    k = check_positive_int(n_classes, "n_classes", minimum=2)
    s = check_scores(scores)
    y = check_labels(labels, k, s.size)
    edges = bin_edges(n_bins)
    flat = y * edges.size + bin_index(s, edges)
    counts = np.bincount(flat, minlength=k * edges.size).reshape(k, edges.size)
    return edges, counts


def _class_log_weights(counts: np.ndarray, schedule, pad: int, epsilon: float):
    """Log-weights ``ε_c u_j / 2`` of every class and bin (privacy-critical; ``ε_c = ε/2``).

    ``counts`` is (K, m) real counts (or one class's (1, m) row: every row is computed on its
    own, so row y of the whole table equals the table of row y alone, bit for bit); the
    ``pad`` pseudo-scores at 1 are added to bin m.
    """
    rho = rank_at(schedule, counts.sum(axis=1))[:, None].astype(float)
    at_or_below = np.cumsum(counts, axis=1)
    at_or_below[:, -1] += pad
    below = at_or_below - counts
    below[:, -1] -= pad  # L_m = C_{m-1}: the pads are in bin m itself
    utility = -np.maximum(np.maximum(below - rho, rho - at_or_below), 0.0)
    return (epsilon / 2.0) * utility / 2.0


def check_class_table(n_classes: int, n_bins: int) -> None:
    """Refuse a (K, m) table of counts beyond :data:`dpuq._validation.MAX_WORK` cells, by name.

    The release builds it (per class and bin, and chunk-wise on Dask workers), so
    ``n_classes x n_bins`` is capped like every other intermediate array; data-free, so it runs
    before anything is charged or allocated.

    Examples
    --------
    >>> check_class_table(1000, 10**6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: n_classes x n_bins (1,000 x 1,000,000) needs 1,000,000,000 cells, more than ...
    """
    check_work(
        int(n_classes) * int(n_bins),
        f"n_classes x n_bins ({int(n_classes):,} x {int(n_bins):,})",
        "use fewer bins (n_bins=) or fewer classes",
    )


def _validated(scores, labels, n_classes, epsilon, n_bins, schedule, pad, counts=None):
    eps = check_epsilon(epsilon)
    sched, p = check_rank_schedule(schedule, pad)
    check_class_table(check_positive_int(n_classes, "n_classes", minimum=2), check_n_bins(n_bins))
    if counts is None:
        edges, counts = _class_counts(scores, labels, n_classes, n_bins)
        return eps, sched, p, edges, counts
    # counts summed chunk by chunk elsewhere (dpuq.scale): the same (K, m) integers
    k = check_positive_int(n_classes, "n_classes", minimum=2)
    c = np.asarray(counts)
    if c.shape != (k, n_bins) or c.dtype.kind not in "iu" or (c < 0).any():
        raise ValueError(f"counts must be non-negative integers of shape ({k}, {n_bins})")
    return eps, sched, p, bin_edges(n_bins), c.astype(np.int64, copy=False)


def class_threshold_log_distribution(
    scores, labels, n_classes: int, *, epsilon: float, n_bins: int, schedule, pad: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact log output law of :func:`class_thresholds`, one row per class.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Conformity scores in [0, 1].
    labels : array-like of shape (n,)
        Class indices ``0..n_classes-1``.
    n_classes : int
        ``K >= 2`` (public).
    epsilon : float
        Privacy parameter of the whole release under replace-one; each class uses ``ε/2``.
    n_bins : int
        ``m >= 2``.
    schedule : array-like of int
        Rank schedule ``ρ(0..W)`` (see the module docstring and :func:`check_rank_schedule`).
    pad : int
        Pseudo-scores at 1 added to every class.

    Returns
    -------
    thresholds : ndarray of shape (m,)
        ``e_1..e_m``.
    log_probabilities : ndarray of shape (K, m)
        Row y: ``log P(T_y = e_j)``; the rows are independent.

    Examples
    --------
    >>> t, lp = class_threshold_log_distribution(
    ...     [0.1, 0.2, 0.9], [0, 0, 1], 3, epsilon=1.0, n_bins=4, schedule=[3, 4, 5], pad=3)
    >>> np.exp(lp).sum(axis=1).round(12).tolist()
    [1.0, 1.0, 1.0]
    """
    eps, sched, p, edges, counts = _validated(
        scores, labels, n_classes, epsilon, n_bins, schedule, pad
    )
    lw = _class_log_weights(counts, sched, p, eps)
    return edges, lw - logsumexp(lw, axis=1, keepdims=True)


def class_thresholds(
    scores,
    labels,
    n_classes: int,
    *,
    epsilon: float,
    n_bins: int,
    schedule,
    pad: int,
    random_state: RandomState = None,
    counts=None,
    ledger=None,
    dataset: str | None = None,
) -> np.ndarray:
    """Release one threshold per class: ε-DP under replace-one, ε/2 under add/remove.

    See the module docstring for the mechanism and its proof; parameters as in
    :func:`class_threshold_log_distribution`. ``counts`` (shape (K, m)): the real scores'
    counts per class and bin, computed chunk-wise by the caller (then ``scores`` and
    ``labels`` are None); the mechanism sees only these counts either way. One exact draw per
    class from its row of the law (classes are few, so the loop is over classes, never over
    data points). ``ledger``/``dataset``: charged ε (replace-one) after validation and before
    the draw (:func:`dpuq.privacy.ledger.charge`; ``ledger=CALLER_CHARGED`` when a caller charged).

    Returns
    -------
    ndarray of shape (K,)
        Released thresholds, each one of ``j/m``.

    Examples
    --------
    >>> class_thresholds([0.1, 0.2, 0.9], [0, 0, 1], 3, epsilon=1.0, n_bins=4,
    ...                  schedule=[3, 4, 5], pad=3, random_state=0).shape
    (3,)
    """
    eps, sched, p, edges, counts = _validated(
        scores, labels, n_classes, epsilon, n_bins, schedule, pad, counts
    )
    settings = {"n_classes": int(n_classes), "n_bins": int(n_bins)}
    what = "class_thresholds: class-conditional thresholds"
    rng = release_generator(random_state, ledger, dataset, eps, what=what, settings=settings)
    # class by class: a few (1, m) temporaries instead of (K, m) ones (the same numbers)
    picks = [
        sample_log_weights(_class_log_weights(counts[y : y + 1], sched, p, eps)[0], rng)
        for y in range(counts.shape[0])
    ]
    return edges[np.asarray(picks, dtype=np.int64)]
