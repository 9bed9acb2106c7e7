"""The ``--recipe R --cell ID`` check of ``bisect``: each step runs that one cell of the
recipe on its leg with ``PKG==V`` pinned, in a run directory of its own beside the bisect
journal. :func:`run_one_cell` is the one place that runs a cell (through the cell runner,
``run_cells``, under the node lock).

PASS is good; FAIL and TIMEOUT are bad; ERROR (the env or vllmdiag could not set the cell
up) and SKIPPED are skips, never "bug reproduced".
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from vllmdiag.errors import EnvError, ProcessError
from vllmdiag.jobs.bisect.results import CheckRun
from vllmdiag.jobs.bisect.search import StepVerdict
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import cells as planmod
from vllmdiag.plan.cells import find_cell
from vllmdiag.services.config import load_recipe
from vllmdiag.services.config.recipe_load import resolve_recipe_path
from vllmdiag.services.envs.spec import default_python
from vllmdiag.spine.measuring import measuring
from vllmdiag.spine.runner import RunOptions, run_cells

_VERDICT = {
    Outcome.PASS: StepVerdict.GOOD,
    Outcome.FAIL: StepVerdict.BAD,
    Outcome.TIMEOUT: StepVerdict.BAD,
    Outcome.ERROR: StepVerdict.SKIP,
    Outcome.SKIPPED: StepVerdict.SKIP,
}


@dataclass(frozen=True)
class RecipeCell:
    """A recipe's cell, checked to exist, with what its leg resolves against."""

    recipe: Recipe
    path: Path
    cell: str
    python: str
    exclude_newer: str | None
    digest: str  # of the recipe file: a changed recipe is another bisect question

    @classmethod
    def load(cls, recipe: Path, cell: str) -> RecipeCell:
        path = resolve_recipe_path(recipe).resolve()
        rec = load_recipe(path)
        found = find_cell(planmod.expand(rec), cell)  # a clear error when there is none
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        return cls(
            rec,
            path,
            found.id,
            found.leg.python or default_python(),
            found.leg.exclude_newer,
            digest,
        )


def check_cell(rc: RecipeCell, pin: str, out: Path, metric: str | None) -> CheckRun:
    """Run the cell once on its leg with ``pin``; ``out`` is replaced if it exists."""
    if out.exists():
        shutil.rmtree(out)  # an interrupted earlier attempt at this very step
    try:
        result = run_one_cell(rc.recipe, rc.cell, out, pin)
    except (EnvError, ProcessError) as exc:
        return CheckRun(None, StepVerdict.SKIP, None, "leg failed: " + exc.message[-1500:])
    verdict = _VERDICT[result.outcome]
    value = result.metrics.get(metric) if metric else None
    cause = result.root_cause.signature if result.root_cause else None
    why = str(cause) if cause else result.reason
    said = f"{result.outcome.value}: {why}" if why else result.outcome.value
    return CheckRun(result.rc, verdict, value, said)


def cell_runs(
    target: RecipeCell, pin: str, out: Path, *, repeat: int, metric: str | None
) -> list[CheckRun]:
    """The step's ``repeat`` runs of the cell, each in ``out/run<i>``; a metric value
    counts only from a run that passed."""
    runs: list[CheckRun] = []
    for i in range(max(1, repeat)):
        got = check_cell(target, pin, out / f"run{i}", metric)
        if got.verdict is not StepVerdict.GOOD and metric is not None:
            got = replace(got, value=None)
        runs.append(got)
    return runs


def run_one_cell(recipe: Recipe, cell_id: str, out: Path, pin: str | None) -> CellResult:
    """One cell of ``recipe`` (its leg with ``pin`` added) in its own run directory
    ``out``, through the cell runner, under the node lock."""
    cell = planmod.find_cell(planmod.expand(recipe), cell_id)
    if pin is not None:
        cell = replace(cell, leg=cell.leg.with_pin(pin))
    job = {"single_cell": cell.id, "pin": pin or ""}
    with measuring():
        ran = run_cells(recipe, [cell], RunOptions(out=out, runs_root=out.parent, job=job))
    if ran.interrupted:
        raise KeyboardInterrupt
    return ran.results[0]
