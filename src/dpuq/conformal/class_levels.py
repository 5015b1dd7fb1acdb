"""Data-free planning of class-conditional sets: the padded certificate, the rank schedule
ρ(n), the padding count P and the bins m.

Everything here uses only public quantities (``alpha``, ``epsilon``, the bins, the total
``n`` and ``K``); the class sizes enter only inside the mechanism
(:mod:`dpuq.mechanisms.class_thresholds`), through the schedule computed here.

Certificate. Per class, ``ε_c = ε/2``; with ``g(t) = 1 / (1 + (m-1) exp(-ε_c t / 2))``,
``cert(n, ρ) = (1/(n+1)) Σ_{k=1..n+1} g(ρ - k + 1)`` lower-bounds the coverage of a new point of
a class with ``n`` calibration points, for any ``0 <= ρ <= n + P``: the test point's rank k
among the ``n + 1`` real scores is uniform, and given it the released bin falls below the test
point's bin with probability at most ``r_k / (1 + r_k)``, ``r_k = (m-1) exp(-(ε_c/2)(ρ-k+1))``
(proof in ``docs/how-to/class_conditional.md``). The term ``k = n + 1`` is what the padding buys:
with it, ``cert -> 1`` as ρ grows, so every class size, 0 included, has a valid level.

Schedule. ``ρ*(n)`` = the smallest integer ρ with ``cert(n, ρ) >= 1 - alpha``. For fixed ρ,
``cert(n+1, ρ) <= cert(n, ρ)`` (the added term ``g(ρ - n - 1)`` is the smallest), so ρ* is
nondecreasing; for fixed ``d``, ``cert(n, n + 1 - d)`` is an average of ``g(1-d), ..., g(n+1-d)``
that only grows with n, so ``ρ*(n) - n`` is nonincreasing: steps of ρ* are 0 or 1. ρ* is thus
already its smallest nondecreasing 1-Lipschitz majorant; the code still applies the majorant,
in exact integer arithmetic, so that the privacy proof's assumptions never rest on rounding.
Padding ``P = ρ*(0)``, the smallest integer with ``g(P) >= 1 - alpha``, about
``(2/ε_c) log((m-1)(1-alpha)/alpha)``; then ``ρ(n) <= n + P`` for every n.

Knots (what the releases use, :func:`class_rank_knots`): the dense schedule up to
``2^16`` sizes, then ``ρ*`` at :data:`_KNOTS_PER_OCTAVE` sizes per octave (and at the public
total n), interpolated by the mechanism as ``min(ρ(s_{i+1}), ρ(s_i) + n - s_i)``
(:class:`dpuq.mechanisms.class_thresholds.RankKnots`). Both terms bound ``ρ*(n)`` from above
(ρ* is nondecreasing and 1-Lipschitz), so the certificate still holds at every n; the excess
over ρ* is at most about ``α (1-α)`` times the knot spacing ``n / 2^15`` (a quantile level
higher by about ``3·10^-6``). The client then holds O(2^15 log n) numbers, not n + 1, and
plans 10^8 points in well under a second.

Work. None of it grows with 1/ε (P does: about 10^13 at ε = 1e-12): the sums start near
``P - n``, not at ``-n``, and where the run of t with ``0 < g(t) < 1`` (about ``3360/ε``
integers) meets many points, the knots use a closed-form lower bound on each sum
(:mod:`dpuq.conformal._class_sums`).
"""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import MAX_WORK, check_alpha, check_epsilon, check_positive_int
from dpuq.conformal._class_bins import _expected_uniform_threshold
from dpuq.conformal._class_sums import PrefixSums, g_sum_lower_bound
from dpuq.conformal._class_sums import g as _g

__all__ = [
    "MIN_AUTO_BINS",
    "auto_class_bins",
    "class_padding",
    "class_rank_knots",
    "class_rank_schedule",
    "padded_coverage_certificate",
]

#: Certificates are compared with ``1 - alpha + _SLACK`` so float rounding never decides.
_SLACK = 1e-9
#: Candidate bin counts for :func:`auto_class_bins`: 40 log-spaced values from
#: :data:`MIN_AUTO_BINS` (the fewest it picks) up to ``max(2000, 10 * n/K)`` (at most 10^6),
#: and at most ``MAX_WORK // K`` (the release's (K, m) table of counts within the work cap).
_GRID_POINTS, MIN_AUTO_BINS = 40, 4


