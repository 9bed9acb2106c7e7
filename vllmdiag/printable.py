"""Text from recipes, logs and traces is data: shown to people, its control characters are
written out as escapes (``\\x1b``, ``\\r``, ``\\u202e``), never sent raw, so a question, an
env value, a log line or a kernel name cannot clear a screen, set a window title, move the
cursor, reorder a line (bidirectional overrides) or break a file's encoding (a lone
surrogate). Newlines and tabs stay. Every renderer uses :func:`printable`: the CLI's
consoles through a render hook (:mod:`vllmdiag.cli.output`), files for people
(``summary.md``, a report, a profile diff) when they are written.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character (but newline and tab) written as an escape."""
    return _CONTROL.sub(_escape, text)
