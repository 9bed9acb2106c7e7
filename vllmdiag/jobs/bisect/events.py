"""What a bisect run tells its observers, as it happens: one union, :data:`BisectEvent`.

The CLI's live view and the bisect journal (:class:`vllmdiag.jobs.bisect.journal.BisectJournal`)
subscribe to the same events, so what is shown and what is journaled cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.events import Note
from vllmdiag.jobs.bisect.results import Step


@dataclass(frozen=True)
class CandidatesListed:
    """The versions between the ends (from the good end) and the question's journal."""

    package: str
    candidates: tuple[str, ...]
    journal: Path


@dataclass(frozen=True)
class StepStarted:
    """``version`` is being installed and checked now (not known from the journal)."""

    version: str


@dataclass(frozen=True)
class StepFinished:
    """A version's verdict: checked now, or read back from the journal
    (``step.resumed``)."""

    step: Step


BisectEvent = CandidatesListed | StepStarted | StepFinished | Note
