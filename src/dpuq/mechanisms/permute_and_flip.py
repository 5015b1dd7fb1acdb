"""Permute-and-flip (McKenna and Sheldon 2020), exact, with its exact output law.

Privacy
-------
Input: a data set ``X`` and a finite range of ``R`` candidates with utilities ``u(X, r)``.
Neighbouring relation: whatever relation the caller's sensitivity is stated for (the one ``Δu``
is stated for), as for :mod:`dpuq.mechanisms.exponential`.
Sensitivity: ``Δu = max_r max_{X~X'} |u(X, r) - u(X', r)|``, supplied by the caller.
Mechanism: visit the candidates in a uniformly random order; accept candidate ``r`` with
probability ``q_r = exp(ε (u_r - max u) / (2 Δu))`` and release the first accepted one (the best
candidate is always accepted, so the walk stops). Its law equals report-noisy-max with
exponential noise, ``argmax_r u_r + Exp(2Δu/ε)`` (Ding et al. 2021).
Guarantee: ε-DP (δ = 0) for any utilities of sensitivity ``Δu`` (McKenna and Sheldon 2020,
Thm 1; or, through the equivalence, the report-noisy-max analysis of Ding et al. 2021). No
monotone variant is offered here.
Accuracy: never worse in expected utility than the exponential mechanism at the same ε
(McKenna and Sheldon 2020), up to twice better; the tail bound of
:func:`dpuq.mechanisms.exponential.exponential_mechanism_accuracy_bound` holds for it too (each
candidate's probability is at most its acceptance probability ``q_r``).
Exact law: :func:`permute_and_flip_probabilities`.

Sampling is exact: each acceptance ``exp(a_r - max a)`` is an exact Bernoulli decision
(:func:`dpuq.mechanisms.exact.bernoulli_certified`), so a candidate whose probability
underflows in floating point can still be released. Running time O(R).
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
from scipy.special import logsumexp

from dpuq.mechanisms.exact import bernoulli_certified
from dpuq.mechanisms.log_weights import utility_log_weights
from dpuq.mechanisms.randomness import RandomState, release_generator

__all__ = [
    "permute_and_flip",
    "permute_and_flip_log_probabilities",
    "permute_and_flip_probabilities",
    "sample_permute_and_flip",
]


def _pf_log_q(utilities, epsilon, sensitivity) -> np.ndarray:
    """``log q_r = ε (u_r - max u) / (2 Δu) <= 0``; the best candidates have ``q = 1``."""
    lw = utility_log_weights(utilities, epsilon, sensitivity, monotone=False)
    return lw - lw.max()


@functools.lru_cache(maxsize=32)
def _legendre_unit(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes on (0, 1) and the logs of their weights (which sum to 1)."""
    from scipy.special import roots_legendre

    nodes, weights = roots_legendre(n_nodes)
    t, log_w = 0.5 * (nodes + 1.0), np.log(0.5 * weights)
    t.flags.writeable = False
    log_w.flags.writeable = False
    return t, log_w


