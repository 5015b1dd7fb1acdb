"""Privacy reports: what was released, under which neighbouring relation, at what cost."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["PrivacyReport", "compose_disjoint", "compose_sequential"]

REPLACE_ONE_N_PUBLIC = (
    "replace-one (swap): two calibration sets of the same public size n that differ in one "
    "(x, y) pair"
)


@dataclass(frozen=True)
class PrivacyReport:
    """An immutable statement of the privacy guarantee of one release.

    Attributes
    ----------
    mechanism : str
        What was run, e.g. ``"exponential mechanism (binned quantile)"``.
    epsilon, delta : float
        The (ε, δ)-DP guarantee actually achieved by the code (δ = 0 for pure DP).
    neighbouring : str
        The neighbouring relation the guarantee refers to.
    sensitivity : str
        The sensitivity used, in words and numbers.
    details : Mapping
        Other released or public quantities (levels, bin counts, accountant figures).
    notes : tuple of str
        Caveats a reader must see (e.g. "no informative release possible").
    """

    mechanism: str
    epsilon: float
    delta: float = 0.0
    neighbouring: str = REPLACE_ONE_N_PUBLIC
    sensitivity: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        object.__setattr__(self, "notes", tuple(self.notes))

    def __reduce__(self):  # mappingproxy is not picklable: rebuild from a plain dict
        return (
            type(self),
            (
                self.mechanism,
                self.epsilon,
                self.delta,
                self.neighbouring,
                self.sensitivity,
                dict(self.details),
                self.notes,
            ),
        )

    @property
    def pure(self) -> bool:
        """True for pure ε-DP (δ = 0)."""
        return self.delta == 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "neighbouring": self.neighbouring,
            "sensitivity": self.sensitivity,
            "details": dict(self.details),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        guarantee = (
            f"ε = {self.epsilon:.4g} (pure, δ = 0)"
            if self.pure
            else f"(ε, δ) = ({self.epsilon:.4g}, {self.delta:.3g})"
        )
        lines = [
            f"mechanism:    {self.mechanism}",
            f"guarantee:    {guarantee}",
            f"neighbouring: {self.neighbouring}",
        ]
        if self.sensitivity:
            lines.append(f"sensitivity:  {self.sensitivity}")
        for key, value in self.details.items():
            shown = f"{value:.6g}" if isinstance(value, float) else str(value)
            lines.append(f"  {key}: {shown}")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def compose_sequential(reports: Iterable[PrivacyReport], mechanism: str) -> PrivacyReport:
    """Basic sequential composition on the same data: ε and δ add up."""
    reports = list(reports)
    if not reports:
        raise ValueError("reports is empty")
    return PrivacyReport(
        mechanism=mechanism,
        epsilon=math.fsum(r.epsilon for r in reports),
        delta=math.fsum(r.delta for r in reports),
        neighbouring=reports[0].neighbouring,
        sensitivity="see parts",
        details={f"part {i + 1}": r.mechanism for i, r in enumerate(reports)},
        notes=("basic sequential composition of the parts on the same data",),
    )


def compose_disjoint(reports: Iterable[PrivacyReport], mechanism: str) -> PrivacyReport:
    """Parallel composition over disjoint sets of people: the guarantee is the worst part's.

    Valid when each person's record enters exactly one part (e.g. a model trained on one set of
    patients and calibrated on another). Each person then enjoys that part's (ε, δ).
    """
    reports = list(reports)
    if not reports:
        raise ValueError("reports is empty")
    return PrivacyReport(
        mechanism=mechanism,
        epsilon=max(r.epsilon for r in reports),
        delta=max(r.delta for r in reports),
        neighbouring="each person's record is in exactly one part; per part: "
        + "; ".join(r.neighbouring for r in reports),
        sensitivity="see parts",
        details={
            f"part {i + 1}": f"{r.mechanism} ({r.epsilon:.4g}, {r.delta:.3g})"
            for i, r in enumerate(reports)
        },
        notes=("parallel composition: the parts use disjoint people",),
    )
