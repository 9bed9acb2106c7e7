"""The verdict's values, and the pass/fail rule: what each arm showed.
(:func:`vllmdiag.model.decide.decide` picks the pass/fail or the metric rule.)

Pass/fail matrices: an arm is *sufficient* if it flips every workload the baseline fails,
*partial* if some, *ruled out* if none, *error* if its cells gave no usable result
(the leg did not build, vllmdiag itself failed, the workload took another shape),
*inert* if it did not take effect (so it proves nothing). Controls are reported apart.
Metric matrices: per arm the median over repeats, the spread, the ratio to baseline, and
"no difference detected" when the ratio lies inside the noise band measured from the run
itself (:mod:`vllmdiag.model.noise`); with no evidence of spread nothing is called.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from vllmdiag.model.noise import Drift, NoiseEstimate
from vllmdiag.model.outcome import CellResult, Outcome

BASELINE = "baseline"


class Effect(str, Enum):
    SUFFICIENT = "sufficient"
    PARTIAL = "partial"
    RULED_OUT = "ruled_out"
    ERROR = "error"
    CONTROL = "control"
    INERT = "inert"
    NOT_RUN = "not_run"
    #: A metric arm whose ratio cannot be judged: no evidence of spread, or single values.
    NOT_CALLED = "not_called"


@dataclass(frozen=True)
class ArmInfo:
    name: str
    kind: str
    control: bool = False
    single_variable: bool = True
    description: str = ""
    #: Its cells are the baseline's (same leg, environment and flags): an A/A pair.
    same_as_baseline: bool = False


@dataclass(frozen=True)
class MetricInfo:
    name: str
    better: str = "higher"


class SquareState(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    FLAKY = "flaky"
    ERROR = "error"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Square:
    """One (arm, workload) square of the table: its state, what the table shows
    ("rc=0", "timeout", "7,457 ±0.4%", ...), and for metric matrices the median, the
    spread over repeats and the ratio to the baseline. ``difference_detected`` None:
    not judged (the baseline itself, or no evidence of spread)."""

    state: SquareState
    label: str
    median: float | None = None
    spread: float | None = None
    ratio: float | None = None
    n: int = 0
    difference_detected: bool | None = None


@dataclass(frozen=True)
class ArmVerdict:
    name: str
    kind: str
    effect: Effect
    detail: str
    single_variable: bool
    workloads: dict[str, Square] = field(default_factory=dict)


class VerdictMode(str, Enum):
    PASS_FAIL = "pass-fail"
    METRIC = "metric"


@dataclass(frozen=True)
class Verdict:
    """What the matrix showed: per arm its effect, with the table's squares."""

    mode: VerdictMode
    baseline: dict[str, Square]
    arms: tuple[ArmVerdict, ...]
    failing_workloads: tuple[str, ...]
    summary: str
    metric: str | None = None
    partial: bool = False
    #: Metric matrices: each workload's noise estimate, measured from the run.
    noise: dict[str, NoiseEstimate] = field(default_factory=dict)
    #: Metric matrices whose baseline was measured four times or more: early vs late.
    drift: dict[str, Drift] = field(default_factory=dict)


def not_run(states: Mapping[str, Square], workloads: Sequence[str]) -> bool:
    """True when every one of ``workloads`` is missing only because it was not run."""
    return bool(workloads) and all(states[w].state is SquareState.SKIPPED for w in workloads)


def pass_fail_status(cells: Sequence[CellResult]) -> Square:
    results = [c for c in cells if c.outcome.is_result]
    if not results:
        if any(c.outcome is Outcome.ERROR for c in cells):
            return Square(SquareState.ERROR, "error", n=0)
        return Square(SquareState.SKIPPED, "—", n=0)
    passes = sum(c.outcome is Outcome.PASS for c in results)
    labels = sorted({_label(c) for c in results})
    label = " / ".join(labels)
    if passes == len(results):
        return Square(SquareState.PASS, label, n=len(results))
    if passes == 0:
        return Square(SquareState.FAIL, label, n=len(results))
    return Square(SquareState.FLAKY, f"{passes}/{len(results)} pass", n=len(results))


