"""The verdict: pure functions from cell results to what each arm showed.

Pass/fail matrices: an arm is *sufficient* if it flips every workload the baseline fails,
*partial* if some, *ruled out* if none, *error* if its cells gave no usable result
(the leg did not build, vllmdiag itself failed, the workload took another shape),
*inert* if it did not take effect (so it proves nothing). Controls are reported apart.
Metric matrices: per arm the median over repeats, the spread, the ratio to baseline, and
"no difference detected" when the ratio lies inside the measured spread.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from vllmdiag.model.outcome import CellResult, Outcome

BASELINE = "baseline"
#: Without repeats the spread is unknown; a ratio closer to 1 than this is not called
#: a difference.
UNREPEATED_NOISE = 0.02


class Effect(str, Enum):
    SUFFICIENT = "sufficient"
    PARTIAL = "partial"
    RULED_OUT = "ruled_out"
    ERROR = "error"
    CONTROL = "control"
    INERT = "inert"
    NOT_RUN = "not_run"


@dataclass(frozen=True)
class ArmInfo:
    name: str
    kind: str
    control: bool = False
    single_variable: bool = True
    description: str = ""


@dataclass(frozen=True)
class MetricInfo:
    name: str
    better: str = "higher"


@dataclass(frozen=True)
class Status:
    """One (arm, workload) square of the table."""

    state: str  # pass | fail | flaky | error | skipped
    label: str  # what the table shows: "rc=0", "rc=1", "timeout", "7,457", ...
    median: float | None = None
    spread: float | None = None
    ratio: float | None = None
    n: int = 0
    detected: bool | None = None


@dataclass(frozen=True)
class ArmVerdict:
    name: str
    kind: str
    effect: Effect
    detail: str
    single_variable: bool
    cells: dict[str, Status] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "effect": self.effect.value,
            "detail": self.detail,
            "single_variable": self.single_variable,
            "workloads": {w: _status_json(s) for w, s in self.cells.items()},
        }


@dataclass(frozen=True)
class Verdict:
    mode: str  # "pass-fail" | "metric"
    baseline: dict[str, Status]
    arms: tuple[ArmVerdict, ...]
    failing: tuple[str, ...]
    summary: str
    metric: str | None = None
    partial: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "metric": self.metric,
            "partial": self.partial,
            "failing_workloads": list(self.failing),
            "baseline": {w: _status_json(s) for w, s in self.baseline.items()},
            "arms": [a.to_json() for a in self.arms],
            "summary": self.summary,
        }


def _status_json(s: Status) -> dict[str, Any]:
    return {
        "state": s.state,
        "label": s.label,
        "median": s.median,
        "spread": s.spread,
        "ratio": s.ratio,
        "n": s.n,
        "difference_detected": s.detected,
    }


def decide(
    arms: Sequence[ArmInfo],
    workloads: Sequence[str],
    results: Sequence[CellResult],
    *,
    metrics: Mapping[str, MetricInfo] | None = None,
    target: str | None = None,
    inert: Mapping[str, str] | None = None,
) -> Verdict:
    """The verdict over ``results``. ``metrics`` (workload → primary metric) makes it a
    metric matrix; ``inert`` maps arm names to why they did not take effect. Cells that
    were never run (``skipped``, an interrupted run) make the verdict partial: their arms
    are *not run*, never *error*, and nothing is concluded from their absence."""
    by: dict[tuple[str, str], list[CellResult]] = {}
    for r in results:
        by.setdefault((r.arm, r.workload), []).append(r)
    skipped = sum(r.outcome is Outcome.SKIPPED for r in results)
    if metrics:
        from vllmdiag.model.metric_verdict import decide_metric

        verdict = decide_metric(arms, workloads, by, metrics, target, inert or {})
    else:
        verdict = _decide_pass_fail(arms, workloads, by, inert or {})
    if not skipped:
        return verdict
    head = (
        f"Partial run: {skipped} of {len(results)} cells were not run (the run was "
        "interrupted; resume it to finish)."
    )
    return replace(verdict, partial=True, summary=f"{head} {verdict.summary}")


def not_run(states: Mapping[str, Status], workloads: Sequence[str]) -> bool:
    """True when every one of ``workloads`` is missing only because it was not run."""
    return bool(workloads) and all(states[w].state == "skipped" for w in workloads)


def pass_fail_status(cells: Sequence[CellResult]) -> Status:
    results = [c for c in cells if c.outcome.is_result]
    if not results:
        if any(c.outcome is Outcome.ERROR for c in cells):
            return Status("error", "error", n=0)
        return Status("skipped", "—", n=0)
    passes = sum(c.outcome is Outcome.PASS for c in results)
    labels = sorted({_label(c) for c in results})
    label = " / ".join(labels)
    if passes == len(results):
        return Status("pass", label, n=len(results))
    if passes == 0:
        return Status("fail", label, n=len(results))
    return Status("flaky", f"{passes}/{len(results)} pass", n=len(results))


def _label(c: CellResult) -> str:
    return "timeout" if c.outcome is Outcome.TIMEOUT else f"rc={c.rc}"


def _decide_pass_fail(
    arms: Sequence[ArmInfo],
    workloads: Sequence[str],
    by: Mapping[tuple[str, str], list[CellResult]],
    inert: Mapping[str, str],
) -> Verdict:
    base = {w: pass_fail_status(by.get((BASELINE, w), [])) for w in workloads}
    failing = tuple(w for w in workloads if base[w].state in ("fail", "flaky"))
    verdicts = []
    for arm in arms:
        cells = {w: pass_fail_status(by.get((arm.name, w), [])) for w in workloads}
        effect, detail = _pf_effect(arm, cells, failing, base, inert)
        verdicts.append(ArmVerdict(arm.name, arm.kind, effect, detail, arm.single_variable, cells))
    summary = _pf_summary(verdicts, failing, base)
    return Verdict("pass-fail", base, tuple(verdicts), failing, summary)


def _pf_effect(
    arm: ArmInfo,
    cells: Mapping[str, Status],
    failing: Sequence[str],
    base: Mapping[str, Status],
    inert: Mapping[str, str],
) -> tuple[Effect, str]:
    if arm.control:
        fails = [w for w in failing if cells[w].state in ("fail", "flaky")]
        if failing and len(fails) == len(failing):
            return Effect.CONTROL, "fails too: the failure is not specific to the baseline leg"
        if failing and not fails and all(cells[w].state == "pass" for w in failing):
            return Effect.CONTROL, "passes where the baseline fails: the failure is leg-specific"
        return Effect.CONTROL, "mixed: " + ", ".join(f"{w} {cells[w].state}" for w in failing)
    if arm.name in inert:
        return Effect.INERT, inert[arm.name]
    if not_run(cells, list(failing or cells)):
        return Effect.NOT_RUN, "not run: the run stopped before its cells"
    errors = [w for w in (failing or cells) if cells[w].state in ("error", "skipped")]
    if errors:
        return Effect.ERROR, f"no result on {', '.join(errors)} (see the cells' reasons)"
    if not failing:
        broken = [w for w in cells if cells[w].state == "fail" and base[w].state == "pass"]
        extra = f"; it breaks {', '.join(broken)}" if broken else ""
        return Effect.RULED_OUT, f"the baseline passes everywhere: nothing to flip{extra}"
    flipped = [w for w in failing if cells[w].state == "pass"]
    note = "" if arm.single_variable else " (compound arm: not a single-variable result)"
    if len(flipped) == len(failing):
        every = (
            "the failing workload" if len(failing) == 1 else f"all {len(failing)} failing workloads"
        )
        return Effect.SUFFICIENT, f"flips {every}{note}"
    if flipped:
        return Effect.PARTIAL, f"flips {len(flipped)} of {len(failing)}: {', '.join(flipped)}{note}"
    return Effect.RULED_OUT, f"flips none of the {len(failing)} failing workloads"


def _pf_summary(
    verdicts: Sequence[ArmVerdict], failing: Sequence[str], base: Mapping[str, Status]
) -> str:
    if not failing:
        errs = [w for w, s in base.items() if s.state in ("error", "skipped")]
        if errs:
            return f"The baseline has no result on {', '.join(errs)}: nothing can be concluded."
        return "The baseline passes on every workload: there is no failure to explain."
    parts = [f"The baseline fails on {len(failing)} of {len(base)} workloads."]
    parts += _effect_sentences(verdicts)
    return " ".join(parts)


def _effect_sentences(verdicts: Sequence[ArmVerdict]) -> list[str]:
    parts: list[str] = []
    groups: dict[Effect, list[ArmVerdict]] = {}
    for v in verdicts:
        groups.setdefault(v.effect, []).append(v)
    for v in groups.get(Effect.SUFFICIENT, []):
        single = "single-variable " if v.single_variable else "compound "
        parts.append(f"Sufficient ({single}arm): {v.name}, {v.detail}.")
    for v in groups.get(Effect.PARTIAL, []):
        parts.append(f"Partial: {v.name}, {v.detail}.")
    if groups.get(Effect.RULED_OUT):
        parts.append("Ruled out: " + ", ".join(v.name for v in groups[Effect.RULED_OUT]) + ".")
    for v in groups.get(Effect.INERT, []):
        parts.append(f"Inert (proves nothing): {v.name}, {v.detail}.")
    for v in groups.get(Effect.ERROR, []):
        parts.append(f"Error: {v.name}, {v.detail}.")
    for v in groups.get(Effect.CONTROL, []):
        parts.append(f"Control {v.name} {v.detail}.")
    if groups.get(Effect.NOT_RUN):
        parts.append("Not run: " + ", ".join(v.name for v in groups[Effect.NOT_RUN]) + ".")
    if verdicts and not groups.get(Effect.SUFFICIENT) and not groups.get(Effect.PARTIAL):
        if groups.get(Effect.NOT_RUN):
            parts.append("No arm that ran changes the outcome; the arms not run may.")
        else:
            parts.append("No arm changes the outcome.")
    return parts


def median_spread(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Median and relative spread ((max - min) / median); spread None for < 2 values."""
    if not values:
        return None, None
    med = statistics.median(values)
    if len(values) < 2 or med == 0:
        return med, None
    return med, (max(values) - min(values)) / abs(med)
