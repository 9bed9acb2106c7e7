"""Markdown pieces that stay intact whatever text they hold: a fence longer than any
backtick run inside it, inline code that cannot be closed early, table cells that a
``|`` or a newline cannot split."""

from __future__ import annotations

import re
from collections.abc import Sequence

_TICKS = re.compile(r"`+")


def fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip(chr(10))}\n{ticks}"


def code(text: str) -> str:
    """Inline code: ``text`` in as many backticks as it needs (spaced where it has any)."""
    text = text.replace("\n", " ")
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if longest or text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Cells are Markdown already (use :func:`cell` on raw text)."""
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def details(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def span(versions: Sequence[str]) -> str:
    """``4.6.0 … 4.8.1`` (a run of versions), one version alone, or ``none``."""
    if not versions:
        return "none"
    return versions[0] if len(versions) == 1 else f"{versions[0]} … {versions[-1]}"


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"
