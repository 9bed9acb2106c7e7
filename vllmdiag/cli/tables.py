"""Rich renderings of job results shared by several commands (names, labels and
questions are data: always :class:`Text`, never markup)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from vllmdiag.matrix.summary import table_rows
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


def verdict_table(verdict: Verdict, workloads: list[str] | tuple[str, ...], title: str) -> Table:
    rows = table_rows(verdict, workloads)
    table = Table(title=Text(title), title_justify="left")
    for col in rows[0]:
        table.add_column(Text(col))
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
