"""What a draft says when the failure is nobody's bug upstream (the user's settings, the
machine, the user's own script): what to change (the sufficient single-variable change),
why it is not a bug, and where the user's own setting came from (the recipe's baseline,
the workload's command, or vLLM's default)."""

from __future__ import annotations

from vllmdiag.jobs.report import md
from vllmdiag.jobs.report.case import Case
from vllmdiag.model.arms import Arm, ArmKind
from vllmdiag.model.outcome import CellResult
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.root_cause import Origin

_DEFAULT = "vLLM's default (the recipe does not set it)"


def paragraph(case: Case) -> str:
    cause = case.cause
    why = cause.why if cause is not None and cause.why else "whose fault triage could not say"
    kind = {
        Origin.CONFIG: "the user's own settings",
        Origin.ENVIRONMENT: "the machine the engine ran on and what is installed there",
        Origin.CALLER: "the workload's own script",
    }.get(cause.origin if cause is not None else Origin.UNKNOWN, "the run's own setup")
    out = [
        f"**Not an upstream bug: no issue to file.** The failure lies in {kind}: {why}.",
    ]
    fix = case.fix
    if fix is not None and fix.arm is not None:
        out.append(
            f"What to change: {md.code(fix.arm.describe())} makes it pass ({fix.verdict.detail})."
        )
        source = setting_source(fix.arm, case.run.recipe, case.cell)
        if source:
            out.append(source)
    elif cause is not None and cause.next_step:
        out.append(
            f"None of the changes tried made it pass; next: {md.code(cause.next_step)}"
            + (f" ({cause.advice})" if cause.advice else "")
            + "."
        )
    return " ".join(out)


def setting_source(arm: Arm, recipe: Recipe | None, cell: CellResult) -> str | None:
    """Where the value the arm changes came from, in one sentence."""
    if arm.kind is ArmKind.FLAG and arm.flag:
        name = arm.flag[0].name
        asked = _value_in(cell.argv, name)
        where = _DEFAULT
        if recipe is not None and any(f.name == name for f in recipe.baseline.flags):
            where = "the recipe's baseline flags"
        elif recipe is not None and asked is not None:
            where = f"the command of workload {md.code(cell.workload)} in the recipe"
        said = f"{name} {asked}" if asked else name
        return f"The failing setting, {md.code(said)}, came from {where}."
    if arm.kind is ArmKind.ENV and arm.env:
        name = next(iter(arm.env))
        if recipe is not None and name in recipe.baseline.env:
            return (
                f"The failing setting, {md.code(f'{name}={recipe.baseline.env[name]}')}, came "
                "from the recipe's baseline env."
            )
        return f"{md.code(name)} was not set by the recipe: {_DEFAULT}."
    return None


def _value_in(argv: tuple[str, ...], name: str) -> str | None:
    """The value ``name`` had on the command line that failed (the last one given)."""
    found = None
    for i, token in enumerate(argv):
        if token == name and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            found = argv[i + 1]
        elif token.startswith(name + "="):
            found = token.split("=", 1)[1]
    return found
