"""The study's tables, from the canonical selection alone. Pure.

One table per metric (``model | tp | workload | <leg> ... | <leg i+1>/<leg i> ...``),
the coverage per leg (passing / failing / not run) and the root causes of failing
cells. A value that is missing carries its reason as a numbered note. Ratios between
consecutive legs are speedups: new/old where higher is better (headed ``26/18``),
old/new where lower is better (headed ``18→26``), so above 1 always means the newer leg
is better.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from vllmdiag.jobs.study.canonical import Selection
from vllmdiag.jobs.study.measured import Choice
from vllmdiag.jobs.study.plan import Slot
from vllmdiag.jobs.study.recipe import StudyRecipe
from vllmdiag.model.leg_names import leg_aliases
from vllmdiag.model.noise import FLOOR, SpreadGroup, estimate, relative_spread


class Call(str, Enum):
    """What a ratio between two legs' values supports (see :mod:`vllmdiag.model.noise`)."""

    DIFFERENCE = "difference"
    NONE_DETECTED = "no difference detected"
    NOT_CALLED = "not called"  # a side of one value: nothing separates it from noise


@dataclass(frozen=True)
class TableRow:
    """Values as shown (scaled), one per leg; speedups per consecutive pair; ``notes``:
    numbers of the table's notes (why a value is missing, or its measurements when they
    disagree). Per leg: ``spreads`` (max/min-1 over the pooled values, None under two),
    ``counts`` (n) and ``unstable`` (spread beyond the 5 % band); per pair: ``calls``."""

    model: str
    tp: int
    workload: str
    values: tuple[float | None, ...]
    ratios: tuple[float | None, ...]
    notes: tuple[int, ...] = ()
    spreads: tuple[float | None, ...] = ()
    counts: tuple[int, ...] = ()
    unstable: tuple[bool, ...] = ()
    calls: tuple[Call | None, ...] = ()


