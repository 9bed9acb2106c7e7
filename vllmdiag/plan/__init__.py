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
from vllmdiag.plan.planned import MatrixPlan, PlannedCell, PlannedLeg, plan

__all__ = [
    "CellPlan",
    "MatrixPlan",
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
    "plan",
    "recipe_legs",
    "reuse_key",
]
