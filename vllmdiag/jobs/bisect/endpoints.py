"""The rule a metric bisection's two ends must pass before it starts (pure).

Both ends are measured with repeats. They differ only when the distance between their
medians is larger than both their spreads together (max - min of each end's repeats) AND
than a floor of 5 % of the good end's median: a difference inside the noise, or one too
small to be worth ten steps, is refused, with both ends' values said.

The derived threshold is the midpoint of the two medians as a ratio to the good end's
(``metric_verdict``'s convention: below 1 for a higher-is-better metric, above 1 for a
lower-is-better one). This is the one place the rule lives; the shared noise model of
the matrix is meant to replace :func:`endpoint_gap` without its callers changing.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

FLOOR = 0.05


@dataclass(frozen=True)
class EndpointGap:
    """What the rule found: each end's median and spread, whether they differ, why, and
    the threshold a bisection would use (None when refused)."""

    good: float
    bad: float
    good_spread: float
    bad_spread: float
    differs: bool
    reason: str
    threshold: float | None


def _fmt(values: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def endpoint_gap(
    good_values: Sequence[float], bad_values: Sequence[float], *, floor: float = FLOOR
) -> EndpointGap:
    """Do the two ends differ beyond their measured noise and ``floor``?"""
    if not good_values or not bad_values:
        raise ValueError("both ends need at least one value")
    good, bad = statistics.median(good_values), statistics.median(bad_values)
    gs, bs = max(good_values) - min(good_values), max(bad_values) - min(bad_values)
    gap = abs(bad - good)
    said = f"good end {good:g} ({_fmt(good_values)}), bad end {bad:g} ({_fmt(bad_values)})"
    if good == 0:
        return EndpointGap(good, bad, gs, bs, False, f"the good end measures 0: {said}", None)
    if gap <= gs + bs:
        why = f"the ends differ by {gap:g}, within their spread {gs + bs:g}: {said}"
        return EndpointGap(good, bad, gs, bs, False, why, None)
    if gap <= floor * abs(good):
        why = f"the ends differ by {gap / abs(good):.1%}, under the {floor:.0%} floor: {said}"
        return EndpointGap(good, bad, gs, bs, False, why, None)
    threshold = ((good + bad) / 2) / good
    why = f"the ends differ by {gap / abs(good):.1%}, beyond their spread {gs + bs:g}: {said}"
    return EndpointGap(good, bad, gs, bs, True, why, round(threshold, 6))
