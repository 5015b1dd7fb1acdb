"""Private conformal risk control: the selection over a public λ grid, its law and certificate.

Privacy
-------
Input: ``n`` loss vectors ``(L_i(λ_1), ..., L_i(λ_m))`` with values in [0, 1], nonincreasing
along the public grid ``λ_1 < ... < λ_m``; ``λ_m`` is the trivial answer (the whole label set,
the whole line), whose loss is 0 by construction (the last column is never read); ``n``, the
grid, the target ``τ`` and ``epsilon`` are public. Neighbouring relation: replace-one (swap)
with ``n`` public.
Sums ``S_j = Σ_i L_i(λ_j)`` (nonincreasing in j, ``S_m = 0``) and the public ``S_0 = n``.
Utility (minus the distance from τ to ``[S_j, S_{j-1}]``)::

    u_j = -max(S_j - τ, τ - S_{j-1}, 0).

Replacing one person's loss vector moves every ``S_j`` by at most 1 (each loss is in [0, 1])
and leaves ``S_0 = n`` fixed; each argument of the max moves by at most 1 and the max is
1-Lipschitz, so the sensitivity is 1 and ``P(J = j) ∝ exp(ε u_j / 2)`` is ε-DP, δ = 0
(:mod:`dpuq.mechanisms.exponential`). The sums are double-precision (``math.fsum``: each is
the correctly rounded exact sum), as every utility of the package is.

Validity (docs/how-to/risk_control.md): for every data set and every ``x > 0``,
``P(S_J >= x) <= G(x) = 1 / (1 + e^{(ε/2)(x - τ)} / (m - 1))``; for exchangeable loss vectors
this gives ``E[L_{n+1}(λ_J)] <= risk_certificate(τ) = (1 + ∫_0^n G(x) dx) / (n + 1)``, in
closed form. :func:`certified_risk_target` returns the largest ``τ`` in ``[0, n]`` certified
to ``alpha`` (or None: then the release is the constant ``λ_m``, nothing sampled).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from dpuq._validation import check_epsilon, check_positive_int
from dpuq.mechanisms.exponential import sample_log_weights_rows
from dpuq.mechanisms.randomness import RandomState, check_random_state, release_generator

__all__ = [
    "certified_risk_target",
    "check_losses",
    "loss_sums",
    "risk_certificate",
    "risk_selection",
    "risk_selection_log_distribution",
]

#: Relative and absolute margins that round the certificate up (it bounds a risk from above).
_ROUND_UP = 1e-12


def check_losses(losses, name: str = "losses") -> np.ndarray:
    """Validate a loss matrix ``(n, m)``: finite, in [0, 1], nonincreasing along the grid.

    The last grid value is the trivial answer (the whole label set, the whole line), whose loss
    is 0 by construction: the last column is set to 0 whatever it holds, and is never read. A
    positive loss there is not an error: refusing it would make the release's failure depend on
    one person's data (the side-channel rule). Build losses with a trivial last value with
    :func:`dpuq.conformal.risk_control.with_trivial_answer` (or ``interval_losses`` with
    ``λ = inf``, ``false_negative_losses`` with ``λ = 1``).

    Raises
    ------
    ValueError
        Naming ``name`` and the failed condition (no data value is quoted).
    """
    arr = np.asarray(losses)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise TypeError(f"{name} must be a real array of shape (n, m)")
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, m) with n >= 1 and m >= 2 grid values")
    arr = np.array(arr, dtype=float)  # a copy: the last column is set below
    arr[:, -1] = 0.0  # the trivial answer, by construction (never read)
    bad_range = not np.all(np.isfinite(arr)) or np.any(arr < 0.0) or np.any(arr > 1.0)
    raise_loss_flags(bad_range, not bad_range and np.any(np.diff(arr, axis=1) > 0.0), name)
    return arr


def raise_loss_flags(bad_range, increasing, name: str = "losses") -> None:
    """The errors of :func:`check_losses`, in its order, from flags (also computed chunk by
    chunk: :mod:`dpuq.scale.sums`). The last column is never checked: it is taken as 0."""
    if bad_range:
        raise ValueError(f"{name} must be finite and in [0, 1]")
    if increasing:
        raise ValueError(f"{name} must be nonincreasing along the grid of lambdas (axis 1)")


def loss_sums(losses: np.ndarray) -> np.ndarray:
    """``S_j = Σ_i L_i(λ_j)`` for validated ``losses`` (n, m), each the correctly rounded sum."""
    return np.array([math.fsum(col) for col in np.asarray(losses, dtype=float).T])


def _log_weights(sums: np.ndarray, n: int, target: float, epsilon: float) -> np.ndarray:
    """Log-weights ``(ε/2) u_j`` from sums of shape (..., m) (privacy-critical, vectorised)."""
    previous = np.concatenate(
        [np.full((*sums.shape[:-1], 1), float(n)), sums[..., :-1]], axis=-1
    )  # S_{j-1}, with the public S_0 = n
    distance = np.maximum(np.maximum(sums - target, target - previous), 0.0)
    return -0.5 * epsilon * distance


def _check_target(target, n: int) -> float:
    t = float(target)
    if not (math.isfinite(t) and 0.0 <= t <= n):
        raise ValueError(f"target must be a number in [0, n] = [0, {n}], got {target!r}")
    return t


def risk_selection_log_distribution(losses, target: float, epsilon: float) -> np.ndarray:
    """Exact log output law of :func:`risk_selection` over the m grid indices.

    Examples
    --------
    >>> losses = np.array([[1.0, 0.5, 0.0], [1.0, 0.0, 0.0], [0.5, 0.0, 0.0]])
    >>> lp = risk_selection_log_distribution(losses, 1.0, 2.0)
    >>> bool(np.isclose(np.exp(lp).sum(), 1.0)), int(np.argmax(lp))
    (True, 1)
    """
    arr = check_losses(losses)
    eps = check_epsilon(epsilon)
    n = arr.shape[0]
    lw = _log_weights(loss_sums(arr), n, _check_target(target, n), eps)
    return lw - logsumexp(lw)


def _risk_selection_rows(
    sums, n: int, target: float, epsilon: float, random_state: RandomState = None
) -> np.ndarray:
    """One independent ε-DP selection per row of loss sums ``(rows, m)`` (experiments).

    Each row is one calibration set's sums ``S_1..S_m`` (from :func:`loss_sums`); the law of
    each row's draw is exactly :func:`risk_selection_log_distribution` for that set.
    """
    s = np.asarray(sums, dtype=float)
    if s.ndim != 2:
        raise ValueError("sums must have shape (rows, m)")
    n = check_positive_int(n, "n")
    lw = _log_weights(s, n, _check_target(target, n), check_epsilon(epsilon))
    return np.asarray(sample_log_weights_rows(lw, check_random_state(random_state)), np.int64)


def risk_selection(
    losses,
    target: float,
    epsilon: float,
    random_state: RandomState = None,
    *,
    ledger=None,
    dataset: str | None = None,
) -> int:
    """One ε-DP draw of a grid index ``J`` (0-based) from the law in the module docstring.

    Privacy: ε-DP, δ = 0, replace-one with ``n`` public (module docstring). With
    ``ledger``/``dataset`` ε is charged to the data set's budget before any noise
    (:func:`dpuq.privacy.ledger.charge`), or the draw is refused.

    Examples
    --------
    >>> losses = np.tile([1.0, 0.6, 0.2, 0.0], (200, 1))
    >>> risk_selection(losses, 50.0, 5.0, random_state=0)
    2
    """
    arr = check_losses(losses)
    n = arr.shape[0]
    lw = _log_weights(loss_sums(arr)[None, :], n, _check_target(target, n), check_epsilon(epsilon))
    settings = {"n": n, "n_lambdas": int(arr.shape[1]), "target": float(target)}
    rng = release_generator(
        random_state, ledger, dataset, float(epsilon), what="risk_selection", settings=settings
    )
    return int(sample_log_weights_rows(lw, rng)[0])


def risk_certificate(n: int, target: float, epsilon: float, n_lambdas: int) -> float:
    """Certified risk ``(1 + ∫_0^n G(x) dx) / (n + 1)`` of the selection at ``target`` τ.

    ``G(x) = 1 / (1 + e^{(ε/2)(x - τ)} / (m - 1))``; the integral is in closed form
    (softplus), and the value is rounded up. Increasing in τ; as ε grows it tends to
    ``(1 + τ) / (n + 1)``, non-private conformal risk control's bound.

    Examples
    --------
    >>> round(risk_certificate(1000, 90.0, 1.0, 100), 4)
    0.1001
    >>> round(risk_certificate(1000, 98.0, 100.0, 100), 4)
    0.099
    """
    n = check_positive_int(n, "n")
    m = check_positive_int(n_lambdas, "n_lambdas", minimum=2)
    eps = check_epsilon(epsilon)
    tau = _check_target(target, n)
    a = 0.5 * eps
    b = -a * tau - math.log(m - 1)  # G(x) = expit(-(a x + b))
    integral = n - (float(np.logaddexp(0.0, a * n + b)) - float(np.logaddexp(0.0, b))) / a
    value = (1.0 + max(integral, 0.0)) / (n + 1)
    return min(1.0, value * (1.0 + _ROUND_UP) + _ROUND_UP)


def certified_risk_target(n: int, alpha: float, epsilon: float, n_lambdas: int) -> float | None:
    """The largest ``τ`` in ``[0, n]`` with ``risk_certificate(τ) <= alpha``, or None.

    Bisection to an absolute 1e-9, kept on the certified side. None when even ``τ = 0`` is
    not certified (then no informative selection exists: release ``λ_m``, risk 0).

    Examples
    --------
    >>> round(certified_risk_target(1000, 0.1, 1.0, 100), 2)
    89.91
    >>> certified_risk_target(20, 0.05, 1.0, 100) is None
    True
    """
    n = check_positive_int(n, "n")
    if risk_certificate(n, 0.0, epsilon, n_lambdas) > alpha:
        return None
    if risk_certificate(n, float(n), epsilon, n_lambdas) <= alpha:
        return float(n)
    lo, hi = 0.0, float(n)
    while hi - lo > 1e-9:
        mid = 0.5 * (lo + hi)
        if risk_certificate(n, mid, epsilon, n_lambdas) <= alpha:
            lo = mid
        else:
            hi = mid
    return lo
