"""The shape of catastrophic backtracking, read from a regex's parse tree: a repeat
inside an unbounded repeat (``(a+)+``, ``(\\w*\\s?)*``). Pure: catalogue entries and
recipe metrics are refused at load with it (see ``triage.regexguard`` for the time
budget at match time)."""

from __future__ import annotations

import importlib
from typing import Any


def _module(new: str, old: str) -> Any:
    """The parser of Python's re module and its constants moved in 3.11."""
    try:
        return importlib.import_module(new)
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        return importlib.import_module(old)


_p = _module("re._parser", "sre_parse")
_c = _module("re._constants", "sre_constants")


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
