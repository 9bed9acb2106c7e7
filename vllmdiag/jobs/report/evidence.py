"""The single-variable evidence: the matrix's table (one row per arm, one column per
workload), then what each arm shows: the sufficient change (and every package its leg
moved with it), what was ruled out (still failing, and whether the same way), what
proves nothing (inert), and what each arm's log says it changed (fingerprint fields)."""

from __future__ import annotations

from collections.abc import Sequence

from vllmdiag.jobs.report import freeze, md
from vllmdiag.jobs.report.case import Case, key
from vllmdiag.model.arms import Arm
from vllmdiag.model.fingerprint import FieldStatus, fingerprint_diff
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.verdict import BASELINE, ArmVerdict, Effect, Square


def section(case: Case) -> str | None:
    run, verdict = case.run, case.run.verdict
    if verdict is None or not verdict.arms:
        return None
    arms = {a.name: a for a in run.recipe.all_arms()} if run.recipe is not None else {}
    workloads = list(verdict.baseline)
    header = ["arm", "change", *(md.cell(w) for w in workloads), "effect"]
    rows = [["baseline", "—", *(_square(verdict.baseline.get(w)) for w in workloads), ""]]
    for a in verdict.arms:
        effect = a.effect.value.replace("_", " ") + ("" if a.single_variable else " (compound)")
        row = [md.code(a.name), _change(arms.get(a.name)), *_squares(a, workloads), effect]
        if a.effect is Effect.SUFFICIENT:
            row = [f"**{c}**" if c else c for c in row]
        rows.append(row)
    out = [md.table(header, rows), "", f"Verdict: {verdict.summary}"]
    lines = [_line(case, a, arms.get(a.name)) for a in verdict.arms]
    out += ["", *(f"- {line}" for line in lines)]
    return "\n".join(out)


def _square(s: Square | None) -> str:
    return "—" if s is None else md.cell(s.label)


def _squares(a: ArmVerdict, workloads: Sequence[str]) -> list[str]:
    return [_square(a.workloads.get(w)) for w in workloads]


def _change(arm: Arm | None) -> str:
    return md.cell(arm.describe()) if arm is not None else "—"


def _line(case: Case, a: ArmVerdict, arm: Arm | None) -> str:
    name = md.code(a.name)
    cells = [r for r in case.run.results if r.arm == a.name]
    if a.effect is Effect.SUFFICIENT:
        return f"{name} is sufficient: {a.detail}.{_moved(case, cells)}"
    if a.effect is Effect.PARTIAL:
        return f"{name} is partial: {a.detail}.{_took(case, cells)}"
    if a.effect is Effect.RULED_OUT:
        return f"{name} is ruled out: {a.detail}{_same_way(case, cells)}.{_took(case, cells)}"
    if a.effect is Effect.INERT:
        return f"{name} proves nothing (inert): {a.detail}."
    if a.effect is Effect.CONTROL:
        return f"{name} (a control) {a.detail}."
    return f"{name}: {a.effect.value.replace('_', ' ')}: {a.detail}."


def _same_way(case: Case, cells: Sequence[CellResult]) -> str:
    failing = [r for r in cells if r.outcome in (Outcome.FAIL, Outcome.TIMEOUT)]
    if not failing:
        return ""
    other = sorted({key(r) for r in failing} - {case.signature})
    if not other:
        return ", failing the same way"
    return f", failing differently: {', '.join(md.code(s) for s in other)}"


def _took(case: Case, cells: Sequence[CellResult]) -> str:
    """What the arm's own log says it changed, against the baseline cell."""
    changed: dict[str, tuple[object, object]] = {}
    for cell in cells:
        base = case.run.cell(BASELINE, cell.workload, cell.repeat)
        if base is None or base.fingerprint is None or cell.fingerprint is None:
            continue
        for d in fingerprint_diff(base.fingerprint, cell.fingerprint):
            if d.status is FieldStatus.DIFFERENT and d.field != "workload":
                changed.setdefault(d.field, (d.a, d.b))
    if not changed:
        return ""
    parts = [f"{f} {_v(a)} → {_v(b)}" for f, (a, b) in changed.items()]
    return f" Its log shows it took effect: {'; '.join(parts)}."


def _v(value: object) -> str:
    if isinstance(value, tuple):
        value = ", ".join(map(str, value)) or "none"
    return md.code(str(value))


def _moved(case: Case, cells: Sequence[CellResult]) -> str:
    """The packages the sufficient arm's leg has at other versions than the failing
    leg: a pin moves what depends on it too, and the reader should see it."""
    fix = case.fix
    if fix is None or fix.env is None or case.env is None or fix.env.leg == case.env.leg:
        return _took(case, cells)
    a = freeze.read(case.env.freeze).versions
    b = freeze.read(fix.env.freeze).versions
    moved = freeze.changed(a, b)
    if not moved or not a or not b:
        return _took(case, cells)
    parts = [f"{name} {va or '(absent)'} → {vb or '(absent)'}" for name, va, vb in moved]
    return (
        f" Its leg {md.code(fix.env.leg)} differs from the failing leg "
        f"{md.code(case.env.leg)} in {md.plural(len(moved), 'package')}: {'; '.join(parts)}."
    )
