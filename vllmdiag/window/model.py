"""Frozen values shared by the window and bisect jobs: probe outcomes and their rows."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Status(str, Enum):
    """What one import probe of ``MODULE.ATTR`` found in one version."""

    PRESENT = "present"
    ABSENT = "absent"  # the module imports, the attribute is missing
    MODULE_MISSING = "module-missing"
    IMPORT_ERROR = "import-error"  # never counted as absent
    INSTALL_FAILED = "install-failed"
    NOT_PROBED = "not-probed"

    @property
    def has_symbol(self) -> bool | None:
        """True/False where the probe decided, None where it could not (skip)."""
        if self is Status.PRESENT:
            return True
        if self in (Status.ABSENT, Status.MODULE_MISSING):
            return False
        return None


@dataclass(frozen=True)
class ProbeResult:
    """One import probe: a version, its status, why, and how long it took."""

    version: str
    status: Status
    detail: str = ""
    elapsed_s: float = 0.0
    stored: bool = False  # answered from stored results, not probed now

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "status": self.status.value,
            "detail": self.detail,
            "elapsed_s": round(self.elapsed_s, 3),
            "stored": self.stored,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ProbeResult:
        return cls(
            version=str(data["version"]),
            status=Status(str(data["status"])),
            detail=str(data.get("detail", "")),
            elapsed_s=float(data.get("elapsed_s", 0.0)),  # type: ignore[arg-type]
            stored=bool(data.get("stored", False)),
        )
