"""Typed result points into the table model: the one function a study's results pass
through to be compared, exactly like a published table.

A point is one (model, workload, leg) measurement as a run recorded it: a value, or why
there is none (the cell's outcome: ``fail``, ``timeout``, ``error``). Values are exact
(no printed rounding); there are no printed ratios to cross-check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare.tables import MISSING, Direction, Measurement, Number, ResultTable, Row


@dataclass(frozen=True)
class ResultPoint:
    model: str
    workload: str
    leg: str
    value: float | None
    missing: str | None = None
    where: str = ""
    #: max/min-1 over the measurements pooled into ``value``, and how many (None: unknown).
    spread: float | None = None
    n: int | None = None


def table_from_results(
    points: Sequence[ResultPoint],
    *,
    source: str,
    title: str,
    direction: Direction,
    legs: Sequence[str] | None = None,
) -> ResultTable:
    """Rows in first-seen (model, workload) order; legs in ``legs`` order (first-seen
    if None). A (model, workload) with no point for a leg reads as missing on that leg;
    two points for one (model, workload, leg), a point on a leg outside ``legs``, or a
    value that is not a positive number is an error at the point's ``where``."""
    order = list(legs) if legs is not None else list(dict.fromkeys(p.leg for p in points))
    if len(set(order)) != len(order):
        raise VllmdiagError("a leg is named twice", where=source, hint="name each leg once")
    cells: dict[tuple[str, str], dict[str, ResultPoint]] = {}
    for p in points:
        where = p.where or source
        if p.leg not in order:
            raise VllmdiagError(
                f"result on leg {p.leg!r}, which is not one of {', '.join(order)}",
                where=where,
                hint="compare the legs the study ran",
            )
        if p.value is not None and not (math.isfinite(p.value) and p.value > 0):
            raise VllmdiagError(
                f"{p.model} / {p.workload} on {p.leg}: value {p.value!r} is not a positive number",
                where=where,
                hint="record a failed run as missing, not as a number",
            )
        row = cells.setdefault((p.model, p.workload), {})
        if p.leg in row:
            raise VllmdiagError(
                f"two results for {p.model} / {p.workload} on {p.leg}",
                where=where,
                hint=f"the other is at {row[p.leg].where or source}; keep one per leg",
            )
        row[p.leg] = p
    rows = []
    for (model, workload), by_leg in cells.items():
        measurements = []
        for leg in order:
            got = by_leg.get(leg)
            if got is None:
                measurements.append(Measurement(leg, None, "no result on that side", source))
            elif got.value is None:
                measurements.append(Measurement(leg, None, got.missing or MISSING, got.where))
            else:
                measurements.append(
                    Measurement(leg, Number(got.value), None, got.where, spread=got.spread, n=got.n)
                )
        first = next(iter(by_leg.values()))
        rows.append(Row(model, workload, tuple(measurements), (), (), first.where or source))
    return ResultTable(
        source=source,
        title=title,
        where=source,
        legs=tuple(order),
        rows=tuple(rows),
        direction=direction,
        direction_from="the study's metric",
    )
