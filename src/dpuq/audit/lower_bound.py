"""Black-box ε lower bounds for one pair of neighbouring data sets (DP-Sniper style).

:func:`epsilon_lower_bound` runs a release ``n_samples`` times on a data set ``D`` and
``n_samples`` times on a neighbour ``D'``, each run with its own seed derived from
``random_state``. The draws are split: a quarter of each side fits the candidate scores, a
quarter chooses the rejection event (:mod:`dpuq.audit.events`), and the last half, never seen
by the choice, counts how often the event happens on ``D`` and on ``D'``. From those counts
:func:`dpuq.audit.bounds.epsilon_from_counts` gives ``ε_lb = log((p_lo - δ)/p_hi')`` with
Clopper–Pearson bounds at ``1 - β/2`` each (Bonferroni; ``β = 1 - confidence``).

What it proves: with probability at least ``confidence`` over the auditor's draws, the
release is *not* ``(ε, δ)``-DP for any ``ε < ε_lb`` (under any neighbouring relation for which
``D`` and ``D'`` are neighbours). A bound of 0, or one below the claim, proves nothing: it is
a lower bound, not an estimate of ε. See docs/how-to/audit.md.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpuq.audit.bounds import (
    _check_confidence,
    _check_delta,
    clopper_pearson,
    epsilon_from_counts,
)
from dpuq.audit.events import Event, choose_event, output_features
from dpuq.mechanisms.randomness import RandomState, check_random_state

__all__ = ["AuditResult", "draw_outputs", "epsilon_lower_bound"]

#: Smallest n_samples: each of the three parts needs a few draws per side.
MIN_SAMPLES = 40


@dataclass(frozen=True)
class AuditResult:
    """The result of one black-box audit of a pair of neighbours.

    Attributes
    ----------
    epsilon : float
        The lower bound ε_lb (0 when nothing is proven).
    confidence, delta : float
        ε_lb holds with probability >= ``confidence``; δ is the δ of the (ε, δ) tested.
    event : str
        The rejection event, described (score, threshold, which data set is "D").
    counts : tuple of int
        ``(k, n, k', n')``: draws in the event on the side it favours, and on the other side,
        in the estimation half.
    p_lower, p_upper : float
        The Clopper–Pearson bounds ``p_lo`` and ``p_hi'``.
    n_samples : int
        Draws per data set (all parts).
    neighbour : str
        Which neighbour was audited (set by :func:`dpuq.audit.audit_release`).
    """

    epsilon: float
    confidence: float
    delta: float
    event: str
    counts: tuple[int, int, int, int]
    p_lower: float
    p_upper: float
    n_samples: int
    neighbour: str = ""

    def __str__(self) -> str:
        k, n, k2, n2 = self.counts
        where = f" [{self.neighbour}]" if self.neighbour else ""
        return (
            f"epsilon >= {self.epsilon:.4f} at {100 * self.confidence:g}% confidence "
            f"(delta={self.delta:g}; event {self.event}: {k}/{n} vs {k2}/{n2}){where}"
        )


def _check_samples(n_samples) -> int:
    if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer):
        raise TypeError(f"n_samples must be an integer, got {type(n_samples).__name__}")
    if n_samples < MIN_SAMPLES:
        raise ValueError(f"n_samples must be >= {MIN_SAMPLES}, got {n_samples}")
    return int(n_samples)


def draw_outputs(release, data, seeds: np.ndarray, release_batch=None) -> np.ndarray:
    """The release's outputs on ``data`` for each seed, as a float array (n, k).

    Every call gets a fresh copy of ``data``: a release that edits its input in place must
    not change what the next draws see (that would audit another data set)."""
    if release_batch is not None:
        out = np.asarray(release_batch(copy.deepcopy(data), seeds.copy()), dtype=float)
        if out.shape[:1] != seeds.shape:
            raise ValueError("release_batch must return one output per seed (first axis)")
        return out.reshape(seeds.size, -1)
    return output_features([release(copy.deepcopy(data), int(s)) for s in seeds])


def _resolve_neighbour(data, neighbour):
    return neighbour(data) if callable(neighbour) else neighbour


def epsilon_lower_bound(
    release: Callable[[Any, int], Any] | None,
    data,
    neighbour,
    *,
    n_samples: int,
    confidence: float = 0.95,
    delta: float = 0.0,
    random_state: RandomState = None,
    release_batch: Callable[[Any, np.ndarray], Any] | None = None,
) -> AuditResult:
    """A lower bound on the ε of ``release`` from draws on ``data`` and a neighbour.

    Parameters
    ----------
    release : callable ``(data, seed) -> value``
        The release under audit, a black box: a number or an array of a fixed size. May be
        None when ``release_batch`` is given.
    data :
        The data set ``D``.
    neighbour : data set or callable ``data -> data set``
        The neighbour ``D'``.
    n_samples : int
        Draws per data set (>= 40): a quarter fits the scores, a quarter picks the event, a
        half gives the bound.
    confidence : float, default 0.95
        The bound holds with at least this probability over the auditor's draws.
    delta : float, default 0
        Audit ``(ε, δ)``-DP: ``δ`` is subtracted from the larger event probability.
    random_state : None, int or numpy.random.Generator
        Derives the seeds of the draws (seeds for D and D' are distinct). The audit is
        deterministic for a given ``random_state`` when the release is for a given seed.
    release_batch : callable ``(data, seeds) -> array (len(seeds), ...)``, optional
        A vectorised release (output ``i`` for ``seeds[i]``), used instead of ``release``.

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> def coin(data, seed):  # reveals one bit with probability 1/2: not DP for any ε
    ...     rng = np.random.default_rng(seed)
    ...     return float(data[0]) if rng.random() < 0.5 else 0.5
    >>> res = epsilon_lower_bound(coin, [0.0], [1.0], n_samples=400, random_state=0)
    >>> res.epsilon > 3
    True
    """
    if release is None and release_batch is None:
        raise TypeError("give release or release_batch")
    if release is not None and not callable(release):
        raise TypeError("release must be callable: release(data, seed) -> value")
    n = _check_samples(n_samples)
    conf = _check_confidence(confidence)
    d = _check_delta(delta)
    rng = check_random_state(random_state)
    seeds = rng.integers(0, 2**63 - 1, size=(2, n), dtype=np.int64)
    data_b = _resolve_neighbour(data, neighbour)
    a = draw_outputs(release, data, seeds[0], release_batch)
    b = draw_outputs(release, data_b, seeds[1], release_batch)
    if a.shape[1] != b.shape[1]:
        raise ValueError("release must return outputs of one size on both data sets")
    q, h = n // 4, n // 2
    event = choose_event(a[:q], b[:q], a[q:h], b[q:h], confidence=conf, delta=d)
    return _estimate(event, a[h:], b[h:], conf, d, n)


def _estimate(event: Event, a: np.ndarray, b: np.ndarray, conf: float, d: float, n: int):
    if event.swapped:
        a, b = b, a
    k, k2 = int(event.contains(a).sum()), int(event.contains(b).sum())
    eps = float(epsilon_from_counts(k, a.shape[0], k2, b.shape[0], confidence=conf, delta=d))
    level = 1.0 - (1.0 - conf) / 2.0
    p_lo = float(clopper_pearson(k, a.shape[0], level)[0])
    p_hi = float(clopper_pearson(k2, b.shape[0], level)[1])
    return AuditResult(
        epsilon=eps,
        confidence=conf,
        delta=d,
        event=str(event),
        counts=(k, a.shape[0], k2, b.shape[0]),
        p_lower=p_lo,
        p_upper=p_hi,
        n_samples=n,
    )
