"""Calibration: the private threshold (Algorithm 3 of Angelopoulos et al. 2022) and the exact
non-private split-conformal baseline.

Privacy of :func:`calibrate`: ε-DP (δ = 0) under replace-one with ``n`` public; it releases one
draw of :func:`dpuq.quantile.private_quantile` at the data-independent level q̃, or the constant
1.0 when q̃ >= 1. See :mod:`dpuq.quantile` for the argument.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpuq._validation import (
    _as_float,
    check_alpha,
    check_array_1d,
    check_epsilon,
    check_in_open_unit,
    check_n_bins,
    check_positive_int,
    check_scores,
)
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.quantile import (
    _gamma_star,
    _level,
    auto_n_bins,
    min_calibration_size,
    min_epsilon,
    private_quantile,
)
from dpuq.report import PrivacyReport, Relation

__all__ = [
    "PrivateCalibration",
    "UninformativeReleaseWarning",
    "calibrate",
    "coverage_upper_bound",
    "split_conformal_threshold",
]


class UninformativeReleaseWarning(UserWarning):
    """No informative release is possible at these settings: the sets are full."""


@dataclass(frozen=True)
class PrivateCalibration:
    """The released result of :func:`calibrate`: public values only, no scores.

    Attributes
    ----------
    threshold : float
        Released threshold; prediction sets are ``{y : S(x, y) <= threshold}``.
    level : float
        The inflated level q̃ (unclipped; >= 1 means full sets).
    n_bins, gamma, epsilon, alpha, n :
        The public settings used.
    informative : bool
        False when q̃ >= 1 and the threshold is the constant 1.0.
    privacy_report : PrivacyReport
    """

    threshold: float
    level: float
    n_bins: int
    gamma: float
    epsilon: float
    alpha: float
    n: int
    informative: bool
    privacy_report: PrivacyReport

    @property
    def confidence_level(self) -> float:
        """``1 - alpha``."""
        return 1.0 - self.alpha

    def to_dict(self) -> dict:
        """JSON-ready dict of the released values and the privacy report."""
        return {
            "threshold": self.threshold,
            "level": self.level,
            "n_bins": self.n_bins,
            "gamma": self.gamma,
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "n": self.n,
            "informative": self.informative,
            "privacy_report": self.privacy_report.to_dict(),
        }


def _resolve_bins_gamma(n, alpha, epsilon, n_bins, gamma) -> tuple[int, float]:
    if isinstance(n_bins, str):
        if n_bins != "auto":
            raise ValueError(f"n_bins must be 'auto' or an integer >= 2, got {n_bins!r}")
        m, g = auto_n_bins(n, alpha, epsilon)
    else:
        m = check_n_bins(n_bins)
        g = None
    if isinstance(gamma, str):
        if gamma != "auto":
            raise ValueError(f"gamma must be 'auto' or a number in (0, 1), got {gamma!r}")
        g = g if g is not None else _gamma_star(n, alpha, epsilon, m)
    else:
        g = check_in_open_unit(gamma, "gamma")
    return m, g


def calibrate(
    scores,
    *,
    alpha: float,
    epsilon: float,
    n_bins: int | str = "auto",
    gamma: float | str = "auto",
    random_state: RandomState = None,
) -> PrivateCalibration:
    """Release an ε-DP conformal threshold (Algorithm 3 of Angelopoulos et al. 2022).

    Computes the inflated level ``q̃`` from ``(n, alpha, epsilon, m, gamma)`` and releases the
    ε-DP binned ``q̃``-quantile of the scores. Then ``P(Y in C(X)) >= 1 - alpha`` for a new
    exchangeable point (Theorem 2), where ``C(x) = {y : S(x, y) <= threshold}``.

    Privacy: ε-DP, δ = 0, neighbouring relation replace-one with ``n`` public. When
    ``q̃ >= 1`` the threshold is 1.0 (full sets), nothing is sampled, and an
    :class:`UninformativeReleaseWarning` says which n or ε would give informative sets.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Calibration conformity scores in [0, 1] from data not used to train the model.
    alpha : float
        Miscoverage level in (0, 0.5].
    epsilon : float
        Privacy parameter > 0.
    n_bins : "auto" or int, default "auto"
        Number of bins m; ``"auto"`` uses :func:`dpuq.auto_n_bins` (data-independent).
    gamma : "auto" or float, default "auto"
        Share of alpha spent on privacy error; ``"auto"`` uses :func:`dpuq.optimal_gamma`.
    random_state : None, int or numpy.random.Generator
        None (default) draws OS entropy: use it for releases. A seed makes a run reproducible,
        for experiments only.

    Returns
    -------
    PrivateCalibration

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.random.default_rng(0).uniform(size=2000)
    >>> cal = calibrate(scores, alpha=0.1, epsilon=1.0, random_state=0)
    >>> bool(0.9 <= cal.threshold <= 1.0), cal.privacy_report.epsilon
    (True, 1.0)
    """
    s = check_scores(scores)
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    n = s.size
    m, g = _resolve_bins_gamma(n, alpha, epsilon, n_bins, gamma)
    q = _level(n, alpha, epsilon, m, g)
    notes: list[str] = []
    if q >= 1.0:
        informative = False
        threshold = 1.0
        try:
            need_n = min_calibration_size(alpha, epsilon, n_bins if n_bins == "auto" else m)
        except ValueError:
            need_n = None
        need_eps = min_epsilon(n, alpha, n_bins if n_bins == "auto" else m)
        advice = []
        if need_n is not None:
            advice.append(f"n >= {need_n} calibration points at epsilon={epsilon:g}")
        if math.isfinite(need_eps):
            advice.append(f"epsilon >= {need_eps:g} at n={n}")
        msg = (
            f"no informative release possible: inflated level q̃ = {q:.4f} >= 1 at n={n}, "
            f"alpha={alpha:g}, epsilon={epsilon:g}, n_bins={m}; the threshold is 1.0 "
            "(full prediction sets), nothing was sampled. Informative sets need "
            + (" or ".join(advice) if advice else "a larger alpha")
            + "."
        )
        notes.append(msg)
        warnings.warn(msg, UninformativeReleaseWarning, stacklevel=2)
    else:
        informative = True
        threshold = private_quantile(s, q, epsilon, m, check_random_state(random_state))
    report = PrivacyReport(
        mechanism="exponential mechanism over binned quantile thresholds "
        "(Angelopoulos et al. 2022, Algorithm 3, exact sensitivity normalisation)",
        epsilon=epsilon,
        delta=0.0,
        relation=Relation.REPLACE_ONE,
        sensitivity=f"utility max((1-q)L_j, q U_j) moves by at most max(q, 1-q) = "
        f"{max(q, 1 - q):.6g} (q = q̃)"
        if informative
        else "none: constant release, no data used",
        details={"n": n, "alpha": alpha, "level (q̃)": q, "n_bins": m, "gamma": g},
        notes=tuple(notes),
    )
    return PrivateCalibration(
        threshold=float(threshold),
        level=float(q),
        n_bins=m,
        gamma=float(g),
        epsilon=epsilon,
        alpha=alpha,
        n=n,
        informative=informative,
        privacy_report=report,
    )


def _order_statistic_rank(n: int, alpha: float) -> int:
    """``ceil((n+1)(1-alpha))`` in exact rational arithmetic, alpha read as its decimal repr."""
    a = Fraction(repr(float(alpha)))
    return math.ceil((n + 1) * (1 - a))


def split_conformal_threshold(scores, alpha: float) -> float:
    """Non-private split-conformal threshold: the ``ceil((n+1)(1-alpha))``-th smallest score.

    The rank is computed in exact rational arithmetic (``alpha`` read as the decimal it
    prints as), so it is never off by one through float rounding. If the rank exceeds ``n``
    the threshold is ``+inf`` (full sets). Not private: a baseline.

    Parameters
    ----------
    scores : array-like of shape (n,)
        Finite calibration scores (any real range).
    alpha : float
        Miscoverage level in (0, 1).

    Examples
    --------
    >>> split_conformal_threshold([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], 0.3)
    0.7
    >>> split_conformal_threshold([0.1, 0.2], 0.1)
    inf
    """
    s = check_array_1d(scores, "scores")
    alpha = check_alpha(alpha, upper=1.0 - 1e-15)
    k = _order_statistic_rank(s.size, alpha)
    if k > s.size:
        return math.inf
    return float(np.partition(s, k - 1)[k - 1])


def coverage_upper_bound(
    n: int, alpha: float, epsilon: float, n_bins: int, gamma: float, p_max: float
) -> float:
    """Theorem 3's upper bound on the coverage of the private sets (SPEC A.4).

    ``1 − (1−γ)α + (1−γα)(2 p_max + 2(1 + max(q̃/(1−q̃), 1)) log(m/(γα)) / ((n+1) ε))``,
    with ``p_max`` the largest probability of one bin under the score distribution.
    Returns ``inf`` when ``q̃ >= 1``.

    Examples
    --------
    >>> round(coverage_upper_bound(1000, 0.1, 8.0, 100, 0.1, 0.01), 4)
    0.9558
    """
    n = check_positive_int(n, "n")
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    m = check_n_bins(n_bins)
    gamma = check_in_open_unit(gamma, "gamma")
    if not (0.0 <= _as_float(p_max, "p_max") <= 1.0):
        raise ValueError(f"p_max must be in [0, 1], got {p_max!r}")
    q = _level(n, alpha, epsilon, m, gamma)
    if q >= 1.0:
        return math.inf
    log_term = math.log(m / (gamma * alpha))
    return (
        1
        - (1 - gamma) * alpha
        + (1 - gamma * alpha)
        * (2 * p_max + 2 * (1 + max(q / (1 - q), 1.0)) * log_term / ((n + 1) * epsilon))
    )
