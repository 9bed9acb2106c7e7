"""``bisect --by commit``, the I/O side: the main branch's commits between the ends
(:mod:`~vllmdiag.jobs.bisect.git_range`), each step a leg with the package from that commit's
wheel (:mod:`~vllmdiag.jobs.bisect.commit_wheels`) and the rest resolved as of the commit's
date, the check run on it (``git bisect run`` rules, or a metric with repeats), every
step journaled so an interrupted bisection resumes. A commit without a wheel, a leg that
did not build or a check that said skip is a skip, never bad.

With ``--metric`` and no ``--threshold`` both ends are measured first and must differ
beyond their noise (:func:`~vllmdiag.jobs.bisect.endpoints.endpoint_gap`), or the bisection
refuses to start. Emits :data:`~vllmdiag.jobs.bisect.events.BisectEvent`; never prints.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from packaging.utils import canonicalize_name

from vllmdiag import codec
from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note, Observer, fan_out, ignore
from vllmdiag.jobs.bisect import commit_plan
from vllmdiag.jobs.bisect.command_check import leg_runs
from vllmdiag.jobs.bisect.commit_info import CommitInfo
from vllmdiag.jobs.bisect.commit_results import CommitBisectResult
from vllmdiag.jobs.bisect.commit_wheels import commit_wheel
from vllmdiag.jobs.bisect.endpoints import endpoint_gap
from vllmdiag.jobs.bisect.events import BisectEvent, CandidatesListed, StepFinished, StepStarted
from vllmdiag.jobs.bisect.git_range import DEFAULT_REPOS, cached_clone, commit_range
from vllmdiag.jobs.bisect.journal import BisectJournal
from vllmdiag.jobs.bisect.request import BisectRequest, CommitQuestion, question
from vllmdiag.jobs.bisect.results import CheckRun, Step
from vllmdiag.jobs.bisect.search import (
    EndpointError,
    StepVerdict,
    bisect_positions,
    majority,
    metric_verdict,
)
from vllmdiag.services import atomic, redact
from vllmdiag.services.paths import cache_root
from vllmdiag.spine.measuring import measuring


def bisect_commits(
    req: BisectRequest, observer: Observer[BisectEvent] = ignore
) -> CommitBisectResult:
    """The first commit on the main branch between ``req.good`` and ``req.bad`` whose
    wheel checks bad."""
    start = time.monotonic()
    target = commit_plan.validate_commits(req)
    plan = commit_plan.plan(req, target)
    stale = None
    repo = req.repo
    if repo is None:
        repo, stale = cached_clone(req.repo_url or DEFAULT_REPOS[canonicalize_name(plan.name)])
    found = commit_range(repo, req.good, req.bad, req.main)
    commits = found.commits
    asked = replace(
        question(req, target),
        commits=CommitQuestion(
            found.good_base, found.bad_base, found.main_ref, redact.url(plan.template), plan.variant
        ),
    )
    journal = BisectJournal(cache_root() / "bisect" / asked.key, asked, fresh=req.fresh)
    emit = fan_out(journal, observer)
    if stale is not None:
        emit(Note("warning", stale))
    for note in found.notes:
        emit(Note("info", note))
    emit(CandidatesListed(plan.label, tuple(c.commit for c in commits), journal.path))
    known = [c for c in commits if c.commit in journal.steps]
    if known:
        emit(Note("info", f"{len(known)} step(s) known from this question's journal"))
    state: dict[str, float | None] = {"baseline": None, "threshold": req.threshold}
    measured: dict[str, Step] = {}
    steps: dict[str, Step] = {}

    def measure(c: CommitInfo) -> Step:
        step = journal.steps.get(c.commit) or measured.get(c.commit)
        if step is None:
            emit(StepStarted(c.commit))
            step = _run_step(plan, c, journal.dir)
            measured[c.commit] = step
        return step

    def check(pos: int) -> StepVerdict:
        c = commits[pos]
        step = measure(c)
        if pos == 0 and req.metric is not None and step.value is not None:
            state["baseline"] = state["baseline"] or step.value
        if not step.resumed:
            step = _judge(plan, step, state["baseline"], state["threshold"])
        steps[c.commit] = step
        emit(StepFinished(step))
        return step.verdict

    derived = False
    with measuring(observer=emit):  # every step measures: one job on the node at a time
        if req.metric is not None and req.threshold is None:
            state["baseline"], state["threshold"] = _derive(plan, measure, commits, emit)
            derived = True
        try:
            bracket, _ = bisect_positions(len(commits), check)
        except EndpointError as exc:
            raise _endpoint_error(exc, commits[exc.position], steps) from None
    order = {c.commit: i for i, c in enumerate(commits)}
    first_bad, last_good = commits[bracket.first_bad], commits[bracket.last_good]
    result = CommitBisectResult(
        package=plan.label,
        first_bad=first_bad,
        last_good=last_good,
        exact=bracket.exact,
        range_left=commits[bracket.last_good + 1 : bracket.first_bad],
        commits=commits,
        steps=tuple(sorted(steps.values(), key=lambda s: order[s.version])),
        main_ref=found.main_ref,
        wheels=redact.url(plan.template),
        variant=plan.variant,
        notes=found.notes,
        reproduce=tuple(
            commit_plan.reproduce(plan, c, journal.dir) for c in (last_good, first_bad)
        ),
        baseline=state["baseline"],
        threshold=state["threshold"],
        derived=derived,
        metric=req.metric,
        journal=journal.path,
        elapsed_s=round(time.monotonic() - start, 3),
    )
    # The journal ends with the answer (a line the journal's reader skips on resume), so
    # that ``report --bisect`` can take the journal itself.
    atomic.append_jsonl(journal.path, {"result": codec.dump(result)})
    return result


def _derive(
    plan: commit_plan.Plan,
    measure: Callable[[CommitInfo], Step],
    commits: tuple[CommitInfo, ...],
    emit: Observer[BisectEvent],
) -> tuple[float, float]:
    """Both ends measured, and the threshold between them; refuses ends inside noise."""
    assert plan.req.metric is not None
    ends = []
    for end, c in (("--good", commits[0]), ("--bad", commits[-1])):
        step: Step = measure(c)
        if not step.values:
            raise VllmdiagError(
                f"the {end} end {c.short} gave no value of {plan.req.metric}: "
                f"{step.detail or 'the check failed'}",
                where=end,
                hint="the check must print NAME=VALUE on both ends for a metric bisection",
            )
        ends.append(step.values)
    gap = endpoint_gap(ends[0], ends[1])
    emit(Note("info", f"{plan.req.metric}: {gap.reason}"))
    if not gap.differs or gap.threshold is None:
        raise VllmdiagError(
            f"the two ends do not differ beyond their noise: {gap.reason}",
            where="--metric",
            hint="raise --repeat to measure the noise better, check a metric that moved, "
            "or give --threshold to bisect anyway",
        )
    emit(Note("info", f"threshold {gap.threshold:g} (the ends' midpoint, derived)"))
    return gap.good, gap.threshold


def _endpoint_error(exc: EndpointError, c: CommitInfo, steps: dict[str, Step]) -> VllmdiagError:
    """The end that did not check as the user said, named with what its step found."""
    step = steps.get(c.commit)
    said = (step.detail.splitlines() or [""])[-1] if step is not None and step.detail else ""
    end = exc.end.value
    return VllmdiagError(
        f"the --{end} end {c.short} ({c.subject}) checks {exc.got.value}, not {end}"
        + (f": {said[:300]}" if said else ""),
        where=f"--{end}",
        hint=f"give a --{end} end whose wheel installs here and checks {end}; "
        "a bisection needs both ends to check as said",
    )


def _run_step(plan: commit_plan.Plan, c: CommitInfo, logs: Path) -> Step:
    t0 = time.monotonic()
    found = commit_wheel(plan.template, c.commit, plan.variant, plan.name, plan.python)
    runs: list[CheckRun] | Step
    if found.env is not None:
        if plan.target is not None:
            raise VllmdiagError(
                f"the entry of {c.short} is a prebuilt environment ({found.env}): a recipe "
                "cell runs on its own leg",
                where="--recipe",
                hint="give the check as a command after -- for prebuilt environments",
            )
        runs = leg_runs(plan.req, plan.label, None, c.commit, logs, existing=found.env)
        return _step(c, runs, found.said, t0)
    if found.file is None:
        said = f"no wheel for {c.commit}: {found.said}"
        return Step(c.commit, StepVerdict.SKIP, None, _since(t0), detail=said)
    pin = f"{plan.label} @ {found.file.url}"
    if plan.target is not None:
        from vllmdiag.jobs.bisect.recipe_cell import cell_runs

        runs = cell_runs(
            plan.target, pin, logs / c.commit, repeat=plan.req.repeat, metric=plan.req.metric
        )
    else:
        runs = leg_runs(plan.req, pin, commit_plan.as_of(c.committed), c.commit, logs)
    return _step(c, runs, found.said, t0)


def _step(c: CommitInfo, runs: list[CheckRun] | Step, said: str, t0: float) -> Step:
    if isinstance(runs, Step):  # the leg did not build: a skip
        return replace(runs, elapsed_s=_since(t0))
    rcs = tuple(r.rc for r in runs)
    values = tuple(r.value for r in runs if r.value is not None)
    value = statistics.median(values) if values else None
    verdict = majority([r.verdict for r in runs])
    detail = "; ".join(x for x in (runs[-1].detail, said) if x)  # the check, then its wheel
    return Step(c.commit, verdict, rcs[-1], _since(t0), rcs, value, detail=detail, values=values)


def _judge(
    plan: commit_plan.Plan, step: Step, baseline: float | None, threshold: float | None
) -> Step:
    """A metric step's verdict against the good end; a failure step is as it ran."""
    metric = plan.req.metric
    if metric is None:
        return step
    if step.value is None:
        if step.rcs and step.verdict is not StepVerdict.SKIP:
            said = f"no value of {metric} in the check's output"
            return replace(step, verdict=StepVerdict.SKIP, detail=said)
        return step
    if baseline is None or threshold is None:
        return replace(step, verdict=StepVerdict.SKIP)
    ratio = step.value / baseline if baseline else float("nan")
    verdict = metric_verdict(step.value, baseline, threshold)
    values = ", ".join(f"{v:g}" for v in step.values)
    said = f"{metric}={step.value:g} ratio={ratio:.3f} ({values})"
    return replace(step, verdict=verdict, detail=said)


def _since(start: float) -> float:
    return round(time.monotonic() - start, 3)
