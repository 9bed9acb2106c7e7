"""``bisect``, the I/O side: each step installs ``PKG==V``, runs the check and reports the
step; the journal (a subscriber of the same events) keeps it, so an interrupted bisect
resumes where it stopped. Emits :data:`~vllmdiag.jobs.bisect.events.BisectEvent`; returns a
frozen :class:`~vllmdiag.jobs.bisect.results.BisectResult`; never prints."""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note, Observer, fan_out, ignore
from vllmdiag.jobs.bisect.command_check import command_runs
from vllmdiag.jobs.bisect.events import BisectEvent, CandidatesListed, StepFinished, StepStarted
from vllmdiag.jobs.bisect.journal import BisectJournal
from vllmdiag.jobs.bisect.request import BisectRequest, bisect_versions, question, validate
from vllmdiag.jobs.bisect.results import BisectResult, CheckRun, Step
from vllmdiag.jobs.bisect.search import (
    StepVerdict,
    SwappedEnds,
    bisect_positions,
    majority,
    metric_verdict,
)
from vllmdiag.services.paths import cache_root
from vllmdiag.services.pkgindex import arguments as args
from vllmdiag.spine.measuring import measuring

if TYPE_CHECKING:
    from vllmdiag.jobs.bisect.recipe_cell import RecipeCell


def bisect_releases(req: BisectRequest, observer: Observer[BisectEvent] = ignore) -> BisectResult:
    """The first release between ``req.good`` and ``req.bad`` that checks bad."""
    start = time.monotonic()
    target = validate(req)
    asked = question(req, target)
    if target is not None:
        req = replace(req, python=target.python, exclude_newer=target.exclude_newer)
    versions = bisect_versions(req)
    journal = BisectJournal(cache_root() / "bisect" / asked.key, asked, fresh=req.fresh)
    emit = fan_out(journal, observer)
    pkg = args.package(req.package, versions_allowed=False)
    extras = f"[{','.join(sorted(pkg.extras))}]" if pkg.extras else ""
    emit(CandidatesListed(pkg.name + extras, tuple(versions), journal.path))
    known = [v for v in versions if v in journal.steps]
    if known:
        emit(Note("info", f"{len(known)} step(s) known from this question's journal"))
    steps: dict[str, Step] = {}
    baseline: list[float] = []

    def check(pos: int) -> StepVerdict:
        version = versions[pos]
        step = journal.steps.get(version)
        if step is None:
            emit(StepStarted(version))
            requirement = f"{pkg.name}{extras}"
            step = _run_step(req, target, requirement, version, journal.dir, baseline, pos == 0)
        elif req.metric and pos == 0 and step.value is not None:
            baseline.append(step.value)
        steps[version] = step
        emit(StepFinished(step))
        return step.verdict

    with measuring(observer=emit):  # every step measures: one job on the node at a time
        try:
            found, _ = bisect_positions(len(versions), check)
        except SwappedEnds as exc:
            raise VllmdiagError(
                f"--good {req.good} checks bad and --bad {req.bad} checks good",
                where="--good/--bad",
                hint=f"swap them: --good {req.bad} --bad {req.good}",
            ) from exc
    order = {v: i for i, v in enumerate(versions)}
    return BisectResult(
        package=pkg.name + extras,
        first_bad=versions[found.first_bad],
        last_good=versions[found.last_good],
        exact=found.exact,
        skipped_between=tuple(versions[i] for i in found.skipped),
        candidates=tuple(versions),
        steps=tuple(sorted(steps.values(), key=lambda s: order[s.version])),
        baseline=baseline[0] if baseline else None,
        journal=journal.path,
        elapsed_s=_since(start),
    )


def _run_step(
    req: BisectRequest,
    target: RecipeCell | None,
    requirement: str,
    version: str,
    logs: Path,
    baseline: list[float],
    is_good_end: bool,
) -> Step:
    start = time.monotonic()
    runs = (
        _cell_runs(req, target, f"{requirement}=={version}", logs / version)
        if target is not None
        else command_runs(req, requirement, version, logs)
    )
    if isinstance(runs, Step):  # the env could not be built: a skip
        return replace(runs, elapsed_s=_since(start))
    rcs = tuple(run.rc for run in runs)
    values = [run.value for run in runs if run.value is not None]
    elapsed = _since(start)
    if req.metric is None:
        verdict = majority([run.verdict for run in runs])
        return Step(version, verdict, rcs[-1], elapsed, rcs, detail=runs[-1].detail)
    if not values:
        said = f"no value of {req.metric} in the check's output"
        return Step(version, StepVerdict.SKIP, rcs[-1], elapsed, rcs, detail=said)
    value = statistics.median(values)
    if is_good_end:
        baseline.append(value)
    assert req.threshold is not None
    verdict = metric_verdict(value, baseline[0], req.threshold) if baseline else StepVerdict.SKIP
    ratio = value / baseline[0] if baseline and baseline[0] else float("nan")
    said = f"{req.metric}={value:g} ratio={ratio:.3f}"
    return Step(version, verdict, rcs[-1], elapsed, rcs, value, detail=said, values=tuple(values))


def _cell_runs(req: BisectRequest, target: RecipeCell, pin: str, out: Path) -> list[CheckRun]:
    from vllmdiag.jobs.bisect.recipe_cell import cell_runs  # the matrix engine: loaded when used

    return cell_runs(target, pin, out, repeat=req.repeat, metric=req.metric)


def _since(start: float) -> float:
    return round(time.monotonic() - start, 3)
