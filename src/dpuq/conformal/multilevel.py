"""Several confidence levels from one ε-DP release (``dpuq.calibrate(alpha=[...])``).

Privacy: ε-DP (δ = 0) in total, replace-one with ``n`` public: one draw of the joint
exponential mechanism over ordered tuples of bins (:mod:`dpuq.mechanisms.joint_quantiles`,
sensitivity 1), at target ranks that depend only on ``(n, alphas, ε, m)``. Levels that no rank
can certify get the constant threshold 1.0 (full sets) and take no part in the draw.

Coverage: level l's threshold covers with probability at least ``cert(ρ_l)`` computed with
``M_l + 1`` bins (:func:`dpuq.mechanisms.joint_quantiles.joint_union_sizes`), at least
``1 - alpha_l`` (docs/calibration.md, "Several levels").
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from dpuq._validation import check_alpha, check_epsilon, check_n_bins
from dpuq.ledger import CALLER_CHARGED, charge
from dpuq.mechanisms.joint_quantiles import (
    _MAX_TUPLES,
    joint_quantiles,
    joint_union_sizes,
    n_ordered_tuples,
)
from dpuq.mechanisms.quantile import bin_edges
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.planning.bins import auto_n_bins
from dpuq.planning.levels import _cert, _certified_rho, _level_from_rho
from dpuq.report import PrivacyReport, Relation

__all__ = ["MultiLevelCalibration", "calibrate_levels", "check_alphas", "joint_plan"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MultiLevelCalibration:
    """The released result of :func:`dpuq.calibrate` with several levels: public values only.

    Attributes
    ----------
    threshold : ndarray of shape (L,)
        Released thresholds aligned with ``alpha``; sets ``{y : S(x, y) <= threshold[l]}``,
        nested (a smaller alpha never gets a smaller threshold).
    alpha : tuple of float
        The miscoverage levels, in the order given.
    level : ndarray of shape (L,)
        Target rank over n, ``ρ_l/n`` (``inf`` for a level with no certified rank).
    certified_coverage : ndarray of shape (L,)
        Proven lower bounds on ``P(Y in C_l(X))`` (1 for full sets).
    informative : ndarray of bool, shape (L,)
    n_bins, epsilon, n : the public settings (ε is the total cost).
    privacy_report : PrivacyReport
    method : str
        ``"joint"``.
    """

    threshold: np.ndarray
    alpha: tuple
    level: np.ndarray
    certified_coverage: np.ndarray
    informative: np.ndarray
    n_bins: int
    epsilon: float
    n: int
    privacy_report: PrivacyReport
    method: str = "joint"
    gamma: None = None

    @property
    def confidence_level(self) -> np.ndarray:
        """``1 - alpha`` per level."""
        return 1.0 - np.asarray(self.alpha)

    def to_dict(self) -> dict:
        """JSON-ready dict of the released values and the privacy report."""
        return {
            "threshold": [float(t) for t in self.threshold],
            "alpha": list(self.alpha),
            "level": [float(v) for v in self.level],
            "certified_coverage": [float(c) for c in self.certified_coverage],
            "informative": [bool(i) for i in self.informative],
            "n_bins": self.n_bins,
            "epsilon": self.epsilon,
            "n": self.n,
            "method": self.method,
            "privacy_report": self.privacy_report.to_dict(),
        }


def check_alphas(alpha) -> tuple[float, ...]:
    """A non-empty sequence of distinct miscoverage levels, each in (0, 0.5]."""
    if isinstance(alpha, str) or not hasattr(alpha, "__len__"):
        raise TypeError(f"alpha must be a number or a sequence of numbers, got {alpha!r}")
    values = tuple(check_alpha(a, "alpha") for a in alpha)
    if not values:
        raise ValueError("alpha must hold at least one level")
    if len(set(values)) != len(values):
        raise ValueError(f"alpha must not repeat a level, got {list(values)}")
    return values


def joint_plan(n: int, alphas, epsilon: float, n_bins: int | str = "auto"):
    """Data-free plan of the joint release: bins, target ranks and certificates per level.

    Levels are sorted by decreasing alpha (increasing rank). A level whose certificate cannot
    reach ``1 - alpha`` even at rank n (with every level in the draw) is left out (full sets),
    and the rest are planned again with fewer levels (smaller union sizes, so they stay
    certified).

    Returns
    -------
    m : int
    level : ndarray (L,)
        ``ρ_l/n`` aligned with ``alphas`` (``inf`` when left out).
    cover : ndarray (L,)
        Certified coverage (1 when left out).

    Examples
    --------
    >>> m, level, cover = joint_plan(1000, [0.05, 0.1, 0.2], 1.0)
    >>> m, bool(np.all(cover >= [0.95, 0.9, 0.8]))
    (79, True)
    """
    alphas = check_alphas(alphas)
    eps = check_epsilon(epsilon)
    n_levels = len(alphas)
    if n_bins == "auto":
        choices = sorted(auto_n_bins(n, a, eps / n_levels)[0] for a in alphas)
        m = choices[(n_levels - 1) // 2]  # the median level's choice at ε/L (data-free)
    else:
        m = check_n_bins(n_bins)
    if n_ordered_tuples(m, n_levels) >= _MAX_TUPLES:  # refused before any data or budget
        raise ValueError(
            f"{n_levels} levels over {m} bins give too many ordered tuples for the exact "
            "joint sampler; use fewer levels or a smaller n_bins"
        )
    order = sorted(range(n_levels), key=lambda i: -alphas[i])  # increasing rank
    active = list(order)
    level = np.full(n_levels, math.inf)
    cover = np.ones(n_levels)
    for _ in range(n_levels):
        sizes = joint_union_sizes(m, len(active))
        rhos = [
            _certified_rho(n, alphas[i], eps, size + 1)
            for i, size in zip(active, sizes, strict=True)
        ]
        keep = [i for i, r in zip(active, rhos, strict=True) if math.isfinite(r)]
        if len(keep) == len(active):
            break
        active = keep
    if active:
        sizes = joint_union_sizes(m, len(active))
        for i, size in zip(active, sizes, strict=True):
            rho = _certified_rho(n, alphas[i], eps, size + 1)
            level[i] = _level_from_rho(n, rho, alphas[i], eps, size + 1)
            cover[i] = _cert(n, level[i] * n, eps, size + 1)
        # ranks must be nondecreasing along the draw's order (rounding could break ties)
        ranks = np.maximum.accumulate([level[i] for i in active])
        level[active] = ranks
        for i, size in zip(active, sizes, strict=True):  # the certificate at the rank used
            cover[i] = _cert(n, level[i] * n, eps, size + 1)
    return m, level, cover


def calibrate_levels(
    counts_and_n,
    alphas: tuple[float, ...],
    epsilon: float,
    m: int,
    level: np.ndarray,
    cover: np.ndarray,
    *,
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> MultiLevelCalibration:
    """The joint release from bin counts (used by :func:`dpuq.calibrate`; see its docs).

    ``counts_and_n`` is ``(counts, n)`` on ``bin_edges(m)``; ``level`` and ``cover`` come
    from :func:`joint_plan` for the same public ``(n, alphas, epsilon, m)``.
    """
    counts, n = counts_and_n
    active = [i for i in sorted(range(len(alphas)), key=lambda i: -alphas[i])
              if math.isfinite(level[i])]  # fmt: skip
    charge(
        ledger,
        dataset,
        epsilon if active else 0.0,  # no level informative: public quantities decided it
        what=f"calibrate: {len(alphas)} private conformal thresholds (joint)",
        random_state=random_state,
        settings={"alpha": [float(x) for x in alphas], "n": int(n), "n_bins": int(m)},
    )
    threshold = np.ones(len(alphas))
    notes: list[str] = []
    if active:
        ranks = np.array([level[i] * n for i in active])
        bins = joint_quantiles(
            counts, ranks, epsilon, check_random_state(random_state), ledger=CALLER_CHARGED
        )
        threshold[active] = bin_edges(m)[bins]
    left_out = [alphas[i] for i in range(len(alphas)) if not math.isfinite(level[i])]
    if left_out:
        msg = (
            f"no informative release possible for alpha={left_out} at n={n}, "
            f"epsilon={epsilon:g} (total over {len(alphas)} levels), n_bins={m}: those "
            "thresholds are 1.0 (full prediction sets); a larger n or epsilon, or fewer levels, "
            "would help"
        )
        notes.append(msg)  # dpuq.calibrate warns with it
    if not active:
        notes.append(
            "public quantities alone (n, alpha, epsilon, n_bins) decided this release: it costs "
            "epsilon = 0 and charges nothing"
        )
    report = PrivacyReport(
        mechanism="joint exponential mechanism over ordered tuples of binned thresholds "
        "(rank utility -max_l d_l, certified levels; dpuq docs/calibration.md)",
        epsilon=epsilon if active else 0.0,
        delta=0.0,
        relation=Relation.REPLACE_ONE,
        sensitivity="utility -max_l max(L_j - rho_l, rho_l - C_j, 0) moves by at most 1"
        if active
        else "none: constant release, no data used",
        details={
            "n": n,
            "alpha": list(alphas),
            "n_bins": m,
            "level (rho/n)": list(level),
            "certified coverage": list(cover),
        },
        notes=tuple(notes),
        seeded=bool(active) and random_state is not None,
    )
    logger.debug("calibrate: %d joint thresholds at n=%d, epsilon=%g", len(alphas), n, epsilon)
    return MultiLevelCalibration(
        threshold=threshold,
        alpha=tuple(alphas),
        level=np.asarray(level, dtype=float),
        certified_coverage=np.asarray(cover, dtype=float),
        informative=np.isfinite(level),
        n_bins=m,
        epsilon=epsilon,
        n=n,
        privacy_report=report,
    )
