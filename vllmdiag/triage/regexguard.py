"""Catalogue regexes that cannot hang triage.

Two guards. At load, a pattern with a repeat inside an unbounded repeat (``(a+)+``,
``(\\w*\\s?)*``: the shape of catastrophic backtracking) is refused with its entry's
file:line. At match time, the search runs under a wall-clock budget (a timer signal,
available in the main thread of a POSIX process; Python's regex engine checks for
signals as it runs), so a pattern the static check cannot see through still cannot
stall a run: the entry is skipped and reported.
"""

from __future__ import annotations

import importlib
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


def _module(new: str, old: str) -> Any:
    """The parser of Python's re module and its constants moved in 3.11."""
    try:
        return importlib.import_module(new)
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        return importlib.import_module(old)


_p = _module("re._parser", "sre_parse")
_c = _module("re._constants", "sre_constants")

#: Seconds one catalogue lookup (all entries on one message) may take.
BUDGET_S = 0.25


class RegexTimeout(Exception):
    """A catalogue pattern ran past its budget."""


def nested_repeat(pattern: str) -> str | None:
    """Where ``pattern`` repeats a repeat without bound, as text; None if it does not."""
    try:
        tree = _p.parse(pattern)
    except Exception:  # invalid patterns are reported by re.compile itself
        return None
    return _walk(tree, None)


_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT}


def _walk(items: Any, outer: str | None) -> str | None:
    for op, av in items:
        if op in _REPEATS:
            lo, hi, sub = av
            unbounded = hi == _c.MAXREPEAT
            here = f"{{{lo},}}" if unbounded else None
            if here and outer:
                return f"an unbounded repeat inside another ({outer} around {here})"
            found = _walk(sub, outer or here)
        elif op is _c.SUBPATTERN:
            found = _walk(av[-1], outer)
        elif op is _c.BRANCH:
            found = next((f for b in av[1] if (f := _walk(b, outer))), None)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            found = _walk(av[1], outer)
        elif op is _c.GROUPREF_EXISTS:
            found = _walk(av[1], outer) or (_walk(av[2], outer) if av[2] else None)
        else:
            found = None  # literals, classes, atomic groups and possessive repeats
        if found:
            return found
    return None


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
