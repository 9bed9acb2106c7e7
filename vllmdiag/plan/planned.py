"""The plan of a matrix run: every cell with its exact command, before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.model.recipe import Recipe
from vllmdiag.plan import bench_check
from vllmdiag.plan import cells as planmod
from vllmdiag.plan import command as cmdmod
from vllmdiag.readers.legs.legs_seen import see
from vllmdiag.services.envs.cache import EnvCache
from vllmdiag.services.envs.spec import LegSpec


@dataclass(frozen=True)
class PlannedLeg:
    """A leg of the plan. ``python``: the Python version it runs (the interpreter's own
    where the leg exists, else the version a uv leg asks for); ``interpreter``: its path, or
    :data:`~vllmdiag.plan.command.UNBUILT_PYTHON` for a uv leg not built yet."""

    name: str
    key: str
    python: str
    requirements: tuple[str, ...]
    index_url: str | None
    extra_index_urls: tuple[str, ...]
    exclude_newer: str | None
    existing: str | None
    interpreter: str = ""

    @classmethod
    def of(cls, leg: LegSpec, seen: cmdmod.LegSeen | None = None) -> PlannedLeg:
        return cls(
            name=leg.name,
            key=leg.key(),
            python=_version(leg, seen),
            requirements=tuple(sorted(leg.requirements)),
            index_url=leg.index_url,
            extra_index_urls=tuple(leg.extra_index_urls),
            exclude_newer=leg.exclude_newer,
            existing=str(leg.existing) if leg.existing else None,
            interpreter=seen.python if seen else "",
        )


@dataclass(frozen=True)
class PlannedCell:
    """One cell as it will run: its leg, its environment overlay and exact command (the
    run directory shown as ``<run>`` unless it is given; secrets as ``***``). ``line``:
    the whole as one pasteable shell line; ``unknown``: what is not known before the leg
    is built (see :mod:`vllmdiag.plan.command`)."""

    id: str
    arm: str
    workload: str
    repeat: int
    leg: str
    env_path: str
    env: dict[str, str]
    argv: tuple[str, ...]
    line: str = ""
    unknown: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        cell: planmod.CellPlan,
        env_path: Path,
        command: cmdmod.CellCommand,
        *,
        arm: str,
        workload: str,
    ) -> PlannedCell:
        shown = cmdmod.shown(command)
        return cls(
            cell.id,
            arm,
            workload,
            cell.repeat,
            cell.leg.name,
            str(env_path),
            shown.env,
            shown.argv,
            cmdmod.shell_line(command),
            command.unknown,
        )


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


def _version(leg: LegSpec, seen: cmdmod.LegSeen | None) -> str:
    """The leg's Python: its interpreter's own where known; else what a uv leg asks for,
    and for an existing environment that cannot be asked, that it is unknown."""
    if seen is not None and seen.version:
        return seen.version
    return "unknown" if leg.existing is not None else leg.python_request
