"""The version ablation as one job: legs × models × workloads × metrics, run on the
cell runner in batches, with canonical runs chosen by a stated rule and every table
regenerated from the results.

    from vllmdiag.jobs.study import load_study, run_study, StudyOptions, regenerate

    report = run_study(load_study(Path("recipes/vllm-ablation-study.yaml")), StudyOptions())
    regenerate(report.study_dir)   # REPORT.md, CANONICAL.md, MANIFEST.md, tables/*.tsv
"""

from vllmdiag.jobs.study.canonical import RULE, Selection, select
from vllmdiag.jobs.study.generate import Generated, regenerate, study_tables
from vllmdiag.jobs.study.job import (
    BatchOpened,
    StudyEvent,
    StudyOptions,
    StudyReport,
    TablesWritten,
    resume_command,
    run_study,
)
from vllmdiag.jobs.study.load import load_study
from vllmdiag.jobs.study.plan import Filters, Slot
from vllmdiag.jobs.study.recipe import StudyRecipe
from vllmdiag.jobs.study.study_plan import StudyPlan, study_plan
from vllmdiag.jobs.study.tables import StudyTables

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
    "study_tables",
]
