"""What a confidence-interval release holds: :class:`ConfidenceInterval` (released values only)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from dpuq.privacy.report import PrivacyReport

__all__ = [
    "ConfidenceInterval",
]


@dataclass(frozen=True)
class ConfidenceInterval:
    """A released confidence interval (released values only, never data).

    Attributes
    ----------
    lower, upper : float
    estimate : float
        The point estimate the interval is built around (private for private methods).
    alpha : float
        Target miscoverage: the interval aims at coverage ``1 - alpha``.
    statistic : str
    method : str
    informative : bool
        False when the release is the whole public interval because nothing better could be
        released at this ε and n (see ``details["reason"]``).
    privacy_report : PrivacyReport or None
        None for the non-private baseline.
    details : Mapping
        Released auxiliary values (noise scales, subsets, quantiles, ...).
    """

    lower: float
    upper: float
    estimate: float
    alpha: float
    statistic: str
    method: str
    informative: bool
    privacy_report: PrivacyReport | None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    def __reduce__(self):  # mappingproxy is not picklable
        return (
            type(self),
            (
                self.lower,
                self.upper,
                self.estimate,
                self.alpha,
                self.statistic,
                self.method,
                self.informative,
                self.privacy_report,
                dict(self.details),
            ),
        )

    @property
    def interval(self) -> tuple[float, float]:
        return (self.lower, self.upper)

    @property
    def width(self) -> float:
        return self.upper - self.lower

    def __contains__(self, value: float) -> bool:
        return self.lower <= value <= self.upper

    def __str__(self) -> str:
        head = (
            f"{100 * (1 - self.alpha):g}% interval for the {self.statistic}: "
            f"[{self.lower:.6g}, {self.upper:.6g}] (estimate {self.estimate:.6g}, "
            f"method {self.method})"
        )
        if not self.informative:
            head += f"\nnot informative: {self.details.get('reason', '')}"
        return head if self.privacy_report is None else f"{head}\n{self.privacy_report}"
