"""``vllmdiag report``: draft an upstream issue from what vllmdiag measured.

Read the run directories (and the window and profile, if given), find the failure and
the smallest cell showing it, decide where the evidence points, write each section for
which there is evidence, redact every one of them (counting what was masked), and lay
them out in the target's template.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note, Observer, ignore
from vllmdiag.jobs.report import (
    bisect_section,
    blast,
    compose,
    duplicates,
    environment,
    evidence,
    md,
    profile_section,
    repro,
    rootcause,
    summary,
    target,
    window_section,
)
from vllmdiag.jobs.report.case import Case, find_case
from vllmdiag.jobs.report.draft import Report, Section, SectionId, Target
from vllmdiag.jobs.report.inputs import RunEvidence, load_run, load_window
from vllmdiag.jobs.report.redaction import Redactor, footer
from vllmdiag.jobs.window import WindowResult


@dataclass(frozen=True)
class ReportRequest:
    runs: tuple[Path, ...]
    window: Path | None = None
    profile: Path | None = None
    bisect: Path | None = None  # a bisect result (its --json output or its journal)


def draft_report(request: ReportRequest, observer: Observer[Note] = ignore) -> Report:
    def warn(text: str) -> None:
        observer(Note("warning", text))

    if not request.runs:
        raise VllmdiagError("no run directory given", hint="vllmdiag report RUN_DIR...")
    window = load_window(request.window) if request.window is not None else None
    profile = profile_section.load(request.profile, warn) if request.profile is not None else None
    bisected = bisect_section.load_bisect(request.bisect) if request.bisect is not None else None
    runs = [load_run(path, warn) for path in dict.fromkeys(request.runs)]
    case = find_case(runs)
    decision = target.choose(case, window)
    bases = [run.path for run in runs] + [r.recipe.recipe_dir for r in runs if r.recipe]
    redactor = Redactor(hosts=[h for run in runs for h in run.hosts], bases=bases)
    raw = _sections(case, runs, decision, window, profile, redactor, bisected)
    sections = tuple(
        Section(sid, compose.TITLES[sid], redactor(_local(case, text))) for sid, text in raw
    )
    title = redactor(summary.title(case, decision, window))
    counts = redactor.counts()
    quiet = Redactor(hosts=redactor.hosts, bases=bases)
    t = decision.target
    return Report(
        target=Target(t.project, t.kind, t.template, quiet(_local(case, t.reason))),
        title=title,
        body=compose.body(t.template, sections, footer(counts)),
        sections=sections,
        redactions=counts,
    )


def _sections(
    case: Case,
    runs: Sequence[RunEvidence],
    decision: target.Decision,
    window: WindowResult | None,
    profile: profile_section.ProfileEvidence | None,
    redactor: Redactor,
    bisected: bisect_section.BisectEvidence | None = None,
) -> list[tuple[SectionId, str]]:
    env_body = (
        environment.section(
            case.env, case.run.cell_env.get(case.cell.id, {}), stand_in=_stands_in(case)
        )
        if case.env is not None
        else None
    )
    package = window.package if window is not None else None
    found: list[tuple[SectionId, str | None]] = [
        (SectionId.SUMMARY, _summary(case, decision, window, bisected)),
        (SectionId.ENVIRONMENT, env_body),
        (
            SectionId.REPRODUCTION,
            repro.section(
                case,
                decision.consumer,
                package,
                lambda word: redactor(_local(case, word), premasked=False),
            ),
        ),
        (SectionId.ROOT_CAUSE, rootcause.section(case)),
        (SectionId.EVIDENCE, evidence.section(case)),
        (SectionId.BISECT, bisect_section.section(bisected) if bisected else None),
        (SectionId.WINDOW, window_section.section(window, decision.consumer) if window else None),
        (SectionId.BLAST_RADIUS, blast.section(case, runs)),
        (SectionId.PROFILE, profile_section.section(profile) if profile else None),
        (SectionId.OTHER_CAUSES, _others(case)),
        (
            SectionId.DUPLICATES,
            duplicates.section(case.signature, window, decision.target.project),
        ),
    ]
    return [(sid, text) for sid, text in found if text]


def _stands_in(case: Case) -> bool:
    """The failing leg has no vLLM and its command runs a script of its own: a CPU
    reproduction whose scripts stand in for vLLM's code path."""
    env = case.env
    if env is None or env.stack.vllm:
        return False
    return any(t.endswith(".py") for t in case.cell.argv[1:2])


def _summary(
    case: Case,
    decision: target.Decision,
    window: WindowResult | None,
    bisected: bisect_section.BisectEvidence | None,
) -> str:
    text = summary.paragraph(case, decision, window)
    return f"{text} {bisect_section.headline(bisected)}" if bisected is not None else text


def _local(case: Case, text: str) -> str:
    """The failing leg's venv named as the reproduction names it (``.venv``)."""
    root = case.env.path.rstrip("/") if case.env is not None else ""
    if root in repro.SYSTEM:
        return text
    return re.sub(re.escape(root) + r"(?![\w.-])", repro.VENV, text)


def _others(case: Case) -> str | None:
    if not case.others:
        return None
    lines = [f"- {md.code(sig)}: {md.plural(n, 'cell')}" for sig, n in case.others]
    return "These runs also failed otherwise; each is its own issue:\n\n" + "\n".join(lines)