def permute_and_flip_log_probabilities(utilities, *, epsilon: float, sensitivity: float):
    """Exact log output law of :func:`permute_and_flip`.

    With ``q_r = exp(ε (u_r - max u) / (2Δu))``, visiting the candidates in a uniformly random
    order and stopping at the first accepted one gives
    ``P(r) = q_r ∫_0^1 prod_{s != r} (1 - t q_s) dt``: give every candidate an independent
    uniform arrival time ``t_s``; ``r`` is released when it is accepted and every candidate
    arriving before it was rejected. The integrand is a polynomial of degree ``R - 1`` in
    ``t``, so Gauss-Legendre quadrature with ``ceil(R/2) + 1`` nodes integrates it exactly (up
    to rounding); sums are taken in log space, so tiny probabilities keep their value.
    Running time ``O(R U)`` with ``U`` the number of distinct utilities (at most ``R``): meant
    for audits and tests on ranges up to a few thousand candidates.

    Parameters
    ----------
    utilities, epsilon, sensitivity :
        As for :func:`dpuq.mechanisms.exponential.exponential_mechanism_log_probabilities`.

    Returns
    -------
    ndarray of shape (R,)
        ``log P(r)``.

    Examples
    --------
    >>> lp = permute_and_flip_log_probabilities([0.0, 0.0], epsilon=1.0, sensitivity=1.0)
    >>> np.round(np.exp(lp), 12).tolist()
    [0.5, 0.5]
    """
    log_q = _pf_log_q(utilities, epsilon, sensitivity)
    r = log_q.size
    values, inverse, counts = np.unique(log_q, return_inverse=True, return_counts=True)
    q = np.exp(values)  # distinct q_v in (0, 1]; underflow to 0 only makes a factor exactly 1
    n_nodes = r // 2 + 1
    t, log_w = _legendre_unit(n_nodes)
    # log prod_{s != r} (1 - t q_s) = S(t) - log1p(-t q_r), S(t) = sum_v c_v log1p(-t q_v).
    # Chunks over nodes keep memory at about 2**22 floats.
    chunk = max(1, (1 << 22) // max(1, values.size))
    out = np.full(values.size, -np.inf)
    for start in range(0, n_nodes, chunk):
        tk = t[start : start + chunk, None]
        logs = np.log1p(-tk * q[None, :])  # (k, U); t < 1 so finite
        s_total = logs @ counts.astype(float)  # (k,)
        terms = log_w[start : start + chunk, None] + s_total[:, None] - logs
        out = np.logaddexp(out, logsumexp(terms, axis=0))
    law = values[inverse] + out[inverse]
    return law - logsumexp(law)  # the exact law sums to 1; this removes quadrature rounding


def permute_and_flip_probabilities(utilities, *, epsilon: float, sensitivity: float):
    """Exact output law of :func:`permute_and_flip` (see its log version for the method).

    Examples
    --------
    >>> p = permute_and_flip_probabilities([0.0, 0.0], epsilon=1.0, sensitivity=1.0)
    >>> np.round(p, 12).tolist()
    [0.5, 0.5]
    """
    return np.exp(
        permute_and_flip_log_probabilities(utilities, epsilon=epsilon, sensitivity=sensitivity)
    )


def _accept_exp_neg(lw: np.ndarray, top: float, rng: np.random.Generator) -> np.ndarray:
    """Independent Bernoulli(``exp(lw_r - top)``) for each ``lw_r <= top``, vectorised, exact.

    Float ``exp(lw_r - top)`` is within a relative ``2^-42`` of the exact value where it is
    normal (the error budget of :mod:`dpuq.mechanisms.log_weights`), plus ``2^-1070`` absolute
    where it underflows; :func:`dpuq.mechanisms.exact.bernoulli_certified` decides exactly,
    with the rational ``lw_r - top`` for the rare undecided cases. No acceptance probability is
    lost to underflow.
    """
    with np.errstate(under="ignore"):
        p = np.exp(lw - top)

    def exact(i):
        return Fraction(float(lw[i])) - Fraction(float(top)), Fraction(1)

    return bernoulli_certified(p, 2.0**-41, rng, exact)


def permute_and_flip(
    utilities,
    *,
    epsilon: float,
    sensitivity: float,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> int:
    """Release one candidate with permute-and-flip (McKenna and Sheldon 2020); ε-DP.

    Visit the candidates in a uniformly random order; accept candidate ``r`` with probability
    ``exp(ε (u_r - max u) / (2 Δu))`` and release the first accepted one. ε-DP (δ = 0) under
    the relation ``Δu`` is stated for: see the module docstring for the argument, the
    accuracy and the exact sampling.

    Parameters
    ----------
    utilities, epsilon, sensitivity, random_state, ledger, dataset :
        As for :func:`dpuq.mechanisms.exponential.exponential_mechanism` (no ``monotone``).

    Returns
    -------
    int
        Index of the released candidate: the first one accepted.

    Examples
    --------
    >>> permute_and_flip([0.0, 100.0], epsilon=1.0, sensitivity=1.0, random_state=0)
    1
    """
    lw = utility_log_weights(utilities, epsilon, sensitivity, monotone=False)
    settings = {"n_candidates": int(lw.size), "sensitivity": float(sensitivity)}
    rng = release_generator(
        random_state, ledger, dataset, float(epsilon), what="permute_and_flip", settings=settings
    )
    return sample_permute_and_flip(lw, rng)


def sample_permute_and_flip(log_weights: np.ndarray, rng: np.random.Generator) -> int:
    """One permute-and-flip draw from log-weights ``a_r`` (``ε u_r / (2Δu)``).

    Visits the candidates in the order ``rng.permutation(R)`` (numpy's exact Fisher-Yates
    shuffle with exact bounded integers) and accepts ``r`` with probability exactly
    ``exp(a_r - max a)`` (an exact Bernoulli decision each).

    Parameters
    ----------
    log_weights : ndarray of shape (R,)
        Finite log-weights.
    rng : numpy.random.Generator

    Returns
    -------
    int
        The first accepted candidate in the visiting order.

    Examples
    --------
    >>> sample_permute_and_flip(np.array([0.0, -1e6]), np.random.default_rng(0))
    0
    """
    lw = np.asarray(log_weights, dtype=float)
    if lw.ndim != 1 or lw.size == 0 or not np.isfinite(lw).all():
        raise ValueError("log_weights must be a non-empty 1-D array of finite numbers")
    order = np.asarray(rng.permutation(lw.size))
    accepted = _accept_exp_neg(lw[order], float(lw.max()), rng)  # the best: probability 1
    return int(order[int(np.argmax(accepted))])
