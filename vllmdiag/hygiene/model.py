"""What ``doctor`` finds in a leg: frozen values with ``to_json()``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTAMINATED = "contaminated"
WARNING = "warning"
OK = "ok"
SKIPPED = "skipped"


@dataclass(frozen=True)
class Finding:
    """``severity``: contaminated (numbers from this leg are not clean; the matrix stops
    unless overridden), warning, ok (checked and clean), or skipped (not checked, and
    the message says why: never reported as clean)."""

    severity: str
    code: str
    message: str
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class DoctorReport:
    leg: str
    path: str
    findings: tuple[Finding, ...]
    vllm: str | None = None
    known_env_vars: int | None = None

    @property
    def contaminated(self) -> bool:
        return any(f.severity == CONTAMINATED for f in self.findings)

    def reasons(self) -> list[str]:
        """The contamination findings, one line each (for a manifest or an error)."""
        return [f"{f.code}: {f.message}" for f in self.findings if f.severity == CONTAMINATED]

    def to_json(self) -> dict[str, Any]:
        return {
            "leg": self.leg,
            "path": self.path,
            "vllm": self.vllm,
            "contaminated": self.contaminated,
            "known_env_vars": self.known_env_vars,
            "findings": [f.to_json() for f in self.findings],
        }
