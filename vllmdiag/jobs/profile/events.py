"""What a profile run tells its observers, as it happens: one union, :data:`ProfileEvent`.

A recipe's profile runs its captures as cells (:func:`vllmdiag.spine.runner.run_cells`), so
the runner's events are part of it; the captures add their own. The run directory's
``run.jsonl`` subscribes to all of them (as ``run_started``, ``capture_started``,
``capture_finished``, ...), and the CLI renders the same values, so what a user watched
and what the journal says cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.jobs.profile.capture import Backend, CaptureResult
from vllmdiag.spine.runner.events import CellsEvent


@dataclass(frozen=True)
class ProfileStarted:
    """The run directory exists: which sides, which workload, which backends."""

    run_dir: Path
    sides: tuple[str, ...]
    workload: str
    backends: tuple[Backend, ...]
    warmup: int
    steps: int


@dataclass(frozen=True)
class CaptureStarted:
    """A side's workload starts under ``backend``: the command as run, and how its
    profiler was switched on."""

    side: str
    backend: Backend
    cell: str
    argv: tuple[str, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaptureFinished:
    capture: CaptureResult


@dataclass(frozen=True)
class CaptureFallback:
    """``failed`` could not capture the side; ``instead`` captures it next."""

    side: str
    failed: Backend
    instead: Backend
    reason: str


ProfileEvent = CellsEvent | ProfileStarted | CaptureStarted | CaptureFinished | CaptureFallback

#: The events a profile adds to the runner's (which the runner journals itself).
OWN_EVENTS = (ProfileStarted, CaptureStarted, CaptureFinished, CaptureFallback)
