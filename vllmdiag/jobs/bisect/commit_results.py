"""What a commit bisection answers, as frozen values (their JSON form from
:mod:`vllmdiag.codec`): the first bad and last good commits, every step (a
:class:`~vllmdiag.jobs.bisect.results.Step` whose ``version`` is the commit's sha), the
commits left between them when steps were skipped, and how to reproduce both sides."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.jobs.bisect.commit_info import CommitInfo
from vllmdiag.jobs.bisect.results import Step


@dataclass(frozen=True)
class Reproduce:
    """One side by hand: the env (``install``, shell lines) and the check on it."""

    commit: str
    wheel: str | None
    install: tuple[str, ...]
    check: str


@dataclass(frozen=True)
class CommitBisectResult:
    """``commits``: every commit between the ends on the main branch, from the good end;
    the change lies in ``last_good`` .. ``first_bad``, exactly there when ``exact``, else
    in ``range_left`` (commits between them that could not be checked: no wheel, a leg
    that did not build, a check that said skip). ``threshold``: given, or derived from the
    two ends (``derived``)."""

    package: str
    first_bad: CommitInfo
    last_good: CommitInfo
    exact: bool
    range_left: tuple[CommitInfo, ...]
    commits: tuple[CommitInfo, ...]
    steps: tuple[Step, ...]
    main_ref: str
    wheels: str
    variant: str | None
    notes: tuple[str, ...]
    reproduce: tuple[Reproduce, ...]
    baseline: float | None
    threshold: float | None
    derived: bool
    metric: str | None
    journal: Path
    elapsed_s: float
    by: str = "commit"
