"""Settings and the coverage bound of the private online tracker: data-free.

The tracker (:mod:`dpuq.mechanisms.online_counts`) has three public settings besides ``α``
and ε: the step ``η`` (score units per person), the block size ``B`` and the starting
threshold ``q_0``. Their defaults are fixed by the worst-case bound, not by any data:

- ``q_0 = 1/2`` minimises ``max(q_0, 1 - q_0)/η``, the bound's start-up term;
- ``η = 0.01``: the start-up term is then 50 persons, so at ``T = 10^4`` it is ``0.005`` of
  miscoverage, and the threshold can still cross the whole score range in about 100 persons of
  misses (``1/(η(1-α))``) or 1,000 persons of covers (``1/(ηα)``);
- ``B = max(10, ceil(2/(ε² α(1-α))))`` (:func:`online_block_size`): the smallest block whose
  noise variance ``2/ε²`` is at most the binomial variance ``B α(1-α)`` of its error count at
  the target rate, so that privacy at most doubles the tracker's input noise; a smaller block
  reacts sooner but lets the noise dominate. (``α = 0.1``: ``B = 23`` at ε = 1, 89 at ε = 0.5,
  10 at ε = 3.)
"""

from __future__ import annotations

import math

from dpuq._validation import (
    check_alpha,
    check_count,
    check_epsilon,
    check_in_open_unit,
    check_positive_int,
)
from dpuq.mechanisms.online_counts import noise_max_bound

__all__ = [
    "DEFAULT_INITIAL",
    "DEFAULT_STEP",
    "MIN_BLOCK",
    "online_block_size",
    "online_coverage_bound",
]

DEFAULT_STEP = 0.01
DEFAULT_INITIAL = 0.5
MIN_BLOCK = 10


def online_block_size(alpha: float, epsilon: float) -> int:
    """The default block size ``max(10, ceil(2/(ε² α(1-α))))`` (module docstring).

    Examples
    --------
    >>> online_block_size(0.1, 1.0), online_block_size(0.1, 0.5), online_block_size(0.1, 3.0)
    (23, 89, 10)
    """
    a = check_alpha(alpha)
    eps = check_epsilon(epsilon)
    ratio = 2.0 / (eps * eps * a * (1.0 - a))
    return max(MIN_BLOCK, math.ceil(ratio - 1e-9))


def online_coverage_bound(
    n: int,
    alpha: float,
    epsilon: float,
    *,
    step: float = DEFAULT_STEP,
    block_size: int | None = None,
    initial: float = DEFAULT_INITIAL,
    beta: float = 0.05,
) -> float:
    """Bound on ``|mean miscoverage - α|`` over ``n`` persons, any score sequence, prob. ``1-β``.

    ``(max((1 - q_0)/η + (1 - α)B, q_0/η + αB) + x_β)/n`` with ``x_β`` the bound on the
    largest noise partial sum of :func:`dpuq.mechanisms.online_counts.noise_max_bound` over
    the ``ceil(n/B) - 1`` released counts (proof: :mod:`dpuq.mechanisms.online_counts`). The
    first term holds for every noise outcome; only ``x_β`` is probabilistic.

    Examples
    --------
    >>> b = online_coverage_bound(10_000, 0.1, 1.0)
    >>> 0.005 < b < 0.02
    True
    """
    n = check_count(n, "n")
    a = check_alpha(alpha)
    eps = check_epsilon(epsilon)
    B = (
        online_block_size(a, eps)
        if block_size is None
        else check_positive_int(block_size, "block_size")
    )
    eta = float(step)
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"step must be a finite number > 0, got {step!r}")
    q0 = float(initial)
    if not 0.0 <= q0 <= 1.0:
        raise ValueError(f"initial must be in [0, 1], got {initial!r}")
    b = check_in_open_unit(beta, "beta")
    start = max((1.0 - q0) / eta + (1.0 - a) * B, q0 / eta + a * B)
    n_released = -(-n // B) - 1
    return (start + noise_max_bound(eps, n_released, b)) / n
