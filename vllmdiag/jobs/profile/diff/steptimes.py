"""Is a step-time change beyond the capture's own step-to-step variation? Pure.

A profile window holds a few dozen engine steps per side; their times scatter (the
first steps of a window, the scheduler, the host). Each side's steps give a median and
a robust spread, ``1.4826 * MAD / median`` (the coefficient of variation a normal
scatter would have, untouched by a few outliers). A change of the median step time is
called only beyond the wider of the two spreads and a floor (:data:`FLOOR`, the 5 %
below which vllmdiag calls no difference anywhere); with fewer than :data:`MIN_STEPS`
steps on a side nothing is called, and the judgement says how to capture more.

Two measures, each per step kind (:mod:`phases`) and over all steps where the window
mixes kinds: the *step period*, from one step's start to the next one's on the same
process (what the engine's cadence and the window's span are made of), and the *step*,
the annotated step's own duration.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from vllmdiag.readers.traces import phases
from vllmdiag.readers.traces.leg import LegProfile

FLOOR = 0.05
MIN_STEPS = 8
#: MAD to standard deviation for a normal scatter.
MAD_TO_SD = 1.4826
PERIOD = "step period"
STEP = "step"
ALL = "all"


class Call(Enum):
    SLOWER = "slower"
    FASTER = "faster"
    NONE = "no difference detected"
    TOO_FEW = "too few steps to judge"


@dataclass(frozen=True)
class Spread:
    """One side's steps of one kind: how many, their median and their scatter."""

    n: int
    median_us: float
    mad_us: float
    min_us: float
    max_us: float

    @property
    def relative(self) -> float:
        """``1.4826 * MAD / median``: the step-to-step variation, as a fraction."""
        return MAD_TO_SD * self.mad_us / self.median_us if self.median_us > 0 else 0.0

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread | None:
        if not values:
            return None
        med = statistics.median(values)
        mad = statistics.median(abs(v - med) for v in values)
        return cls(len(values), med, mad, min(values), max(values))


@dataclass(frozen=True)
class StepBand:
    """One measure of one step kind on both sides, and whether its change is called."""

    measure: str
    kind: str
    a: Spread | None
    b: Spread | None
    change: float | None  # B's median over A's, minus one
    band: float | None  # the change it must exceed: max(FLOOR, both spreads)
    call: Call
    detail: str


def _values(leg: LegProfile, measure: str, kind: str) -> list[float]:
    if measure == PERIOD:
        return [us for k, us in leg.step_periods if kind in (ALL, k)]
    return [s.dur_us for s in leg.steps if kind in (ALL, s.kind)]


def bands(a: LegProfile, b: LegProfile, steps_hint: int = 32) -> tuple[StepBand, ...]:
    """Every (measure, kind) either side has steps of; ``steps_hint``: the ``--steps``
    to suggest where a window is too short to judge."""
    kinds = [k for k in phases.KINDS if any(s.kind == k for s in (*a.steps, *b.steps))]
    if len(kinds) > 1:
        kinds.append(ALL)
    out = []
    for measure in (PERIOD, STEP):
        for kind in kinds:
            sa = Spread.of(_values(a, measure, kind))
            sb = Spread.of(_values(b, measure, kind))
            if sa is None and sb is None:
                continue
            out.append(judge(measure, kind, sa, sb, steps_hint))
    return tuple(out)


def judge(
    measure: str, kind: str, a: Spread | None, b: Spread | None, steps_hint: int = 32
) -> StepBand:
    """The call on one (measure, kind): beyond the band, or not called, and why."""
    if a is None or b is None or a.n < MIN_STEPS or b.n < MIN_STEPS:
        have = f"{a.n if a else 0} and {b.n if b else 0}"
        return StepBand(measure, kind, a, b, _change(a, b), None, Call.TOO_FEW,
                        f"{have} {measure}s: at least {MIN_STEPS} a side are needed to "
                        f"judge the change against step-to-step variation; capture more "
                        f"(--steps {max(steps_hint, 4 * MIN_STEPS)})")  # fmt: skip
    change = _change(a, b)
    assert change is not None
    band = max(FLOOR, a.relative, b.relative)
    source = "the floor" if band == FLOOR else "the step-to-step spread"
    if abs(change) <= band:
        call = Call.NONE
        detail = (f"{change:+.1%} is within ±{band:.1%} ({source}; spreads "
                  f"{a.relative:.1%} / {b.relative:.1%}, floor {FLOOR:.0%})")  # fmt: skip
    else:
        call = Call.SLOWER if change > 0 else Call.FASTER
        detail = (f"{change:+.1%} is beyond ±{band:.1%} ({source}; spreads "
                  f"{a.relative:.1%} / {b.relative:.1%}, floor {FLOOR:.0%})")  # fmt: skip
    return StepBand(measure, kind, a, b, change, band, call, detail)


def _change(a: Spread | None, b: Spread | None) -> float | None:
    if a is None or b is None or a.median_us <= 0:
        return None
    return b.median_us / a.median_us - 1


def headline(rows: Sequence[StepBand]) -> StepBand | None:
    """The row a summary leads with: the step period over every step of the window
    (its one kind, or all kinds together), else the step's own duration."""
    for measure in (PERIOD, STEP):
        mine = [r for r in rows if r.measure == measure]
        if not mine:
            continue
        every = next((r for r in mine if r.kind == ALL), None)
        return every or mine[0]
    return None


def sentence(row: StepBand, names: tuple[str, str]) -> str:
    """One line for people: both medians with their spread and n, and the call."""

    def side(s: Spread | None) -> str:
        if s is None:
            return "no steps"
        return f"{s.median_us / 1000:.3g} ms ±{s.relative:.1%} (n={s.n})"

    what = row.measure if row.kind in (ALL, phases.STEP) else f"{row.kind} {row.measure}"
    return (f"Median {what}: {names[0]} {side(row.a)}, {names[1]} {side(row.b)}: "
            f"{row.call.value}, {row.detail}.")  # fmt: skip
