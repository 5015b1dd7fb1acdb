"""Several certified thresholds from one release: the joint exponential mechanism over ordered
tuples of bins, its exact law and its exact sampler.

Privacy
-------
Input: ``n`` scores in [0, 1] binned on the public edges ``e_j = j/m`` (counts ``C_j``,
``L_j = C_{j-1}`` as in :mod:`dpuq.mechanisms.quantile`); ``n``, ``m``, ``epsilon`` and the
target ranks ``ρ_1 <= ... <= ρ_L`` (one per level, from public values only) are public.
Neighbouring relation: replace-one (swap) with ``n`` public. Outputs: ordered tuples
``t_1 <= ... <= t_L`` of bins (so the thresholds are nested). Per level the rank distance
``d_l(j) = max(L_j - ρ_l, ρ_l - C_j, 0)`` moves by at most 1 between neighbours (every ``C_j``
and ``L_j`` does); the utility ``u(t) = -max_l d_l(t_l)`` is a maximum of such functions, so
it moves by at most 1: sensitivity 1, and ``P(t) ∝ exp(ε u(t) / 2)`` is ε-DP, δ = 0 (the
exponential mechanism; the set of ordered tuples is public).

Validity (docs/explanation/calibration.md, "Several levels"): level l's released count ``K_l =
C_{t_l}``
obeys the single-level lemma with ``m - 1`` replaced by ``M_l``, the number of ordered tuples
with ``t_l <= m - 1`` (:func:`joint_union_sizes`), so its coverage is at least
``cert(ρ_l)`` computed with ``M_l + 1`` bins.

Exact sampling: the maximum ``v = max_l d_l(t_l)`` is drawn first, over the distinct values of
``d``, with log-weights ``log #{t : max = v} - εv/2`` by the exact row sampler
(:func:`dpuq.mechanisms.exponential.sample_log_weights_rows`); then a tuple uniformly among
those with maximum exactly ``v``, backwards through exact integer counts (``Generator.integers``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import logsumexp

from dpuq._validation import check_epsilon
from dpuq.mechanisms.exponential import sample_log_weights_rows
from dpuq.mechanisms.randomness import RandomState, release_generator

__all__ = [
    "joint_quantiles",
    "joint_quantiles_log_distribution",
    "joint_union_sizes",
    "n_ordered_tuples",
]

#: Counts of ordered tuples are exact int64: refuse settings with more than this many tuples.
_MAX_TUPLES = 1 << 62
#: Cells per chunk when counting tuples for every distinct distance value.
_CHUNK_CELLS = 1 << 21


def n_ordered_tuples(m: int, n_levels: int) -> int:
    """``C(m + L - 1, L)``: the number of ordered L-tuples of m bins.

    Examples
    --------
    >>> n_ordered_tuples(4, 2)
    10
    """
    return math.comb(m + n_levels - 1, n_levels)


def joint_union_sizes(m: int, n_levels: int) -> list[int]:
    """``M_l``, the number of ordered tuples with ``t_l <= m - 1`` (l = 1..L, ranks ascending).

    ``M_l = C(m + L - 1, L) - C(m + l - 2, l - 1)``: all tuples minus those with
    ``t_l = ... = t_L = m``. It replaces ``m - 1`` in level l's certificate.

    Examples
    --------
    >>> joint_union_sizes(4, 1)
    [3]
    >>> joint_union_sizes(4, 2)
    [9, 6]
    """
    total = n_ordered_tuples(m, n_levels)
    return [total - math.comb(m + k - 2, k - 1) for k in range(1, n_levels + 1)]


def _check(counts, ranks, epsilon) -> tuple[np.ndarray, np.ndarray, float]:
    c = np.asarray(counts)
    if c.ndim != 1 or c.size < 2 or not np.issubdtype(c.dtype, np.integer) or np.any(c < 0):
        raise ValueError("counts must be a 1-d array of >= 2 non-negative integers")
    n = int(c.sum())
    if n == 0:
        raise ValueError("counts must not all be 0 (no scores)")
    r = np.asarray(ranks, dtype=float)
    if r.ndim != 1 or r.size < 1:
        raise ValueError("ranks must be a 1-d array with one target rank per level")
    if not np.all(np.isfinite(r)) or np.any(r < 0) or np.any(r > n) or np.any(np.diff(r) < 0):
        raise ValueError("ranks must be nondecreasing target ranks in [0, n]")
    if n_ordered_tuples(c.size, r.size) >= _MAX_TUPLES:
        raise ValueError(
            f"{r.size} levels over {c.size} bins give too many ordered tuples for exact "
            "integer counts; use fewer bins or levels"
        )
    return c.astype(np.int64), r, check_epsilon(epsilon)


def _distances(counts: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """``d_l(j) = max(L_j - ρ_l, ρ_l - C_j, 0)``, shape (L, m) (privacy-critical)."""
    at_or_below = np.cumsum(counts).astype(float)
    below = at_or_below - counts
    r = ranks[:, None]
    return np.maximum(np.maximum(below[None, :] - r, r - at_or_below[None, :]), 0.0)


def _prefix_counts(allowed: np.ndarray) -> np.ndarray:
    """``G[l, j]`` = number of ordered prefixes ``t_1..t_l`` with ``t_l = j``, all allowed.

    ``allowed`` is (..., L, m) boolean; exact int64 (bounded by :data:`_MAX_TUPLES`).
    """
    out = np.zeros(allowed.shape, dtype=np.int64)
    out[..., 0, :] = allowed[..., 0, :]
    for level in range(1, allowed.shape[-2]):
        out[..., level, :] = np.where(
            allowed[..., level, :], np.cumsum(out[..., level - 1, :], axis=-1), 0
        )
    return out


def _value_log_weights(d: np.ndarray, epsilon: float):
    """Distinct values ``v`` of d and ``log #{t : max_l d_l(t_l) = v} - εv/2`` for each."""
    values = np.unique(d)
    total = np.empty(values.size, dtype=np.int64)  # tuples with max <= v
    chunk = max(1, _CHUNK_CELLS // d.size)  # chunks over v bound the memory
    for start in range(0, values.size, chunk):
        v = values[start : start + chunk]
        allowed = d[None, :, :] <= v[:, None, None]  # (chunk, L, m)
        total[start : start + chunk] = _prefix_counts(allowed)[:, -1, :].sum(axis=1)
    exact = np.diff(np.concatenate(([0], total)))  # tuples with max == v
    with np.errstate(divide="ignore"):
        log_w = np.log(exact.astype(float)) - 0.5 * epsilon * values
    return values, log_w


def joint_quantiles_log_distribution(
    counts, ranks, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Exact log law over every ordered tuple of 0-based bins (for audits and small cases).

    Returns
    -------
    tuples : ndarray of int, shape (N, L)
        Every ordered tuple, ``N = C(m + L - 1, L)``.
    log_probabilities : ndarray of shape (N,)

    Examples
    --------
    >>> t, lp = joint_quantiles_log_distribution(np.array([1, 2, 1]), [1.0, 3.0], 2.0)
    >>> t.shape, bool(np.isclose(np.exp(lp).sum(), 1.0))
    ((6, 2), True)
    """
    c, r, eps = _check(counts, ranks, epsilon)
    if n_ordered_tuples(c.size, r.size) > 2_000_000:
        raise ValueError("the full tuple law is for small cases (at most 2,000,000 tuples)")
    d = _distances(c, r)
    tuples = np.array(
        list(itertools.combinations_with_replacement(range(c.size), r.size)), dtype=np.int64
    ).reshape(-1, r.size)
    u = -np.max(d[np.arange(r.size)[None, :], tuples], axis=1)
    lw = 0.5 * eps * u
    return tuples, lw - logsumexp(lw)


def _weighted_index(weights: np.ndarray, rng: np.random.Generator) -> int:
    """An index drawn with probability ``weights[i] / sum`` exactly (non-negative int64)."""
    cum = np.cumsum(weights)
    u = int(rng.integers(int(cum[-1])))
    return int(np.searchsorted(cum, u, side="right"))


def joint_quantiles(
    counts,
    ranks,
    epsilon: float,
    random_state: RandomState = None,
    *,
    ledger=None,
    dataset: str | None = None,
) -> np.ndarray:
    """One ε-DP draw of an ordered tuple of 0-based bins (module docstring), exactly.

    Parameters
    ----------
    counts : array-like of int, shape (m,)
        Bin counts of the scores on ``bin_edges(m)``.
    ranks : array-like of shape (L,)
        Target ranks ``ρ_1 <= ... <= ρ_L`` in [0, n] (public).
    epsilon : float
        Privacy parameter > 0: the total cost of the L thresholds.
    random_state : None, int or numpy.random.Generator
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge ε to ``dataset``'s budget before any noise (:func:`dpuq.privacy.ledger.charge`).

    Returns
    -------
    ndarray of int64, shape (L,)
        Nondecreasing 0-based bins.

    Examples
    --------
    >>> counts = np.bincount((np.linspace(0, 1, 1000) * 20).astype(int).clip(0, 19))
    >>> joint_quantiles(counts, [800.0, 900.0, 950.0], 20.0, random_state=0).tolist()
    [15, 17, 18]
    """
    c, r, eps = _check(counts, ranks, epsilon)
    settings = {"n": int(c.sum()), "n_bins": int(c.size), "n_levels": int(r.size)}
    rng = release_generator(
        random_state, ledger, dataset, eps, what="joint_quantiles", settings=settings
    )
    d = _distances(c, r)
    values, log_w = _value_log_weights(d, eps)
    v = values[int(sample_log_weights_rows(log_w[None, :], rng)[0])]
    at_most = _prefix_counts(d <= v)  # prefixes with every distance <= v
    below = _prefix_counts(d < v)  # ... and every distance < v
    n_levels, m = d.shape
    out = np.empty(n_levels, dtype=np.int64)
    hit = False  # has a later level (already drawn) reached distance v?
    upper = m - 1
    for level in range(n_levels - 1, -1, -1):
        window = slice(0, upper + 1)
        weights = at_most[level, window] if hit else at_most[level, window] - below[level, window]
        j = _weighted_index(weights, rng)
        out[level] = j
        hit = hit or bool(d[level, j] == v)
        upper = j
    return out
