"""What runs on each node of a Ray cluster: one :class:`NodeRunner` actor per node and run.

It builds the run's legs in the node's own env cache, checks them there, and runs cells
with :func:`vllmdiag.services.proc.run` exactly as a local run does: each cell in its own session,
its log and outputs in the node's scratch directory, a timeout or a cancel ending its
whole process tree on the node (a timeout dumps the tree's Python stacks there first, into
the cell's ``hang/`` directory, which the head copies beside the cell's log). The head
polls it for the log as it grows (in bounded chunks) and for the outcome; it never
judges a cell (triage, on the head, does).

If the node's raylet goes away (the node left the cluster), the runner ends every cell
it is running and exits: a cell there is an ERROR on the head and runs again elsewhere,
so nothing may keep holding the node's GPUs. This module does not import Ray.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from vllmdiag.adapters.cluster.wire import LOST, ErrorInfo, LegOutcome, NodeInfo, Poll
from vllmdiag.errors import VllmdiagError
from vllmdiag.plan.workloads import BenchDialect
from vllmdiag.readers.hygiene import DoctorReport, doctor
from vllmdiag.services import proc
from vllmdiag.services.envs.cache import Env, EnvCache, EnvEvent
from vllmdiag.services.envs.spec import LegSpec
from vllmdiag.services.paths import cache_root
from vllmdiag.spine.runner.executor import CellRun, CellTask, LocalExecutor
from vllmdiag.spine.runner.hangdump import HANG_DIR
from vllmdiag.spine.runner.vllm_cli import bench_dialect
from vllmdiag.version import __version__

#: Variables Ray sets for its own workers; a cell sees the node as a local run would.
_RAY_ONLY = ("RAY_", "SPT_NOENV")
_MARKERS = "ray-nodes"


@dataclass
class _Cell:
    task: CellTask
    log: Path
    cancel: threading.Event
    ended: threading.Event
    thread: threading.Thread | None = None
    pid: int | None = None
    done: CellRun | None = None
    error: ErrorInfo | None = None


class NodeRunner:
    """The node side of :class:`vllmdiag.adapters.cluster.RayExecutor` (a threaded actor)."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        self.scratch = Path(tempfile.gettempdir()) / f"vllmdiag-ray-{os.getuid()}"
        self.cells: dict[str, _Cell] = {}
        self.envs: dict[str, Env] = {}
        self.lock = threading.Lock()
        self.cache: EnvCache | None = None
        self.orphaned = False  # the node's raylet is gone: the cells it ends are lost
        raylet = os.environ.get("RAY_RAYLET_PID", "")
        if raylet.isdigit():
            threading.Thread(target=self._watch, args=(int(raylet),), daemon=True).start()

    def info(self) -> NodeInfo:
        """Who this node is, what it holds, and where its cache is (its marker there lets
        the head see which nodes share one cache)."""
        root = cache_root()
        markers = root / _MARKERS
        markers.mkdir(parents=True, exist_ok=True)
        (markers / self.node_id).write_text(socket.gethostname())
        return NodeInfo(
            node_id=self.node_id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            version=__version__,
            scratch=str(self.scratch),
            cache=str(root),
            visible_gpus=os.environ.get("CUDA_VISIBLE_DEVICES"),
            environ=base_environ(),
        )

    def cache_peers(self) -> tuple[str, ...]:
        """The nodes whose marker this node sees in its cache: they share it."""
        with contextlib.suppress(OSError):
            return tuple(sorted(p.name for p in (cache_root() / _MARKERS).iterdir()))
        return ()

    def ensure(self, spec: LegSpec) -> LegOutcome:
        events: list[EnvEvent] = []
        log = self.scratch / "legs" / self.node_id / f"{spec.key()}.log"
        with contextlib.suppress(OSError):
            log.unlink()
        log.parent.mkdir(parents=True, exist_ok=True)
        if self.cache is None:
            self.cache = EnvCache()
        try:
            env = self.cache.ensure(spec, observer=events.append, log=log)
        except VllmdiagError as exc:
            return LegOutcome(None, ErrorInfo.of(exc), tuple(events), _if_any(log))
        self.envs[spec.key()] = env
        return LegOutcome(env, None, tuple(events), _if_any(log))

    def doctor(self, key: str, run_env: dict[str, str]) -> DoctorReport | ErrorInfo:
        try:
            return doctor(self.envs[key], run_env=run_env)
        except VllmdiagError as exc:
            return ErrorInfo.of(exc)

    def dialect(self, key: str, pythonpath: str) -> BenchDialect:
        return bench_dialect(self.envs[key].python, pythonpath)

    def start(self, task: CellTask) -> None:
        """Start a cell (in the background); a fresh attempt replaces an earlier one's
        files on this node."""
        cell_dir = task.cwd.parent
        shutil.rmtree(cell_dir, ignore_errors=True)
        task.cwd.mkdir(parents=True, exist_ok=True)
        cell = _Cell(task, cell_dir / "log.txt", threading.Event(), threading.Event())
        with self.lock:
            self.cells[task.cell_id] = cell
        cell.thread = threading.Thread(target=self._run, args=(cell,), daemon=True)
        cell.thread.start()

    def _run(self, cell: _Cell) -> None:
        task = cell.task

        def spawned(pid: int) -> None:
            cell.pid = pid

        try:
            here = dataclasses.replace(task, log=cell.log, cancel=cell.cancel)
            done = LocalExecutor().run(here, on_spawn=spawned)  # as on one machine
            if self.orphaned:  # ended because the node left: lost, never a stop or a fail
                cell.error = ErrorInfo(LOST, "its raylet is gone", None, None)
            else:
                cell.done = done
        except VllmdiagError as exc:
            cell.error = ErrorInfo.of(exc)
        except BaseException as exc:  # reported to the head, which raises it
            cell.error = ErrorInfo(type(exc).__name__, f"{exc!r}", None, None)
        finally:
            cell.ended.set()

    def poll(self, cell_id: str, offset: int, limit: int, wait_s: float = 0.0) -> Poll:
        """The log from ``offset`` (at most ``limit`` bytes), and how the cell stands;
        first waits up to ``wait_s`` for the cell to end (so the head hears of its end at
        once, and of its log every ``wait_s``)."""
        cell = self.cells[cell_id]
        cell.ended.wait(wait_s)
        finished = cell.done is not None or cell.error is not None
        chunk = b""
        size = 0
        with contextlib.suppress(OSError), open(cell.log, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(offset)
            chunk = fh.read(limit)
        ticks = proc.start_ticks(cell.pid) if cell.pid else None
        return Poll(chunk, size, cell.pid, ticks, cell.done if finished else None, cell.error)

    def cancel(self, cell_id: str) -> None:
        cell = self.cells.get(cell_id)
        if cell is not None:
            cell.cancel.set()

    def files(self, cell_id: str) -> tuple[tuple[str, int], ...]:
        """The cell's output files (relative paths and sizes), regular files only."""
        out = self.cells[cell_id].task.cwd
        found = []
        for root, _dirs, names in os.walk(out):
            for name in names:
                path = Path(root) / name
                if path.is_file() and not path.is_symlink():
                    found.append((str(path.relative_to(out)), path.stat().st_size))
        return tuple(sorted(found))

    def hang_files(self, cell_id: str) -> tuple[tuple[str, int], ...]:
        """The stack dumps of a cell killed at its timeout (its ``hang/`` directory,
        beside its log on this node): absolute paths and sizes."""
        hang = self.cells[cell_id].log.parent / HANG_DIR
        found = []
        with contextlib.suppress(OSError):
            for path in sorted(hang.iterdir()):
                if path.is_file() and not path.is_symlink():
                    found.append((str(path), path.stat().st_size))
        return tuple(found)

    def read(self, path: str, offset: int, limit: int) -> bytes:
        """Bytes of a file this runner wrote (a leg's log, a cell's output)."""
        file = Path(path).resolve()
        if not file.is_relative_to(self.scratch.resolve()):
            raise PermissionError(f"{path} is not in this node's scratch directory")
        with open(file, "rb") as fh:
            fh.seek(offset)
            return fh.read(limit)

    def forget(self, cell_id: str) -> None:
        """The head has the cell's log and outputs: drop them here."""
        with self.lock:
            cell = self.cells.pop(cell_id, None)
        if cell is not None:
            shutil.rmtree(cell.task.cwd.parent, ignore_errors=True)

    def digest(self, path: str) -> str:
        """The sha256 of a file as this node reads it ("" where it cannot)."""
        try:
            return hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            return ""

    def end_tagged(self, prefix: str, grace_s: float) -> tuple[int, ...]:
        return tuple(sorted(proc.end(proc.tagged(prefix), grace_s)))

    def _watch(self, raylet: int) -> None:
        """End every cell, then this process, once the node's raylet is gone."""
        while proc.is_alive(raylet):
            time.sleep(1.0)
        self.orphaned = True
        with self.lock:
            running = list(self.cells.values())
        for cell in running:
            cell.cancel.set()
        for cell in running:
            if cell.thread is not None:
                cell.thread.join(timeout=cell.task.grace_s + 30)
        os._exit(1)


def base_environ() -> dict[str, str]:
    """What a cell on this node inherits: this worker's environment less what vllmdiag
    clears everywhere and what Ray set for its workers."""
    env = proc.clean_environ()
    for name in list(env):
        if name.startswith(_RAY_ONLY):
            del env[name]
    if env.get("PYTHONBREAKPOINT", "").startswith("ray."):
        del env["PYTHONBREAKPOINT"]
    return env


def _if_any(log: Path) -> str:
    """The build log's path, or "" where nothing was built (a reused or existing leg)."""
    return str(log) if log.is_file() else ""


def task_for_node(task: CellTask) -> CellTask:
    """A task as sent to a node: its cancel event stays on the head."""
    return dataclasses.replace(task, cancel=None, collect=None)
