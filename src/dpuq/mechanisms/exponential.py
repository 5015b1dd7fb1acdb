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

Sampling is exact and never loses a candidate to underflow: the law is exactly proportional to
``exp(a_j)`` for the double log-weights ``a_j`` (the only approximation is the double value of
the utilities, a deterministic public function of the data). Draws are made by rejection from
an integer proposal with exact Bernoulli acceptances (:mod:`dpuq.mechanisms.log_weights`,
:mod:`dpuq.mechanisms.exact`); :func:`sample_log_weights_rows` makes one draw per row of a
matrix with the same law, vectorised.
Running time: O(R).

Also here: :func:`exponential_mechanism_accuracy_bound` (the utility tail bound). The
alternative with the same privacy and never worse expected utility, :func:`permute_and_flip`
(McKenna and Sheldon 2020), has its own module, :mod:`dpuq.mechanisms.permute_and_flip`, with
its privacy argument; its names are importable from here too.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from dpuq._validation import check_epsilon, check_positive_finite
from dpuq.mechanisms.log_weights import (
    sample_log_weights,
    sample_log_weights_rows,
    utility_log_weights,
)
from dpuq.mechanisms.permute_and_flip import (
    permute_and_flip,
    permute_and_flip_log_probabilities,
    permute_and_flip_probabilities,
    sample_permute_and_flip,
)
from dpuq.mechanisms.randomness import RandomState, release_generator

__all__ = [
    "exponential_mechanism",
    "exponential_mechanism_accuracy_bound",
    "exponential_mechanism_log_probabilities",
    "exponential_mechanism_probabilities",
    "permute_and_flip",
    "permute_and_flip_log_probabilities",
    "permute_and_flip_probabilities",
    "sample_log_weights",
    "sample_log_weights_rows",
    "sample_permute_and_flip",
]


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
    lw = utility_log_weights(utilities, epsilon, sensitivity, monotone)
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
    ledger=None,
    dataset: str | None = None,
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
    random_state, ledger, dataset :
        Randomness (None: OS entropy, for releases) and budget (charged before any noise),
        as in :func:`~dpuq.mechanisms.randomness.release_generator`.

    Returns
    -------
    int
        Index of the released candidate.

    Examples
    --------
    >>> exponential_mechanism([0.0, 100.0], epsilon=1.0, sensitivity=1.0, random_state=0)
    1
    """
    lw = utility_log_weights(utilities, epsilon, sensitivity, monotone)
    settings = {"n_candidates": int(lw.size), "sensitivity": float(sensitivity)}
    rng = release_generator(
        random_state,
        ledger,
        dataset,
        float(epsilon),
        what="exponential_mechanism",
        settings=settings,
    )
    return sample_log_weights(lw, rng)


# ---------------------------------------------------------------------------------------------
# Accuracy of the exponential mechanism
# ---------------------------------------------------------------------------------------------


def exponential_mechanism_accuracy_bound(
    n_candidates: int,
    *,
    epsilon: float,
    sensitivity: float,
    beta: float,
    monotone: bool = False,
) -> float:
    """Utility gap that the exponential mechanism exceeds with probability at most ``beta``.

    With ``R`` candidates, ``OPT = max_r u(X, r)`` and the released ``r_out``,
    ``P(u(X, r_out) <= OPT - (2Δu/ε)(ln R + ln(1/β))) <= β`` (``Δu/ε`` when ``monotone``).
    Argument: every candidate with ``u <= OPT - g`` has weight at most
    ``exp(ε (OPT - g) / (2Δu))`` and the normaliser is at least ``exp(ε OPT / (2Δu))``, so the
    ``R`` of them together have probability at most ``R exp(-ε g / (2Δu))`` (Dwork and
    Roth 2014, Thm 3.11). The bound holds for every data set, not only on average.

    The same bound holds for :func:`permute_and_flip`: there each candidate's probability is at
    most ``q_r = exp(ε (u_r - OPT) / (2Δu))`` (its acceptance probability), and the same union
    bound applies.

    Parameters
    ----------
    n_candidates : int
        ``R >= 1``, the size of the range.
    epsilon : float
        Privacy parameter, > 0.
    sensitivity : float
        ``Δu`` > 0.
    beta : float
        Failure probability, in (0, 1).
    monotone : bool, default False
        The ``exp(ε u / Δu)`` variant (halves the gap).

    Returns
    -------
    float
        The gap ``g``: ``P(u(X, r_out) <= OPT - g) <= beta``.

    Examples
    --------
    >>> g = exponential_mechanism_accuracy_bound(100, epsilon=1.0, sensitivity=1.0, beta=0.05)
    >>> round(g, 4)  # 2 (ln 100 + ln 20)
    15.2018
    """
    from dpuq._validation import check_in_open_unit, check_positive_int

    r = check_positive_int(n_candidates, "n_candidates")
    eps = check_epsilon(epsilon)
    sens = check_positive_finite(sensitivity, "sensitivity")
    b = check_in_open_unit(beta, "beta")
    scale = sens / eps if monotone else 2.0 * sens / eps
    bound = scale * (math.log(r) - math.log(b))
    if not math.isfinite(bound):
        raise ValueError(f"sensitivity={sensitivity!r} over epsilon={epsilon!r} overflows")
    return bound
