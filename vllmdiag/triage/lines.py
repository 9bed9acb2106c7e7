"""One captured log line, stripped to what a reader needs: which process, which level,
what text.

vLLM's output reaches a log with up to four layers around the text: a timestamp added by
whatever captured it (docker, CI, journald), ANSI colours, a process tag added by vLLM's
child processes (``(EngineCore_DP0 pid=123)``, ``(Worker_TP1 pid=9)``, ``(RayWorkerWrapper
pid=7, ip=10.0.0.1)``, newer ``(Engine (DP0))``), and vLLM's logger prefix
(``INFO 09-21 12:34:56 [core.py:123]``, older ``INFO 09-21 12:34:56 core.py:123]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAIN = "main"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_EXTERNAL_TS = re.compile(
    r"^(?:"
    r"\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\]?"
    r"|[A-Z][a-z]{2} +\d{1,2} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?: [\w.-]+ [\w.@/-]+\[\d+\]:)?"
    r")[ \t]*(?:\|[ \t]*)?"
)
_PROCESS = re.compile(
    r"^\((?:"
    r"(?P<name>[A-Za-z][\w-]*(?: \(\w+\)| rank=\d+)?) pid=(?P<pid>\d+)(?:, ip=[^)]*)?"
    r"|pid=(?P<rpid>\d+)(?:, ip=[^)]*)?"
    r"|(?P<short>(?:Engine|Worker|API)(?: \(\w+\))?)"
    r")\) ?"
)
_LOGGER = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) +"
    r"(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)? +"
    r"(?:[\w-]*\[[^\]\s]+:\d+\]|[\w./-]+:\d+\]) ?"
)


@dataclass(frozen=True)
class Line:
    """A normalised line: ``process`` is ``main`` for untagged lines; ``level`` is the
    vLLM logger level, or None for raw output (print, a traceback written by Python)."""

    number: int
    process: str
    level: str | None
    text: str


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def normalise(raw: str, number: int) -> Line:
    """Peel the capture timestamp, colours, process tag and logger prefix off ``raw``."""
    text = strip_ansi(raw.rstrip("\r\n")).replace("\r", "")
    process = MAIN
    level: str | None = None
    for _ in range(2):  # a capture timestamp can sit before or after the process tag
        m = _EXTERNAL_TS.match(text)
        if m:
            text = text[m.end() :]
        p = _PROCESS.match(text)
        if p and process == MAIN:
            if p.group("name"):
                process = f"{p.group('name')} pid={p.group('pid')}"
            elif p.group("rpid"):
                process = f"pid={p.group('rpid')}"
            else:
                process = p.group("short")
            text = text[p.end() :]
            continue
        break
    lg = _LOGGER.match(text)
    if lg:
        level = "WARNING" if lg.group("level") == "WARN" else lg.group("level")
        text = text[lg.end() :]
    return Line(number, process, level, text)
