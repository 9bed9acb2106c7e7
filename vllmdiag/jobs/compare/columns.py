"""What each column of a raw table means, and the table model built from it.

Columns: ``model`` (required) and ``workload`` are the row key; a column headed by a
version (``0.18``, ``v0.26.0``, ``vllm 0.29``, optionally with units, ``0.18 (ms)``) is
a leg; a column headed ``26/18`` or ``18→26`` whose two ends name legs is a printed
ratio (kept only to cross-check it); anything else (``tp``) is carried along as an
extra. Whether higher or lower is better comes from the heading or the units.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare.cells import clean, parse_number
from vllmdiag.jobs.compare.grids import RawCell, RawTable
from vllmdiag.jobs.compare.tables import (
    Direction,
    Measurement,
    Number,
    PrintedRatio,
    ResultTable,
    Row,
)
from vllmdiag.model.leg_names import leg_aliases

_MODEL = {"model", "models", "model name", "model id"}
_WORKLOAD = {"workload", "scenario", "dataset", "task", "benchmark"}
_UNITS = re.compile(r"^(.*?)\s*[(\[]([^)\]]*)[)\]]$")
_VERSION = re.compile(r"^(?:vllm\s*[-_=@ ]?\s*)?v?\d+(?:\.\d+)+(?:[.+-]?[A-Za-z0-9]+)*$", re.I)
_RATIO = re.compile(r"^([\w.+-]+?)\s*(/|→|->|⟶|=>)\s*([\w.+-]+?)(?:\s*x)?$")
_LOWER = (
    r"\bms\b|\bs/tok\b|\blatency\b|\bttft\b|\btpot\b|\bitl\b|\bseconds?\b|\bsecs?\b|\bduration\b"
)
_HIGHER = r"\btok(?:ens)?/s\b|\breq(?:uests)?/s\b|\bthroughput\b|\bqps\b|\bsamples/s\b"


@dataclass(frozen=True)
class Layout:
    """The role of each column, by index."""

    model: int | None
    workload: int | None
    legs: tuple[tuple[int, str], ...]
    ratios: tuple[tuple[int, str, str, str, bool], ...]  # index, header, new, old, speedup
    extras: tuple[tuple[int, str], ...]
    units: tuple[str, ...]
    #: ``± <leg>`` columns (a study's spreads): index, leg.
    spreads: tuple[tuple[int, str], ...] = ()

    @property
    def comparable(self) -> bool:
        return self.model is not None and bool(self.legs)


def _strip_units(header: str) -> tuple[str, str]:
    m = _UNITS.match(header)
    return (m.group(1), m.group(2)) if m and m.group(1) else (header, "")


def _resolve(token: str, legs: list[str]) -> str | None:
    hits = [leg for leg in legs if token in leg_aliases(leg)]
    return hits[0] if len(hits) == 1 else None


def layout(raw: RawTable) -> Layout:
    header = raw.header
    model = workload = None
    legs: list[tuple[int, str]] = []
    rest: list[tuple[int, str]] = []
    units: list[str] = []
    for i, cell in enumerate(header):
        name, unit = _strip_units(clean(cell.text))
        low = name.lower()
        if unit:
            units.append(unit)
        if low in _MODEL and model is None:
            model = i
        elif low in _WORKLOAD and workload is None:
            workload = i
        elif _VERSION.match(name):
            legs.append((i, name))
        else:
            rest.append((i, clean(cell.text)))
    names = [n for _, n in legs]
    for k, name in enumerate(names):
        if name in names[:k]:
            cell = header[legs[k][0]]
            raise VllmdiagError(
                f"leg column '{name}' appears twice",
                where=raw.where(cell.line, cell.col),
                hint="give each leg one column",
            )
    ratios: list[tuple[int, str, str, str, bool]] = []
    extras: list[tuple[int, str]] = []
    for i, text in rest:
        m = _RATIO.match(_strip_units(text)[0])
        x, y = (_resolve(m.group(1), names), _resolve(m.group(3), names)) if m else (None, None)
        if m and x and y and x != y:
            speedup = m.group(2) != "/"
            new, old = (y, x) if speedup else (x, y)
            ratios.append((i, text, new, old, speedup))
        else:
            extras.append((i, text))
    spreads = []
    for i, text in extras:
        m = _SPREAD_HEAD.match(text)
        if m and m.group(1) in names:
            spreads.append((i, m.group(1)))
    return Layout(
        model, workload, tuple(legs), tuple(ratios), tuple(extras), tuple(units), tuple(spreads)
    )


_SPREAD_HEAD = re.compile(r"^±\s*(\S+)$")
_SPREAD = re.compile(r"^(?:±(\d+(?:\.\d+)?)%\s+)?n=(\d+)\b")


def spread_of(text: str) -> tuple[float | None, int | None]:
    """``±21.5% n=2 unstable`` → (0.43, 2): max/min-1 is twice the ±; ``n=1`` → (None, 1);
    anything else → unknown."""
    m = _SPREAD.match(clean(text))
    if not m:
        return None, None
    half = m.group(1)
    return (2 * float(half) / 100 if half is not None else None), int(m.group(2))


def direction_of(text: str) -> tuple[Direction | None, str]:
    """``higher``/``lower`` from a heading or units, and what said so."""
    low = text.lower()
    phrases: tuple[tuple[str, Direction], ...] = (
        ("lower is better", "lower"),
        ("higher is better", "higher"),
    )
    for phrase, direction in phrases:
        if phrase in low:
            return direction, f"the heading says '{phrase}'"
    lower = re.search(_LOWER, low)
    higher = re.search(_HIGHER, low)
    if lower and not higher:
        return "lower", f"the units say '{lower.group(0)}' (lower is better)"
    if higher and not lower:
        return "higher", f"the units say '{higher.group(0)}' (higher is better)"
    return None, "neither the heading nor the units say"


def _number(raw: RawTable, cell: RawCell, column: str) -> tuple[Number | None, str | None]:
    parsed = parse_number(cell.text)
    where = raw.where(cell.line, cell.col)
    if parsed.number is None and parsed.missing is None:
        raise VllmdiagError(
            f"not a number in column '{column}': {cell.text!r}",
            where=where,
            hint="write a number (12,779 or 0.24 or 1.01x), or — where the run did not "
            "happen or failed",
        )
    if parsed.number is not None and parsed.number.value <= 0:
        raise VllmdiagError(
            f"column '{column}' holds {cell.text!r}; a measurement must be positive",
            where=where,
            hint="write — for a run that failed or did not happen",
        )
    return parsed.number, parsed.missing


def build(raw: RawTable, cols: Layout) -> ResultTable:
    """The table model of ``raw``; a wrong row count, a non-number, an empty or a
    duplicated (model, workload) is an error at its line."""
    if cols.model is None:
        raise VllmdiagError(
            "the table has no 'model' column",
            where=raw.where(),
            hint="head the column that names the model 'model'",
        )
    seen: dict[tuple[str, str], int] = {}
    rows: list[Row] = []
    width = len(raw.header)
    for cells in raw.rows:
        line = cells[0].line
        if len(cells) != width:
            raise VllmdiagError(
                f"row has {len(cells)} cells, the header has {width}",
                where=raw.where(line),
                hint="every row needs one cell per column (write — for a missing value)",
            )
        model = clean(cells[cols.model].text)
        workload = clean(cells[cols.workload].text) if cols.workload is not None else ""
        if not model:
            raise VllmdiagError("empty model cell", where=raw.where(line), hint="name the model")
        key = (model, workload)
        if key in seen:
            raise VllmdiagError(
                f"duplicated row {model} / {workload}: also on line {seen[key]}",
                where=raw.where(line),
                hint="keep one row per (model, workload)",
            )
        seen[key] = line
        measurements = []
        spread_col = {leg: i for i, leg in cols.spreads}
        for i, leg in cols.legs:
            value, missing = _number(raw, cells[i], leg)
            c = cells[i]
            where = raw.where(c.line, c.col)
            spread, n = (
                spread_of(cells[spread_col[leg]].text) if leg in spread_col else (None, None)
            )
            measurements.append(Measurement(leg, value, missing, where, c.text, spread, n))
        printed = []
        for i, header, new, old, speedup in cols.ratios:
            value, _ = _number(raw, cells[i], header)
            c = cells[i]
            where = raw.where(c.line, c.col)
            printed.append(PrintedRatio(header, new, old, speedup, value, where, c.text))
        extras = tuple((h, clean(cells[i].text)) for i, h in cols.extras)
        rows.append(
            Row(model, workload, tuple(measurements), tuple(printed), extras, f"{raw.path}:{line}")
        )
    direction, why = direction_of(" ".join((raw.title, *cols.units)))
    return ResultTable(
        source=raw.path,
        title=raw.title,
        where=raw.where(),
        legs=tuple(leg for _, leg in cols.legs),
        rows=tuple(rows),
        direction=direction,
        direction_from=why,
    )