def _bin_grid(typical: int, n_classes: int = 2) -> np.ndarray:
    top = min(10**6, max(2000, 10 * typical))
    grid = np.unique(np.round(np.geomspace(MIN_AUTO_BINS, top, _GRID_POINTS)).astype(int))
    return grid[grid * n_classes <= MAX_WORK]


#: Smallest alpha the class-level planning takes: ten times :data:`_SLACK`, so that the target
#: ``1 - alpha + _SLACK`` stays below 1 by more than float rounding (at alpha <= _SLACK the
#: padding's target was 1 or more, met only by rounding, or never).
MIN_CLASS_ALPHA = 10 * _SLACK


def _check(alpha, epsilon, n_bins) -> tuple[float, float, int]:
    a = check_alpha(alpha)
    if a < MIN_CLASS_ALPHA:
        raise ValueError(
            f"alpha must be at least {MIN_CLASS_ALPHA:g} for class-conditional calibration "
            f"(its certificates carry a float slack of {_SLACK:g}), got {alpha!r}"
        )
    eps = check_epsilon(epsilon)
    m = check_positive_int(n_bins, "n_bins", minimum=2)
    return a, eps / 2.0, m


def padded_coverage_certificate(n: int, rank: float, *, epsilon: float, n_bins: int) -> float:
    """Coverage lower bound of one class with ``n`` points at target rank ``rank``.

    ``cert(n, ρ) = (1/(n+1)) Σ_{k=1..n+1} 1 / (1 + (m-1) exp(-(ε/4)(ρ - k + 1)))`` (``ε/2`` per
    class, and ``ε_c/2`` in the exponent), valid for ``0 <= ρ <= n + P``; see the module
    docstring.

    Parameters
    ----------
    n : int
        Class size (>= 0).
    rank : float
        Target rank ρ >= 0.
    epsilon : float
        Privacy parameter of the whole release (replace-one); each class uses ``ε/2``.
    n_bins : int
        ``m >= 2``.

    Examples
    --------
    >>> round(padded_coverage_certificate(0, 30.0, epsilon=1.0, n_bins=10), 4)
    0.995
    """
    k = check_positive_int(n, "n", minimum=0)
    eps_c = check_epsilon(epsilon) / 2.0
    m = check_positive_int(n_bins, "n_bins", minimum=2)
    terms = _g(float(rank) - np.arange(k + 1), eps_c, m)
    return float(math.fsum(terms.tolist()) / (k + 1))


def class_padding(alpha: float, epsilon: float, n_bins: int) -> int:
    """``P``: the smallest integer with ``g(P) >= 1 - alpha`` (= ρ(0), the empty class's rank).

    Examples
    --------
    >>> class_padding(0.1, 1.0, 10)
    18
    """
    a, eps_c, m = _check(alpha, epsilon, n_bins)
    target = 1.0 - a + _SLACK
    # the closed form of g(p) >= target (a - _SLACK, not 1 - target: no cancellation); then the
    # smallest such p among the rounded g, by galloping and bisection (g is nondecreasing in
    # p; near 1 - alpha one ulp of g spans many p at a tiny alpha and epsilon)
    hi = max(0, math.ceil(2.0 / eps_c * math.log((m - 1) * target / (a - _SLACK))))
    step = 1
    while _g(hi, eps_c, m) < target:
        hi, step = hi + step, 2 * step
    lo, step = hi - 1, 1
    while lo >= 0 and _g(lo, eps_c, m) >= target:
        hi, lo, step = lo, lo - step, 2 * step
    lo = max(lo, -1)  # g(lo) < target, or lo = -1: below every p
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _g(mid, eps_c, m) >= target:
            hi = mid
        else:
            lo = mid
    return int(hi)


