"""Find the tables in a Markdown, TSV or CSV file, with each cell's line and column.

A file may be a whole report: several tables, each under a heading. Markdown tables
are pipe tables (a header row, a ``| --- |`` row, body rows) outside code fences, titled
by the nearest ``#`` heading. In TSV, each run of tab-separated lines is a table and the
plain lines before it are its caption (the seeds' H200 report is written this way). A
CSV file is one table. Nothing here decides what a column means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare.cells import clean


@dataclass(frozen=True)
class RawCell:
    text: str
    line: int
    col: int


@dataclass(frozen=True)
class RawTable:
    path: str
    title: str
    caption: str
    line: int
    header: tuple[RawCell, ...]
    rows: tuple[tuple[RawCell, ...], ...]

    def where(self, line: int | None = None, col: int | None = None) -> str:
        here = f"{self.path}:{self.line if line is None else line}"
        return here if col is None else f"{here}:{col}"


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def _split_pipes(line: str, lineno: int) -> tuple[RawCell, ...]:
    """Cells of one pipe-table line, with 1-based columns; ``\\|`` and pipes inside code
    spans do not split."""
    cells: list[RawCell] = []
    start, i, code = 0, 0, False
    body = line.rstrip("\n")
    bounds: list[tuple[int, int]] = []
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            i += 2
            continue
        if ch == "`":
            code = not code
        elif ch == "|" and not code:
            bounds.append((start, i))
            start = i + 1
        i += 1
    bounds.append((start, len(body)))
    if body.lstrip().startswith("|"):
        bounds = bounds[1:]
    if bounds and not body[bounds[-1][0] : bounds[-1][1]].strip() and body.rstrip().endswith("|"):
        bounds = bounds[:-1]
    for lo, hi in bounds:
        raw = body[lo:hi]
        lead = len(raw) - len(raw.lstrip())
        cells.append(RawCell(raw.strip(), lineno, lo + lead + 1))
    return tuple(cells)


def _starts_table(lines: list[str], i: int) -> bool:
    """A header line followed by a delimiter row with as many cells (GFM's rule, which
    keeps ``a | b`` over a ``---`` rule from reading as a table)."""
    if "|" not in lines[i] or i + 1 >= len(lines) or not _SEPARATOR.match(lines[i + 1]):
        return False
    return len(_split_pipes(lines[i], i + 1)) == len(_split_pipes(lines[i + 1], i + 2))


def markdown_tables(path: str, text: str) -> list[RawTable]:
    lines = text.splitlines()
    tables: list[RawTable] = []
    title, caption, fence = "", [], ""
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            fence = "" if fence == m.group(1) else (fence or m.group(1))
            i += 1
            continue
        heading = _HEADING.match(line) if not fence else None
        if heading:
            title, caption = clean(heading.group(2)), [clean(heading.group(2))]
        elif not fence and _starts_table(lines, i):
            header = _split_pipes(line, i + 1)
            body: list[tuple[RawCell, ...]] = []
            j = i + 2
            while j < len(lines) and lines[j].strip() and "|" in lines[j]:
                body.append(_split_pipes(lines[j], j + 1))
                j += 1
            tables.append(RawTable(path, title, "\n".join(caption), i + 1, header, tuple(body)))
            caption = [title] if title else []
            i = j
            continue
        elif line.strip() and not fence:
            caption.append(clean(line))
        i += 1
    return tables


def _heading_like(line: str) -> bool:
    return 0 < len(line) <= 100 and not line.endswith((".", ":", ";", ","))


def _title(caption: list[str], fallback: str) -> str:
    for line in reversed(caption):
        if _heading_like(line):
            return line
    return caption[-1] if caption else fallback


def delimited_tables(path: str, text: str, delimiter: str, name: str) -> list[RawTable]:
    """TSV (``delimiter='\\t'``) or CSV (``','``): every run of delimited lines is a
    table, ended by a blank line; the plain lines before it are its caption (a file
    without any is one table, titled ``name``)."""
    tables: list[RawTable] = []
    caption: list[str] = []
    block: list[tuple[RawCell, ...]] = []
    tsv = delimiter == "\t"

    def close() -> None:
        if block:
            tables.append(
                RawTable(
                    path,
                    _title(caption, name),
                    "\n".join(caption),
                    block[0][0].line,
                    block[0],
                    tuple(block[1:]),
                )
            )
            block.clear()
            caption.clear()

    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            close()
            continue
        if delimiter not in line:
            close()
            caption.append(clean(line))
            continue
        block.append(_split_tabs(line, n) if tsv else _split_csv(path, line, n))
    close()
    return tables


def _split_tabs(line: str, lineno: int) -> tuple[RawCell, ...]:
    cells, col = [], 1
    for part in line.split("\t"):
        lead = len(part) - len(part.lstrip())
        cells.append(RawCell(part.strip(), lineno, col + lead))
        col += len(part) + 1
    return tuple(cells)


def _split_csv(path: str, line: str, lineno: int) -> tuple[RawCell, ...]:
    """One CSV record per line (RFC 4180 quoting, ``""`` inside quotes); a field that
    runs over a line end is refused rather than guessed at."""
    cells: list[RawCell] = []
    i, n = 0, len(line)
    while True:
        start = i
        while i < n and line[i] == " ":
            i += 1
        if i < n and line[i] == '"':
            i += 1
            buf: list[str] = []
            while True:
                if i >= n:
                    raise VllmdiagError(
                        "unterminated quoted field",
                        where=f"{path}:{lineno}:{start + 1}",
                        hint="close the quote on the same line; fields spanning lines are not read",
                    )
                if line[i] == '"':
                    if i + 1 < n and line[i + 1] == '"':
                        buf.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                buf.append(line[i])
                i += 1
            text = "".join(buf)
            while i < n and line[i] != ",":
                i += 1
        else:
            end = line.find(",", i)
            end = n if end < 0 else end
            text, i = line[i:end], end
        cells.append(RawCell(text.strip(), lineno, start + 1))
        if i >= n:
            return tuple(cells)
        i += 1
