"""The plan of a matrix run (``vllmdiag matrix --dry-run``): every cell with its exact
command, before anything runs. A leg that exists is asked how it runs (one probe)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import bench_check
from vllmdiag.plan import cells as planmod
from vllmdiag.plan import command as cmdmod
from vllmdiag.plan.planned import PlannedCell, PlannedLeg
from vllmdiag.readers.legs.legs_seen import see
from vllmdiag.services.envs.cache import EnvCache


@dataclass(frozen=True)
class MatrixPlan:
    """What ``vllmdiag matrix --dry-run`` shows: every leg and cell, nothing run."""

    recipe: str
    question: str
    legs: tuple[PlannedLeg, ...]
    cells: tuple[PlannedCell, ...]
    #: What the workloads' ``vllm bench`` commands will not measure as written.
    warnings: tuple[str, ...] = ()


def plan_matrix(
    recipe: Recipe, cache: EnvCache | None = None, run_dir: Path | None = None
) -> MatrixPlan:
    """Every cell with its exact command, without building or running anything (a leg
    that exists is asked for its interpreter, version and vLLM spelling: one probe)."""
    cache = cache or EnvCache()
    cells = planmod.expand(recipe)
    seen: dict[tuple[str, str], cmdmod.LegSeen] = {}
    planned = []
    for cell in cells:
        pythonpath = cell.env.get("PYTHONPATH", "")
        if (cell.leg.key(), pythonpath) not in seen:
            seen[cell.leg.key(), pythonpath] = see(cell.leg, cache, pythonpath)
        leg = seen[cell.leg.key(), pythonpath]
        command = cmdmod.render(
            recipe.workloads[cell.workload],
            name=cell.workload,
            flags=cell.flags,
            env=cell.env,
            out_dir=(run_dir or Path("<run>")) / "cells" / cell.id / "out",
            recipe_dir=recipe.recipe_dir,
            leg=leg,
        )
        planned.append(
            PlannedCell.of(
                cell, cache.path_for(cell.leg), command, arm=cell.arm, workload=cell.workload
            )
        )
    legs = tuple(
        PlannedLeg.of(leg, seen.get((leg.key(), "")) or see(leg, cache))
        for leg in planmod.legs_needed(cells)
    )
    return MatrixPlan(
        recipe.name, recipe.question, legs, tuple(planned), bench_check.recipe_warnings(recipe)
    )
