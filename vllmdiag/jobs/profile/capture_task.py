"""A capture as a cell's task: the cell's command wrapped under a profiler.

:class:`CaptureWrap` is what a profile's
:class:`~vllmdiag.jobs.profile.hooks.ProfileHooks` hand the cell runner for each capture
cell: the runner's own executor runs the wrapped command (its own process group, its log
header, its timeout dump), the runner judges and journals the cell as any other; only
the command differs, and afterwards the capture's record (``capture.json``) is written
atomically beside the traces. Each cell's capture directory is its output directory.

A capture the backend cannot make (no nsys, a command the torch profiler cannot reach)
or one that left no trace although the workload succeeded raises
:class:`~vllmdiag.jobs.profile.capture.CaptureUnavailable`: the cell is an ERROR, never a
verdict. :func:`capture` runs one capture outside a run directory (scripts, benchmarks),
through the same wrap and the same executor.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from vllmdiag import codec
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
from vllmdiag.spine.runner import CellRun, CellTask, LocalExecutor, Wrapped

PYTHON = "{python}"  # in a workload's argv: the leg's interpreter
OUT_DIR = "{out_dir}"  # in a workload's argv: this capture's own directory


@dataclass(frozen=True)
class CellCapture:
    """What a cell captures: which side, under which backend. ``script``: the command is
    ``python SCRIPT ...`` for the torch launcher (None: a ``.py`` second word says so)."""

    side: str
    backend: Backend
    script: bool | None = None


class CaptureWrap:
    """Wraps capture cells' tasks under their backends (see the module's docstring).
    ``workdir``: where the commands run (default: each cell's output directory, as for
    every cell)."""

    def __init__(self, settings: CaptureSettings, *, workdir: Path | None = None) -> None:
        self.settings = settings
        self.workdir = workdir
        self._lock = threading.Lock()
        self._captures: dict[str, CaptureResult] = {}

    def made(self, cell_id: str) -> CaptureResult | None:
        """The capture this wrap made for the cell (None: none yet)."""
        with self._lock:
            return self._captures.get(cell_id)

    def wrap(self, what: CellCapture, task: CellTask, emit: Observer[ProfileEvent]) -> Wrapped:
        """``task`` under ``what.backend``, capturing into its working directory."""
        python = task.python or Path(task.argv[0])
        dest = task.cwd
        _fresh(dest)
        try:
            cmd = command(what.backend, python, task.argv, dest, self.settings, task.env,
                          script=what.script)  # fmt: skip
        except CaptureUnavailable as exc:
            self._record(failed(what.side, what.backend, dest, task.log, exc.message,
                                cell=task.cell_id), emit)  # fmt: skip
            raise
        atomic.write_text(dest / ARGV, json.dumps(redact.argv(cmd.argv)))
        emit(CaptureStarted(what.side, what.backend, task.cell_id, cmd.argv, cmd.notes))

        def after(done: CellRun) -> None:
            ran = proc.Completed(cmd.argv, done.rc, done.elapsed_s, done.timed_out,
                                 done.interrupted, swept=done.swept)  # fmt: skip
            result = finish(what.side, what.backend, cmd, dest, task.log, ran, task.cell_id)
            self._record(result, emit)
            if not result.ok and ran.ok:
                raise CaptureUnavailable(
                    f"the {what.backend.value} capture failed: {result.reason}",
                    where=str(dest),
                    hint="the workload itself exited 0; see the cell's log",
                )

        wrapped = replace(task, argv=cmd.argv, env={**task.env, **cmd.env},
                          cwd=self.workdir or task.cwd)  # fmt: skip
        return Wrapped(wrapped, after)

    def _record(self, result: CaptureResult, emit: Observer[ProfileEvent]) -> None:
        atomic.write_json(result.out / RECORD, redact.data(codec.dump(result)))
        with self._lock:
            self._captures[result.cell] = result
        emit(CaptureFinished(result))


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

    def words(self) -> tuple[str, ...]:
        """The command before a leg is chosen: ``{python}`` where the leg's interpreter
        goes, ``{out_dir}`` inside a word where the capture's directory goes."""
        return (PYTHON, str(self.script), *self.script_args) if self.script else self.argv

    def render(self, python: Path, out: Path) -> tuple[str, ...]:
        """The command for the leg of ``python``, capturing into ``out``."""
        return tuple(
            str(python) if t == PYTHON else t.replace(OUT_DIR, str(out)) for t in self.words()
        )

    def template(self) -> tuple[str, ...]:
        """:meth:`words` as a recipe's command template (other braces kept literal), so
        that the one command renderer gives what :meth:`render` gives."""
        return tuple(
            PYTHON if t == PYTHON else _literal(t).replace("{{out_dir}}", OUT_DIR)
            for t in self.words()
        )

    def environ(self, python: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The child's environment: ``base`` (default: a clean one), this workload's
        variables, and the leg's bin directory first on PATH."""
        env = dict(proc.clean_environ() if base is None else base)
        env.update(self.env)
        env["PATH"] = f"{python.parent}:{env.get('PATH', '')}"
        return env


def _literal(word: str) -> str:
    """``word`` as a command template that renders to itself."""
    return word.replace("{", "{{").replace("}", "}}")


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
    wrap = CaptureWrap(w.settings)
    cell = f"{side}.{chosen.dirname}"
    what = CellCapture(side, chosen, script=w.script is not None)
    task = CellTask(cell, w.render(python, dest), w.environ(python, environ), dest,
                    dest / "capture.log", timeout, python=python)  # fmt: skip
    try:
        wrapped = wrap.wrap(what, task, ignore)
        done = LocalExecutor().run(wrapped.task)
        if done.interrupted:
            raise KeyboardInterrupt
        wrapped.after(done)
    except CaptureUnavailable:
        pass
    made = wrap.made(cell)
    assert made is not None  # every way through the wrap records the capture
    return made
