"""Progress events: one typed union per job, one observer shape for all of them.

A job (matrix, window, bisect, profile) emits frozen event values to an
``Observer[ItsEvent]``, a plain callable. The Rich live view is one observer, ``--json``
another, and the run directory's journal a third (it writes each event as a JSONL record
through :mod:`vllmdiag.codec`), so what a user watched and what the journal says cannot
drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

E = TypeVar("E", contravariant=True)

#: Anything that takes a job's events. ``Observer[MatrixEvent]`` etc.
Observer = Callable[[E], None]


def ignore(_event: object) -> None:
    """The observer that wants nothing."""
    return None


def fan_out(*observers: Callable[[E], None]) -> Callable[[E], None]:
    """One observer that hands every event to each of ``observers`` in turn."""

    def emit(event: E) -> None:
        for observer in observers:
            observer(event)

    return emit


@dataclass(frozen=True)
class Note:
    """Something the user should see that is not progress (a hygiene finding, a warning
    about a damaged file that was skipped, a lock being waited for)."""

    level: str  # "info" | "warning"
    text: str
