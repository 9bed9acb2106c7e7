"""The two sides of a profile run, from a recipe: two legs, or two arms on one leg.

``--legs v0.18 v0.26``: the recipe's legs, each with the baseline's flags and
environment (an arm's name stands for that arm: its leg, flags, environment and pins).
``--arms baseline enforce-eager [--leg L]``: the usual way to narrow a regression: one
leg (the baseline's unless named), the baseline on one side and an arm on the other (or
two arms), each arm applied exactly as a matrix cell applies it. Arms come from the
recipe, else from the arm library. Pure: nothing is built or run here.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field

from vllmdiag.envs.spec import LegSpec
from vllmdiag.errors import ConfigError
from vllmdiag.model.arms import Arm, Flag
from vllmdiag.model.recipe import Recipe
from vllmdiag.model.verdict import BASELINE
from vllmdiag.plan import cells as planmod


@dataclass(frozen=True)
class SidePlan:
    """What one side runs: on which leg, with which environment and flags."""

    name: str
    leg: LegSpec
    env: dict[str, str] = field(default_factory=dict)
    flags: tuple[Flag, ...] = ()
    arm: str | None = None

    def describe(self) -> str:
        what = f"arm {self.arm}" if self.arm else "baseline flags"
        return f"{self.name}: leg {self.leg.name}, {what}"


def _where(recipe: Recipe) -> str | None:
    return str(recipe.source) if recipe.source else None


def _arm(recipe: Recipe, name: str) -> Arm:
    own = {a.name: a for a in recipe.all_arms()}
    if name in own:
        return own[name]
    from vllmdiag.config import load_arm_library

    return load_arm_library().get(name, where=_where(recipe))


def _merge(base: tuple[Flag, ...], extra: tuple[Flag, ...]) -> tuple[Flag, ...]:
    names = {f.name for f in extra}
    return (*(f for f in base if f.name not in names), *extra)


def _with_arm(recipe: Recipe, name: str, leg: str, arm: Arm) -> SidePlan:
    base = planmod.leg_spec(arm.leg or leg, recipe.legs[arm.leg or leg])
    for pin in arm.pin:
        base = base.with_pin(pin)
    env = {**recipe.baseline.env, **arm.env}
    return SidePlan(name, base, env, _merge(tuple(recipe.baseline.flags), arm.flag), arm.name)


def _baseline(recipe: Recipe, name: str, leg: str) -> SidePlan:
    spec = planmod.leg_spec(leg, recipe.legs[leg])
    return SidePlan(name, spec, dict(recipe.baseline.env), tuple(recipe.baseline.flags))


def plan_sides(
    recipe: Recipe,
    legs: Sequence[str] = (),
    arms: Sequence[str] = (),
    leg: str | None = None,
) -> list[SidePlan]:
    """The two sides ``--legs`` or ``--arms`` (with ``--leg``) ask for."""
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
    if legs:
        if leg is not None:
            raise ConfigError("--leg goes with --arms, not --legs", where=where,
                              hint="--arms baseline ARM --leg LEG")  # fmt: skip
        return [_leg_side(recipe, n) for n in names]
    on = leg or recipe.baseline.leg
    if on not in recipe.legs:
        close = difflib.get_close_matches(on, list(recipe.legs), n=1)
        raise ConfigError(
            f"--leg {on!r} is not a leg of recipe {recipe.name!r}",
            where=where,
            hint=f"did you mean {close[0]!r}?" if close else f"legs: {', '.join(recipe.legs)}",
        )
    return [
        _baseline(recipe, n, on) if n == BASELINE else _with_arm(recipe, n, on, _arm(recipe, n))
        for n in names
    ]


def _leg_side(recipe: Recipe, name: str) -> SidePlan:
    if name in recipe.legs:
        return _baseline(recipe, name, name)
    own = {a.name: a for a in recipe.all_arms()}
    if name in own:
        return _with_arm(recipe, name, recipe.baseline.leg, own[name])
    close = difflib.get_close_matches(name, [*recipe.legs, *own], n=1)
    raise ConfigError(
        f"{name!r} is neither a leg nor an arm of recipe {recipe.name!r}",
        where=_where(recipe),
        hint=f"did you mean {close[0]!r}?" if close else f"legs: {', '.join(recipe.legs)}",
    )
