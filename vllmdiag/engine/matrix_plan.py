"""The plan of a matrix run: every cell with its exact command, before anything runs."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllmdiag.engine import plan as planmod
from vllmdiag.engine import workloads as wlmod
from vllmdiag.envs.cache import EnvCache
from vllmdiag.envs.spec import LegSpec
from vllmdiag.errors import VllmdiagError
from vllmdiag.model.recipe import Recipe


@dataclass(frozen=True)
class PlannedCell:
    cell: planmod.CellPlan
    argv: list[str]
    env_path: Path


@dataclass(frozen=True)
class MatrixPlan:
    recipe: Recipe
    cells: list[PlannedCell]
    legs: list[LegSpec]

    def to_json(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe.name,
            "question": self.recipe.question,
            "legs": [{"name": leg.name, "key": leg.key(), **leg.identity()} for leg in self.legs],
            "cells": [
                {
                    "id": p.cell.id,
                    "arm": p.cell.arm,
                    "workload": p.cell.workload,
                    "repeat": p.cell.repeat,
                    "leg": p.cell.leg.name,
                    "env_path": str(p.env_path),
                    "env": p.cell.env,
                    "argv": p.argv,
                }
                for p in self.cells
            ],
        }


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
        planned.append(PlannedCell(cell, argv, env_path))
    return MatrixPlan(recipe, planned, planmod.legs_needed(cells))


def _python_of(leg: LegSpec, env_path: Path) -> Path:
    if leg.existing is not None and not Path(leg.existing).is_dir():
        return Path(leg.existing)
    return env_path / "bin" / "python"


def find_cell(cells: Sequence[planmod.CellPlan], cell_id: str) -> planmod.CellPlan:
    """A cell by full id (``r1.baseline.w``), ``arm.workload`` (repeat 1) or a workload
    name (baseline, repeat 1). A short form that fits two cells is refused, not guessed."""
    exact = [c for c in cells if c.id == cell_id]
    if exact:
        return exact[0]
    short = [
        c
        for c in cells
        if c.repeat == 1
        and (cell_id == f"{c.arm}.{c.workload}" or (cell_id == c.workload and c.arm == "baseline"))
    ]
    if len(short) == 1:
        return short[0]
    if len(short) > 1:
        raise VllmdiagError(
            f"{cell_id!r} names more than one cell: " + ", ".join(c.id for c in short),
            hint="give the full cell id (vllmdiag matrix RECIPE --dry-run lists them)",
        )
    close = difflib.get_close_matches(cell_id, [c.id for c in cells], n=1)
    raise VllmdiagError(
        f"no cell {cell_id!r} in this recipe",
        hint=f"did you mean {close[0]!r}? (vllmdiag matrix RECIPE --dry-run lists them)"
        if close
        else "vllmdiag matrix RECIPE --dry-run lists the cells",
    )