def class_rank_schedule(
    max_size: int, *, alpha: float, epsilon: float, n_bins: int
) -> tuple[np.ndarray, int]:
    """The rank schedule ``ρ(0..max_size)`` and the padding ``P`` (module docstring).

    Vectorised over all sizes: the certificate sums are differences of one cumulative sum of
    ``g`` over the integers ``P - max_size - 1 .. P + max_size`` (terms below are left out,
    which only lowers the certificate, and only where ``ρ < P - 1 <= ρ*(n) - 1``, so never
    where the answer is decided), and each ρ(n) is found by a bisection run for all n at once.
    The work is O(max_size), whatever ε: ``P`` (about ``4 log(m/α)/ε``, 10^13 at ε = 1e-12)
    sets where the sums start, not how many there are.

    Parameters
    ----------
    max_size : int
        Largest class size covered by the window (the public total n); the mechanism extends
        the schedule by ``ρ(W) + (n - W)`` beyond it.
    alpha, epsilon, n_bins :
        Miscoverage in (0, 0.5], the whole release's ε (each class uses ε/2), bins m.

    Returns
    -------
    schedule : ndarray of int64, shape (max_size + 1,)
        Nondecreasing, steps 0 or 1, ``schedule[n] <= n + pad``.
    pad : int

    Examples
    --------
    >>> rho, pad = class_rank_schedule(200, alpha=0.1, epsilon=2.0, n_bins=20)
    >>> pad, int(rho[0]), int(rho[200])
    (11, 11, 187)
    """
    w = check_positive_int(max_size, "max_size", minimum=0)
    a, eps_c, m = _check(alpha, epsilon, n_bins)
    pad = class_padding(a, 2.0 * eps_c, m)
    # ρ*(n) >= ρ*(0) = P: the sums deciding it (at ρ*(n) and ρ*(n) - 1) run over P - 1 - w..w + P
    sums = PrefixSums(pad - w - 1, 2 * w + 2, eps_c, m)
    hi = np.empty(w + 1, dtype=np.int64)
    for n0 in range(0, w + 1, _SIZES_PER_PASS):  # chunks of sizes: O(chunk) temporaries
        n1 = min(w + 1, n0 + _SIZES_PER_PASS)
        previous = int(hi[n0 - 1]) if n0 else None
        hi[n0:n1] = _smallest_ranks(sums, n0, n1, a, pad, previous)
    if (
        hi[0] >= 0
        and all(  # steps checked in chunks (bounded temporaries)
            not np.any((d < 0) | (d > 1))
            for d in (
                np.diff(hi[i : i + _SIZES_PER_PASS + 1]) for i in range(0, w + 1, _SIZES_PER_PASS)
            )
        )
    ):
        return hi, pad  # already its own nondecreasing 1-Lipschitz majorant (module docstring)
    # smallest nondecreasing 1-Lipschitz majorant, exact on integers
    n = np.arange(w + 1)
    later = np.maximum.accumulate((hi - n)[::-1])[::-1] + n
    schedule = np.maximum(np.maximum.accumulate(hi), later)
    return schedule.astype(np.int64), pad


#: Sizes of the dense head of :func:`class_rank_knots`, and its knots per octave beyond.
_DENSE_SIZES = 1 << 16
_KNOTS_PER_OCTAVE = 1 << 15


