"""The bin search of :func:`dpuq.conformal.class_levels.auto_class_bins`: the expected
threshold of one class of evenly spread scores under the exact law, for each candidate m.

Data-free (public ``n / K``, ``alpha``, ``epsilon``, ``m``), and for the bin choice only: the
release's own schedule comes from :func:`~dpuq.conformal.class_levels.class_rank_knots`, so
nothing here bears on the privacy or the coverage certificate of a release.
"""

from __future__ import annotations

import numpy as np

from dpuq.conformal._class_sums import g as _g
from dpuq.conformal._class_sums import g_sum_lower_bound

#: Terms of ``g`` strictly between 0 and 1 beyond which :func:`_rank_star` sums in closed form.
_BIN_SEARCH_TERMS = 1 << 16


def _rank_star(n: int, alpha: float, epsilon_class: float, m: int, pad: int, slack: float) -> int:
    """``ρ*(n)`` alone, by bisection on integers, for the bin search only (a release's
    schedule comes from :func:`~dpuq.conformal.class_levels.class_rank_knots`). Uses the
    certified method's rounded-down certificate (:func:`dpuq.planning.levels._cert`, ranks
    1..n) plus the top-rank term; where that sum would run over more than
    :data:`_BIN_SEARCH_TERMS` terms (both n and 1/ε large: about ``320/ε`` terms are strictly
    between 0 and 1), the knots' closed-form lower bound
    (:func:`~dpuq.conformal._class_sums.g_sum_lower_bound`): O(1) a step instead of O(n), and
    a rank at most about one above the exact sums' (a lower bound on a sum never lowers it).
    ``pad`` and ``slack``: the padding P and the certificates' slack of :mod:`class_levels`."""
    from dpuq.planning.levels import _CUT, _cert

    closed = min(n, 2.0 * _CUT / (0.5 * epsilon_class)) > _BIN_SEARCH_TERMS  # _cert's run

    def ok(r: int) -> bool:
        if closed:
            total = float(g_sum_lower_bound(r - n, r, epsilon_class, m))
            return total >= (1.0 - alpha + slack) * (n + 1)
        top = float(_g(r - n, epsilon_class, m)) / (n + 1)
        below = _cert(n, float(r), epsilon_class, m) if n else 0.0
        return below + top >= 1.0 - alpha + slack

    lo, hi = -1, n + pad  # ok(n + pad) holds: every term is >= g(pad) >= 1 - alpha
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def _even_counts(n: int, edges: np.ndarray) -> np.ndarray:
    """Bin counts of the ``n`` evenly spread scores ``(i + 1/2)/n`` without forming them:
    ``#{i : (i + 1/2)/n <= e_j}`` from its closed form, corrected against the same float
    expression (monotone in i), so that the counts equal ``bincount(bin_index(...))``."""
    if n == 0:
        return np.zeros(edges.size, dtype=np.int64)
    c = np.clip(np.floor(edges * n - 0.5).astype(np.int64) + 1, 0, n)
    for _ in range(4):  # the guess is off by at most one; each pass fixes one step
        c = c + ((c < n) & ((c + 0.5) / n <= edges))
        c = c - ((c > 0) & ((c - 1 + 0.5) / n > edges))
    return np.diff(np.concatenate(([0], c)))


def _expected_uniform_threshold(
    n: int, alpha: float, epsilon: float, m: int, pad: int, slack: float
) -> float:
    """``E[T]`` of one class of ``n`` evenly spread scores, from the exact law (``pad``:
    :func:`~dpuq.conformal.class_levels.class_padding` at these settings)."""
    from dpuq.mechanisms.class_thresholds import RankKnots, _class_log_weights
    from dpuq.mechanisms.quantile import bin_edges

    rank = _rank_star(n, alpha, epsilon / 2.0, m, pad, slack)
    schedule = RankKnots(np.array([0, n]), np.array([rank, rank]))  # ρ(n) = rank, O(1)
    edges = bin_edges(m)
    counts = _even_counts(n, edges)[None, :]
    lw = _class_log_weights(counts, schedule, pad, epsilon)[0]
    p = np.exp(lw - lw.max())
    return float(p @ edges / p.sum())
