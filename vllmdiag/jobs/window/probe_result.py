"""What an import probe of ``MODULE.ATTR`` found in one version, and how a version's
answer was decided (by an import, by the wheels' source, or from its neighbours)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ProbeStatus(str, Enum):
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
        if self is ProbeStatus.PRESENT:
            return True
        if self in (ProbeStatus.ABSENT, ProbeStatus.MODULE_MISSING):
            return False
        return None


class DecidedBy(str, Enum):
    """How a version's answer was decided."""

    IMPORT = "import"  # a real install and import
    STATIC = "static"  # the wheel's source, read without installing
    INFERRED = "inferred"  # from its decided neighbours


@dataclass(frozen=True)
class ProbeResult:
    """One import probe: a version, its status, why, and how long it took (seconds,
    rounded to milliseconds). ``stored``: answered from stored results, not probed now."""

    version: str
    status: ProbeStatus
    detail: str = ""
    elapsed_s: float = 0.0
    stored: bool = False
