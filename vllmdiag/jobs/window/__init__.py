"""Dependency windows: which published versions of a package carry ``MODULE.ATTR`` (read
from the wheels' sources, every change confirmed by a real install and import), and what
that means for the declared range of each package that consumes it.

    result = find_window(WindowRequest("packaging", "packaging.version.LegacyVersion"))
"""

from vllmdiag.jobs.window.events import (
    ProbeFinished,
    ProbeStarted,
    ResolveStarted,
    StaticReadStarted,
    VersionsListed,
    WindowEvent,
)
from vllmdiag.jobs.window.job import find_window
from vllmdiag.jobs.window.probe_result import DecidedBy, ProbeResult, ProbeStatus
from vllmdiag.jobs.window.request import WindowRequest
from vllmdiag.jobs.window.results import (
    Constraint,
    ConsumerReport,
    StaticRead,
    VersionRow,
    WindowResult,
)
from vllmdiag.jobs.window.store import ProbeStore, StoredProbe

__all__ = [
    "Constraint",
    "ConsumerReport",
    "DecidedBy",
    "ProbeFinished",
    "ProbeResult",
    "ProbeStarted",
    "ProbeStatus",
    "ProbeStore",
    "ResolveStarted",
    "StaticRead",
    "StaticReadStarted",
    "StoredProbe",
    "VersionRow",
    "VersionsListed",
    "WindowEvent",
    "WindowRequest",
    "WindowResult",
    "find_window",
]
