"""Draft an upstream issue from what vllmdiag measured: the environment, a reproduction
that pastes and runs, the root cause, the single-variable evidence, the dependency
window, the blast radius and search terms, in the target project's template, with every
secret, home path, user and host name redacted (and counted).

    report = draft_report(ReportRequest((Path("runs/thrmma-cpu-..."),), window=Path("w.json")))
    print(report.target.project, report.title)
"""

from vllmdiag.jobs.report.draft import Report, Section, SectionId, Target, TargetKind, Template
from vllmdiag.jobs.report.job import ReportRequest, draft_report

__all__ = [
    "Report",
    "ReportRequest",
    "Section",
    "SectionId",
    "Target",
    "TargetKind",
    "Template",
    "draft_report",
]
