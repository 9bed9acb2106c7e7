"""Rich renderings of job results shared by several commands (names, labels and
questions are data: always :class:`Text`, never markup)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from vllmdiag.jobs.matrix.summary import table_rows
from vllmdiag.model.verdict import Verdict
from vllmdiag.plan import PlannedCell
from vllmdiag.printable import printable

EFFECT_STYLE = {
    "sufficient": "bold green",
    "partial": "green",
    "ruled out": "dim",
    "error": "bold yellow",
    "control": "cyan",
    "inert": "magenta",
    "not run": "dim",
    "not called": "yellow",
}


def print_table(console: Console, table: Table) -> None:
    """``table`` with nothing cut: names (its ``no_wrap`` columns) stay whole and prose
    wraps at spaces; where even that does not fit (a narrow terminal) or the output is
    not a terminal (a pipe, a file), the table takes the width it needs. (A prose
    column's narrowest is its longest word: at that width nothing is cut.)"""
    need = console.measure(table, options=console.options.update_width(1 << 16))
    width = console.width
    if need.maximum <= width:
        console.print(table)
        return
    wide = need.maximum if not console.is_terminal else max(width, need.minimum)
    console.width = wide  # print(width=) would clamp to the console's width
    try:
        console.print(table)
    finally:
        console.width = width


def verdict_table(verdict: Verdict, workloads: list[str] | tuple[str, ...], title: str) -> Table:
    rows = table_rows(verdict, workloads)
    table = Table(title=Text(title), title_justify="left")
    for i, col in enumerate(rows[0]):
        # the arm and workload names are ids: whole; the effect column is prose
        last = i == len(rows[0]) - 1
        table.add_column(Text(col), no_wrap=not last)
    for row in rows[1:]:
        effect = row[-1].split(" (")[0]
        style = EFFECT_STYLE.get(effect, "")
        table.add_row(*(Text(c) for c in row[:-1]), Text(row[-1], style=style))
    return table


def print_cells(console: Console, cells: Sequence[PlannedCell]) -> None:
    """A plan's cells as text a user can paste from: each cell's environment overlay and
    command on one line after ``$ `` (every word quoted, secrets ``***``, control
    characters escaped), never wrapped or cut (and never parsed as markup); then what is
    not known yet about it, if anything."""
    console.print(Text("cells (in run order)", style="italic"))
    for c in cells:
        line = Text(printable(c.id), style="bold")
        line.append(f"  leg {printable(c.leg)}", style="dim")
        console.print(line, soft_wrap=True)
        console.print(Text(f"  $ {c.line}"), soft_wrap=True, highlight=False)
        if c.unknown:
            known = Text("  not known yet: " + "; ".join(c.unknown))
            console.print(known, style="yellow", soft_wrap=True, highlight=False)
