"""The command check of ``bisect`` (``-- CMD...``): each step is one run of the cell
runner (:func:`~vllmdiag.spine.runner.run_cells`): a leg of ``PKG==V`` (and ``--with``),
the command its one workload (its braces kept literal), run ``--repeat`` times, each run
an ordinary cell (own process group, log header, timeout dump, swept children, judged,
journaled) in the step's run directory beside the bisect journal, in the directory
vllmdiag was started in (a relative path in the command means what it meant there).
Exit codes follow ``git bisect run``; with ``--metric``, the value is read from the
command's output by the runner's own metric reader (:func:`metric_spec`).

What a step installed (or why it could not) is also written beside the journal, with
the index redacted.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

from vllmdiag.events import Observer
from vllmdiag.jobs.bisect.request import BisectRequest
from vllmdiag.jobs.bisect.results import CheckRun, Step
from vllmdiag.jobs.bisect.search import StepVerdict, verdict_for_rc
from vllmdiag.model.outcome import CellResult, Outcome
from vllmdiag.model.recipe import NAME, Baseline, LegConfig, MetricSpec, Recipe, WorkloadConfig
from vllmdiag.model.verdict import BASELINE
from vllmdiag.plan.cells import CellPlan
from vllmdiag.services import atomic, redact
from vllmdiag.services.envs.spec import LegSpec
from vllmdiag.services.pkgindex import config
from vllmdiag.spine.runner import CellHooks, CellTask, RunOptions, Wrapped, run_cells

_NUMBER = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
#: The check's one workload (and its leg) in a step's recipe.
CHECK = "check"
#: A step's timeout where ``--timeout`` gives none: the longest a recipe allows.
_NO_TIMEOUT_S = 30 * 86400.0


def command_runs(
    req: BisectRequest, requirement: str, version: str, logs: Path
) -> list[CheckRun] | Step:
    """The check's runs on ``requirement==version``; a SKIP step when the env could not
    be built."""
    return leg_runs(req, f"{requirement}=={version}", req.exclude_newer, version, logs)


def leg_runs(
    req: BisectRequest,
    pin: str,
    exclude_newer: str | None,
    version: str,
    logs: Path,
    *,
    existing: Path | None = None,
) -> list[CheckRun] | Step:
    """The check's runs on a leg of ``pin`` (a requirement: ``PKG==V`` or ``PKG @ URL``)
    and ``--with``, resolved as of ``exclude_newer``, or on the prebuilt ``existing``
    environment (``pin`` and ``--with`` then checked there, not installed), as cells of
    one run in ``logs/<version>/``; a SKIP step (named ``version``) when the env could
    not be built or is not whole."""
    configured = config.configured_index()
    leg = LegSpec(
        name=f"bisect {pin}" if existing is None else f"bisect {pin} ({existing})",
        requirements=(pin, *req.with_requirements),
        python=req.python if existing is None else None,
        exclude_newer=exclude_newer if existing is None else None,
        index_url=config.custom_index() if existing is None else None,
        existing=existing,
    )
    out = logs / version
    if out.exists():
        shutil.rmtree(out)  # an interrupted earlier attempt at this very step
    cells = [CellPlan(f"run{i}", BASELINE, CHECK, i + 1, leg) for i in range(max(1, req.repeat))]
    options = RunOptions(out=out, runs_root=logs, name=CHECK, allow_contaminated=True,
                         job={"job": "bisect", "pin": pin}, command="bisect")  # fmt: skip
    ran = run_cells(check_recipe(req, leg), cells, options, hooks=InWorkdir(Path.cwd()))
    if ran.interrupted:
        raise KeyboardInterrupt
    install_log = logs / f"{version}.install.log"
    failure = ran.failures.get(leg.key())
    env = ran.envs.get(leg.key())
    if failure is not None or env is None:
        said = redact.text(failure.message if failure else "the leg was not built")
        atomic.write_text(install_log, f"install failed ({redact.url(configured)}):\n{said}\n")
        return Step(version, StepVerdict.SKIP, None, 0.0, detail="install failed: " + said[-1500:])
    atomic.write_text(
        install_log,
        f"env {env.path} (index {redact.url(configured)})\n" + "\n".join(env.freeze) + "\n",
    )
    return [_check_run(r, ran.run.log_path(r.id), req) for r in ran.results]


class InWorkdir(CellHooks[object]):
    """A check's cells run in ``workdir`` (where vllmdiag was started), not in their
    output directories."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def wrap(self, cell: CellPlan, task: CellTask, emit: Observer[object]) -> Wrapped:
        return Wrapped(replace(task, cwd=self.workdir))


