"""An engine's start-up, phase by phase: the values (pure). Read from a log by
:mod:`vllmdiag.fingerprint.startup`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    name: str
    start: str  # the milestone key it starts at ("process_start", "first_log", ...)
    end: str
    seconds: float


@dataclass(frozen=True)
class StartupTimeline:
    """Phases in order; ``total_s`` from the earliest milestone known to ``ready`` (or the
    last one seen, when the engine never got ready)."""

    phases: tuple[Phase, ...]
    total_s: float
    ready: bool
    from_process_start: bool
    reported_init_s: float | None = None  # vLLM's own "init engine ... took N s"

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)


@dataclass(frozen=True)
class PhaseDelta:
    """One phase in two start-ups (None: that start-up never reached it)."""

    name: str
    a_s: float | None
    b_s: float | None
    delta_s: float

    @classmethod
    def of(cls, name: str, a_s: float | None, b_s: float | None) -> PhaseDelta:
        return cls(name, a_s, b_s, (b_s or 0.0) - (a_s or 0.0))


@dataclass(frozen=True)
class StartupDiff:
    """Two start-ups phase by phase, the phase that moved most first."""

    a_total_s: float
    b_total_s: float
    phases: tuple[PhaseDelta, ...]


@dataclass(frozen=True)
class Dominant:
    phase: Phase
    share: float
    explanation: str | None
