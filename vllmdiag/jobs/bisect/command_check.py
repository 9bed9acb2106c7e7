"""The command check of ``bisect`` (``-- CMD...``): each step installs ``PKG==V`` (and
``--with``) into a cached env and runs the command in it, ``--repeat`` times. Exit codes
follow ``git bisect run``; with ``--metric``, the value is read from the command's output.

What a step installed (or why it could not) is written beside the journal, with the index
redacted; uv's own log is not kept (it would hold the index's password).
"""

from __future__ import annotations

import re
from pathlib import Path

from vllmdiag.errors import EnvError, ProcessError
from vllmdiag.jobs.bisect.request import BisectRequest
from vllmdiag.jobs.bisect.results import CheckRun, Step
from vllmdiag.jobs.bisect.search import StepVerdict, verdict_for_rc
from vllmdiag.services import atomic, proc, redact
from vllmdiag.services.envs.cache import EnvCache
from vllmdiag.services.envs.spec import LegSpec
from vllmdiag.services.pkgindex import config

_NUMBER = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"


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
    environment (``pin`` and ``--with`` then checked there, not installed); a SKIP step
    (named ``version``) when the env could not be built or is not whole."""
    configured = config.configured_index()
    leg = LegSpec(
        name=f"bisect {pin}" if existing is None else f"bisect {pin} ({existing})",
        requirements=(pin, *req.with_requirements),
        python=req.python if existing is None else None,
        exclude_newer=exclude_newer if existing is None else None,
        index_url=config.custom_index() if existing is None else None,
        existing=existing,
    )
    install_log = logs / f"{version}.install.log"
    try:
        # No log to the env cache: it would write uv's command line, index password and
        # all. What the step installed is written here instead.
        env = EnvCache().ensure(leg)
    except (EnvError, ProcessError) as exc:
        said = redact.text(exc.message)
        atomic.write_text(install_log, f"install failed ({redact.url(configured)}):\n{said}\n")
        return Step(version, StepVerdict.SKIP, None, 0.0, detail="install failed: " + said[-1500:])
    atomic.write_text(
        install_log,
        f"env {env.path} (index {redact.url(configured)})\n" + "\n".join(env.freeze) + "\n",
    )
    runs: list[CheckRun] = []
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
            value = read_metric(bounded_text(log), req.metric)
        runs.append(CheckRun(rc, verdict_for_rc(rc), value, detail=said_by(log, rc, req)))
    return runs


def said_by(log: Path, rc: int | None, req: BisectRequest) -> str:
    """Why a run checked as it did, in a line: a timeout, the root cause triage finds in
    its output, or its last line."""
    if rc is None:
        return f"timed out after {req.timeout_s:g}s" if req.timeout_s else "timed out"
    if rc == 0:
        return "exit 0"
    from vllmdiag.readers.triage import triage_file  # loaded when a check fails

    try:
        cause = triage_file(log).root_cause
    except Exception:  # a reader's fault is no reason to lose the step
        cause = None
    if cause is not None and cause.signature:
        return redact.text(f"exit {rc}: {cause.signature}")[:300]
    lines = [line for line in bounded_text(log, tail=True).splitlines() if line.strip()]
    return redact.text(f"exit {rc}" + (f": {lines[-1].strip()}" if lines else ""))[:300]


#: A check's output read back for a metric or its last line: its last 4 MiB.
_TAIL = 4 << 20


def bounded_text(log: Path, *, tail: bool = True) -> str:
    """The end of ``log`` (at most 4 MiB), as text; empty where it cannot be read."""
    try:
        with log.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - _TAIL) if tail else 0)
            return fh.read(_TAIL).decode("utf-8", "replace")
    except OSError:
        return ""


def read_metric(text: str, name: str) -> float | None:
    """The last value of ``name`` in a check's output: ``name=1.5``, ``name: 1.5`` or a
    JSON object with that key."""
    last: float | None = None
    pattern = re.compile(rf"(?:^|[\s,{{\"']){re.escape(name)}[\"']?\s*[:=]\s*{_NUMBER}")
    for line in text.splitlines():
        for m in pattern.finditer(line):
            last = float(m.group(1))
    return last
