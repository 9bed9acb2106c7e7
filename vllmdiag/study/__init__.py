"""The version ablation as one job: legs × models × workloads × metrics, run on the
cell runner in batches, with canonical runs chosen by a stated rule and every table
regenerated from the results.

    from vllmdiag.study import load_study, run_study, StudyOptions, regenerate

    report = run_study(load_study(Path("recipes/vllm-ablation-study.yaml")), StudyOptions())
    regenerate(report.study_dir)   # REPORT.md, CANONICAL.md, MANIFEST.md, tables/*.tsv
"""

from vllmdiag.study.canonical import RULE, Selection, select
from vllmdiag.study.compare_table import study_table
from vllmdiag.study.dry_run import StudyPlan, study_plan
from vllmdiag.study.generate import Generated, regenerate, study_tables
from vllmdiag.study.job import (
    BatchOpened,
    StudyEvent,
    StudyOptions,
    StudyReport,
    TablesWritten,
    resume_command,
    run_study,
)
from vllmdiag.study.load import load_study
from vllmdiag.study.plan import Filters, Slot
from vllmdiag.study.recipe import StudyRecipe
from vllmdiag.study.tables import StudyTables

__all__ = [
    "RULE",
    "BatchOpened",
    "Filters",
    "Generated",
    "Selection",
    "Slot",
    "StudyEvent",
    "StudyOptions",
    "StudyPlan",
    "StudyRecipe",
    "StudyReport",
    "StudyTables",
    "TablesWritten",
    "load_study",
    "regenerate",
    "resume_command",
    "run_study",
    "select",
    "study_plan",
    "study_table",
    "study_tables",
]
