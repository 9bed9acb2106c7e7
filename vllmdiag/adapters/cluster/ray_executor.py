"""``--executor ray``: the cells of a run spread over the nodes of a Ray cluster.

Connecting starts one :class:`~vllmdiag.adapters.cluster.node_runner.NodeRunner` actor on every
live node (pinned there, taking no CPU or GPU from Ray's accounting: vllmdiag places the
cells itself, by GPU slots). Without an address it starts a local Ray instance, so the
same command runs on a laptop. The head keeps the run directory: each running cell's log
is copied from its node as it grows, its output files once it ends, and only the head
writes the journal, so ``--resume`` works as on one machine.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, BinaryIO

from vllmdiag.adapters.cluster.node_runner import NodeRunner, task_for_node
from vllmdiag.adapters.cluster.ray_node import CHUNK, RayNode
from vllmdiag.adapters.cluster.wire import LOST, NodeInfo, Poll
from vllmdiag.errors import ConfigError, ProcessError, RunDirError, VllmdiagError
from vllmdiag.spine.runner.executor import CellRun, CellTask, NodeLost, Spawned, Tick
from vllmdiag.spine.runner.hangdump import HANG_DIR
from vllmdiag.spine.runner.slots import check_gpu_count
from vllmdiag.version import __version__

INSTALL = "pip install 'vllmdiag[ray]'"
#: How often a running cell's log is copied from its node (seconds); its end is heard of
#: at once (the node answers a poll as soon as the cell ends).
POLL_S = 0.25
#: How a node's death reads once its cell has ended but before its outputs are here: the
#: cell's outcome is lost with them, so it is an ERROR like a death mid-cell.
AFTER = "before its cell's outputs reached the head"
#: How long the runners may take to start on every node (seconds).
START_TIMEOUT_S = 180.0


def import_ray() -> Any:
    """Ray, or an error that says how to install it."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise VllmdiagError(
            f"--executor ray needs Ray, which is not installed here ({exc})",
            hint=f"install it with: {INSTALL} (on every node of the cluster too), or run "
            "on this machine with --executor local",
        ) from None


