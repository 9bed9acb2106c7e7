"""The executor that captures: a cell's command run under a profiler.

:class:`CaptureExecutor` is an :class:`~vllmdiag.spine.runner.Executor`, so a profile's sides
run through the cell runner exactly as matrix cells do (legs built and checked, each cell
in its own process group, judged, journaled, resumable); only how the command is executed
differs. Each cell's capture directory is its output directory, where the capture's
record (``capture.json``) is written atomically beside the traces.

A capture the backend cannot make (no nsys, a command the torch profiler cannot reach)
or one that left no trace although the workload succeeded raises
:class:`~vllmdiag.jobs.profile.capture.CaptureUnavailable`: the cell is an ERROR, never a
verdict. :func:`capture` runs one capture outside a run directory (scripts, benchmarks).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from vllmdiag import codec
from vllmdiag.errors import RunDirError
from vllmdiag.events import Observer, ignore
from vllmdiag.jobs.profile.capture import (
    ARGV,
    RECORD,
    Backend,
    CaptureResult,
    CaptureSettings,
    CaptureUnavailable,
    backend,
    command,
    failed,
    finish,
)
from vllmdiag.jobs.profile.events import CaptureFinished, CaptureStarted, ProfileEvent
from vllmdiag.services import atomic, proc, redact
from vllmdiag.spine.runner.executor import CellRun, CellTask, Spawned, Tick, log_header

PYTHON = "{python}"  # in a workload's argv: the leg's interpreter
OUT_DIR = "{out_dir}"  # in a workload's argv: this capture's own directory


@dataclass(frozen=True)
class CellCapture:
    """What a cell captures: which side, under which backend. ``script``: the command is
    ``python SCRIPT ...`` for the torch launcher (None: a ``.py`` second word says so)."""

    side: str
    backend: Backend
    script: bool | None = None


class CaptureExecutor:
    """Runs each planned cell's command under its backend (see the module's docstring).
    ``workdir``: where the commands run (default: each cell's output directory, as for
    every cell)."""

    name = "capture"

    def __init__(
        self,
        settings: CaptureSettings,
        emit: Observer[ProfileEvent] = ignore,
        *,
        workdir: Path | None = None,
    ) -> None:
        self.settings = settings
        self.emit = emit
        self.workdir = workdir
        self.plan: dict[str, CellCapture] = {}
        #: The captures made by this executor, by cell id.
        self.captures: dict[str, CaptureResult] = {}

    def run(
        self, task: CellTask, on_tick: Tick | None = None, on_spawn: Spawned | None = None
    ) -> CellRun:
        what = self.plan[task.cell_id]
        python = task.python or Path(task.argv[0])
        dest = task.cwd
        _fresh(dest)
        try:
            cmd = command(what.backend, python, task.argv, dest, self.settings, task.env,
                          script=what.script)  # fmt: skip
        except CaptureUnavailable as exc:
            self._record(failed(what.side, what.backend, dest, task.log, exc.message,
                                cell=task.cell_id))  # fmt: skip
            raise
        atomic.write_text(dest / ARGV, json.dumps(redact.argv(cmd.argv)))
        self.emit(CaptureStarted(what.side, what.backend, task.cell_id, cmd.argv, cmd.notes))
        try:
            with open(task.log, "a", encoding="utf-8") as fh:
                fh.write(log_header(replace(task, argv=cmd.argv)))
            done = proc.run(
                cmd.argv,
                env={**task.env, **cmd.env},
                cwd=self.workdir or task.cwd,
                timeout=task.timeout,
                log=task.log,
                grace_s=task.grace_s,
                on_tick=on_tick,
                on_spawn=on_spawn,
            )
        except OSError as exc:  # the log cannot be written: the tool's failure
            raise RunDirError(
                f"cannot write the log of cell {task.cell_id}: {exc.strerror}",
                where=str(task.log),
                hint="free some space (or fix permissions) on the run directory's disk",
            ) from None
        if done.interrupted:
            return CellRun(done.rc, done.elapsed_s, done.timed_out, True, done.swept)
        result = finish(what.side, what.backend, cmd, dest, task.log, done, task.cell_id)
        self._record(result)
        if not result.ok and done.ok:
            raise CaptureUnavailable(
                f"the {what.backend.value} capture failed: {result.reason}",
                where=str(dest),
                hint="the workload itself exited 0; see the cell's log",
            )
        return CellRun(done.rc, done.elapsed_s, done.timed_out, False, done.swept)

    def _record(self, result: CaptureResult) -> None:
        atomic.write_json(result.out / RECORD, redact.data(codec.dump(result)))
        self.captures[result.cell] = result
        self.emit(CaptureFinished(result))


def _fresh(dest: Path) -> None:
    """An empty capture directory: nothing an earlier attempt left can read as a trace."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)


def read_record(dest: Path) -> CaptureResult | None:
    """The capture a directory's ``capture.json`` records, or None (none, or unreadable)."""
    try:
        return codec.load(CaptureResult, atomic.read_json(dest / RECORD))
    except (OSError, ValueError):  # a pydantic ValidationError is a ValueError
        return None


@dataclass(frozen=True)
class Workload:
    """What to capture outside a recipe: a script (driven by the launcher) or a command
    (``argv``); ``{python}`` and ``{out_dir}`` in either are filled in per capture."""

    script: Path | None = None
    script_args: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    warmup: int = CaptureSettings.warmup
    steps: int = CaptureSettings.steps
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def settings(self) -> CaptureSettings:
        return CaptureSettings(self.warmup, self.steps)

    def render(self, python: Path, out: Path) -> tuple[str, ...]:
        """The command for the leg of ``python``, capturing into ``out``."""
        tokens = (str(self.script), *self.script_args) if self.script else self.argv
        filled = tuple(str(python) if t == PYTHON else t.replace(OUT_DIR, str(out)) for t in tokens)
        return (str(python), *filled) if self.script else filled

    def environ(self, python: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The child's environment: ``base`` (default: a clean one), this workload's
        variables, and the leg's bin directory first on PATH."""
        env = dict(proc.clean_environ() if base is None else base)
        env.update(self.env)
        env["PATH"] = f"{python.parent}:{env.get('PATH', '')}"
        return env


def capture(
    side: str,
    python: Path,
    w: Workload,
    out: Path,
    which: str | Backend = Backend.TORCH,
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float = 3600,
) -> CaptureResult:
    """Capture ``w`` on the leg of ``python`` under ``which`` into ``out/<backend>/``
    (its log: ``capture.log`` there), outside any run directory."""
    chosen = which if isinstance(which, Backend) else backend(which)
    if w.script is None and not w.argv:
        raise CaptureUnavailable("a workload needs a script or a command line")
    dest = out / chosen.dirname
    executor = CaptureExecutor(w.settings)
    cell = f"{side}.{chosen.dirname}"
    executor.plan[cell] = CellCapture(side, chosen, script=w.script is not None)
    task = CellTask(cell, w.render(python, dest), w.environ(python, environ), dest,
                    dest / "capture.log", timeout, python=python)  # fmt: skip
    try:
        done = executor.run(task)
    except CaptureUnavailable:
        return executor.captures[cell]
    if done.interrupted:
        raise KeyboardInterrupt
    return executor.captures[cell]
