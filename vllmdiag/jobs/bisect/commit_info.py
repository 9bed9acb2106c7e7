"""One commit of a commit bisection, as a value: its sha, subject line, author and commit
dates and the pull request its subject names (``... (#1234)``, GitHub's squash-merge form).
Pure: :mod:`vllmdiag.jobs.bisect.git_range` reads these out of git."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PR = re.compile(r"\(#(\d+)\)\s*$")


def pr_number(subject: str) -> int | None:
    """The pull request a squash-merged subject ends with, ``Fix X (#1234)`` → 1234."""
    m = _PR.search(subject)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class CommitInfo:
    """``date`` is the author date; ``committed`` the commit date (when it landed on the
    main branch: what the rest of a step's resolve is pinned to)."""

    commit: str
    subject: str
    date: str
    committed: str
    pr: int | None = None

    @property
    def short(self) -> str:
        return self.commit[:10]

    @classmethod
    def of(cls, commit: str, subject: str, date: str, committed: str) -> CommitInfo:
        return cls(commit, subject, date, committed, pr_number(subject))