class RayExecutor:
    """Runs cells on the nodes of a Ray cluster; use it as a context manager (it
    connects on entry, and on exit stops its runners and any Ray instance it started).
    ``gpus``: the GPUs of the local instance it starts (fake slots on a machine without
    GPUs); a cluster's nodes declare theirs when they join (``ray start --num-gpus``)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        gpus: int | None = None,
        init_options: Mapping[str, Any] | None = None,
    ) -> None:
        if address and gpus is not None:
            raise ConfigError(
                "--gpus sets the GPUs of a Ray instance vllmdiag starts itself, not of a "
                "cluster's nodes",
                hint="a node declares its GPUs when it joins (ray start --num-gpus N); "
                "drop --gpus, or drop --address to start a local instance",
            )
        check_gpu_count(gpus)
        self.address = address
        self.gpus = gpus
        self.init_options = dict(init_options or {})
        self.ray: Any = None
        self.owned = False
        self._restore: Callable[[], None] = _nothing
        self._nodes: dict[str, RayNode] = {}

    def __enter__(self) -> RayExecutor:
        self.connect()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def connect(self) -> None:
        ray = self.ray = import_ray()
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "address": self.address or "local",
                "log_to_driver": False,
                "logging_level": logging.ERROR,  # vllmdiag says what matters itself
            }
            if not self.address:
                options["include_dashboard"] = False
                if self.gpus is not None:
                    options["num_gpus"] = self.gpus
            options.update(self.init_options)
            try:
                ray.init(**options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise VllmdiagError(
                    f"cannot connect to the Ray cluster at {self.address or 'a local instance'}"
                    f": {first}",
                    hint="give the address 'ray start --head' printed (HOST:6379), or leave "
                    "--address out to start a local Ray instance",
                ) from None
            self.owned = True
        self._restore = _cluster_news_to_stderr()
        self._start_runners()

    def _start_runners(self) -> None:
        ray = self.ray
        strategies = importlib.import_module("ray.util.scheduling_strategies")
        runner = ray.remote(NodeRunner)
        live = [n for n in ray.nodes() if n.get("Alive")]
        actors = []
        for n in live:
            where = strategies.NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            actors.append(
                runner.options(
                    num_cpus=0, max_concurrency=256, max_restarts=0, scheduling_strategy=where
                ).remote(n["NodeID"])
            )
        infos = self._infos(live, actors)
        peers = ray.get([a.cache_peers.remote() for a in actors], timeout=START_TIMEOUT_S)
        locks = _build_locks([i.node_id for i in infos], peers)
        for n, actor, info in zip(live, actors, infos, strict=True):
            gpus = _gpu_ids(int(n.get("Resources", {}).get("GPU", 0)), info.visible_gpus)
            self._nodes[info.node_id] = RayNode(ray, actor, info, gpus, locks[info.node_id])

    def _infos(self, live: list[dict[str, Any]], actors: list[Any]) -> list[NodeInfo]:
        ray = self.ray
        infos = []
        for n, actor in zip(live, actors, strict=True):
            host = n.get("NodeManagerHostname") or n.get("NodeManagerAddress")
            try:
                info: NodeInfo = ray.get(actor.info.remote(), timeout=START_TIMEOUT_S)
            except ray.exceptions.GetTimeoutError:
                raise VllmdiagError(
                    f"vllmdiag's runner did not start on node {host} within {START_TIMEOUT_S:.0f}s",
                    hint="check the node (ray status; its raylet log), then run again",
                ) from None
            except ray.exceptions.RayError as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise VllmdiagError(
                    f"vllmdiag's runner cannot start on node {host}: {first}",
                    hint=f"install the same vllmdiag on every node ({INSTALL}, version "
                    f"{__version__}), with the Python the node's Ray uses",
                ) from None
            if info.version != __version__:
                raise VllmdiagError(
                    f"node {host} runs vllmdiag {info.version}, this machine {__version__}",
                    hint=f"install vllmdiag {__version__} on every node: cells must be run "
                    "and judged by the same code",
                )
            infos.append(info)
        return infos

    def nodes(self) -> list[RayNode]:
        return list(self._nodes.values())

    def run(
        self, task: CellTask, on_tick: Tick | None = None, on_spawn: Spawned | None = None
    ) -> CellRun:
        """Run the cell on its node; its log grows here as it does there."""
        node = self._nodes[task.node]
        node.call("start", task_for_node(task), what="mid-cell", interruptible=False)
        try:
            with open(task.log, "ab") as log:
                poll = self._follow(node, task, log, on_tick, on_spawn)
        except OSError as exc:  # this machine's disk, not the cell: end it there
            with contextlib.suppress(NodeLost):
                node.call("cancel", task.cell_id, what="mid-cell", interruptible=False)
            raise _unwritable(task, exc) from None
        if poll.error is not None and poll.error.kind == LOST:
            raise NodeLost(node.id, f"node {node.label} died mid-cell: {poll.error.message}")
        if poll.error is not None:
            err = poll.error.error(node.label)
            raise err if isinstance(err, ProcessError) else ProcessError(err.render())
        self._collect(node, task)
        node.call("forget", task.cell_id, what=AFTER, interruptible=False)
        assert poll.done is not None
        return poll.done

    def _follow(
        self,
        node: RayNode,
        task: CellTask,
        log: BinaryIO,
        on_tick: Tick | None,
        on_spawn: Spawned | None,
    ) -> Poll:
        """Copy the cell's log as it grows, pass a cancel on, until the cell has ended and
        its whole log is here."""
        start = time.monotonic()
        offset, told, cancelled, wait = 0, False, False, POLL_S
        while True:
            poll: Poll = node.call(
                "poll", task.cell_id, offset, CHUNK, wait, what="mid-cell", interruptible=False
            )
            log.write(poll.chunk)
            log.flush()
            offset += len(poll.chunk)
            if poll.pid is not None and not told:
                told = True
                if on_spawn is not None:
                    on_spawn(poll.pid)
            if poll.finished and offset >= poll.size:
                return poll
            wait = 0.0 if len(poll.chunk) >= CHUNK else POLL_S  # a fast writer: catch up
            if task.cancel is not None and task.cancel.is_set() and not cancelled:
                cancelled = True
                node.call("cancel", task.cell_id, what="mid-cell", interruptible=False)
            if on_tick is not None:
                on_tick(time.monotonic() - start)

    def _collect(self, node: RayNode, task: CellTask) -> None:
        """The cell's output files, copied from its node to the run directory."""
        if task.collect is None:
            return
        files = node.call("files", task.cell_id, what=AFTER, interruptible=False)
        for relative, _size in files:
            parts = PurePosixPath(relative).parts
            if ".." in parts or PurePosixPath(relative).is_absolute():
                continue
            node.fetch(str(task.cwd / relative), task.collect / Path(*parts))
        # a timed-out cell's stack dumps: beside its log here, as in a local run
        for remote, _size in node.call("hang_files", task.cell_id, what=AFTER, interruptible=False):
            name = PurePosixPath(remote).name
            if name and name not in (".", ".."):
                node.fetch(remote, task.log.parent / HANG_DIR / name)

    def close(self) -> None:
        ray = self.ray
        if ray is None:
            return
        for node in self._nodes.values():
            try:
                ray.kill(node.actor)
            except Exception:  # a node that is gone already: nothing left to stop
                continue
        self._nodes.clear()
        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False
        self._restore()
        self._restore = _nothing


def _cluster_news_to_stderr() -> Callable[[], None]:
    """Ray's driver prints the cluster's news (a raylet that died, a worker that could not
    start) on stdout, where ``--json`` promises one JSON object and nothing else: send it
    to stderr, where people see it. Returns what undoes that."""
    try:
        worker: Any = importlib.import_module("ray._private.worker")
    except ImportError:
        return _nothing
    original = getattr(worker, "print_to_stdstream", None)
    if original is None:
        return _nothing

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    worker.print_to_stdstream = to_stderr

    def restore() -> None:
        worker.print_to_stdstream = original

    return restore


def _nothing() -> None:
    return None


def _gpu_ids(count: int, visible: str | None) -> tuple[str, ...]:
    """A node's GPU ids: the first ``count`` of its ``CUDA_VISIBLE_DEVICES``, else 0..N-1
    (Ray's own numbering, also for fake GPUs declared with ``--num-gpus``)."""
    listed = [v.strip() for v in (visible or "").split(",") if v.strip()]
    if len(listed) >= count:
        return tuple(listed[:count])
    return tuple(str(i) for i in range(count))


def _build_locks(ids: list[str], peers: list[tuple[str, ...]]) -> dict[str, threading.Lock]:
    """One lock per group of nodes that see each other's marker in their env cache."""
    group = {i: i for i in ids}

    def root(i: str) -> str:
        while group[i] != i:
            i = group[i]
        return i

    for node, seen in zip(ids, peers, strict=True):
        for other in seen:
            if other in group:
                group[root(other)] = root(node)
    locks: dict[str, threading.Lock] = {}
    return {i: locks.setdefault(root(i), threading.Lock()) for i in ids}


def _unwritable(task: CellTask, exc: OSError) -> RunDirError:
    return RunDirError(
        f"cannot write the log of cell {task.cell_id}: {exc.strerror}",
        where=str(task.log),
        hint="free some space (or fix permissions) on the run directory's disk, "
        "then resume the run with --resume",
    )
