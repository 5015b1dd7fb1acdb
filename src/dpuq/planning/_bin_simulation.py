"""Simulated uniform scores for the paper's choice of bins (``method="paper"``).

Not privacy-critical and data-free: :func:`dpuq.planning.auto_n_bins` with ``method="paper"``
averages the expected released threshold over ``N_SIMULATIONS`` uniform score vectors drawn
with a fixed internal seed (deterministic). Exact in law; large n only looks at windows.
"""

from __future__ import annotations

import math

import numpy as np

from dpuq.mechanisms.randomness import simulated_sorted_uniforms

#: Simulated uniform score vectors and their fixed internal seed.
N_SIMULATIONS = 32
_SIMULATION_SEED = 20221109


def _sorted_uniforms(n: int) -> np.ndarray:
    """``N_SIMULATIONS`` sorted uniform vectors of length n (fixed seed), via exponential gaps."""
    return simulated_sorted_uniforms(N_SIMULATIONS, n, _SIMULATION_SEED)


class _NotCovered(Exception):
    """A windowed simulation was asked for a count it does not hold."""


class _FullUniforms:
    """All ``N_SIMULATIONS`` sorted uniform vectors of length n: counts at any point."""

    def __init__(self, n: int) -> None:
        s = _sorted_uniforms(n)
        self.v, self.n = s.shape
        self._offsets = 2.0 * np.arange(self.v)[:, None]
        self._flat = (s + self._offsets).ravel()

    def counts(self, edges: np.ndarray) -> np.ndarray:
        """``#{i : U_i <= e}`` for every vector (rows) and edge (columns)."""
        c = np.searchsorted(self._flat, (edges[None, :] + self._offsets).ravel(), side="right")
        return c.reshape(self.v, -1) - self.n * np.arange(self.v)[:, None]


class _WindowedUniforms:
    """``N_SIMULATIONS`` uniform samples of size n, known only where :func:`auto_n_bins` looks.

    Exact in law, deterministic (fixed seed), and O(number of points + n (b - a)) instead of
    O(n): the counts ``F(x) = #{i : U_i <= x}`` at the sorted ``points`` and at ``a``, ``b`` are
    one multinomial draw over the gaps between them; given its count ``K`` in ``(a, b]``, the
    sample inside the dense interval is ``K`` independent uniforms there, kept sorted, so that
    ``F`` is known at every ``x`` in ``(a, b]`` too. ``points`` must lie outside ``[a, b]``.
    """

    def __init__(self, n: int, points: np.ndarray, dense: tuple[float, float] | None) -> None:
        rng = np.random.default_rng(_SIMULATION_SEED)
        self.v, self.n = N_SIMULATIONS, n
        extra = [] if dense is None else list(dense)
        self._cuts = np.unique(np.concatenate((points, extra)))
        probs = np.diff(np.concatenate(([0.0], self._cuts, [1.0])))
        gaps = rng.multinomial(n, probs, size=self.v)
        self._at_cuts = np.cumsum(gaps[:, :-1], axis=1)
        self._dense = dense
        if dense is not None:
            a, b = dense
            i_a = int(np.searchsorted(self._cuts, a))
            self._below_a = self._at_cuts[:, i_a]
            inside = gaps[:, i_a + 1]  # (a, b]: b is the cut right after a
            values = np.minimum(a + (b - a) * (1.0 - rng.random(int(inside.sum()))), b)
            seg = np.repeat(np.arange(self.v), inside)
            self._flat = np.sort(values + 2.0 * seg)
            self._starts = np.concatenate(([0], np.cumsum(inside)[:-1]))

    def counts(self, edges: np.ndarray) -> np.ndarray:
        """Like :meth:`_FullUniforms.counts`; raises ``_NotCovered`` outside what is known."""
        out = np.empty((self.v, edges.size), dtype=np.int64)
        pos = np.minimum(np.searchsorted(self._cuts, edges), self._cuts.size - 1)
        at_cut = self._cuts[pos] == edges
        out[:, at_cut] = self._at_cuts[:, pos[at_cut]]
        rest = ~at_cut
        if rest.any():
            if self._dense is None:
                raise _NotCovered
            a, b = self._dense
            e = edges[rest]
            if np.any((e <= a) | (e > b)):
                raise _NotCovered
            shifted = e[None, :] + 2.0 * np.arange(self.v)[:, None]
            c = np.searchsorted(self._flat, shifted.ravel(), side="right").reshape(self.v, -1)
            out[:, rest] = self._below_a[:, None] + c - self._starts[:, None]
        return out