def _label(c: CellResult) -> str:
    return "timeout" if c.outcome is Outcome.TIMEOUT else f"rc={c.rc}"


def _decide_pass_fail(
    arms: Sequence[ArmInfo],
    workloads: Sequence[str],
    by: Mapping[tuple[str, str], list[CellResult]],
    inert: Mapping[str, str],
) -> Verdict:
    base = {w: pass_fail_status(by.get((BASELINE, w), [])) for w in workloads}
    failing = tuple(w for w in workloads if base[w].state in (SquareState.FAIL, SquareState.FLAKY))
    verdicts = []
    for arm in arms:
        cells = {w: pass_fail_status(by.get((arm.name, w), [])) for w in workloads}
        effect, detail = _pf_effect(arm, cells, failing, base, inert)
        verdicts.append(ArmVerdict(arm.name, arm.kind, effect, detail, arm.single_variable, cells))
    summary = _pf_summary(verdicts, failing, base)
    return Verdict(VerdictMode.PASS_FAIL, base, tuple(verdicts), failing, summary)


def _pf_effect(
    arm: ArmInfo,
    cells: Mapping[str, Square],
    failing: Sequence[str],
    base: Mapping[str, Square],
    inert: Mapping[str, str],
) -> tuple[Effect, str]:
    if arm.control:
        fails = [w for w in failing if cells[w].state in (SquareState.FAIL, SquareState.FLAKY)]
        if failing and len(fails) == len(failing):
            return Effect.CONTROL, "fails too: the failure is not specific to the baseline leg"
        if failing and not fails and all(cells[w].state is SquareState.PASS for w in failing):
            return Effect.CONTROL, "passes where the baseline fails: the failure is leg-specific"
        return Effect.CONTROL, "mixed: " + ", ".join(f"{w} {cells[w].state.value}" for w in failing)
    if arm.name in inert:
        return Effect.INERT, inert[arm.name]
    if not_run(cells, list(failing or cells)):
        return Effect.NOT_RUN, "not run: the run stopped before its cells"
    errors = [
        w for w in (failing or cells) if cells[w].state in (SquareState.ERROR, SquareState.SKIPPED)
    ]
    if errors:
        return Effect.ERROR, f"no result on {', '.join(errors)} (see the cells' reasons)"
    if not failing:
        broken = [
            w
            for w in cells
            if cells[w].state is SquareState.FAIL and base[w].state is SquareState.PASS
        ]
        extra = f"; it breaks {', '.join(broken)}" if broken else ""
        return Effect.RULED_OUT, f"the baseline passes everywhere: nothing to flip{extra}"
    flipped = [w for w in failing if cells[w].state is SquareState.PASS]
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
    verdicts: Sequence[ArmVerdict], failing: Sequence[str], base: Mapping[str, Square]
) -> str:
    if not failing:
        errs = [w for w, s in base.items() if s.state in (SquareState.ERROR, SquareState.SKIPPED)]
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
    if groups.get(Effect.NOT_CALLED):
        names = ", ".join(v.name for v in groups[Effect.NOT_CALLED])
        parts.append(f"Not called (the run cannot separate them from noise): {names}.")
    for v in groups.get(Effect.INERT, []):
        parts.append(f"Inert (proves nothing): {v.name}, {v.detail}.")
    for v in groups.get(Effect.ERROR, []):
        parts.append(f"Error: {v.name}, {v.detail}.")
    for v in groups.get(Effect.CONTROL, []):
        parts.append(f"Control {v.name} {v.detail}.")
    if groups.get(Effect.NOT_RUN):
        parts.append("Not run: " + ", ".join(v.name for v in groups[Effect.NOT_RUN]) + ".")
    if verdicts and not groups.get(Effect.SUFFICIENT) and not groups.get(Effect.PARTIAL):
        if groups.get(Effect.NOT_CALLED):
            pass  # the noise sentence says what to do
        elif groups.get(Effect.NOT_RUN):
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
