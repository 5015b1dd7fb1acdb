"""Learning-rate schedules (data-free, numpy only) and the DP-SGLD noise they imply."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpuq._validation import _as_float, first_nonpositive

__all__ = ["ConstantLR", "PolynomialDecay", "as_schedule", "learning_rates"]


@dataclass(frozen=True)
class ConstantLR:
    """``η_t = learning_rate`` at every step.

    Examples
    --------
    >>> ConstantLR(0.1)(np.arange(3)).tolist()
    [0.1, 0.1, 0.1]
    """

    learning_rate: float

    def __call__(self, step):
        return np.full(np.shape(step), float(self.learning_rate))


@dataclass(frozen=True)
class PolynomialDecay:
    """``η_t = initial · (1 + t / scale)^(−gamma)``, the SGLD schedule of Welling and Teh (2011).

    This is Knolle et al.'s ``a (b + t)^(−γ)`` with ``b = scale`` and ``a = initial · scale^γ``.
    Welling and Teh need ``Σ η_t = ∞`` and ``Σ η_t² < ∞``, i.e. ``gamma`` in (0.5, 1];
    ``gamma = 0`` is a constant rate. In DP-SGLD a decaying rate raises the noise multiplier
    ``σ_t ∝ η_t^(−1/2)``, so later steps cost less privacy.

    Parameters
    ----------
    initial : float
        ``η_0 > 0``.
    gamma : float
        Decay exponent ``>= 0``.
    scale : float
        Steps over which the rate falls by ``2^(−gamma)``; ``> 0``.

    Examples
    --------
    >>> sched = PolynomialDecay(0.1, gamma=1.0, scale=100)
    >>> sched(np.array([0, 100, 300])).round(6).tolist()
    [0.1, 0.05, 0.025]
    """

    initial: float
    gamma: float = 0.55
    scale: float = 1000.0

    def __post_init__(self) -> None:
        for name in ("initial", "scale"):
            v = _as_float(getattr(self, name), name)
            if not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be finite and > 0, got {v!r}")
        g = _as_float(self.gamma, "gamma")
        if not math.isfinite(g) or g < 0:
            raise ValueError(f"gamma must be finite and >= 0, got {g!r}")

    def __call__(self, step):
        t = np.asarray(step, dtype=float)
        return self.initial * (1.0 + t / self.scale) ** (-self.gamma)


def as_schedule(learning_rate) -> Callable:
    """A float becomes :class:`ConstantLR`; a callable ``step -> η`` is kept.

    Examples
    --------
    >>> as_schedule(0.5)
    ConstantLR(learning_rate=0.5)
    """
    if callable(learning_rate):
        return learning_rate
    v = _as_float(learning_rate, "learning_rate")
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"learning_rate must be finite and > 0, got {learning_rate!r}")
    return ConstantLR(v)


def learning_rates(schedule, n_steps: int) -> np.ndarray:
    """Evaluate a schedule at steps ``0..n_steps-1`` and check every rate is finite and > 0.

    Examples
    --------
    >>> learning_rates(PolynomialDecay(0.2, gamma=1.0, scale=1.0), 3).round(4).tolist()
    [0.2, 0.1, 0.0667]
    """
    sched = as_schedule(schedule)
    steps = np.arange(int(n_steps))
    try:
        eta = np.asarray(sched(steps), dtype=float)
        if eta.shape != steps.shape:
            raise ValueError
    except (TypeError, ValueError):  # a scalar-only callable: evaluate step by step
        eta = np.array([float(sched(int(t))) for t in steps])
    i = first_nonpositive(eta)
    if i is not None:
        raise ValueError(
            f"learning_rate schedule must give a finite rate > 0 at every step; it gives "
            f"{eta[i]!r} at step {i} (DP-SGLD's noise multiplier σ_t would be <= 0 or undefined)"
        )
    return eta
