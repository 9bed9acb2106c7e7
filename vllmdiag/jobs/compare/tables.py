"""The table model every input form is read into: one side of a comparison.

A :class:`ResultTable` is what a published results table says, and nothing more:
per (model, workload) row, one measurement per leg (a vLLM version, a runtime stack),
plus any ratio columns the table prints, kept only to cross-check them. Markdown, TSV
and CSV tables are read into it by :mod:`vllmdiag.jobs.compare.read`; typed result points
(a study's cells) by :func:`vllmdiag.jobs.compare.results.table_from_results`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower"]

MISSING = "not run/failed on that side"
"""Why a measurement printed as ``—`` (or ``-``, or empty) has no value."""


def label(model: str, workload: str) -> str:
    """``model / workload``, or the model alone in a table without a workload column."""
    return f"{model} / {workload}" if workload else model


@dataclass(frozen=True)
class Number:
    """A value as printed: ``decimals`` digits after the point say how far it was
    rounded (None: exact, as a value read from a result file is)."""

    value: float
    decimals: int | None = None

    def bounds(self) -> tuple[float, float]:
        """The interval the unrounded value lies in."""
        if self.decimals is None:
            return self.value, self.value
        half = 0.5 * 10.0**-self.decimals
        return self.value - half, self.value + half


@dataclass(frozen=True)
class Measurement:
    """One leg's value in one row, or why there is none (``missing``). ``spread``
    (max/min-1) and ``n``: how far the measurements pooled into the value disagree and
    how many there were, where the side says (a study's ``± <leg>`` column); None
    where it does not (a published table)."""

    leg: str
    value: Number | None
    missing: str | None
    where: str
    text: str = ""
    spread: float | None = None
    n: int | None = None


@dataclass(frozen=True)
class PrintedRatio:
    """A ratio column as printed: ``26/18`` is value(new)/value(old); ``18→26`` is the
    speedup from old to new (old/new when lower is better)."""

    column: str
    new: str
    old: str
    speedup: bool
    value: Number | None
    where: str
    text: str = ""


@dataclass(frozen=True)
class Row:
    model: str
    workload: str
    measurements: tuple[Measurement, ...]
    printed: tuple[PrintedRatio, ...]
    extras: tuple[tuple[str, str], ...]
    where: str

    def measurement(self, leg: str) -> Measurement | None:
        for m in self.measurements:
            if m.leg == leg:
                return m
        return None

    @property
    def key(self) -> tuple[str, str]:
        return self.model, self.workload


@dataclass(frozen=True)
class ResultTable:
    """One side. ``direction`` is None where neither the heading nor the units say
    whether higher or lower is better; ``direction_from`` says how it was decided."""

    source: str
    title: str
    where: str
    legs: tuple[str, ...]
    rows: tuple[Row, ...]
    direction: Direction | None
    direction_from: str
