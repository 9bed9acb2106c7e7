"""Catalogue regexes that cannot hang triage.

Two guards. At load, a pattern with a repeat inside an unbounded repeat (``(a+)+``,
``(\\w*\\s?)*``: the shape of catastrophic backtracking) is refused with its entry's
file:line. At match time, the search runs under a wall-clock budget (a timer signal,
available in the main thread of a POSIX process; Python's regex engine checks for
signals as it runs), so a pattern the static check cannot see through still cannot
stall a run: the entry is skipped and reported.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from vllmdiag.model.regexshape import nested_repeat

__all__ = ["BUDGET_S", "RegexTimeout", "nested_repeat", "time_limit"]


#: Seconds one catalogue lookup (all entries on one message) may take.
BUDGET_S = 0.25


class RegexTimeout(Exception):
    """A catalogue pattern ran past its budget."""


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise RegexTimeout


@contextmanager
def time_limit(seconds: float = BUDGET_S) -> Iterator[bool]:
    """Raise :class:`RegexTimeout` in the block after ``seconds``; yields whether a
    limit is in force (not in other threads, nor when a timer is already running)."""
    usable = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0
    )
    if not usable:
        yield False
        return
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
