"""What ``bisect`` answers, as frozen values: one :class:`Step` per version checked (also
the bisect journal's lines) and the :class:`BisectResult`. Their JSON form comes from
:mod:`vllmdiag.codec`; field names are the JSON keys."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vllmdiag.jobs.bisect.search import StepVerdict


@dataclass(frozen=True)
class CheckRun:
    """One run of a step's check (a step runs it ``--repeat`` times): its exit code (None:
    timed out), verdict, metric value if any, and what it said."""

    rc: int | None
    verdict: StepVerdict
    value: float | None = None
    detail: str = ""


@dataclass(frozen=True)
class Step:
    """One version checked: the verdict, the exit code of the last run (None: timed out
    or never ran), every run's code, the metric value (``--metric``), what the check
    said, and whether the step was read back from the journal instead of run now."""

    version: str
    verdict: StepVerdict
    rc: int | None
    elapsed_s: float
    rcs: tuple[int | None, ...] = ()
    value: float | None = None
    detail: str = ""
    resumed: bool = False
    values: tuple[float, ...] = ()  # every run's metric value (``value`` is their median)


@dataclass(frozen=True)
class BisectResult:
    """``candidates``: every version between the ends, from the good end; the change lies
    in ``last_good`` .. ``first_bad``, exactly there when ``exact``, else somewhere among
    ``skipped_between`` (versions that could not be checked). ``baseline``: the good
    end's metric value (``--metric``)."""

    package: str
    first_bad: str
    last_good: str
    exact: bool
    skipped_between: tuple[str, ...]
    candidates: tuple[str, ...]
    steps: tuple[Step, ...]
    baseline: float | None
    journal: Path
    elapsed_s: float