def check_recipe(req: BisectRequest, leg: LegSpec) -> Recipe:
    """A step's recipe: ``leg`` (the cells carry it), the command as the one workload
    (braces literal), ``--metric`` read by :func:`metric_spec`, ``--timeout`` its
    timeout."""
    metrics = (metric_spec(req.metric),) if req.metric is not None else ()
    return Recipe(
        name=CHECK,
        question="does this version check good or bad?",
        legs={CHECK: LegConfig(requirements=leg.requirements, path=leg.existing)},
        baseline=Baseline(leg=CHECK),
        workloads={CHECK: WorkloadConfig(command=tuple(_literal(w) for w in req.command))},
        timeout=req.timeout_s or _NO_TIMEOUT_S,
        metrics=metrics,
    )


def _literal(word: str) -> str:
    return word.replace("{", "{{").replace("}", "}}")


def metric_regex(name: str) -> str:
    """The last value of ``name`` in a check's output: ``name=1.5``, ``name: 1.5`` or a
    JSON object with that key."""
    return rf"(?:^|[\s,{{\"']){re.escape(name)}[\"']?[ \t]*[:=][ \t]*{_NUMBER}"


def metric_spec(name: str) -> MetricSpec:
    """``--metric NAME`` as the runner reads a metric (the regex of :func:`metric_regex`
    over the cell's log, its last match)."""
    return MetricSpec(name=name if re.match(NAME, name) else "metric", regex=metric_regex(name))


def read_metric(text: str, name: str) -> float | None:
    """:func:`metric_regex`'s last value in ``text`` (as the runner reads a log)."""
    found = list(re.finditer(metric_regex(name), text, re.MULTILINE))
    return float(found[-1].group(1)) if found else None


def _check_run(result: CellResult, log: Path, req: BisectRequest) -> CheckRun:
    if result.outcome is Outcome.ERROR and result.rc is None:  # it never ran (or the tool)
        return CheckRun(None, StepVerdict.SKIP, None, result.reason[:300])
    rc = None if result.outcome is Outcome.TIMEOUT else result.rc
    value = None
    if req.metric is not None and rc == 0:
        value = next(iter(result.metrics.values()), None)
    return CheckRun(rc, verdict_for_rc(rc), value, said_by(log, rc, req, result))


def said_by(log: Path, rc: int | None, req: BisectRequest, result: CellResult) -> str:
    """Why a run checked as it did, in a line: a timeout, the root cause the runner's
    judge found in its output, or its last line."""
    if rc is None:
        return f"timed out after {req.timeout_s:g}s" if req.timeout_s else "timed out"
    if rc == 0:
        return "exit 0"
    cause = result.root_cause
    if cause is not None and cause.signature:
        return redact.text(f"exit {rc}: {cause.signature}")[:300]
    lines = [line for line in _output(log).splitlines() if line.strip()]
    return redact.text(f"exit {rc}" + (f": {lines[-1].strip()}" if lines else ""))[:300]


#: A check's output read back for its last line: its last 4 MiB.
_TAIL = 4 << 20
_HEADER = "# vllmdiag: cell started "


def _output(log: Path) -> str:
    """What the check wrote (the end of its log, at most 4 MiB, less the header)."""
    try:
        with log.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - _TAIL))
            text = fh.read(_TAIL).decode("utf-8", "replace")
    except OSError:
        return ""
    if text.startswith(_HEADER):
        text = text.split("\n", 2)[2] if text.count("\n") >= 2 else ""
    return text
