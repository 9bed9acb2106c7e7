"""An engine's start-up, phase by phase: the values (pure). Read from a log by
:mod:`vllmdiag.readers.fingerprint.startup`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    name: str
    start: str  # the milestone key it starts at ("process_start", "first_log", ...)
    end: str
    seconds: float
    #: What vLLM's own line said the step took ("torch.compile took 16.31 s"), if it did.
    reported_s: float | None = None


@dataclass(frozen=True)
class StartupTimeline:
    """Phases in order; ``total_s`` from the earliest milestone known to ``ready`` (or,
    when the engine never got ready, to the kill at the cell's timeout where vllmdiag
    killed it, else the last milestone seen). ``killed``: vllmdiag killed it at its
    timeout (the last phase then runs from the last milestone to the kill);
    ``silent_s``: how long its log had been silent then."""

    phases: tuple[Phase, ...]
    total_s: float
    ready: bool
    from_process_start: bool
    reported_init_s: float | None = None  # vLLM's own "init engine ... took N s"
    killed: bool = False
    silent_s: float | None = None

    def phase(self, name: str) -> Phase | None:
        return next((p for p in self.phases if p.name == name), None)

    def last_completed(self) -> Phase | None:
        """The last phase the start-up got through (not the wait that a kill ended)."""
        done = [p for p in self.phases if p.end != "killed"]
        return done[-1] if done else None

    def state(self) -> str:
        """ "ready", or why not ("never ready: killed at the timeout, log silent 224 s")."""
        if self.ready:
            return "ready"
        if not self.killed:
            return "never ready"
        silent = f", log silent {self.silent_s:.0f} s" if self.silent_s is not None else ""
        return f"never ready: killed at the timeout{silent}"


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
