"""``bisect --by commit``, the I/O side: the main branch's commits between the ends
(:mod:`~vllmdiag.bisect.git_range`), each step a leg with the package from that commit's
wheel (:mod:`~vllmdiag.bisect.commit_wheels`) and the rest resolved as of the commit's
date, the check run on it (``git bisect run`` rules, or a metric with repeats), every
step journaled so an interrupted bisection resumes. A commit without a wheel, a leg that
did not build or a check that said skip is a skip, never bad.

With ``--metric`` and no ``--threshold`` both ends are measured first and must differ
beyond their noise (:func:`~vllmdiag.bisect.endpoints.endpoint_gap`), or the bisection
refuses to start. Emits :data:`~vllmdiag.bisect.events.BisectEvent`; never prints.
"""

from __future__ import annotations

import shlex
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

from packaging.utils import canonicalize_name

from vllmdiag import atomic, codec, redact
from vllmdiag.bisect.command_check import leg_runs
from vllmdiag.bisect.commit_info import CommitInfo
from vllmdiag.bisect.commit_results import CommitBisectResult, Reproduce
from vllmdiag.bisect.commit_wheels import commit_wheel
from vllmdiag.bisect.endpoints import endpoint_gap
from vllmdiag.bisect.events import BisectEvent, CandidatesListed, StepFinished, StepStarted
from vllmdiag.bisect.git_range import DEFAULT_REPOS, cached_clone, commit_range
from vllmdiag.bisect.journal import BisectJournal
from vllmdiag.bisect.recipe_cell import RecipeCell
from vllmdiag.bisect.request import (
    BisectRequest,
    CommitQuestion,
    question,
    validate_check,
)
from vllmdiag.bisect.results import CheckRun, Step
from vllmdiag.bisect.search import StepVerdict, bisect_positions, majority, metric_verdict
from vllmdiag.bisect.wheel_template import (
    DEFAULT_TEMPLATES,
    check_template,
    machine_variant,
    variant_in,
)
from vllmdiag.envs.spec import LegSpec, default_python
from vllmdiag.errors import VllmdiagError
from vllmdiag.events import Note, Observer, fan_out, ignore
from vllmdiag.measuring import measuring
from vllmdiag.paths import cache_root
from vllmdiag.pkgindex import arguments as args
from vllmdiag.pkgindex import config


@dataclass(frozen=True)
class _Plan:
    req: BisectRequest
    target: RecipeCell | None
    label: str  # PKG or PKG[extra]
    name: str
    template: str
    variant: str | None
    python: str


def as_of(date: str) -> str:
    """A git ISO date as the UTC timestamp uv's ``--exclude-newer`` takes."""
    return datetime.fromisoformat(date).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def validate_commits(req: BisectRequest) -> RecipeCell | None:
    """Every argument of a commit bisection, before any git, network or env work."""
    pkg = args.package(req.package, versions_allowed=False)
    if req.good == req.bad:
        raise VllmdiagError(
            f"--good and --bad are the same commit ({req.good})",
            where="--bad",
            hint="give a commit (or tag) that checks good and a later one that checks bad",
        )
    if req.exclude_newer:
        raise VllmdiagError(
            "--exclude-newer is each commit's own date in a commit bisection",
            where="--exclude-newer",
            hint="drop it: every step resolves the rest as of the commit's date",
        )
    if req.pre:
        raise VllmdiagError("--pre is for release bisection", where="--pre", hint="drop it")
    if (
        req.repo is not None
        and not (req.repo / ".git").exists()
        and not (req.repo / "HEAD").exists()
    ):
        raise VllmdiagError(
            f"{req.repo} is not a git repository",
            where="--repo",
            hint="give a clone of the project (a blobless one is enough)",
        )
    if req.repo is not None and req.repo_url is not None:
        raise VllmdiagError(
            "give either --repo or --repo-url, not both",
            where="--repo-url",
            hint="--repo names your clone; --repo-url what vllmdiag clones",
        )
    name = canonicalize_name(pkg.name)
    if req.repo is None and req.repo_url is None and name not in DEFAULT_REPOS:
        raise VllmdiagError(
            f"no repository known for {pkg.name}",
            where="--repo",
            hint="give its clone with --repo PATH or its URL with --repo-url URL",
        )
    if req.wheels is None and name not in DEFAULT_TEMPLATES:
        raise VllmdiagError(
            f"no per-commit wheel index known for {pkg.name}",
            where="--wheels",
            hint="give its index URL template, e.g. --wheels https://host/{commit}/{variant}",
        )
    check_template(req.wheels or DEFAULT_TEMPLATES[name])
    if req.variant is not None and not req.variant.replace("_", "").isalnum():
        raise VllmdiagError(
            f"not a variant: {req.variant!r}", where="--variant", hint="e.g. cu129, cu130 or cpu"
        )
    return validate_check(req, threshold_required=False)


