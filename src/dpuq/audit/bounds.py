"""The statistics of an audit: Clopper–Pearson bounds and the two ε lower bounds.

Two bounds, both *lower* bounds on the ε of whatever produced the counts, valid with
probability at least ``confidence`` over the auditor's draws:

* :func:`epsilon_from_counts` (black box, two data sets). If a mechanism ``M`` is
  ``(ε, δ)``-DP then for every event ``E`` and neighbours ``D, D'``,
  ``P[M(D) ∈ E] <= e^ε P[M(D') ∈ E] + δ``. From ``k`` of ``n`` draws on ``D`` and ``k'`` of
  ``n'`` draws on ``D'`` in ``E``, Clopper–Pearson gives ``p_lo <= P[M(D) ∈ E]`` and
  ``P[M(D') ∈ E] <= p_hi'``, each at level ``1 - β/2`` (Bonferroni: both hold with probability
  ``>= 1 - β``, ``β = 1 - confidence``). On that event ``ε >= log((p_lo - δ)/p_hi')``. δ enters
  by subtraction from the larger probability; ``δ >= p_lo`` gives no bound (0).
* :func:`one_run_epsilon_lower_bound` (one training run; Steinke, Nasr and Jagielski,
  *Privacy auditing with one (1) training run*, NeurIPS 2023, Theorem 3.1 and the procedure of
  their Appendix D). ``m`` canaries are each included independently with probability 1/2; the
  auditor makes ``r`` guesses (in or out) and ``v`` are right. For an ``(ε, δ)``-DP algorithm,
  ``P[W >= v] <= P[Binomial(r, q) >= v] + 2 m δ max_{1<=i<=v} P[v-i <= Binomial(r, q) < v] / i``
  with ``q = e^ε/(1+e^ε)`` (for δ = 0 the plain binomial tail: ε-DP randomised response is the
  best guesser). The bound is the largest ε whose tail (the p-value) is still below
  ``β = 1 - confidence``: every smaller ε is rejected at level β.

Both functions are pure arithmetic on public counts; nothing here draws randomness.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = [
    "clopper_pearson",
    "epsilon_from_counts",
    "one_run_epsilon_lower_bound",
    "one_run_p_value",
]


def _check_confidence(confidence) -> float:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return c


def _check_delta(delta) -> float:
    d = float(delta)
    if not 0.0 <= d < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return d


def clopper_pearson(k, n, level: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson bounds ``(lower, upper)``, each holding with ``level``.

    ``lower`` is the ``1 - level`` quantile of ``Beta(k, n-k+1)`` (0 when ``k = 0``),
    ``upper`` the ``level`` quantile of ``Beta(k+1, n-k)`` (1 when ``k = n``). Vectorised over
    ``k`` and ``n``.

    Examples
    --------
    >>> lo, hi = clopper_pearson(0, 10, 0.95)
    >>> float(lo), round(float(hi), 4)  # 1 - 0.05**(1/10)
    (0.0, 0.2589)
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    tail = 1.0 - float(level)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, stats.beta.ppf(tail, np.maximum(k, 1), n - k + 1), 0.0)
        upper = np.where(k < n, stats.beta.ppf(1.0 - tail, k + 1, np.maximum(n - k, 1)), 1.0)
    return lower, upper


def epsilon_from_counts(k, n, k_prime, n_prime, *, confidence: float = 0.95, delta: float = 0.0):
    """Lower bound on ε from ``k/n`` draws on D and ``k'/n'`` on D' in one event (vectorised).

    ``log((p_lo - δ)/p_hi')`` with Clopper–Pearson bounds at ``1 - (1-confidence)/2`` each
    (module docstring), clipped below at 0.

    Examples
    --------
    >>> round(float(epsilon_from_counts(500, 1000, 10, 1000)), 3)  # log(0.4685 / 0.0183)
    3.242
    >>> float(epsilon_from_counts(500, 1000, 500, 1000))
    0.0
    """
    level = 1.0 - (1.0 - _check_confidence(confidence)) / 2.0
    d = _check_delta(delta)
    p_lo, _ = clopper_pearson(k, n, level)
    _, p_hi = clopper_pearson(k_prime, n_prime, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((p_lo - d) / p_hi)
    return np.where(p_lo > d, np.maximum(eps, 0.0), 0.0)


def _check_counts(m: int, r: int, v: int) -> None:
    for name, value in (("n_canaries", m), ("n_guesses", r), ("n_correct", v)):
        if isinstance(value, bool) or int(value) != value or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if not v <= r <= m:
        raise ValueError(f"need n_correct <= n_guesses <= n_canaries, got {v}, {r}, {m}")


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    """Steinke et al.'s bound on ``P[W >= v]`` for an (ε, δ)-DP algorithm (module docstring).

    Parameters
    ----------
    m : int
        Number of canaries, each included independently with probability 1/2.
    r, v : int
        Number of guesses and of correct guesses.
    epsilon, delta : float
        The null hypothesis: the algorithm is (ε, δ)-DP.

    Examples
    --------
    >>> round(one_run_p_value(100, 10, 10, 0.0), 6)  # ten right coin flips
    0.000977
    """
    _check_counts(m, r, v)
    d = _check_delta(delta)
    q = 1.0 / (1.0 + math.exp(-float(epsilon)))
    tail = float(stats.binom.sf(v - 1, r, q))
    if d == 0.0 or v == 0:
        return min(tail, 1.0)
    i = np.arange(1, v + 1)
    window = np.cumsum(stats.binom.pmf(v - i, r, q))  # P[v - i <= Binomial(r, q) < v]
    return min(tail + 2.0 * m * d * float(np.max(window / i)), 1.0)


def one_run_epsilon_lower_bound(
    m: int, r: int, v: int, *, confidence: float = 0.95, delta: float = 0.0
) -> float:
    """The largest ε that ``v`` right guesses out of ``r`` reject at level ``1 - confidence``.

    Steinke, Nasr and Jagielski (2023), Theorem 3.1: bisection (40 steps) for the ε where
    :func:`one_run_p_value` crosses ``β = 1 - confidence`` (it increases with ε). 0 when even
    ε = 0 is not rejected.

    Examples
    --------
    >>> one_run_epsilon_lower_bound(1000, 100, 50)  # coin flips prove nothing
    0.0
    >>> round(one_run_epsilon_lower_bound(1000, 100, 100), 3)  # q^100 = 0.05: log(q/(1-q))
    3.493
    """
    beta = 1.0 - _check_confidence(confidence)
    d = _check_delta(delta)
    if one_run_p_value(m, r, v, 0.0, d) >= beta:
        return 0.0
    lo, hi = 0.0, 1.0
    while one_run_p_value(m, r, v, hi, d) < beta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e4:  # every ε up to 10^4 rejected: report that much, no more
            return lo
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if one_run_p_value(m, r, v, mid, d) < beta:
            lo = mid
        else:
            hi = mid
    return lo


class ClaimVerdict:
    """Whether an audit's lower bound ``epsilon`` contradicts the ``claimed_epsilon`` of the
    release it audited: shared by :class:`~dpuq.audit.release_audit.ReleaseAudit` and
    :class:`~dpuq.audit.training_audit.TrainingAudit` (each has both fields).

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Audit(ClaimVerdict):
    ...     epsilon: float
    ...     claimed_epsilon: float | None
    >>> Audit(2.0, 1.0).violated, Audit(0.5, 1.0).verdict(), Audit(0.5, None).verdict()
    (True, '; claimed epsilon 1: not contradicted', '')
    """

    epsilon: float
    claimed_epsilon: float | None

    @property
    def violated(self) -> bool:
        """True when the bound exceeds the claimed ε: the claim is false (at ``confidence``)."""
        return self.claimed_epsilon is not None and self.epsilon > self.claimed_epsilon

    def verdict(self) -> str:
        """``"; claimed epsilon E: VIOLATED"`` (or ``not contradicted``); empty with no claim."""
        if self.claimed_epsilon is None:
            return ""
        word = "VIOLATED" if self.violated else "not contradicted"
        return f"; claimed epsilon {self.claimed_epsilon:g}: {word}"
