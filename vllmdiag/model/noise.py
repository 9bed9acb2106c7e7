"""How much a measurement moves when nothing changes, measured from the run itself. Pure.

Every set of values taken under the same settings is evidence of spread: the repeats of
one (arm, workload), other batches of the same study slot, and A/A pairs (an arm that
did not take effect, or one whose cells are the baseline's, measured beside it).

The statistic is the relative spread ``max/min - 1`` of each such group, and a
workload's noise is the largest over its groups. For two to five values (what a timing
run has) the range is the scale estimator with the least loss against the standard
deviation, it needs no distribution, and anyone can check it by eye. It is also the
right yardstick for a ratio of medians: two groups drawn from one distribution have
medians inside the pooled range, so their ratio lies within ``max/min`` of it. Taking
the largest group is conservative: one noisy arm widens the band for every arm.

A ratio of two medians is called a difference only when it lies outside
``[1/(1+b), 1+b]``. The band ``b`` is the larger of the measured noise and :data:`FLOOR`
(5 %, the band of the B200/H200 ablation this project grew out of), doubled when the
smaller side of the comparison has only two values. A side with a single value is never
called: one value against one value is itself one A/A pair, and one pair's difference
exceeds another's half the time. Without any group of two or more values the noise is
unknown and nothing is called at all.

How often this calls noise a difference (log-normal noise, one arm beside the
baseline, 20,000 simulated runs; the rate falls as more groups widen the band): 6 %
with 3 values a side, 6–8 % with 2 (the doubled band), under 0.5 % with 5. A real
1.3x at 5 % noise is called 99 % of the time with 3 values a side, 87 % with 2.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: Differences smaller than this are never called, however quiet the run (the
#: 0.95–1.05x band of "no difference detected" of the B200/H200 ablation this project
#: grew out of).
FLOOR = 0.05
METHOD = "max/min-1 over same-settings values, largest group"
#: What to do when a run has no evidence of spread.
HOW_TO_MEASURE = "--repeats 3"


def relative_spread(values: Sequence[float]) -> float | None:
    """``max/min - 1`` over ``values``; None for fewer than two. Values that are not all
    positive fall back to ``(max - min) / |median|``."""
    if len(values) < 2:
        return None
    lo, hi = min(values), max(values)
    if lo > 0:
        return hi / lo - 1.0
    med = statistics.median(values)
    return (hi - lo) / abs(med) if med else None


@dataclass(frozen=True)
class SpreadGroup:
    """Values measured under one setting, and where they came from ("repeats of
    baseline", "A/A pair inert arm triton", "batches b1, b2")."""

    source: str
    values: tuple[float, ...]

    @property
    def spread(self) -> float | None:
        return relative_spread(self.values)


@dataclass(frozen=True)
class NoiseEstimate:
    """The noise of one workload (or study value): ``value`` the relative spread (None:
    no evidence), ``source`` the group it came from, ``n`` the values behind the
    estimate over ``groups`` groups, ``sources`` every group used."""

    value: float | None
    method: str = METHOD
    n: int = 0
    groups: int = 0
    source: str = ""
    sources: tuple[str, ...] = ()
    floor: float = FLOOR

    @property
    def band(self) -> float | None:
        """The half-width a ratio of medians over three or more values a side must
        leave to be called; None: nothing is called."""
        return None if self.value is None else max(self.value, self.floor)

    def band_for(self, n: int) -> float | None:
        """The band for a comparison whose smaller side has ``n`` values (None: not
        judged: no evidence, or a single value)."""
        band = self.band
        if band is None or n < 2:
            return None
        return 2 * band if n == 2 else band

    def calls(self, ratio: float, n: int) -> bool | None:
        """True: a difference; False: no difference detected; None: no call at all
        (no evidence of spread, or a side of one value). ``n``: values on the smaller
        side of the comparison."""
        band = self.band_for(n)
        if band is None:
            return None
        return ratio > 1.0 + band or ratio < 1.0 / (1.0 + band)

    def describe(self) -> str:
        if self.value is None:
            return f"unknown (no two values under the same settings; run with {HOW_TO_MEASURE})"
        more = f", {self.groups} groups" if self.groups > 1 else ""
        return (
            f"{self.value:.1%} ({self.method}; n={self.n}{more}; largest: {self.source}); "
            f"band {self.band:.1%}"
        )


def estimate(groups: Sequence[SpreadGroup], floor: float = FLOOR) -> NoiseEstimate:
    """The largest spread over the groups of two or more values."""
    usable = [g for g in groups if g.spread is not None]
    if not usable:
        return NoiseEstimate(None, floor=floor)
    worst = max(usable, key=lambda g: g.spread or 0.0)
    return NoiseEstimate(
        value=worst.spread,
        n=sum(len(g.values) for g in usable),
        groups=len(usable),
        source=worst.source,
        sources=tuple(g.source for g in usable),
        floor=floor,
    )


@dataclass(frozen=True)
class Drift:
    """The baseline early in a run against late in it: the medians of the first and the
    second half of its values (in run order), their ratio, and whether that ratio is
    beyond both halves' own spread and the floor (None: a half has a single value)."""

    early: float
    late: float
    n_early: int
    n_late: int
    drifted: bool | None

    @property
    def ratio(self) -> float:
        return self.late / self.early if self.early else 1.0

    def describe(self) -> str:
        move = f"{self.early:,.4g} early, {self.late:,.4g} late ({self.ratio:.2f}x)"
        if self.drifted:
            return (
                f"drifted: {move}, beyond the spread within each half: the machine changed "
                "during the run, so a difference may be drift"
            )
        if self.drifted is False:
            return f"held: {move}, inside the noise"
        return f"{move}: too few values to judge"


def drift(values: Sequence[float]) -> Drift | None:
    """The drift of ``values`` (in the order they were measured); None under two."""
    if len(values) < 2:
        return None
    half = len(values) // 2
    first, second = tuple(values[:half]), tuple(values[half:])
    early, late = statistics.median(first), statistics.median(second)
    noise = estimate([SpreadGroup("early", first), SpreadGroup("late", second)])
    called = noise.calls(late / early, min(len(first), len(second))) if early else None
    return Drift(early, late, len(first), len(second), called)