def _plan(req: BisectRequest, target: RecipeCell | None) -> _Plan:
    pkg = args.package(req.package, versions_allowed=False)
    extras = f"[{','.join(sorted(pkg.extras))}]" if pkg.extras else ""
    name = canonicalize_name(pkg.name)
    template = req.wheels or DEFAULT_TEMPLATES[name]
    variant = req.variant
    if variant is None and "variant" in check_template(template):
        leg = _cell_leg(target) if target else None
        named = variant_in([*leg.requirements, *leg.extra_index_urls]) if leg else None
        variant = named or machine_variant()
    python = target.python if target else (req.python or default_python())
    return _Plan(req, target, pkg.name + extras, pkg.name, template, variant, python)


def _cell_leg(target: RecipeCell) -> LegSpec:
    from vllmdiag.plan import cells as planmod

    return planmod.find_cell(planmod.expand(target.recipe), target.cell).leg


def bisect_commits(
    req: BisectRequest, observer: Observer[BisectEvent] = ignore
) -> CommitBisectResult:
    """The first commit on the main branch between ``req.good`` and ``req.bad`` whose
    wheel checks bad."""
    start = time.monotonic()
    target = validate_commits(req)
    plan = _plan(req, target)
    repo = req.repo or cached_clone(req.repo_url or DEFAULT_REPOS[canonicalize_name(plan.name)])
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
        bracket, _ = bisect_positions(len(commits), check)
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
        reproduce=tuple(_reproduce(plan, c) for c in (last_good, first_bad)),
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
    plan: _Plan,
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


def _run_step(plan: _Plan, c: CommitInfo, logs: Path) -> Step:
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
        from vllmdiag.bisect.recipe_cell import cell_runs

        runs = cell_runs(
            plan.target, pin, logs / c.commit, repeat=plan.req.repeat, metric=plan.req.metric
        )
    else:
        runs = leg_runs(plan.req, pin, as_of(c.committed), c.commit, logs)
    return _step(c, runs, found.said, t0)


def _step(c: CommitInfo, runs: list[CheckRun] | Step, said: str, t0: float) -> Step:
    if isinstance(runs, Step):  # the leg did not build: a skip
        return replace(runs, elapsed_s=_since(t0))
    rcs = tuple(r.rc for r in runs)
    values = tuple(r.value for r in runs if r.value is not None)
    value = statistics.median(values) if values else None
    verdict = majority([r.verdict for r in runs])
    detail = runs[-1].detail or said
    return Step(c.commit, verdict, rcs[-1], _since(t0), rcs, value, detail=detail, values=values)


def _judge(plan: _Plan, step: Step, baseline: float | None, threshold: float | None) -> Step:
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


def _reproduce(plan: _Plan, c: CommitInfo) -> Reproduce:
    found = commit_wheel(plan.template, c.commit, plan.variant, plan.name, plan.python)
    if found.env is not None:
        check = f"PATH={shlex.quote(str(found.env / 'bin'))}:$PATH {shlex.join(plan.req.command)}"
        return Reproduce(c.commit, None, (f"# the prebuilt environment {found.env}",), check)
    url = found.file.url if found.file else None
    venv = f"bisect-{c.commit[:10]}"
    pin = f"{plan.label} @ {url}" if url else f"{plan.label} (no wheel: {found.said})"
    custom = config.custom_index()
    index = f" --default-index {shlex.quote(redact.url(custom))}" if custom else ""
    if plan.target is not None:
        install: tuple[str, ...] = (
            f"# recipe {plan.target.path}, cell {plan.target.cell}, its leg with {pin}",
        )
        check = f"vllmdiag bisect {plan.label} --by commit --good {c.commit} ... --recipe " + (
            f"{shlex.quote(str(plan.target.path))} --cell {shlex.quote(plan.target.cell)}"
        )
        return Reproduce(c.commit, url, install, check)
    extra = "".join(f" {shlex.quote(r)}" for r in plan.req.with_requirements)
    install = (
        f"uv venv --python {shlex.quote(plan.python)} {venv}",
        f"uv pip install --python {venv}/bin/python {shlex.quote(pin)}{extra}"
        f" --exclude-newer {as_of(c.committed)}{index}",
    )
    check = f"PATH={venv}/bin:$PATH {shlex.join(plan.req.command)}"
    return Reproduce(c.commit, url, install, check)


def _since(start: float) -> float:
    return round(time.monotonic() - start, 3)
