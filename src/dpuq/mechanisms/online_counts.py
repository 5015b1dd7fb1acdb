"""Online conformal thresholds from privately released block error counts (the tracker).

The stream and the release
--------------------------
Scores ``s_1, s_2, ...`` in [0, 1] arrive one person at a time (low = conforms). The stream is
cut into consecutive blocks of a public size ``B`` (block ``k`` holds persons ``kB+1 ..
(k+1)B``). Every person of block ``k`` gets the same threshold ``q_k``; their miscoverage
indicators ``err_i = 1{s_i > q_k}`` are counted, ``E_k = sum_{i in block k} err_i``, and the
count is released once, when the block is complete, with exact Laplace noise:

    ``Ẽ_k = E_k + γ Z_k``,  ``γ Z_k`` the lattice Laplace noise of scale ``b = 1/ε``
    (:mod:`dpuq.mechanisms.discrete_laplace`; ``b`` rounded up by
    :func:`~dpuq.mechanisms.discrete_laplace.lattice_laplace_scale`).

The next block's threshold is the quantile tracker (online gradient descent on the pinball
loss; Angelopoulos, Candès and Tibshirani, *Conformal PID control*, NeurIPS 2023, whose step is
ACI's update of Gibbs and Candès, NeurIPS 2021, moved from levels to scores) fed by the
released counts:

    ``q_{k+1} = q_k + η (Ẽ_k - α n_k)``,  ``n_k`` the block's (public) length,

so ``q_{k+1} = q_0 + η sum_{j<=k} (Ẽ_j - α n_j)`` is a deterministic function of the released
counts and of public settings (``α, η, B, q_0``). Person ``i`` gets ``t_i = q_{k(i)}``, a
function of the counts of blocks before theirs only: causal, and ``s_i`` changes nothing at or
before step ``i``. Each score enters one count, once.

Privacy (relation, sensitivity, ε)
----------------------------------
Relation: event-level privacy under continual observation, replace-one: neighbouring streams
differ in one person's score (any position, any value in [0, 1]); the stream's length and all
settings are public. Claim: the whole released sequence ``(Ẽ_1, ..., Ẽ_K)``, hence every
threshold sequence computed from it, is ε-DP (δ = 0), for a stream of any length: the cost
does not grow with the horizon.

Proof. Write ``o = (o_1, ..., o_K)`` for an outcome. For a stream ``D`` the law of the released
counts is the product of the conditional laws,

    ``P_D(o) = prod_k p(o_k - E_k(D, o_{<k}))``,

``p`` the lattice Laplace pmf, ``E_k(D, o_{<k})`` the error count of block ``k`` at the
threshold ``q_k(o_{<k})``: the threshold is the same function of the earlier outcomes for every
stream. Let ``D'`` replace person ``i``'s score, ``i`` in block ``κ``. For ``k != κ`` block
``k`` holds the same scores in ``D`` and ``D'`` and is compared with the same threshold, so the
factors agree. For ``k = κ`` the counts differ by at most 1 (one indicator changes): the L1
sensitivity of each block's count is 1. Counts are integers, which lie on the noise lattice
(its step ``γ`` is a power of two ``<= 1``), so no rounding enters and the one factor's ratio is
at most ``exp(1/(t γ)) <= exp(1/b) = exp(ε)`` (module :mod:`~dpuq.mechanisms.discrete_laplace`).
Hence ``P_D(o) <= e^ε P_D'(o)`` for every ``o``: the parallel composition of the blocks'
counting queries, which holds although each query (its threshold) depends on the earlier
outputs, because the data enter each factor only through their own block.
:func:`tracker_log_likelihood` is this exact law; the tests enumerate neighbouring tiny streams
and check the ratio against ``e^ε`` and its tightness.

Why blocks and not a tree
-------------------------
The binary tree mechanism (Chan, Shi and Song 2011; Dwork et al. 2010) releases a running count
after every person, but each person then sits in ``L = ceil(log2 T)`` nodes and every prefix
sums up to ``L`` nodes of scale ``L/ε``: at ``T = 10^4``, ``ε = 1`` its error is about 50
persons at every step, which the tracker turns into threshold noise of ``η × 50``. One release
per block costs ε once per person (parallel composition), adds noise of standard deviation
``sqrt(2)/ε`` per block, and the block size ``B`` is chosen
(:func:`dpuq.planning.online_block_size`) so that it is at most the binomial spread of the
count itself. Time: ``O(1)`` per person; memory ``O(1)`` (the current threshold and the
running count of the current block).

Coverage (any sequence)
-----------------------
``D_k = sum (err_i - α)`` over the persons up to block ``k``, ``N_k = sum_{j<=k} γZ_j``; then
``q_{k+1} = q_0 + η (D_k + N_k)``. A block with a miss has ``q < 1``, so ``D`` only grows while
``D_k < (1 - q_0)/η + |N_k|``; a block with a cover has ``q >= 0``, so ``D`` only falls while
``D_k >= -q_0/η - |N_k|``. By induction, for every score sequence and every noise outcome,

    ``|mean err - α| <= (max((1 - q_0)/η + (1 - α) B, q_0/η + α B) + M) / T``,
    ``M = max_{k<K} |N_k|``,

and ``M`` is bounded with probability ``1 - β`` by Doob's maximal inequality applied to the
exact moment generating function of the lattice noise (:func:`noise_max_bound`).
:func:`dpuq.planning.online_coverage_bound` assembles the two.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from dpuq.mechanisms.discrete_laplace import (
    discrete_laplace_log_pmf,
    laplace_lattice,
    laplace_noise,
    lattice_laplace_scale,
)
from dpuq.mechanisms.randomness import derived_generator

__all__ = [
    "NOISE_CHUNK",
    "block_count_scale",
    "noise_max_bound",
    "tracker_log_likelihood",
]

#: Block noises are drawn in chunks of this many blocks, chunk ``j`` from
#: ``derived_generator(root, j)``: the batch function and the incremental tracker draw the same
#: noise for the same seed, and a chunk never outlives the block that needs it.
NOISE_CHUNK = 256


def block_count_scale(epsilon: float) -> float:
    """The Laplace scale of every block's count: ``1/ε`` on the lattice (sensitivity 1).

    Examples
    --------
    >>> 1.0 < block_count_scale(1.0) < 1.0 + 1e-11
    True
    """
    return lattice_laplace_scale(1.0, epsilon)


def _block_noise(root: int | None, start: int, stop: int, epsilon: float) -> np.ndarray:
    """The exact noises ``γ Z_k`` of blocks ``start .. stop - 1`` (lattice Laplace, scale 1/ε).

    ``root`` is a seed (reproducible: chunk ``j`` of :data:`NOISE_CHUNK` blocks comes from
    ``derived_generator(root, j)``) or None (fresh OS entropy at every call: releases).

    Examples
    --------
    >>> a = _block_noise(5, 0, 300, 1.0)
    >>> bool((_block_noise(5, 250, 300, 1.0) == a[250:]).all())
    True
    """
    scale = block_count_scale(epsilon)
    if root is None:  # fresh entropy: draw exactly what is needed
        return np.asarray(
            laplace_noise(scale, max(0, stop - start), random_state=np.random.default_rng()),
            dtype=float,
        )
    out = np.empty(max(0, stop - start))
    for chunk in range(start // NOISE_CHUNK, (stop - 1) // NOISE_CHUNK + 1 if stop > start else 0):
        rng = np.random.default_rng() if root is None else derived_generator(root, chunk)
        draws = laplace_noise(scale, NOISE_CHUNK, random_state=rng)
        lo = chunk * NOISE_CHUNK
        a, b = max(start, lo), min(stop, lo + NOISE_CHUNK)
        out[a - start : b - start] = draws[a - lo : b - lo]
    return out


def _next_threshold(q: float, released: float, n: int, alpha: float, step: float) -> float:
    return q + step * (released - alpha * n)


def _tracker_thresholds(
    scores: np.ndarray,
    *,
    alpha: float,
    epsilon: float,
    step: float,
    block_size: int,
    initial: float,
    root: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The threshold of every person and the released counts (module docstring).

    Settings are the caller's, already checked: ``scores`` a finite 1-d array in [0, 1],
    ``alpha`` in (0, 1), ``step > 0``, ``block_size >= 1``, ``initial`` in [0, 1]. Only the
    counts of the blocks before the last are released (the last one's would set no threshold
    of this stream). ``O(T)`` time: one comparison per person, one draw per block.

    Returns
    -------
    thresholds : ndarray of shape (T,)
    released : ndarray of shape (ceil(T/B) - 1,)
        The noisy counts ``Ẽ_k`` (released values).

    Examples
    --------
    >>> s = np.array([0.1, 0.9, 0.2, 0.3, 0.95, 0.1])
    >>> t, e = _tracker_thresholds(s, alpha=0.1, epsilon=1.0, step=0.05, block_size=2,
    ...                           initial=0.5, root=0)
    >>> t.shape, e.shape, bool(t[0] == t[1] == 0.5)
    ((6,), (2,), True)
    """
    n = scores.size
    n_blocks = -(-n // block_size)
    noise = _block_noise(root, 0, n_blocks - 1, epsilon).tolist()
    # each block's scores sorted once: its count above q is one bisection (no re-sorting of
    # the past, no numpy call per block); the last block sets no threshold of this stream
    full = (n_blocks - 1) * block_size
    rows = np.sort(scores[:full].reshape(n_blocks - 1, block_size), axis=1).tolist()
    released = [0.0] * (n_blocks - 1)
    qs = [0.0] * n_blocks
    q = float(initial)
    for k, row in enumerate(rows):
        qs[k] = q
        released[k] = (block_size - bisect.bisect_right(row, q)) + noise[k]
        q = _next_threshold(q, released[k], block_size, alpha, step)
    qs[-1] = q
    # person i's threshold is its block's: O(T) memory whatever the block size (repeating
    # every block to its full size took 800 MB for 50 persons at block_size = 10^8)
    return np.array(qs)[np.arange(n) // block_size], np.array(released)


def tracker_log_likelihood(
    scores, released, *, alpha: float, epsilon: float, step: float, block_size: int, initial
) -> float:
    """Exact log-probability that the tracker on ``scores`` releases the counts ``released``.

    The output law of the module docstring, ``sum_k log p(o_k - E_k(D, o_{<k}))``, for the
    first ``len(released)`` blocks; ``-inf`` off the lattice. Used by the neighbour tests.

    Examples
    --------
    >>> s = np.array([0.1, 0.9, 0.2, 0.3])
    >>> lp = tracker_log_likelihood(s, [1.0], alpha=0.1, epsilon=1.0, step=0.05,
    ...                             block_size=2, initial=0.5)
    >>> lq = tracker_log_likelihood(s, [2.0], alpha=0.1, epsilon=1.0, step=0.05,
    ...                             block_size=2, initial=0.5)
    >>> bool(abs(lp - lq - 1.0) < 1e-9)  # one count away from the truth costs ε
    True
    """
    s = np.asarray(scores, dtype=float)
    o = np.asarray(released, dtype=float)
    scale = block_count_scale(epsilon)
    q, total = float(initial), 0.0
    for k, ok in enumerate(o):
        block = s[k * block_size : (k + 1) * block_size]
        count = float(np.count_nonzero(block > q))
        total += float(discrete_laplace_log_pmf(ok, loc=count, scale=scale))
        q = _next_threshold(q, float(ok), block.size, alpha, step)
    return total


def _log_mgf(theta: np.ndarray, epsilon: float) -> np.ndarray:
    """``log E exp(λ γZ)`` of one block's lattice noise, at ``λ = θ/(t γ)``, ``0 <= θ < 1``."""
    _, t = laplace_lattice(block_count_scale(epsilon))
    a = 1.0 / t
    u = theta * a  # λ γ
    return 2.0 * np.log(-np.expm1(-a)) - np.log(-np.expm1(u - a)) - np.log(-np.expm1(-u - a))


def noise_max_bound(epsilon: float, n_blocks: int, beta: float) -> float:
    """``x`` with ``P(max_{k <= n_blocks} |N_k| >= x) <= β`` for the noise partial sums ``N_k``.

    ``N_k`` is a sum of ``k`` independent symmetric lattice Laplace noises, a martingale, so
    ``exp(λ N_k)`` is a submartingale and Doob's inequality gives
    ``P(max_k N_k >= x) <= E exp(λ N_K) e^{-λx}`` for every ``λ`` in ``(0, 1/(tγ))``, with the
    exact moment generating function of the lattice law; both tails give the factor 2. The
    returned ``x`` is the smallest over a grid of ``λ`` (each is a valid bound).

    Examples
    --------
    >>> 0.0 < noise_max_bound(1.0, 100, 0.05) < 60.0
    True
    >>> noise_max_bound(1.0, 0, 0.05)
    0.0
    """
    if n_blocks <= 0:
        return 0.0
    gamma, t = laplace_lattice(block_count_scale(epsilon))
    theta = np.linspace(1e-4, 1.0 - 1e-4, 4000)
    lam = theta / (t * gamma)
    x = (n_blocks * _log_mgf(theta, epsilon) + math.log(2.0 / beta)) / lam
    return float(np.min(x))


class _OnlineTracker:
    """The tracker one person at a time: the estimators' state (module docstring).

    Holds the released threshold, the public counts of persons and blocks seen, and the one
    unreleased value, the running error count of the current (incomplete) block. ``root``
    None draws each block's noise from fresh OS entropy; a seed reproduces
    :func:`_tracker_thresholds` exactly on the same stream.

    Examples
    --------
    >>> tr = _OnlineTracker(alpha=0.1, epsilon=1.0, step=0.05, block_size=2, initial=0.5)
    >>> t = tr.observe(np.array([0.1, 0.9, 0.2]), root=0)
    >>> bool(t[0] == t[1] == 0.5), tr.n_seen, tr.n_blocks
    (True, 3, 1)
    """

    def __init__(
        self, *, alpha: float, epsilon: float, step: float, block_size: int, initial: float
    ) -> None:
        self.alpha, self.epsilon, self.step = alpha, epsilon, step
        self.block_size = block_size
        self.threshold = float(initial)
        self.n_seen = 0
        self.n_blocks = 0
        self._pending = 0  # unreleased: the error count of the current block

    def _noise(self, root: int | None) -> float:
        """The noise of the block being closed. Seeded: from its chunk, kept in a cache that
        pickles never hold (it is a function of the seed); None: one fresh draw."""
        k = self.n_blocks
        if root is None:
            return float(_block_noise(None, k, k + 1, self.epsilon)[0])
        chunk = k // NOISE_CHUNK
        cache = self.__dict__.get("_cache")
        if cache is None or cache[0] != (root, chunk):
            lo = chunk * NOISE_CHUNK
            cache = ((root, chunk), _block_noise(root, lo, lo + NOISE_CHUNK, self.epsilon))
            self._cache = cache
        return float(cache[1][k - chunk * NOISE_CHUNK])

    def __getstate__(self) -> dict:
        # the running count of an incomplete block is unreleased: never written into a pickle
        # (refused on the public ``pending``, not on the count, which would say whether it is 0)
        if self.pending:
            raise TypeError(
                "this _OnlineTracker holds the unreleased error count of an incomplete block: "
                "pickle it when n_seen is a multiple of block_size"
            )
        return {k: v for k, v in self.__dict__.items() if k != "_cache"}

    @property
    def pending(self) -> int:
        """Persons of the current block seen so far (public: a function of ``n_seen``)."""
        return self.n_seen - self.n_blocks * self.block_size

    def observe(self, scores: np.ndarray, *, root: int | None) -> np.ndarray:
        """Feed the next persons' scores; return the threshold each of them was given.

        A block's count is released (and the threshold moves) as soon as its last person is
        seen. Scores must be checked by the caller (finite, in [0, 1]).
        """
        out = np.empty(scores.size)
        pos = 0
        while pos < scores.size:
            take = min(self.block_size - self.pending, scores.size - pos)
            part = scores[pos : pos + take]
            out[pos : pos + take] = self.threshold
            self._pending += int(np.count_nonzero(part > self.threshold))
            self.n_seen += take
            pos += take
            if self.pending == self.block_size:
                noise = self._noise(root)
                released = self._pending + noise
                self.threshold = _next_threshold(
                    self.threshold, released, self.block_size, self.alpha, self.step
                )
                self.n_blocks += 1
                self._pending = 0
        return out
