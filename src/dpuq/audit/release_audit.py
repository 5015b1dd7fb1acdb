"""Audit one release over many neighbours: :func:`audit_release` reports the worst bound.

Each pair of neighbours is audited with :func:`dpuq.audit.epsilon_lower_bound` at confidence
``1 - β/G`` (``G`` pairs in all, ``β = 1 - confidence``): by the union bound, *all* G bounds,
hence the largest, hold together with probability at least ``confidence``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpuq.audit.bounds import ClaimVerdict, _check_confidence
from dpuq.audit.lower_bound import AuditResult, epsilon_lower_bound
from dpuq.audit.neighbours import GENERATORS, Neighbours
from dpuq.mechanisms.randomness import RandomState, check_random_state

__all__ = ["ReleaseAudit", "audit_release"]


@dataclass(frozen=True)
class ReleaseAudit(ClaimVerdict):
    """The audit of one release over several neighbours.

    Attributes
    ----------
    epsilon : float
        The largest lower bound found; holds with ``confidence`` jointly with the others.
    worst : AuditResult
        The audit that gave it (its own confidence is the Bonferroni share).
    results : tuple of AuditResult
        Every pair's audit.
    confidence : float
    claimed_epsilon : float or None
    """

    epsilon: float
    worst: AuditResult
    results: tuple[AuditResult, ...]
    confidence: float
    claimed_epsilon: float | None = None

    def __str__(self) -> str:
        head = (
            f"epsilon >= {self.epsilon:.4f} at {100 * self.confidence:g}% confidence "
            f"({len(self.results)} neighbour pairs, {self.worst.n_samples} draws per data set)"
            + self.verdict()
        )
        return f"{head}\n  worst: {self.worst.neighbour}: event {self.worst.event}"


def _one_data_set(datasets) -> bool:
    """A tuple, an array, a non-sequence or a list of numbers is one data set, not a list."""
    if isinstance(datasets, tuple | np.ndarray) or not isinstance(datasets, Sequence):
        return True
    return len(datasets) > 0 and np.isscalar(datasets[0])


def _pairs(datasets: Sequence[Any], neighbours, options: dict) -> list[Neighbours]:
    if isinstance(neighbours, str):
        if neighbours not in GENERATORS:
            raise ValueError(f"neighbours must be one of {sorted(GENERATORS)}, got {neighbours!r}")
        generate = GENERATORS[neighbours]
    elif callable(neighbours):
        generate = neighbours
    else:
        raise TypeError("neighbours must be a generator name or a callable data -> pairs")
    pairs: list[Neighbours] = []
    for j, data in enumerate(datasets):
        for p in generate(data, **options):
            tag = f"data set {j}: " if len(datasets) > 1 else ""
            pairs.append(Neighbours(tag + p.name, p.data, p.neighbour))
    if not pairs:
        raise ValueError("the generator gave no neighbouring pairs")
    return pairs


def audit_release(
    release: Callable[[Any, int], Any] | None,
    datasets,
    *,
    neighbours: str | Callable = "scores",
    n_samples: int,
    confidence: float = 0.95,
    delta: float = 0.0,
    claimed_epsilon: float | None = None,
    random_state: RandomState = None,
    release_batch: Callable | None = None,
    neighbour_options: dict | None = None,
) -> ReleaseAudit:
    """Audit ``release`` on every neighbour of every data set; report the worst bound.

    Parameters
    ----------
    release : callable ``(data, seed) -> value``, or None with ``release_batch``
    datasets : data set, or list of data sets
        E.g. ``dpuq.audit.worst_case_data("scores", 50)`` plus a real one.
    neighbours : str or callable, default "scores"
        A generator of :mod:`dpuq.audit.neighbours` by name (``scores``, ``labelled_scores``,
        ``rows``, ``losses``, ``training_set``) or a callable ``data -> [Neighbours, ...]``.
    n_samples, delta, release_batch :
        As in :func:`dpuq.audit.epsilon_lower_bound`, per pair.
    confidence : float, default 0.95
        Joint confidence of all bounds (each pair gets ``1 - (1-confidence)/G``).
    claimed_epsilon : float, optional
        The ε the release claims: the report says whether the audit contradicts it.
    random_state : None, int or numpy.random.Generator
        Derives one seed per pair: deterministic for a given value.
    neighbour_options : dict, optional
        Keyword arguments of the generator (``bounds=`` for ``rows``, ``quantiles=``...).

    Returns
    -------
    ReleaseAudit

    Examples
    --------
    >>> def mean_without_noise(data, seed):  # not private at all
    ...     return float(np.mean(data))
    >>> audit = audit_release(mean_without_noise, [np.full(5, 0.5)], n_samples=200,
    ...                       claimed_epsilon=1.0, random_state=0)
    >>> audit.violated
    True
    """
    conf = _check_confidence(confidence)
    if _one_data_set(datasets):
        datasets = [datasets]
    pairs = _pairs(list(datasets), neighbours, dict(neighbour_options or {}))
    share = 1.0 - (1.0 - conf) / len(pairs)
    rng = check_random_state(random_state)
    seeds = rng.integers(0, 2**63 - 1, size=len(pairs), dtype=np.int64)
    results = []
    for pair, seed in zip(pairs, seeds, strict=True):
        res = epsilon_lower_bound(
            release,
            pair.data,
            pair.neighbour,
            n_samples=n_samples,
            confidence=share,
            delta=delta,
            random_state=int(seed),
            release_batch=release_batch,
        )
        results.append(replace(res, neighbour=pair.name))
    worst = max(results, key=lambda r: r.epsilon)
    return ReleaseAudit(worst.epsilon, worst, tuple(results), conf, claimed_epsilon)
