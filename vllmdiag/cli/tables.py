"""Rich renderings of engine results shared by several commands (names, labels and
questions are data: always :class:`Text`, never markup)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from vllmdiag.matrix.summary import table_rows
from vllmdiag.model.verdict import Verdict

EFFECT_STYLE = {
    "sufficient": "bold green",
    "partial": "green",
    "ruled out": "dim",
    "error": "bold yellow",
    "control": "cyan",
    "inert": "magenta",
    "not run": "dim",
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
