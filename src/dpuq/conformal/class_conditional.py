"""Class-conditional (Mondrian) private calibration: one released threshold per class.

Coverage holds for every class: ``P(Y ∈ C(X) | Y = y) >= 1 - alpha`` for each y, where
``C(x) = {y : S(x, y) <= T_y}``. Marginal sets can cover a rare or hard class far less often.

Privacy of :func:`calibrate_by_class`: ε-DP (δ = 0) under replace-one with ``n`` public; each
class's release is (ε/2)-DP under add/remove within the class, and a label change moves a
person out of one class and into another (parallel composition, no sequential composition over
classes). The class sizes are never released and never used outside the mechanism: they enter
only through the rank schedule inside the utility (:mod:`dpuq.mechanisms.class_thresholds`,
where the argument is written out); the schedule, padding and bins come from public
``(n, K, alpha, epsilon)`` (:mod:`dpuq.conformal.class_levels`). A small or empty class gets
``T = 1`` (its label in every set) with high probability, through the mechanism, not a branch.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from dpuq._validation import (
    check_alpha,
    check_epsilon,
    check_labels,
    check_n_bins,
    check_positive_int,
    check_scores,
)
from dpuq.conformal.calibration import UninformativeReleaseWarning
from dpuq.conformal.class_levels import auto_class_bins, class_rank_knots
from dpuq.mechanisms.class_thresholds import (
    check_class_table,
    check_rank_schedule,
    class_thresholds,
    rank_at,
)
from dpuq.mechanisms.randomness import RandomState
from dpuq.privacy.ledger import CALLER_CHARGED, charge
from dpuq.privacy.report import PrivacyReport, Relation
from dpuq.scale.sources import is_dask_collection

__all__ = [
    "ClassConditionalCalibration",
    "calibrate_by_class",
    "check_groups",
    "class_prediction_sets",
    "grouped_intervals",
]

MECHANISM = (
    "class-conditional exponential mechanism over binned thresholds: per class, rank utility "
    "-max(L_j - ρ(n_y), ρ(n_y) - C_j, 0) on the class's scores padded with P pseudo-scores at 1"
)


@dataclass(frozen=True)
class ClassConditionalCalibration:
    """The released result of :func:`calibrate_by_class`: public values only.

    Holds no scores, no labels and no class sizes (nor anything computed from them other than
    the released thresholds).

    Attributes
    ----------
    thresholds : tuple of float
        ``thresholds[y]`` is class y's threshold: y is in the set of x when
        ``S(x, y) <= thresholds[y]``.
    n_classes, alpha, epsilon, n_bins, pad, n :
        The public settings (``n`` is the total calibration size, public under replace-one).
    privacy_report : PrivacyReport
    """

    thresholds: tuple[float, ...]
    n_classes: int
    alpha: float
    epsilon: float
    n_bins: int
    pad: int
    n: int
    privacy_report: PrivacyReport

    @property
    def confidence_level(self) -> float:
        """``1 - alpha``."""
        return 1.0 - self.alpha

    def threshold_array(self) -> np.ndarray:
        """The thresholds as a read-only array of shape (K,)."""
        out = np.asarray(self.thresholds, dtype=float)
        out.flags.writeable = False
        return out

    def to_dict(self) -> dict:
        """JSON-ready dict of the released values and the privacy report."""
        return {
            "class_conditional": True,
            "thresholds": list(self.thresholds),
            "n_classes": self.n_classes,
            "alpha": self.alpha,
            "epsilon": self.epsilon,
            "n_bins": self.n_bins,
            "pad": self.pad,
            "n": self.n,
            "privacy_report": self.privacy_report.to_dict(),
        }


def calibrate_by_class(
    scores,
    labels,
    n_classes: int,
    *,
    alpha: float,
    epsilon: float,
    n_bins: int | str = "auto",
    random_state: RandomState = None,
    ledger=None,
    dataset: str | None = None,
) -> ClassConditionalCalibration:
    """Release one ε-DP conformal threshold per class (class-conditional coverage).

    For every class y and a new exchangeable point of that class,
    ``P(S(X, y) <= T_y | Y = y) >= 1 - alpha``, whatever the class sizes (proof in
    ``docs/how-to/class_conditional.md``). The price: a class with few calibration points gets a
    high threshold (its label enters many sets); an empty class gets ``T = 1`` with probability at
    least ``1 - alpha``.

    Privacy: ε-DP, δ = 0, under replace-one with ``n`` public (each class: ε/2 under
    add/remove within the class; see :mod:`dpuq.mechanisms.class_thresholds`).

    Parameters
    ----------
    scores : array-like of shape (n,)
        Calibration scores ``S(X_i, Y_i)`` in [0, 1], from data not used to train the model.
    labels : array-like of shape (n,)
        The true classes ``Y_i``, integers in ``0..n_classes-1``.
    n_classes : int
        K >= 2, public (classes with no calibration point are allowed).
    alpha : float
        Miscoverage level in (0, 0.5], for every class.
    epsilon : float
        Privacy parameter > 0 of the whole release.
    n_bins : "auto" or int, default "auto"
        Bins m; ``"auto"`` uses :func:`dpuq.conformal.class_levels.auto_class_bins` (from n, K,
        alpha, epsilon only).
    random_state : None, int or numpy.random.Generator
        None (default) draws OS entropy: use it for releases. A seed is for experiments only.
    ledger, dataset : dpuq.Ledger (or its path) and str, optional
        Charge ε (replace-one) to ``dataset``'s budget before any noise is drawn
        (:func:`dpuq.privacy.ledger.charge`), or refuse.

    Returns
    -------
    ClassConditionalCalibration

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 3, size=6000)
    >>> scores = rng.uniform(size=6000) * (1 + labels) / 3
    >>> cal = calibrate_by_class(scores, labels, 3, alpha=0.1, epsilon=1.0, random_state=0)
    >>> len(cal.thresholds), cal.privacy_report.relation.value
    (3, 'replace-one')
    """
    if is_dask_collection(scores):  # counts per (class, bin) summed chunk-wise on the workers
        from dpuq.scale._dask import DaskClassCounts

        chunked, s = DaskClassCounts(scores, labels), None
    else:
        chunked, s = None, check_scores(scores)
    k = check_positive_int(n_classes, "n_classes", minimum=2)
    a = check_alpha(alpha)
    eps = check_epsilon(epsilon)
    n = s.size if chunked is None else chunked.size
    if isinstance(n_bins, str):
        if n_bins != "auto":
            raise ValueError(f"n_bins must be 'auto' or an integer >= 2, got {n_bins!r}")
        m = auto_class_bins(n, k, a, eps)  # within the work cap (K alone refused by name)
    else:
        m = check_n_bins(n_bins)
    check_class_table(k, m)  # the (K, m) counts (Dask: on every worker too), before the charge
    # knots, not a table of n + 1 ranks: O(2^15 log n) public numbers on the client
    schedule, pad = class_rank_knots(n, alpha=a, epsilon=eps, n_bins=m)
    check_rank_schedule(schedule, pad)  # the privacy proof's assumptions, before the charge
    notes: list[str] = []
    if rank_at(schedule, [n])[0] >= n:  # public: a class of all n points targets the padding
        msg = (
            f"n={n} calibration points are too few at alpha={a:g}, epsilon={eps:g} for "
            "informative class-conditional sets: every class's threshold is 1 (full sets) with "
            "high probability. Use more data, a larger epsilon or alpha, or marginal sets."
        )
        notes.append(msg)
        warnings.warn(msg, UninformativeReleaseWarning, stacklevel=2)
    # every setting and input checked before the charge (Dask: chunk-wise, in the counts)
    if chunked is None:
        check_labels(labels, k, n)
        counts = None
    else:
        counts = chunked.counts(k, m)
    charge(
        ledger,
        dataset,
        eps,
        what="calibrate_by_class: class-conditional thresholds",
        random_state=random_state,
        settings={"alpha": a, "n": n, "n_classes": k, "method": "certified", "n_bins": m},
    )
    thresholds = class_thresholds(
        s,
        None if chunked else labels,
        k,
        epsilon=eps,
        n_bins=m,
        schedule=schedule,
        pad=pad,
        random_state=random_state,
        counts=counts,
        ledger=CALLER_CHARGED,
    )
    report = PrivacyReport(
        mechanism=MECHANISM,
        epsilon=eps,
        delta=0.0,
        relation=Relation.REPLACE_ONE,
        sensitivity="per class: each utility moves by at most 1 under add/remove within the "
        "class (ρ nondecreasing and 1-Lipschitz in n_y), each class released at ε/2; a "
        "replacement removes from one class and adds to one (parallel composition)",
        details={
            "n": n,
            "n_classes": k,
            "alpha": a,
            "n_bins": m,
            "pad": pad,
            "epsilon per class (add/remove)": eps / 2.0,
        },
        notes=tuple(notes),
        seeded=random_state is not None,
    )
    return ClassConditionalCalibration(
        thresholds=tuple(float(t) for t in thresholds),
        n_classes=k,
        alpha=a,
        epsilon=eps,
        n_bins=m,
        pad=pad,
        n=n,
        privacy_report=report,
    )


def class_prediction_sets(score_matrix, thresholds) -> np.ndarray:
    """Boolean sets ``S(x, y) <= thresholds[y]``: each label against its own class's threshold.

    The same comparison as :func:`dpuq.prediction_sets` and the calibration bins ,
    column by column.

    Parameters
    ----------
    score_matrix : array-like of shape (n, K)
        Scores of every label, in [0, 1].
    thresholds : array-like of shape (K,)
        Released per-class thresholds (e.g. ``ClassConditionalCalibration.thresholds``).

    Returns
    -------
    ndarray of bool, shape (n, K)

    Examples
    --------
    >>> class_prediction_sets([[0.1, 0.5, 0.9]], [0.05, 0.5, 1.0]).tolist()
    [[False, True, True]]
    """
    s = check_scores(score_matrix, "score_matrix", ndim=2)
    t = np.asarray(thresholds, dtype=float)
    if t.shape != (s.shape[1],):
        raise ValueError(
            f"thresholds must have shape ({s.shape[1]},), one per column of score_matrix, "
            f"got {t.shape}"
        )
    if np.isnan(t).any():
        raise ValueError("thresholds contain NaN")
    return s <= t[None, :]


# ------------------------------------------------------------- groups (the regressor's groups=)
def check_groups(groups, n_groups, n_samples: int, *, required: bool = False):
    """Group indices ``0..n_groups-1`` of ``n_samples`` points, or None when not grouped.

    ``n_groups`` is public (from the user, never from the data: the largest group index seen
    in the calibration data would tell whether a group is empty).
    """
    from dpuq._validation import check_labels

    if n_groups is None:
        if groups is not None:
            raise ValueError("groups= needs n_groups (the public number of groups)")
        return None
    k = check_positive_int(n_groups, "n_groups", minimum=2)
    if groups is None:
        raise ValueError(f"n_groups={k} needs groups= (each point's group, 0..{k - 1})")
    return check_labels(groups, k, n_samples, "groups")


def grouped_intervals(interval_fn, predictions, groups, thresholds, *, bound: float):
    """Intervals of each row at its group's threshold: ``interval_fn`` applied group by group.

    Examples
    --------
    >>> from dpuq.conformal.regression_scores import absolute_residual_intervals
    >>> grouped_intervals(absolute_residual_intervals, np.array([0.0, 0.0]), np.array([0, 1]),
    ...                   np.array([0.1, 0.5]), bound=10.0).tolist()
    [[-1.0, 1.0], [-5.0, 5.0]]
    """
    out = np.empty((groups.size, 2))
    for g, t in enumerate(np.asarray(thresholds, dtype=float)):  # groups are few
        rows = groups == g
        if rows.any():
            out[rows] = interval_fn(predictions[rows], float(t), bound=bound)
    return out
