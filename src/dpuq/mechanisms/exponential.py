"""The exponential mechanism (McSherry and Talwar 2007), exact in log space.

Privacy
-------
Input: a data set ``X`` and a finite range of ``R`` candidates with utilities ``u(X, r)``.
Neighbouring relation: whatever relation the caller's sensitivity is stated for (the
prediction-set quantile uses replace-one with ``n`` public; the private learner too).
Sensitivity: ``Δu = max_r max_{X~X'} |u(X, r) - u(X', r)|``, supplied by the caller.
Guarantee: releasing ``r`` with probability ``∝ exp(ε u(X, r) / (2 Δu))`` is ε-DP (δ = 0).
Argument: the numerator moves by a factor at most ``exp(ε/2)`` and the normaliser by at most
``exp(ε/2)``, so every output probability moves by at most ``exp(ε)``. When every utility moves
in the same direction between neighbours (``monotone=True``), numerator and normaliser move
together and ``exp(ε u / Δu)`` is ε-DP (McSherry and Talwar 2007; Dwork and Roth 2014, Thm 3.10).

Accuracy: ``P(u(X, r_out) <= OPT - (2Δu/ε)(ln R + t)) <= exp(-t)`` (``Δu/ε`` when monotone).

Sampling is exact and never loses a candidate to underflow: weights are handled as logs;
candidates whose relative weight underflows in linear space are kept in a separate group whose
total mass is computed in log space and chosen with exactly that probability
(:func:`sample_log_weights`).
Running time: O(R).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from dpuq._validation import check_array_1d, check_epsilon
from dpuq.mechanisms.randomness import RandomState, check_random_state

__all__ = [
    "exponential_mechanism",
    "exponential_mechanism_log_probabilities",
    "exponential_mechanism_probabilities",
    "sample_log_weights",
]

# exp(x) is a normal double for x > -708; below that we switch to the log-space group.
_LINEAR_FLOOR = -700.0


def _log_weights(utilities, epsilon, sensitivity, monotone: bool) -> np.ndarray:
    u = check_array_1d(utilities, "utilities")
    eps = check_epsilon(epsilon)
    sens = check_epsilon(sensitivity, "sensitivity")
    return u * (eps / (sens if monotone else 2.0 * sens))


def _bernoulli_exp_neg(a: float, rng: np.random.Generator) -> bool:
    """True with probability ``exp(-a)``, ``a >= 0``, exactly even when ``exp(-a)`` underflows.

    Memorylessness: ``exp(-a) = prod_k exp(-a_k)`` with steps ``a_k <= 30``, each checked
    with one uniform (``exp(-30)`` is far above the uniform's resolution of 2^-53).
    """
    while a > 0.0:
        step = min(a, 30.0)
        if rng.random() >= math.exp(-step):
            return False
        a -= step
    return True


def sample_log_weights(log_weights: np.ndarray, rng: np.random.Generator) -> int:
    """Draw index ``j`` with probability ``exp(log_weights[j]) / sum(exp(log_weights))``.

    Exact in log space: no candidate with finite log-weight gets probability 0. Candidates
    within a factor ``e^700`` of the largest weight are sampled by inverse CDF in linear space;
    the rest form a group whose total mass is computed with log-sum-exp, chosen with exactly
    that probability (:func:`_bernoulli_exp_neg`), and sampled recursively within.

    Parameters
    ----------
    log_weights : ndarray of shape (R,)
        Unnormalised log-probabilities; ``-inf`` marks an impossible candidate.
    rng : numpy.random.Generator

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> sample_log_weights(np.array([0.0, -np.inf]), np.random.default_rng(0))
    0
    """
    lw = np.asarray(log_weights, dtype=float)
    rel = lw - lw.max()
    linear = rel > _LINEAR_FLOOR
    w = np.exp(np.where(linear, rel, -np.inf))
    tiny_idx = np.flatnonzero(~linear & np.isfinite(rel))
    if tiny_idx.size:
        log_tiny = float(logsumexp(rel[tiny_idx]))
        log_total = float(np.logaddexp(math.log(float(w.sum())), log_tiny))
        if _bernoulli_exp_neg(log_total - log_tiny, rng):
            return int(tiny_idx[sample_log_weights(rel[tiny_idx], rng)])
    cdf = np.cumsum(w)
    j = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    if j >= cdf.size:  # u * total rounded up to total: take the last candidate with weight
        j = int(np.flatnonzero(w)[-1])
    return j


def exponential_mechanism_log_probabilities(
    utilities, *, epsilon: float, sensitivity: float, monotone: bool = False
) -> np.ndarray:
    """Exact log output law of the exponential mechanism.

    Parameters
    ----------
    utilities : array-like of shape (R,)
        Utility of each candidate (higher is better); finite.
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float
        ``Δu``, the largest change of any utility between neighbouring data sets, > 0.
    monotone : bool, default False
        Use ``exp(ε u / Δu)``; ε-DP only when all utilities move in the same direction.

    Returns
    -------
    ndarray of shape (R,)
        ``log P(r)``, normalised with log-sum-exp.

    Examples
    --------
    >>> lp = exponential_mechanism_log_probabilities([0.0, 1.0], epsilon=2.0, sensitivity=1.0)
    >>> bool(abs(lp[1] - lp[0] - 1.0) < 1e-12)
    True
    """
    lw = _log_weights(utilities, epsilon, sensitivity, monotone)
    return lw - logsumexp(lw)


def exponential_mechanism_probabilities(
    utilities, *, epsilon: float, sensitivity: float, monotone: bool = False
) -> np.ndarray:
    """Exact output law of the exponential mechanism (see the module docstring for privacy).

    Probabilities below about 1e-308 print as 0 here; use
    :func:`exponential_mechanism_log_probabilities` to see them.

    Examples
    --------
    >>> p = exponential_mechanism_probabilities([0.0, 0.0], epsilon=1.0, sensitivity=1.0)
    >>> p.tolist()
    [0.5, 0.5]
    """
    return np.exp(
        exponential_mechanism_log_probabilities(
            utilities, epsilon=epsilon, sensitivity=sensitivity, monotone=monotone
        )
    )


def exponential_mechanism(
    utilities,
    *,
    epsilon: float,
    sensitivity: float,
    monotone: bool = False,
    random_state: RandomState = None,
) -> int:
    """Release the index of one candidate with the exponential mechanism; ε-DP.

    Releases ``r`` with probability ``∝ exp(ε u_r / (2 Δu))`` (``exp(ε u_r / Δu)`` when
    ``monotone``). Neighbouring relation and ``Δu`` are the caller's; see the module docstring
    for the argument.

    Parameters
    ----------
    utilities : array-like of shape (R,)
        Utility of each candidate (higher is better).
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float
        ``Δu`` > 0.
    monotone : bool, default False
        Whether utilities are monotone between neighbours (halves the noise).
    random_state : None, int or numpy.random.Generator
        None (default) uses OS entropy: use it for releases. A seed is for experiments.

    Returns
    -------
    int
        Index of the released candidate.

    Examples
    --------
    >>> exponential_mechanism([0.0, 100.0], epsilon=1.0, sensitivity=1.0, random_state=0)
    1
    """
    lw = _log_weights(utilities, epsilon, sensitivity, monotone)
    return sample_log_weights(lw, check_random_state(random_state))
