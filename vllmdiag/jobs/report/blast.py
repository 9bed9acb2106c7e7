"""The blast radius, from several run directories (the same recipe on other machines):
which GPU and leg fail and which pass, stated only as far as the runs show, and what
their logs say differs between a failing and a passing run (the seeds: "on H200 the same
venv passes because the CuTe wrapper is never imported")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vllmdiag.jobs.report import md
from vllmdiag.jobs.report.case import Case, key
from vllmdiag.jobs.report.inputs import RunEvidence
from vllmdiag.model.arms import ArmKind
from vllmdiag.model.fingerprint import FieldStatus, fingerprint_diff
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import BASELINE

FAILS, PASSES, OTHER, NONE = "fails", "passes", "fails differently", "no result"


@dataclass(frozen=True)
class Row:
    run: int
    name: str
    gpu: str
    leg: str
    lock: str
    state: str
    detail: str
    cells: tuple[CellResult, ...]


def section(case: Case, runs: Sequence[RunEvidence]) -> str | None:
    if len(runs) < 2:
        return None
    rows = [row for i, run in enumerate(runs, 1) for row in _rows(case, i, run)]
    table = md.table(
        ["run", "GPU", "driver", "leg", "lock", "outcome"],
        [
            [
                f"{r.run}: {md.code(r.name)}",
                md.cell(r.gpu),
                md.cell(_driver(runs[r.run - 1].envs.get(r.leg))),
                md.code(r.leg),
                md.code(r.lock) if r.lock else "—",
                md.cell(f"{r.state} ({r.detail})"),
            ]
            for r in rows
        ],
    )
    return "\n".join([table, "", *_conclusions(case, runs, rows)])


def _rows(case: Case, index: int, run: RunEvidence) -> list[Row]:
    controls = set()
    if run.recipe is not None:
        controls = {a.name for a in run.recipe.all_arms() if a.kind is ArmKind.LEG}
    cells = [r for r in run.results if r.arm == BASELINE or r.arm in controls]
    out = []
    for leg in dict.fromkeys(r.leg for r in cells):
        mine = tuple(r for r in cells if r.leg == leg)
        env = run.env_of(mine[0])
        results = [r for r in mine if r.outcome.is_result]
        failing = [r for r in results if r.outcome in (Outcome.FAIL, Outcome.TIMEOUT)]
        same = [r for r in failing if key(r) == case.signature]
        if not results:
            state, detail = NONE, "no cell gave a result"
        elif same:
            state, detail = FAILS, f"{len(same)} of {len(results)} cells"
        elif failing:
            state = OTHER
            detail = ", ".join(sorted({key(r) for r in failing}))
        else:
            state, detail = PASSES, f"{len(results)} of {len(results)} cells"
        gpu = gpu_label(env)
        lock = env.lock_hash if env is not None else mine[0].lock_hash
        out.append(Row(index, run.path.name, gpu, leg, lock, state, detail, mine))
    return out


def gpu_label(env: EnvRecord | None) -> str:
    if env is None:
        return "not recorded"
    if env.gpu.error:
        return "not recorded (nvidia-smi failed)"
    names = [g.name for g in env.gpu.gpus]
    if not names:
        return "no GPU"
    distinct = sorted(set(names))
    return ", ".join(f"{names.count(n)} × {n}" if names.count(n) > 1 else n for n in distinct)


def _driver(env: EnvRecord | None) -> str:
    drivers = sorted({g.driver for g in env.gpu.gpus}) if env is not None else []
    return ", ".join(drivers) or "—"


def _conclusions(case: Case, runs: Sequence[RunEvidence], rows: Sequence[Row]) -> list[str]:
    fails = sorted({r.gpu for r in rows if r.state == FAILS})
    passes = sorted({r.gpu for r in rows if r.state == PASSES})
    n = f"these {len(runs)} runs"
    out: list[str] = []
    if fails and passes and not set(fails) & set(passes):
        out.append(
            f"In {n} it fails only on {', '.join(fails)}, and passes on {', '.join(passes)}"
            + _same_stack(rows)
            + " No other GPU was measured."
        )
    elif fails and not passes:
        out.append(f"It fails on every GPU {n} measured: {', '.join(fails)}.")
    elif fails:
        both = sorted(set(fails) & set(passes))
        out.append(
            f"On {', '.join(both)} it both fails and passes in {n} (on different legs): the "
            "GPU alone does not decide it."
        )
    out += _differences(rows)
    return out


def _same_stack(rows: Sequence[Row]) -> str:
    failing = {r.lock for r in rows if r.state == FAILS and r.lock}
    passing = {r.lock for r in rows if r.state == PASSES and r.lock}
    same = sorted(failing & passing)
    if same:
        return f", with the same installed stack (lock {', '.join(md.code(x) for x in same)})."
    return ": the installed stacks differ too, so the GPU is not the only difference."


def _differences(rows: Sequence[Row]) -> list[str]:
    """What a failing and a passing run's logs say differs, for one workload."""
    failing = [c for r in rows if r.state == FAILS for c in r.cells if c.fingerprint]
    passing = [c for r in rows if r.state == PASSES for c in r.cells if c.fingerprint]
    for a in failing:
        b = next((c for c in passing if c.workload == a.workload), None)
        if b is None or a.fingerprint is None or b.fingerprint is None:
            continue
        diffs = [
            d
            for d in fingerprint_diff(a.fingerprint, b.fingerprint)
            if d.status is FieldStatus.DIFFERENT and d.field not in ("model", "workload")
        ]
        if diffs:
            parts = [f"{d.field} {md.code(str(d.a))} → {md.code(str(d.b))}" for d in diffs]
            return [
                f"What their logs show differs, failing → passing ({md.code(a.workload)}): "
                + "; ".join(parts)
                + "."
            ]
    return []
