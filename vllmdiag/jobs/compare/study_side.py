"""A study directory as one side of ``vllmdiag compare``: one metric's canonical values
as result points, through :func:`vllmdiag.jobs.compare.results.table_from_results`, exactly
as a published table would be read."""

from __future__ import annotations

from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare.results import ResultPoint, table_from_results
from vllmdiag.jobs.compare.tables import Direction, ResultTable
from vllmdiag.jobs.study.generate import study_tables
from vllmdiag.jobs.study.plan import Slot
from vllmdiag.jobs.study.tables import MetricTable, StudyTables


def study_table(path: Path, table: str | None = None) -> ResultTable:
    """The study's table for the metric whose name or title contains ``table`` (the
    first metric when None)."""
    tables = study_tables(path)
    chosen = _pick(tables, path, table)
    points = []
    for row in chosen.rows:
        for i, (leg, value) in enumerate(zip(chosen.legs, row.values, strict=True)):
            choice = tables.selection.choice(Slot(leg, row.model, row.workload))
            ref = choice.canonical if choice is not None else None
            where = (
                str(path / "batches" / ref.batch / "cells" / ref.cells[0] / "result.json")
                if ref is not None
                else str(path / "CANONICAL.md")
            )
            missing = None
            if value is None:
                missing = (choice.missing if choice is not None else None) or "not run"
            spread = row.spreads[i] if i < len(row.spreads) else None
            n = row.counts[i] if i < len(row.counts) and value is not None else None
            points.append(
                ResultPoint(row.model, row.workload, leg, value, missing, where, spread, n)
            )
    direction: Direction = "lower" if chosen.better == "lower" else "higher"
    return table_from_results(
        points, source=str(path), title=chosen.title, direction=direction, legs=chosen.legs
    )


def _pick(tables: StudyTables, path: Path, table: str | None) -> MetricTable:
    if not tables.tables:
        raise VllmdiagError("the study has no metric", where=str(path))
    if table is None:
        return tables.tables[0]
    wanted = table.casefold()
    for t in tables.tables:
        if wanted in t.metric.casefold() or wanted in t.title.casefold():
            return t
    raise VllmdiagError(
        f"no metric of study {tables.study!r} matches {table!r}",
        where=str(path),
        hint="metrics: " + ", ".join(t.metric for t in tables.tables),
    )
