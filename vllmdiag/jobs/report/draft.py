"""What ``vllmdiag report`` drafts, as frozen values: where the issue goes and why, its
title, its Markdown body, the body's sections, and what was redacted from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class TargetKind(str, Enum):
    """Whose defect the evidence shows.

    ``vllm``: the root cause is raised in vLLM's code (or the failing program is vLLM and
    the log places it nowhere else). ``dependency-metadata``: a consumer's declared range
    admits versions of a dependency in which it cannot work (a window shows it); the
    issue goes to the consumer. ``dependency``: the root cause is raised in a
    dependency's code. ``caller``: a framework driving vLLM calls it wrongly; the issue
    goes to that framework. ``not-a-bug``: the user's settings, the machine, or the
    user's own script: no upstream issue (the draft says what to change).
    ``undetermined``: nothing measured names a project.
    """

    VLLM = "vllm"
    DEPENDENCY_METADATA = "dependency-metadata"
    DEPENDENCY = "dependency"
    CALLER = "caller"
    NOT_A_BUG = "not-a-bug"
    UNDETERMINED = "undetermined"


class Template(str, Enum):
    """The issue template the body follows: vLLM's bug report form, or a plain one."""

    VLLM_BUG = "vllm-bug"
    GENERIC = "generic"


@dataclass(frozen=True)
class Target:
    """Where the issue goes (``project``: a distribution name, empty when
    undetermined), which template it follows, and why the evidence points there."""

    project: str
    kind: TargetKind
    template: Template
    reason: str


class SectionId(str, Enum):
    SUMMARY = "summary"
    ENVIRONMENT = "environment"
    REPRODUCTION = "reproduction"
    ROOT_CAUSE = "root-cause"
    EVIDENCE = "evidence"
    WINDOW = "window"
    BISECT = "bisect"
    BLAST_RADIUS = "blast-radius"
    PROFILE = "profile"
    DUPLICATES = "duplicates"
    OTHER_CAUSES = "other-causes"


@dataclass(frozen=True)
class Section:
    """One part of the body: its id, its heading, its Markdown (redacted)."""

    id: SectionId
    title: str
    body: str


@dataclass(frozen=True)
class Report:
    """The drafted issue. ``body`` is the whole issue text (the sections in the
    template's order, then what was redacted); ``redactions`` counts what was masked,
    by kind (every kind listed, zero included)."""

    target: Target
    title: str
    body: str
    sections: tuple[Section, ...]
    redactions: dict[str, int] = field(default_factory=dict)

    def section(self, id: SectionId) -> Section | None:
        return next((s for s in self.sections if s.id is id), None)
