"""Calibration: the private conformal threshold (:func:`calibrate`) and its released record.

The exact non-private split-conformal baseline is in :mod:`dpuq.conformal.split`, the paper's
coverage upper bound (Theorem 3) in :mod:`dpuq.planning.levels`; both are importable from here.

Privacy of :func:`calibrate`: ε-DP (δ = 0) under replace-one with ``n`` public; it releases one
draw of the binned private quantile (:mod:`dpuq.mechanisms.quantile`) at a data-independent
level (:mod:`dpuq.planning`), or the constant 1.0 when no level is informative. The data enter
through one step only, :func:`_bin_counts` (scores to bin counts and n).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dpuq._validation import (
    check_alpha,
    check_epsilon,
    check_in_open_unit,
    check_n_bins,
    check_scores,
)
from dpuq.conformal.multilevel import (
    MultiLevelCalibration,
    calibrate_levels,
    check_alphas,
    joint_plan,
)
from dpuq.conformal.split import (  # noqa: F401 (old import path of both)
    _order_statistic_rank,
    split_conformal_threshold,
)
from dpuq.mechanisms.quantile import _bin_index_fast, bin_edges, private_quantile_from_counts
from dpuq.mechanisms.randomness import RandomState, check_random_state
from dpuq.planning.bins import auto_n_bins
from dpuq.planning.levels import (
    _cert,
    _certified_rho,
    _check_method,
    _gamma_star,
    _level,
    _level_from_rho,
    coverage_upper_bound,
)
from dpuq.planning.sizes import informative_advice
from dpuq.privacy.ledger import CALLER_CHARGED, charge, release_trail
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.scale.sources import as_score_source

__all__ = [
    "MultiLevelCalibration",
    "PrivateCalibration",
    "UninformativeReleaseError",
    "UninformativeReleaseWarning",
    "calibrate",
    "coverage_upper_bound",
    "split_conformal_threshold",
]


logger = logging.getLogger(__name__)


class UninformativeReleaseWarning(UserWarning):
    """No informative release is possible at these settings: the sets are full (or, online,
    every threshold is the public initial one); public quantities alone decide it."""


class UninformativeReleaseError(ValueError):
    """``strict=True`` (CLI ``--strict``): public quantities alone (n, alpha, epsilon, bins)
    fix the release (full sets), so it is refused, before any charge."""


#: What a release that public quantities alone decided costs, and why (its report's note).
PUBLIC_DECIDED = (
    "public quantities alone (n, alpha, epsilon, n_bins) decided this release: nothing was "
    "computed from the data beyond the public n, so it costs epsilon = 0 and charges nothing"
)


@dataclass(frozen=True)
class PrivateCalibration:
    """The released result of :func:`calibrate`: public values only, no scores.

    Attributes
    ----------
    threshold : float
        Released threshold; prediction sets are ``{y : S(x, y) <= threshold}``.
    level : float
        ``method="certified"``: the target rank over n, ``ρ*/n`` (``inf`` when no rank is
        certified). ``method="paper"``: the inflated level q̃ (unclipped; >= 1 means full sets).
    n_bins, gamma, epsilon, alpha, n :
        The public settings used (``gamma`` is None for the certified method).
    informative : bool
        False when the threshold is the constant 1.0 (full sets, nothing sampled).
    privacy_report : PrivacyReport
    method : str
        ``"certified"`` or ``"paper"`` (Algorithm 3, Angelopoulos et al.).
    certified_coverage : float
        The proven lower bound on ``P(Y in C(X))``: the certificate ``cert(ρ*)`` (certified),
        ``1 - alpha`` (paper, Theorem 2), or 1 for full sets.
    """

    threshold: float
    level: float
    n_bins: int
    gamma: float | None
    epsilon: float
    alpha: float
    n: int
    informative: bool
    privacy_report: PrivacyReport
    method: str = "certified"
    certified_coverage: float = 1.0
    #: the paper trail (:func:`dpuq.privacy.ledger.release_trail`): what, when, ledger entry, budget
    #: left
    trail: dict | None = field(default=None, compare=False, repr=False)

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
            "method": self.method,
            "certified_coverage": self.certified_coverage,
            **({"trail": self.trail} if self.trail is not None else {}),
        }

    def save(self, path, *, overwrite: bool = False) -> None:
        """Write the release to ``path`` in the JSON format of ``dpuq calibrate -o``.

        Atomic; without ``overwrite`` an existing file is an error. ``dpuq predict
        --calibration path`` reads it (task "scores": sets ``{y : S(x, y) <= threshold}``).
        """
        from dpuq.conformal.release_io import calibration_record, write_calibration

        write_calibration(path, calibration_record(self), overwrite=overwrite)

    @classmethod
    def load(cls, path) -> PrivateCalibration:
        """Read a release written by :meth:`save` or ``dpuq calibrate -o`` (checked: format
        version, threshold on its grid, fields that agree)."""
        from dpuq.conformal.release_io import calibration_from_record, read_calibration

        return calibration_from_record(read_calibration(path, "path"), PrivateCalibration)


def _check_bins_gamma(n_bins, gamma, method: str) -> None:
    if gamma is None:
        gamma = "auto"
    if isinstance(n_bins, str):
        if n_bins != "auto":
            raise ValueError(f"n_bins must be 'auto' or an integer >= 2, got {n_bins!r}")
    else:
        check_n_bins(n_bins)
    if isinstance(gamma, str):
        if gamma != "auto":
            raise ValueError(f"gamma must be 'auto' or a number in (0, 1), got {gamma!r}")
    elif method == "certified":
        raise ValueError("gamma only applies to method='paper'; leave it 'auto'")
    else:
        check_in_open_unit(gamma, "gamma")


def _resolve_bins_gamma(n, alpha, epsilon, n_bins, gamma, method="paper"):
    gamma = "auto" if gamma is None else gamma
    if method == "certified":
        m = auto_n_bins(n, alpha, epsilon)[0] if n_bins == "auto" else int(n_bins)
        return m, None
    if isinstance(n_bins, str):
        if n_bins != "auto":
            raise ValueError(f"n_bins must be 'auto' or an integer >= 2, got {n_bins!r}")
        m, g = auto_n_bins(n, alpha, epsilon, method="paper")
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


def _bin_counts(scores, bins_for_n) -> tuple[np.ndarray, int]:
    """The one step that reads the calibration data: scores to bin counts, and n.

    ``bins_for_n(n)`` gives the number of bins m from the public n. Returns the counts
    ``c_1..c_m`` of the scores on :func:`dpuq.mechanisms.quantile.bin_edges` (m) and n.
    Everything after this step sees only these counts.
    """
    source = as_score_source(scores)
    if source is not None:  # Dask or chunked (dpuq.scale): validated and counted chunk-wise
        n = source.size
        edges = bin_edges(bins_for_n(n))
        bins, nonzero = source.bin_counts(edges.size)  # the non-empty bins and their counts
        counts = np.zeros(edges.size, dtype=np.int64)
        counts[bins] = nonzero
        return counts, n
    s = check_scores(scores)
    edges = bin_edges(bins_for_n(s.size))
    return np.bincount(_bin_index_fast(s, edges), minlength=edges.size), s.size


def calibrate(
    scores,
    *,
    alpha: float | Sequence[float],
    epsilon: float,
    n_bins: int | str = "auto",
    gamma: float | str = "auto",
    method: str = "certified",
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
    strict: bool = False,
) -> PrivateCalibration | MultiLevelCalibration:
    """Release an ε-DP conformal threshold with a proven coverage guarantee.

    ``method="certified"`` (default): the rank-utility private quantile at the
    smallest target rank ρ* whose coverage certificate reaches ``1 - alpha``
    (:func:`dpuq.planning.certified_level`). ``method="paper"`` (Angelopoulos et al., Algorithm 3 of
    Angelopoulos et al. 2022): the paper's weighted utility at the inflated level q̃. Either
    way ``P(Y in C(X)) >= 1 - alpha`` for a new exchangeable point, where
    ``C(x) = {y : S(x, y) <= threshold}``; docs/explanation/calibration.md compares the two.

    Privacy: ε-DP, δ = 0, neighbouring relation replace-one with ``n`` public. When no level
    is informative the threshold is 1.0 (full sets): public quantities alone decided it, so
    nothing is sampled, it costs ε = 0 (the ledger is charged 0, the report says why), and an
    :class:`UninformativeReleaseWarning` says which n or ε would give informative sets; with
    ``strict=True`` it is refused (:class:`UninformativeReleaseError`) before any charge.

    Several levels: ``alpha=[0.05, 0.1, 0.2]`` releases one threshold per level jointly for
    the total ``epsilon`` (:mod:`dpuq.conformal.multilevel`, certified method only) and
    returns a :class:`~dpuq.conformal.multilevel.MultiLevelCalibration` whose ``threshold``
    and ``certified_coverage`` are arrays aligned with ``alpha``.

    Parameters
    ----------
    scores : array-like of shape (n,), Dask array or :class:`dpuq.scale.ChunkedScores`
        Calibration conformity scores in [0, 1] from data not used to train the model. Dask
        and chunked inputs are validated and binned chunk by chunk; only the bin counts reach
        the client, and the release equals the in-memory one for the same ``random_state``.
    alpha : float or sequence of float
        Miscoverage level(s), each in (0, 0.5].
    epsilon : float
        Privacy parameter > 0.
    n_bins : "auto" or int, default "auto"
        Number of bins m; ``"auto"`` uses :func:`dpuq.auto_n_bins` for the method (data-free).
    gamma : "auto", None or float, default "auto"
        ``method="paper"`` only (None is "auto"): share of alpha spent on privacy error (``"auto"``:
        :func:`dpuq.optimal_gamma`).
    method : {"certified", "paper"}, default "certified"
    random_state : None, int or numpy.random.Generator
        None (default) draws OS entropy: use it for releases. A seed makes a run reproducible,
        for experiments only (the report then says "seeded").
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge ε to ``dataset``'s budget before any noise is drawn
        (:func:`dpuq.privacy.ledger.charge`); refused with :class:`dpuq.BudgetExceededError` when
        too little is left.
    strict : bool, default False
        Refuse a release that public quantities alone decide (full sets), before the charge.

    Returns
    -------
    PrivateCalibration

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.random.default_rng(0).uniform(size=2000)
    >>> cal = calibrate(scores, alpha=0.1, epsilon=1.0, random_state=0)
    >>> bool(0.9 <= cal.threshold <= 1.0), cal.privacy_report.epsilon, cal.method
    (True, 1.0, 'certified')
    >>> bool(cal.certified_coverage >= 0.9)
    True
    >>> cal3 = calibrate(scores, alpha=[0.05, 0.1, 0.2], epsilon=1.0, random_state=0)
    >>> cal3.threshold.shape, bool(np.all(np.diff(cal3.threshold) <= 0))
    ((3,), True)
    """
    if isinstance(alpha, list | tuple | np.ndarray):
        return _calibrate_joint(scores, alpha, epsilon, n_bins, gamma, method, random_state,
                                ledger, dataset, strict)  # fmt: skip
    method = _check_method(method)
    alpha = check_alpha(alpha)
    epsilon = check_epsilon(epsilon)
    _check_bins_gamma(n_bins, gamma, method)
    chosen: dict = {}

    def bins_for_n(n: int) -> int:
        chosen["m"], chosen["gamma"] = _resolve_bins_gamma(n, alpha, epsilon, n_bins, gamma, method)
        return chosen["m"]

    counts, n = _bin_counts(scores, bins_for_n)  # the only step that reads the data
    m, g = chosen["m"], chosen["gamma"]
    if method == "paper":
        level = _level(n, alpha, epsilon, m, g)
        informative = level < 1.0
        cover = 1.0 - alpha if informative else 1.0
        utility = "weighted"
    else:
        level = _level_from_rho(n, _certified_rho(n, alpha, epsilon, m), alpha, epsilon, m)
        informative = math.isfinite(level)
        cover = _cert(n, level * n, epsilon, m) if informative else 1.0
        utility = "rank"
    where = {"dataset": dataset} if isinstance(dataset, str) else {}
    if strict and not informative:
        raise UninformativeReleaseError(
            f"strict: no informative release at n={n}, alpha={alpha:g}, epsilon={epsilon:g}, "
            f"n_bins={m}, method={method} (full sets whatever the data); informative sets "
            f"need {informative_advice(n, alpha, epsilon, n_bins, method)}; nothing was charged"
        )
    receipt = charge(
        ledger,
        dataset,
        epsilon if informative else 0.0,
        what="calibrate: private conformal threshold",
        random_state=random_state,
        settings={"alpha": alpha, "n": n, "method": method, "n_bins": m},
    )
    notes: list[str] = []
    if informative:
        threshold = private_quantile_from_counts(
            counts,
            level,
            epsilon,
            check_random_state(random_state),
            utility=utility,
            ledger=CALLER_CHARGED,
        )
    else:
        threshold = 1.0
        why = (
            f"inflated level q̃ = {level:.4f} >= 1"
            if method == "paper"
            else f"even target rank n is certified only to "
            f"{_cert(n, float(n), epsilon, m):.4f} < 1 - alpha"
        )
        msg = (
            f"no informative release possible: {why} at n={n}, alpha={alpha:g}, "
            f"epsilon={epsilon:g}, n_bins={m}, method={method}; the threshold is 1.0 "
            "(full prediction sets), nothing was sampled. Informative sets need "
            + informative_advice(n, alpha, epsilon, n_bins, method)
            + "."
        )
        notes.extend([msg, PUBLIC_DECIDED])
        warnings.warn(msg, UninformativeReleaseWarning, stacklevel=2)
    if not informative:
        sensitivity = "none: constant release, no data used"
    elif method == "paper":
        sensitivity = (
            f"utility max((1-q)L_j, q U_j) moves by at most max(q, 1-q) = "
            f"{max(level, 1 - level):.6g} (q = q̃)"
        )
    else:
        sensitivity = "utility -max(L_j - rho, rho - C_j, 0) moves by at most 1"
    details = {"n": n, "alpha": alpha, "method": method, "n_bins": m}
    if method == "paper":
        details.update({"level (q̃)": level, "gamma": g})
    else:
        details.update({"level (rho/n)": level, "certified coverage": cover})
    report = PrivacyReport(
        mechanism="exponential mechanism over binned quantile thresholds "
        + (
            "(Angelopoulos et al. 2022, Algorithm 3, exact sensitivity normalisation)"
            if method == "paper"
            else "(rank utility, certified level)"
        ),
        epsilon=epsilon if informative else 0.0,
        delta=0.0,
        relation=Relation.REPLACE_ONE,
        sensitivity=sensitivity,
        details=details,
        notes=tuple(notes),
        seeded=informative and random_state is not None,
    )
    # only released and public values are logged (never scores or counts)
    logger.debug(
        "calibrate: released threshold %.6g at n=%d, alpha=%g, epsilon=%g, bins=%d, level=%.6g",
        threshold, n, alpha, epsilon, m, level,
    )  # fmt: skip
    return PrivateCalibration(
        threshold=float(threshold),
        level=float(level),
        n_bins=m,
        gamma=None if g is None else float(g),
        epsilon=epsilon,
        alpha=alpha,
        n=n,
        informative=informative,
        privacy_report=report,
        method=method,
        certified_coverage=float(cover),
        trail=None if ledger is CALLER_CHARGED else release_trail(receipt, "calibrate", **where),
    )


def _calibrate_joint(
    scores, alpha, epsilon, n_bins, gamma, method, random_state, ledger, dataset, strict
):
    """:func:`calibrate` with several levels: settings checked, data binned, joint release."""
    alphas = check_alphas(alpha)
    epsilon = check_epsilon(epsilon)
    if _check_method(method) != "certified":
        raise ValueError("several levels (a sequence alpha) need method='certified'")
    _check_bins_gamma(n_bins, gamma, "certified")
    plan: dict = {}

    def bins_for_n(n: int) -> int:
        plan["m"], plan["level"], plan["cover"] = joint_plan(n, alphas, epsilon, n_bins)
        return plan["m"]

    counts, n = _bin_counts(scores, bins_for_n)  # the only step that reads the data
    left_out = [a for a, lv in zip(alphas, plan["level"], strict=True) if not math.isfinite(lv)]
    if strict and left_out:
        raise UninformativeReleaseError(
            f"strict: no informative release for alpha={left_out} at n={n}, epsilon={epsilon:g} "
            f"in total, n_bins={plan['m']} (full sets whatever the data); nothing was charged"
        )
    cal = calibrate_levels(
        (counts, n), alphas, epsilon, plan["m"], plan["level"], plan["cover"],
        random_state=random_state, ledger=ledger, dataset=dataset,
    )  # fmt: skip
    for note in cal.privacy_report.notes:
        warnings.warn(note, UninformativeReleaseWarning, stacklevel=3)
    return cal
