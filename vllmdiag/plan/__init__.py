"""The plan layer: a recipe's cells, legs and exact commands, before anything runs."""

from vllmdiag.plan.cells import (
    CellPlan,
    arm_cell,
    arm_infos,
    arm_leg,
    cell_id,
    expand,
    find_cell,
    leg_spec,
    legs_needed,
    recipe_legs,
    reuse_key,
)
from vllmdiag.plan.planned import PlannedCell, PlannedLeg

__all__ = [
    "CellPlan",
    "PlannedCell",
    "PlannedLeg",
    "arm_cell",
    "arm_infos",
    "arm_leg",
    "cell_id",
    "expand",
    "find_cell",
    "leg_spec",
    "legs_needed",
    "recipe_legs",
    "reuse_key",
]
