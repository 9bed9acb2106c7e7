"""The failure a report is about: the first run with a failing cell, its most common
root cause, the smallest cell that shows it, and the single-variable change that made
it pass (the matrix's sufficient arm), if one did."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from vllmdiag.errors import VllmdiagError
from vllmdiag.jobs.report.inputs import RunEvidence
from vllmdiag.model.arms import Arm, ArmKind
from vllmdiag.model.outcome import CauseSummary, CellResult, Outcome
from vllmdiag.model.stack import EnvRecord
from vllmdiag.model.verdict import BASELINE, ArmVerdict, Effect, VerdictMode


@dataclass(frozen=True)
class Fix:
    """A sufficient arm, its change, and a passing cell of it (same workload and repeat
    as the failing cell where there is one)."""

    verdict: ArmVerdict
    arm: Arm | None
    cell: CellResult | None
    env: EnvRecord | None

    @property
    def pins(self) -> tuple[str, ...]:
        return self.arm.pin if self.arm is not None and self.arm.kind is ArmKind.PIN else ()


@dataclass(frozen=True)
class Case:
    run: RunEvidence
    cell: CellResult
    env: EnvRecord | None
    signature: str
    fix: Fix | None
    #: Other root causes among the failing cells of every run: (signature, cells).
    others: tuple[tuple[str, int], ...] = ()

    @property
    def cause(self) -> CauseSummary | None:
        return self.cell.root_cause

    def failing_like(self, run: RunEvidence) -> list[CellResult]:
        """The cells of ``run`` failing with this case's signature."""
        return [r for r in run.failing() if key(r) == self.signature]


def key(cell: CellResult) -> str:
    """What groups failing cells: the root cause's signature, else how it ended."""
    if cell.root_cause is not None and cell.root_cause.key:
        return cell.root_cause.key
    return "timeout" if cell.outcome is Outcome.TIMEOUT else f"exit status {cell.rc}"


def find_case(runs: Sequence[RunEvidence]) -> Case:
    primary = next((run for run in runs if run.failing()), None)
    if primary is None:
        metric = any(r.verdict is not None and r.verdict.mode is VerdictMode.METRIC for r in runs)
        raise VllmdiagError(
            "no cell failed in "
            + ("this run" if len(runs) == 1 else f"these {len(runs)} runs")
            + ": there is no failure to report",
            where=", ".join(str(r.path) for r in runs),
            hint=(
                "report drafts an issue from failing cells; for a slowdown, share the run's "
                "summary.md and a 'vllmdiag profile diff'"
                if metric
                else "report drafts an issue from a run with a failing cell (outcome fail or "
                "timeout); an ERROR is vllmdiag's or the leg's problem, not a bug to file"
            ),
        )
    failing = primary.failing()
    baseline = Counter(key(r) for r in failing if r.arm == BASELINE)
    overall = Counter(key(r) for r in failing)
    signature = min(overall, key=lambda s: (-baseline[s], -overall[s], s))
    chosen = [r for r in failing if key(r) == signature]
    cell = min(chosen, key=lambda r: _size(primary, r))
    everywhere = Counter(key(r) for run in runs for r in run.failing())
    others = tuple((s, n) for s, n in everywhere.most_common() if s != signature)
    return Case(
        run=primary,
        cell=cell,
        env=primary.env_of(cell),
        signature=signature,
        fix=_fix(primary, cell),
        others=others,
    )


def _size(run: RunEvidence, cell: CellResult) -> tuple[int, int, float, str]:
    """Smallest first: a baseline cell before an arm's, then the shortest command and
    environment, then the quickest to fail."""
    env = run.cell_env.get(cell.id, {})
    return (cell.arm != BASELINE, len(cell.argv) + len(env), cell.elapsed_s, cell.id)


def _fix(run: RunEvidence, cell: CellResult) -> Fix | None:
    if run.verdict is None:
        return None
    sufficient = [a for a in run.verdict.arms if a.effect is Effect.SUFFICIENT]
    if not sufficient:
        return None
    chosen = min(sufficient, key=lambda a: (not a.single_variable, a.kind != ArmKind.PIN.value))
    arms = {a.name: a for a in run.recipe.all_arms()} if run.recipe is not None else {}
    passing = run.cell(chosen.name, cell.workload, cell.repeat)
    if passing is None or passing.outcome is not Outcome.PASS:
        passing = next(
            (r for r in run.results if r.arm == chosen.name and r.outcome is Outcome.PASS), None
        )
    return Fix(
        verdict=chosen,
        arm=arms.get(chosen.name),
        cell=passing,
        env=run.env_of(passing) if passing is not None else None,
    )
