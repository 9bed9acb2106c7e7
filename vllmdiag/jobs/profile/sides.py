"""The two sides of a profile run, from a recipe: two legs, or two arms on one leg.

``--legs v0.18 v0.26``: the recipe's legs, each with the baseline's flags and
environment (an arm's name stands for that arm: its leg, flags, environment and pins).
``--arms baseline enforce-eager [--leg L]``: the usual way to narrow a regression: one
leg (the baseline's unless named), the baseline on one side and an arm on the other (or
two arms). Arms come from the recipe, else from the arm library.

Each side is a :class:`~vllmdiag.plan.CellPlan` made by the plan layer itself
(:func:`~vllmdiag.plan.arm_cell`), so an arm is applied exactly as a matrix cell applies
it; on another leg, the recipe's baseline moves to that leg first. Pure: nothing is
built or run here.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from vllmdiag.errors import ConfigError
from vllmdiag.model.arms import Arm, Flag
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.verdict import BASELINE
from vllmdiag.plan import CellPlan, arm_cell
from vllmdiag.services.envs.spec import LegSpec


@dataclass(frozen=True)
class Side:
    """One side: its name, the cell it runs (before a capture backend is chosen), and
    the arm it applies (None: the baseline's flags)."""

    name: str
    cell: CellPlan
    arm: str | None = None

    @property
    def leg(self) -> LegSpec:
        return self.cell.leg

    @property
    def env(self) -> dict[str, str]:
        return self.cell.env

    @property
    def flags(self) -> tuple[Flag, ...]:
        return self.cell.flags

    def describe(self) -> str:
        what = f"arm {self.arm}" if self.arm else "baseline flags"
        return f"{self.name}: leg {self.leg.name}, {what}"


def _where(recipe: Recipe) -> str | None:
    return str(recipe.source) if recipe.source else None


def workload_name(recipe: Recipe, workload: str | None) -> str:
    """The workload to profile: the one named, or the recipe's only one."""
    names = list(recipe.workloads)
    if workload is None:
        if len(names) != 1:
            raise ConfigError(
                f"recipe {recipe.name!r} has {len(names)} workloads; pick one with --workload",
                where=_where(recipe),
                hint=f"workloads: {', '.join(names)}",
            )
        return names[0]
    if workload not in recipe.workloads:
        close = difflib.get_close_matches(workload, names, n=1)
        raise ConfigError(
            f"no workload {workload!r} in recipe {recipe.name!r}",
            where=_where(recipe),
            hint=f"did you mean {close[0]!r}?" if close else f"workloads: {', '.join(names)}",
        )
    return workload


def on_leg(recipe: Recipe, leg: str) -> Recipe:
    """``recipe`` with its baseline on ``leg`` (its flags and environment unchanged)."""
    if leg == recipe.baseline.leg:
        return recipe
    return recipe.model_copy(update={"baseline": recipe.baseline.model_copy(update={"leg": leg})})


def _arm(recipe: Recipe, name: str) -> Arm:
    own = {a.name: a for a in recipe.all_arms()}
    if name in own:
        return own[name]
    from vllmdiag.services.config import load_arm_library

    return load_arm_library().get(name, where=_where(recipe))


def plan_sides(
    recipe: Recipe,
    legs: Sequence[str] = (),
    arms: Sequence[str] = (),
    leg: str | None = None,
    workload: str | None = None,
) -> list[Side]:
    """The two sides ``--legs`` or ``--arms`` (with ``--leg``) ask for, on ``workload``."""
    where = _where(recipe)
    if bool(legs) == bool(arms):
        raise ConfigError(
            "profile takes two sides: --legs A B (two legs) or --arms A B (two arms on "
            "one leg), not both and not neither",
            where=where,
            hint=f"e.g. --legs {' '.join(list(recipe.legs)[:2])}, or --arms baseline enforce-eager",
        )
    names = list(legs or arms)
    if len(names) != 2 or names[0] == names[1]:
        raise ConfigError(
            f"profile compares two different sides, got {len(names)}: {', '.join(names) or 'none'}",
            where=where,
            hint="name two: --legs A B or --arms baseline ARM",
        )
    if legs and leg is not None:
        raise ConfigError("--leg goes with --arms, not --legs", where=where,
                          hint="--arms baseline ARM --leg LEG")  # fmt: skip
    wl = workload_name(recipe, workload)
    if legs:
        return [_leg_side(recipe, n, wl) for n in names]
    on = leg or recipe.baseline.leg
    if on not in recipe.legs:
        close = difflib.get_close_matches(on, list(recipe.legs), n=1)
        raise ConfigError(
            f"--leg {on!r} is not a leg of recipe {recipe.name!r}",
            where=where,
            hint=f"did you mean {close[0]!r}?" if close else f"legs: {', '.join(recipe.legs)}",
        )
    moved = on_leg(recipe, on)
    sides = []
    for n in names:
        if n == BASELINE:
            sides.append(Side(n, arm_cell(moved, None, wl)))
        else:
            sides.append(Side(n, arm_cell(moved, _arm(recipe, n), wl), n))
    return sides


def _leg_side(recipe: Recipe, name: str, wl: str) -> Side:
    if name in recipe.legs:
        return Side(name, arm_cell(on_leg(recipe, name), None, wl, name=name))
    own = {a.name: a for a in recipe.all_arms()}
    if name in own:
        return Side(name, arm_cell(recipe, own[name], wl), name)
    close = difflib.get_close_matches(name, [*recipe.legs, *own], n=1)
    raise ConfigError(
        f"{name!r} is neither a leg nor an arm of recipe {recipe.name!r}",
        where=_where(recipe),
        hint=f"did you mean {close[0]!r}?" if close else f"legs: {', '.join(recipe.legs)}",
    )
