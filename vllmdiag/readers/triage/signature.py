"""Signatures: an exception's type and message with the parts that vary between runs
(numbers, paths, addresses, pids, ids) masked, so one failure groups across models,
legs and machines."""

from __future__ import annotations

import re

MAX_SIGNATURE = 300

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<id>",
    ),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<addr>"),
    (re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"<>)\]]+"), "<url>"),
    (re.compile(r"(?<![\w.])(?:~|\.{1,2})?(?:/[\w.@+~-]+)+/?"), "<path>"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b"), "<id>"),
    (re.compile(r"(?<![\w.<])[-+]?\d+(?:[.,]\d+)*"), "<n>"),
    (re.compile(r"\s+"), " "),
)


def mask(text: str) -> str:
    """``text`` with run-specific parts replaced by ``<n>``, ``<path>``, ``<addr>`` ..."""
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text.strip()


def short_type(exc_type: str) -> str:
    """``torch.OutOfMemoryError`` → ``OutOfMemoryError``; Ray's ``RayTaskError(X)`` kept."""
    head, _, paren = exc_type.partition("(")
    short = head.rsplit(".", 1)[-1]
    return f"{short}({paren}" if paren else short


def signature(exc_type: str, message: str) -> str:
    """The grouping key of one exception: short type + masked message (the masked
    message alone for an untyped cause: a death line, an untyped quote)."""
    if not exc_type:
        return mask(message)[:MAX_SIGNATURE]
    sig = f"{short_type(exc_type)}: {mask(message)}" if message else short_type(exc_type)
    return sig[:MAX_SIGNATURE]
