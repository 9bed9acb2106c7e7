"""``bisect``, the I/O side: each step installs ``PKG==V`` into an env, runs the check and
journals the step, so an interrupted bisect resumes where it stopped.

The journal is JSONL under ``<cache>/bisect/<key>/``: a header naming the question
(package, ends, check, Python, resolver settings) and one line per finished step. A step
is written only once it is complete; an interrupted step is simply run again.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from vllmdiag import atomic, proc, redact
from vllmdiag.envs.cache import EnvCache
from vllmdiag.envs.spec import LegSpec
from vllmdiag.errors import EnvError, ProcessError
from vllmdiag.paths import cache_root
from vllmdiag.pkgindex import arguments as args
from vllmdiag.pkgindex import config
from vllmdiag.window.bisect import Verdict, bisect, majority, metric_verdict, verdict_for_rc
from vllmdiag.window.bisect_journal import Journal, Step
from vllmdiag.window.bisect_request import BisectRequest, bisect_versions, journal_key, validate

if TYPE_CHECKING:
    from vllmdiag.window.bisect_recipe import RecipeCell

__all__ = ["BisectReport", "BisectRequest", "bisect_versions", "read_metric", "run_bisect"]


@dataclass(frozen=True)
class BisectReport:
    package: str
    versions: tuple[str, ...]
    first_bad: str
    last_good: str
    exact: bool
    skipped: tuple[str, ...]
    steps: tuple[Step, ...]
    journal: Path
    elapsed_s: float
    baseline: float | None = None
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {
            "package": self.package,
            "first_bad": self.first_bad,
            "last_good": self.last_good,
            "exact": self.exact,
            "skipped_between": list(self.skipped),
            "candidates": list(self.versions),
            "steps": [s.to_json() for s in self.steps],
            "baseline": self.baseline,
            "journal": str(self.journal),
            "elapsed_s": round(self.elapsed_s, 3),
        }


StepObserver = Callable[[str, Step | None], None]


def run_bisect(req: BisectRequest, observer: StepObserver | None = None) -> BisectReport:
    start = time.monotonic()
    notify = observer or (lambda _v, _s: None)
    target = validate(req)
    identity = req.identity()
    if target is not None:
        identity.update(recipe=str(target.path), recipe_digest=target.digest, cell=target.cell)
        req = replace(req, python=target.python, exclude_newer=target.exclude_newer)
    versions = bisect_versions(req)
    journal = Journal(cache_root() / "bisect" / journal_key(identity), identity, fresh=req.fresh)
    pkg = args.package(req.package, versions_allowed=False)
    extras = f"[{','.join(sorted(pkg.extras))}]" if pkg.extras else ""
    steps: dict[str, Step] = {}
    baseline: list[float] = []

    def check(pos: int) -> Verdict:
        version = versions[pos]
        step = journal.steps.get(version)
        if step is None:
            notify(version, None)
            step = _run_step(
                req,
                target,
                f"{pkg.name}{extras}",
                version,
                journal.dir,
                baseline,
                is_good_end=pos == 0,
            )
            journal.append(step)
        elif req.metric and pos == 0 and step.value is not None:
            baseline.append(step.value)
        steps[version] = step
        notify(version, step)
        return step.verdict

    outcome, _ = bisect(len(versions), check)
    order = {v: i for i, v in enumerate(versions)}
    return BisectReport(
        package=pkg.name + extras,
        versions=tuple(versions),
        first_bad=versions[outcome.first_bad],
        last_good=versions[outcome.last_good],
        exact=outcome.exact,
        skipped=tuple(versions[i] for i in outcome.skipped),
        steps=tuple(sorted(steps.values(), key=lambda s: order[s.version])),
        journal=journal.path,
        elapsed_s=time.monotonic() - start,
        baseline=baseline[0] if baseline else None,
    )


def _run_step(
    req: BisectRequest,
    target: RecipeCell | None,
    requirement: str,
    version: str,
    logs: Path,
    baseline: list[float],
    *,
    is_good_end: bool,
) -> Step:
    start = time.monotonic()
    runs = (
        _cell_runs(req, target, f"{requirement}=={version}", logs / version)
        if target is not None
        else _command_runs(req, requirement, version, logs)
    )
    if isinstance(runs, Step):  # the env could not be built: a skip
        return replace(runs, elapsed_s=time.monotonic() - start)
    rcs = [run[0] for run in runs]
    votes = [run[1] for run in runs]
    values = [run[2] for run in runs if run[2] is not None]
    said = runs[-1][3]
    elapsed = time.monotonic() - start
    if req.metric is None:
        return Step(version, majority(votes), rcs[-1], elapsed, tuple(rcs), detail=said)
    if not values:
        return Step(
            version,
            Verdict.SKIP,
            rcs[-1],
            elapsed,
            tuple(rcs),
            detail=f"no value of {req.metric} in the check's output",
        )
    value = statistics.median(values)
    if is_good_end:
        baseline.append(value)
    assert req.threshold is not None
    verdict = metric_verdict(value, baseline[0], req.threshold) if baseline else Verdict.SKIP
    ratio = value / baseline[0] if baseline and baseline[0] else float("nan")
    return Step(
        version,
        verdict,
        rcs[-1],
        elapsed,
        tuple(rcs),
        value,
        detail=f"{req.metric}={value:g} ratio={ratio:.3f}",
    )


_NUMBER = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"


Run = tuple[int | None, Verdict, float | None, str]  # rc, verdict, metric value, detail


def _command_runs(
    req: BisectRequest, requirement: str, version: str, logs: Path
) -> list[Run] | Step:
    configured = config.configured_index()
    leg = LegSpec(
        name=f"bisect {requirement}=={version}",
        requirements=(f"{requirement}=={version}", *req.with_requirements),
        python=req.python,
        exclude_newer=req.exclude_newer,
        index_url=None if configured == config.DEFAULT_INDEX else configured,
    )
    install_log = logs / f"{version}.install.log"
    try:
        # No log to the env cache: it would write uv's command line, index password and
        # all. What the step installed is written here instead.
        env = EnvCache().ensure(leg)
    except (EnvError, ProcessError) as exc:
        said = redact.text(exc.message)
        atomic.write_text(install_log, f"install failed ({redact.url(configured)}):\n{said}\n")
        return Step(version, Verdict.SKIP, None, 0.0, detail="install failed: " + said[-1500:])
    atomic.write_text(
        install_log,
        f"env {env.path} (index {redact.url(configured)})\n" + "\n".join(env.freeze) + "\n",
    )
    runs: list[Run] = []
    for i in range(max(1, req.repeat)):
        log = logs / f"{version}.run{i}.log"
        log.unlink(missing_ok=True)
        done = proc.run(
            req.command, env=env.child_environ(proc.clean_environ()), log=log, timeout=req.timeout_s
        )
        if done.interrupted:
            raise KeyboardInterrupt
        rc = None if done.timed_out else done.rc
        value = None
        if req.metric is not None and rc == 0:
            value = read_metric(log.read_text(errors="replace"), req.metric)
        runs.append((rc, verdict_for_rc(rc), value, ""))
    return runs


def _cell_runs(req: BisectRequest, target: RecipeCell, pin: str, out: Path) -> list[Run]:
    from vllmdiag.window.bisect_recipe import check_cell

    runs: list[Run] = []
    for i in range(max(1, req.repeat)):
        got = check_cell(target, pin, out / f"run{i}", req.metric)
        value = got.value if got.verdict is Verdict.GOOD or req.metric is None else None
        runs.append((got.rc, got.verdict, value, got.detail))
    return runs


def read_metric(text: str, name: str) -> float | None:
    """The last value of ``name`` in a check's output: ``name=1.5``, ``name: 1.5`` or a
    JSON object with that key."""
    last: float | None = None
    pattern = re.compile(rf"(?:^|[\s,{{\"']){re.escape(name)}[\"']?\s*[:=]\s*{_NUMBER}")
    for line in text.splitlines():
        for m in pattern.finditer(line):
            last = float(m.group(1))
    return last
