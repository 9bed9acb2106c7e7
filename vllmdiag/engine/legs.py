"""The legs a recipe needs, by name: its own legs and those its arms derive."""

from __future__ import annotations

import difflib

from vllmdiag.engine import plan as planmod
from vllmdiag.envs.spec import LegSpec
from vllmdiag.errors import ConfigError
from vllmdiag.model.recipe import Recipe


def recipe_legs(recipe: Recipe, name: str | None = None) -> list[LegSpec]:
    """All legs the matrix needs, or the one ``name`` picks: a leg name, or an arm name
    (the leg that arm's cells run on, e.g. a pin arm's derived leg)."""
    if name is None:
        return planmod.legs_needed(planmod.expand(recipe))
    if name in recipe.legs:
        return [planmod.leg_spec(name, recipe.legs[name])]
    arms = {a.name: a for a in recipe.all_arms()}
    if name in arms:
        return [planmod.arm_leg(recipe, arms[name])]
    choices = [*recipe.legs, *arms]
    close = difflib.get_close_matches(name, choices, n=1)
    raise ConfigError(
        f"{name!r} is neither a leg nor an arm of recipe {recipe.name!r}",
        where=str(recipe.source) if recipe.source else None,
        hint=f"did you mean {close[0]!r}?" if close else f"legs: {', '.join(recipe.legs)}",
    )
