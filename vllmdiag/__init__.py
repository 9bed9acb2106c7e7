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

#: Public name → the module that defines it (``module:attr`` where the names differ: a
#: package's name cannot also name a function here).
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
    "plan_matrix": "vllmdiag.plan:plan",
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
    "draft_report": "vllmdiag.report",
    "ReportRequest": "vllmdiag.report",
    "Report": "vllmdiag.report",
    "find_window": "vllmdiag.window",
    "bisect_releases": "vllmdiag.bisect",
    "compare_tables": "vllmdiag.compare:compare",
    "load_study": "vllmdiag.study",
    "run_study": "vllmdiag.study",
    "StudyOptions": "vllmdiag.study",
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
    "Report",
    "ReportRequest",
    "RunOptions",
    "StudyOptions",
    "Verdict",
    "VllmdiagError",
    "bisect_releases",
    "codec",
    "compare_tables",
    "draft_report",
    "expand",
    "find_cell",
    "find_window",
    "fingerprint_diff",
    "fingerprint_file",
    "load_arm_library",
    "load_recipe",
    "load_study",
    "measuring",
    "plan_matrix",
    "recipe_legs",
    "run_cells",
    "run_matrix",
    "run_study",
    "triage_file",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vllmdiag' has no attribute {name!r}")
    if module == "vllmdiag":
        return import_module(f"vllmdiag.{name}")
    module, _, attr = module.partition(":")
    value = getattr(import_module(module), attr or name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from vllmdiag import codec
    from vllmdiag.bisect import bisect_releases
    from vllmdiag.cluster import RayExecutor
    from vllmdiag.compare import compare as compare_tables
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
    from vllmdiag.plan import CellPlan, MatrixPlan, expand, find_cell, recipe_legs
    from vllmdiag.plan import plan as plan_matrix
    from vllmdiag.report import Report, ReportRequest, draft_report
    from vllmdiag.runner import CellsReport, Executor, LocalExecutor, RunOptions, run_cells
    from vllmdiag.study import StudyOptions, load_study, run_study
    from vllmdiag.triage import triage_file
    from vllmdiag.window import find_window
