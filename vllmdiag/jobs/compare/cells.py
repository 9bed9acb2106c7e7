"""Cell text as people publish it: Markdown markup, thousands separators, ``x``
suffixes, dashes for "no value". Pure functions; no I/O."""

from __future__ import annotations

import re
from dataclasses import dataclass

from vllmdiag.jobs.compare.tables import MISSING, Number

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_STRONG = re.compile(r"(\*\*|__)(.+?)\1")
_EMPH = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")
_SPACE = re.compile(r"\s+")

_PLAIN = re.compile(r"[+-]?(\d+)(?:\.(\d+))?")
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.(\d+))?")
_DASHES = {"", "—", "–", "-", "--", "---", "−"}
_NO_VALUE = {"n/a", "na", "nan", "none", "null"}
_OUTCOMES = {
    "fail",
    "failed",
    "error",
    "oom",
    "timeout",
    "timed out",
    "skip",
    "skipped",
    "not run",
    "refused",
    "crash",
    "crashed",
}


def clean(text: str) -> str:
    """Cell or heading text without its markup: code spans, bold, emphasis, links and
    HTML tags dropped, ``\\|`` unescaped, whitespace collapsed. Underscores inside a
    name (``Qwen2_5``) are kept."""
    text = text.replace("\\|", "|").replace("`", "")
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    text = _STRONG.sub(r"\2", text)
    text = _EMPH.sub(r"\1", text)
    return _SPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class Parsed:
    """A cell read as a number: ``number`` or ``missing`` (why there is none); both
    None means the text is not a number at all."""

    number: Number | None = None
    missing: str | None = None


def parse_number(raw: str) -> Parsed:
    """``12,779`` / ``1.01x`` / ``0.24`` / ``**7,457**`` → a number with its printed
    precision; ``—``, ``-``, empty, ``n/a`` → missing (not run or failed on that side);
    an outcome word (``FAIL``, ``OOM``, ``timeout`` ...) → missing, for that reason."""
    text = clean(raw)
    low = text.lower()
    if text in _DASHES or low in _NO_VALUE:
        return Parsed(missing=MISSING)
    if low.rstrip(".") in _OUTCOMES:
        return Parsed(missing=f"{text} on that side")
    body = text.replace("\u202f", "").replace("\u00a0", "").replace("_", "")
    if body[-1:] in ("x", "×", "X"):
        body = body[:-1].rstrip()
    body = body.replace("−", "-")
    m = _PLAIN.fullmatch(body)
    if m:
        return Parsed(Number(float(body), len(m.group(2) or "")))
    m = _GROUPED.fullmatch(body)
    if m:
        return Parsed(Number(float(body.replace(",", "")), len(m.group(1) or "")))
    return Parsed()
