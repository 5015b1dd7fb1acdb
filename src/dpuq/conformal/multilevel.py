"""Several confidence levels from one ε-DP release (``dpuq.calibrate(alpha=[...])``).

Privacy: ε-DP (δ = 0) in total, replace-one with ``n`` public: one draw of the joint
exponential mechanism over ordered tuples of bins (:mod:`dpuq.mechanisms.joint_quantiles`,
sensitivity 1), at target ranks that depend only on ``(n, alphas, ε, m)``. Levels that no rank
can certify get the constant threshold 1.0 (full sets) and take no part in the draw: they are
*set aside* (:attr:`MultiLevelCalibration.set_aside`, and a warning that says so and what n or
ε would serve them). Which levels are set aside is a function of the public ``(n, alphas, ε,
m)`` only (:func:`dpuq.planning.joint.joint_plan`), never of the data, so giving the whole ε
to the served levels' one draw is still ε-DP: the set-aside thresholds are constants (cost 0)
and the served ones are one ε-DP draw whose settings are fixed before the data are read.

Coverage: level l's threshold covers with probability at least ``cert(ρ_l)`` computed with
``M_l + 1`` bins (:func:`dpuq.mechanisms.joint_quantiles.joint_union_sizes`), at least
``1 - alpha_l`` (docs/explanation/calibration.md, "Several levels").
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from dpuq.mechanisms.joint_quantiles import joint_quantiles
from dpuq.mechanisms.quantile import bin_edges
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.planning.joint import check_alphas, format_levels, joint_plan
from dpuq.privacy.ledger import CALLER_CHARGED, charge
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = [
    "MultiLevelCalibration",
    "calibrate_levels",
    "check_alphas",
    "joint_plan",
    "set_aside_message",
]

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
    def set_aside(self) -> tuple:
        """The alphas the joint release set aside (full sets, decided from public values)."""
        return tuple(a for a, ok in zip(self.alpha, self.informative, strict=True) if not ok)

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
            "set_aside": list(self.set_aside),
            "n_bins": self.n_bins,
            "epsilon": self.epsilon,
            "n": self.n,
            "method": self.method,
            "privacy_report": self.privacy_report.to_dict(),
        }


def set_aside_message(n: int, alphas, left_out, epsilon: float, m: int) -> str:
    """What the joint release says when it sets levels aside: which, why, and what would serve
    them (the smallest n and ε for each in this joint release, and alone); public values only.
    """
    from dpuq.planning.sizes import joint_min_epsilon, joint_min_n, min_calibration_size

    served = [a for a in alphas if a not in left_out]
    hints = []
    for a in left_out:
        i = alphas.index(a)
        need_n = joint_min_n(tuple(alphas), epsilon, "auto", i)
        need_eps = joint_min_epsilon(n, tuple(alphas), "auto", i)
        alone = min_calibration_size(a, epsilon)
        eps_text = f"epsilon >= {need_eps:g}" if math.isfinite(need_eps) else "no epsilon"
        hints.append(
            f"alpha={a:.12g} needs n >= {need_n} (or {eps_text} at n={n}) in this joint "
            f"release, n >= {alone} released alone"
        )
    return (
        f"set aside alpha={format_levels(left_out)} (coverage "
        f"{format_levels([1 - a for a in left_out])}) at n={n}, epsilon={epsilon:g} (total over "
        f"{len(alphas)} levels), n_bins={m}: no rank is certified for them in this joint release, "
        "so their thresholds are 1.0 (full prediction sets) and they use no data; "
        + (
            f"alpha={format_levels(served)} are served with the whole epsilon. "
            if served
            else "no level is served. "
        )
        + "; ".join(hints)
    )


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
        notes.append(set_aside_message(n, alphas, left_out, epsilon, m))  # calibrate warns
    if not active:
        notes.append(
            "public quantities alone (n, alpha, epsilon, n_bins) decided this release: it costs "
            "epsilon = 0 and charges nothing"
        )
    report = PrivacyReport(
        mechanism="joint exponential mechanism over ordered tuples of binned thresholds "
        "(rank utility -max_l d_l, certified levels; dpuq docs/explanation/calibration.md)",
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