def _knot_sizes(w: int) -> np.ndarray:
    """``0..min(w, 2^16)``, then :data:`_KNOTS_PER_OCTAVE` evenly spaced sizes per octave,
    then ``w``: strictly increasing, data-free."""
    parts = [np.arange(min(w, _DENSE_SIZES) + 1, dtype=np.int64)]
    lo = _DENSE_SIZES
    while lo < w:
        step = max(1, lo // _KNOTS_PER_OCTAVE)
        parts.append(np.arange(lo + step, min(2 * lo, w) + 1, step, dtype=np.int64))
        lo *= 2
    sizes = np.concatenate(parts)
    return sizes if sizes[-1] == w else np.append(sizes, w)


#: Integers t at most in the exact sums of :func:`_rank_star_at`; beyond (ε below about
#: 2·10^-4 and more than 2^23 points), its closed-form lower bound.
_MAX_GRID = 1 << 24


def _rank_star_at(sizes: np.ndarray, a: float, eps_c: float, m: int, pad: int) -> np.ndarray:
    """``ρ*(n)`` at each of ``sizes``: the smallest r in ``[0, n + pad]`` with
    ``Σ_{t=r-n}^{r} g(t) >= (1 - α + slack)(n + 1)``, by bisection on all sizes at once.

    Each sum is the count of terms where ``g`` is exactly 1 plus a difference of one
    cumulative sum of ``g`` over the integers where it is strictly between 0 and 1 (``_g``'s
    cut-offs, about ``3360/ε`` integers), cut to ``P - 1 - max(sizes) .. P + max(sizes)`` (as in
    :func:`class_rank_schedule`: ``ρ*(n) >= P``; the terms below are read as 0, which only
    lowers the sums). Where that is still :data:`_MAX_GRID` integers or more (a tiny ε and many
    points), each sum is :func:`dpuq.conformal._class_sums.g_sum_lower_bound` instead, at most
    ``3ε/64`` below it (up to float rounding, which the certificate's slack of 1e-9 absorbs): a
    rank that passes keeps its certificate, and in exact arithmetic is at most one above the
    exact one (the exact sums' own cumulative rounding moves ranks more at a tiny ε; both keep
    the certificate). A size costs O(log n) and the memory is O(_MAX_GRID), whatever n and ε."""
    out = np.empty(sizes.size, dtype=np.int64)
    if sizes.size == 0:
        return out
    w, span = int(sizes.max()), 2.0 / eps_c
    lo_t = max(math.floor(span * (-800.0 + math.log(m - 1))) - 2, pad - w - 1)
    hi_t = min(math.ceil(span * (40.0 + math.log(m - 1))) + 2, pad + w)
    if hi_t - lo_t < _MAX_GRID:
        g = _g(np.arange(lo_t, hi_t + 1), eps_c, m)
        zeros, ones = np.flatnonzero(g == 0.0), np.flatnonzero(g == 1.0)
        t_zero = lo_t + (int(zeros[-1]) if zeros.size else -1)  # g(t) read as 0 for t <= t_zero
        t_one = lo_t + (int(ones[0]) if ones.size else g.size)  # g(t) == 1 for t >= t_one
        mid = np.concatenate(([0.0], np.cumsum(g[t_zero + 1 - lo_t : t_one - lo_t])))

        def run_sum(first, last):
            top = np.clip(last - t_zero, 0, mid.size - 1)
            bottom = np.clip(first - t_zero - 1, 0, mid.size - 1)
            return np.maximum(0, last - np.maximum(first, t_one) + 1) + (mid[top] - mid[bottom])

    else:

        def run_sum(first, last):
            return g_sum_lower_bound(first, last, eps_c, m)

    for i in range(0, sizes.size, _SIZES_PER_PASS):  # bounded temporaries
        n = sizes[i : i + _SIZES_PER_PASS]
        target = (1.0 - a + _SLACK) * (n + 1)
        lo, hi = np.full(n.size, -1, dtype=np.int64), n + pad
        while np.any(hi - lo > 1):
            centre = (lo + hi) // 2
            r = np.maximum(centre, 0)
            good = run_sum(r - n, r) >= target
            hi, lo = np.where(good, centre, hi), np.where(good, lo, centre)
        out[i : i + n.size] = hi
    return out


def class_rank_knots(max_size: int, *, alpha: float, epsilon: float, n_bins: int):
    """The rank schedule as knots, and the padding ``P`` (module docstring, "Knots").

    For every class size up to ``2^16`` the knots are the dense schedule itself
    (:func:`class_rank_schedule`); beyond, ``ρ*`` at :data:`_KNOTS_PER_OCTAVE` sizes per
    octave and at ``max_size``, made nondecreasing and 1-Lipschitz between knots by the
    smallest majorant (exact, on integers).

    Returns
    -------
    knots : dpuq.mechanisms.class_thresholds.RankKnots
    pad : int

    Examples
    --------
    >>> from dpuq.mechanisms.class_thresholds import rank_at
    >>> knots, pad = class_rank_knots(10**8, alpha=0.1, epsilon=1.0, n_bins=1000)
    >>> knots.sizes.size < 10**6, pad == int(rank_at(knots, [0])[0])
    (True, True)
    >>> dense, _ = class_rank_schedule(200, alpha=0.1, epsilon=2.0, n_bins=20)
    >>> small, _ = class_rank_knots(200, alpha=0.1, epsilon=2.0, n_bins=20)
    >>> bool(np.array_equal(small.ranks, dense))
    True
    """
    from dpuq.mechanisms.class_thresholds import RankKnots

    w = check_positive_int(max_size, "max_size", minimum=0)
    a, eps_c, m = _check(alpha, epsilon, n_bins)
    sizes = _knot_sizes(w)
    head, pad = class_rank_schedule(min(w, _DENSE_SIZES), alpha=a, epsilon=2.0 * eps_c, n_bins=m)
    ranks = np.concatenate((head, _rank_star_at(sizes[head.size :], a, eps_c, m, pad)))
    if np.any(np.diff(ranks) < 0) or np.any(np.diff(ranks) > np.diff(sizes)):
        later = np.maximum.accumulate((ranks - sizes)[::-1])[::-1] + sizes
        ranks = np.maximum(np.maximum.accumulate(ranks), later)
    return RankKnots(sizes, ranks), pad


#: Class sizes handled per bisection pass of :func:`class_rank_schedule`: memory O(this), not O(n).
_SIZES_PER_PASS = 1 << 18
#: Half-width of the first bracket around the linear guess ``ρ*(n0-1) + (1 - α)(n - n0 + 1)``.
_GUESS_SPAN = 512


def _smallest_ranks(sums: PrefixSums, n0: int, n1: int, a: float, pad: int, previous):
    """``ρ*(n)`` for ``n0 <= n < n1``: the smallest integer r in ``[0, n + pad]`` with
    ``Σ_{t=r-n}^{r} g(t) >= (1 - α + slack)(n + 1)``, by bisection on all n at once.

    The sum rises with r, so ρ* is where it crosses the target. Each size's bracket starts from
    ``previous = ρ*(n0 - 1)`` (ρ* is nondecreasing with steps 0 or 1), and the result is
    checked (the sum holds at it and fails one below); where the check fails the size is redone
    with the full bracket ``[-1, n + pad]``. The sums read span O(chunk), not O(n). ``G[i]``
    for ``i < 0`` reads as ``G[0] = 0``: the terms below ``sums.t0`` are left out (a lower
    sum, so a rank that passes still has its certificate)."""
    t0 = sums.t0
    n = np.arange(n0, n1)
    target = (1.0 - a + _SLACK) * (n + 1)

    def run(lo, hi, nn, tg):
        r_min, r_max = int(max(0, lo.min())), int(hi.max())
        i0 = max(0, r_min - t0 + 1)
        top = sums.window(i0, max(i0 + 1, r_max - t0 + 2))  # G[r - t0 + 1]
        j0 = max(0, r_min - int(nn.max()) - t0)
        bottom = sums.window(j0, max(j0 + 1, r_max - int(nn.min()) - t0 + 1))  # G[r - n - t0]

        def ok(r):
            upper, lower = np.maximum(r - t0 + 1, i0), np.maximum(r - nn - t0, j0)
            return top[upper - i0] - bottom[lower - j0] >= tg

        lo, hi = lo.copy(), hi.copy()
        while np.any(hi - lo > 1):
            mid = (lo + hi) // 2
            good = ok(np.maximum(mid, 0))
            hi = np.where(good, mid, hi)
            lo = np.where(good, lo, mid)
        return hi, ok

    if previous is None:  # the first sizes: the full bracket (small n)
        lo, hi = np.full(n.size, -1), n + pad
    else:  # ρ*(n0 - 1) <= ρ*(n) <= ρ*(n0 - 1) + (n - n0 + 1), near slope 1 - α
        lo = np.full(n.size, previous - 1)
        hi = np.minimum(previous + 1 + (n - n0), n + pad)
        guess = previous + np.round((1.0 - a) * (n - n0 + 1)).astype(np.int64)
        lo, hi = np.maximum(lo, guess - _GUESS_SPAN), np.minimum(hi, guess + _GUESS_SPAN)
    hi, ok = run(lo, np.maximum(hi, lo + 1), n, target)
    bad = ~ok(np.maximum(hi, 0)) | ((hi - 1 >= 0) & ok(np.maximum(hi - 1, 0)))
    if np.any(bad):  # a bracket did not hold: the full bracket for those sizes
        nb = n[bad]
        hi[bad] = run(np.full(nb.size, -1), nb + pad, nb, target[bad])[0]
    return hi


def auto_class_bins(n: int, n_classes: int, alpha: float, epsilon: float) -> int:
    """Data-free bins for class-conditional sets: the m of a log-spaced grid (4 to
    ``max(2000, 10 n/K)``) that minimises the expected threshold of a class of ``n / K``
    evenly spread scores under the exact law (ties: the smaller m).

    One m for all classes, from public ``n`` and ``K`` only (a per-class m would read ``n_y``).
    The grid stops at ``MAX_WORK // K`` (:data:`dpuq._validation.MAX_WORK`): the release
    holds a (K, m) table of counts. ``K`` above ``MAX_WORK // 4`` is refused by name.

    Examples
    --------
    >>> auto_class_bins(10000, 10, 0.1, 1.0)
    81
    """
    n = check_positive_int(n, "n", minimum=0)
    k = check_positive_int(n_classes, "n_classes", minimum=2)
    a, eps_c, _ = _check(alpha, epsilon, 2)
    typical = max(1, n // k)
    grid = _bin_grid(typical, k)
    if grid.size == 0:  # K alone is beyond the cap: even the fewest bins make too many cells
        from dpuq.mechanisms.class_thresholds import check_class_table

        check_class_table(k, MIN_AUTO_BINS)
    best, best_m = math.inf, int(grid[0])
    for m in grid:
        pad = class_padding(a, 2.0 * eps_c, int(m))
        value = _expected_uniform_threshold(typical, a, 2.0 * eps_c, int(m), pad, _SLACK)
        if value < best - 1e-12:
            best, best_m = value, int(m)
    return best_m
