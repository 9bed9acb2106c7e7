"""The verdict of a metric matrix: medians, spreads, ratios and what they support.

Each workload's noise is measured from the run (:mod:`vllmdiag.model.noise`): the
repeats of the baseline and of every arm, and A/A pairs (an inert arm, or an arm or
control whose cells are the baseline's, pooled with the baseline). A ratio is called a
difference only outside that noise band (never narrower than the 5 % floor); with no
evidence of spread it is not called at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from vllmdiag.model.noise import HOW_TO_MEASURE, NoiseEstimate, SpreadGroup, drift, estimate
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.verdict import (
    BASELINE,
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


def passing_values(cells: Sequence[CellResult], metric: str) -> list[float]:
    return [c.metrics[metric] for c in cells if c.outcome is Outcome.PASS and metric in c.metrics]


def metric_status(
    cells: Sequence[CellResult],
    metric: str,
    base: Square | None,
    noise: NoiseEstimate | None = None,
) -> Square:
    """The square of ``cells``; with ``base`` its ratio to it, judged against ``noise``
    (None or unknown: not judged)."""
    values = passing_values(cells, metric)
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
        detected = noise.calls(ratio, min(len(values), base.n)) if noise is not None else None
    label = f"{med:,.4g}" if abs(med) < 1000 else f"{med:,.0f}"
    if spread is not None:
        label += f" ±{spread * 50:.1f}%"
    return Square(SquareState.PASS, label, med, spread, ratio, len(values), detected)


def workload_noise(
    arms: Sequence[ArmInfo],
    cells: Mapping[str, Sequence[CellResult]],
    metric: str,
    inert: Mapping[str, str],
) -> NoiseEstimate:
    """The noise of one workload from ``cells`` (column → its cells there): the
    baseline's repeats, each arm's repeats, and each A/A pair pooled with the baseline."""

    def passing(column: str) -> list[CellResult]:
        return _passing(cells.get(column, []), metric)

    base = passing(BASELINE)
    groups: list[tuple[SpreadGroup, set[str]]] = [
        (SpreadGroup("repeats of baseline", _values(base, metric)), {c.id for c in base})
    ]
    for arm in arms:
        own = passing(arm.name)
        kind = "control" if arm.control else "arm"
        if arm.name in inert or arm.same_as_baseline:
            why = "inert" if arm.name in inert else "baseline-equal"
            pooled = base + own
            group = SpreadGroup(f"A/A pair {why} {kind} {arm.name}", _values(pooled, metric))
            groups.append((group, {c.id for c in pooled}))
        else:
            group = SpreadGroup(f"repeats of {kind} {arm.name}", _values(own, metric))
            groups.append((group, {c.id for c in own}))
    found = estimate([g for g, _ in groups])
    used = set().union(*(ids for g, ids in groups if g.spread is not None))
    return replace(found, n=len(used)) if found.value is not None else found


def _passing(cells: Sequence[CellResult], metric: str) -> list[CellResult]:
    return [c for c in cells if c.outcome is Outcome.PASS and metric in c.metrics]


def _values(cells: Sequence[CellResult], metric: str) -> tuple[float, ...]:
    return tuple(c.metrics[metric] for c in cells)


def decide_metric(
    arms: Sequence[ArmInfo],
    workloads: Sequence[str],
    by: Mapping[tuple[str, str], list[CellResult]],
    metrics: Mapping[str, MetricInfo],
    target: str | None,
    inert: Mapping[str, str],
) -> Verdict:
    noise: dict[str, NoiseEstimate] = {}
    base: dict[str, Square] = {}
    for w in workloads:
        m = metrics.get(w)
        if m is None:
            base[w] = Square(SquareState.SKIPPED, "—")
            continue
        columns = {a: by.get((a, w), []) for a in (BASELINE, *(x.name for x in arms))}
        noise[w] = workload_noise(arms, columns, m.name, inert)
        base[w] = metric_status(by.get((BASELINE, w), []), m.name, None)
    controls = [a for a in arms if a.control]
    goal = target or (controls[0].name if controls else None)
    table: dict[str, dict[str, Square]] = {}
    for arm in arms:
        table[arm.name] = {}
        for w in workloads:
            m = metrics.get(w)
            cells = by.get((arm.name, w), [])
            table[arm.name][w] = (
                metric_status(cells, m.name, base[w], noise[w])
                if m
                else Square(SquareState.SKIPPED, "—")
            )
    verdicts = []
    for arm in arms:
        effect, detail = _arm_effect(arm, workloads, metrics, base, table, goal, inert, noise)
        verdicts.append(
            ArmVerdict(arm.name, arm.kind, effect, detail, arm.single_variable, table[arm.name])
        )
    names = sorted({m.name for m in metrics.values()})
    drifts = {}
    for w, m in metrics.items():
        # cells arrive in run order: the baseline's values, early to late
        found = drift(_values(_passing(by.get((BASELINE, w), []), m.name), m.name))
        if found is not None and found.n_early >= 2:
            drifts[w] = found
    head = _summary_head(goal, table, workloads) + noise_sentences(noise, base)
    head += [f"Baseline on {w} {d.describe()}." for w, d in drifts.items()]
    summary = " ".join(head + _effect_sentences(verdicts))
    return Verdict(
        VerdictMode.METRIC,
        base,
        tuple(verdicts),
        (),
        summary,
        ", ".join(names),
        noise=noise,
        drift=drifts,
    )


def _arm_effect(
    arm: ArmInfo,
    workloads: Sequence[str],
    metrics: Mapping[str, MetricInfo],
    base: Mapping[str, Square],
    table: Mapping[str, Mapping[str, Square]],
    goal: str | None,
    inert: Mapping[str, str],
    noise: Mapping[str, NoiseEstimate],
) -> tuple[Effect, str]:
    cells = table[arm.name]
    if arm.control:
        parts = [f"{w} {_judged(cells[w])}" for w in workloads if cells[w].ratio is not None]
        aa = " (the baseline's settings: an A/A pair)" if arm.same_as_baseline else ""
        return Effect.CONTROL, "vs baseline: " + (", ".join(parts) or "no result") + aa
    if arm.name in inert or arm.same_as_baseline:
        why = inert.get(arm.name) or (
            "its cells run exactly as the baseline's (the same leg, environment and flags)"
        )
        measured = [f"{w} {_ratio(cells[w])}" for w in workloads if cells[w].ratio is not None]
        if measured:
            return Effect.INERT, (
                f"{why}; its {', '.join(measured)} against the baseline is measured noise "
                "(an A/A pair)"
            )
        return Effect.INERT, why
    if not_run(cells, [w for w in workloads if w in metrics]):
        return Effect.NOT_RUN, "not run: the run stopped before its cells"
    failed = [
        w
        for w in workloads
        if cells[w].state in (SquareState.FAIL, SquareState.ERROR, SquareState.SKIPPED)
    ]
    if failed:
        states = ", ".join(f"{w} {cells[w].label}" for w in failed)
        return Effect.ERROR, f"no measurement on {states}"
    per: list[tuple[str, str]] = []  # (workload, sufficient|partial|none|uncalled)
    notes = []
    for w in workloads:
        s, m, b = cells[w], metrics.get(w), base[w]
        if m is None or s.ratio is None or b.median is None:
            continue
        if s.difference_detected is None:
            per.append((w, "uncalled"))
            why = "a single value" if min(s.n, b.n) < 2 else "no evidence of spread"
            notes.append(f"{w} {_ratio(s)} measured, not called ({why})")
            continue
        improves = s.difference_detected and ((s.ratio > 1) == (m.better == "higher"))
        tgt = table[goal][w] if goal else None
        if improves and tgt is not None and tgt.median is not None and s.median is not None:
            gap = tgt.median - b.median
            closed = (s.median - b.median) / gap if gap else 1.0
            reached = (
                closed >= 1.0 or noise[w].calls(s.median / tgt.median, min(s.n, tgt.n)) is False
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
    if "uncalled" in kinds:
        return Effect.NOT_CALLED, detail
    return Effect.RULED_OUT, detail


def _ratio(s: Square) -> str:
    return f"{s.ratio:.2f}x" if s.ratio is not None else "n/a"


def _judged(s: Square) -> str:
    if s.difference_detected is None:
        return f"{_ratio(s)} (not called)"
    if not s.difference_detected:
        return f"{_ratio(s)} (no difference detected)"
    return _ratio(s)


def noise_sentences(noise: Mapping[str, NoiseEstimate], base: Mapping[str, Square]) -> list[str]:
    """What each workload's noise is and where it came from; where nothing can be
    called, and how to change that."""
    out = []
    unknown, single = [], []
    for w, n in noise.items():
        count = base[w].n if w in base else 0
        band = n.band_for(max(count, 3)) if count != 2 else n.band_for(2)
        if band is None:
            unknown.append(w)
            continue
        out.append(
            f"Noise on {w}: {n.describe()}; ratios inside "
            f"{1 / (1 + band):.2f}–{1 + band:.2f}x are not called"
            + (" (band doubled: two values a side)." if count == 2 else ".")
        )
        if count < 2:
            single.append(w)
    if unknown:
        out.append(
            f"No evidence of spread on {', '.join(unknown)} (one value per arm and no A/A "
            f"pair): no difference is called there; run with {HOW_TO_MEASURE}."
        )
    if single:
        out.append(
            f"One value per arm on {', '.join(single)}: a single value is never called "
            f"against another; run with {HOW_TO_MEASURE}."
        )
    return out


def _summary_head(
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
    return head
