"""Privacy reports: what was released, under which neighbouring relation, at what cost.

Neighbouring relations are a closed type, :class:`Relation`:

- ``Relation.REPLACE_ONE``: two data sets of the same public size ``n`` that differ in one
  person's record (swap). Calibration, intervals, private learning and (by default) training
  are stated under it.
- ``Relation.ADD_REMOVE``: one data set is the other with one person's record added or removed.

Composition adds only like with like. A guarantee under add/remove converts to replace-one
(a replacement is a removal followed by an addition, group privacy of size 2):
``(ε, δ) ↦ (2ε, (1 + e^ε) δ)``, pure ``ε ↦ 2ε`` (:meth:`PrivacyReport.under`). The converse has
no general conversion (replace-one with ``n`` public says nothing about data sets of different
sizes) and is refused. Reports of different relations are never added silently.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any

__all__ = ["PrivacyReport", "Relation", "compose_disjoint", "compose_sequential"]


class Relation(StrEnum):
    """The neighbouring relation a privacy guarantee refers to (a closed set)."""

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add/remove-one"

    @property
    def description(self) -> str:
        """The relation in words."""
        if self is Relation.REPLACE_ONE:
            return (
                "replace-one (swap): two data sets of the same public size n that differ in one "
                "person's record"
            )
        return "add/remove-one: one data set is the other with one person's record added or removed"

    @classmethod
    def coerce(cls, value: Relation | str) -> Relation:
        """``value`` as a :class:`Relation`; an error naming the allowed values otherwise."""
        if isinstance(value, Relation):
            return value
        for member in cls:
            if value in (member.value, member.name, member.name.lower()):
                return member
        allowed = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"relation must be one of {allowed}, got {value!r}")


# Kept for callers that still name the relation by its text.
REPLACE_ONE_N_PUBLIC = Relation.REPLACE_ONE.description

#: The privacy unit of every dpuq guarantee.
PRIVACY_UNIT = "one person's record (each person contributes exactly one row)"
#: What a dpuq guarantee covers, and what it does not (side-channel tested:
#: docs/explanation/privacy.md).
OUTPUTS_COVERED = (
    "the released values, and everything dpuq shows about them: files, ledger entries, "
    "printed lines, warnings, log records, errors, global random states"
)
OUTPUTS_NOT_COVERED = (
    "wall-clock time and memory use; side effects of user code dpuq calls (a statistic, a "
    "model_fn, a run) beyond its returned value; writes that bypass sys.stdout and "
    "sys.stderr (C code or os.write on file descriptors 1 and 2); "
    "anything reproducible from a seed that is not secret"
)
DEFAULT_TUNING = "none on the data: every setting is public or chosen data-free"
DEFAULT_SAMPLING = (
    "none: the guarantee holds for the fixed data set; no amplification by sampling is claimed"
)

SEEDED_NOTE = (
    "seeded: this release is reproducible from its random_state; it is private only while the "
    "seed stays secret (use random_state=None for real releases)"
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
    relation : Relation
        The neighbouring relation the guarantee refers to (a string naming one is accepted).
    sensitivity : str
        The sensitivity used, in words and numbers.
    details : Mapping
        Other released or public quantities (levels, bin counts, accountant figures).
    notes : tuple of str
        Caveats a reader must see (e.g. "no informative release possible").
    seeded : bool
        True when the noise came from a user-given seed: reproducible, so private only while
        the seed stays secret.
    accountant, tuning, sampling : str
        How the guarantee was accounted, whether tuning on the data was accounted, and the
        sampling assumption ("" : the defaults of :attr:`statement`).

    Examples
    --------
    >>> r = PrivacyReport("Laplace mechanism", epsilon=0.5, relation="add/remove-one")
    >>> r.under(Relation.REPLACE_ONE).epsilon
    1.0
    """

    mechanism: str
    epsilon: float
    delta: float = 0.0
    relation: Relation = Relation.REPLACE_ONE
    sensitivity: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    seeded: bool = False
    accountant: str = ""
    tuning: str = ""
    sampling: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "relation", Relation.coerce(self.relation))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "seeded", bool(self.seeded))

    def __reduce__(self):  # mappingproxy is not picklable: rebuild from a plain dict
        return (
            type(self),
            (
                self.mechanism,
                self.epsilon,
                self.delta,
                self.relation,
                self.sensitivity,
                dict(self.details),
                self.notes,
                self.seeded,
                self.accountant,
                self.tuning,
                self.sampling,
            ),
        )

    @property
    def neighbouring(self) -> str:
        """The neighbouring relation in words."""
        return self.relation.description

    @property
    def statement(self) -> dict[str, str]:
        """The privacy statement a data steward signs, in the vocabulary of OpenDP, Tumult
        and TF-Privacy: privacy unit, neighbouring relation, measure, accountant, outputs
        covered and not covered, whether tuning was accounted, and the sampling assumption.

        >>> PrivacyReport("Laplace mechanism", epsilon=1.0).statement["measure"]
        'pure epsilon-DP (epsilon = 1, delta = 0)'
        """
        measure = (
            f"pure epsilon-DP (epsilon = {self.epsilon:.6g}, delta = 0)"
            if self.pure
            else f"approximate (epsilon, delta)-DP (epsilon = {self.epsilon:.6g}, "
            f"delta = {self.delta:.3g})"
        )
        return {
            "privacy unit": PRIVACY_UNIT,
            "neighbouring relation": self.neighbouring,
            "measure": measure,
            "accountant": self.accountant
            or (
                "none needed: the mechanism's exact pure epsilon (its law, tested by "
                "neighbour enumeration)"
                if self.pure
                else "see details"
            ),
            "outputs covered": OUTPUTS_COVERED,
            "outputs not covered": OUTPUTS_NOT_COVERED,
            "tuning accounted": self.tuning or DEFAULT_TUNING,
            "sampling assumption": self.sampling or DEFAULT_SAMPLING,
        }

    @property
    def pure(self) -> bool:
        """True for pure ε-DP (δ = 0)."""
        return self.delta == 0.0

    def under(self, relation: Relation | str) -> PrivacyReport:
        """The same guarantee stated under ``relation``.

        Add/remove ⇒ replace-one by group privacy of size 2: ``(2ε, (1 + e^ε) δ)``.
        Replace-one ⇒ add/remove is refused (no general conversion).
        """
        relation = Relation.coerce(relation)
        if relation is self.relation:
            return self
        if self.relation is Relation.ADD_REMOVE and relation is Relation.REPLACE_ONE:
            eps = 2.0 * self.epsilon
            delta = (
                0.0
                if self.pure
                else min(1.0, (1.0 + math.exp(min(self.epsilon, 700.0))) * self.delta)
            )
            return replace(
                self,
                epsilon=eps,
                delta=delta,
                relation=relation,
                notes=(
                    *self.notes,
                    "converted from add/remove-one to replace-one by group privacy (2ε, (1+e^ε)δ)",
                ),
            )
        raise ValueError(
            f"cannot convert a guarantee under {self.relation.value} to {relation.value}: "
            "replace-one with n public implies nothing about data sets of different sizes"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "relation": self.relation.value,
            "neighbouring": self.neighbouring,
            "sensitivity": self.sensitivity,
            "details": dict(self.details),
            "notes": list(self.notes),
            "seeded": self.seeded,
            "accountant": self.accountant,
            "tuning": self.tuning,
            "sampling": self.sampling,
            "statement": self.statement,
        }

    @classmethod
    def from_dict(
        cls, d: Mapping[str, Any], relation: Relation | str = Relation.REPLACE_ONE
    ) -> PrivacyReport:
        """The report :meth:`to_dict` wrote; ``relation`` is used when ``d`` names none.

        Examples
        --------
        >>> r = PrivacyReport("Laplace mechanism", epsilon=0.5, notes=("n public",))
        >>> PrivacyReport.from_dict(r.to_dict()) == r
        True
        """
        return cls(
            mechanism=d["mechanism"],
            epsilon=d["epsilon"],
            delta=d["delta"],
            relation=d.get("relation", relation),
            sensitivity=d["sensitivity"],
            details=d["details"],
            notes=tuple(d["notes"]),
            seeded=d.get("seeded", False),
            accountant=d.get("accountant", ""),
            tuning=d.get("tuning", ""),
            sampling=d.get("sampling", ""),
        )

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
        if self.seeded:
            lines.append(f"note: {SEEDED_NOTE}")
        lines.append("privacy statement:")
        lines.extend(f"  {key}: {value}" for key, value in self.statement.items())
        return "\n".join(lines)