def _bin_window(n: int, q: float, epsilon: float, m: int) -> tuple[int, int]:
    """Bins ``lo..hi`` (1-based) outside which the law of the release has negligible mass."""
    scale = epsilon / (2 * max(q, 1 - q))
    cut = (math.log(m) + 30.0) / scale  # utility gap that makes the outside mass negligible
    sd = math.sqrt(q * (1 - q) / n)
    x_lo = q - 7 * sd - (cut / q + 2) / n - 2.0 / m
    x_hi = q + 7 * sd + (cut / (1 - q) + 2) / n + 2.0 / m
    return max(1, math.floor(x_lo * m)), min(m, math.ceil(x_hi * m))


def _window_edges(lo_j: int, hi_j: int, m: int) -> np.ndarray:
    return np.arange(lo_j - 1, hi_j + 1) / m  # includes e_{lo-1} for L at the first bin


#: Up to this n the simulation holds the full sorted vectors (the original, exact-count path);
#: above it, only the windows that :func:`auto_n_bins` looks at (:class:`_WindowedUniforms`).
_FULL_SIMULATION_MAX_N = 100_000
#: Windows with more edges than this are served by the dense interval of the windowed path.
_SPARSE_MAX_EDGES = 256


def _simulated_uniforms(n: int, plan) -> _FullUniforms | _WindowedUniforms:
    """The simulated uniform samples for ``plan`` (pairs ``(m, q)`` that will be evaluated)."""
    if n <= _FULL_SIMULATION_MAX_N:
        return _FullUniforms(n)
    sparse, dense_lo, dense_hi = [np.array([0.0])], math.inf, -math.inf
    windows = [(m, *_bin_window(n, q, eps, m)) for m, q, eps in plan]
    for m, lo_j, hi_j in windows:
        if hi_j - lo_j + 2 > _SPARSE_MAX_EDGES:
            dense_lo = min(dense_lo, (lo_j - 1) / m)
            dense_hi = max(dense_hi, hi_j / m)
    dense = (dense_lo, dense_hi) if dense_lo < dense_hi else None
    for m, lo_j, hi_j in windows:
        e = _window_edges(lo_j, hi_j, m)
        if dense is not None:
            e = e[(e < dense_lo) | (e > dense_hi)]
        sparse.append(e)
    return _WindowedUniforms(n, np.unique(np.concatenate(sparse)), dense)


def _expected_threshold(sims, q: float, epsilon: float, m: int) -> float:
    """Mean over the simulated vectors of ``E[e_J]`` under the exact law, on a bin window.

    Bins outside the window carry relative mass below 1e-12 in total (checked from bounds on
    ``u_j`` outside the window; otherwise the window grows to all bins).
    """
    n = sims.n
    scale = epsilon / (2 * max(q, 1 - q))
    lo_win, hi_win = _bin_window(n, q, epsilon, m)
    for lo_j, hi_j in ((lo_win, hi_win), (1, m)):
        edges = _window_edges(lo_j, hi_j, m)
        at_or_below = sims.counts(edges)
        below = at_or_below[:, :-1]
        above = n - at_or_below[:, 1:]
        utility = np.maximum((1 - q) * below, q * above)
        u_min = utility.min(axis=1)
        if lo_j == 1 and hi_j == m:
            break
        outside = np.minimum(
            q * above[:, 0] if lo_j > 1 else np.inf,
            (1 - q) * below[:, -1] if hi_j < m else np.inf,
        )
        if np.all(math.log(m) - scale * (outside - u_min) < math.log(1e-12)):
            break
    w = np.exp(-scale * (utility - u_min[:, None]))
    return float(np.mean((w @ edges[1:]) / w.sum(axis=1)))


def expected_thresholds(n: int, plan) -> dict[int, float]:
    """``{m: E[e_J]}`` for ``plan`` = pairs ``(m, q, epsilon)`` of the paper's law, simulated."""
    sims = _simulated_uniforms(n, plan)
    try:
        return {m: _expected_threshold(sims, q, eps, m) for m, q, eps in plan}
    except _NotCovered:  # a window the windowed simulation does not hold: simulate in full
        sims = _FullUniforms(n)
        return {m: _expected_threshold(sims, q, eps, m) for m, q, eps in plan}
