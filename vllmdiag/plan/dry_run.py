"""The plan of a matrix run: every cell with its exact command, before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.envs.cache import EnvCache
from vllmdiag.envs.spec import LegSpec
from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import bench_check
from vllmdiag.plan import cells as planmod
from vllmdiag.plan import workloads as wlmod


@dataclass(frozen=True)
class PlannedLeg:
    name: str
    key: str
    python: str
    requirements: tuple[str, ...]
    index_url: str | None
    extra_index_urls: tuple[str, ...]
    exclude_newer: str | None
    existing: str | None

    @classmethod
    def of(cls, leg: LegSpec) -> PlannedLeg:
        return cls(
            name=leg.name,
            key=leg.key(),
            python=leg.python_request,
            requirements=tuple(sorted(leg.requirements)),
            index_url=leg.index_url,
            extra_index_urls=tuple(leg.extra_index_urls),
            exclude_newer=leg.exclude_newer,
            existing=str(leg.existing) if leg.existing else None,
        )


@dataclass(frozen=True)
class PlannedCell:
    """One cell as it will run: its leg, its environment overlay and exact command (the
    run directory shown as ``<run>``)."""

    id: str
    arm: str
    workload: str
    repeat: int
    leg: str
    env_path: str
    env: dict[str, str]
    argv: tuple[str, ...]


@dataclass(frozen=True)
class MatrixPlan:
    """What ``vllmdiag matrix --dry-run`` shows: every leg and cell, nothing run."""

    recipe: str
    question: str
    legs: tuple[PlannedLeg, ...]
    cells: tuple[PlannedCell, ...]
    #: What the workloads' ``vllm bench`` commands will not measure as written.
    warnings: tuple[str, ...] = ()


def plan(recipe: Recipe, cache: EnvCache | None = None, run_dir: Path | None = None) -> MatrixPlan:
    """Every cell with its exact command, without building or running anything."""
    cache = cache or EnvCache()
    cells = planmod.expand(recipe)
    planned = []
    for cell in cells:
        env_path = cache.path_for(cell.leg)
        python = _python_of(cell.leg, env_path)
        out_dir = (run_dir or Path("<run>")) / "cells" / cell.id / "out"
        argv = wlmod.render(
            recipe.workloads[cell.workload],
            name=cell.workload,
            flags=cell.flags,
            out_dir=out_dir,
            recipe_dir=recipe.recipe_dir,
            python=python,
        )
        planned.append(
            PlannedCell(
                cell.id,
                cell.arm,
                cell.workload,
                cell.repeat,
                cell.leg.name,
                str(env_path),
                dict(cell.env),
                tuple(argv),
            )
        )
    legs = tuple(PlannedLeg.of(leg) for leg in planmod.legs_needed(cells))
    return MatrixPlan(
        recipe.name, recipe.question, legs, tuple(planned), bench_check.recipe_warnings(recipe)
    )


def _python_of(leg: LegSpec, env_path: Path) -> Path:
    if leg.existing is not None and not Path(leg.existing).is_dir():
        return Path(leg.existing)
    return env_path / "bin" / "python"
