"""What transfers between two sides: per (model, workload, leg pair) the speedup on
each side, recomputed from the leg values, and whether the two agree.

The speedup of a pair NEW/OLD is value(NEW)/value(OLD) when higher is better and
value(OLD)/value(NEW) when lower is better, so above 1 always means NEW is better. The
two sides' speedups differ by ``factor = max(a, b) / min(a, b)``; a row *transfers*
when ``factor <= settings.factor`` (the seeds' rule: more than 1.25x apart does not
transfer). An *agreement* is a row that moved beyond the noise band on both sides
(``|a - 1| >= noise`` and ``|b - 1| >= noise``, for every value the printed rounding
allows) and lands within ``agree`` of itself (``factor - 1 <= agree``): the same change
on two machines is a property of the version, not of the hardware. A row whose
printed rounding allows a factor on either side of ``settings.factor`` is *borderline*.

Where a side says how far its values' own measurements disagree (a study directory, or
a study's table with its ``± <leg>`` columns), that side's band is the larger of
``noise`` and the spread of the pair's two values (max/min-1; doubled with two
measurements a value, as in :mod:`vllmdiag.model.noise`): a change inside a side's own
noise never counts as having moved there.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.compare.crosscheck import Note, cross_check, ratio_bounds
from vllmdiag.jobs.compare.tables import Direction, Measurement, ResultTable, Row, label
from vllmdiag.model.leg_names import leg_aliases


@dataclass(frozen=True)
class Pair:
    new: str
    old: str

    @property
    def label(self) -> str:
        return f"{self.new}/{self.old}"


@dataclass(frozen=True)
class Settings:
    factor: float = 1.25
    noise: float = 0.05
    agree: float = 0.05

    def check(self) -> None:
        for name, value in (("factor", self.factor), ("noise", self.noise), ("agree", self.agree)):
            if not math.isfinite(value):  # nan passes every comparison; inf judges nothing
                raise VllmdiagError(
                    f"--{name} {value} is not a finite number",
                    hint="e.g. --factor 1.25 --noise 0.05 --agree 0.05 (the defaults)",
                )
        if not self.factor > 1:
            raise VllmdiagError(
                f"--factor {self.factor} must be above 1", hint="the default is 1.25"
            )
        if self.noise < 0 or self.agree < 0:
            raise VllmdiagError(
                "--noise and --agree are fractions and cannot be negative",
                hint="0.05 means 5 %",
            )
        if 1 + self.agree > self.factor:
            raise VllmdiagError(
                f"--agree {self.agree} is wider than --factor {self.factor}: an agreement "
                "could be a row that does not transfer",
                hint="keep 1 + agree at or below the factor",
            )


@dataclass(frozen=True)
class Ratio:
    """One side's speedup for one pair and the interval its printed rounding allows
    (``low``..``high``), or why there is none."""

    value: float | None
    low: float | None = None
    high: float | None = None
    missing: str | None = None
    missing_leg: str | None = None
    #: The side's noise band for this pair (None: the settings' ``noise``).
    band: float | None = None


@dataclass(frozen=True)
class Compared:
    model: str
    workload: str
    pair: Pair
    a: Ratio
    b: Ratio
    factor: float | None
    transfers: bool | None
    agreement: bool
    borderline: bool = False

    @property
    def within_pct(self) -> float | None:
        return None if self.factor is None else (self.factor - 1) * 100


@dataclass(frozen=True)
class OnlyIn:
    side: str
    model: str
    workload: str
    where: str


@dataclass(frozen=True)
class Comparison:
    a: ResultTable
    b: ResultTable
    direction: Direction
    direction_from: str
    pairs: tuple[Pair, ...]
    settings: Settings
    rows: tuple[Compared, ...]
    only_in: tuple[OnlyIn, ...]
    notes: tuple[Note, ...]
    names: tuple[str, str] = ("A", "B")
    direction_side: str | None = None

    def name(self, side: str) -> str:
        """What the user calls side ``A`` or ``B``."""
        return self.names[0] if side == "A" else self.names[1]

    def direction_text(self) -> str:
        """What decided the direction, naming the side whose table said so."""
        if self.direction_side is None:
            return self.direction_from
        return f"{self.name(self.direction_side)}: {self.direction_from}"

    def differs(self) -> list[Compared]:
        """Rows that do not transfer, by side A's speedup, largest first."""
        out = [r for r in self.rows if r.transfers is False]
        return sorted(out, key=lambda r: -(r.a.value or 0.0))

    def agreements(self) -> list[Compared]:
        return [r for r in self.rows if r.agreement]


