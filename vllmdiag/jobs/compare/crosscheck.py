"""Cross-check the ratio columns a table prints against its own leg values.

A table's values are rounded as printed (``0.24`` ms/tok is anything in 0.235–0.245),
so a recomputed ratio is an interval, not a number. A printed ratio disagrees only
when no values that round to the printed ones give a ratio that rounds to it: then the
table carries a transcription error worth knowing about. The printed ratio is never
used for the comparison itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from vllmdiag.jobs.compare.tables import Direction, Measurement, PrintedRatio, ResultTable, label


@dataclass(frozen=True)
class Note:
    """Something the user should know that is not a row of the comparison: ``kind`` is
    ``cross-check``, ``context`` or ``leg``."""

    kind: str
    where: str
    message: str


def ratio_bounds(
    new: Measurement, old: Measurement, literal: bool, direction: Direction
) -> tuple[float, float, float] | None:
    """(value, low, high) of the ratio the header names: value(new)/value(old) for a
    literal ``a/b`` header or a higher-is-better speedup, old/new for a lower-is-better
    speedup; None where a value is missing."""
    if new.value is None or old.value is None:
        return None
    n_lo, n_hi = new.value.bounds()
    o_lo, o_hi = old.value.bounds()
    if literal or direction == "higher":
        return new.value.value / old.value.value, n_lo / o_hi, n_hi / o_lo
    return old.value.value / new.value.value, o_lo / n_hi, o_hi / n_lo


def _fmt(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if x < 100 else f"{x:,.0f}"


def _check(p: PrintedRatio, new: Measurement, old: Measurement, direction: Direction) -> str | None:
    got = ratio_bounds(new, old, not p.speedup, direction)
    if p.value is None:
        if got is None:
            return None
        return (
            f"prints no ratio ({p.text or 'empty'}) though {old.leg} and {new.leg} both have values"
        )
    if got is None:
        lacking = old if old.value is None else new
        return f"prints {p.text} though {lacking.leg} has no value ({lacking.text or 'empty'})"
    value, lo, hi = got
    p_lo, p_hi = p.value.bounds()
    if hi < p_lo or lo > p_hi:
        kind = "speedup" if p.speedup else "ratio"
        return (
            f"prints {p.text}, but {new.leg} = {new.text} and {old.leg} = {old.text} give a "
            f"{kind} of {_fmt(value)} ({_fmt(lo)}–{_fmt(hi)} allowing for their rounding)"
        )
    return None


def cross_check(table: ResultTable, direction: Direction, side: str) -> list[Note]:
    """One note per printed ratio that its row's values cannot give."""
    notes: list[Note] = []
    for row in table.rows:
        for p in row.printed:
            new, old = row.measurement(p.new), row.measurement(p.old)
            if new is None or old is None:
                continue
            problem = _check(p, new, old, direction)
            if problem:
                notes.append(
                    Note(
                        "cross-check",
                        p.where,
                        f"{side}: {label(row.model, row.workload)}, column '{p.column}' {problem}",
                    )
                )
    return notes
