"""What a window job tells its observers, as it happens: one union, :data:`WindowEvent`
(the import-probe runner's events, :data:`ProbeEvent`, are part of it)."""

from __future__ import annotations

from dataclasses import dataclass

from vllmdiag.events import Note
from vllmdiag.jobs.window.probe_result import ProbeResult


@dataclass(frozen=True)
class VersionsListed:
    """The candidate versions of ``package``, oldest first."""

    package: str
    versions: tuple[str, ...]


@dataclass(frozen=True)
class StaticReadStarted:
    """The wheels' sources of ``wheels`` versions are being read."""

    wheels: int


@dataclass(frozen=True)
class ProbeStarted:
    """``version`` is being installed and imported now."""

    version: str


@dataclass(frozen=True)
class ProbeFinished:
    """A version's import answer: probed now, or from stored results
    (``result.stored``)."""

    result: ProbeResult


@dataclass(frozen=True)
class ResolveStarted:
    """A fresh resolve of a consumer (``uv pip compile``) has started."""

    requirement: str


ProbeEvent = ProbeStarted | ProbeFinished
WindowEvent = (
    VersionsListed | StaticReadStarted | ProbeStarted | ProbeFinished | ResolveStarted | Note
)
