"""The plan of a study batch: every cell with its leg and exact command, nothing run.
Rendering every command here is also the check that runs before anything is built."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.envs.cache import EnvCache
from vllmdiag.errors import ConfigError
from vllmdiag.plan import PlannedCell, PlannedLeg, bench_check, legs_needed
from vllmdiag.plan import workloads as wlmod
from vllmdiag.study import plan as splan
from vllmdiag.study.recipe import TP_FLAG, StudyRecipe


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
    cache = cache or EnvCache()
    cells = splan.expand(study, filters or splan.Filters())
    planned = []
    for cell in cells:
        env_path = cache.path_for(cell.plan.leg)
        existing = cell.plan.leg.existing
        python = (
            existing
            if existing is not None and not existing.is_dir()
            else env_path / "bin" / "python"
        )
        argv = render_cell(study, cell, Path("<run>") / "cells" / cell.plan.id / "out", python)
        planned.append(
            PlannedCell(
                cell.plan.id,
                cell.slot.leg,
                cell.slot.workload,
                cell.plan.repeat,
                cell.plan.leg.name,
                str(env_path),
                dict(cell.plan.env),
                tuple(argv),
            )
        )
    legs = tuple(PlannedLeg.of(leg) for leg in legs_needed(splan.plans(cells)))
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
    study: StudyRecipe, cell: splan.StudyCell, out_dir: Path, python: Path
) -> list[str]:
    """One cell's argv; a template that cannot take the cell's flags is the study's
    error, named by its workload and model."""
    try:
        return wlmod.render(
            splan.workload_config(study, cell.slot.model, cell.slot.workload),
            name=cell.slot.workload,
            flags=cell.plan.flags,
            out_dir=out_dir,
            recipe_dir=study.recipe_dir,
            python=python,
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
        render_cell(study, cell, Path("{out_dir}"), Path("{python}"))
