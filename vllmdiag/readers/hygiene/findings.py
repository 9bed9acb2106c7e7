"""What ``doctor`` finds in a leg: frozen values (JSON through :mod:`vllmdiag.codec`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    CONTAMINATED = "contaminated"
    WARNING = "warning"
    OK = "ok"
    SKIPPED = "skipped"


CONTAMINATED = Severity.CONTAMINATED
WARNING = Severity.WARNING
OK = Severity.OK
SKIPPED = Severity.SKIPPED


@dataclass(frozen=True)
class Finding:
    """``severity``: contaminated (numbers from this leg are not clean; the matrix stops
    unless overridden), warning, ok (checked and clean), or skipped (not checked, and
    the message says why: never reported as clean)."""

    severity: Severity
    code: str
    message: str
    hint: str | None = None


@dataclass(frozen=True)
class DoctorReport:
    leg: str
    path: str
    findings: tuple[Finding, ...]
    vllm: str | None = None
    known_env_vars: int | None = None
    #: Any finding that makes numbers from this leg unclean (kept, so the JSON says it).
    contaminated: bool = False

    def __post_init__(self) -> None:
        dirty = any(f.severity == CONTAMINATED for f in self.findings)
        object.__setattr__(self, "contaminated", dirty)

    def reasons(self) -> list[str]:
        """The contamination findings, one line each (for a manifest or an error)."""
        return [f"{f.code}: {f.message}" for f in self.findings if f.severity == CONTAMINATED]
