"""vllmdiag: diagnose vLLM regressions with single-variable experiments.

The library surface: what the CLI uses, and what tests and scripts import. Names load on
first use, so ``import vllmdiag`` (and every CLI command) stays quick.

    from vllmdiag import load_recipe, run_matrix, MatrixOptions, codec

    report = run_matrix(load_recipe("recipes/thrmma-cpu.yaml"), MatrixOptions())
    print(report.verdict.summary)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name → the module that defines it.
_EXPORTS = {
    "codec": "vllmdiag",
    "VllmdiagError": "vllmdiag.errors",
    "ConfigError": "vllmdiag.errors",
    "EnvError": "vllmdiag.errors",
    "load_recipe": "vllmdiag.config",
    "load_arm_library": "vllmdiag.config",
    "Recipe": "vllmdiag.model.recipe",
    "Arm": "vllmdiag.model.arms",
    "CellResult": "vllmdiag.model.outcome",
    "CauseSummary": "vllmdiag.model.outcome",
    "Outcome": "vllmdiag.model.outcome",
    "Verdict": "vllmdiag.model.verdict",
    "Effect": "vllmdiag.model.verdict",
    "Fingerprint": "vllmdiag.model.fingerprint",
    "CellPlan": "vllmdiag.plan",
    "MatrixPlan": "vllmdiag.plan",
    "plan": "vllmdiag.plan",
    "expand": "vllmdiag.plan",
    "find_cell": "vllmdiag.plan",
    "recipe_legs": "vllmdiag.plan",
    "measuring": "vllmdiag.measuring",
    "run_cells": "vllmdiag.runner",
    "RunOptions": "vllmdiag.runner",
    "CellsReport": "vllmdiag.runner",
    "Executor": "vllmdiag.runner",
    "LocalExecutor": "vllmdiag.runner",
    "RayExecutor": "vllmdiag.cluster",
    "run_matrix": "vllmdiag.matrix",
    "MatrixOptions": "vllmdiag.matrix",
    "MatrixReport": "vllmdiag.matrix",
    "EnvCache": "vllmdiag.envs",
    "LegSpec": "vllmdiag.envs",
    "triage_file": "vllmdiag.triage",
    "fingerprint_file": "vllmdiag.fingerprint",
    "fingerprint_diff": "vllmdiag.fingerprint",
}

__all__ = [
    "Arm",
    "CauseSummary",
    "CellPlan",
    "CellResult",
    "CellsReport",
    "ConfigError",
    "Effect",
    "EnvCache",
    "EnvError",
    "Executor",
    "Fingerprint",
    "LegSpec",
    "LocalExecutor",
    "MatrixOptions",
    "MatrixPlan",
    "MatrixReport",
    "Outcome",
    "RayExecutor",
    "Recipe",
    "RunOptions",
    "Verdict",
    "VllmdiagError",
    "codec",
    "expand",
    "find_cell",
    "fingerprint_diff",
    "fingerprint_file",
    "load_arm_library",
    "load_recipe",
    "measuring",
    "plan",
    "recipe_legs",
    "run_cells",
    "run_matrix",
    "triage_file",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vllmdiag' has no attribute {name!r}")
    if module == "vllmdiag":
        return import_module(f"vllmdiag.{name}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from vllmdiag import codec
    from vllmdiag.cluster import RayExecutor
    from vllmdiag.config import load_arm_library, load_recipe
    from vllmdiag.envs import EnvCache, LegSpec
    from vllmdiag.errors import ConfigError, EnvError, VllmdiagError
    from vllmdiag.fingerprint import fingerprint_diff, fingerprint_file
    from vllmdiag.matrix import MatrixOptions, MatrixReport, run_matrix
    from vllmdiag.measuring import measuring
    from vllmdiag.model.arms import Arm
    from vllmdiag.model.fingerprint import Fingerprint
    from vllmdiag.model.outcome import CauseSummary, CellResult, Outcome
    from vllmdiag.model.recipe import Recipe
    from vllmdiag.model.verdict import Effect, Verdict
    from vllmdiag.plan import CellPlan, MatrixPlan, expand, find_cell, plan, recipe_legs
    from vllmdiag.runner import CellsReport, Executor, LocalExecutor, RunOptions, run_cells
    from vllmdiag.triage import triage_file
