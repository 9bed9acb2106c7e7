"""How a cell's command is executed. The cell runner talks only to :class:`Executor`,
so a cluster executor (Ray) can slot in beside :class:`LocalExecutor` without touching
the rest."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from vllmdiag import proc, redact
from vllmdiag.errors import RunDirError


@dataclass(frozen=True)
class CellTask:
    cell_id: str
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path
    log: Path
    timeout: float
    grace_s: float = proc.DEFAULT_GRACE_S
    #: The leg's interpreter (an executor that wraps the command, e.g. under a profiler,
    #: finds the leg's own tools beside it).
    python: Path | None = None


@dataclass(frozen=True)
class CellRun:
    rc: int | None
    elapsed_s: float
    timed_out: bool
    interrupted: bool


Tick = Callable[[float], None]
Spawned = Callable[[int], None]


class Executor(Protocol):
    name: str

    def run(
        self, task: CellTask, on_tick: Tick | None = None, on_spawn: Spawned | None = None
    ) -> CellRun:
        """Run one cell to completion (or timeout, or interrupt) and say how it ended;
        ``on_spawn`` gets the cell's process id (its group and session) once it exists."""
        ...


def log_header(task: CellTask) -> str:
    """The first lines of a cell's log: when it started (local time, the clock vLLM's own
    log stamps use, so start-up phases line up) and the command."""
    started = datetime.now().isoformat(timespec="milliseconds")
    return (
        f"# vllmdiag: cell started {started} local time\n$ {shlex.join(redact.argv(task.argv))}\n"
    )


class LocalExecutor:
    """This node, one cell at a time, each in its own process group."""

    name = "local"

    def run(
        self, task: CellTask, on_tick: Tick | None = None, on_spawn: Spawned | None = None
    ) -> CellRun:
        try:
            with open(task.log, "a", encoding="utf-8") as fh:
                fh.write(log_header(task))
            done = proc.run(
                task.argv,
                env=task.env,
                cwd=task.cwd,
                timeout=task.timeout,
                log=task.log,
                grace_s=task.grace_s,
                on_tick=on_tick,
                on_spawn=on_spawn,
            )
        except OSError as exc:  # the log cannot be written: the tool's failure, not the cell's
            raise RunDirError(
                f"cannot write the log of cell {task.cell_id}: {exc.strerror}",
                where=str(task.log),
                hint="free some space (or fix permissions) on the run directory's disk, "
                "then resume the run with --resume",
            ) from None
        return CellRun(done.rc, done.elapsed_s, done.timed_out, done.interrupted)
