"""One side of a comparison from a path: a Markdown, TSV or CSV file (possibly a whole
report with several tables), with the table picked by a heading substring, or a study
directory (its canonical values of one metric)."""

from __future__ import annotations

import re
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare.columns import build, layout
from vllmdiag.jobs.compare.grids import RawTable, delimited_tables, markdown_tables
from vllmdiag.jobs.compare.tables import ResultTable
from vllmdiag.services.config.source import read_text

FORMATS = (".md", ".markdown", ".tsv", ".tab", ".csv", ".txt")
_MD_TABLE = re.compile(r"^\s*\|.*\|\s*\n\s*\|?\s*:?-{3,}", re.M)


def _format(path: Path, text: str) -> str:
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown"):
        return "md"
    if suffix in (".tsv", ".tab"):
        return "tsv"
    if suffix == ".csv":
        return "csv"
    if _MD_TABLE.search(text):
        return "md"
    if "\t" in text:
        return "tsv"
    if "," in text:
        return "csv"
    raise VllmdiagError(
        "cannot tell the format: no Markdown table, no tabs, no commas",
        where=str(path),
        hint="give a .md, .tsv or .csv results table",
    )


#: A results table is kilobytes; a study's biggest is well under a megabyte.
MAX_TABLE_BYTES = 64 * 1024 * 1024


def raw_tables(path: Path) -> list[RawTable]:
    """Every table in the file at ``path``."""
    if path.is_dir():
        return _study_dir(path)
    if not path.exists():
        raise VllmdiagError(
            "no such file", where=str(path), hint="give a results table (.md, .tsv or .csv)"
        )
    # Bounded: a FIFO, a device or a file far larger than any table is refused, and an
    # unreadable one is a one-line error (read_text names the file and the problem).
    text = read_text(path, what="results table", limit=MAX_TABLE_BYTES).removeprefix("\ufeff")
    fmt = _format(path, text)
    if fmt == "md":
        return markdown_tables(str(path), text)
    return delimited_tables(str(path), text, "\t" if fmt == "tsv" else ",", path.stem)


def _study_dir(path: Path) -> list[RawTable]:
    """A directory is not a file of tables: :func:`load_table` reads a study directory
    through :func:`vllmdiag.jobs.compare.results.table_from_results`; anything else is said
    so plainly."""
    raise VllmdiagError(
        "is a directory, and not a study directory (no study.json)",
        where=str(path),
        hint="give a .md, .tsv or .csv file with one column per leg (0.18, 0.26, ...), or "
        "a directory 'vllmdiag study' wrote",
    )


def _listing(tables: list[RawTable]) -> str:
    shown = [f"'{t.title or '(untitled)'}' (line {t.line})" for t in tables[:12]]
    more = f" and {len(tables) - 12} more" if len(tables) > 12 else ""
    return "tables found: " + ", ".join(shown) + more


def pick(tables: list[RawTable], path: Path, table: str | None) -> RawTable:
    """The first table with a model column and leg columns among those whose heading
    contains ``table`` (or, if no heading does, whose caption does; any, if None)."""
    if not tables:
        raise VllmdiagError(
            "no table found",
            where=str(path),
            hint="compare reads Markdown pipe tables, tab-separated or comma-separated tables",
        )
    named = tables
    if table:
        wanted = table.casefold()
        # A heading that matches wins over prose around another table that mentions it.
        named = [t for t in tables if wanted in t.title.casefold()] or [
            t for t in tables if wanted in t.caption.casefold()
        ]
    if not named:
        raise VllmdiagError(
            f"no table's heading contains {table!r}",
            where=str(path),
            hint=_listing(tables),
        )
    for t in named:
        if layout(t).comparable:
            return t
    which = f"no table under {table!r}" if table else "no table"
    raise VllmdiagError(
        f"{which} has a model column and leg columns (headed by versions such as 0.18)",
        where=named[0].where() if len(named) == 1 else str(path),
        hint=_listing(named) + "; head each leg's column with its version",
    )


def load_table(path: Path, table: str | None = None) -> ResultTable:
    """The results table at ``path`` (the one under a heading containing ``table``); a
    study directory's canonical table of the metric ``table`` names."""
    if path.is_dir() and (path / "study.json").is_file():
        from vllmdiag.jobs.compare.study_side import study_table

        return study_table(path, table)
    chosen = pick(raw_tables(path), path, table)
    return build(chosen, layout(chosen))
