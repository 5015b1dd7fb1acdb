"""The privacy report and the result objects of :mod:`dpuq.inference.general` (no data: only
public settings and released values pass through here)."""

from __future__ import annotations

import warnings

from dpuq.inference._data import UninformativeIntervalWarning
from dpuq.inference.confidence_interval import ConfidenceInterval
from dpuq.privacy.report import PrivacyReport, Relation

__all__ = ["RELIABLE_SUBSET"]

#: Below this subset size the report warns that coverage of nonlinear statistics on
#: heavy-tailed data is not assured (a public quantity: ``b = n // s``).
RELIABLE_SUBSET = 100


def _report(
    eps, method, n, s, tt, p, share, resample_size, b, note, locating=None
) -> PrivacyReport:
    s0, b0 = (s, b) if locating is None else locating
    return PrivacyReport(
        mechanism=f"private interval for a user statistic ({method}: disjoint subsets, "
        + (
            "the jackknife, the spread between subsets from two noisy counts and a noisy "
            "clamped second moment, "
            if method == "ensemble"
            else ""
        )
        + "exponential-mechanism locations and clamped means)",
        epsilon=eps,
        relation=Relation.REPLACE_ONE,
        sensitivity="per coordinate: location utilities 1; spread counts 1 each; clamped means "
        "2 w/s; the tail's second moment in units of R = 5 sigma_b, 1/s "
        f"(one person in one of s = {s} subsets"
        + (f" and one of the s_0 = {s0} locating subsets" if s0 != s else "")
        + "; f's output clamped to the public statistic_bounds)",
        details={
            "n": n,
            "n_subsets": s,
            "subset_size": b,
            "locating_subsets": s0,
            "locating_subset_size": b0,
            "unused_rows": n - s * b,
            "locating_unused_rows": n - s0 * b0,
            "n_resamples": tt if method == "ensemble" else 0,
            "resample_size": resample_size if method == "ensemble" else 0,
            "coordinates": p,
            "epsilon_per_coordinate": eps / p,
            "estimate_share": share if method == "ensemble" else None,
        },
        notes=("coverage is asymptotic (normal approximation of the statistic at rate sqrt(n))",)
        + (
            (
                f"subsets of b = {b} rows (< {RELIABLE_SUBSET}): the jackknife removes the "
                "O(1/b) bias, but on heavy-tailed data the corrected estimates of a nonlinear "
                "statistic at this size may keep a bias of about a standard error and coverage "
                "may fall below nominal (docs/how-to/general_intervals.md); more data helps "
                "slowly, and a larger epsilon does not help where a few extreme rows drive the "
                "statistic",
            )
            if 0 < b < RELIABLE_SUBSET
            else ()
        )
        + (
            f"each of the {p} coordinate(s) gets epsilon/{p}; intervals are marginal (pass "
            "alpha/p for simultaneous coverage by Bonferroni)",
        )
        + ((note,) if note else ()),
    )


def _finish(rows, statistic, name, method, alpha, scalar, report):
    label = name or getattr(statistic, "__name__", "statistic")
    out = []
    for j, r in enumerate(rows):
        lower, upper, est = (float(r.pop(k)) for k in ("lower", "upper", "estimate"))
        informative = bool(r.pop("informative", True))
        stat = label if len(rows) == 1 else f"{label}[{j}]"
        ci = ConfidenceInterval(lower, upper, est, alpha, stat, method, informative, report, r)
        out.append(ci)
    return out[0] if scalar else tuple(out)


def _trivial(lo: float, hi: float, why: str) -> dict:
    """The whole of the bounds, said so; ``why`` is a function of public and released values."""
    reason = (
        f"{why} at this n, epsilon and number of subsets: the release is the whole of "
        "statistic_bounds; use more data, a larger epsilon or one coordinate"
    )
    # the user's call: _trivial <- _ensemble_coordinate (or the comprehension) <-
    # _private_statistic_interval <- interval_routes._general <- private_confidence_interval
    # <- user
    warnings.warn(f"uninformative interval: {reason}", UninformativeIntervalWarning, stacklevel=6)
    return {"lower": lo, "upper": hi, "estimate": (lo + hi) / 2.0, "informative": False,
            "reason": reason}  # fmt: skip


def _subset_regime_caution(ratio: float) -> str:
    """The caution of a release whose released spread between subsets is ``ratio`` times the
    subsets' own bootstrap scale (a function of released values only)."""
    return (
        f"the spread between subsets is at least {ratio:.2g} times the subsets' own bootstrap "
        "spread: the subset estimates are far from their large-sample behaviour (heavy "
        "tails or too few rows per subset), where the jackknife may leave a bias of the "
        "order of the standard error and coverage may fall below nominal. More data "
        "(larger subsets) helps, slowly; a larger epsilon does not help where a few "
        "extreme rows drive the statistic (the SD of a heavy-tailed variable): clip the "
        "inputs to public bounds (dpuq.inference.statistics.clipped; "
        "docs/how-to/general_intervals.md)"
    )
