"""``bisect``, the I/O side: each step installs ``PKG==V`` into an env, runs the check and
journals the step, so an interrupted bisect resumes where it stopped.

The journal is JSONL under ``<cache>/bisect/<key>/``: a header naming the question
(package, ends, check, Python, resolver settings) and one line per finished step. A step
is written only once it is complete; an interrupted step is simply run again.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from vllmdiag import proc
from vllmdiag.envs.cache import EnvCache
from vllmdiag.envs.spec import LegSpec, default_python, parse_requirement
from vllmdiag.errors import EnvError, ProcessError, VllmdiagError
from vllmdiag.paths import cache_root
from vllmdiag.window import index
from vllmdiag.window.bisect import Verdict, bisect, majority, metric_verdict, verdict_for_rc
from vllmdiag.window.bisect_journal import SCHEMA, Journal, Step
from vllmdiag.window.probe import check_python
from vllmdiag.window.versions import candidates, parse_date


@dataclass(frozen=True)
class BisectRequest:
    package: str  # PKG or PKG[extra]
    good: str
    bad: str
    command: tuple[str, ...]
    python: str | None = None
    exclude_newer: str | None = None
    with_requirements: tuple[str, ...] = ()
    repeat: int = 1
    metric: str | None = None
    threshold: float | None = None
    timeout_s: float | None = None
    pre: bool = False
    fresh: bool = False  # discard an earlier journal of the same question

    def identity(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "package": self.package,
            "good": self.good,
            "bad": self.bad,
            "command": list(self.command),
            "python": self.python or default_python(),
            "exclude_newer": self.exclude_newer,
            "with": sorted(self.with_requirements),
            "repeat": self.repeat,
            "metric": self.metric,
            "threshold": self.threshold,
            "pre": self.pre,
        }

    def key(self) -> str:
        blob = json.dumps(self.identity(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


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


def bisect_versions(req: BisectRequest) -> list[str]:
    """The candidates from ``good`` to ``bad`` (inclusive), ordered from the good end."""
    pkg = parse_requirement(req.package, where="PKG")
    python, _ = check_python(req.python or default_python())
    good, bad = _version(req.good, "--good"), _version(req.bad, "--bad")
    lo, hi = min(good, bad), max(good, bad)
    when = parse_date(req.exclude_newer) if req.exclude_newer else None
    proj = index.project(pkg.name)
    found = [
        c.version
        for c in candidates(
            proj.files, python=python, pre=req.pre, exclude_newer=when, always=(good, bad)
        )
        if lo <= c.version <= hi
    ]
    for end, v in (("--good", good), ("--bad", bad)):
        if v not in found:
            raise VllmdiagError(
                f"{pkg.name}=={v} is not an installable release here (Python {python})",
                where=end,
                hint="it may be yanked, absent from the index, newer than --exclude-newer "
                "or not built for this Python",
            )
    ordered = found if good < bad else list(reversed(found))
    return [str(v) for v in ordered]


def _version(text: str, where: str) -> Version:
    try:
        return Version(text)
    except ValueError:
        raise VllmdiagError(f"not a version: {text!r}", where=where) from None


def run_bisect(req: BisectRequest, observer: StepObserver | None = None) -> BisectReport:
    start = time.monotonic()
    notify = observer or (lambda _v, _s: None)
    if not req.command:
        raise VllmdiagError("no check command", hint="put it after --, e.g. -- python -c ...")
    if (req.metric is None) != (req.threshold is None):
        raise VllmdiagError("--metric and --threshold go together")
    versions = bisect_versions(req)
    journal = Journal(cache_root() / "bisect" / req.key(), req.identity(), fresh=req.fresh)
    pkg = parse_requirement(req.package, where="PKG")
    extras = f"[{','.join(sorted(pkg.extras))}]" if pkg.extras else ""
    steps: dict[str, Step] = {}
    baseline: list[float] = []

    def check(pos: int) -> Verdict:
        version = versions[pos]
        step = journal.steps.get(version)
        if step is None:
            notify(version, None)
            step = _run_step(
                req, f"{pkg.name}{extras}", version, journal.dir, baseline, is_good_end=pos == 0
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
    requirement: str,
    version: str,
    logs: Path,
    baseline: list[float],
    *,
    is_good_end: bool,
) -> Step:
    start = time.monotonic()
    leg = LegSpec(
        name=f"bisect {requirement}=={version}",
        requirements=(f"{requirement}=={version}", *req.with_requirements),
        python=req.python,
        exclude_newer=req.exclude_newer,
    )
    try:
        env = EnvCache().ensure(leg, log=logs / f"{version}.install.log")
    except (EnvError, ProcessError) as exc:
        return Step(
            version,
            Verdict.SKIP,
            None,
            time.monotonic() - start,
            detail="install failed: " + exc.message[-1500:],
        )
    rcs: list[int | None] = []
    votes: list[Verdict] = []
    values: list[float] = []
    for i in range(max(1, req.repeat)):
        log = logs / f"{version}.run{i}.log"
        log.unlink(missing_ok=True)
        done = proc.run(
            req.command, env=env.child_environ(proc.clean_environ()), log=log, timeout=req.timeout_s
        )
        if done.interrupted:
            raise KeyboardInterrupt
        rc = None if done.timed_out else done.rc
        rcs.append(rc)
        if req.metric is None:
            votes.append(verdict_for_rc(rc))
            continue
        value = read_metric(log.read_text(errors="replace"), req.metric) if rc == 0 else None
        if value is not None:
            values.append(value)
    elapsed = time.monotonic() - start
    if req.metric is None:
        return Step(version, majority(votes), rcs[-1], elapsed, tuple(rcs))
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


def read_metric(text: str, name: str) -> float | None:
    """The last value of ``name`` in a check's output: ``name=1.5``, ``name: 1.5`` or a
    JSON object with that key."""
    last: float | None = None
    pattern = re.compile(rf"(?:^|[\s,{{\"']){re.escape(name)}[\"']?\s*[:=]\s*{_NUMBER}")
    for line in text.splitlines():
        for m in pattern.finditer(line):
            last = float(m.group(1))
    return last
