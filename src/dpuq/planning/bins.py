"""The number of bins m* of a private calibration, for both methods: data-free.

- ``method="certified"``: the m minimising the expected released threshold on jittered
  uniform reference scores ``(i - 1 + u)/n`` under the exact law of the rank utility.
- ``method="paper"``: the paper's rule, on simulated uniform scores
  (:mod:`dpuq.planning._bin_simulation`), with γ* for each m.

Every function here uses only the public ``n``, ``alpha`` and ``epsilon``.
"""

from __future__ import annotations

import math

import numpy as np

from dpuq._validation import check_alpha, check_count, check_epsilon
from dpuq.planning._bin_simulation import expected_thresholds
from dpuq.planning.levels import (
    _cert,
    _certified_rho,
    _check_method,
    _gamma_star,
    _level,
)

__all__ = ["auto_n_bins"]

_GRID_SIZE = 50
_CERTIFIED_GRID_SIZE = 60
_MAX_BINS = 10_000_000

#: Offsets of the jittered uniform reference lattices (averaging them removes the aliasing
#: between a single lattice and the edges j/m).
_REFERENCE_OFFSETS = 16


def _reference_counts(n: int, m: int, j: np.ndarray) -> np.ndarray:
    """``C_j`` of the reference lattices ``(i - 1 + u_k)/n``, ``u_k = (k + 1/2)/K``: shape
    (K, len(j)); exact integer arithmetic: ``C_j = clip(floor(j n/m - u_k) + 1, 0, n)``."""
    k = np.arange(_REFERENCE_OFFSETS)[:, None]
    two_k = 2 * _REFERENCE_OFFSETS
    num = two_k * j[None, :] * n - (2 * k + 1) * m  # (j n/m - u_k) * 2K m
    return np.clip(num // (two_k * m) + 1, 0, n)


def _reference_expected_threshold(n: int, rho: float, epsilon: float, m: int) -> float:
    """``E[e_J]`` under the exact rank law, averaged over the jittered uniform lattices
    (scores ``(i - 1 + u)/n``), over a bin window.

    Bins outside the window have utility below ``-D``, ``D = (2/ε)(log m + 30)``: their total
    relative mass is below ``e^-30``.
    """
    d = (2.0 / epsilon) * (math.log(m) + 30.0)
    lo = max(1, math.floor((rho - d - 1) * m / n) - 1)
    hi = min(m, math.ceil((rho + d + 1) * m / n) + 2)
    j = np.arange(lo, hi + 1, dtype=np.int64)
    at_or_below = _reference_counts(n, m, j).astype(float)
    below = _reference_counts(n, m, j - 1).astype(float)
    log_w = -0.5 * epsilon * np.maximum(np.maximum(below - rho, rho - at_or_below), 0.0)
    w = np.exp(log_w - log_w.max(axis=1, keepdims=True))
    return float(np.mean(w @ (j / m) / w.sum(axis=1)))


def _certified_grid(n: int, epsilon: float) -> np.ndarray:
    # beyond about 100 bins per calibration point a finer grid cannot move the threshold by
    # more than a hundredth of a rank
    top = int(min(_MAX_BINS, max(1000.0, 10.0 * n * epsilon), max(1000.0, 100.0 * (n + 1))))
    return np.unique(np.round(np.geomspace(10, top, _CERTIFIED_GRID_SIZE)).astype(np.int64))


#: m within this many ranks (in threshold units, over n + 1) of the best counts as a tie.
_TIE_RANKS = 0.05
#: ... or within this much in threshold units, whichever is larger: a finer threshold gains
#: nothing a user can see, and at n = 10^8 it would cost a 10^7-bin law (gigabytes). Binding
#: only for n above 50,000 (below, 0.05/(n + 1) is larger).
_TIE_THRESHOLD = 1e-6


def _auto_certified(n: int, alpha: float, epsilon: float) -> int:
    grid = _certified_grid(n, epsilon)
    expected = np.ones(grid.size)
    rho0 = _certified_rho(n, alpha, epsilon, int(grid[0]))
    if not math.isfinite(rho0):  # cert decreases in m: nothing on the grid is informative
        return int(grid[0])
    target = 1.0 - alpha
    for i, m in enumerate(grid):  # about 60 values, each O(window)
        # cert(rho; m) depends on m only through log(m - 1): shift rho*(m0), then check
        rho = rho0 + (2.0 / epsilon) * (math.log(m - 1) - math.log(grid[0] - 1))
        while rho <= n and _cert(n, rho, epsilon, int(m)) < target:  # float rounding only
            rho = min(float(n), rho + 1e-9 * max(1.0, rho)) if rho < n else math.inf
        if rho <= n:
            expected[i] = _reference_expected_threshold(n, rho, epsilon, int(m))
    # the smallest m within a twentieth of a rank (or 1e-6) of the best: finer grids gain
    # nothing more
    tie = max(_TIE_RANKS / (n + 1), _TIE_THRESHOLD)
    return int(grid[np.flatnonzero(expected <= expected.min() + tie)[0]])


def _bin_grid(n: int, epsilon: float) -> np.ndarray:
    top = int(min(_MAX_BINS, max(1000.0, 10.0 * n * epsilon)))
    return np.unique(np.round(np.geomspace(10, top, _GRID_SIZE)).astype(np.int64))


def _auto_paper(n: int, alpha: float, epsilon: float) -> tuple[int, float]:
    grid = _bin_grid(n, epsilon)
    gammas = [_gamma_star(n, alpha, epsilon, int(m)) for m in grid]
    levels = [_level(n, alpha, epsilon, int(m), g) for m, g in zip(grid, gammas, strict=True)]
    if levels[0] >= 1.0:  # q̃ grows with m: nothing on the grid is informative
        return int(grid[0]), gammas[0]
    found = expected_thresholds(
        n, [(int(m), q, epsilon) for m, q in zip(grid, levels, strict=True) if q < 1.0]
    )
    best = int(np.argmin([found.get(int(m), 1.0) for m in grid]))
    return int(grid[best]), gammas[best]


# ------------------------------------------------------------------- both methods
def auto_n_bins(
    n: int, alpha: float, epsilon: float, *, method: str = "certified"
) -> tuple[int, float | None]:
    """Deterministic, data-free number of bins m* (and γ* for the paper's method).

    ``"certified"``: over about 60 log-spaced m from 10 to
    ``max(1000, min(10 n ε, 100 (n+1)))``, the m whose certified release has the smallest
    expected threshold on uniform reference scores (16 jittered lattices ``(i - 1 + u)/n``;
    exact law, over the bins that carry mass); the smallest m within 0.05 ranks (or 1e-6,
    whichever is larger) of the best, since finer grids then gain nothing; uninformative m
    count as 1.
    ``"paper"``: the paper's rule (50 log-spaced m from 10, simulated uniform scores, fixed
    seed).
    Ties go to the smaller m. Uses only ``n``, ``alpha``, ``epsilon``: no privacy cost.

    Returns
    -------
    n_bins : int
    gamma : float or None
        γ* for ``method="paper"``, None for ``"certified"`` (no γ there).

    Examples
    --------
    >>> auto_n_bins(1000, 0.1, 1.0)
    (210, None)
    >>> auto_n_bins(1000, 0.1, 1.0, method="paper")[0]
    15
    """
    method = _check_method(method)
    n = check_count(n, "n")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    if method == "paper":
        return _auto_paper(n, alpha, epsilon)
    return _auto_certified(n, alpha, epsilon), None
