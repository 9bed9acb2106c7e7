"""Rich renderings of job results shared by several commands (names, labels and
questions are data: always :class:`Text`, never markup)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from vllmdiag.matrix.summary import table_rows
from vllmdiag.model.verdict import Verdict
from vllmdiag.plan import PlannedCell

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


def shell_assignment(name: str, value: str) -> str:
    """``NAME='value'``, safe to paste: a name a shell cannot assign is quoted whole (as
    ``env`` takes it), never left to run as a command."""
    if name.isidentifier() and name.isascii():
        return f"{name}={shlex.quote(value)}"
    return shlex.quote(f"{name}={value}")


def print_cells(console: Console, cells: Sequence[PlannedCell]) -> None:
    """A plan's cells as text a user can paste from: each command on one line, quoted
    with ``shlex.join``, never wrapped or cut (and never parsed as markup)."""
    console.print(Text("cells (in run order)", style="italic"))
    for c in cells:
        line = Text(c.id, style="bold")
        line.append(f"  leg {c.leg}", style="dim")
        console.print(line, soft_wrap=True)
        env = " ".join(shell_assignment(k, v) for k, v in c.env.items())
        if env:
            console.print(Text(f"  env: {env}"), soft_wrap=True, highlight=False)
        console.print(Text(f"  $ {shlex.join(c.argv)}"), soft_wrap=True, highlight=False)