def resolve_direction(
    a: ResultTable,
    b: ResultTable,
    override: Direction | None,
    names: tuple[str, str] = ("A", "B"),
) -> tuple[Direction, str, str | None]:
    """The direction, what decided it, and which side's table said so (None: neither)."""
    if override is not None:
        return override, f"--{override}-is-better", None
    if a.direction and b.direction and a.direction != b.direction:
        raise VllmdiagError(
            f"{names[0]} is a {a.direction}-is-better table ({a.title!r}) and {names[1]} a "
            f"{b.direction}-is-better one ({b.title!r})",
            where=b.where,
            hint="pick the same metric on both sides with --table",
        )
    if a.direction:
        return a.direction, a.direction_from, "A"
    if b.direction:
        return b.direction, b.direction_from, "B"
    return "higher", "assumed (neither table says); pass --lower-is-better for latencies", None


def common_legs(a: ResultTable, b: ResultTable) -> list[str]:
    return [leg for leg in a.legs if leg in b.legs]


def default_pairs(a: ResultTable, b: ResultTable) -> list[Pair]:
    """Consecutive legs both sides have, in A's column order."""
    legs = common_legs(a, b)
    if len(legs) < 2:
        raise VllmdiagError(
            f"the two tables share {len(legs)} leg(s): A has {', '.join(a.legs)}; "
            f"B has {', '.join(b.legs)}",
            where=b.where,
            hint="head the same leg's column the same way on both sides",
        )
    return [Pair(new, old) for old, new in itertools.pairwise(legs)]


def parse_pair(text: str, a: ResultTable, b: ResultTable) -> Pair:
    """``NEW/OLD`` (``0.29/0.18``, or the short ``29/18``) or ``OLD->NEW``."""
    legs = common_legs(a, b)
    for sep, new_first in (("/", True), ("->", False), ("→", False)):
        if sep in text:
            x, _, y = (s.strip() for s in text.partition(sep))
            new, old = (x, y) if new_first else (y, x)
            break
    else:
        raise VllmdiagError(f"--pair {text!r} is not NEW/OLD", hint="e.g. --pair 0.29/0.18")
    resolved = []
    for token in (new, old):
        hits = [leg for leg in legs if token in leg_aliases(leg)]
        if len(hits) != 1:
            raise VllmdiagError(
                f"--pair {text!r}: {token!r} is not a leg of both tables",
                hint=f"legs on both sides: {', '.join(legs) or '(none)'}",
            )
        resolved.append(hits[0])
    if resolved[0] == resolved[1]:
        raise VllmdiagError(f"--pair {text!r} compares a leg with itself", hint="name two legs")
    return Pair(resolved[0], resolved[1])


def speedup(row: Row, pair: Pair, direction: Direction) -> Ratio:
    new, old = row.measurement(pair.new), row.measurement(pair.old)
    for leg, m in ((pair.old, old), (pair.new, new)):
        if m is None or m.value is None:
            why = m.missing if m else "no such leg"
            return Ratio(None, missing=f"{leg}: {why}", missing_leg=leg)
    assert new is not None and old is not None
    got = ratio_bounds(new, old, False, direction)
    assert got is not None
    return Ratio(*got, band=measured_band(new, old))


def measured_band(new: Measurement, old: Measurement) -> float | None:
    """The larger spread of the two values (doubled when either rests on two
    measurements); None where neither side's spread is known."""
    spreads = [m.spread for m in (new, old) if m.spread is not None]
    if not spreads:
        return None
    counts = [m.n for m in (new, old) if m.n is not None]
    return max(spreads) * (2 if counts and min(counts) == 2 else 1)


