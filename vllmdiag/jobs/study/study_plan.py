"""The plan of a study batch: every cell with its leg and exact command, nothing run.
Rendering every command here is also the check that runs before anything is built."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.errors import ConfigError
from vllmdiag.jobs.study import plan as splan
from vllmdiag.jobs.study.recipe import TP_FLAG, StudyRecipe
from vllmdiag.plan import PlannedCell, PlannedLeg, bench_check, legs_needed
from vllmdiag.plan import command as cmdmod
from vllmdiag.readers.legs.legs_seen import see
from vllmdiag.services.envs.cache import EnvCache


@dataclass(frozen=True)
class StudyPlan:
    study: str
    question: str
    legs: tuple[PlannedLeg, ...]
    cells: tuple[PlannedCell, ...]
    #: What the workloads' ``vllm bench`` commands will not measure as written.
    warnings: tuple[str, ...] = ()


def study_plan(
    study: StudyRecipe,
    filters: splan.Filters | None = None,
    cache: EnvCache | None = None,
) -> StudyPlan:
    """Every cell of the batch with its exact command, nothing built or run (a leg that
    exists is asked for its interpreter, version and vLLM spelling: one probe)."""
    cache = cache or EnvCache()
    cells = splan.expand(study, filters or splan.Filters())
    seen: dict[tuple[str, str], cmdmod.LegSeen] = {}
    planned = []
    for cell in cells:
        spec, pythonpath = cell.plan.leg, cell.plan.env.get("PYTHONPATH", "")
        if (spec.key(), pythonpath) not in seen:
            seen[spec.key(), pythonpath] = see(spec, cache, pythonpath)
        out_dir = Path("<run>") / "cells" / cell.plan.id / "out"
        command = render_cell(study, cell, out_dir, seen[spec.key(), pythonpath])
        planned.append(
            PlannedCell.of(
                cell.plan,
                cache.path_for(spec),
                command,
                arm=cell.slot.leg,
                workload=cell.slot.workload,
            )
        )
    legs = tuple(
        PlannedLeg.of(leg, seen.get((leg.key(), "")) or see(leg, cache))
        for leg in legs_needed(splan.plans(cells))
    )
    return StudyPlan(
        study.name, study.question, legs, tuple(planned), bench_warnings(study, filters)
    )


def bench_warnings(study: StudyRecipe, filters: splan.Filters | None = None) -> tuple[str, ...]:
    """What each (model, workload)'s ``vllm bench`` command will not measure as written."""
    out: list[str] = []
    for cell in splan.expand(study, filters or splan.Filters()):
        wl = splan.workload_config(study, cell.slot.model, cell.slot.workload)
        found = bench_check.workload_problems(
            cell.slot.workload, wl, cell.plan.flags, study.recipe_dir
        )
        out += [f"{p} (model {cell.slot.model})" for p in found]
    return tuple(dict.fromkeys(out))


def render_cell(
    study: StudyRecipe, cell: splan.StudyCell, out_dir: Path | str, leg: cmdmod.LegSeen
) -> cmdmod.CellCommand:
    """One cell's command; a template that cannot take the cell's flags is the study's
    error, named by its workload and model."""
    try:
        return cmdmod.render(
            splan.workload_config(study, cell.slot.model, cell.slot.workload),
            name=cell.slot.workload,
            flags=cell.plan.flags,
            env=cell.plan.env,
            out_dir=out_dir,
            recipe_dir=study.recipe_dir,
            leg=leg,
        )
    except ConfigError as exc:
        why = f"; every cell passes {TP_FLAG} in {{flags}}" if "{flags}" in exc.message else ""
        raise ConfigError(
            f"{exc.message} (model {cell.slot.model!r}{why})",
            where=str(study.source) if study.source else None,
            hint=exc.hint,
        ) from None


def check_commands(study: StudyRecipe, cells: Sequence[splan.StudyCell]) -> None:
    """Every cell's command renders (before any leg is built or cell run)."""
    for cell in cells:
        render_cell(study, cell, "{out_dir}", cmdmod.LegSeen("{python}"))
