"""Recipe → cells and legs. Pure: no I/O.

Cells = (baseline, each arm, each control) × workloads × repeats, with repetition as the
outer loop so slow drift (thermal, a neighbour, a cache filling) cannot line up with an arm.
Every job that runs cells (matrix, bisect, profile, study) plans them here.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from vllmdiag.errors import ConfigError, VllmdiagError
from vllmdiag.model.arms import Arm, Flag
from vllmdiag.model.recipe import LegConfig, Recipe, cell_id_clash
from vllmdiag.model.verdict import BASELINE, ArmInfo
from vllmdiag.services.envs.spec import LegSpec


@dataclass(frozen=True)
class CellPlan:
    id: str
    arm: str
    workload: str
    repeat: int
    leg: LegSpec
    env: dict[str, str] = field(default_factory=dict)
    flags: tuple[Flag, ...] = ()


def leg_spec(name: str, cfg: LegConfig) -> LegSpec:
    return LegSpec(
        name=name,
        requirements=tuple(cfg.requirements),
        python=cfg.python,
        index_url=cfg.index_url,
        extra_index_urls=tuple(cfg.extra_index_urls),
        exclude_newer=cfg.exclude_newer,
        existing=cfg.path,
    )


def arm_leg(recipe: Recipe, arm: Arm | None) -> LegSpec:
    """The leg a cell of ``arm`` runs on: the baseline's, another one, or a derived one."""
    if arm is not None and arm.leg is not None:
        base = leg_spec(arm.leg, recipe.legs[arm.leg])
    else:
        base = leg_spec(recipe.baseline.leg, recipe.legs[recipe.baseline.leg])
    for pin in arm.pin if arm is not None else ():
        base = base.with_pin(pin)
    return base


def arm_cell(
    recipe: Recipe, arm: Arm | None, workload: str, repeat: int = 1, *, name: str | None = None
) -> CellPlan:
    """One cell: the baseline (``arm`` None) or ``arm`` applied to it, on ``workload``.
    ``name`` names the cell's column (default: the arm's name, or ``baseline``)."""
    column = name or (BASELINE if arm is None else arm.name)
    env = {**recipe.baseline.env, **recipe.workloads[workload].env}
    flags = tuple(recipe.baseline.flags)
    if arm is not None:
        env.update(arm.env)
        flags = _merge_flags(flags, arm.flag)
    return CellPlan(
        id=cell_id(repeat, column, workload),
        arm=column,
        workload=workload,
        repeat=repeat,
        leg=arm_leg(recipe, arm),
        env=env,
        flags=flags,
    )


def expand(recipe: Recipe) -> list[CellPlan]:
    """Every cell in run order. With ``baseline_between_arms`` the baseline is measured
    again before each arm after the first (cells ``r<repeat>.baseline~<k>.<workload>``,
    column ``baseline``), so a drift of the machine over the run shows in the baseline."""
    columns: list[Arm | None] = [None, *recipe.arms, *recipe.controls]
    cells = []
    for rep in range(1, recipe.repeats + 1):
        for i, arm in enumerate(columns):
            if recipe.baseline_between_arms and i > 1:
                cells += [_again(arm_cell(recipe, None, wl, rep), i) for wl in recipe.workloads]
            cells += [arm_cell(recipe, arm, wl, rep) for wl in recipe.workloads]
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):  # the recipe refuses this at load; never overwrite a result
        clash = cell_id_clash([BASELINE, *(a.name for a in recipe.all_arms())], recipe.workloads)
        raise ConfigError(clash or "two cells share one id", where=_where(recipe))
    return cells


def _again(cell: CellPlan, k: int) -> CellPlan:
    """The baseline measured again (``~`` is in no arm's name, so the id is its own)."""
    return replace(cell, id=cell_id(cell.repeat, f"{BASELINE}~{k}", cell.workload))


def _where(recipe: Recipe) -> str | None:
    return str(recipe.source) if recipe.source else None


def cell_id(repeat: int, arm: str, workload: str) -> str:
    return f"r{repeat}.{arm}.{workload}"


def _merge_flags(base: tuple[Flag, ...], extra: tuple[Flag, ...]) -> tuple[Flag, ...]:
    """An arm's flag replaces a baseline flag of the same name rather than repeating it."""
    names = {f.name for f in extra}
    return (*(f for f in base if f.name not in names), *extra)


def legs_needed(cells: list[CellPlan]) -> list[LegSpec]:
    seen: dict[str, LegSpec] = {}
    for c in cells:
        seen.setdefault(c.leg.key(), c.leg)
    return list(seen.values())


def arm_infos(recipe: Recipe) -> list[ArmInfo]:
    out = [
        ArmInfo(
            a.name,
            a.kind.value,
            False,
            a.single_variable,
            a.describe(),
            same_as_baseline(recipe, a),
        )
        for a in recipe.arms
    ]
    out += [
        ArmInfo(
            a.name, a.kind.value, True, a.single_variable, a.describe(), same_as_baseline(recipe, a)
        )
        for a in recipe.controls
    ]
    return out


def same_as_baseline(recipe: Recipe, arm: Arm) -> bool:
    """True when every cell of ``arm`` would run exactly as the baseline's does (the same
    environment, installed the same, the same environment overlay and flags): measured
    beside the baseline, it is an A/A pair, evidence of the run's noise."""
    for wl in recipe.workloads:
        mine, base = arm_cell(recipe, arm, wl), arm_cell(recipe, None, wl)
        if (mine.leg.key(), mine.env, mine.flags) != (base.leg.key(), base.env, base.flags):
            return False
    return bool(recipe.workloads)


def reuse_key(cell: CellPlan, lock_hash: str, argv: list[str], workload: str) -> str:
    """What makes a finished result reusable on resume: the env as installed, the exact
    command, its environment overlay, the workload, the arm and the repeat."""
    blob = json.dumps(
        {
            "lock": lock_hash,
            "argv": argv,
            "env": sorted(cell.env.items()),
            "workload": workload,
            "arm": cell.arm,
            "repeat": cell.repeat,
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def recipe_legs(recipe: Recipe, name: str | None = None) -> list[LegSpec]:
    """All legs the matrix needs, or the one ``name`` picks: a leg name, or an arm name
    (the leg that arm's cells run on, e.g. a pin arm's derived leg)."""
    if name is None:
        return legs_needed(expand(recipe))
    if name in recipe.legs:
        return [leg_spec(name, recipe.legs[name])]
    arms = {a.name: a for a in recipe.all_arms()}
    if name in arms:
        return [arm_leg(recipe, arms[name])]
    choices = [*recipe.legs, *arms]
    close = difflib.get_close_matches(name, choices, n=1)
    raise ConfigError(
        f"{name!r} is neither a leg nor an arm of recipe {recipe.name!r}",
        where=str(recipe.source) if recipe.source else None,
        hint=f"did you mean {close[0]!r}?" if close else f"legs: {', '.join(recipe.legs)}",
    )


def find_cell(cells: Sequence[CellPlan], cell_id: str) -> CellPlan:
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