@dataclass(frozen=True)
class MetricTable:
    metric: str
    title: str
    unit: str
    better: str
    legs: tuple[str, ...]
    ratio_labels: tuple[str, ...]
    decimals: int
    rows: tuple[TableRow, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Absent:
    model: str
    why: str


@dataclass(frozen=True)
class CoverageRow:
    """A model passes on a leg when every workload it runs has a canonical value there;
    it fails when a run under the current settings failed or timed out; otherwise it
    was not run (or gave no result: an error is never a failure)."""

    leg: str
    models: int
    passing: tuple[str, ...]
    failing: tuple[Absent, ...]
    not_run: tuple[Absent, ...]


@dataclass(frozen=True)
class CauseGroup:
    why: str
    cells: tuple[str, ...]


@dataclass(frozen=True)
class StudyTables:
    study: str
    question: str
    legs: tuple[str, ...]
    coverage: tuple[CoverageRow, ...]
    tables: tuple[MetricTable, ...]
    causes: tuple[CauseGroup, ...]
    selection: Selection


def build(study: StudyRecipe, selection: Selection) -> StudyTables:
    legs = tuple(study.legs)
    return StudyTables(
        study=study.name,
        question=study.question,
        legs=legs,
        coverage=tuple(_coverage(study, selection, leg) for leg in legs),
        tables=tuple(_table(study, selection, name) for name in study.metrics),
        causes=_causes(selection),
        selection=selection,
    )


def short_names(legs: Sequence[str]) -> dict[str, str]:
    """Each leg's shortest name no other leg also answers to (``0.26`` → ``26``)."""
    aliases = {leg: leg_aliases(leg) for leg in legs}
    out = {}
    for leg in legs:
        others = set().union(*(a for other, a in aliases.items() if other != leg))
        own = sorted((a for a in aliases[leg] if a not in others), key=lambda a: (len(a), a))
        out[leg] = own[0] if own else leg
    return out


def _table(study: StudyRecipe, selection: Selection, metric: str) -> MetricTable:
    spec = study.metrics[metric]
    legs = tuple(study.legs)
    short = short_names(legs)
    pairs = list(itertools.pairwise(legs))
    lower = spec.better == "lower"
    labels = tuple(
        f"{short[old]}→{short[new]}" if lower else f"{short[new]}/{short[old]}"
        for old, new in pairs
    )
    notes: list[str] = []
    rows = []

    def mark(text: str) -> int:
        if text not in notes:
            notes.append(text)
        return notes.index(text) + 1

    for model in study.models:
        for wl in study.model_workloads(model):
            if metric not in study.workload_metrics(wl):
                continue
            values: list[float | None] = []
            pooled: list[tuple[float, ...]] = []
            marks: list[int] = []
            for leg in legs:
                choice = selection.choice(Slot(leg, model, wl))
                value, missing = _value(study, choice, metric)
                values.append(value)
                raw = choice.repeats.get(metric, ()) if choice and value is not None else ()
                pooled.append(raw)
                if missing is not None:
                    marks.append(mark(f"{leg}: {missing}"))
                elif choice is not None and _unstable(raw):
                    marks.append(mark(_disagree(study, leg, choice, metric)))
            ratios = tuple(_ratio(values[i], values[i + 1], lower) for i in range(len(pairs)))
            calls = tuple(_call(ratios[i], pooled[i], pooled[i + 1]) for i in range(len(pairs)))
            rows.append(
                TableRow(
                    model,
                    study.models[model].tp,
                    wl,
                    tuple(values),
                    ratios,
                    tuple(marks),
                    spreads=tuple(relative_spread(p) for p in pooled),
                    counts=tuple(len(p) for p in pooled),
                    unstable=tuple(_unstable(p) for p in pooled),
                    calls=calls,
                )
            )
    shown = [v for r in rows for v in r.values if v is not None]
    unit = f"{spec.unit}, " if spec.unit else ""
    return MetricTable(
        metric=metric,
        title=f"{metric} ({unit}{spec.better} is better)",
        unit=spec.unit,
        better=spec.better,
        legs=legs,
        ratio_labels=labels,
        decimals=spec.decimals if spec.decimals is not None else auto_decimals(shown),
        rows=tuple(rows),
        notes=tuple(notes),
    )


def _value(
    study: StudyRecipe, choice: Choice | None, metric: str
) -> tuple[float | None, str | None]:
    if choice is None:
        return None, "not run"
    if choice.canonical is None:
        return None, choice.missing or "no run counts"
    raw = choice.values.get(metric)
    if raw is None:
        return None, f"the canonical run ({choice.canonical.batch}) did not report {metric}"
    spec = study.metrics[metric]
    value = raw * spec.scale
    if spec.per_token:
        value /= study.workloads[choice.slot.workload].output_len
    return value, None


def _unstable(values: Sequence[float]) -> bool:
    spread = relative_spread(values)
    return spread is not None and spread > FLOOR


def _disagree(study: StudyRecipe, leg: str, choice: Choice, metric: str) -> str:
    values = choice.repeats[metric]
    origins = choice.origins.get(metric, ())
    spec = study.metrics[metric]
    scale = spec.scale / (study.workloads[choice.slot.workload].output_len if spec.per_token else 1)
    shown = ", ".join(
        f"{v * scale:,.6g}" + (f" ({origins[i]})" if i < len(origins) else "")
        for i, v in enumerate(values)
    )
    spread = relative_spread(values) or 0.0
    return (
        f"{leg}: unstable: its {len(values)} measurements under the same settings disagree "
        f"by {spread:.1%} (max/min-1, beyond the {FLOOR:.0%} band): {shown}; the value shown "
        "is their median"
    )


def _call(ratio: float | None, old: Sequence[float], new: Sequence[float]) -> Call | None:
    """Whether ``ratio`` lies outside the band of both sides' spreads."""
    if ratio is None:
        return None
    noise = estimate([SpreadGroup("old", tuple(old)), SpreadGroup("new", tuple(new))])
    called = noise.calls(ratio, min(len(old), len(new)))
    if called is None:
        return Call.NOT_CALLED
    return Call.DIFFERENCE if called else Call.NONE_DETECTED


def _ratio(old: float | None, new: float | None, lower: bool) -> float | None:
    if old is None or new is None or old <= 0 or new <= 0:
        return None
    return old / new if lower else new / old


def auto_decimals(values: Sequence[float]) -> int:
    """Digits after the point: none from 100 up, two from 0.1, else two significant."""
    smallest = min((abs(v) for v in values if v), default=100.0)
    if smallest >= 100:
        return 0
    if smallest >= 0.1:
        return 2
    return min(6, 1 - math.floor(math.log10(smallest)))


def _coverage(study: StudyRecipe, selection: Selection, leg: str) -> CoverageRow:
    passing: list[str] = []
    failing: list[Absent] = []
    not_run: list[Absent] = []
    for model in study.models:
        choices = [selection.choice(Slot(leg, model, wl)) for wl in study.model_workloads(model)]
        lacking = [c for c in choices if c is not None and c.canonical is None]
        if not lacking:
            passing.append(model)
            continue
        failed = [c for c in lacking if c.outcome in ("fail", "timeout")]
        bad = failed or lacking
        whys = list(dict.fromkeys(_short(c) for c in bad))
        partial = len(bad) < len(choices)
        absent = Absent(model, "; ".join(whys) + (" (some workloads)" if partial else ""))
        (failing if failed else not_run).append(absent)
    return CoverageRow(leg, len(study.models), tuple(passing), tuple(failing), tuple(not_run))


def _short(choice: Choice) -> str:
    return choice.missing or "not run"


def _causes(selection: Selection) -> tuple[CauseGroup, ...]:
    groups: dict[str, list[str]] = {}
    for c in selection.choices:
        if c.canonical is None and c.outcome in ("fail", "timeout") and c.missing:
            groups.setdefault(c.missing, []).append(
                f"{c.slot.leg} / {c.slot.model} / {c.slot.workload}"
            )
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    return tuple(CauseGroup(why, tuple(cells)) for why, cells in ordered)
