"""The body in the target's template: vLLM's bug report form ("Your current
environment", "🐛 Describe the bug", the checklist) for vLLM, a plain one otherwise.
Sections come in already redacted; only the template's own words are added here."""

from __future__ import annotations

from collections.abc import Sequence

from vllmdiag.jobs.report.draft import Section, SectionId, Template

TITLES = {
    SectionId.SUMMARY: "Summary",
    SectionId.ENVIRONMENT: "Environment",
    SectionId.REPRODUCTION: "Reproduction",
    SectionId.ROOT_CAUSE: "Root cause",
    SectionId.EVIDENCE: "Single-variable evidence",
    SectionId.WINDOW: "Dependency window",
    SectionId.BISECT: "Bisection",
    SectionId.BLAST_RADIUS: "Blast radius",
    SectionId.PROFILE: "Profile",
    SectionId.OTHER_CAUSES: "Other failures in these runs",
    SectionId.DUPLICATES: "Search terms for duplicates",
}
#: The order sections take in the body, after the summary.
ORDER = (
    SectionId.REPRODUCTION,
    SectionId.ROOT_CAUSE,
    SectionId.EVIDENCE,
    SectionId.BISECT,
    SectionId.WINDOW,
    SectionId.BLAST_RADIUS,
    SectionId.PROFILE,
    SectionId.OTHER_CAUSES,
    SectionId.DUPLICATES,
)
VLLM_CHECKLIST = (
    "- [ ] Make sure you already searched for relevant issues, and asked the chatbot living "
    "at the bottom right corner of the [documentation page](https://docs.vllm.ai/en/latest/), "
    "which can answer lots of frequently asked questions."
)
NO_ENVIRONMENT = (
    "Not recorded by these runs: run `python collect_env.py` (from vLLM's repository) in the "
    "failing environment and paste its output here."
)


def body(template: Template, sections: Sequence[Section], footer: str) -> str:
    by = {s.id: s for s in sections}
    parts = _vllm(by) if template is Template.VLLM_BUG else _generic(by)
    return "\n\n".join([*parts, "---", footer]) + "\n"


def _vllm(by: dict[SectionId, Section]) -> list[str]:
    env = by.get(SectionId.ENVIRONMENT)
    parts = ["### Your current environment", env.body if env else NO_ENVIRONMENT]
    parts.append("### 🐛 Describe the bug")
    summary = by.get(SectionId.SUMMARY)
    if summary is not None:
        parts.append(summary.body)
    for sid in ORDER:
        if sid in by:
            parts += [f"#### {by[sid].title}", by[sid].body]
    parts += ["### Before submitting a new issue...", VLLM_CHECKLIST]
    return parts


def _generic(by: dict[SectionId, Section]) -> list[str]:
    parts: list[str] = []
    for sid in (SectionId.SUMMARY, SectionId.ENVIRONMENT, *ORDER):
        if sid in by:
            parts += [f"## {by[sid].title}", by[sid].body]
    return parts
