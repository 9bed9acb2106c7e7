"""Each leg's doctor report, by leg name: what a run keeps of its legs' hygiene."""

from __future__ import annotations

from dataclasses import dataclass, field

from vllmdiag.readers.hygiene.findings import CONTAMINATED, WARNING, DoctorReport


@dataclass(frozen=True)
class HygieneSummary:
    """Each leg's doctor report, by leg name."""

    per_leg: dict[str, DoctorReport] = field(default_factory=dict)

    @property
    def contaminated(self) -> bool:
        return any(r.contaminated for r in self.per_leg.values())

    def contaminations(self) -> list[str]:
        return [f"{leg}: {reason}" for leg, r in self.per_leg.items() for reason in r.reasons()]

    def notable(self, leg: str) -> list[tuple[str, str]]:
        """``(code, message)`` of the leg's warnings and contaminations."""
        r = self.per_leg.get(leg)
        if r is None:
            return []
        return [(f.code, f.message) for f in r.findings if f.severity in (CONTAMINATED, WARNING)]

    def lines(self) -> list[str]:
        return [
            f"{leg}: {f.severity.value}: {f.message}"
            for leg, r in self.per_leg.items()
            for f in r.findings
            if f.severity in (CONTAMINATED, WARNING)
        ]