def _moved(r: Ratio, noise: float) -> bool:
    """Beyond the noise band (the side's measured one, if wider) for every value the
    rounding allows."""
    assert r.low is not None and r.high is not None
    band = max(noise, r.band or 0.0)
    return r.low >= 1 + band or r.high <= 1 - band


def judge(model: str, workload: str, pair: Pair, a: Ratio, b: Ratio, s: Settings) -> Compared:
    """One row of the comparison: its factor, whether it transfers, whether it is an
    agreement, and whether the printed rounding could put it on the other side."""
    if a.value is None or b.value is None:
        return Compared(model, workload, pair, a, b, None, None, False)
    assert a.low and a.high and b.low and b.high
    factor = max(a.value, b.value) / min(a.value, b.value)
    widest = max(a.high / b.low, b.high / a.low)
    narrowest = max(1.0, a.low / b.high, b.low / a.high)
    agreement = _moved(a, s.noise) and _moved(b, s.noise) and factor - 1 <= s.agree
    borderline = narrowest <= s.factor < widest
    return Compared(model, workload, pair, a, b, factor, factor <= s.factor, agreement, borderline)


def compare(
    a: ResultTable,
    b: ResultTable,
    *,
    pairs: list[Pair] | None = None,
    settings: Settings | None = None,
    direction: Direction | None = None,
    names: tuple[str, str] = ("A", "B"),
) -> Comparison:
    """Side A against side B (``names`` say what to call them in messages)."""
    s = settings or Settings()
    s.check()
    way, why, side = resolve_direction(a, b, direction, names)
    chosen = pairs or default_pairs(a, b)
    b_rows = {r.key: r for r in b.rows}
    a_keys = {r.key for r in a.rows}
    rows: list[Compared] = []
    for pair in chosen:
        for ra in a.rows:
            rb = b_rows.get(ra.key)
            if rb is None:
                continue
            sa, sb = speedup(ra, pair, way), speedup(rb, pair, way)
            rows.append(judge(ra.model, ra.workload, pair, sa, sb, s))
    only = [OnlyIn("A", r.model, r.workload, r.where) for r in a.rows if r.key not in b_rows]
    only += [OnlyIn("B", r.model, r.workload, r.where) for r in b.rows if r.key not in a_keys]
    notes = cross_check(a, way, names[0]) + cross_check(b, way, names[1])
    notes += _extras(a, b, b_rows, names)
    for name, table, other in ((names[0], a, b), (names[1], b, a)):
        lone = [leg for leg in table.legs if leg not in other.legs]
        if lone:
            notes.append(
                Note("leg", table.where, f"legs only in {name}: {', '.join(lone)} (not compared)")
            )
    return Comparison(
        a, b, way, why, tuple(chosen), s, tuple(rows), tuple(only), tuple(notes), names, side
    )


def _extras(
    a: ResultTable, b: ResultTable, b_rows: dict[tuple[str, str], Row], names: tuple[str, str]
) -> list[Note]:
    """Context columns both sides print (``tp``) that differ on a matched row: the two
    measurements are then not like for like."""
    notes = []
    for ra in a.rows:
        rb = b_rows.get(ra.key)
        if rb is None:
            continue
        other = dict(rb.extras)
        for name, value in ra.extras:
            if _measured(name):
                continue  # how a value was measured differs by nature; not context
            if name in other and other[name] != value:
                notes.append(
                    Note(
                        "context",
                        rb.where,
                        f"{label(ra.model, ra.workload)}: '{name}' is {value} in {names[0]} "
                        f"({ra.where}) and {other[name]} in {names[1]}",
                    )
                )
    return notes


def _measured(column: str) -> bool:
    """A study's own columns about its measurements: spreads, calls, notes."""
    return column.startswith("± ") or column.endswith(" call") or column == "notes"