def _common_relation(
    reports: Iterable[PrivacyReport], relation: Relation | str | None
) -> list[PrivacyReport]:
    """The parts, all under one relation (converted by ``relation=``, else checked)."""
    reports = list(reports)
    if not reports:
        raise ValueError("reports is empty")
    if relation is not None:
        return [r.under(relation) for r in reports]
    relations = {r.relation for r in reports}
    if len(relations) > 1:
        names = ", ".join(sorted(r.value for r in relations))
        raise ValueError(
            f"cannot compose reports under different neighbouring relations ({names}); pass "
            "relation= to convert them explicitly (add/remove-one converts to replace-one)"
        )
    return reports


def compose_sequential(
    reports: Iterable[PrivacyReport], mechanism: str, *, relation: Relation | str | None = None
) -> PrivacyReport:
    """Basic sequential composition on the same data: ε and δ add up.

    All parts must be under one relation, or ``relation=`` converts each explicitly
    (:meth:`PrivacyReport.under`); mixed relations without it are an error.
    """
    reports = _common_relation(reports, relation)
    return PrivacyReport(
        mechanism=mechanism,
        epsilon=math.fsum(r.epsilon for r in reports),
        delta=min(1.0, math.fsum(r.delta for r in reports)),
        relation=reports[0].relation,
        sensitivity="see parts",
        details={f"part {i + 1}": r.mechanism for i, r in enumerate(reports)},
        notes=("basic sequential composition of the parts on the same data",),
        seeded=any(r.seeded for r in reports),
        accountant="basic sequential composition (epsilons and deltas add up)",
    )


def compose_disjoint(
    reports: Iterable[PrivacyReport], mechanism: str, *, relation: Relation | str | None = None
) -> PrivacyReport:
    """Parallel composition over disjoint sets of people: the guarantee is the worst part's.

    Valid when each person's record enters exactly one part (e.g. a model trained on one set of
    patients and calibrated on another). Each person then enjoys that part's (ε, δ). All parts
    must be under one relation, or ``relation=`` converts each explicitly.
    """
    reports = _common_relation(reports, relation)
    return PrivacyReport(
        mechanism=mechanism,
        epsilon=max(r.epsilon for r in reports),
        delta=max(r.delta for r in reports),
        relation=reports[0].relation,
        sensitivity="see parts",
        details={
            f"part {i + 1}": f"{r.mechanism} ({r.epsilon:.4g}, {r.delta:.3g})"
            for i, r in enumerate(reports)
        },
        notes=("parallel composition: the parts use disjoint people",),
        seeded=any(r.seeded for r in reports),
        accountant="parallel composition over disjoint people (the worst part's guarantee)",
    )
