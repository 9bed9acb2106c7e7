"""How a cell's command is executed, and where.

The cell runner talks to an :class:`Executor` (one blocking ``run`` per cell; the runner
calls it from a thread per running cell, so cells can overlap) and to the :class:`Node`
each cell is placed on: where its legs are built and checked and what its processes see.
:class:`LocalExecutor` runs on this machine, one :class:`LocalNode`; an executor that
spreads cells over several machines also offers ``nodes()`` (:class:`ClusterExecutor`:
Ray, in :mod:`vllmdiag.adapters.cluster`; the CLI chooses the executor and passes it
down). An executor that offers nothing more runs on this machine's node, and is stopped
through :func:`vllmdiag.services.proc.cancel_scope`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from vllmdiag.errors import ProcessError, RunDirError
from vllmdiag.events import Observer, ignore
from vllmdiag.plan.command import command_words
from vllmdiag.plan.workloads import BenchDialect
from vllmdiag.readers.fingerprint.startup import TIMEOUT_LINE
from vllmdiag.readers.hygiene import DoctorReport, doctor
from vllmdiag.services import proc, redact
from vllmdiag.services.envs.cache import Env, EnvCache, EnvEvent
from vllmdiag.services.envs.spec import LegSpec
from vllmdiag.spine.journal import RunDir, host
from vllmdiag.spine.runner import hangdump
from vllmdiag.spine.runner.slots import local_gpu_ids
from vllmdiag.spine.runner.vllm_cli import bench_dialect

#: The id of this machine's node.
LOCAL = "local"


@dataclass(frozen=True)
class CellTask:
    """One cell to run: its command, environment and working directory as the node that
    runs it sees them (``node``), and its log on this machine. ``collect``: where its
    output files go on this machine, when ``cwd`` is on another one. ``cancel``: set when
    the run is stopped (the cell's tree is then ended, as on Ctrl-C)."""

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
    node: str = LOCAL
    collect: Path | None = None
    cancel: threading.Event | None = field(default=None, compare=False)


@dataclass(frozen=True)
class CellRun:
    rc: int | None
    elapsed_s: float
    timed_out: bool
    interrupted: bool
    #: Processes the cell started that still ran when it ended, ended then.
    swept: tuple[int, ...] = ()


Tick = Callable[[float], None]
Spawned = Callable[[int], None]


class Executor(Protocol):
    name: str

    def run(
        self, task: CellTask, on_tick: Tick | None = None, on_spawn: Spawned | None = None
    ) -> CellRun:
        """Run one cell to completion (or timeout, or interrupt) and say how it ended;
        ``on_spawn`` gets the cell's process id (its group and session) once it exists.
        May be called from several threads at once, one cell each."""
        ...


class NodeLost(ProcessError):
    """The node running a cell (or building its leg) left the cluster: the cell is an
    ERROR with this reason, never a fail, and a resume runs it again."""

    def __init__(self, node: str, message: str) -> None:
        super().__init__(
            message,
            hint="resume the run with --resume to run its unfinished cells on the live nodes",
        )
        self.node = node


class Node(Protocol):
    """A machine cells run on. ``gpus``: its GPU ids (None: unknown, not enforced);
    ``remote``: its process ids are not this machine's."""

    id: str
    label: str
    gpus: tuple[str, ...] | None
    remote: bool

    def ensure(self, spec: LegSpec, *, observer: Observer[EnvEvent], log: Path) -> Env:
        """The leg built (or verified and reused) on this node; its build log at ``log``."""
        ...

    def doctor(self, env: Env, run_env: Mapping[str, str]) -> DoctorReport:
        """The hygiene checks of a leg, run on this node."""
        ...

    def dialect(self, env: Env, pythonpath: str) -> BenchDialect:
        """How this node's copy of the leg spells ``vllm bench`` flags."""
        ...

    def out_dir(self, run: RunDir, run_id: str, cell_id: str) -> Path:
        """The cell's working directory, as this node sees it."""
        ...

    def base_environ(self) -> dict[str, str]:
        """What a cell on this node inherits, before its leg and the recipe add theirs."""
        ...

    def end_tagged(self, prefix: str, grace_s: float) -> tuple[int, ...]:
        """End this node's processes whose cell tag starts with ``prefix``."""
        ...

    def sees(self, path: Path) -> bool:
        """Whether this node reads the file at ``path`` as this machine does (same bytes)."""
        ...


@runtime_checkable
class ClusterExecutor(Protocol):
    """An executor that runs cells on several nodes (``CellTask.node`` picks one)."""

    name: str

    def nodes(self) -> Sequence[Node]: ...

    def run(
        self, task: CellTask, on_tick: Tick | None = None, on_spawn: Spawned | None = None
    ) -> CellRun: ...


def timeout_line(task: CellTask, when: datetime, silent_s: float | None) -> str:
    """The line a cell's log ends with when it is killed at its timeout (the start-up
    timeline ends there, and says how long the log had been silent)."""
    silent = f"; log silent {silent_s:.1f} s" if silent_s is not None else ""
    stamp = when.isoformat(timespec="milliseconds")
    return f"{TIMEOUT_LINE} {stamp} local time after {task.timeout:g} s{silent}\n"


def dump_before_kill(task: CellTask) -> proc.OnTimeout:
    """What :func:`proc.run` does at a cell's timeout, before it ends the tree: end the
    log with :func:`timeout_line` and dump the tree's Python stacks into the cell's
    directory (beside its log)."""

    def hook(root: int, pids: set[int]) -> None:
        when = datetime.now()
        silent = hangdump.silent_s(task.log)
        with contextlib.suppress(OSError), open(task.log, "a+b") as fh:
            cut = fh.tell() > 0 and fh.seek(fh.tell() - 1) >= 0 and fh.read(1) != b"\n"
            fh.write((b"\n" if cut else b"") + timeout_line(task, when, silent).encode())
        hangdump.dump_tree(
            root,
            pids,
            task.log.parent,
            timeout_s=task.timeout,
            killed_at=when.isoformat(timespec="milliseconds"),
            silent_s=silent,
        )

    return hook


def log_header(task: CellTask) -> str:
    """The first lines of a cell's log: when it started (local time, the clock vLLM's own
    log stamps use, so start-up phases line up) and the command, quoted as the dry-run
    prints it (secrets ``***``, a control character escaped: one line)."""
    started = datetime.now().isoformat(timespec="milliseconds")
    command = command_words(redact.argv(task.argv))
    return f"# vllmdiag: cell started {started} local time\n$ {command}\n"


class LocalNode:
    """This machine: legs from the env cache, checks and cells run here."""

    remote = False

    def __init__(self, gpus: tuple[str, ...] | None, cache: EnvCache) -> None:
        self.id = LOCAL
        self.label = host()
        self.gpus = gpus
        self.cache = cache

    def ensure(self, spec: LegSpec, *, observer: Observer[EnvEvent] = ignore, log: Path) -> Env:
        return self.cache.ensure(spec, observer=observer, log=log)

    def doctor(self, env: Env, run_env: Mapping[str, str]) -> DoctorReport:
        return doctor(env, run_env=run_env)

    def dialect(self, env: Env, pythonpath: str) -> BenchDialect:
        return bench_dialect(env.python, pythonpath)

    def out_dir(self, run: RunDir, run_id: str, cell_id: str) -> Path:
        # absolute: the cell runs in this directory, so a relative --out given as
        # {out_dir} would name a path below itself
        return run.out_dir(cell_id).absolute()

    def base_environ(self) -> dict[str, str]:
        return proc.clean_environ()

    def end_tagged(self, prefix: str, grace_s: float) -> tuple[int, ...]:
        return tuple(sorted(proc.end(proc.tagged(prefix), grace_s)))

    def sees(self, path: Path) -> bool:
        return True


class LocalExecutor:
    """This node: each cell in its own process group. ``gpus`` (``--gpus N``) sets how
    many GPU slots it schedules; unset, the GPUs this machine shows."""

    name = "local"

    def __init__(self, gpus: int | None = None) -> None:
        if gpus is not None:
            local_gpu_ids(gpus)  # a wrong count is refused before any run directory is made
        self.gpus = gpus

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
                cancel=task.cancel,
                on_timeout=dump_before_kill(task),
            )
        except OSError as exc:  # the log cannot be written: the tool's failure, not the cell's
            raise RunDirError(
                f"cannot write the log of cell {task.cell_id}: {exc.strerror}",
                where=str(task.log),
                hint="free some space (or fix permissions) on the run directory's disk, "
                "then resume the run with --resume",
            ) from None
        return CellRun(done.rc, done.elapsed_s, done.timed_out, done.interrupted, done.swept)


def nodes_for(executor: Executor, cache: EnvCache) -> tuple[list[Node], bool]:
    """The nodes an executor runs cells on, and whether they form a cluster (their
    results then name their node). An executor that offers none runs on this machine."""
    if isinstance(executor, ClusterExecutor):
        return list(executor.nodes()), True
    gpus = executor.gpus if isinstance(executor, LocalExecutor) else None
    return [LocalNode(local_gpu_ids(gpus), cache)], False
