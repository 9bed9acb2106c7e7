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

from vllmdiag.version import __version__ as __version__

#: Public name → the module that defines it (``module:attr`` where the names differ: a
#: package's name cannot also name a function here).
_EXPORTS = {
    "codec": "vllmdiag",
    "VllmdiagError": "vllmdiag.errors",
    "ConfigError": "vllmdiag.errors",
    "EnvError": "vllmdiag.errors",
    "load_recipe": "vllmdiag.services.config",
    "load_arm_library": "vllmdiag.services.config",
    "Recipe": "vllmdiag.model.recipe",
    "Arm": "vllmdiag.model.arms",
    "CellResult": "vllmdiag.model.outcome",
    "RootCause": "vllmdiag.model.root_cause",
    "Origin": "vllmdiag.model.root_cause",
    "Outcome": "vllmdiag.model.outcome",
    "Verdict": "vllmdiag.model.verdict",
    "Effect": "vllmdiag.model.verdict",
    "Fingerprint": "vllmdiag.model.fingerprint",
    "CellPlan": "vllmdiag.plan",
    "MatrixPlan": "vllmdiag.jobs.matrix",
    "plan_matrix": "vllmdiag.jobs.matrix",
    "expand": "vllmdiag.plan",
    "find_cell": "vllmdiag.plan",
    "recipe_legs": "vllmdiag.plan",
    "measuring": "vllmdiag.spine.measuring",
    "run_cells": "vllmdiag.spine.runner",
    "RunOptions": "vllmdiag.spine.runner",
    "CellsJob": "vllmdiag.spine.runner",
    "CellsReport": "vllmdiag.spine.runner",
    "Executor": "vllmdiag.spine.runner",
    "LocalExecutor": "vllmdiag.spine.runner",
    "RayExecutor": "vllmdiag.adapters.cluster",
    "run_matrix": "vllmdiag.jobs.matrix",
    "MatrixOptions": "vllmdiag.jobs.matrix",
    "MatrixReport": "vllmdiag.jobs.matrix",
    "EnvCache": "vllmdiag.services.envs",
    "LegSpec": "vllmdiag.services.envs",
    "triage_file": "vllmdiag.readers.triage",
    "fingerprint_file": "vllmdiag.readers.fingerprint",
    "fingerprint_diff": "vllmdiag.readers.fingerprint",
    "draft_report": "vllmdiag.jobs.report",
    "ReportRequest": "vllmdiag.jobs.report",
    "Report": "vllmdiag.jobs.report",
    "find_window": "vllmdiag.jobs.window",
    "bisect_releases": "vllmdiag.jobs.bisect",
    "compare_tables": "vllmdiag.jobs.compare:compare",
    "load_study": "vllmdiag.jobs.study",
    "run_study": "vllmdiag.jobs.study",
    "StudyOptions": "vllmdiag.jobs.study",
}

__all__ = [
    "Arm",
    "CellPlan",
    "CellResult",
    "CellsJob",
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
    "Origin",
    "Outcome",
    "RayExecutor",
    "Recipe",
    "Report",
    "ReportRequest",
    "RootCause",
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
    from vllmdiag.adapters.cluster import RayExecutor
    from vllmdiag.errors import ConfigError, EnvError, VllmdiagError
    from vllmdiag.jobs.bisect import bisect_releases
    from vllmdiag.jobs.compare import compare as compare_tables
    from vllmdiag.jobs.matrix import (
        MatrixOptions,
        MatrixPlan,
        MatrixReport,
        plan_matrix,
        run_matrix,
    )
    from vllmdiag.jobs.report import Report, ReportRequest, draft_report
    from vllmdiag.jobs.study import StudyOptions, load_study, run_study
    from vllmdiag.jobs.window import find_window
    from vllmdiag.model.arms import Arm
    from vllmdiag.model.fingerprint import Fingerprint
    from vllmdiag.model.outcome import CellResult, Outcome
    from vllmdiag.model.recipe import Recipe
    from vllmdiag.model.root_cause import Origin, RootCause
    from vllmdiag.model.verdict import Effect, Verdict
    from vllmdiag.plan import CellPlan, expand, find_cell, recipe_legs
    from vllmdiag.readers.fingerprint import fingerprint_diff, fingerprint_file
    from vllmdiag.readers.triage import triage_file
    from vllmdiag.services.config import load_arm_library, load_recipe
    from vllmdiag.services.envs import EnvCache, LegSpec
    from vllmdiag.spine.measuring import measuring
    from vllmdiag.spine.runner import (
        CellsJob,
        CellsReport,
        Executor,
        LocalExecutor,
        RunOptions,
        run_cells,
    )
