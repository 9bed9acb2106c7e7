"""The verdict of a metric matrix: medians, spreads, ratios and what they support."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.verdict import (
    BASELINE,
    UNREPEATED_NOISE,
    ArmInfo,
    ArmVerdict,
    Effect,
    MetricInfo,
    Square,
    SquareState,
    Verdict,
    VerdictMode,
    _effect_sentences,
    median_spread,
    not_run,
)


def metric_status(cells: Sequence[CellResult], metric: str, base: Square | None) -> Square:
    values = [c.metrics[metric] for c in cells if c.outcome is Outcome.PASS and metric in c.metrics]
    if not values:
        if any(c.outcome in (Outcome.FAIL, Outcome.TIMEOUT) for c in cells):
            rcs = sorted(
                {
                    "timeout" if c.outcome is Outcome.TIMEOUT else f"rc={c.rc}"
                    for c in cells
                    if c.outcome.is_result
                }
            )
            return Square(SquareState.FAIL, " / ".join(rcs), n=0)
        if any(c.outcome is Outcome.ERROR for c in cells):
            return Square(SquareState.ERROR, "error", n=0)
        return Square(SquareState.SKIPPED, "—", n=0)
    med, spread = median_spread(values)
    assert med is not None
    ratio = detected = None
    if base is not None and base.median:
        ratio = med / base.median
        noise = _noise(spread, base.spread)
        detected = abs(ratio - 1.0) > noise
    label = f"{med:,.4g}" if abs(med) < 1000 else f"{med:,.0f}"
    if spread is not None:
        label += f" ±{spread * 50:.1f}%"
    return Square(SquareState.PASS, label, med, spread, ratio, len(values), detected)


def _noise(a: float | None, b: float | None) -> float:
    known = [x for x in (a, b) if x is not None]
    return max(known) if known else UNREPEATED_NOISE


def decide_metric(
    arms: Sequence[ArmInfo],
    workloads: Sequence[str],
    by: Mapping[tuple[str, str], list[CellResult]],
    metrics: Mapping[str, MetricInfo],
    target: str | None,
    inert: Mapping[str, str],
) -> Verdict:
    base: dict[str, Square] = {}
    for w in workloads:
        m = metrics.get(w)
        base[w] = (
            metric_status(by.get((BASELINE, w), []), m.name, None)
            if m
            else Square(SquareState.SKIPPED, "—")
        )
    controls = [a for a in arms if a.control]
    goal = target or (controls[0].name if controls else None)
    table: dict[str, dict[str, Square]] = {}
    for arm in arms:
        table[arm.name] = {}
        for w in workloads:
            m = metrics.get(w)
            cells = by.get((arm.name, w), [])
            table[arm.name][w] = (
                metric_status(cells, m.name, base[w]) if m else Square(SquareState.SKIPPED, "—")
            )
    verdicts = []
    for arm in arms:
        effect, detail = _arm_effect(arm, workloads, metrics, base, table, goal, inert)
        verdicts.append(
            ArmVerdict(arm.name, arm.kind, effect, detail, arm.single_variable, table[arm.name])
        )
    names = sorted({m.name for m in metrics.values()})
    summary = " ".join(_summary_head(base, goal, table, workloads) + _effect_sentences(verdicts))
    return Verdict(VerdictMode.METRIC, base, tuple(verdicts), (), summary, ", ".join(names))


def _arm_effect(
    arm: ArmInfo,
    workloads: Sequence[str],
    metrics: Mapping[str, MetricInfo],
    base: Mapping[str, Square],
    table: Mapping[str, Mapping[str, Square]],
    goal: str | None,
    inert: Mapping[str, str],
) -> tuple[Effect, str]:
    cells = table[arm.name]
    if arm.control:
        parts = [f"{w} {_ratio(cells[w])}" for w in workloads if cells[w].ratio is not None]
        return Effect.CONTROL, "vs baseline: " + (", ".join(parts) or "no result")
    if arm.name in inert:
        return Effect.INERT, inert[arm.name]
    if not_run(cells, [w for w in workloads if w in metrics]):
        return Effect.NOT_RUN, "not run: the run stopped before its cells"
    failed = [w for w in workloads if cells[w].state in ("fail", "error", "skipped")]
    if failed:
        states = ", ".join(f"{w} {cells[w].label}" for w in failed)
        return Effect.ERROR, f"no measurement on {states}"
    per: list[tuple[str, str]] = []  # (workload, sufficient|partial|none)
    notes = []
    for w in workloads:
        s, m, b = cells[w], metrics.get(w), base[w]
        if m is None or s.ratio is None or b.median is None:
            continue
        improves = s.difference_detected and ((s.ratio > 1) == (m.better == "higher"))
        tgt = table[goal][w] if goal else None
        if improves and tgt is not None and tgt.median is not None and s.median is not None:
            gap = tgt.median - b.median
            closed = (s.median - b.median) / gap if gap else 1.0
            reached = closed >= 1.0 or abs(s.median / tgt.median - 1) <= _noise(
                s.spread, tgt.spread
            )
            per.append((w, "sufficient" if reached else "partial"))
            notes.append(f"{w} {_ratio(s)}, closes {min(closed, 9.99):.0%} of the gap to {goal}")
        elif improves:
            per.append((w, "partial"))
            notes.append(f"{w} {_ratio(s)} (no target to call it sufficient)")
        else:
            per.append((w, "none"))
            what = "no difference detected" if not s.difference_detected else "worse"
            notes.append(f"{w} {_ratio(s)}, {what}")
    detail = "; ".join(notes) if notes else "no comparable measurement"
    kinds = {k for _, k in per}
    if kinds == {"sufficient"}:
        return Effect.SUFFICIENT, detail
    if kinds & {"sufficient", "partial"}:
        return Effect.PARTIAL, detail
    return Effect.RULED_OUT, detail


def _ratio(s: Square) -> str:
    return f"{s.ratio:.2f}x" if s.ratio is not None else "n/a"


def _summary_head(
    base: Mapping[str, Square],
    goal: str | None,
    table: Mapping[str, Mapping[str, Square]],
    workloads: Sequence[str],
) -> list[str]:
    head = []
    if goal:
        gaps = [
            f"{w} {_ratio(table[goal][w])}" for w in workloads if table[goal][w].ratio is not None
        ]
        if gaps:
            head.append(f"Target {goal} vs baseline: {', '.join(gaps)}.")
    unrepeated = [w for w, s in base.items() if s.n == 1]
    if unrepeated:
        head.append(
            "Single measurements (no repeats): spread unknown, differences under "
            f"{UNREPEATED_NOISE:.0%} are not called."
        )
    return head
